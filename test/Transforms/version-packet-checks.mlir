// RUN: netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm.pe(netvm.handler(netvm-version-packet-checks))))' -split-input-file | FileCheck %s

// Two constant-offset packet checks: a length test picks a copy without
// them (whose loads know the length) or the original.
netvm.application @a {
  netvm.source @in
  netvm.sink @out
  netvm.pe @p {
    netvm.port @in push_input
    netvm.port @out push_output
    netvm.handler push(%port) {
      %c12 = arith.constant 12 : i32
      %c23 = arith.constant 23 : i32
      netvm.check_bounds packet[%c12], 2
      %0 = netvm.load packet[%c12] {in_bounds} : i16
      %c0 = arith.constant 0 : i16
      %1 = arith.cmpi ne, %0, %c0 : i16
      cf.cond_br %1, ^drop, ^next
    ^next:
      netvm.check_bounds packet[%c23], 1
      %2 = netvm.load packet[%c23] {in_bounds} : i8
      %c0_i8 = arith.constant 0 : i8
      %3 = arith.cmpi ne, %2, %c0_i8 : i8
      cf.cond_br %3, ^drop, ^send
    ^send:
      netvm.send @out
    ^drop:
      netvm.drop
    }
  }
  netvm.connect @in -> @p::@in
  netvm.connect @p::@out -> @out
}
// CHECK-LABEL: netvm.application @a
// CHECK:         netvm.handler push(%[[PORT:.*]])
// CHECK:         %[[LEN:.*]] = netvm.pkt_len
// CHECK:         %[[MIN:.*]] = arith.constant 24 : i32
// CHECK:         %[[OK:.*]] = arith.cmpi uge, %[[LEN]], %[[MIN]]
// CHECK:         cf.cond_br %[[OK]] weights([1000, 1]), ^[[FAST:.*]](%[[PORT]] : i32), ^[[SLOW:.*]](%[[PORT]] : i32)
// The original keeps its checks.
// CHECK:       ^[[SLOW]](%{{.*}}: i32):
// CHECK:         netvm.check_bounds packet[%{{.*}}], 2
// CHECK:         netvm.check_bounds packet[%{{.*}}], 1
// The copy has none, and its loads carry the known length.
// CHECK:       ^[[FAST]](%{{.*}}: i32):
// CHECK-NOT:     netvm.check_bounds
// CHECK:         netvm.load packet[%{{.*}}] {in_bounds, netvm.min_packet_length = 24 : i64} : i16
// CHECK-NOT:     netvm.check_bounds
// CHECK:         netvm.load packet[%{{.*}}] {in_bounds, netvm.min_packet_length = 24 : i64} : i8

// -----

// One check: nothing to gain. A variable offset, or a handler that replaces
// its buffer: left alone.
netvm.application @b {
  netvm.source @in
  netvm.pe @p {
    netvm.port @in push_input
    netvm.handler push(%port) {
      %c12 = arith.constant 12 : i32
      %c20 = arith.constant 20 : i32
      netvm.check_bounds packet[%c12], 2
      %0 = netvm.load packet[%c12] {in_bounds} : i16
      %1 = arith.extui %0 : i16 to i32
      netvm.check_bounds packet[%1], 2
      %2 = netvm.load packet[%1] {in_bounds} : i16
      netvm.exbuf_create %c20
      netvm.check_bounds packet[%c20], 2
      %3 = netvm.load packet[%c20] {in_bounds} : i16
      netvm.drop
    }
  }
  netvm.connect @in -> @p::@in
}
// CHECK-LABEL: netvm.application @b
// CHECK-NOT:     netvm.pkt_len
// CHECK-NOT:     min_packet_length
