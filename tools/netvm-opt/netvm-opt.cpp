//===- netvm-opt.cpp - mlir-opt for the netvm dialects
//----------------------===//
//
// The MLIR optimizer driver with the netvm and me dialects, the upstream
// dialects netvm handlers use (arith, cf, math) and MLIR's generic
// transformation passes registered. Used by the lit tests and for experimenting
// with pipelines.
//
//===----------------------------------------------------------------------===//

#include "ME/MEDialect.h"
#include "NetVM/NetVMDialect.h"
#include "NetVM/NetVMPasses.h"
#include "netvm/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  netvm::registerNetVMPasses();
  netvm::registerNetVMConversionPasses();
  mlir::DialectRegistry registry;
  registry.insert<netvm::NetVMDialect, mlir::arith::ArithDialect,
                  mlir::cf::ControlFlowDialect, mlir::math::MathDialect,
                  mlir::LLVM::LLVMDialect, netvm::medialect::MEDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "netvm optimizer driver\n", registry));
}
