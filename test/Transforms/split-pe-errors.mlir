// RUN: netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm-split-pe{pe=fat}))' --split-input-file -verify-diagnostics

// The cuts netvm-split-pe refuses, with the reason given for the legal
// candidate nearest the fraction. Errors of the options and of explicit
// cuts: split-pe-options.mlir.

// Data memory on both sides of every cut.
netvm.application @both {
  // expected-error @+1 {{netvm-split-pe: NetPE 'fat' has no legal cut point (nearest the fraction: block 2: data memory is used on both sides: the halves run in different stages, so a packet's later accesses could come before an earlier packet's)}}
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

// Info memory at a computed offset in another NetPE.
netvm.application @computed {
  // expected-error @+1 {{netvm-split-pe: NetPE 'other' accesses info memory at a computed offset or length: the carried values could not be kept from it}}
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

netvm.application @infolen {
  // expected-error @+1 {{netvm-split-pe: NetPE 'fat' reads info_len, which the carried values would change}}
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

// A copy sent before the cut.
netvm.application @dup {
  // expected-error @+1 {{netvm-split-pe: NetPE 'fat' has no legal cut point (nearest the fraction: block 1: a copy is sent (send_dup) before it)}}
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

// A port sent on from both sides.
netvm.application @twice {
  // expected-error @+1 {{netvm-split-pe: NetPE 'fat' has no legal cut point (nearest the fraction: block 2: port 'o' is sent on from both sides)}}
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
netvm.application @shared {
  // expected-error @+1 {{netvm-split-pe: NetPE 'fat' has no legal cut point (nearest the fraction: block 1: shared memory is used on both sides and written on one)}}
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
netvm.application @many {
  // expected-error @+1 {{netvm-split-pe: NetPE 'fat' has no legal cut point (nearest the fraction: block 1: 9 values are live across it (at most 8))}}
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
netvm.application @one {
  // expected-error @+1 {{netvm-split-pe: NetPE 'fat' has no legal cut point (its push handler is one block)}}
  netvm.pe @fat {
    netvm.port @i push_input
    netvm.handler push(%port) {
      netvm.drop
    }
  }
}
