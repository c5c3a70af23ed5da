// RUN: netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm.pe(netvm.handler(netvm-eliminate-redundant-loads))))' --split-input-file | FileCheck %s

// Packet memory nobody writes: a dominating load of the same place is
// reused in another block.
netvm.application @a {
  netvm.pe @p {
    netvm.port @i push_input
    netvm.port @o push_output
    // CHECK-LABEL: netvm.handler push
    netvm.handler push(%port) {
      %c12 = arith.constant 12 : i32
      %c14 = arith.constant 14 : i32
      %v4 = arith.constant 0x0800 : i32
      %v6 = arith.constant 0x86dd : i32
      // CHECK: %[[T:.*]] = netvm.load packet[%{{.*}}] : i16
      // CHECK-NEXT: %[[E:.*]] = arith.extui %[[T]] : i16 to i32
      %t = netvm.load packet[%c12] : i16
      %e = arith.extui %t : i16 to i32
      %is4 = arith.cmpi eq, %e, %v4 : i32
      cf.cond_br %is4, ^ip4, ^other
    ^ip4:
      netvm.send @o
    ^other:
      // The second load is the first, and its extension, computed again,
      // the first's too (CSE after the reuse).
      // CHECK: ^bb2:
      // CHECK-NOT: netvm.load packet[%c12_i32] : i16
      // CHECK-NOT: arith.extui %{{.*}} : i16 to i32
      %t2 = netvm.load packet[%c12] : i16
      %e2 = arith.extui %t2 : i16 to i32
      // Negative: another width at the same offset is another load.
      // CHECK: netvm.load packet[%{{.*}}] : i8
      // CHECK: arith.cmpi eq, %[[E]], %c34525_i32
      %b = netvm.load packet[%c12] : i8
      %be = arith.extui %b : i8 to i32
      %is6 = arith.cmpi eq, %e2, %v6 : i32
      %z = arith.cmpi eq, %be, %c14 : i32
      %both = arith.andi %is6, %z : i1
      cf.cond_br %both, ^ip6, ^drop
    ^ip6:
      netvm.send @o
    ^drop:
      netvm.drop
    }
  }
}

// -----

// Data memory that the handler writes: reuse only within a block, up to a
// possible write; a load after a store of the same place takes its value.
netvm.application @a {
  netvm.pe @p attributes {datamem_size = 64 : i32} {
    netvm.port @i push_input
    netvm.port @o push_output
    // CHECK-LABEL: netvm.handler push
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c4 = arith.constant 4 : i32
      %c1 = arith.constant 1 : i32
      // CHECK: %[[N:.*]] = netvm.load data[%{{.*}}] {in_bounds} : i32
      %n = netvm.load data[%c0] {in_bounds} : i32
      // CHECK-NOT: netvm.load data[%c0_i32]
      %n2 = netvm.load data[%c0] {in_bounds} : i32
      %s = arith.addi %n, %n2 : i32
      // CHECK: %[[S:.*]] = arith.addi %[[N]], %[[N]] : i32
      // CHECK: %[[INC:.*]] = arith.addi %[[S]], %{{.*}} : i32
      // CHECK-NEXT: netvm.store %[[INC]], data[%{{.*}}] {in_bounds} : i32
      %inc = arith.addi %s, %c1 : i32
      netvm.store %inc, data[%c0] {in_bounds} : i32
      // The stored value is forwarded.
      // CHECK-NOT: netvm.load data[%c0_i32]
      // CHECK: netvm.store %[[INC]], data[%{{.*}}] {in_bounds} : i32
      %back = netvm.load data[%c0] {in_bounds} : i32
      netvm.store %back, data[%c4] {in_bounds} : i32
      // Negative: a store at an unknown offset may overwrite it.
      %p = netvm.load packet[%c0] : i8
      %pe = arith.extui %p : i8 to i32
      netvm.store %c1, data[%pe] : i32
      // CHECK: netvm.store %{{.*}}, data[%{{.*}}] : i32
      // CHECK-NEXT: netvm.load data[%{{.*}}] {in_bounds} : i32
      %again = netvm.load data[%c0] {in_bounds} : i32
      %z = arith.cmpi eq, %again, %c0 : i32
      cf.cond_br %z, ^s, ^d
    ^s:
      netvm.send @o
    ^d:
      // Negative: across blocks, a written memory is loaded again.
      // CHECK: netvm.load data[%{{.*}}] {in_bounds} : i32
      %later = netvm.load data[%c4] {in_bounds} : i32
      netvm.store %later, info[%c0] : i32
      netvm.drop
    }
  }
}

// -----

// Shared memory is never reused: other NetPEs write it.
netvm.application @a {
  netvm.pe @p attributes {sharedmem_size = 16 : i32} {
    netvm.port @i push_input
    // CHECK-LABEL: netvm.handler push
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      // CHECK: netvm.load shared
      // CHECK: netvm.load shared
      %a = netvm.load shared[%c0] {in_bounds} : i32
      %b = netvm.load shared[%c0] {in_bounds} : i32
      %z = arith.cmpi eq, %a, %b : i32
      cf.cond_br %z, ^x, ^y
    ^x:
      netvm.drop
    ^y:
      netvm.drop
    }
  }
}

// -----

// A chain: the IPv4 header length loaded again for each test, then a port
// at that length. Reusing the length loads makes the port offsets equal
// (CSE merges them), and the next round reuses the port loads: one load
// of each.
netvm.application @chain {
  netvm.pe @p {
    netvm.port @i push_input
    netvm.port @o push_output
    // CHECK-LABEL: netvm.handler push
    netvm.handler push(%port) {
      %c14 = arith.constant 14 : i32
      %c15 = arith.constant 15 : i32
      %c2 = arith.constant 2 : i32
      %c80 = arith.constant 80 : i32
      %c443 = arith.constant 443 : i32
      // CHECK-COUNT-1: netvm.load packet[%c14_i32]
      // CHECK-COUNT-1: netvm.load packet[%{{[0-9]+}}]
      // CHECK-NOT: netvm.load
      %h = netvm.load packet[%c14] : i8
      %he = arith.extui %h : i8 to i32
      %hl = arith.andi %he, %c15 : i32
      %hb = arith.shli %hl, %c2 : i32
      %off = arith.addi %hb, %c14 : i32
      %p = netvm.load packet[%off] : i16
      %pe = arith.extui %p : i16 to i32
      %is80 = arith.cmpi eq, %pe, %c80 : i32
      cf.cond_br %is80, ^yes, ^next
    ^next:
      %h2 = netvm.load packet[%c14] : i8
      %he2 = arith.extui %h2 : i8 to i32
      %hl2 = arith.andi %he2, %c15 : i32
      %hb2 = arith.shli %hl2, %c2 : i32
      %off2 = arith.addi %hb2, %c14 : i32
      %p2 = netvm.load packet[%off2] : i16
      %pe2 = arith.extui %p2 : i16 to i32
      %is443 = arith.cmpi eq, %pe2, %c443 : i32
      cf.cond_br %is443, ^yes, ^no
    ^yes:
      netvm.send @o
    ^no:
      netvm.drop
    }
  }
}
