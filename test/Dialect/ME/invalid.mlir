// RUN: netvm-opt %s -split-input-file -verify-diagnostics

// The verifiers of the me dialect: every row-selecting token is checked
// against the instruction table (MEInstrs.def), and every field against
// its range. MEDialectTest checks these diagnostics with the dialect
// loaded even where netvm-opt does not register it (lit.local.cfg).

me.func @p.push attributes {handler = "push", pe = "p"} {
  %x = me.arg "buffer"
  // expected-error @+1 {{'+=' is not an ALU operation of the instruction table}}
  %y = me.alu "+=" %x, %x
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  %x = me.arg "buffer"
  // expected-error @+1 {{'bxx' is not a conditional branch of the instruction table}}
  me.cmp_br "bxx" "-" %x, %x, ^a, ^b
^a:
  me.drop
^b:
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  %x = me.arg "buffer"
  // An unconditional branch is not a condition either.
  // expected-error @+1 {{'br' is not a conditional branch of the instruction table}}
  %y = me.setcc "br" "-" %x, %x
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  %x = me.arg "buffer"
  // expected-error @+1 {{'dram[add]' is not a memory command of the instruction table}}
  me.mem "dram" "add" %x, %x count 1
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  %x = me.arg "buffer"
  // expected-error @+1 {{'sram[get]' is not a memory command of the instruction table}}
  %w = me.mem "sram" "get" %x, %x count 1 : i32
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  %x = me.arg "buffer"
  // expected-error @+1 {{count must be 1-16}}
  me.mem "scratch" "read" %x, %x count 0 : i32
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  %x = me.arg "buffer"
  // expected-error @+1 {{count must be 1-8}}
  me.mem "dram" "write" %x, %x data(%x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x) count 9
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  %x = me.arg "buffer"
  // Atomics move one word.
  // expected-error @+1 {{count must be 1-1}}
  me.mem "sram" "incr" %x, %x count 2
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  %x = me.arg "buffer"
  // expected-error @+1 {{returns 2 words, not 1}}
  %w = me.mem "sram" "read" %x, %x count 2 : i32
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  %x = me.arg "buffer"
  // expected-error @+1 {{byte must be 0-3, or 4 for the byte_index CSR}}
  %y = me.byte_align %x, %x, 5
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  %x = me.arg "buffer"
  // expected-error @+1 {{byte mask must be 1-15}}
  %y = me.ld_field 0 %x
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  %x = me.arg "buffer"
  // expected-error @+1 {{shift '<<' needs an amount 1-31}}
  %y = me.alu "+" %x, %x {shift = "<<"}
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  %x = me.arg "buffer"
  // expected-error @+1 {{shift '>>' needs an amount 1-31}}
  %y = me.ld_field 1 %x {shift = ">>", amount = 32 : i32}
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  %x = me.arg "buffer"
  // expected-error @+1 {{has a shift amount without a shift}}
  %y = me.alu "-" %x, %x {amount = 4 : i32}
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  %x = me.arg "buffer"
  // expected-error @+1 {{unknown shift '<<<'}}
  %y = me.alu "xor" %x, %x {shift = "<<<", amount = 4 : i32}
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  %x = me.arg "buffer"
  // expected-error @+1 {{CSR 'timestamp_low' is not writable}}
  me.csr_wr "timestamp_low", %x
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  // expected-error @+1 {{CSR 'same_me_signal' is not readable}}
  %x = me.csr_rd "same_me_signal"
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  // expected-error @+1 {{unknown CSR 'ctx_enables'}}
  %x = me.csr_rd "ctx_enables"
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  // expected-error @+1 {{unknown argument 'info' (buffer, length, wire, port or tag)}}
  %x = me.arg "info"
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  %x = me.arg "buffer"
  // expected-error @+1 {{'b' takes no 'a' operand}}
  %y = me.alu "b" %x, %x
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  %x = me.arg "buffer"
  // (generic form: the custom one always reads the first operand as 'a')
  // expected-error @+1 {{'and' needs an 'a' operand}}
  %y = "me.alu"(%x) <{op = "and"}> : (i32) -> i32
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  %x = me.arg "buffer"
  // expected-error @+1 {{half must be 0 (immed_w0) or 1 (immed_w1)}}
  %y = me.immed_half 2, %x, 1
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  %x = me.arg "buffer"
  // expected-error @+1 {{size must be 1, 2 or 4}}
  %y = me.pkt_read %x, 3, false
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  // expected-error @+1 {{word must be 0-15}}
  %y = me.lm_read 1, 16
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  %x = me.arg "buffer"
  // expected-error @+1 {{window must be 0 or 1}}
  me.lm_write 2, 0, %x
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  %x = me.arg "buffer"
  // expected-error @+1 {{needs a default successor and one per case}}
  me.switch %x, [1, 2], ^a, ^b
^a:
  me.drop
^b:
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  %x = me.arg "buffer"
  // expected-error @+1 {{hashes 1-8 values of two words}}
  %h = me.hash %x : i32
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  %x = me.arg "buffer"
  // expected-error @+1 {{kind must be crc_32 or crc_32c}}
  %y = me.crc "crc_16", true, %x
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  // expected-error @+1 {{mode must be voluntary or kill}}
  me.ctx_arb "sleep"
  me.drop
}

// -----

// expected-error @+1 {{handler must be init, push or pull}}
me.func @p.push attributes {handler = "exit", pe = "p"} {
  me.drop
}

// -----

me.func @p.push attributes {handler = "push", pe = "p"} {
  %x = me.arg "buffer"
  // expected-error @+1 {{sets 'length' or 'wire', not 'buffer'}}
  me.arg_set "buffer", %x
  me.drop
}
