// RUN: netvm-opt %s --pass-pipeline='builtin.module(netvm.application(netvm-inline-pes))' --split-input-file | FileCheck %s

// A chain a -> b -> sink: b's handler runs in place of a's send, with its
// input port number; b's output port becomes a's "b_out"; b's init runs
// after a's; b's data memory moves to a.
// CHECK-LABEL: netvm.application @chain
// CHECK:       netvm.pe @a attributes {datamem_size = 8 : i32, info_size = 4 : i32}
// CHECK-NEXT:    netvm.port @i push_input
// CHECK-NEXT:    netvm.port @o push_output
// CHECK-NEXT:    netvm.port @b_out push_output
// CHECK:         netvm.handler push(%{{.*}}) {
// CHECK:           %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT:      cf.br ^[[B:bb[0-9]+]](%[[ONE]] : i32)
// CHECK:         ^[[B]](%[[P:.*]]: i32):
// CHECK:           netvm.store %{{.*}}, data[%[[P]]] : i32
// CHECK:           netvm.send @b_out
// CHECK:         netvm.handler init {
// CHECK:           cf.br ^[[BI:bb[0-9]+]]
// CHECK:         ^[[BI]]:
// CHECK:           netvm.store %{{.*}}, data
// CHECK:           netvm.ret
// CHECK-NOT:   netvm.pe @b
// CHECK:       netvm.connect @src -> @a::@i
// CHECK-NEXT:  netvm.connect @a::@b_out -> @out
// CHECK-NOT:   netvm.connect
netvm.application @chain {
  netvm.source @src
  netvm.sink @out
  netvm.pe @a attributes {info_size = 4 : i32} {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      netvm.send @o
    }
    netvm.handler init {
      netvm.ret
    }
  }
  netvm.pe @b attributes {datamem_size = 8 : i32} {
    netvm.port @x push_input
    netvm.port @in push_input
    netvm.port @out push_output
    netvm.handler push(%port) {
      %c7 = arith.constant 7 : i32
      netvm.store %c7, data[%port] : i32
      netvm.send @out
    }
    netvm.handler init {
      %c0 = arith.constant 0 : i32
      netvm.store %c0, data[%c0] : i32
      netvm.ret
    }
  }
  netvm.connect @src -> @a::@i
  netvm.connect @a::@o -> @b::@in
  netvm.connect @b::@out -> @out
}

// -----

// Left alone: b in another stage, c fed by a fan-out, d fed by a
// send_dup, and e and f that both have data memory.
// CHECK-LABEL: netvm.application @kept
// CHECK-DAG: netvm.pe @a
// CHECK-DAG: netvm.pe @b
// CHECK-DAG: netvm.pe @c
// CHECK-DAG: netvm.pe @d
// CHECK-DAG: netvm.pe @e
// CHECK-DAG: netvm.pe @f
netvm.application @kept {
  netvm.source @src
  netvm.sink @out
  netvm.pe @a attributes {netvm.stage = 0 : i32} {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      netvm.send @o
    }
  }
  netvm.pe @b attributes {netvm.stage = 1 : i32} {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.port @p push_output
    netvm.handler push(%port) {
      netvm.send_dup @p
      netvm.send @o
    }
  }
  netvm.pe @c attributes {netvm.stage = 1 : i32} {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      netvm.send @o
    }
  }
  netvm.pe @d attributes {netvm.stage = 1 : i32} {
    netvm.port @i push_input
    netvm.handler push(%port) {
      netvm.drop
    }
  }
  netvm.pe @e attributes {netvm.stage = 2 : i32, datamem_size = 4 : i32} {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      netvm.send @o
    }
  }
  netvm.pe @f attributes {netvm.stage = 2 : i32, datamem_size = 4 : i32} {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) {
      netvm.send @o
    }
  }
  netvm.connect @src -> @a::@i
  netvm.connect @a::@o -> @b::@i
  netvm.connect @b::@o -> @c::@i
  netvm.connect @b::@o -> @out
  netvm.connect @b::@p -> @d::@i
  netvm.connect @c::@o -> @e::@i
  netvm.connect @e::@o -> @f::@i
  netvm.connect @f::@o -> @out
}
