#!/usr/bin/env bash
# Sets up, builds, and runs every test: the layering check of the includes, GoogleTest binaries through CTest, then pytest, then
# pytest again on the other supported CPythons (3.11, 3.12, 3.13) found (PIJIT_PYTHON312=... names one; PIJIT_SKIP_PY313=1 skips one), then
# CTest and pytest over an AddressSanitizer build (scripts/test_asan.sh; PIJIT_SKIP_ASAN=1 skips it).
# PYTHON=python3.13 bash scripts/test.sh makes 3.13 the main interpreter.
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
# The other supported interpreters found on the machine (scripts/find_python.sh; PIJIT_PYTHON312 /
# PIJIT_PYTHON313 name one), each with its own extension in its own build folder.
for other in 3.11 3.12 3.13; do
  skip="PIJIT_SKIP_PY${other//./}"
  [ "${!skip:-0}" != 1 ] || continue
  py="$(bash "$here/scripts/find_python.sh" "$other" || true)"
  [ -n "$py" ] || continue
  [ "$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" != "$other" ] || continue
  echo "== pytest on $("$py" -c 'import sys; print(sys.version.split()[0])') ($py)"
  PYTHON="$py" bash "$here/scripts/install.sh"
  "$py" -m pytest tests/python -q "$@"
done
if [ "${PIJIT_SKIP_ASAN:-0}" != 1 ]; then
  bash "$here/scripts/test_asan.sh"
fi
