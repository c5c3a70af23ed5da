// RUN: netvm-opt %s -split-input-file -verify-diagnostics

// Each verifier of the netvm dialect, with its message.

netvm.application @a {
  netvm.source @in
  netvm.pe @p {
    netvm.port @i push_input
    netvm.handler push(%port) { netvm.drop }
  }
  // expected-error @+1 {{refers to unknown symbol @nowhere}}
  netvm.connect @in -> @nowhere
}

// -----

netvm.application @a {
  netvm.source @in
  netvm.pe @p {
    netvm.port @i push_input
    netvm.handler push(%port) { netvm.drop }
  }
  // expected-error @+1 {{refers to unknown port @p::@j}}
  netvm.connect @in -> @p::@j
}

// -----

netvm.application @a {
  netvm.sink @out
  netvm.pe @p {
    netvm.port @i push_input
    netvm.handler push(%port) { netvm.drop }
  }
  // expected-error @+1 {{source @p::@i is a push_input port; expected an output port}}
  netvm.connect @p::@i -> @out
}

// -----

netvm.application @a {
  netvm.source @in
  netvm.sink @out
  // expected-error @+1 {{connection must start at a source or a NetPE output port, not @out}}
  netvm.connect @out -> @in
}

// -----

netvm.application @a {
  netvm.source @in
  netvm.pe @p {
    netvm.port @i push_input
    netvm.handler push(%port) { netvm.drop }
  }
  // expected-error @+1 {{must name a port of NetPE @p as @p::@port, not @p}}
  netvm.connect @in -> @p
}

// -----

netvm.application @a {
  netvm.pe @p {
    netvm.port @o push_output
    netvm.handler init { netvm.ret }
  }
  netvm.pe @q {
    netvm.port @i pull_input
    netvm.handler init { netvm.ret }
  }
  // expected-error @+1 {{connects a push_output port to a pull_input port; push and pull ports cannot be joined}}
  netvm.connect @p::@o -> @q::@i
}

// -----

netvm.application @a {
  netvm.source @s1
  netvm.source @s2
  netvm.pe @q {
    netvm.port @i pull_input
    netvm.handler init { netvm.ret }
  }
  // expected-note @+1 {{first connection here}}
  netvm.connect @s1 -> @q::@i
  // expected-error @+1 {{feeds pull input port @q::@i a second time}}
  netvm.connect @s2 -> @q::@i
}

// -----

netvm.application @a {
  netvm.pe @p {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) { netvm.send @o }
  }
  netvm.pe @q {
    netvm.port @i push_input
    netvm.port @o push_output
    netvm.handler push(%port) { netvm.send @o }
  }
  netvm.connect @p::@o -> @q::@i
  // expected-error @+1 {{closes a cycle of NetPEs: @p -> @q -> @p (a NetVM application must be a DAG)}}
  netvm.connect @q::@o -> @p::@i
}

// -----

netvm.application @a {
  // expected-note @+1 {{first request here}}
  netvm.pe @p attributes {sharedmem_size = 16 : i32} {
    netvm.handler init { netvm.ret }
  }
  // expected-error @+1 {{requests 32 bytes of shared memory, but @p requests 16}}
  netvm.pe @q attributes {sharedmem_size = 32 : i32} {
    netvm.handler init { netvm.ret }
  }
}

// -----

netvm.application @a {
  // expected-error @+1 {{has push input ports but no push handler}}
  netvm.pe @p {
    netvm.port @i push_input
  }
}

// -----

netvm.application @a {
  // expected-error @+1 {{has pull output ports but no pull handler}}
  netvm.pe @p {
    netvm.port @o pull_output
  }
}

// -----

netvm.application @a {
  netvm.pe @p {
    // expected-note @+1 {{first one here}}
    netvm.handler init { netvm.ret }
    // expected-error @+1 {{second init handler in NetPE @p}}
    netvm.handler init { netvm.ret }
  }
}

// -----

netvm.application @a {
  netvm.pe @p {
    netvm.port @o push_output
    netvm.handler push(%port) {
      // expected-error @+1 {{refers to unknown port @nope of NetPE @p}}
      netvm.send @nope
    }
  }
}

// -----

netvm.application @a {
  netvm.pe @p {
    netvm.port @i push_input
    netvm.handler push(%port) {
      // expected-error @+1 {{port @i is a push_input port; expected a push_output port}}
      netvm.send @i
    }
  }
}

// -----

netvm.application @a {
  netvm.pe @p {
    netvm.port @i push_input
    netvm.handler push(%port) {
      // expected-error @+1 {{port @i is a push_input port; expected a pull_input port}}
      netvm.receive @i
      netvm.drop
    }
  }
}

// -----

netvm.application @a {
  netvm.pe @p {
    netvm.handler init {
      // expected-error @+1 {{only ends push handlers; use netvm.ret in init handlers}}
      netvm.drop
    }
  }
}

// -----

netvm.application @a {
  netvm.pe @p {
    netvm.port @i push_input
    netvm.handler push(%port) {
      // expected-error @+1 {{cannot end a push handler; use netvm.drop or netvm.send}}
      netvm.ret
    }
  }
}

// -----

netvm.application @a {
  netvm.pe @p {
    netvm.handler init {
      %c0 = arith.constant 0 : i32
      // expected-error @+1 {{accesses packet memory in an init handler, which has no exchange buffer}}
      %v = netvm.load packet[%c0] : i8
      netvm.ret
    }
  }
}

// -----

netvm.application @a {
  netvm.pe @p {
    netvm.handler init {
      %c0 = arith.constant 0 : i32
      %c1 = arith.constant 1 : i8
      // expected-error @+1 {{cannot store to initdata, which is read-only}}
      netvm.store %c1, initdata[%c0] : i8
      netvm.ret
    }
  }
}

// -----

netvm.application @a {
  netvm.pe @p {
    netvm.handler init {
      %c0 = arith.constant 0 : i32
      // expected-error @+1 {{cannot copy into initdata, which is read-only}}
      netvm.copy data[%c0] -> initdata[%c0], %c0
      netvm.ret
    }
  }
}

// -----

netvm.application @a {
  netvm.pe @p {
    netvm.handler init {
      %c0 = arith.constant 0 : i32
      // expected-error @+1 {{'netvm.load' op result #0 must be 8-bit signless integer or 16-bit signless integer or 32-bit signless integer, but got 'i64'}}
      %v = netvm.load data[%c0] : i64
      netvm.ret
    }
  }
}

// -----

netvm.application @a {
  netvm.pe @p {
    netvm.handler init {
      // expected-error @+1 {{uses coprocessor 'lookup', which NetPE @p does not declare}}
      netvm.copro_invoke "lookup", 0
      netvm.ret
    }
  }
}

// -----

netvm.application @a {
  netvm.pe @p {
    netvm.handler init {
      // expected-error @+1 {{needs at least one input}}
      %h = netvm.hash
      netvm.ret
    }
  }
}

// -----

netvm.application @a {
  netvm.pe @p {
    // expected-error @+1 {{a push handler takes 1 argument(s), not 0}}
    "netvm.handler"() <{kind = #netvm<handler push>}> ({
      netvm.drop
    }) : () -> ()
  }
}

// -----

netvm.application @a {
  netvm.pe @p {
    // expected-error @+1 {{expected handler kind init, push or pull, got 'fetch'}}
    netvm.handler fetch {
      netvm.ret
    }
  }
}

// -----

netvm.application @a {
  // expected-error @+1 {{is not allowed in a netvm.application body}}
  %c0 = arith.constant 0 : i32
}

// -----

netvm.application @a {
  netvm.pe @p {
    // expected-error @+1 {{is not allowed in a netvm.pe body}}
    %c0 = arith.constant 0 : i32
  }
}

// -----

netvm.application @a {
  netvm.pe @p {
    netvm.handler init {
      %c0 = arith.constant 0 : i32
      // expected-error @+1 {{accesses packet memory in an init handler, which has no exchange buffer}}
      netvm.check_bounds packet[%c0], 1
      netvm.ret
    }
  }
}

// -----

netvm.application @a {
  netvm.pe @p attributes {datamem_size = 4 : i32} {
    netvm.handler init {
      %c0 = arith.constant 0 : i32
      // expected-error @+1 {{takes a length operand or a constant extent, not both}}
      "netvm.check_bounds"(%c0, %c0) <{extent = 2 : i64, space = #netvm<mem data>}> : (i32, i32) -> ()
      netvm.ret
    }
  }
}

// -----

netvm.application @a {
  netvm.pe @p {
    netvm.handler init {
      %c0 = arith.constant 0 : i32
      // expected-error @+1 {{unknown memory space 'flash'}}
      netvm.check_bounds flash[%c0], 1
      netvm.ret
    }
  }
}

// -----

netvm.application @a {
  netvm.pe @p {
    netvm.handler init {
      %c0 = arith.constant 0 : i32
      // expected-error @+1 {{adds to data or shared memory only, not info}}
      netvm.atomic_add %c0, info[%c0] : i32
      netvm.ret
    }
  }
}
