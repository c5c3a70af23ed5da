//===- Diags.h - Diagnostics at NetIL source positions ----------*- C++ -*-===//
//
// Turns positions in a NetIL buffer (llvm::SMLoc) into MLIR file:line:col
// locations and emits MLIR diagnostics there, so that the assembler's errors
// go through the same engine (and the same -verify-diagnostics testing) as
// every other stage.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_LIB_FRONTEND_NETIL_DIAGS_H
#define NETVM_LIB_FRONTEND_NETIL_DIAGS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/SourceMgr.h"

namespace netvm::netil {

class Diags {
public:
  Diags(llvm::SourceMgr &sourceMgr, unsigned bufferId,
        mlir::MLIRContext *context)
      : sourceMgr(sourceMgr), bufferId(bufferId), context(context) {}

  mlir::Location loc(llvm::SMLoc pos) const {
    auto [line, col] = sourceMgr.getLineAndColumn(pos, bufferId);
    return mlir::FileLineColLoc::get(
        context, sourceMgr.getMemoryBuffer(bufferId)->getBufferIdentifier(),
        line, col);
  }

  mlir::InFlightDiagnostic error(llvm::SMLoc pos) {
    ++numErrors;
    // The parser tripping over a token the lexer rejected adds nothing.
    if (lexErrorPositions.contains(pos.getPointer()))
      return mlir::InFlightDiagnostic();
    return mlir::emitError(loc(pos));
  }
  /// An error of the lexer: later errors at the same position are dropped.
  mlir::InFlightDiagnostic lexError(llvm::SMLoc pos) {
    mlir::InFlightDiagnostic diag = error(pos);
    lexErrorPositions.insert(pos.getPointer());
    return diag;
  }
  mlir::InFlightDiagnostic warning(llvm::SMLoc pos) {
    return mlir::emitWarning(loc(pos));
  }

  unsigned errorCount() const { return numErrors; }
  mlir::MLIRContext *getContext() const { return context; }
  llvm::StringRef buffer() const {
    return sourceMgr.getMemoryBuffer(bufferId)->getBuffer();
  }

private:
  llvm::SourceMgr &sourceMgr;
  unsigned bufferId;
  mlir::MLIRContext *context;
  unsigned numErrors = 0;
  llvm::DenseSet<const char *> lexErrorPositions;
};

} // namespace netvm::netil

#endif // NETVM_LIB_FRONTEND_NETIL_DIAGS_H
