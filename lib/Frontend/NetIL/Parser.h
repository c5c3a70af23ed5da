//===- Parser.h - NetIL parser entry point ----------------------*- C++ -*-===//
//
// Parses one NetIL buffer into a netil::Program (see AST.h).
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_LIB_FRONTEND_NETIL_PARSER_H
#define NETVM_LIB_FRONTEND_NETIL_PARSER_H

#include "AST.h"

#include <optional>

namespace netvm::netil {

class Diags;

/// Parse the buffer of `diags`. Returns nothing if any error was reported.
std::optional<Program> parse(Diags &diags);

} // namespace netvm::netil

#endif // NETVM_LIB_FRONTEND_NETIL_PARSER_H
