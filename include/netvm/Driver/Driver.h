//===- Driver.h - The netvm compile pipeline as a library -------*- C++ -*-===//
//
// What every tool (netc, netvm-run, the Python module) does the same way:
// register the dialects, load an application from its inputs (NetIL files,
// an application description, or MLIR), and run the optimization pipeline
// of a given -O level. Tools are thin mains over this library.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_DRIVER_DRIVER_H
#define NETVM_DRIVER_DRIVER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace llvm {
class SourceMgr;
namespace cl {
class OptionCategory;
} // namespace cl
} // namespace llvm

namespace mlir {
class PassManager;
} // namespace mlir

namespace netvm {
class ApplicationOp;

namespace driver {

/// Register the dialects netvm tools read and write.
void registerDialects(mlir::DialectRegistry &registry);

/// Keep --help short: show the tool's own options and, for tools that run
/// MLIR pass pipelines, MLIR's debugging options (--mlir-print-ir-after-all,
/// --mlir-pass-statistics, --mlir-timing, ...) under their own heading; the
/// hundreds of general LLVM options stay available through --help-hidden.
void configureHelp(llvm::cl::OptionCategory &toolCategory,
                   bool showMLIROptions);

enum class InputKind {
  NetIL,          // a NetIL source file (any other extension)
  AppDescription, // .nvapp: NetPEs, sources, sinks and connections
  MLIR,           // .mlir: a module holding one netvm.application
};
InputKind classifyInput(llvm::StringRef path);

struct LoadOptions {
  /// Name of the application (default: the stem of the first input).
  std::string appName;
};

/// Load an application:
///  - one NetIL file: a single NetPE whose push (pull) input ports are fed
///    by a source each and whose output ports drain into a sink each, named
///    after the ports;
///  - several NetIL files: the same, chained: the first push output port of
///    each NetPE feeds the first push input port of the next;
///  - one application description (.nvapp, see docs/applications.md);
///  - one MLIR file containing a netvm.application.
/// Diagnostics go to the context's handler; returns null on error. Input
/// buffers are added to `sourceMgr` so that diagnostics can show them.
mlir::OwningOpRef<mlir::ModuleOp>
loadApplication(mlir::MLIRContext &context, llvm::SourceMgr &sourceMgr,
                llvm::ArrayRef<std::string> inputs,
                const LoadOptions &options = {});

enum class FilterLanguage {
  PcapFilter, // tcpdump expressions (docs/pcap-filter.md)
  NetPFL,     // NetPFL over a NetPDL database (docs/netpfl.md)
};

struct FilterOptions {
  FilterLanguage language = FilterLanguage::PcapFilter;
  /// Name of the application.
  std::string appName = "filter";
  /// Where the filter came from: a file name, or empty for a filter given
  /// on the command line. With a file, errors start with file:line:col.
  std::string fileName;
  /// NetPFL: the NetPDL protocol database to use; empty for netvm's own.
  std::string protoDB;
};

/// Compile a filter into an application with one NetPE, `filter`, fed by
/// source `in`, whose accepted packets go to sink `match` (NetPFL:
/// `portN` after `returnpacket on port N`). On error returns null and sets
/// `error` (the message, the filter line and a caret under the position).
mlir::OwningOpRef<mlir::ModuleOp>
compileFilter(mlir::MLIRContext &context, llvm::StringRef filter,
              const FilterOptions &options, std::string &error);

/// Compile the filter in file `path` ("-": standard input), as
/// compileFilter with `options.fileName` set to it. A tcpdump expression
/// file may hold comments from '#' to the end of the line, as with
/// `tcpdump -F`.
mlir::OwningOpRef<mlir::ModuleOp>
compileFilterFile(mlir::MLIRContext &context, llvm::StringRef path,
                  FilterOptions options, std::string &error);

/// The single netvm.application of a module, or null.
ApplicationOp getApplication(mlir::ModuleOp module);

/// Run the optimization pipeline of level `optLevel` (0-3) on `module`.
/// `configure` may adjust the pass manager first (instrumentation, IR
/// printing, timing).
mlir::LogicalResult
optimize(mlir::ModuleOp module, unsigned optLevel,
         llvm::function_ref<mlir::LogicalResult(mlir::PassManager &)>
             configure = nullptr);

} // namespace driver
} // namespace netvm

#endif // NETVM_DRIVER_DRIVER_H
