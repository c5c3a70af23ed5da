//===- NetVM.td - The netvm dialect, all of it -------------*- tablegen -*-===//
//
// Umbrella file: the dialect, its enumerations and its operations. Used to
// generate the dialect's reference documentation.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_TD
#define NETVM_TD

include "NetVMDialect.td"
include "NetVMAttributes.td"
include "NetVMOps.td"

#endif // NETVM_TD
