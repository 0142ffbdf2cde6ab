# Installation and Debian packages (included last from the top-level CMakeLists.txt, after every
# install() rule).
#
# `cmake --install build --prefix P` installs two components (the tools' rules are in
# tools/*/CMakeLists.txt):
#   runtime   P/bin/rp-run and the documentation (P/share/doc/rpc: README.md, docs/)
#   compiler  P/bin/rpc-compile, rp-opt, rp-ref (RP_ENABLE_COMPILER only)
# `--component runtime` installs one of them. The project's libraries are static, so the tools
# need only system libraries, libMLIR/libLLVM (compiler) and, with RP_ENABLE_CUDA, the CUDA
# toolkit's libcudart.so/libcublasLt.so (found through the run path the build tree uses, the
# toolkit's lib directory, or the dynamic loader's path). With RP_STATIC_PROTOBUF (runtime-only
# builds, runtime/plan) rp-run does not need libprotobuf either.
#
# `cpack` (or `cmake --build build --target package`) writes one Debian package per component:
#   rpc-runtime_<version>_<arch>.deb  rp-run + docs; no LLVM/MLIR dependency
#   rpc_<version>_<arch>.deb          the compiler tools; Depends: rpc-runtime (= <version>)
# Their Depends come from dpkg-shlibdeps (the dpkg-dev package). Libraries that no Debian
# package owns are left out of Depends: the CUDA toolkit under /usr/local/cuda, which is never
# bundled. A package built with RP_ENABLE_CUDA therefore installs on any machine but rp-run
# starts only where the CUDA toolkit's runtime libraries are present; build with
# -DRP_ENABLE_CUDA=OFF for a CPU-only package, or name the packages that provide the CUDA
# libraries on the target machines in RP_PACKAGE_CUDA_DEPENDS (e.g. NVIDIA's apt repository:
# "cuda-cudart-13-0, libcublas-13-0").
include(GNUInstallDirs)

install(FILES ${RP_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime)
install(DIRECTORY ${RP_SOURCE_DIR}/docs DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime
        FILES_MATCHING PATTERN "*.md")

set(RP_PACKAGE_CONTACT "rpc developers" CACHE STRING "The Debian packages' Maintainer field")
set(RP_PACKAGE_CUDA_DEPENDS "" CACHE STRING
    "Debian packages providing the CUDA runtime libraries, for rpc-runtime's Depends (CUDA builds)")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME rpc)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${RP_PACKAGE_CONTACT}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)

# The Description fields: a summary line, then the long description.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME rpc-runtime)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION science)
string(CONCAT CPACK_DEBIAN_RUNTIME_DESCRIPTION
    "RoundPipe runtime for LLM training (rp-run)\n"
    "rp-run trains a model with a RoundPipe execution plan (.rpplan) written by rpc-compile")
if(RP_ENABLE_CUDA)
  string(APPEND CPACK_DEBIAN_RUNTIME_DESCRIPTION
         " on the CPU or CUDA backend, or simulates its schedule.\n"
         "The CUDA backend links the CUDA toolkit's libcudart.so.${CUDAToolkit_VERSION_MAJOR} "
         "and libcublasLt.so.${CUDAToolkit_VERSION_MAJOR}, which this package neither bundles "
         "nor depends on: rp-run starts only where they are installed.")
  if(RP_PACKAGE_CUDA_DEPENDS)
    set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "${RP_PACKAGE_CUDA_DEPENDS}")
  endif()
else()
  string(APPEND CPACK_DEBIAN_RUNTIME_DESCRIPTION
         " on the CPU backend, or simulates its schedule (built without the CUDA backend).")
endif()
set(CPACK_DEBIAN_COMPILER_PACKAGE_NAME rpc)
set(CPACK_DEBIAN_COMPILER_PACKAGE_SECTION devel)
string(CONCAT CPACK_DEBIAN_COMPILER_DESCRIPTION
    "RoundPipe compiler for LLM training (rpc-compile, rp-opt, rp-ref)\n"
    "rpc-compile lowers an exported ONNX training graph to a RoundPipe execution plan with "
    "MLIR; rp-ref is its non-pipelined reference trainer, rp-opt runs its passes. "
    "rp-run is in rpc-runtime.")

include(CPack)
cpack_add_component(runtime DISPLAY_NAME "rpc runtime")
if(RP_ENABLE_COMPILER)
  cpack_add_component(compiler DISPLAY_NAME "rpc compiler" DEPENDS runtime)
endif()
