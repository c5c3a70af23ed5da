#===- NetVMMacros.cmake - Helpers for netvm targets ---------------------===#
#
# add_netvm_library(name SOURCES ... [DEPENDS tgt...] [LINK_LIBS lib...]
#                   [MLIR_LIBS lib...] [EH])
#   A static library of this project. LINK_LIBS are our own libraries and
#   system libraries (plain target_link_libraries); MLIR_LIBS are MLIR
#   components, which in dylib mode all become libMLIR.so. EH builds the
#   library with C++ exceptions (ANTLR-generated code and the runtime need
#   them; LLVM's flags turn them off).
#
# add_netvm_tool(name SOURCES ... [LINK_LIBS ...] [MLIR_LIBS ...])
#   An executable in bin/, linked against libMLIR.so and libLLVM.so.
#===----------------------------------------------------------------------===#

function(add_netvm_library name)
  cmake_parse_arguments(ARG "EH" "" "SOURCES;DEPENDS;LINK_LIBS;MLIR_LIBS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  if(ARG_EH)
    set(LLVM_REQUIRES_EH ON)
    set(LLVM_REQUIRES_RTTI ON)
  endif()
  llvm_update_compile_flags(${name})
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  if(ARG_DEPENDS)
    add_dependencies(${name} ${ARG_DEPENDS})
  endif()
  if(ARG_LINK_LIBS)
    target_link_libraries(${name} PUBLIC ${ARG_LINK_LIBS})
  endif()
  if(ARG_MLIR_LIBS)
    mlir_target_link_libraries(${name} PUBLIC ${ARG_MLIR_LIBS})
  endif()
endfunction()

function(add_netvm_tool name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LINK_LIBS;MLIR_LIBS" ${ARGN})
  add_llvm_executable(${name} ${ARG_SOURCES})
  llvm_update_compile_flags(${name})
  if(ARG_LINK_LIBS)
    target_link_libraries(${name} PRIVATE ${ARG_LINK_LIBS})
  endif()
  if(ARG_MLIR_LIBS)
    mlir_target_link_libraries(${name} PRIVATE ${ARG_MLIR_LIBS})
  endif()
  target_link_libraries(${name} PRIVATE LLVM)
  set_target_properties(${name} PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
endfunction()
