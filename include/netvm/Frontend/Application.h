//===- Application.h - The .nvapp application description front end -*- C++
//-*-===//
//
// Application descriptions (.nvapp, docs/applications.md) name an
// application's NetPEs and their NetIL files, its sources and sinks and
// the connections between them:
//
//   # comment
//   application NAME
//   pe NAME = "file.netil"
//   source NAME[, NAME...]
//   sink NAME[, NAME...]
//   FROM -> TO          (endpoints: a source/sink NAME or PE.PORT)
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_FRONTEND_APPLICATION_H
#define NETVM_FRONTEND_APPLICATION_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace llvm {
class SourceMgr;
} // namespace llvm

namespace netvm::application {

/// Finds the NetIL file a description names (relative to the description)
/// in the source manager, loading it if needed; reports an error at
/// `useLoc` and returns nothing if it cannot be read.
using FileLoader = llvm::function_ref<std::optional<unsigned>(
    llvm::StringRef path, mlir::Location useLoc)>;

/// Parse the description in buffer `bufferId` of `sourceMgr` and assemble
/// its NetPEs into a verified module with one netvm.application, named
/// `appName` if given (else as the description says, else after the
/// file). Errors are MLIR diagnostics; returns null after them.
mlir::OwningOpRef<mlir::ModuleOp> parseDescription(mlir::MLIRContext &context,
                                                   llvm::SourceMgr &sourceMgr,
                                                   unsigned bufferId,
                                                   llvm::StringRef appName,
                                                   FileLoader loadFile);

} // namespace netvm::application

#endif // NETVM_FRONTEND_APPLICATION_H
