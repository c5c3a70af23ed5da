// RUN: netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm.pe(netvm.handler(netvm-insert-bounds-checks))))' | FileCheck %s

// One NetPE per case.

netvm.application @a {
  // Packet accesses are always checked (the length is dynamic).
  // CHECK-LABEL: netvm.pe @packet
  // CHECK: netvm.check_bounds packet[%[[C4:.*]]], 2
  // CHECK-NEXT: netvm.load packet[%[[C4]]] {in_bounds} : i16
  netvm.pe @packet {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c4 = arith.constant 4 : i32
      %a = netvm.load packet[%c4] : i16
      netvm.drop
    }
  }

  // A constant offset that fits in data memory needs no check...
  // CHECK-LABEL: netvm.pe @data_fits
  // CHECK-NOT: netvm.check_bounds data
  // CHECK: netvm.load data[%{{.*}}] {in_bounds} : i32
  netvm.pe @data_fits attributes {datamem_size = 8 : i32} {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c4 = arith.constant 4 : i32
      %b = netvm.load data[%c4] : i32
      netvm.drop
    }
  }

  // ...one that does not is checked (and will always fail).
  // CHECK-LABEL: netvm.pe @data_beyond
  // CHECK: netvm.check_bounds data[%[[C6:.*]]], 4
  // CHECK-NEXT: netvm.store %{{.*}}, data[%[[C6]]] {in_bounds} : i32
  netvm.pe @data_beyond attributes {datamem_size = 8 : i32} {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c6 = arith.constant 6 : i32
      %l = netvm.pkt_len
      netvm.store %l, data[%c6] : i32
      netvm.drop
    }
  }

  // Dynamic offsets into data memory are checked.
  // CHECK-LABEL: netvm.pe @data_dynamic
  // CHECK: netvm.check_bounds data[%[[L:.*]]], 1
  netvm.pe @data_dynamic attributes {datamem_size = 8 : i32} {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %l = netvm.pkt_len
      %d = netvm.load data[%l] : i8
      netvm.drop
    }
  }

  // Info memory is checked against its run-time size.
  // CHECK-LABEL: netvm.pe @info
  // CHECK: netvm.check_bounds info[%{{.*}}], 4
  netvm.pe @info {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %e = netvm.load info[%c0] : i32
      netvm.drop
    }
  }

  // Copies check the source, then the destination.
  // CHECK-LABEL: netvm.pe @copy
  // CHECK: netvm.check_bounds initdata[%[[C0:.*]]], %[[C8:.*]]
  // CHECK-NEXT: netvm.check_bounds packet[%[[C0]]], %[[C8]]
  // CHECK-NEXT: netvm.copy initdata[%[[C0]]] -> packet[%[[C0]]], %[[C8]] {in_bounds}
  netvm.pe @copy attributes {initdata = array<i8: 1, 2, 3>} {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c8 = arith.constant 8 : i32
      netvm.copy initdata[%c0] -> packet[%c0], %c8
      netvm.drop
    }
  }

  // A scan only needs its starting byte.
  // CHECK-LABEL: netvm.pe @pscan
  // CHECK: netvm.check_bounds packet[%{{.*}}], 1
  // CHECK-NEXT: netvm.pscan
  netvm.pe @pscan {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c7 = arith.constant 7 : i8
      %s = netvm.pscan %c0, %c7 : i8
      netvm.drop
    }
  }

  // Field comparisons check both ranges.
  // CHECK-LABEL: netvm.pe @field_cmp
  // CHECK: netvm.check_bounds packet[%{{.*}}], %{{.*}}
  // CHECK-NEXT: netvm.check_bounds packet[%{{.*}}], %{{.*}}
  // CHECK-NEXT: netvm.field_cmp eq
  netvm.pe @field_cmp {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c4 = arith.constant 4 : i32
      %f = netvm.field_cmp eq %c0, %c4, %c4
      netvm.drop
    }
  }

  // Accesses already proven in bounds are left alone.
  // CHECK-LABEL: netvm.pe @proven
  // CHECK-NOT: netvm.check_bounds
  // CHECK: netvm.load packet[%{{.*}}] {in_bounds} : i8
  netvm.pe @proven {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %g = netvm.load packet[%c0] {in_bounds} : i8
      netvm.drop
    }
  }
}
