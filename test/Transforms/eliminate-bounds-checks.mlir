// RUN: netvm-opt %s --mlir-print-debuginfo --pass-pipeline='builtin.module(netvm.application(netvm.pe(netvm.handler(netvm-eliminate-bounds-checks))))' --split-input-file | FileCheck %s

// Merging in straight-line code: one check for the furthest field of a
// header; a check dominated by a covering one goes.
netvm.application @a {
  netvm.pe @p {
    netvm.port @i push_input
    netvm.port @o push_output
    // CHECK-LABEL: netvm.handler push
    netvm.handler push(%port) {
      %c14 = arith.constant 14 : i32
      %c15 = arith.constant 15 : i32
      %c2 = arith.constant 2 : i32
      %c80 = arith.constant 80 : i32
      netvm.check_bounds packet[%c14], 1
      %v = netvm.load packet[%c14] {in_bounds} : i8
      %ve = arith.extui %v : i8 to i32
      %ihl = arith.andi %ve, %c15 : i32
      %len = arith.shli %ihl, %c2 : i32
      // The TCP header starts at %h = 14 + 4 * IHL; its ports at %h + 0
      // and %h + 2 (read by one NetIL instruction: one location) get one
      // check of 4 bytes.
      // CHECK: %[[H:.*]] = arith.addi %{{.*}}, %c14_i32 : i32
      // CHECK: netvm.check_bounds packet[%[[H]]], 4
      // CHECK-NOT: netvm.check_bounds
      // CHECK: arith.cmpi
      %h = arith.addi %len, %c14 : i32
      netvm.check_bounds packet[%h], 2 loc("tcp.netil":20:3)
      %sp = netvm.load packet[%h] {in_bounds} : i16
      %h2 = arith.addi %h, %c2 : i32
      netvm.check_bounds packet[%h2], 2 loc("tcp.netil":20:3)
      %dp = netvm.load packet[%h2] {in_bounds} : i16
      %dpe = arith.extui %dp : i16 to i32
      %is = arith.cmpi eq, %dpe, %c80 : i32
      cf.cond_br %is, ^web, ^other
    ^web:
      // Dominated and covered: the source port again.
      // CHECK: ^bb1:
      // CHECK-NOT: netvm.check_bounds
      // CHECK: netvm.send
      netvm.check_bounds packet[%h], 2
      %sp2 = netvm.load packet[%h] {in_bounds} : i16
      netvm.send @o
    ^other:
      // Negative: not covered (bytes 4..7 of the header), and checks are
      // not merged across the branch above.
      // CHECK: ^bb2:
      // CHECK: %[[H4:.*]] = arith.addi
      // CHECK-NEXT: netvm.check_bounds packet[%[[H4]]], 4
      %c4 = arith.constant 4 : i32
      %h4 = arith.addi %h, %c4 : i32
      netvm.check_bounds packet[%h4], 4
      %seq = netvm.load packet[%h4] {in_bounds} : i32
      netvm.drop
    }
  }
}

// -----

// Checks from two NetIL locations stay apart: a packet of 13 bytes must
// raise at the second; a check inside an earlier one goes whatever its
// location.
netvm.application @a {
  netvm.pe @p {
    netvm.port @i push_input
    netvm.port @o push_output
    // CHECK-LABEL: netvm.handler push
    netvm.handler push(%port) {
      %c12 = arith.constant 12 : i32
      %c13 = arith.constant 13 : i32
      // CHECK: netvm.check_bounds packet[%c12_i32], 1 loc(#[[L1:.*]])
      // CHECK: netvm.check_bounds packet[%c13_i32], 1 loc(#[[L2:.*]])
      // CHECK-NOT: netvm.check_bounds
      // CHECK: netvm.send
      netvm.check_bounds packet[%c12], 1 loc("f.netil":3:3)
      %a = netvm.load packet[%c12] {in_bounds} : i8
      netvm.check_bounds packet[%c13], 1 loc("f.netil":5:3)
      %b = netvm.load packet[%c13] {in_bounds} : i8
      netvm.check_bounds packet[%c12], 1 loc("f.netil":7:3)
      %c = netvm.load packet[%c12] {in_bounds} : i8
      netvm.send @o
    }
  }
}
// CHECK: #[[L1]] = loc("f.netil":3:3)
// CHECK: #[[L2]] = loc("f.netil":5:3)

// -----

// An observable operation between two checks keeps them apart.
netvm.application @a {
  netvm.pe @p attributes {datamem_size = 8 : i32} {
    netvm.port @i push_input
    // CHECK-LABEL: netvm.handler push
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c12 = arith.constant 12 : i32
      %c20 = arith.constant 20 : i32
      // CHECK: netvm.check_bounds packet[%{{.*}}], 2
      // CHECK: netvm.store
      // CHECK: netvm.check_bounds packet[%{{.*}}], 4
      netvm.check_bounds packet[%c12], 2
      %a = netvm.load packet[%c12] {in_bounds} : i16
      %ae = arith.extui %a : i16 to i32
      netvm.store %ae, data[%c0] {in_bounds} : i32
      netvm.check_bounds packet[%c20], 4
      %b = netvm.load packet[%c20] {in_bounds} : i32
      netvm.store %b, data[%c0] {in_bounds} : i32
      netvm.drop
    }
  }
}

// -----

// A handler that replaces its exchange buffer keeps its packet checks.
netvm.application @a {
  netvm.pe @p {
    netvm.port @i push_input
    netvm.port @o push_output
    // CHECK-LABEL: netvm.handler push
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c64 = arith.constant 64 : i32
      // CHECK: netvm.check_bounds packet
      // CHECK: netvm.exbuf_create
      // CHECK: netvm.check_bounds packet
      netvm.check_bounds packet[%c0], 4
      %a = netvm.load packet[%c0] {in_bounds} : i32
      netvm.exbuf_create %c64
      netvm.check_bounds packet[%c0], 4
      %b = netvm.load packet[%c0] {in_bounds} : i32
      netvm.drop
    }
  }
}
