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

// -----

// Jump threading through the test of a flag (NetPFL's per-term flags): a
// jump with zext(c) becomes a branch on c, a jump with a constant goes
// where the constant leads; a select on a known condition takes its side,
// and the inverse compare of a known one is known too; a branch to a block
// that only branches on the same condition goes straight to its side.
netvm.application @a {
  netvm.pe @p {
    netvm.port @i push_input
    netvm.port @o push_output
    // CHECK-LABEL: netvm.handler push
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c8 = arith.constant 8 : i32
      %c12 = arith.constant 12 : i32
      %c14 = arith.constant 14 : i32
      %len = netvm.pkt_len
      // CHECK: %[[LONG:.*]] = arith.cmpi uge, %{{.*}}, %c14_i32
      %long = arith.cmpi uge, %len, %c14 : i32
      %short = arith.cmpi ult, %len, %c14 : i32
      %at = arith.select %long, %c12, %c0 : i32
      // CHECK: cf.cond_br %[[LONG]], ^[[LOAD:.*]], ^[[DROP:bb[0-9]+]]
      cf.cond_br %long, ^load, ^flag(%c0 : i32)
    ^load:
      // Below the true edge %at is 12 and %short is false.
      // CHECK: ^[[LOAD]]:
      // CHECK-NEXT: netvm.load packet[%c12_i32]
      %t = netvm.load packet[%at] {in_bounds} : i16
      %e = arith.extui %t : i16 to i32
      %is = arith.cmpi eq, %e, %c8 : i32
      %z = arith.extui %is : i1 to i32
      // CHECK-NEXT: arith.extui
      // CHECK-NEXT: %[[IS:.*]] = arith.cmpi eq
      // CHECK-NEXT: cf.cond_br %[[IS]], ^[[SEND:.*]], ^[[DROP]]
      cf.cond_br %short, ^flag(%c0 : i32), ^flag(%z : i32)
    ^flag(%f: i32):
      %set = arith.cmpi ne, %f, %c0 : i32
      cf.cond_br %set, ^send, ^drop
    ^send:
      netvm.send @o
    ^drop:
      netvm.drop
    }
  }
}

// -----

netvm.application @a {
  netvm.pe @p {
    netvm.port @i push_input
    netvm.port @o push_output
    // CHECK-LABEL: netvm.handler push
    netvm.handler push(%port) {
      %c34 = arith.constant 34 : i32
      %c1 = arith.constant 1 : i32
      %c2 = arith.constant 2 : i32
      %len = netvm.pkt_len
      // CHECK: %[[FITS:.*]] = arith.cmpi uge
      %fits = arith.cmpi uge, %len, %c34 : i32
      // The fast copy goes straight to the tests; the slow one keeps the
      // join (it passes an argument the join's false side uses).
      // CHECK: cf.cond_br %[[FITS]], ^[[FAST:.*]], ^[[SLOW:.*]]
      cf.cond_br %fits, ^join(%c1 : i32), ^slow
    ^slow:
      cf.br ^join(%c2 : i32)
    ^join(%n: i32):
      cf.cond_br %fits, ^fast, ^cut
    ^fast:
      // CHECK: ^[[FAST]]:
      // CHECK-NEXT: netvm.send @o
      netvm.send @o
    ^cut:
      netvm.store %n, info[%c1] : i32
      netvm.drop
    }
  }
}
