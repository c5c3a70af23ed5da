// RUN: netvm-opt --netvm-to-llvm %s | FileCheck %s --check-prefix=DIRECT
// RUN: netvm-opt --netvm-to-llvm=forward-links %s | FileCheck %s --check-prefix=FORWARD

// Two NetPEs in a chain, the second declared first. Direct linking calls
// the next handler; forwarded links go through the runtime and the
// descriptor lists the push handlers and a topological order.

netvm.application @chain {
  netvm.source @in
  netvm.sink @out
  netvm.pe @second {
    netvm.port @in push_input
    netvm.port @out push_output
    netvm.handler push(%port) {
      netvm.send @out
    }
  }
  netvm.pe @first {
    netvm.port @in push_input
    netvm.port @out push_output
    netvm.handler push(%port) {
      netvm.send @out
    }
  }
  netvm.connect @in -> @first::@in
  netvm.connect @first::@out -> @second::@in
  netvm.connect @second::@out -> @out
}

// DIRECT-LABEL: llvm.func internal @__netvm.chain.first.push(
// DIRECT:         %[[V:.*]] = llvm.call @__netvm.chain.second.push(
// DIRECT:         llvm.return %[[V]] : i32
// DIRECT-NOT:   netvm_rt_forward
// DIRECT-NOT:   pe_order

// FORWARD-LABEL: llvm.func internal @__netvm.chain.first.push(
// FORWARD:         llvm.call @netvm_rt_forward(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, i32, i32, !llvm.ptr) -> ()
// FORWARD:         llvm.return %{{.*}} : i32
// FORWARD:       llvm.mlir.global internal constant @__netvm.chain.pe_push()
// FORWARD:         llvm.mlir.addressof @__netvm.chain.second.push
// FORWARD:         llvm.mlir.addressof @__netvm.chain.first.push
// The order: first (index 1), then second (index 0).
// FORWARD:       llvm.mlir.global internal constant @__netvm.chain.pe_order() {{.*}} : !llvm.array<2 x i32>
// FORWARD:         llvm.mlir.constant(1 : i32)
// FORWARD-NEXT:    llvm.insertvalue
// FORWARD-NEXT:    llvm.mlir.constant(0 : i32)
// FORWARD:       llvm.mlir.global external constant @netvm_app_chain()
// FORWARD:         llvm.mlir.addressof @__netvm.chain.pe_order
