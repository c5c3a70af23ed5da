//===- CodeGen.h - NetVM applications compiled for the microengines -*- C++
//-*-===//
//
// The microengine (ME) back end as a library: a netvm.application, after the
// optimizer, becomes a loadable emulator image (netvm/emu/Image.h) together
// with the layout a host needs to run it (which receive port feeds which
// source, where each NetPE's data memory lives, where exceptions are logged).
// The pipeline is
//
//   netvm (+ arith, cf) --netvm-to-me--> me dialect (virtual registers)
//     --me-allocate-registers--> me dialect (physical registers)
//     --emission--> machine program (handlers + the generated packet path)
//     --encoder--> Image            (and -S: ME assembly of the same image)
//
// docs/me-backend.md describes every step, the memory map and the
// refusals.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_TARGET_ME_CODEGEN_H
#define NETVM_TARGET_ME_CODEGEN_H

#include "netvm/Target/ME/AppLayout.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LogicalResult.h"

namespace netvm::me {

/// Compiles an optimized application (driver::optimize with
/// OptimizeFor::ME). Diagnostics (refusals with the NetPE and the construct,
/// resources that do not fit) go to the context's handler; returns failure
/// after reporting them. With `meIR`, the handlers in the me dialect after
/// register allocation (each definition's `reg` attribute names its
/// register) are handed back too (netc -emit=me).
mlir::LogicalResult
compileApplication(mlir::ModuleOp module, const CodeGenOptions &options,
                   CompiledApp &result,
                   mlir::OwningOpRef<mlir::ModuleOp> *meIR = nullptr);

/// Parses a placement given by hand (netc --me-placement): items
/// separated by ';', each "rx=N" (receive MEs) or a stage "pe1,pe2*N" (its
/// NetPEs on N MEs; "*N" alone: every NetPE), e.g. "rx=2;ip,count*3;tail".
/// docs/me-backend.md has the syntax. False with a message on an error.
bool parsePlacement(llvm::StringRef spec, Placement &placement,
                    std::string &error);

} // namespace netvm::me

#endif // NETVM_TARGET_ME_CODEGEN_H
