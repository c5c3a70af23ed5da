// RUN: netvm-opt --netvm-to-llvm %s | FileCheck %s
// RUN: netvm-opt --netvm-to-llvm %s | netvm-opt | FileCheck %s --check-prefix=ROUNDTRIP
// RUN: netvm-opt --netvm-to-llvm=descriptor=my_filter %s | FileCheck %s --check-prefix=NAMED

// The lowering of a one-NetPE filter: the handler returns a verdict, the
// source's route returns it, the entry counts it, the batch entry loops.

netvm.application @ip {
  netvm.source @in
  netvm.sink @out
  netvm.pe @ip {
    netvm.port @in push_input
    netvm.port @out push_output
    netvm.handler push(%port) {
      %c2048_i32 = arith.constant 2048 : i32
      %c12_i32 = arith.constant 12 : i32
      netvm.check_bounds packet[%c12_i32], 2
      %0 = netvm.load packet[%c12_i32] {in_bounds} : i16
      %1 = arith.extui %0 : i16 to i32
      %2 = arith.cmpi ne, %1, %c2048_i32 : i32
      cf.cond_br %2, ^bb2, ^bb1
    ^bb1:
      netvm.send @out
    ^bb2:
      netvm.drop
    }
  }
  netvm.connect @in -> @ip::@in
  netvm.connect @ip::@out -> @out
}

// The handler: (ctx, xb, port) -> verdict; the bounds check is a cold
// branch to the exception.
// CHECK-LABEL: llvm.func internal @__netvm.ip.ip.push(%{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: i32) -> i32
// CHECK:         llvm.cond_br %{{.*}} weights([2000, 1])
// CHECK:         llvm.call @netvm_rt_exception(
// CHECK:         llvm.intr.bswap
// CHECK:         %[[V:.*]] = llvm.call @__netvm.ip.emit(
// CHECK:         llvm.return %[[V]] : i32
// CHECK:         %[[D:.*]] = llvm.call @__netvm.ip.drop(
// CHECK:         llvm.return %[[D]] : i32

// Emission: a verdict (sink 0 -> 1) unless the buffer is a clone or
// listened to (flags & 10), then the runtime.
// CHECK-LABEL: llvm.func internal @__netvm.ip.emit(%{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: i32, %{{.*}}: !llvm.ptr {llvm.noalias}) -> i32
// CHECK-SAME:    always_inline
// CHECK:         llvm.mlir.constant(10 : i32)
// CHECK:         llvm.cond_br %{{.*}} weights([1, 2000])
// CHECK:         llvm.call @netvm_rt_emit(
// CHECK:         llvm.mlir.constant(1 : i32)
// CHECK:         llvm.add

// Drops: DROP | pe.
// CHECK-LABEL: llvm.func internal @__netvm.ip.drop(
// CHECK:         llvm.call @netvm_rt_drop(
// CHECK:         llvm.mlir.constant(-2147483648 : i32)
// CHECK:         llvm.or

// The source: route (inlined everywhere) and entry (counts).
// CHECK-LABEL: llvm.func internal @__netvm.ip.route.in(
// CHECK:         llvm.call @__netvm.ip.ip.push({{.*}}) {always_inline}
// CHECK-LABEL: llvm.func internal @__netvm.ip.source.in(
// CHECK:         %[[R:.*]] = llvm.call @__netvm.ip.route.in(
// CHECK:         llvm.call @__netvm.ip.count(%{{.*}}, %[[R]],

// The batch entry: a fast loop with counters in block arguments (index,
// packets and bytes of sink 0, drops of NetPE 0) and a slow loop calling
// the entry.
// CHECK-LABEL: llvm.func internal @__netvm.ip.batch.in(
// CHECK:         llvm.alloca
// CHECK:         ^bb{{[0-9]+}}(%{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64):
// CHECK:         llvm.call @__netvm.ip.route.in(
// CHECK:         llvm.call @__netvm.ip.source.in({{.*}}) {no_inline}

// The descriptor: ABI version 4 and the batch entries; no forwarded links.
// CHECK: llvm.mlir.global external constant @netvm_app_ip()
// CHECK:   llvm.mlir.constant(4 : i32)
// CHECK:   llvm.mlir.addressof @__netvm.ip.batches
// CHECK-NOT: pe_push
// CHECK-NOT: pe_order
// CHECK-NOT: pe_key

// ROUNDTRIP: llvm.mlir.global external constant @netvm_app_ip

// The pass option `descriptor` names the descriptor.
// NAMED-NOT: @netvm_app_ip
// NAMED: llvm.mlir.global external constant @my_filter()
