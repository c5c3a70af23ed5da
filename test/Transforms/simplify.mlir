// RUN: netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm.pe(netvm.handler(netvm-simplify))))' | FileCheck %s

// One NetPE per case; x is a zero-extended packet byte, w a packet word.

netvm.application @a {
  // Identities arith's folders know: x * 1, x + 0, x & all ones, x << 0.
  // CHECK-LABEL: netvm.pe @identities
  // CHECK: %[[W:.*]] = netvm.load packet[%c2_i32] : i32
  // CHECK-NOT: arith.muli
  // CHECK: netvm.store %[[W]], data
  netvm.pe @identities {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c2 = arith.constant 2 : i32
      %b = netvm.load packet[%c0] : i8
      %x = arith.extui %b : i8 to i32
      %w = netvm.load packet[%c2] : i32
      %c1 = arith.constant 1 : i32
      %call = arith.constant 0xffffffff : i32
      %m1 = arith.muli %w, %c1 : i32
      %a0 = arith.addi %m1, %c0 : i32
      %aa = arith.andi %a0, %call : i32
      %s0 = arith.shli %aa, %c0 : i32
      netvm.store %s0, data[%c0] : i32
      netvm.drop
    }
  }

  // A mask of a mask becomes one mask: 0xff00 & 0x0ff0 = 0x0f00.
  // CHECK-LABEL: netvm.pe @mask_of_mask
  // CHECK: %[[M:.*]] = arith.andi %{{.*}}, %c3840_i32 : i32
  // CHECK: netvm.store %[[M]], data
  netvm.pe @mask_of_mask {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c2 = arith.constant 2 : i32
      %b = netvm.load packet[%c0] : i8
      %x = arith.extui %b : i8 to i32
      %w = netvm.load packet[%c2] : i32
      %cff00 = arith.constant 0xff00 : i32
      %c0ff0 = arith.constant 0x0ff0 : i32
      %mm1 = arith.andi %w, %cff00 : i32
      %mm2 = arith.andi %mm1, %c0ff0 : i32
      netvm.store %mm2, data[%c0] : i32
      netvm.drop
    }
  }

  // Negative: a mask of a variable mask stays (only the bits the
  // zero-extended byte cannot have leave the constant).
  // CHECK-LABEL: netvm.pe @variable_mask
  // CHECK: %[[V1:.*]] = arith.andi %{{.*}}, %{{.*}} : i32
  // CHECK: arith.andi %[[V1]], %c240_i32
  netvm.pe @variable_mask {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c2 = arith.constant 2 : i32
      %b = netvm.load packet[%c0] : i8
      %x = arith.extui %b : i8 to i32
      %w = netvm.load packet[%c2] : i32
      %c0ff0 = arith.constant 0x0ff0 : i32
      %v1 = arith.andi %w, %x : i32
      %v2 = arith.andi %v1, %c0ff0 : i32
      netvm.store %v2, data[%c0] : i32
      netvm.drop
    }
  }

  // A zero-extended byte masked with 0xff is the byte.
  // CHECK-LABEL: netvm.pe @byte_mask
  // CHECK: %[[X:.*]] = arith.extui %{{.*}} : i8 to i32
  // CHECK: netvm.store %[[X]], data
  netvm.pe @byte_mask {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c2 = arith.constant 2 : i32
      %b = netvm.load packet[%c0] : i8
      %x = arith.extui %b : i8 to i32
      %w = netvm.load packet[%c2] : i32
      %c255 = arith.constant 255 : i32
      %xm = arith.andi %x, %c255 : i32
      netvm.store %xm, data[%c0] : i32
      netvm.drop
    }
  }

  // Negative: with 0x0f it stays.
  // CHECK-LABEL: netvm.pe @byte_mask_low
  // CHECK: %[[X:.*]] = arith.extui %{{.*}} : i8 to i32
  // CHECK: arith.andi %[[X]], %c15_i32
  netvm.pe @byte_mask_low {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c2 = arith.constant 2 : i32
      %b = netvm.load packet[%c0] : i8
      %x = arith.extui %b : i8 to i32
      %w = netvm.load packet[%c2] : i32
      %c15 = arith.constant 15 : i32
      %xn = arith.andi %x, %c15 : i32
      netvm.store %xn, data[%c0] : i32
      netvm.drop
    }
  }

  // Shifts of shifts add up; past the width they give 0.
  // CHECK-LABEL: netvm.pe @shifts
  // CHECK: arith.shrui %{{.*}}, %c11_i32
  // CHECK: netvm.store %c0_i32, data
  netvm.pe @shifts {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c2 = arith.constant 2 : i32
      %b = netvm.load packet[%c0] : i8
      %x = arith.extui %b : i8 to i32
      %w = netvm.load packet[%c2] : i32
      %c3 = arith.constant 3 : i32
      %c8 = arith.constant 8 : i32
      %c16 = arith.constant 16 : i32
      %sh1 = arith.shrui %w, %c8 : i32
      %sh2 = arith.shrui %sh1, %c3 : i32
      netvm.store %sh2, data[%c0] : i32
      %sh3 = arith.shli %w, %c16 : i32
      %sh4 = arith.shli %sh3, %c16 : i32
      netvm.store %sh4, data[%c0] : i32
      netvm.drop
    }
  }

  // Negative: a variable shift of a shift stays.
  // CHECK-LABEL: netvm.pe @variable_shift
  // CHECK: %[[S:.*]] = arith.shrui %{{.*}}, %c8_i32
  // CHECK-NEXT: arith.shrui %[[S]], %{{.*}} : i32
  netvm.pe @variable_shift {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c2 = arith.constant 2 : i32
      %b = netvm.load packet[%c0] : i8
      %x = arith.extui %b : i8 to i32
      %w = netvm.load packet[%c2] : i32
      %c8 = arith.constant 8 : i32
      %sh5 = arith.shrui %w, %c8 : i32
      %sh6 = arith.shrui %sh5, %x : i32
      netvm.store %sh6, data[%c0] : i32
      netvm.drop
    }
  }

  // Multiplication, division and remainder by powers of two.
  // CHECK-LABEL: netvm.pe @powers_of_two
  // CHECK: arith.shli %{{.*}}, %c3_i32
  // CHECK: arith.shrui %{{.*}}, %c4_i32
  // CHECK: arith.andi %{{.*}}, %c7_i32
  netvm.pe @powers_of_two {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c2 = arith.constant 2 : i32
      %b = netvm.load packet[%c0] : i8
      %x = arith.extui %b : i8 to i32
      %w = netvm.load packet[%c2] : i32
      %c8 = arith.constant 8 : i32
      %c16 = arith.constant 16 : i32
      %mul = arith.muli %w, %c8 : i32
      netvm.store %mul, data[%c0] : i32
      %div = arith.divui %w, %c16 : i32
      netvm.store %div, data[%c0] : i32
      %rem = arith.remui %w, %c8 : i32
      netvm.store %rem, data[%c0] : i32
      netvm.drop
    }
  }

  // Negative: not a power of two.
  // CHECK-LABEL: netvm.pe @not_power_of_two
  // CHECK: arith.muli %{{.*}}, %c3_i32
  netvm.pe @not_power_of_two {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c2 = arith.constant 2 : i32
      %b = netvm.load packet[%c0] : i8
      %x = arith.extui %b : i8 to i32
      %w = netvm.load packet[%c2] : i32
      %c3 = arith.constant 3 : i32
      %mul3 = arith.muli %w, %c3 : i32
      netvm.store %mul3, data[%c0] : i32
      netvm.drop
    }
  }

  // Negative: x > 30 is not decided.
  // CHECK-LABEL: netvm.pe @undecided
  // CHECK: %[[X:.*]] = arith.extui %{{.*}} : i8 to i32
  // CHECK: %[[Q4:.*]] = arith.cmpi ugt, %[[X]], %c30_i32
  // CHECK-NEXT: %[[Q4X:.*]] = arith.extui %[[Q4]] : i1 to i32
  // CHECK-NEXT: netvm.store %[[Q4X]], data
  netvm.pe @undecided {
    netvm.port @i push_input
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c2 = arith.constant 2 : i32
      %b = netvm.load packet[%c0] : i8
      %x = arith.extui %b : i8 to i32
      %w = netvm.load packet[%c2] : i32
      %c30 = arith.constant 30 : i32
      %q4 = arith.cmpi ugt, %x, %c30 : i32
      %q4x = arith.extui %q4 : i1 to i32
      netvm.store %q4x, data[%c0] : i32
      netvm.drop
    }
  }

  // Comparisons the known zero bits decide: (x & 15) == 16 and x > 300
  // are false, x < 300 and w >= 0 are true.
  // CHECK-LABEL: netvm.pe @decided
  // CHECK-NOT: arith.cmpi
  // CHECK: cf.cond_br %true
  netvm.pe @decided {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c2 = arith.constant 2 : i32
      %b = netvm.load packet[%c0] : i8
      %x = arith.extui %b : i8 to i32
      %w = netvm.load packet[%c2] : i32
      %c15 = arith.constant 15 : i32
      %c16 = arith.constant 16 : i32
      %c300 = arith.constant 300 : i32
      %lo = arith.andi %w, %c15 : i32
      %q1 = arith.cmpi eq, %lo, %c16 : i32
      %q2 = arith.cmpi ugt, %x, %c300 : i32
      %q3 = arith.cmpi ult, %x, %c300 : i32
      %q5 = arith.cmpi uge, %w, %c0 : i32
      %r1 = arith.ori %q1, %q2 : i1
      %r2 = arith.xori %r1, %q3 : i1
      %r3 = arith.andi %r2, %q5 : i1
      cf.cond_br %r3, ^yes, ^no
    ^yes:
      netvm.send @o
    ^no:
      netvm.drop
    }
  }
}

// A widened flag compared with 0, and operations on selects of constants
// on one condition.
netvm.application @flags {
  // CHECK-LABEL: netvm.pe @flag
  // CHECK: %[[C:.*]] = arith.cmpi eq
  // CHECK-NOT: arith.extui %[[C]]
  // CHECK: cf.cond_br %[[C]]
  netvm.pe @flag {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c8 = arith.constant 8 : i32
      %b = netvm.load packet[%c0] : i8
      %x = arith.extui %b : i8 to i32
      %c = arith.cmpi eq, %x, %c8 : i32
      %z = arith.extui %c : i1 to i32
      %nz = arith.cmpi ne, %z, %c0 : i32
      cf.cond_br %nz, ^s, ^d
    ^s:
      netvm.send @o
    ^d:
      netvm.drop
    }
  }

  // (c ? 26 : -1) + 4 is c ? 30 : 3, and (c ? 4 : 0) == 4 is c.
  // CHECK-LABEL: netvm.pe @selects
  // CHECK: %[[C:.*]] = arith.cmpi uge
  // CHECK: arith.select %[[C]], %c30_i32, %c3_i32
  // CHECK-NOT: arith.select %[[C]], %c4_i32
  // CHECK: netvm.store %{{.*}}, data
  // CHECK: cf.cond_br %[[C]]
  netvm.pe @selects {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c4 = arith.constant 4 : i32
      %c15 = arith.constant 15 : i32
      %c26 = arith.constant 26 : i32
      %cm1 = arith.constant -1 : i32
      %len = netvm.pkt_len
      %c = arith.cmpi uge, %len, %c15 : i32
      %at = arith.select %c, %c26, %cm1 : i32
      %end = arith.addi %at, %c4 : i32
      netvm.store %end, data[%c0] : i32
      %n = arith.select %c, %c4, %c0 : i32
      %is = arith.cmpi eq, %n, %c4 : i32
      cf.cond_br %is, ^s, ^d
    ^s:
      netvm.send @o
    ^d:
      netvm.drop
    }
  }
}
