// RUN: netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm.pe(netvm.handler(netvm-merge-tests))))' --split-input-file | FileCheck %s

// Two tests that both reject: one branch on either condition.
netvm.application @a {
  netvm.pe @p {
    netvm.port @i push_input
    netvm.port @o push_output
    // CHECK-LABEL: netvm.handler push
    netvm.handler push(%port) {
      %c8 = arith.constant 8 : i32
      %c12 = arith.constant 12 : i32
      %c23 = arith.constant 23 : i32
      %c6 = arith.constant 6 : i32
      // CHECK: %[[T:.*]] = arith.cmpi ne, %{{.*}}, %c8_i32 : i32
      // CHECK: netvm.load packet[%{{.*}}] {in_bounds} : i8
      // CHECK: %[[P:.*]] = arith.cmpi ne, %{{.*}}, %c6_i32 : i32
      // CHECK: %[[EITHER:.*]] = arith.ori %[[T]], %[[P]] : i1
      // CHECK: cf.cond_br %[[EITHER]], ^[[REJECT:.*]], ^[[ACCEPT:.*]]
      // CHECK-NOT: cf.cond_br
      %t = netvm.load packet[%c12] {in_bounds} : i16
      %te = arith.extui %t : i16 to i32
      %notip = arith.cmpi ne, %te, %c8 : i32
      cf.cond_br %notip, ^reject, ^next
    ^next:
      %p = netvm.load packet[%c23] {in_bounds} : i8
      %pe = arith.extui %p : i8 to i32
      %nottcp = arith.cmpi ne, %pe, %c6 : i32
      cf.cond_br %nottcp, ^reject, ^accept
    ^accept:
      netvm.send @o
    ^reject:
      netvm.drop
    }
  }
}

// -----

// The exit on the other edge: "if (a) accept; if (b) accept; reject".
netvm.application @a {
  netvm.pe @p {
    netvm.port @i push_input
    netvm.port @o push_output
    // CHECK-LABEL: netvm.handler push
    netvm.handler push(%port) {
      %c26 = arith.constant 26 : i32
      %h1 = arith.constant 1 : i32
      %h2 = arith.constant 2 : i32
      // CHECK: %[[A:.*]] = arith.cmpi eq, %{{.*}}, %c1_i32
      // CHECK: %[[B:.*]] = arith.cmpi eq, %{{.*}}, %c2_i32
      // CHECK: %[[E:.*]] = arith.ori %[[A]], %[[B]] : i1
      // CHECK: cf.cond_br %[[E]], ^[[ACC:.*]], ^[[REJ:.*]]
      %s = netvm.load packet[%c26] {in_bounds} : i32
      %is1 = arith.cmpi eq, %s, %h1 : i32
      cf.cond_br %is1, ^accept, ^next
    ^next:
      %is2 = arith.cmpi eq, %s, %h2 : i32
      cf.cond_br %is2, ^accept, ^reject
    ^accept:
      netvm.send @o
    ^reject:
      netvm.drop
    }
  }
}

// -----

// Negative: a block with a bounds check (or a load not yet proven in
// bounds) cannot run early.
netvm.application @a {
  netvm.pe @p {
    netvm.port @i push_input
    netvm.port @o push_output
    // CHECK-LABEL: netvm.handler push
    netvm.handler push(%port) {
      %c12 = arith.constant 12 : i32
      %c23 = arith.constant 23 : i32
      %c6 = arith.constant 6 : i32
      // CHECK: cf.cond_br
      // CHECK: netvm.check_bounds
      // CHECK: cf.cond_br
      %t = netvm.load packet[%c12] {in_bounds} : i16
      %te = arith.extui %t : i16 to i32
      %notip = arith.cmpi ne, %te, %c6 : i32
      cf.cond_br %notip, ^reject, ^next
    ^next:
      netvm.check_bounds packet[%c23], 1
      %p = netvm.load packet[%c23] {in_bounds} : i8
      %pe = arith.extui %p : i8 to i32
      %nottcp = arith.cmpi ne, %pe, %c6 : i32
      cf.cond_br %nottcp, ^reject, ^accept
    ^accept:
      netvm.send @o
    ^reject:
      netvm.drop
    }
  }
}

// -----

// Negative: the next block has another predecessor, or a store.
netvm.application @a {
  netvm.pe @p attributes {datamem_size = 4 : i32} {
    netvm.port @i push_input
    netvm.port @o push_output
    // CHECK-LABEL: netvm.handler push
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c6 = arith.constant 6 : i32
      // CHECK: cf.cond_br
      // CHECK: netvm.store
      // CHECK: cf.cond_br
      %t = netvm.load packet[%c0] {in_bounds} : i8
      %te = arith.extui %t : i8 to i32
      %a = arith.cmpi ne, %te, %c6 : i32
      cf.cond_br %a, ^reject, ^next
    ^next:
      netvm.store %te, data[%c0] {in_bounds} : i32
      %b = arith.cmpi eq, %te, %c0 : i32
      cf.cond_br %b, ^reject, ^accept
    ^accept:
      netvm.send @o
    ^reject:
      netvm.drop
    }
  }
}
