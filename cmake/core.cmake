# The core of pijit without Python: the tensor runtime and kernels, the graph IR, passes and
# executor, and their C++ tests. It does not depend on the interpreter, so the extension's
# build for each interpreter (CMakeLists.txt) configures it once, with -DPIJIT_CORE_ONLY=ON,
# in a folder shared by all of them (build/core-<configuration>) and links what it exports.
# --- tensor runtime and kernels: no Python ---------------------------------------------
file(GLOB KERNEL_SOURCES CONFIGURE_DEPENDS ${PIJIT_ROOT}/kernels/*.cc ${PIJIT_ROOT}/kernels/cpu/*.cc)
if(PIJIT_CUDA)
  file(GLOB CUDA_KERNEL_SOURCES CONFIGURE_DEPENDS ${PIJIT_ROOT}/kernels/cuda/*.cc)
  list(APPEND KERNEL_SOURCES ${CUDA_KERNEL_SOURCES})
endif()
file(GLOB COMM_SOURCES CONFIGURE_DEPENDS ${PIJIT_ROOT}/kernels/comm/*.cc)
list(APPEND KERNEL_SOURCES ${COMM_SOURCES})
add_library(pijit_kernels STATIC ${KERNEL_SOURCES})
# Collectives over MPI (kernels/comm) when Open MPI's development files are found (Debian:
# libopenmpi-dev); without them only the single-process world works.
find_package(MPI COMPONENTS C QUIET)
option(PIJIT_MPI "Build the MPI collectives (default: when MPI is found)" ${MPI_C_FOUND})
if(PIJIT_MPI AND MPI_C_FOUND)
  target_compile_definitions(pijit_kernels PRIVATE PIJIT_WITH_MPI)
  target_include_directories(pijit_kernels SYSTEM PRIVATE ${MPI_C_INCLUDE_DIRS})
  target_link_libraries(pijit_kernels PUBLIC ${MPI_C_LIBRARIES})
endif()
if(PIJIT_CUDA)
  target_include_directories(pijit_kernels SYSTEM PUBLIC ${PIJIT_CUDA_INCLUDE_DIR})
  target_compile_definitions(pijit_kernels PUBLIC PIJIT_WITH_CUDA)
  target_link_libraries(pijit_kernels PUBLIC ${CMAKE_DL_LIBS})
endif()
target_include_directories(pijit_kernels PUBLIC ${PIJIT_ROOT})
# Kernel loops rely on the auto-vectoriser, which -O2 only runs in its cheapest form.
target_compile_options(pijit_kernels PRIVATE -O3)
# The loops compiled for AVX-512 and AVX2 must round as their scalar or baseline versions: no
# multiply-add contraction (GNU C++ contracts by default wherever the target has FMA, and
# AVX512F has it). The elementwise loops also leave errno alone so that sqrt vectorises.
set_source_files_properties(${PIJIT_ROOT}/kernels/cpu/reduce_vec.cc PROPERTIES COMPILE_OPTIONS -ffp-contract=off)
set_source_files_properties(${PIJIT_ROOT}/kernels/cpu/isa_loops.cc PROPERTIES COMPILE_OPTIONS
  "-ffp-contract=off;-fno-math-errno")
target_link_libraries(pijit_kernels PUBLIC absl::status absl::statusor absl::str_format
  absl::inlined_vector absl::flat_hash_map absl::span DNNL::dnnl asmjit::asmjit ${OPENBLAS_LIB}
  OpenMP::OpenMP_CXX)

# --- graph IR, passes and executor: no Python ------------------------------------------
file(GLOB GRAPH_SOURCES CONFIGURE_DEPENDS ${PIJIT_ROOT}/graph/*.cc ${PIJIT_ROOT}/graph/passes/*.cc)
if(NOT PIJIT_CUDA)
  list(REMOVE_ITEM GRAPH_SOURCES "${PIJIT_ROOT}/graph/backend_cuda.cc"
       "${PIJIT_ROOT}/graph/backend_cuda_data.cc")
endif()
add_library(pijit_graph STATIC ${GRAPH_SOURCES})
target_link_libraries(pijit_graph PUBLIC pijit_kernels)

if(PIJIT_BUILD_TESTS)
  find_package(GTest REQUIRED)
  enable_testing()
  file(GLOB CPP_TESTS CONFIGURE_DEPENDS ${PIJIT_ROOT}/tests/cpp/*_test.cc ${PIJIT_ROOT}/tests/cpp/passes/*_test.cc)
  add_executable(pijit_cpp_tests ${CPP_TESTS})
  # Golden IR tests (tests/cpp/ir_golden_test.cc) read their files from the source tree.
  target_compile_definitions(pijit_cpp_tests PRIVATE
    PIJIT_IR_TEST_DIR="${PIJIT_ROOT}/tests/ir")
  target_link_libraries(pijit_cpp_tests PRIVATE pijit_graph GTest::gtest_main)
  include(GoogleTest)
  gtest_discover_tests(pijit_cpp_tests)
  if(PIJIT_CUDA)
    # GPU kernel timings for benchmarks/gpu.py (runs only where there is a GPU).
    add_executable(pijit_cuda_bench ${PIJIT_ROOT}/benchmarks/cuda_kernels.cc)
    target_link_libraries(pijit_cuda_bench PRIVATE pijit_graph)
  endif()
endif()

# What the extension's builds import: the two libraries with their usage requirements.
export(TARGETS pijit_kernels pijit_graph NAMESPACE pijit_core::
       FILE "${CMAKE_BINARY_DIR}/pijit_core_targets.cmake")
