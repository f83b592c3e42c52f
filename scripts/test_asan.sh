#!/usr/bin/env bash
# Builds the C++ tests with AddressSanitizer (build/asan) and runs them through CTest: any
# out-of-bounds access, use after free or leak fails the run. Needs scripts/setup_deps.sh.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
cd "$here"
export CCACHE_BASEDIR="$here"  # cache hits across checkouts in other folders
build="build/asan"
gen=()
if command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
cmake -S . -B "$build" "${gen[@]}" -DPIJIT_ASAN=ON -DPIJIT_BUILD_TESTS=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g" -DPython_EXECUTABLE="$(command -v "$PY")" \
  -DPIJIT_OUTPUT_DIR="$here/$build/python" >/dev/null
cmake --build "$build" --target pijit_cpp_tests -j "${PIJIT_JOBS:-2}"
# The thread pool and the kernel caches live until exit on purpose; everything else must be
# freed. halt_on_error: the first finding fails the test that made it.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=0"
ctest --test-dir "$build" --output-on-failure -j 2

# The Python tests over an AddressSanitizer build of the extension: the package is copied
# beside it (build/asan/python) and the sanitizer's runtime preloaded into the uninstrumented
# interpreter (libstdc++ too, so that the runtime finds the C++ throw it intercepts); -P keeps
# the source tree's own build off sys.path. CPython keeps objects alive until exit, so leaks
# are not checked there.
cmake --build "$build" --target _C -j "${PIJIT_JOBS:-2}"
pkg="$build/python/pijit"
rm -rf "$pkg" && mkdir -p "$pkg"
(cd pijit && find . -name '*.py' -print0 | xargs -0 -I{} cp --parents {} "$here/$pkg/")
cp "$build"/python/_C*.so "$pkg/"
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=0"
# Every Python test but the fuzzer's campaign (its programs run in worker processes).
LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so.6)" \
  PYTHONPATH="$here/$build/python" "$PY" -P -m pytest -q -p no:cacheprovider \
  --deselect tests/python/test_fuzz.py tests/python
