# Compiler-world setup: finds MLIR 22.1 and defines rp_add_compiler_library().
#
# Everything here is scoped to the compiler side. Directory-level include paths are set only by
# rp_use_mlir() inside compiler-side directories (mlir-tblgen reads them), so runtime targets never
# see LLVM/MLIR headers. All compiler-side targets link the shared libMLIR/libLLVM (Debian ships
# both), which keeps links fast and avoids duplicate static registrations.
find_package(MLIR 22.1 REQUIRED CONFIG HINTS /usr/lib/llvm-22/lib/cmake/mlir)
message(STATUS "rpc: MLIR ${LLVM_PACKAGE_VERSION} from ${MLIR_DIR}")

list(APPEND CMAKE_MODULE_PATH "${MLIR_CMAKE_DIR}" "${LLVM_CMAKE_DIR}")
include(TableGen)
include(AddLLVM)
include(AddMLIR)

# add_mlir_doc copies generated docs under ${MLIR_BINARY_DIR}/docs.
set(MLIR_BINARY_DIR ${RP_BINARY_DIR})
set(LLVM_TOOLS_DIR ${LLVM_TOOLS_BINARY_DIR})

# Directory-scoped: include paths for C++ and for mlir-tblgen.
macro(rp_use_mlir)
  include_directories(${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS} ${RP_SOURCE_DIR} ${RP_BINARY_DIR})
  separate_arguments(_rp_llvm_defs NATIVE_COMMAND ${LLVM_DEFINITIONS})
  add_definitions(${_rp_llvm_defs})
endmacro()

# Debian's LLVM is built without exceptions and with RTTI; compiler-side code follows LLVM.
set(RP_MLIR_CXX_FLAGS -fno-exceptions ${RP_WARNING_FLAGS} -Wno-unused-parameter)

# rp_add_compiler_library(NAME SRCS... [DEPENDS tblgen-targets...] [LINK libs...] [EH])
function(rp_add_compiler_library name)
  cmake_parse_arguments(ARG "EH" "" "DEPENDS;LINK" ${ARGN})
  add_library(${name} STATIC ${ARG_UNPARSED_ARGUMENTS})
  if(ARG_DEPENDS)
    add_dependencies(${name} ${ARG_DEPENDS})
  endif()
  target_link_libraries(${name} PUBLIC MLIR LLVM ${ARG_LINK})
  set(_flags ${RP_MLIR_CXX_FLAGS})
  if(ARG_EH)
    list(REMOVE_ITEM _flags -fno-exceptions)
  endif()
  target_compile_options(${name} PRIVATE ${_flags})
endfunction()

# rp_add_compiler_tool(NAME SRCS... LINK libs... [EH])
function(rp_add_compiler_tool name)
  cmake_parse_arguments(ARG "EH" "" "LINK" ${ARGN})
  add_executable(${name} ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE ${ARG_LINK} MLIR LLVM)
  set(_flags ${RP_MLIR_CXX_FLAGS})
  if(ARG_EH)
    list(REMOVE_ITEM _flags -fno-exceptions)
  endif()
  target_compile_options(${name} PRIVATE ${_flags})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${RP_BINARY_DIR}/bin)
endfunction()
