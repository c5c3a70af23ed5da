#===- NetVMMacros.cmake - Helpers for netvm targets ---------------------===#
#
# add_netvm_library(name SOURCES ... [DEPENDS tgt...] [LINK_LIBS lib...]
#                   [MLIR_LIBS lib...] [EH] [RUNTIME])
#   A static library of this project. LINK_LIBS are our own libraries and
#   system libraries (plain target_link_libraries); MLIR_LIBS are MLIR
#   components, which in dylib mode all become libMLIR.so. EH builds the
#   library with C++ exceptions (ANTLR-generated code and the runtime need
#   them; LLVM's flags turn them off). A library sees the compiler's include
#   paths (NetVMCompilerHeaders: LLVM, MLIR, include/, dialects/ and
#   runtime/include); a RUNTIME library (under runtime/) sees runtime/include
#   only, so that it cannot include LLVM, MLIR or lib/ headers.
#
# add_netvm_tool(name SOURCES ... [LINK_LIBS ...] [MLIR_LIBS ...])
#   An executable in bin/, linked against libMLIR.so and libLLVM.so.
#
# add_netvm_fuzzer(name SOURCES ... [LINK_LIBS ...] [MLIR_LIBS ...])
#   A libFuzzer harness (fuzz build tree only, see the end of this file).
#
# Both add -Werror when NETVM_WERROR is on (scripts/setup.sh turns it on).
#===----------------------------------------------------------------------===#

# -Werror on a target of ours, when asked for. Warnings of system headers
# (LLVM's and MLIR's come through -isystem) are not reported at all.
function(netvm_target_werror name)
  if(NETVM_WERROR)
    target_compile_options(${name} PRIVATE -Werror)
  endif()
endfunction()

function(add_netvm_library name)
  cmake_parse_arguments(ARG "EH;RUNTIME" ""
    "SOURCES;DEPENDS;LINK_LIBS;MLIR_LIBS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  if(ARG_RUNTIME)
    target_link_libraries(${name} PUBLIC NetVMRuntimeHeaders)
  else()
    target_link_libraries(${name} PUBLIC NetVMCompilerHeaders)
  endif()
  netvm_target_werror(${name})
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
  target_link_libraries(${name} PRIVATE NetVMCompilerHeaders)
  netvm_target_werror(${name})
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

# add_netvm_antlr_parser(<library> GRAMMAR <name>.g4 PACKAGE <namespace>
#                        SOURCES <sources...> [LINK_LIBS ...] [MLIR_LIBS ...])
# A front-end library whose parser ANTLR generates from GRAMMAR (beside the
# CMakeLists) into ${CMAKE_CURRENT_BINARY_DIR}/antlr: a lexer, a parser
# and visitors (no listeners) in namespace PACKAGE. Debian's ANTLR tool
# (4.7.2) writes code that builds against its 4.9 C++ runtime; ANTLR code
# needs exceptions and RTTI, and its warnings are not ours to fix.
function(add_netvm_antlr_parser name)
  cmake_parse_arguments(ARG "" "GRAMMAR;PACKAGE" "SOURCES;LINK_LIBS;MLIR_LIBS"
    ${ARGN})
  find_package(antlr4-runtime REQUIRED CONFIG)
  find_program(NETVM_ANTLR4 antlr4 REQUIRED)
  get_filename_component(grammar ${ARG_GRAMMAR} NAME_WE)
  set(gen ${CMAKE_CURRENT_BINARY_DIR}/antlr)
  set(compiled ${gen}/${grammar}Lexer.cpp ${gen}/${grammar}Parser.cpp)
  set(generated ${compiled}
    ${gen}/${grammar}Lexer.h ${gen}/${grammar}Parser.h
    ${gen}/${grammar}Visitor.cpp ${gen}/${grammar}Visitor.h
    ${gen}/${grammar}BaseVisitor.cpp ${gen}/${grammar}BaseVisitor.h)
  add_custom_command(
    OUTPUT ${generated}
    COMMAND ${NETVM_ANTLR4} -Dlanguage=Cpp -visitor -no-listener
            -package ${ARG_PACKAGE} -Xexact-output-dir -o ${gen}
            ${CMAKE_CURRENT_SOURCE_DIR}/${ARG_GRAMMAR}
    DEPENDS ${ARG_GRAMMAR}
    COMMENT "Generating the ${grammar} parser (ANTLR)")
  set_source_files_properties(${generated} PROPERTIES GENERATED TRUE)
  set_source_files_properties(${compiled} PROPERTIES COMPILE_OPTIONS "-w")
  add_netvm_library(${name} EH
    SOURCES ${ARG_SOURCES} ${compiled}
    LINK_LIBS NetVMFilterSupport ${ARG_LINK_LIBS}
    MLIR_LIBS ${ARG_MLIR_LIBS})
  target_include_directories(${name} PRIVATE ${gen} ${ANTLR4_INCLUDE_DIR})
endfunction()

# add_netvm_fuzzer(name SOURCES ... [LINK_LIBS ...] [MLIR_LIBS ...])
#   A libFuzzer harness in bin/ of the fuzz build tree (NETVM_FUZZERS),
#   part of the target netvm-fuzzers: a tool whose main is libFuzzer's.
function(add_netvm_fuzzer name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LINK_LIBS;MLIR_LIBS" ${ARGN})
  add_netvm_tool(${name} SOURCES ${ARG_SOURCES}
    LINK_LIBS NetVMFuzzing ${ARG_LINK_LIBS}
    MLIR_LIBS ${ARG_MLIR_LIBS})
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  add_dependencies(netvm-fuzzers ${name})
endfunction()
