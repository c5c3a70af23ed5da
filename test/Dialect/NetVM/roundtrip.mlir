// RUN: netvm-opt %s | netvm-opt | FileCheck %s
// RUN: netvm-opt %s --mlir-print-op-generic | netvm-opt | FileCheck %s

// Every operation of the dialect in its custom syntax survives a round trip
// through the printer and the parser (also via the generic form).

// CHECK-LABEL: netvm.application @everything
netvm.application @everything {
  // CHECK: netvm.source @in
  netvm.source @in
  // CHECK: netvm.sink @out
  netvm.sink @out
  netvm.sink @pulled
  // CHECK: netvm.pe @pe attributes {coprocessors = ["lookup"], datamem_size = 16 : i32, info_size = 8 : i32, initdata = array<i8: 1, 2, 3, 4>, sharedmem_size = 32 : i32}
  netvm.pe @pe attributes {coprocessors = ["lookup"], datamem_size = 16 : i32,
                           info_size = 8 : i32, sharedmem_size = 32 : i32,
                           initdata = array<i8: 1, 2, 3, 4>} {
    // CHECK: netvm.port @i push_input
    netvm.port @i push_input
    // CHECK: netvm.port @o push_output
    netvm.port @o push_output
    // CHECK: netvm.port @pi pull_input
    netvm.port @pi pull_input
    // CHECK: netvm.port @po pull_output
    netvm.port @po pull_output
    // CHECK-LABEL: netvm.handler init attributes {max_stack = 4 : i32} {
    netvm.handler init attributes {max_stack = 4 : i32} {
      // CHECK: netvm.copro_init "lookup", 0
      %s = netvm.copro_init "lookup", 0
      // CHECK: netvm.ret
      netvm.ret
    }
    // CHECK-LABEL: netvm.handler push(%port) {
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c4 = arith.constant 4 : i32
      // CHECK: netvm.load packet[%{{.*}}] : i8
      %b = netvm.load packet[%c0] : i8
      // CHECK: netvm.load info[%{{.*}}] {in_bounds} : i16
      %h = netvm.load info[%c0] {in_bounds} : i16
      // CHECK: netvm.load data[%{{.*}}] : i32
      %w = netvm.load data[%c0] : i32
      // CHECK: netvm.load shared[%{{.*}}] : i32
      %sh = netvm.load shared[%c0] : i32
      // CHECK: netvm.load initdata[%{{.*}}] : i8
      %id = netvm.load initdata[%c0] : i8
      // CHECK: netvm.store %{{.*}}, data[%{{.*}}] : i32
      netvm.store %w, data[%c4] : i32
      // CHECK: netvm.atomic_add %{{.*}}, data[%{{.*}}] {in_bounds} : i32
      netvm.atomic_add %w, data[%c4] {in_bounds} : i32
      // CHECK: netvm.store %{{.*}}, packet[%{{.*}}] : i8
      netvm.store %b, packet[%c0] : i8
      // CHECK: netvm.copy initdata[%{{.*}}] -> packet[%{{.*}}], %{{.*}}
      netvm.copy initdata[%c0] -> packet[%c0], %c4
      // CHECK: netvm.pkt_len
      %len = netvm.pkt_len
      // CHECK: netvm.info_clear
      netvm.info_clear
      // CHECK: netvm.timestamp seconds
      %ts = netvm.timestamp seconds
      // CHECK: netvm.timestamp microseconds
      %tus = netvm.timestamp microseconds
      // CHECK: netvm.random
      %r = netvm.random
      %nz = arith.cmpi ne, %r, %c0 : i32
      // CHECK: netvm.check %{{.*}}, division_by_zero
      netvm.check %nz, division_by_zero
      // CHECK: netvm.bswap
      %sw = netvm.bswap %w
      // CHECK: netvm.find_bit
      %fb = netvm.find_bit %w
      // CHECK: netvm.bit set %{{.*}}, %{{.*}}
      %bs = netvm.bit set %w, %c4
      // CHECK: netvm.bit testn
      %bt = netvm.bit testn %w, %c4
      // CHECK: netvm.hash %{{.*}}, %{{.*}}
      %hh = netvm.hash %w, %len
      // CHECK: netvm.checksum %{{.*}}, %{{.*}}
      %cs = netvm.checksum %c0, %len
      // CHECK: netvm.checksum_add
      %ca = netvm.checksum_add %cs, %w
      // CHECK: netvm.checksum_sub
      %cb = netvm.checksum_sub %ca, %w
      // CHECK: netvm.crc crc32c
      %crc = netvm.crc crc32c %w
      // CHECK: netvm.crc_packet crc32
      %pcrc = netvm.crc_packet crc32 %c0, %len
      // CHECK: netvm.field_cmp lt
      %fc = netvm.field_cmp lt %c0, %c4, %c4
      // CHECK: netvm.pscan %{{.*}}, %{{.*}} : i8
      %ps = netvm.pscan %c0, %b : i8
      // CHECK: netvm.send_dup @o
      netvm.send_dup @o
      // CHECK: netvm.copro_out %{{.*}}, "lookup"[0]
      netvm.copro_out %w, "lookup"[0]
      // CHECK: netvm.copro_invoke "lookup", 3
      netvm.copro_invoke "lookup", 3
      // CHECK: netvm.copro_in "lookup"[1]
      %ci = netvm.copro_in "lookup"[1]
      // CHECK: netvm.copro_exbuf "lookup"
      netvm.copro_exbuf "lookup"
      // CHECK: math.ctlz
      %clz = math.ctlz %w : i32
      cf.cond_br %fc, ^send, ^other
    ^other:
      // CHECK: cf.switch
      cf.switch %ci : i32, [
        default: ^drop,
        7: ^trap
      ]
    ^trap:
      // CHECK: netvm.trap exit
      netvm.trap exit
    ^drop:
      // CHECK: netvm.drop
      netvm.drop
    ^send:
      // CHECK: netvm.send @o
      netvm.send @o
    }
    // CHECK-LABEL: netvm.handler pull(%port) {
    netvm.handler pull(%port) {
      // CHECK: netvm.receive @pi
      netvm.receive @pi
      %c8 = arith.constant 8 : i32
      // CHECK: netvm.exbuf_create
      netvm.exbuf_create %c8
      // CHECK: netvm.exbuf_delete
      netvm.exbuf_delete
      netvm.ret
    }
  }
  // CHECK: netvm.connect @in -> @pe::@i
  netvm.connect @in -> @pe::@i
  // CHECK: netvm.connect @pe::@o -> @out
  netvm.connect @pe::@o -> @out
  // CHECK: netvm.connect @pe::@po -> @pulled
  netvm.connect @pe::@po -> @pulled
}
