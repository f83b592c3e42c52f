#!/usr/bin/env bash
# The CUDA backend on a GPU machine, in one short run.
#
#   bash scripts/gpu_check.sh pack   here (no GPU needed): builds the C++ tests and the GPU
#                                    benchmark binary and puts them, with the shared libraries
#                                    they need that a GPU machine lacks (Abseil, oneDNN 3.2
#                                    from third_party/onednn, OpenBLAS), into .gpu/ (git-ignored)
#   bash scripts/gpu_check.sh run [--tests-only]
#                                    on the GPU machine, from the repository root with .gpu/
#                                    beside it: runs every CUDA test (each kernel family
#                                    against the CPU, the golden IR graphs on both devices,
#                                    CUDA graph replays, Python's device tensors) and
#                                    benchmarks/gpu.py (pijit against torch on that GPU)
#
# The GPU machines have Python 3.12, CUDA 13 and torch but no network and no Debian packages,
# hence the carried binaries. NVRTC and cuBLAS are found there in torch's CUDA wheels.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
case "${1:-}" in
  pack)
    PY="${PYTHON:-python3}"
    build="build/cmake-$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("SOABI"))')"
    cmake --build "$build" --target pijit_cpp_tests pijit_cuda_bench -j 2
    rm -rf .gpu && mkdir -p .gpu/lib
    cp "$build/core/pijit_cpp_tests" "$build/core/pijit_cuda_bench" .gpu/  # the shared core build
    # Every shared library the binaries load by an absolute path (the system's, and oneDNN's
    # from third_party/onednn/install) except the C runtime's.
    ldd .gpu/pijit_cpp_tests .gpu/pijit_cuda_bench | awk '/=> \// {print $3}' | sort -u |
      grep -v -E '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s)\.so' |
      while read -r lib; do cp -L "$lib" .gpu/lib/; done
    tar -C .gpu -cJf .gpu/lib.tar.xz lib && rm -rf .gpu/lib
    # The extension for the GPU machines' Python (3.12), when this checkout builds one.
    py312="$(bash scripts/find_python.sh 3.12 || true)"
    if [ -n "$py312" ] && "$py312" setup.py build_ext --inplace > .gpu/build312.log 2>&1; then
      cp pijit/_C.cpython-312-*.so .gpu/
    else
      echo "no CPython 3.12 extension packed (see .gpu/build312.log)"
    fi
    grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
    du -sh .gpu
    ;;
  run)
    mkdir -p /tmp/pijit_gpu && tar -C /tmp/pijit_gpu -xJf .gpu/lib.tar.xz
    export LD_LIBRARY_PATH="/tmp/pijit_gpu/lib:${LD_LIBRARY_PATH:-}"
    dirs=$(find /usr/local /opt /usr/lib \( -name 'libnvrtc.so*' -o -name 'libcublas.so*' -o -name 'libcudnn.so*' \) \
           2>/dev/null | xargs -r -n1 dirname | sort -u | paste -sd: -)
    export PIJIT_CUDA_LIB_DIRS="$dirs"
    export PIJIT_IR_TEST_DIR="$here/tests/ir"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
    echo "NVRTC/cuBLAS folders: $PIJIT_CUDA_LIB_DIRS"
    status=0
    .gpu/pijit_cpp_tests --gtest_filter='Cuda*:-*Nvcc' || status=$?  # nvcc's check runs on any machine
    if ls .gpu/_C.cpython-312-*.so > /dev/null 2>&1; then
      # pijit itself on the GPU machine's Python: device_target="GPU" against eager results.
      cp .gpu/_C.cpython-312-*.so pijit/
      PYTHONPATH="$here" python3 -m pytest -q -p no:cacheprovider -rs tests/python/test_cuda.py \
        tests/python/test_cuda_tensors.py tests/python/test_seeds.py || status=$?
    fi
    if [ "${2:-}" = "--tests-only" ]; then exit $status; fi
    python3 benchmarks/gpu.py .gpu/pijit_cuda_bench || status=$?
    # The same step with cuDNN's heuristic algorithm choice instead of timing them (A/B).
    echo "ResNet-18 step with PIJIT_CUDNN_FIND=0:"
    PIJIT_CUDNN_FIND=0 .gpu/pijit_cuda_bench resnet 2>&1 | grep -E 'resnet18_step' || true
    # Where a ResNet-18 step's time goes, kind of node by kind of node (the largest first).
    PIJIT_PROFILE=1 PIJIT_LOG=cudnn .gpu/pijit_cuda_bench resnet 2>&1 | head -60 || true
    exit $status
    ;;
  *)
    echo "usage: bash scripts/gpu_check.sh pack|run" >&2
    exit 2
    ;;
esac
