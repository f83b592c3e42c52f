#!/usr/bin/env bash
# Sets up, builds, and runs every test: the layering check of the includes, GoogleTest binaries through CTest, then pytest, then
# both again over an AddressSanitizer build (scripts/test_asan.sh; PIJIT_SKIP_ASAN=1 skips it).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
bash "$here/scripts/install.sh"
cd "$here"
# The source folders are layers: an include against their order fails before anything builds.
"$PY" scripts/check_layers.py
export CCACHE_BASEDIR="$here"
build="build/cmake-$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("SOABI"))')"
cmake --build "$build" --target pijit_cpp_tests -j 2
ctest --test-dir "$build" --output-on-failure
"$PY" -m pytest tests/python -q "$@"
if [ "${PIJIT_SKIP_ASAN:-0}" != 1 ]; then
  bash "$here/scripts/test_asan.sh"
fi
