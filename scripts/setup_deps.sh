#!/usr/bin/env bash
# Installs everything pijit needs to build and test on a fresh Debian bookworm machine.
# Idempotent: every step checks whether its result is already present.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
PY="${PYTHON:-python3}"

need_pkgs=()
# graphviz lays out the report's graphs (python -m pijit report); chromium renders the report in
# its tests (headless).
# openmpi-bin and libopenmpi-dev: pijit.communication's collectives (mpirun, mpi.h).
for p in libabsl-dev libgtest-dev libopenblas-dev libdlpack-dev dpkg-dev ccache graphviz \
         chromium openmpi-bin libopenmpi-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || need_pkgs+=("$p")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_pkgs[@]}"
fi

# asmjit: Debian's libasmjit-dev ships a non-PIC static library only, so build it from
# Debian's source package with -fPIC (recipe: third_party/asmjit.sh).
bash "$here/third_party/asmjit.sh"
# oneDNN 3.x: PyPI's wheels unpacked (third_party/onednn.sh); Debian's 2.6 is older.
PYTHON="$PY" bash "$here/third_party/onednn.sh"

"$PY" -m pip install -q --disable-pip-version-check setuptools wheel numpy pybind11 pytest hypothesis ml_dtypes \
  protobuf safetensors google-crc32c pillow \
  scipy  # scipy: reference values in the tests; Betainc and MatrixLogarithm compute with it
