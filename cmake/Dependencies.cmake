# All third-party dependencies are found here, in one place. Nothing is downloaded.
find_package(PkgConfig REQUIRED)
pkg_check_modules(Z3 REQUIRED IMPORTED_TARGET z3)   # libz3-dev has no CMake config
pkg_check_modules(CBC REQUIRED IMPORTED_TARGET cbc) # coinor-libcbc-dev: the ILP of saturation's extraction
find_package(TBB REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(GTest REQUIRED)
find_package(Protobuf REQUIRED)
find_package(ONNX REQUIRED)
find_package(nlohmann_json 3 REQUIRED)  # nlohmann-json3-dev: the JSON of reports and of the rules database

# CUDA, cuBLAS and cuDNN are optional: without them the project builds CPU-only.
option(TGR_WITH_CUDA "Build the CUDA runtime when the toolkit is present" ON)
set(TGR_HAVE_CUDA OFF)
if(TGR_WITH_CUDA)
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    find_library(CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
    if(CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY AND TARGET CUDA::cublas)
      set(TGR_HAVE_CUDA ON)
      add_library(tgr_cudnn INTERFACE)
      target_include_directories(tgr_cudnn INTERFACE ${CUDNN_INCLUDE_DIR})
      target_link_libraries(tgr_cudnn INTERFACE ${CUDNN_LIBRARY})
      # The runtime's own kernels (runtime/cuda/*.cu): Hopper (H100) by
      # default; warnings are errors there too.
      if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
        set(CMAKE_CUDA_ARCHITECTURES 90)
      endif()
      set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
      enable_language(CUDA)
      set(CMAKE_CUDA_STANDARD 17)
      set(CMAKE_CUDA_STANDARD_REQUIRED ON)
      add_compile_options("$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wshadow>")
      if(TGR_WERROR)
        add_compile_options("$<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>")
      endif()
    endif()
  endif()
endif()
# The Python module (python/, `pip install .`, which turns this on) is
# optional too: built with -DTGR_WITH_PYTHON=ON when the Python headers and
# pybind11 are found (Debian python3-dev and pybind11-dev; under pip, the PyPI
# pybind11 of the build requirements). The module is a shared library holding
# the project's static libraries, so everything is then compiled
# position-independent: off by default, so that the tools' build stays as it is.
option(TGR_WITH_PYTHON "Build the Python module (needs Python's headers and pybind11)" OFF)
set(TGR_HAVE_PYTHON OFF)
if(TGR_WITH_PYTHON)
  find_package(Python3 COMPONENTS Interpreter Development.Module QUIET)
  if(Python3_FOUND)
    find_package(pybind11 2.10 CONFIG QUIET)
    if(pybind11_FOUND)
      set(TGR_HAVE_PYTHON ON)
      set(CMAKE_POSITION_INDEPENDENT_CODE ON)
    endif()
  endif()
endif()
# MPI is optional: with it, `generate` and `verify --db` also run as the ranks
# of `mpirun -np N` (docs/mpi.md); without it they run as one process.
option(TGR_WITH_MPI "Build generate and verify for mpirun when MPI is present" ON)
set(TGR_HAVE_MPI OFF)
if(TGR_WITH_MPI)
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND)
    set(TGR_HAVE_MPI ON)
    find_program(TGR_MPIEXEC NAMES ${MPIEXEC_EXECUTABLE} mpirun mpiexec)
  endif()
endif()

if(TGR_WITH_PYTHON AND NOT TGR_HAVE_PYTHON)
  message(FATAL_ERROR "tgr: TGR_WITH_PYTHON needs Python's headers (python3-dev) and pybind11 (pybind11-dev, or pip's)")
endif()

message(STATUS "tgr: Z3 ${Z3_VERSION}, TBB ${TBB_VERSION}, SQLite ${SQLite3_VERSION}, "
               "protobuf ${Protobuf_VERSION}, ONNX ${ONNX_VERSION}")
if(TGR_HAVE_CUDA)
  message(STATUS "tgr: CUDA ${CUDAToolkit_VERSION} with cuBLAS and cuDNN (${CUDNN_LIBRARY}): GPU runtime ON")
else()
  message(STATUS "tgr: CUDA toolkit, cuBLAS or cuDNN not found: CPU-only build")
endif()
if(TGR_HAVE_MPI)
  message(STATUS "tgr: MPI ${MPI_CXX_VERSION} (${TGR_MPIEXEC}): generate and verify run under mpirun")
else()
  message(STATUS "tgr: no MPI (not found, or -DTGR_WITH_MPI=OFF): generate and verify run as one process")
endif()
if(TGR_HAVE_PYTHON)
  message(STATUS "tgr: Python ${Python3_VERSION} (${Python3_EXECUTABLE}), pybind11 ${pybind11_VERSION}: Python module ON")
else()
  message(STATUS "tgr: no Python module (-DTGR_WITH_PYTHON=ON, or pip install .)")
endif()
