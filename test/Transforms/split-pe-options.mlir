// Errors of the options and of explicit cuts (split-pe-errors.mlir: the
// cuts the pass refuses when it chooses).
// RUN: not netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm-split-pe{pe=nope}))' 2>&1 | FileCheck %s --check-prefix=NAME
// RUN: not netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm-split-pe{pe=fat block=1}))' 2>&1 | FileCheck %s --check-prefix=LOOP
// RUN: not netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm-split-pe{pe=fat block=0}))' 2>&1 | FileCheck %s --check-prefix=ENTRY
// RUN: not netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm-split-pe{pe=fat block=7}))' 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm-split-pe{pe=fat fraction=1.5}))' 2>&1 | FileCheck %s --check-prefix=FRACTION
// RUN: not netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm-split-pe{pe=fat target=arm}))' 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: not netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm-split-pe))' 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm-split-pe{pe=fat block=3}))' | FileCheck %s --check-prefix=EXIT

// NAME: split-pe-options.mlir:[[@LINE+9]]:1: error: netvm-split-pe: no NetPE named 'nope'
// LOOP: split-pe-options.mlir:[[@LINE+9]]:3: error: netvm-split-pe: cannot cut NetPE 'fat' before block 1: it is in a loop (a block after it branches back to it)
// ENTRY: error: netvm-split-pe: cannot cut NetPE 'fat' before block 0: it is the entry block
// RANGE: error: netvm-split-pe: NetPE 'fat' has 4 blocks in its push handler: no block 7
// FRACTION: error: netvm-split-pe: fraction must lie between 0 and 1
// TARGET: error: netvm-split-pe: target must be 'native' or 'me', not 'arm'
// NONE: error: netvm-split-pe: name the NetPE to split (pe=NAME)
// The block after the loop is a legal cut.
// EXIT: netvm.pe @fat_2
netvm.application @loop {
  netvm.pe @fat {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      cf.br ^head(%c0 : i32)
    ^head(%n: i32):
      %x = netvm.load packet[%n] : i8
      %z = arith.trunci %x : i8 to i1
      cf.cond_br %z, ^head(%n : i32), ^body
    ^body:
      cf.cond_br %z, ^head(%n : i32), ^out
    ^out:
      netvm.send @o
    }
  }
}
