// RUN: netvm-opt %s | netvm-opt | FileCheck %s
// RUN: netvm-opt %s --mlir-print-op-generic | netvm-opt | FileCheck %s

// Every operation of the me dialect in its custom syntax survives a round
// trip through the printer and the parser (also via the generic form).
// MEDialectTest parses, prints and parses this file again with the
// dialect loaded, so the round trip is checked even where netvm-opt does
// not register the dialect (lit.local.cfg).

// CHECK-LABEL: me.func @p.push
// CHECK-SAME: attributes {handler = "push", pe = "p"}
me.func @p.push attributes {handler = "push", pe = "p"} {
  // CHECK: %[[BUF:.*]] = me.arg "buffer"
  %buf = me.arg "buffer"
  // CHECK: %[[LEN:.*]] = me.arg "length"
  %len = me.arg "length"
  // CHECK: me.arg "wire"
  %wire = me.arg "wire"
  // CHECK: me.arg "port"
  %port = me.arg "port"
  // CHECK: me.arg "tag"
  %tag = me.arg "tag"
  // CHECK: %[[C30:.*]] = me.const 30
  %c30 = me.const 30
  // CHECK: %[[H0:.*]] = me.hdr 0
  %h0 = me.hdr 0
  // CHECK: %[[H1:.*]] = me.hdr 1
  %h1 = me.hdr 1
  // CHECK: %[[CP:.*]] = me.copy %[[LEN]]
  %cp = me.copy %len
  // CHECK: %[[ADD:.*]] = me.alu "+" %[[BUF]], %[[LEN]]
  %add = me.alu "+" %buf, %len
  // CHECK: me.alu "or" %[[H0]], %[[H1]] {amount = 16 : i32, shift = ">>"}
  %shr = me.alu "or" %h0, %h1 {shift = ">>", amount = 16 : i32}
  // CHECK: me.alu "b" %[[H0]] {amount = 8 : i32, shift = ">>rot"}
  %rot = me.alu "b" %h0 {shift = ">>rot", amount = 8 : i32}
  // CHECK: me.alu "~b" %[[H1]]
  %not = me.alu "~b" %h1
  // The unary operations ("b", "~b") are left out: their custom form does
  // not parse yet (MEDialectTest.DISABLED_UnaryAluRoundTrip).
  // CHECK: me.alu "*" %[[ADD]], %[[C30]]
  %mul = me.alu "*" %add, %c30
  // CHECK: me.ld_field 3 %[[H0]] {amount = 8 : i32, shift = ">>"}
  %fld = me.ld_field 3 %h0 {shift = ">>", amount = 8 : i32}
  // CHECK: me.ld_field 5 into %[[ADD]], %[[H1]] {amount = 24 : i32, shift = ">>rot"}
  %fldi = me.ld_field 5 into %add, %h1 {shift = ">>rot", amount = 24 : i32}
  // CHECK: me.immed_half 1, %[[ADD]], 65535
  %imh = me.immed_half 1, %add, 65535
  // CHECK: me.byte_align %[[H0]], %[[H1]], 2
  %ba = me.byte_align %h0, %h1, 2
  // CHECK: me.byte_align %[[H0]], %[[H1]], 4
  %bai = me.byte_align %h0, %h1, 4
  // CHECK: me.setcc "bcs" "-" %[[LEN]], %[[C30]]
  %lt = me.setcc "bcs" "-" %len, %c30
  // CHECK: me.select "bne" "-" %[[LEN]], %[[C30]], %[[BUF]], %[[ADD]]
  %sel = me.select "bne" "-" %len, %c30, %buf, %add
  // CHECK: %[[LM:.*]] = me.lm_read 1, 3
  %lm = me.lm_read 1, 3
  // CHECK: me.lm_write 1, 4, %[[LM]]
  me.lm_write 1, 4, %lm
  // CHECK: me.send_copy 1
  me.send_copy 1
  // CHECK: me.state_token
  me.state_token
  // CHECK: me.arg_set "length", %[[LM]]
  me.arg_set "length", %lm
  // CHECK: me.pkt_read %[[ADD]], 2, false
  %pr = me.pkt_read %add, 2, false
  // CHECK: me.pkt_read %[[ADD]], 1, true
  %prs = me.pkt_read %add, 1, true
  // CHECK: me.pkt_fill %[[ADD]]
  me.pkt_fill %add
  // CHECK: me.pkt_next
  %pn = me.pkt_next
  // CHECK: me.csr_rd "timestamp_low"
  %ts = me.csr_rd "timestamp_low"
  // CHECK: me.csr_wr "byte_index", %[[C30]]
  me.csr_wr "byte_index", %c30
  // CHECK: me.cam_clear
  me.cam_clear
  // CHECK: me.cam_lookup %[[H0]]
  %cl = me.cam_lookup %h0
  // CHECK: me.cam_write %[[C30]], %[[H0]], 7
  me.cam_write %c30, %h0, 7
  // CHECK: me.cam_read %[[C30]], false
  %crt = me.cam_read %c30, false
  // CHECK: me.cam_read %[[C30]], true
  %crs = me.cam_read %c30, true
  // CHECK: me.cam_write_state %[[C30]], 3
  me.cam_write_state %c30, 3
  // CHECK: me.crc "crc_32", true, %[[H0]]
  %crc = me.crc "crc_32", true, %h0
  // CHECK: me.crc "crc_32c", false, %[[H1]]
  %crcl = me.crc "crc_32c", false, %h1
  // CHECK: me.mem "sram" "read" %[[BUF]], %[[C30]] count 2 : i32, i32
  %w:2 = me.mem "sram" "read" %buf, %c30 count 2 : i32, i32
  // CHECK: me.mem "sram" "write" %[[BUF]], %[[C30]] data(%[[ADD]]) count 1
  me.mem "sram" "write" %buf, %c30 data(%add) count 1
  // CHECK: me.mem "scratch" "test_and_add" %[[BUF]], %[[C30]] data(%[[ADD]]) count 1 : i32
  %old = me.mem "scratch" "test_and_add" %buf, %c30 data(%add) count 1 : i32
  // CHECK: me.mem "scratch" "incr" %[[BUF]], %[[C30]] count 1
  me.mem "scratch" "incr" %buf, %c30 count 1
  // CHECK: me.mem "dram" "read" %[[BUF]], %[[C30]] count 1 : i32, i32
  %q:2 = me.mem "dram" "read" %buf, %c30 count 1 : i32, i32
  // CHECK: me.hash %[[H0]], %[[H1]] : i32, i32
  %hs:2 = me.hash %h0, %h1 : i32, i32
  // CHECK: me.ctx_arb "voluntary"
  me.ctx_arb "voluntary"
  // CHECK: me.nop
  me.nop
  // CHECK: me.cmp_br "bcs" "-" %[[LEN]], %[[C30]], ^[[SHORT:.*]], ^[[LONG:.*]](%[[ADD]] : i32)
  me.cmp_br "bcs" "-" %len, %c30, ^short, ^long(%add : i32)
^short:
  // CHECK: me.raise 2, 0
  me.raise 2, 0
^long(%x: i32):
  // CHECK: me.bit_br %{{.*}}, 31, true, ^{{.*}}, ^{{.*}}(%{{.*}} : i32)
  me.bit_br %x, 31, true, ^bytes, ^sw(%x : i32)
^bytes:
  // CHECK: me.byte_br %[[H0]], 3, 255, false, ^{{.*}}, ^{{.*}}
  me.byte_br %h0, 3, 255, false, ^wd, ^out
^sw(%y: i32):
  // CHECK: me.switch %{{.*}}, [1, 2], ^{{.*}}, ^{{.*}}, ^{{.*}}
  me.switch %y, [1, 2], ^out, ^wd, ^drop
^wd:
  // CHECK: me.watchdog ^{{.*}}, ^{{.*}}
  me.watchdog ^next, ^drop
^next:
  // CHECK: me.br ^{{.*}}
  me.br ^out
^out:
  // CHECK: me.send 0
  me.send 0
^drop:
  // CHECK: me.drop
  me.drop
}

// CHECK-LABEL: me.func @p.init
// CHECK-SAME: attributes {handler = "init", pe = "p"}
me.func @p.init attributes {handler = "init", pe = "p"} {
  // CHECK: me.ctx_arb "kill"
  me.ctx_arb "kill"
  // CHECK: me.drop {logged}
  me.drop {logged}
}
