// RUN: netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm.pe(netvm.handler(netvm-swap-constant-byte-order))))' | FileCheck %s

// One NetPE per case.

netvm.application @a {
  // Paper Fig. 8: the EtherType compares raw with 0x0008.
  // CHECK-LABEL: netvm.pe @ethertype
  // CHECK: %[[T:.*]] = netvm.load packet[%{{.*}}] {little_endian} : i16
  // CHECK-NEXT: %[[TE:.*]] = arith.extui %[[T]] : i16 to i32
  // CHECK: arith.cmpi eq, %[[TE]], %c8_i32 : i32
  netvm.pe @ethertype {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      %c12 = arith.constant 12 : i32
      %ipv4 = arith.constant 0x0800 : i32
      %t = netvm.load packet[%c12] : i16
      %te = arith.extui %t : i16 to i32
      %is4 = arith.cmpi eq, %te, %ipv4 : i32
      cf.cond_br %is4, ^s, ^d
    ^s:
      netvm.send @o
    ^d:
      netvm.drop
    }
  }

  // Through a mask: (flags & 0x1fff) != 0 becomes (raw & 0xff1f) != 0.
  // CHECK-LABEL: netvm.pe @masked
  // CHECK: %[[F:.*]] = netvm.load packet[%{{.*}}] {little_endian} : i16
  // CHECK: arith.andi %{{.*}}, %c65311_i32 : i32
  netvm.pe @masked {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      %c20 = arith.constant 20 : i32
      %mask = arith.constant 0x1fff : i32
      %zero = arith.constant 0 : i32
      %f = netvm.load packet[%c20] : i16
      %fe = arith.extui %f : i16 to i32
      %frag = arith.andi %fe, %mask : i32
      %nf = arith.cmpi eq, %frag, %zero : i32
      cf.cond_br %nf, ^s, ^d
    ^s:
      netvm.send @o
    ^d:
      netvm.drop
    }
  }

  // A 32-bit address: 10.1.1.1 becomes 0x0101010a.
  // CHECK-LABEL: netvm.pe @address
  // CHECK: netvm.load packet[%{{.*}}] {little_endian} : i32
  // CHECK: arith.cmpi eq, %{{.*}}, %c16843018_i32 : i32
  netvm.pe @address {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      %c26 = arith.constant 26 : i32
      %host = arith.constant 0x0a010101 : i32
      %src = netvm.load packet[%c26] : i32
      %isrc = arith.cmpi eq, %src, %host : i32
      cf.cond_br %isrc, ^s, ^d
    ^s:
      netvm.send @o
    ^d:
      netvm.drop
    }
  }

  // Negative: an ordering comparison needs the real value.
  // CHECK-LABEL: netvm.pe @ordering
  // CHECK: %[[P:.*]] = netvm.load packet[%{{.*}}] : i16
  // CHECK-NOT: little_endian
  // CHECK: arith.cmpi ult
  netvm.pe @ordering {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      %c30 = arith.constant 30 : i32
      %big = arith.constant 1024 : i32
      %p = netvm.load packet[%c30] : i16
      %pe = arith.extui %p : i16 to i32
      %low = arith.cmpi ult, %pe, %big : i32
      cf.cond_br %low, ^s, ^d
    ^s:
      netvm.send @o
    ^d:
      netvm.drop
    }
  }
}
