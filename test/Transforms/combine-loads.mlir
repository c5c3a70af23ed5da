// RUN: netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm.pe(netvm.handler(netvm-combine-loads))))' | FileCheck %s

// One NetPE per case.

netvm.application @a {
  // Two bytes at 12 and 13 under one check: one 16-bit load; the first
  // (lower address) is its high half.
  // CHECK-LABEL: netvm.pe @bytes
  // CHECK: netvm.check_bounds packet[%{{.*}}], 2
  // CHECK-NEXT: %[[W:.*]] = netvm.load packet[%{{.*}}] {in_bounds} : i16
  // CHECK: %[[SH:.*]] = arith.shrui %[[W]], %c8_i16 : i16
  // CHECK-NEXT: %[[HI:.*]] = arith.trunci %[[SH]] : i16 to i8
  // CHECK-NEXT: %[[LO:.*]] = arith.trunci %[[W]] : i16 to i8
  netvm.pe @bytes {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      %c12 = arith.constant 12 : i32
      %c13 = arith.constant 13 : i32
      netvm.check_bounds packet[%c12], 2
      %hi = netvm.load packet[%c12] {in_bounds} : i8
      %lo = netvm.load packet[%c13] {in_bounds} : i8
      %z = arith.cmpi eq, %hi, %lo : i8
      cf.cond_br %z, ^s, ^d
    ^s:
      netvm.send @o
    ^d:
      netvm.drop
    }
  }

  // Two halves at 20 and 22 under a check of 4 bytes, second first.
  // CHECK-LABEL: netvm.pe @halves
  // CHECK: netvm.check_bounds packet[%{{.*}}], 4
  // CHECK: %[[W2:.*]] = netvm.load packet[%{{.*}}] {in_bounds} : i32
  netvm.pe @halves {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      %c20 = arith.constant 20 : i32
      %c22 = arith.constant 22 : i32
      netvm.check_bounds packet[%c20], 4
      %b = netvm.load packet[%c22] {in_bounds} : i16
      %a = netvm.load packet[%c20] {in_bounds} : i16
      %z = arith.cmpi eq, %a, %b : i16
      cf.cond_br %z, ^s, ^d
    ^s:
      netvm.send @o
    ^d:
      netvm.drop
    }
  }

  // Negative: no check covers both bytes, so they stay apart.
  // CHECK-LABEL: netvm.pe @apart
  // CHECK: netvm.check_bounds packet[%{{.*}}], 1
  // CHECK-NEXT: netvm.load packet[%{{.*}}] {in_bounds} : i8
  // CHECK-NEXT: netvm.check_bounds packet[%{{.*}}], 1
  // CHECK-NEXT: netvm.load packet[%{{.*}}] {in_bounds} : i8
  netvm.pe @apart {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      %c30 = arith.constant 30 : i32
      %c31 = arith.constant 31 : i32
      netvm.check_bounds packet[%c30], 1
      %x = netvm.load packet[%c30] {in_bounds} : i8
      netvm.check_bounds packet[%c31], 1
      %y = netvm.load packet[%c31] {in_bounds} : i8
      %z = arith.cmpi eq, %x, %y : i8
      cf.cond_br %z, ^s, ^d
    ^s:
      netvm.send @o
    ^d:
      netvm.drop
    }
  }
}
