// RUN: netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm.pe(netvm.handler(netvm-reassociate))))' | FileCheck %s

netvm.application @a {
  netvm.pe @p {
    netvm.port @i push_input
    // CHECK-LABEL: netvm.handler push
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c2 = arith.constant 2 : i32
      %c4 = arith.constant 4 : i32
      %c14 = arith.constant 14 : i32
      %c20 = arith.constant 20 : i32
      %c0xf0 = arith.constant 0xf0 : i32
      %c0x0f = arith.constant 0x0f : i32
      // CHECK: %[[R0:.*]] = netvm.load packet
      %r0 = netvm.load packet[%c0] : i32
      // Paper Fig. 5: r0 + 14 + 20 is r0 + 34.
      // CHECK: %[[A:.*]] = arith.addi %[[R0]], %c34_i32 : i32
      // CHECK-NEXT: netvm.load packet[%[[A]]] : i8
      %a1 = arith.addi %r0, %c14 : i32
      %a2 = arith.addi %a1, %c20 : i32
      %l1 = netvm.load packet[%a2] : i8
      // A subtraction of a constant joins the chain: (r0 + 14) - 4 is r0 + 10.
      // CHECK: arith.addi %[[R0]], %c10_i32 : i32
      %s1 = arith.subi %a1, %c4 : i32
      %l2 = netvm.load packet[%s1] : i8
      // Constants move out of a chain: (r0 + 14) + h is (r0 + h) + 14, so
      // that (r0 + h) + 14 and ((r0 + h) + 14) + 2 share r0 + h.
      // CHECK: %[[H:.*]] = netvm.load packet[%c2_i32] : i32
      // CHECK: %[[RH:.*]] = arith.addi %[[R0]], %[[H]] : i32
      // CHECK: arith.addi %[[RH]], %c16_i32 : i32
      %h = netvm.load packet[%c2] : i32
      %b1 = arith.addi %r0, %c14 : i32
      %b2 = arith.addi %b1, %h : i32
      %b3 = arith.addi %b2, %c2 : i32
      %l3 = netvm.load packet[%b3] : i8
      // Or and xor chains too.
      // CHECK: arith.ori %[[R0]], %c255_i32 : i32
      %o1 = arith.ori %r0, %c0xf0 : i32
      %o2 = arith.ori %o1, %c0x0f : i32
      netvm.store %o2, data[%c0] : i32
      // Negative: a chain without constants is left as it is.
      // CHECK: %[[V:.*]] = arith.addi %[[R0]], %[[H]] : i32
      // CHECK-NEXT: arith.addi %[[V]], %[[R0]] : i32
      %v1 = arith.addi %r0, %h : i32
      %v2 = arith.addi %v1, %r0 : i32
      netvm.store %v2, data[%c0] : i32
      // Negative: a constant of an inner chain with another use stays inside.
      // CHECK: %[[K:.*]] = arith.addi %[[R0]], %c14_i32 : i32
      // CHECK: arith.addi %[[K]], %[[H]] : i32
      %k1 = arith.addi %r0, %c14 : i32
      %k2 = arith.addi %k1, %h : i32
      netvm.store %k1, data[%c0] : i32
      netvm.store %k2, data[%c0] : i32
      %t = arith.trunci %r0 : i32 to i8
      %u = arith.addi %l1, %l2 : i8
      %w = arith.addi %u, %l3 : i8
      %z = arith.cmpi eq, %w, %t : i8
      cf.cond_br %z, ^yes, ^no
    ^yes:
      netvm.drop
    ^no:
      netvm.drop
    }
  }
}
