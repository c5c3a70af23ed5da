// Sends packets whose capture is shorter than their length on the wire to
// `truncated`, the others to `whole`.
module {
  netvm.application @truncated {
    netvm.source @in
    netvm.sink @whole
    netvm.sink @truncated
    netvm.pe @p {
      netvm.port @in push_input
      netvm.port @whole push_output
      netvm.port @truncated push_output
      netvm.handler push(%port) {
        %0 = netvm.wire_len
        %1 = netvm.pkt_len
        %2 = arith.cmpi ugt, %0, %1 : i32
        cf.cond_br %2, ^cut, ^all
      ^cut:
        netvm.send @truncated
      ^all:
        netvm.send @whole
      }
    }
    netvm.connect @in -> @p::@in
    netvm.connect @p::@whole -> @whole
    netvm.connect @p::@truncated -> @truncated
  }
}
