// RUN: netvm-opt --netvm-to-llvm %s -verify-diagnostics -split-input-file

// Native code needs every access checked (netvm-insert-bounds-checks).
netvm.application @a {
  netvm.source @in
  netvm.pe @p {
    netvm.port @in push_input
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      // expected-error @below {{has no bounds check; run netvm-insert-bounds-checks before generating native code}}
      %0 = netvm.load packet[%c0] : i8
      netvm.drop
    }
  }
  netvm.connect @in -> @p::@in
}

// -----

// expected-error @below {{native code generation needs exactly one netvm.application in the module}}
module {
}
