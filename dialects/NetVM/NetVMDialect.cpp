//===- NetVMDialect.cpp - The netvm dialect
//---------------------------------===//
//
// Registers the operations and attributes of the netvm dialect.
//
//===----------------------------------------------------------------------===//

#include "NetVM/NetVMDialect.h"
#include "NetVM/NetVMAttributes.h"
#include "NetVM/NetVMOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace netvm;

#include "NetVM/NetVMDialect.cpp.inc"
#include "NetVM/NetVMEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "NetVM/NetVMAttributes.cpp.inc"

void NetVMDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "NetVM/NetVMOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "NetVM/NetVMAttributes.cpp.inc"
      >();
}

ExceptionKind netvm::boundsExceptionFor(MemSpace space) {
  switch (space) {
  case MemSpace::Packet:
    return ExceptionKind::PacketBounds;
  case MemSpace::Info:
    return ExceptionKind::InfoBounds;
  case MemSpace::Data:
    return ExceptionKind::DataBounds;
  case MemSpace::Shared:
    return ExceptionKind::SharedBounds;
  case MemSpace::InitData:
    return ExceptionKind::InitDataBounds;
  }
  llvm_unreachable("unknown memory space");
}
