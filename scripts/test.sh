#!/usr/bin/env bash
# Sets up, builds, and runs every test: the layering check of the includes, GoogleTest binaries through CTest, then pytest, then
# pytest again on CPython 3.12 when one is found (PIJIT_PYTHON312 names it; PIJIT_SKIP_PY312=1 skips it), then CTest and
# pytest over an AddressSanitizer build (scripts/test_asan.sh; PIJIT_SKIP_ASAN=1 skips it).
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
if [ "${PIJIT_SKIP_PY312:-0}" != 1 ]; then
  py312="$(bash "$here/scripts/find_python.sh" 3.12 || true)"
  if [ -n "$py312" ] && [ "$("$PY" -c 'import sys; print(sys.version_info[:2] == (3, 12))')" = False ]; then
    echo "== pytest on $("$py312" -c 'import sys; print(sys.version.split()[0])') ($py312)"
    PYTHON="$py312" bash "$here/scripts/install.sh"
    "$py312" -m pytest tests/python -q "$@"
  fi
fi
if [ "${PIJIT_SKIP_ASAN:-0}" != 1 ]; then
  bash "$here/scripts/test_asan.sh"
fi
