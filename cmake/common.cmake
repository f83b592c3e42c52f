# Settings and dependencies shared by the two CMake projects: the core (core/CMakeLists.txt:
# kernels, graph and their C++ tests, no Python; one build per configuration serves every
# interpreter) and the extension (CMakeLists.txt, one build per interpreter). The including
# project sets PIJIT_ROOT to the repository's root.
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release)
endif()
find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM)
  set(CMAKE_C_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
endif()
add_compile_options(-Wall -Wno-unused-function -Wno-missing-field-initializers -Wno-maybe-uninitialized)
set(CMAKE_CXX_FLAGS_RELEASE "-O2")

option(PIJIT_BUILD_TESTS "Build the GoogleTest binaries" ON)
# AddressSanitizer over everything this project compiles (scripts/test_asan.sh builds the C++
# tests this way in build/asan). Code generated at run time (asmjit loops, oneDNN's JIT) is
# not instrumented, so its reads are checked only where they go through compiled code. The
# script builds RelWithDebInfo with -O2 -g: reports name lines, and the module is not stripped.
option(PIJIT_ASAN "Build with AddressSanitizer" OFF)
if(PIJIT_ASAN)
  add_compile_options(-fsanitize=address -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address)
endif()

set(ASMJIT_PREFIX "${PIJIT_ROOT}/third_party/asmjit/install" CACHE PATH
    "asmjit built with -fPIC by third_party/asmjit.sh")
find_package(absl REQUIRED)
set(ONEDNN_PREFIX "${PIJIT_ROOT}/third_party/onednn/install" CACHE PATH
    "oneDNN 3.x unpacked from PyPI's wheels by third_party/onednn.sh")
find_package(dnnl 3 REQUIRED PATHS "${ONEDNN_PREFIX}" NO_DEFAULT_PATH)
find_package(asmjit REQUIRED PATHS "${ASMJIT_PREFIX}" NO_DEFAULT_PATH)
find_library(OPENBLAS_LIB NAMES openblas REQUIRED)
find_package(OpenMP REQUIRED)  # the runtime oneDNN uses: small problems run on one thread

# CUDA backend (kernels/cuda/, graph/backend_cuda.cc): compiled whenever the toolkit's cuda.h
# is found; nothing links against CUDA (the driver, NVRTC and cuBLAS are loaded at run time),
# so the same build imports on machines without a GPU. -DPIJIT_CUDA=OFF leaves it out.
find_path(PIJIT_CUDA_INCLUDE_DIR cuda.h
          HINTS "$ENV{CUDA_HOME}/include" "$ENV{CUDA_PATH}/include" /usr/local/cuda/include)
if(PIJIT_CUDA_INCLUDE_DIR)
  option(PIJIT_CUDA "Build the CUDA backend" ON)
else()
  option(PIJIT_CUDA "Build the CUDA backend" OFF)
endif()
if(PIJIT_CUDA AND NOT PIJIT_CUDA_INCLUDE_DIR)
  message(FATAL_ERROR "PIJIT_CUDA=ON but cuda.h was not found (set CUDA_HOME)")
endif()
message(STATUS "pijit CUDA backend: ${PIJIT_CUDA} (${PIJIT_CUDA_INCLUDE_DIR})")

