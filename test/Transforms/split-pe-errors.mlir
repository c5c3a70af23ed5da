// RUN: not netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm-split-pe{pe=fat}))' --split-input-file 2>&1 | FileCheck %s
// RUN: not netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm-split-pe{pe=nope}))' --split-input-file 2>&1 | FileCheck %s --check-prefix=NAME
// RUN: not netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm-split-pe{pe=fat block=1}))' --split-input-file 2>&1 | FileCheck %s --check-prefix=BLOCK
// RUN: not netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm-split-pe{pe=fat block=7}))' --split-input-file 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm-split-pe{pe=fat fraction=1.5}))' --split-input-file 2>&1 | FileCheck %s --check-prefix=FRACTION
// RUN: not netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm-split-pe{pe=fat target=arm}))' --split-input-file 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: not netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm-split-pe))' --split-input-file 2>&1 | FileCheck %s --check-prefix=NONE

// NAME: split-pe-errors.mlir:[[@LINE+9]]:1: error: netvm-split-pe: no NetPE named 'nope'
// FRACTION: error: netvm-split-pe: fraction must lie between 0 and 1
// TARGET: error: netvm-split-pe: target must be 'native' or 'me', not 'arm'
// NONE: error: netvm-split-pe: name the NetPE to split (pe=NAME)
// RANGE: error: netvm-split-pe: NetPE 'fat' has 3 blocks in its push handler: no block 7

// Data memory on both sides of every cut.
// CHECK: split-pe-errors.mlir:[[@LINE+3]]:3: error: netvm-split-pe: NetPE 'fat' has no legal cut point (nearest the fraction: block {{[0-9]}}: data memory is used on both sides: the halves run in different stages, so a packet's later accesses could come before an earlier packet's)
// BLOCK: error: netvm-split-pe: cannot cut NetPE 'fat' before block 1: data memory is used on both sides
netvm.application @both {
  netvm.pe @fat attributes {datamem_size = 4 : i32} {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %a = netvm.load data[%c0] : i32
      cf.br ^y
    ^y:
      cf.br ^z
    ^z:
      netvm.store %c0, data[%c0] : i32
      netvm.send @o
    }
  }
}

// -----

// A loop header (the default cut is the block after the loop).
// BLOCK: error: netvm-split-pe: cannot cut NetPE 'fat' before block 1: it is in a loop (a block after it branches back to it)
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

// -----

// Info memory at a computed offset in another NetPE, and info_len.
// CHECK: error: netvm-split-pe: NetPE 'other' accesses info memory at a computed offset or length: the carried values could not be kept from it
netvm.application @computed {
  netvm.pe @fat {
    netvm.port @i push_input
    netvm.handler push(%port) {
      cf.br ^b
    ^b:
      netvm.drop
    }
  }
  netvm.pe @other {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %v = netvm.load info[%port] : i8
      netvm.drop
    }
  }
}

// -----

// CHECK: error: netvm-split-pe: NetPE 'fat' reads info_len, which the carried values would change
netvm.application @infolen {
  netvm.pe @fat {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %n = netvm.info_len
      cf.br ^b
    ^b:
      netvm.drop
    }
  }
}

// -----

// A copy sent before the cut, and a port sent on from both sides.
// CHECK: error: netvm-split-pe: NetPE 'fat' has no legal cut point (nearest the fraction: block 1: a copy is sent (send_dup) before it)
netvm.application @dup {
  netvm.pe @fat {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      netvm.send_dup @o
      cf.br ^b
    ^b:
      netvm.send @o
    }
  }
}

// -----

// CHECK: error: netvm-split-pe: NetPE 'fat' has no legal cut point (nearest the fraction: block {{[0-9]}}: port 'o' is sent on from both sides)
netvm.application @twice {
  netvm.pe @fat {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %x = netvm.load packet[%c0] : i8
      %z = arith.trunci %x : i8 to i1
      cf.cond_br %z, ^early, ^late
    ^early:
      netvm.send @o
    ^late:
      cf.br ^last
    ^last:
      netvm.send @o
    }
  }
}

// -----

// Shared memory written after the cut and read before it.
// CHECK: error: netvm-split-pe: NetPE 'fat' has no legal cut point (nearest the fraction: block 1: shared memory is used on both sides and written on one)
netvm.application @shared {
  netvm.pe @fat attributes {sharedmem_size = 4 : i32} {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %v = netvm.load shared[%c0] : i32
      cf.br ^b
    ^b:
      netvm.store %c0, shared[%c0] : i32
      netvm.send @o
    }
  }
}

// -----

// More live values than max-carried (8): nine loads used after the cut.
// CHECK: error: netvm-split-pe: NetPE 'fat' has no legal cut point (nearest the fraction: block 1: 9 values are live across it (at most 8))
netvm.application @many {
  netvm.pe @fat {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %v0 = netvm.load packet[%c0] : i8
      %v1 = netvm.load packet[%c0] : i16
      %v2 = netvm.load packet[%c0] : i32
      %v3 = netvm.pkt_len
      %v4 = netvm.wire_len
      %v5 = arith.addi %v2, %v3 : i32
      %v6 = arith.addi %v5, %v4 : i32
      %v7 = arith.addi %v6, %v3 : i32
      cf.br ^b
    ^b:
      netvm.store %v0, packet[%port] : i8
      netvm.store %v1, packet[%v2] : i16
      netvm.store %v3, packet[%v4] : i32
      netvm.store %v5, packet[%v6] : i32
      netvm.store %v7, packet[%c0] : i32
      netvm.send @o
    }
  }
}

// -----

// One block: nowhere to cut.
// CHECK: error: netvm-split-pe: NetPE 'fat' has no legal cut point (its push handler is one block)
netvm.application @one {
  netvm.pe @fat {
    netvm.port @i push_input
    netvm.handler push(%port) {
      netvm.drop
    }
  }
}
