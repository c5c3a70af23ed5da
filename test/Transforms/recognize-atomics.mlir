// RUN: netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm-recognize-atomics))' --split-input-file | FileCheck %s

// Counters at a constant offset and at 4 x a computed index become atomic
// adds; the loaded value was read nowhere else.
// CHECK-LABEL: netvm.application @counters
// CHECK:       netvm.pe @count
// CHECK:         netvm.atomic_add %{{.*}}, data[%c4_i32] {in_bounds} : i32
// CHECK:         netvm.atomic_add %{{.*}}, data[%{{.*}}] {in_bounds} : i32
// CHECK-NOT:     netvm.load data
// CHECK-NOT:     netvm.store
netvm.application @counters {
  netvm.pe @count attributes {datamem_size = 64 : i32} {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      %c1 = arith.constant 1 : i32
      %c2 = arith.constant 2 : i32
      %c4 = arith.constant 4 : i32
      %c23 = arith.constant 23 : i32
      %v = netvm.load data[%c4] {in_bounds} : i32
      %n = arith.addi %v, %c1 : i32
      netvm.store %n, data[%c4] {in_bounds} : i32
      %p8 = netvm.load packet[%c23] {in_bounds} : i8
      %p = arith.extui %p8 : i8 to i32
      %k = arith.andi %p, %c4 : i32
      %off = arith.shli %k, %c2 : i32
      %len = netvm.pkt_len
      %w = netvm.load data[%off] {in_bounds} : i32
      %s = arith.addi %len, %w : i32
      netvm.store %s, data[%off] {in_bounds} : i32
      netvm.send @o
    }
  }
}

// -----

// Left alone: a handler that also reads its counter (the value sent on
// depends on the order), one that stores an unaligned word, and shared
// memory that another NetPE reads.
// CHECK-LABEL: netvm.application @kept
// CHECK-NOT: netvm.atomic_add
netvm.application @kept {
  netvm.pe @reads attributes {datamem_size = 8 : i32} {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c1 = arith.constant 1 : i32
      %v = netvm.load data[%c0] {in_bounds} : i32
      %n = arith.addi %v, %c1 : i32
      netvm.store %n, data[%c0] {in_bounds} : i32
      %again = netvm.load data[%c0] {in_bounds} : i32
      netvm.store %again, info[%c0] {in_bounds} : i32
      netvm.send @o
    }
  }
  netvm.pe @unaligned attributes {datamem_size = 8 : i32} {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      %c1 = arith.constant 1 : i32
      %v = netvm.load data[%c1] {in_bounds} : i32
      %n = arith.addi %v, %c1 : i32
      netvm.store %n, data[%c1] {in_bounds} : i32
      netvm.send @o
    }
  }
  netvm.pe @writer attributes {sharedmem_size = 8 : i32} {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c1 = arith.constant 1 : i32
      %v = netvm.load shared[%c0] {in_bounds} : i32
      %n = arith.addi %v, %c1 : i32
      netvm.store %n, shared[%c0] {in_bounds} : i32
      netvm.send @o
    }
  }
  netvm.pe @reader attributes {sharedmem_size = 8 : i32} {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %v = netvm.load shared[%c0] {in_bounds} : i32
      netvm.store %v, info[%c0] {in_bounds} : i32
      netvm.send @o
    }
  }
}
