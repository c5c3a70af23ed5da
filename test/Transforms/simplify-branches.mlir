// RUN: netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm.pe(netvm.handler(netvm-simplify-branches))))' --split-input-file | FileCheck %s

// A condition decided by a dominating branch; constant branches.
netvm.application @a {
  netvm.pe @p {
    netvm.port @i push_input
    netvm.port @o push_output
    // CHECK-LABEL: netvm.handler push
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c12 = arith.constant 12 : i32
      %true = arith.constant true
      %t = netvm.load packet[%c12] : i16
      %e = arith.extui %t : i16 to i32
      %ip = arith.cmpi eq, %e, %c12 : i32
      // CHECK: cf.cond_br %{{.*}}, ^[[YES:.*]], ^[[NO:.*]]
      cf.cond_br %ip, ^a, ^b
    ^a:
      // Below the true edge, %ip is true: the second test goes, and so
      // does the constant branch after it.
      // CHECK: ^[[YES]]:
      // CHECK-NEXT: netvm.send @o
      cf.cond_br %ip, ^c, ^b
    ^c:
      cf.cond_br %true, ^send, ^b
    ^send:
      netvm.send @o
    ^b:
      // Negative: a condition no branch above decided stays.
      // CHECK: ^[[NO]]:
      // CHECK: cf.cond_br %{{.*}}, ^{{.*}}, ^{{.*}}
      %again = arith.cmpi eq, %e, %c0 : i32
      cf.cond_br %again, ^d1, ^d2
    ^d1:
      netvm.drop
    ^d2:
      netvm.send @o
    }
  }
}

// -----

// Jumps to jumps go straight to the target; unreachable blocks go.
netvm.application @a {
  netvm.pe @p {
    netvm.port @i push_input
    netvm.port @o push_output
    // CHECK-LABEL: netvm.handler push
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %t = netvm.load packet[%c0] : i8
      %z = arith.extui %t : i8 to i32
      %is = arith.cmpi eq, %z, %c0 : i32
      // CHECK: cf.cond_br %{{.*}}, ^[[S:.*]], ^[[D:.*]]
      cf.cond_br %is, ^hop1, ^drop
    ^hop1:
      cf.br ^hop2
    ^hop2:
      cf.br ^send
    ^unreachable:
      cf.br ^send
    ^send:
      // CHECK: ^[[S]]:
      // CHECK-NEXT: netvm.send @o
      netvm.send @o
    ^drop:
      // CHECK: ^[[D]]:
      // CHECK-NEXT: netvm.drop
      // CHECK-NOT: ^
      netvm.drop
    }
  }
}

// -----

// Switches: on a known value, cases that go where the default goes, a
// single case left, and the flag known in a case.
netvm.application @a {
  netvm.pe @p {
    netvm.port @i push_input
    netvm.port @o push_output
    // CHECK-LABEL: netvm.handler push
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c6 = arith.constant 6 : i32
      %t = netvm.load packet[%c0] : i8
      %p = arith.extui %t : i8 to i32
      // Case 17 goes where the default goes: dropped, which leaves one case.
      // CHECK: %[[IS6:.*]] = arith.cmpi eq, %{{.*}}, %c6_i32 : i32
      // CHECK: cf.cond_br %[[IS6]], ^[[TCP:.*]], ^[[OTHER:.*]]
      cf.switch %p : i32, [
        default: ^other,
        6: ^tcp,
        17: ^other
      ]
    ^tcp:
      // Below case 6 the flag is 6: this switch takes case 6.
      // CHECK: ^[[TCP]]:
      // CHECK-NEXT: netvm.send @o
      cf.switch %p : i32, [
        default: ^other,
        6: ^sendit
      ]
    ^sendit:
      netvm.send @o
    ^other:
      // Negative: a switch on an unknown value with two live cases stays.
      // CHECK: ^[[OTHER]]:
      // CHECK: cf.switch
      %q = arith.addi %p, %c6 : i32
      cf.switch %q : i32, [
        default: ^d,
        1: ^s1,
        2: ^s2
      ]
    ^s1:
      netvm.send @o
    ^s2:
      netvm.drop
    ^d:
      netvm.drop
    }
  }
}
