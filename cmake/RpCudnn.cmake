# cuDNN's fused scaled-dot-product attention for the CUDA backend (kernels/cuda/CudnnAttention).
#
# Needs two things at build time, neither linked:
#   - the cuDNN frontend's headers (header-only C++, NVIDIA/cudnn-frontend), which
#     scripts/install-deps.sh unpacks from the pinned PyPI wheel into deps/cudnn-frontend/include
#     (override with -DRP_CUDNN_FRONTEND_DIR=...);
#   - cuDNN 9's C headers (cudnn.h), looked for next to the CUDA toolkit's headers (override
#     with -DRP_CUDNN_INCLUDE_DIR=...).
# The frontend is compiled in its dynamic-loading mode (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING):
# libcudnn.so.9 is dlopen'ed at run time (found through LD_LIBRARY_PATH), so rp-run starts on a
# machine without cuDNN and attention falls back to rpc's own kernels.
#
# Sets RP_HAVE_CUDNN_FRONTEND (ON/OFF); kernels/cuda/CMakeLists.txt then compiles its cuDNN
# files with both include directories and the macros RP_HAVE_CUDNN_FRONTEND=1 and
# NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING, and links libdl. -DRP_ENABLE_CUDNN=OFF builds without.
option(RP_ENABLE_CUDNN "Use cuDNN's fused attention when its headers are found" ON)
set(RP_CUDNN_FRONTEND_DIR "${CMAKE_SOURCE_DIR}/deps/cudnn-frontend/include" CACHE PATH
    "cuDNN frontend include directory (holds cudnn_frontend.h)")
find_path(RP_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS}
          PATHS /usr/include /usr/local/cuda/include
          DOC "cuDNN include directory (holds cudnn.h, cuDNN 9)")

set(RP_HAVE_CUDNN_FRONTEND OFF)
if(NOT RP_ENABLE_CUDNN)
  message(STATUS "rpc: cuDNN attention disabled (-DRP_ENABLE_CUDNN=OFF); attention runs on rpc's kernels")
elseif(NOT EXISTS "${RP_CUDNN_FRONTEND_DIR}/cudnn_frontend.h")
  message(STATUS "rpc: no cuDNN frontend headers in ${RP_CUDNN_FRONTEND_DIR} (scripts/install-deps.sh "
                 "fetches them); attention runs on rpc's kernels")
elseif(NOT RP_CUDNN_INCLUDE_DIR)
  message(STATUS "rpc: no cudnn.h found; attention runs on rpc's kernels")
else()
  file(STRINGS "${RP_CUDNN_INCLUDE_DIR}/cudnn_version.h" _rp_cudnn_major REGEX "#define CUDNN_MAJOR ")
  if(NOT _rp_cudnn_major MATCHES "CUDNN_MAJOR 9")
    message(STATUS "rpc: ${RP_CUDNN_INCLUDE_DIR}/cudnn.h is not cuDNN 9; attention runs on rpc's kernels")
  else()
    set(RP_HAVE_CUDNN_FRONTEND ON)
    message(STATUS "rpc: cuDNN attention: frontend ${RP_CUDNN_FRONTEND_DIR}, cudnn.h in "
                   "${RP_CUDNN_INCLUDE_DIR} (libcudnn.so.9 loaded at run time)")
  endif()
endif()
