// Claims an access is in bounds without a check, data memory of -5 bytes,
// and an op no engine executes: the loader must refuse or re-check.
module {
  netvm.application @lie {
    netvm.source @in
    netvm.sink @out
    netvm.pe @lie {
      netvm.port @in push_input
      netvm.port @out push_output
      netvm.handler push(%port) {
        %c1000_i32 = arith.constant 1000 : i32
        %0 = netvm.load packet[%c1000_i32] {in_bounds} : i32
        %c0_i32 = arith.constant 0 : i32
        %1 = arith.cmpi ne, %0, %c0_i32 : i32
        cf.cond_br %1, ^bb1, ^bb2
      ^bb1:
        netvm.send @out
      ^bb2:
        netvm.drop
      }
    }
    netvm.connect @in -> @lie::@in
    netvm.connect @lie::@out -> @out
  }
}
