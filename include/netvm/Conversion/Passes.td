//===- Passes.td - Conversion passes of netvm --------------*- tablegen -*-===//
//
// Passes that take netvm out of its own dialect. Each is declared here and
// implemented as a thin wrapper in its lib/Conversion/<X>To<Y> folder, over
// the functions drivers call directly (CIRCT's layout).
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_CONVERSION_PASSES_TD
#define NETVM_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def NetVMToLLVM : Pass<"netvm-to-llvm", "mlir::ModuleOp"> {
  let summary = "lower a netvm.application to the LLVM dialect";
  let description = [{
    Lowers the single `netvm.application` of the module to the LLVM dialect,
    ready for translation to LLVM IR (what `netc` and the JIT do after the
    optimizer): every handler becomes a function
    `void (netvm_ctx *, netvm_exbuf *, i32)`; `netvm.send` becomes direct
    calls of the connected handlers (direct linking of NetPEs, with clones
    for fan-out), or calls of `netvm_rt_forward` with `forward-links`, or of
    `netvm_rt_emit` for sinks; memory operations become loads and stores in
    network byte order; `netvm.check_bounds`, `netvm.check` and
    `netvm.watchdog` become branches to a call of `netvm_rt_exception`; and
    a `netvm_app_desc` global describes the application to the runtime
    (`runtime/include/netvm/abi.h`). The upstream `arith`, `cf` and `math`
    lowerings run in the same conversion, so on success the module holds
    only LLVM dialect operations.

    Every memory access must be `in_bounds`: run
    `netvm-insert-bounds-checks` first (`driver::optimize` does at every
    level).

    ```mlir
    netvm.handler push(%port) {   // in NetPE @pe of application @app
      netvm.send @out             // @out leads to a sink
    }
    // becomes a function of the context, the exchange buffer and the port
    // that returns the verdict, here from the emission helper (which calls
    // netvm_rt_emit only for clones and listened-to buffers)
    llvm.func internal @__netvm.app.pe.push(%ctx: !llvm.ptr, %xb: !llvm.ptr,
                                            %port: i32) -> i32 {
      %v = llvm.call @__netvm.app.emit(...)
      llvm.return %v : i32
    }
    ```
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
  let options = [
    Option<"forwardLinks", "forward-links", "bool", /*default=*/"false",
           "Connections between NetPEs through netvm_rt_forward, with the "
           "push handlers listed in the descriptor (pipeline mode)">,
    Option<"counters", "counters", "bool", /*default=*/"true",
           "Maintain the per-NetPE run and send counters">,
    Option<"infoSize", "info-size", "unsigned", /*default=*/"64",
           "Info memory size when no NetPE declares more">,
    Option<"descriptor", "descriptor", "std::string", /*default=*/"",
           "Name of the exported descriptor (default: "
           "netvm_app_<application>)">
  ];
}

#endif // NETVM_CONVERSION_PASSES_TD
