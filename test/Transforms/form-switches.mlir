// RUN: netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm.pe(netvm.handler(netvm-form-switches{min-cases=4}))))' --split-input-file | FileCheck %s

// A disjunction of equality tests of one field, loaded again for each test
// as netvm-merge-tests leaves it: one switch on the first load, a case per
// constant (the repeated one once).
netvm.application @a {
  netvm.pe @p {
    netvm.port @i push_input
    netvm.port @o push_output
    // CHECK-LABEL: netvm.handler push
    netvm.handler push(%port) {
      %c26 = arith.constant 26 : i32
      %c1 = arith.constant 1 : i32
      %c2 = arith.constant 2 : i32
      %c3 = arith.constant 3 : i32
      %c4 = arith.constant 4 : i32
      // CHECK: %[[X:.*]] = netvm.load packet
      // CHECK: cf.switch %[[X]] : i32, [
      // CHECK-NEXT: default: ^[[NO:bb[0-9]+]],
      // CHECK-NEXT: 1: ^[[YES:bb[0-9]+]],
      // CHECK-NEXT: 2: ^[[YES]],
      // CHECK-NEXT: 3: ^[[YES]],
      // CHECK-NEXT: 4: ^[[YES]]
      // CHECK-NEXT: ]
      // CHECK-NOT: cf.switch
      // CHECK-NOT: cf.cond_br
      %x0 = netvm.load packet[%c26] {in_bounds} : i32
      %t0 = arith.cmpi eq, %x0, %c1 : i32
      %x1 = netvm.load packet[%c26] {in_bounds} : i32
      %t1 = arith.cmpi eq, %c2, %x1 : i32
      %o1 = arith.ori %t0, %t1 : i1
      %x2 = netvm.load packet[%c26] {in_bounds} : i32
      %t2 = arith.cmpi eq, %x2, %c3 : i32
      %o2 = arith.ori %o1, %t2 : i1
      %x3 = netvm.load packet[%c26] {in_bounds} : i32
      %t3 = arith.cmpi eq, %x3, %c4 : i32
      %o3 = arith.ori %o2, %t3 : i1
      %t4 = arith.cmpi eq, %x0, %c2 : i32
      %o4 = arith.ori %o3, %t4 : i1
      cf.cond_br %o4, ^yes, ^no
    ^yes:
      netvm.send @o
    ^no:
      netvm.drop
    }
  }
}

// -----

// Two fields, and the negated form (a conjunction of `!=`, through the
// xor with true that netvm-merge-tests writes): a switch per field, the
// first falling through to the second; a match leaves for the false
// successor.
netvm.application @b {
  netvm.pe @p {
    netvm.port @i push_input
    netvm.port @o push_output
    // CHECK-LABEL: netvm.handler push
    netvm.handler push(%port) {
      %c26 = arith.constant 26 : i32
      %c30 = arith.constant 30 : i32
      %c1 = arith.constant 1 : i32
      %c2 = arith.constant 2 : i32
      %true = arith.constant true
      // CHECK: %[[S:.*]] = netvm.load packet[%c26
      // CHECK: %[[D:.*]] = netvm.load packet[%c30
      // CHECK: cf.switch %[[S]] : i32, [
      // CHECK-NEXT: default: ^[[NEXT:bb[0-9]+]],
      // CHECK-NEXT: 1: ^[[DROP:bb[0-9]+]],
      // CHECK-NEXT: 2: ^[[DROP]]
      // CHECK: ^[[NEXT]]:
      // CHECK-NEXT: cf.switch %[[D]] : i32, [
      // CHECK-NEXT: default: ^[[SEND:bb[0-9]+]],
      // CHECK-NEXT: 1: ^[[DROP]],
      // CHECK-NEXT: 2: ^[[DROP]]
      %s = netvm.load packet[%c26] {in_bounds} : i32
      %d = netvm.load packet[%c30] {in_bounds} : i32
      %n0 = arith.cmpi ne, %s, %c1 : i32
      %n1 = arith.cmpi ne, %d, %c1 : i32
      %a1 = arith.andi %n0, %n1 : i1
      %e2 = arith.cmpi eq, %s, %c2 : i32
      %n2 = arith.xori %e2, %true : i1
      %a2 = arith.andi %a1, %n2 : i1
      %n3 = arith.cmpi ne, %d, %c2 : i32
      %a3 = arith.andi %a2, %n3 : i1
      cf.cond_br %a3, ^send, ^drop
    ^send:
      netvm.send @o
    ^drop:
      netvm.drop
    }
  }
}

// -----

// Left alone: fewer than min-cases (4) tests; a test that is not an equality; loads
// with a store between them (two values, not one).
netvm.application @c {
  netvm.pe @p attributes {datamem_size = 4 : i32} {
    netvm.port @i push_input
    netvm.port @o push_output
    // CHECK-LABEL: netvm.handler push
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c26 = arith.constant 26 : i32
      %c1 = arith.constant 1 : i32
      %c2 = arith.constant 2 : i32
      %c3 = arith.constant 3 : i32
      %c4 = arith.constant 4 : i32
      // CHECK-NOT: cf.switch
      // CHECK: cf.cond_br
      %x = netvm.load packet[%c26] {in_bounds} : i32
      %t0 = arith.cmpi eq, %x, %c1 : i32
      %t1 = arith.cmpi eq, %x, %c2 : i32
      %t2 = arith.cmpi eq, %x, %c3 : i32
      %o1 = arith.ori %t0, %t1 : i1
      %o2 = arith.ori %o1, %t2 : i1
      cf.cond_br %o2, ^more, ^no
    ^more:
      // CHECK-NOT: cf.switch
      // CHECK: cf.cond_br
      %u0 = arith.cmpi eq, %x, %c1 : i32
      %u1 = arith.cmpi eq, %x, %c2 : i32
      %u2 = arith.cmpi eq, %x, %c3 : i32
      %u3 = arith.cmpi ult, %x, %c4 : i32
      %p1 = arith.ori %u0, %u1 : i1
      %p2 = arith.ori %p1, %u2 : i1
      %p3 = arith.ori %p2, %u3 : i1
      cf.cond_br %p3, ^last, ^no
    ^last:
      // CHECK: %[[M0:.*]] = netvm.load data
      // CHECK: netvm.store %{{.*}}, data
      // CHECK: %[[M1:.*]] = netvm.load data
      // CHECK: cf.switch %[[M0]] : i32, [
      // CHECK-NEXT: default: ^[[NEXT:bb[0-9]+]],
      // CHECK-NEXT: 1: ^
      // CHECK-NEXT: 2: ^
      // CHECK: ^[[NEXT]]:
      // CHECK-NEXT: cf.switch %[[M1]] : i32, [
      %m0 = netvm.load data[%c0] {in_bounds} : i32
      netvm.store %c1, data[%c0] {in_bounds} : i32
      %m1 = netvm.load data[%c0] {in_bounds} : i32
      %v0 = arith.cmpi eq, %m0, %c1 : i32
      %v1 = arith.cmpi eq, %m1, %c2 : i32
      %v2 = arith.cmpi eq, %m0, %c2 : i32
      %v3 = arith.cmpi eq, %m1, %c3 : i32
      %q1 = arith.ori %v0, %v1 : i1
      %q2 = arith.ori %q1, %v2 : i1
      %q3 = arith.ori %q2, %v3 : i1
      cf.cond_br %q3, ^yes, ^no
    ^yes:
      netvm.send @o
    ^no:
      netvm.drop
    }
  }
}

// -----

// A disjunction that is a value, not a branch's condition (NetPFL or's a
// header's tests into a flag it carries on): the block is split after it,
// a switch sends matches to the rest with true and everything else with
// false, and the value's uses read the new block argument. A negated one
// (a conjunction of `!=`) gives false on a match.
netvm.application @v {
  netvm.pe @p {
    netvm.port @i push_input
    netvm.port @o push_output
    // CHECK-LABEL: netvm.handler push
    netvm.handler push(%port) {
      %c26 = arith.constant 26 : i32
      %c1 = arith.constant 1 : i32
      %c2 = arith.constant 2 : i32
      %c3 = arith.constant 3 : i32
      %c4 = arith.constant 4 : i32
      %true = arith.constant true
      // CHECK: %[[X:.*]] = netvm.load packet
      // CHECK: cf.switch %[[X]] : i32, [
      // CHECK-NEXT: default: ^[[REST:bb[0-9]+]](%[[F:[a-z0-9_]+]] : i1),
      // CHECK-NEXT: 1: ^[[REST]](%[[T:[a-z0-9_]+]] : i1),
      // CHECK-NEXT: 2: ^[[REST]](%[[T]] : i1),
      // CHECK-NEXT: 3: ^[[REST]](%[[T]] : i1),
      // CHECK-NEXT: 4: ^[[REST]](%[[T]] : i1)
      // CHECK-NEXT: ]
      // CHECK: ^[[REST]](%[[D:.*]]: i1):
      // CHECK-NEXT: %[[Y:.*]] = netvm.load packet
      // CHECK: cf.switch %[[Y]] : i32, [
      // CHECK-NEXT: default: ^[[REST2:bb[0-9]+]](%[[T2:[a-z0-9_]+]] : i1),
      // CHECK-NEXT: 1: ^[[REST2]](%[[F2:[a-z0-9_]+]] : i1),
      // CHECK: ^[[REST2]](%[[N:.*]]: i1):
      // CHECK-NEXT: %[[W:.*]] = arith.extui %[[D]] : i1 to i32
      // CHECK-NEXT: %[[V:.*]] = arith.extui %[[N]] : i1 to i32
      // CHECK-NEXT: netvm.store %[[W]], data
      // CHECK-NEXT: netvm.store %[[V]], data
      %x = netvm.load packet[%c26] {in_bounds} : i32
      %t0 = arith.cmpi eq, %x, %c1 : i32
      %t1 = arith.cmpi eq, %x, %c2 : i32
      %o1 = arith.ori %t0, %t1 : i1
      %t2 = arith.cmpi eq, %x, %c3 : i32
      %o2 = arith.ori %o1, %t2 : i1
      %t3 = arith.cmpi eq, %x, %c4 : i32
      %o3 = arith.ori %o2, %t3 : i1
      %y = netvm.load packet[%c1] {in_bounds} : i32
      %n0 = arith.cmpi ne, %y, %c1 : i32
      %n1 = arith.cmpi ne, %y, %c2 : i32
      %a1 = arith.andi %n0, %n1 : i1
      %n2 = arith.cmpi ne, %y, %c3 : i32
      %a2 = arith.andi %a1, %n2 : i1
      %n3 = arith.cmpi ne, %y, %c4 : i32
      %a3 = arith.andi %a2, %n3 : i1
      %w = arith.extui %o3 : i1 to i32
      %v = arith.extui %a3 : i1 to i32
      netvm.store %w, data[%c1] : i32
      netvm.store %v, data[%c2] : i32
      netvm.send @o
    }
  }
}
