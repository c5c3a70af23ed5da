// RUN: netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm.pe(netvm.handler(netvm-reassociate))))' | FileCheck %s

// One NetPE per case; each starts from a value loaded from the packet, r0.

netvm.application @a {
  // Paper Fig. 5: r0 + 14 + 20 is r0 + 34.
  // CHECK-LABEL: netvm.pe @fold
  // CHECK: %[[R0:.*]] = netvm.load packet
  // CHECK: %[[A:.*]] = arith.addi %[[R0]], %c34_i32 : i32
  // CHECK-NEXT: netvm.load packet[%[[A]]] : i8
  netvm.pe @fold {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c14 = arith.constant 14 : i32
      %c20 = arith.constant 20 : i32
      %r0 = netvm.load packet[%c0] : i32
      %a1 = arith.addi %r0, %c14 : i32
      %a2 = arith.addi %a1, %c20 : i32
      %l1 = netvm.load packet[%a2] : i8
      netvm.store %l1, data[%c0] : i8
      netvm.drop
    }
  }

  // A subtraction of a constant joins the chain: (r0 + 14) - 4 is r0 + 10.
  // CHECK-LABEL: netvm.pe @subtract
  // CHECK: %[[R0:.*]] = netvm.load packet
  // CHECK: arith.addi %[[R0]], %c10_i32 : i32
  netvm.pe @subtract {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c4 = arith.constant 4 : i32
      %c14 = arith.constant 14 : i32
      %r0 = netvm.load packet[%c0] : i32
      %a1 = arith.addi %r0, %c14 : i32
      %s1 = arith.subi %a1, %c4 : i32
      %l2 = netvm.load packet[%s1] : i8
      netvm.store %l2, data[%c0] : i8
      netvm.drop
    }
  }

  // Constants move out of a chain: (r0 + 14) + h is (r0 + h) + 14, so
  // that (r0 + h) + 14 and ((r0 + h) + 14) + 2 share r0 + h.
  // CHECK-LABEL: netvm.pe @hoist
  // CHECK: %[[R0:.*]] = netvm.load packet
  // CHECK: %[[H:.*]] = netvm.load packet[%c2_i32] : i32
  // CHECK: %[[RH:.*]] = arith.addi %[[R0]], %[[H]] : i32
  // CHECK: arith.addi %[[RH]], %c16_i32 : i32
  netvm.pe @hoist {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c2 = arith.constant 2 : i32
      %c14 = arith.constant 14 : i32
      %r0 = netvm.load packet[%c0] : i32
      %h = netvm.load packet[%c2] : i32
      %b1 = arith.addi %r0, %c14 : i32
      %b2 = arith.addi %b1, %h : i32
      %b3 = arith.addi %b2, %c2 : i32
      %l3 = netvm.load packet[%b3] : i8
      netvm.store %l3, data[%c0] : i8
      netvm.drop
    }
  }

  // Or and xor chains too.
  // CHECK-LABEL: netvm.pe @or
  // CHECK: %[[R0:.*]] = netvm.load packet
  // CHECK: arith.ori %[[R0]], %c255_i32 : i32
  netvm.pe @or {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c0xf0 = arith.constant 0xf0 : i32
      %c0x0f = arith.constant 0x0f : i32
      %r0 = netvm.load packet[%c0] : i32
      %o1 = arith.ori %r0, %c0xf0 : i32
      %o2 = arith.ori %o1, %c0x0f : i32
      netvm.store %o2, data[%c0] : i32
      netvm.drop
    }
  }

  // Negative: a chain without constants is left as it is.
  // CHECK-LABEL: netvm.pe @no_constants
  // CHECK: %[[R0:.*]] = netvm.load packet
  // CHECK: %[[H:.*]] = netvm.load packet
  // CHECK: %[[V:.*]] = arith.addi %[[R0]], %[[H]] : i32
  // CHECK-NEXT: arith.addi %[[V]], %[[R0]] : i32
  netvm.pe @no_constants {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c2 = arith.constant 2 : i32
      %r0 = netvm.load packet[%c0] : i32
      %h = netvm.load packet[%c2] : i32
      %v1 = arith.addi %r0, %h : i32
      %v2 = arith.addi %v1, %r0 : i32
      netvm.store %v2, data[%c0] : i32
      netvm.drop
    }
  }

  // Negative: a constant of an inner chain with another use stays inside.
  // CHECK-LABEL: netvm.pe @shared_inner
  // CHECK: %[[R0:.*]] = netvm.load packet
  // CHECK: %[[H:.*]] = netvm.load packet
  // CHECK: %[[K:.*]] = arith.addi %[[R0]], %c14_i32 : i32
  // CHECK: arith.addi %[[K]], %[[H]] : i32
  netvm.pe @shared_inner {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c2 = arith.constant 2 : i32
      %c14 = arith.constant 14 : i32
      %r0 = netvm.load packet[%c0] : i32
      %h = netvm.load packet[%c2] : i32
      %k1 = arith.addi %r0, %c14 : i32
      %k2 = arith.addi %k1, %h : i32
      netvm.store %k1, data[%c0] : i32
      netvm.store %k2, data[%c0] : i32
      netvm.drop
    }
  }
}
