//===- NetVMAttributes.h - Enumerations of the netvm dialect ----*- C++ -*-===//
//
// Memory spaces, handler and port kinds, exception kinds, and the variants of
// the bit, field-comparison, timestamp and CRC operations, as C++ enums and
// as attributes.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_DIALECT_NETVMATTRIBUTES_H
#define NETVM_DIALECT_NETVMATTRIBUTES_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#include "NetVM/NetVMEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "NetVM/NetVMAttributes.h.inc"

namespace netvm {
/// The exception raised by an access out of bounds of a memory space.
ExceptionKind boundsExceptionFor(MemSpace space);
} // namespace netvm

#endif // NETVM_DIALECT_NETVMATTRIBUTES_H
