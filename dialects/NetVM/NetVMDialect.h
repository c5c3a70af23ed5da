//===- NetVMDialect.h - The netvm dialect -----------------------*- C++ -*-===//
//
// The dialect class only. Include NetVMOps.h for the operations and
// NetVMAttributes.h for the enumerations.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_DIALECT_NETVMDIALECT_H
#define NETVM_DIALECT_NETVMDIALECT_H

#include "mlir/IR/Dialect.h"

#include "NetVM/NetVMDialect.h.inc"

#endif // NETVM_DIALECT_NETVMDIALECT_H
