#!/usr/bin/env bash
# Sets up, builds, and runs every test: GoogleTest binaries through CTest, then pytest.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
bash "$here/scripts/install.sh"
cd "$here"
build="build/cmake-$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("SOABI"))')"
cmake --build "$build" --target pijit_cpp_tests -j 2
ctest --test-dir "$build" --output-on-failure
"$PY" -m pytest tests/python -q "$@"
