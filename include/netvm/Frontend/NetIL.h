//===- NetIL.h - The NetIL assembler ----------------------------*- C++ -*-===//
//
// Assembles NetIL source (NetBee's syntax) into a `netvm.pe` in SSA form:
// parsing, the static safety checks of the NetVM paper (section 3.3) and the
// conversion of stack code to SSA values and block arguments.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_FRONTEND_NETIL_H
#define NETVM_FRONTEND_NETIL_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

namespace llvm {
class SourceMgr;
} // namespace llvm

namespace netvm {
class ApplicationOp;
class PEOp;

namespace netil {

/// Assemble the NetIL program in buffer `bufferId` of `sourceMgr` into a new
/// `netvm.pe` appended to the body of `app`. The NetPE is named `name` if
/// `forceName` is set, otherwise after its `.netpe_name` directive, or
/// `name` if it has none. Diagnostics (with file:line:col) go to the
/// context's diagnostic engine; on error nothing is added and a null NetPE
/// is returned.
PEOp assemble(llvm::SourceMgr &sourceMgr, unsigned bufferId, ApplicationOp app,
              llvm::StringRef name, bool forceName = false);

/// The NetIL mnemonics netvm accepts, in opcode-table order (for docs and
/// tests).
void listMnemonics(llvm::function_ref<void(llvm::StringRef)> callback);

} // namespace netil
} // namespace netvm

#endif // NETVM_FRONTEND_NETIL_H
