//===- ME.td - The whole me dialect, for its documentation --*- tablegen -*-===//
#ifndef ME_TD
#define ME_TD
include "MEDialect.td"
include "MEOps.td"
#endif // ME_TD
