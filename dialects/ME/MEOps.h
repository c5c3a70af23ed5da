//===- MEOps.h - Operations of the me dialect -------------------*- C++ -*-===//
//
// The operations (generated from MEOps.td) and the link between them and
// the instruction table (MEInstrs.def): which rows each operation writes,
// and the lookups the verifiers use.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_DIALECT_MEOPS_H
#define NETVM_DIALECT_MEOPS_H

#include "ME/MEDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "netvm/emu/Isa.h"

#define GET_OP_CLASSES
#include "ME/MEOps.h.inc"

namespace netvm::medialect {

/// The row of the instruction table with this mnemonic and sub-token
/// (ALU operation, memory command), or null.
const me::InstrInfo *lookupRow(llvm::StringRef mnemonic, llvm::StringRef sub);

/// Which rows of the instruction table an operation of the dialect is
/// written as: (operation name, mnemonic, sub) with sub "*" for every row
/// of the mnemonic. The table and the dialect agree when every row is
/// claimed and every claim names a row (MEDialectTest).
struct RowClaim {
  const char *operation;
  const char *mnemonic;
  const char *sub;
};
llvm::ArrayRef<RowClaim> rowClaims();

/// Rows the dialect leaves to the packet path on purpose, with the reason.
struct RowExclusion {
  const char *mnemonic;
  const char *reason;
};
llvm::ArrayRef<RowExclusion> rowExclusions();

/// The branch that is taken exactly when `cond` is not.
llvm::StringRef invertCondition(llvm::StringRef cond);

} // namespace netvm::medialect

#endif // NETVM_DIALECT_MEOPS_H
