// RUN: netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm.pe(netvm.handler(netvm-insert-watchdog))))' -split-input-file | FileCheck %s

// A natural loop: one watchdog, at the header, none elsewhere.
// CHECK-LABEL: netvm.application @loop
// CHECK: netvm.handler push
// CHECK-NEXT: cf.br ^[[HEAD:bb[0-9]+]]
// CHECK: ^[[HEAD]]:
// CHECK-NEXT: netvm.watchdog
// CHECK-NOT: netvm.watchdog
netvm.application @loop {
  netvm.pe @p {
    netvm.port @i push_input
    netvm.handler push(%port) {
      cf.br ^head
    ^head:
      %c = netvm.pkt_len
      %z = arith.constant 0 : i32
      %b = arith.cmpi eq, %c, %z : i32
      cf.cond_br %b, ^head, ^done
    ^done:
      netvm.drop
    }
  }
}

// -----

// Without a loop, no watchdog.
// CHECK-LABEL: netvm.application @straight
// CHECK-NOT: netvm.watchdog
netvm.application @straight {
  netvm.pe @p {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c = netvm.pkt_len
      %z = arith.constant 0 : i32
      %b = arith.cmpi eq, %c, %z : i32
      cf.cond_br %b, ^a, ^b
    ^a:
      cf.br ^b
    ^b:
      netvm.drop
    }
  }
}

// -----

// An irreducible loop (two entries, neither dominates the other) still gets
// a watchdog on its cycle.
// CHECK-LABEL: netvm.application @irreducible
// CHECK: netvm.watchdog
// CHECK-NOT: netvm.watchdog
netvm.application @irreducible {
  netvm.pe @p {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c = netvm.pkt_len
      %z = arith.constant 0 : i32
      %b = arith.cmpi eq, %c, %z : i32
      cf.cond_br %b, ^a, ^b
    ^a:
      cf.br ^b
    ^b:
      cf.br ^a
    }
  }
}

// -----

// A self loop, and an existing watchdog is not duplicated.
// CHECK-LABEL: netvm.application @self
// CHECK: ^[[S:bb[0-9]+]]:
// CHECK-NEXT: netvm.watchdog
// CHECK-NEXT: cf.br ^[[S]]
// CHECK: ^{{bb[0-9]+}}:
// CHECK-NEXT: netvm.watchdog
// CHECK-NEXT: cf.br
netvm.application @self {
  netvm.pe @p {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c = netvm.pkt_len
      %z = arith.constant 0 : i32
      %b = arith.cmpi eq, %c, %z : i32
      cf.cond_br %b, ^s, ^t
    ^s:
      cf.br ^s
    ^t:
      netvm.watchdog
      cf.br ^t
    }
  }
}
