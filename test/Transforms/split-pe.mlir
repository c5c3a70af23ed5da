// RUN: netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm-split-pe{pe=fat}))' --split-input-file | FileCheck %s

// State after the cut: the loop stays in the first half, which stores the
// loop's result (a block argument of the cut block is carried too) past
// the application's info bytes (8: the largest info_size, and the constant
// access info[4] of @next) and sends; the second half loads and zeroes the
// word, copies the constants it uses and takes the data memory, the init
// handler and the output port with its connection.
// CHECK-LABEL: netvm.application @after
// CHECK:       netvm.pe @fat attributes {info_size = 12 : i32} {
// CHECK-NEXT:    netvm.port @i push_input
// CHECK-NEXT:    netvm.port @split push_output
// CHECK-NEXT:    netvm.handler push(%{{.*}}) {
// CHECK:           cf.cond_br %{{.*}}, ^bb1(%{{.*}} : i32, i32), ^[[STORE:bb[0-9]+]](%{{.*}} : i32)
// CHECK:         ^[[STORE]](%[[V:.*]]: i32):
// CHECK-NEXT:      %[[C8:.*]] = arith.constant 8 : i32
// CHECK-NEXT:      netvm.store %[[V]], info[%[[C8]]] {in_bounds} : i32
// CHECK-NEXT:      netvm.send @split
// CHECK-NOT:     netvm.handler init
// CHECK:       netvm.pe @fat_2 attributes {datamem_size = 16 : i32, info_size = 12 : i32} {
// CHECK-NEXT:    netvm.port @in push_input
// CHECK-NEXT:    netvm.port @o push_output
// CHECK-NEXT:    netvm.handler init {
// CHECK:         netvm.handler push(%{{.*}}) {
// CHECK:           %[[C0:.*]] = arith.constant 0 : i32
// CHECK:           %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-NEXT:      %[[OFF:.*]] = arith.constant 8 : i32
// CHECK-NEXT:      %[[W:.*]] = netvm.load info[%[[OFF]]] {in_bounds} : i32
// CHECK-NEXT:      netvm.store %[[ZERO]], info[%[[OFF]]] {in_bounds} : i32
// CHECK-NEXT:      cf.br ^[[CUT:bb[0-9]+]](%[[W]] : i32)
// CHECK:         ^[[CUT]](%[[A:.*]]: i32):
// CHECK:           netvm.load data[%[[C0]]] : i32
// CHECK:           netvm.send @o
// CHECK:           netvm.drop
// CHECK:       netvm.connect @src -> @fat::@i
// CHECK-NEXT:  netvm.connect @fat_2::@o -> @out
// CHECK-NEXT:  netvm.connect @next::@o -> @out2
// CHECK-NEXT:  netvm.connect @fat::@split -> @fat_2::@in
netvm.application @after {
  netvm.source @src
  netvm.sink @out
  netvm.sink @out2
  netvm.pe @fat attributes {datamem_size = 16 : i32, info_size = 4 : i32} {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c1 = arith.constant 1 : i32
      %c12 = arith.constant 12 : i32
      %c64 = arith.constant 64 : i32
      %t = netvm.load packet[%c12] : i16
      %w = arith.extui %t : i16 to i32
      cf.br ^loop(%c0, %w : i32, i32)
    ^loop(%n: i32, %acc: i32):
      %x = netvm.load packet[%n] : i8
      %xe = arith.extui %x : i8 to i32
      %a2 = arith.addi %acc, %xe : i32
      %n2 = arith.addi %n, %c1 : i32
      %more = arith.cmpi ult, %n2, %c64 : i32
      cf.cond_br %more, ^loop(%n2, %a2 : i32, i32), ^done(%a2 : i32)
    ^done(%sum: i32):
      %old = netvm.load data[%c0] : i32
      %new = arith.addi %old, %sum : i32
      netvm.store %new, data[%c0] : i32
      %odd = arith.trunci %new : i32 to i1
      cf.cond_br %odd, ^send, ^drop
    ^send:
      netvm.send @o
    ^drop:
      netvm.drop
    }
    netvm.handler init {
      %c0 = arith.constant 0 : i32
      netvm.store %c0, data[%c0] : i32
      netvm.ret
    }
  }
  netvm.pe @next attributes {info_size = 8 : i32} {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      %c4 = arith.constant 4 : i32
      %v = netvm.load info[%c4] : i32
      netvm.send @o
    }
  }
  netvm.connect @src -> @fat::@i
  netvm.connect @fat::@o -> @out
  netvm.connect @next::@o -> @out2
}

// -----

// State before the cut: the data memory and the init handler stay; an
// early drop stays in the first half; the port argument and an i1 are
// carried (widened to words and narrowed back).
// CHECK-LABEL: netvm.application @before
// CHECK:       netvm.pe @fat attributes {datamem_size = 4 : i32, info_size = 8 : i32} {
// CHECK:           netvm.drop
// CHECK:           %[[O0:.*]] = arith.constant 0 : i32
// CHECK-NEXT:      netvm.store %port, info[%[[O0]]] {in_bounds} : i32
// CHECK-NEXT:      %[[E:.*]] = arith.extui %{{.*}} : i1 to i32
// CHECK-NEXT:      %[[O4:.*]] = arith.constant 4 : i32
// CHECK-NEXT:      netvm.store %[[E]], info[%[[O4]]] {in_bounds} : i32
// CHECK-NEXT:      netvm.send @split
// CHECK:         netvm.handler init
// CHECK:       netvm.pe @fat_2 attributes {info_size = 8 : i32} {
// CHECK:           %[[P:.*]] = netvm.load info[%{{.*}}] {in_bounds} : i32
// CHECK:           %[[L:.*]] = netvm.load info[%{{.*}}] {in_bounds} : i32
// CHECK:           %[[B:.*]] = arith.trunci %[[L]] : i32 to i1
// CHECK:           netvm.load packet[%[[P]]] : i8
// CHECK-NEXT:      cf.cond_br %[[B]]
netvm.application @before {
  netvm.source @src
  netvm.sink @out
  netvm.pe @fat attributes {datamem_size = 4 : i32} {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c1 = arith.constant 1 : i32
      %old = netvm.load data[%c0] : i32
      %new = arith.addi %old, %c1 : i32
      netvm.store %new, data[%c0] : i32
      %odd = arith.trunci %new : i32 to i1
      %c12 = arith.constant 12 : i32
      %t = netvm.load packet[%c12] : i8
      %z = arith.trunci %t : i8 to i1
      cf.cond_br %z, ^drop, ^work
    ^drop:
      netvm.drop
    ^work:
      %p = netvm.load packet[%port] : i8
      cf.cond_br %odd, ^send, ^drop2
    ^send:
      netvm.send @o
    ^drop2:
      netvm.drop
    }
    netvm.handler init {
      %c0 = arith.constant 0 : i32
      netvm.store %c0, data[%c0] : i32
      netvm.ret
    }
  }
  netvm.connect @src -> @fat::@i
  netvm.connect @fat::@o -> @out
}
