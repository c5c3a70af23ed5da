//===- MEDialect.h - The me dialect -----------------------------*- C++ -*-===//
#ifndef NETVM_DIALECT_MEDIALECT_H
#define NETVM_DIALECT_MEDIALECT_H

#include "mlir/IR/Dialect.h"

#include "ME/MEDialect.h.inc"

#endif // NETVM_DIALECT_MEDIALECT_H
