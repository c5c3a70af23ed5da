// A fat NetPE whose state comes first: @count counts IPv4 frames in its
// data memory, then hashes the frame with 24 CRCs of 30 to 32 bytes at offsets
// 0 to 7 (a loop; frames under 39 bytes raise packet_bounds inside it). The cut after the counter leaves
// the loop in a stateless second half that can be replicated; @mark is
// light. Used by split-pe.test and test/Transforms/split-pe-plan.test.
netvm.application @splitstate {
  netvm.source @wire
  netvm.sink @even
  netvm.sink @odd
  netvm.pe @count attributes {datamem_size = 8 : i32, info_size = 8 : i32} {
    netvm.port @in push_input
    netvm.port @out push_output
    netvm.handler push(%port) {
      %c0 = arith.constant 0 : i32
      %c1 = arith.constant 1 : i32
      %c12 = arith.constant 12 : i32
      %ipv4 = arith.constant 2048 : i32
      %type = netvm.load packet[%c12] : i16
      %t32 = arith.extui %type : i16 to i32
      %is = arith.cmpi eq, %t32, %ipv4 : i32
      cf.cond_br %is, ^count, ^start
    ^count:
      %old = netvm.load data[%c0] : i32
      %new = arith.addi %old, %c1 : i32
      netvm.store %new, data[%c0] : i32
      cf.br ^start
    ^start:
      %c14 = arith.constant 14 : i32
      %seed = netvm.load packet[%c14] : i8
      %s32 = arith.extui %seed : i8 to i32
      cf.br ^loop(%c0, %s32 : i32, i32)
    ^loop(%i: i32, %h: i32):
      %c32 = arith.constant 32 : i32
      %b = netvm.crc_packet crc32c %i, %c32
      %c31 = arith.constant 31 : i32
      %c30 = arith.constant 30 : i32
      %b2 = netvm.crc_packet crc32c %i, %c31
      %b3 = netvm.crc_packet crc32c %i, %c30
      %b23 = arith.addi %b2, %b3 : i32
      %bb = arith.xori %b, %b23 : i32
      %x = arith.xori %h, %bb : i32
      %prime = arith.constant 16777619 : i32
      %m = arith.muli %x, %prime : i32
      %i2 = arith.addi %i, %c1 : i32
      %c8 = arith.constant 8 : i32
      %more = arith.cmpi ult, %i2, %c8 : i32
      cf.cond_br %more, ^loop(%i2, %m : i32, i32), ^done
    ^done:
      %c4 = arith.constant 4 : i32
      netvm.store %m, info[%c4] : i32
      netvm.store %port, info[%c0] : i32
      netvm.send @out
    }
    netvm.handler init {
      %c0 = arith.constant 0 : i32
      %c7 = arith.constant 7 : i32
      netvm.store %c7, data[%c0] : i32
      netvm.ret
    }
  }
  netvm.pe @mark attributes {info_size = 8 : i32} {
    netvm.port @in push_input
    netvm.port @even push_output
    netvm.port @odd push_output
    netvm.handler push(%port) {
      %c4 = arith.constant 4 : i32
      %h = netvm.load info[%c4] : i32
      %c1 = arith.constant 1 : i32
      %low = arith.andi %h, %c1 : i32
      %c0 = arith.constant 0 : i32
      %zero = arith.cmpi eq, %low, %c0 : i32
      cf.cond_br %zero, ^e, ^o
    ^e:
      netvm.send @even
    ^o:
      netvm.send @odd
    }
  }
  netvm.connect @wire -> @count::@in
  netvm.connect @count::@out -> @mark::@in
  netvm.connect @mark::@even -> @even
  netvm.connect @mark::@odd -> @odd
}
