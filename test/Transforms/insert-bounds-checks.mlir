// RUN: netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm.pe(netvm.handler(netvm-insert-bounds-checks))))' | FileCheck %s

netvm.application @a {
  netvm.pe @p attributes {datamem_size = 8 : i32, sharedmem_size = 16 : i32,
                          initdata = array<i8: 1, 2, 3>} {
    netvm.port @i push_input
    // CHECK-LABEL: netvm.handler push
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c4 = arith.constant 4 : i32
      %c6 = arith.constant 6 : i32
      %c8 = arith.constant 8 : i32
      // Packet accesses are always checked (the length is dynamic).
      // CHECK: netvm.check_bounds packet[%[[C4:.*]]], 2
      // CHECK-NEXT: netvm.load packet[%[[C4]]] {in_bounds} : i16
      %a = netvm.load packet[%c4] : i16
      // A constant offset that fits in data memory needs no check...
      // CHECK-NOT: netvm.check_bounds data
      // CHECK: netvm.load data[%{{.*}}] {in_bounds} : i32
      %b = netvm.load data[%c4] : i32
      // ...one that does not is checked (and will always fail).
      // CHECK: netvm.check_bounds data[%[[C6:.*]]], 4
      // CHECK-NEXT: netvm.store %{{.*}}, data[%[[C6]]] {in_bounds} : i32
      netvm.store %b, data[%c6] : i32
      // Dynamic offsets into data memory are checked.
      %l = netvm.pkt_len
      // CHECK: netvm.check_bounds data[%[[L:.*]]], 1
      %d = netvm.load data[%l] : i8
      // Info memory is checked against its run-time size.
      // CHECK: netvm.check_bounds info[%{{.*}}], 4
      %e = netvm.load info[%c0] : i32
      // Copies check the source, then the destination.
      // CHECK: netvm.check_bounds initdata[%[[C0:.*]]], %[[C8:.*]]
      // CHECK-NEXT: netvm.check_bounds packet[%[[C0]]], %[[C8]]
      // CHECK-NEXT: netvm.copy initdata[%[[C0]]] -> packet[%[[C0]]], %[[C8]] {in_bounds}
      netvm.copy initdata[%c0] -> packet[%c0], %c8
      // A scan only needs its starting byte.
      // CHECK: netvm.check_bounds packet[%{{.*}}], 1
      // CHECK-NEXT: netvm.pscan
      %t = arith.trunci %a : i16 to i8
      %s = netvm.pscan %c0, %t : i8
      // Field comparisons check both ranges.
      // CHECK: netvm.check_bounds packet[%{{.*}}], %{{.*}}
      // CHECK-NEXT: netvm.check_bounds packet[%{{.*}}], %{{.*}}
      // CHECK-NEXT: netvm.field_cmp eq
      %f = netvm.field_cmp eq %c0, %c4, %c4
      // Accesses already proven in bounds are left alone.
      // CHECK-NOT: netvm.check_bounds
      // CHECK: netvm.load packet[%{{.*}}] {in_bounds} : i8
      %g = netvm.load packet[%c0] {in_bounds} : i8
      netvm.drop
    }
  }
}
