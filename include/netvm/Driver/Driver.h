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
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

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

/// What to compile: NetIL files, an .nvapp or a .mlir file, or a filter
/// (tcpdump or NetPFL; its text, or a file holding it). netc, netvm-run
/// and the Python package all describe their input with it, checked by
/// resolveInput and compiled by load.
struct Input {
  enum class Kind { Files, Filter, FilterFile };
  Kind kind = Kind::Files;
  /// Files: NetIL files (chained in order), one .nvapp, or one .mlir.
  std::vector<std::string> files;
  /// Filter: the filter's text; FilterFile: the file holding it ("-":
  /// standard input).
  std::string filter;
  FilterLanguage language = FilterLanguage::PcapFilter;
  /// The name a filter text's diagnostics give as its file.
  std::string filterName = "<expression>";
  /// NetPFL: the NetPDL protocol database (empty: netvm's own).
  std::string protoDB;
  /// Name of the application (default: the first file's stem, or
  /// "filter").
  std::string appName;
  /// Texts of files that exist only in memory (name, text): the Python
  /// package's sources, and the NetIL files their .nvapp names.
  std::vector<std::pair<std::string, std::string>> buffers;
  /// tcpdump expressions: what pcap_compile takes from the capture, the
  /// link type (DLT_), whether the savefile is byte-swapped, and the
  /// netmask for `ip broadcast` (tcpdump -r passes 0).
  int linkType = 1;
  bool linkSwapped = false;
  std::optional<uint32_t> netmask;

  bool isPcapFilter() const {
    return kind != Kind::Files && language == FilterLanguage::PcapFilter;
  }
};

/// What a user gave, in a tool's terms: resolveInput turns it into an
/// Input or says, in the tool's option names, what is wrong.
struct InputOptions {
  /// Positional words: files, or (with expressionWords) the words of a
  /// tcpdump expression, as in `tcpdump -r f.pcap tcp port 80`: files when
  /// the first word ends in `.netil`, `.nvapp` or `.mlir` (nothing else:
  /// not a word with a '/', not a file that happens to exist).
  std::vector<std::string> files;
  bool expressionWords = false;
  std::optional<std::string> pcapFilter, pfl, filterFile;
  /// The language of `filterFile`, if the tool knows it.
  std::optional<FilterLanguage> filterFileLanguage;
  std::string protoDB, appName;
  /// The tool's spelling of its options, for messages.
  llvm::StringRef pcapFilterOption = "--pcap-filter", pflOption = "--pfl",
                  filterFileOption = "--filter-file",
                  languageOption = "--filter-language";
};

/// Check `options` and describe the input, or fail with `error` set.
mlir::FailureOr<Input> resolveInput(const InputOptions &options,
                                    std::string &error);

/// Compile `input` into a verified module holding one application. Every
/// error (front ends, unreadable files) is reported through the context's
/// diagnostics with a file:line:col location; the texts are added to
/// `sourceMgr` so that printers can show the line. Null on error.
mlir::OwningOpRef<mlir::ModuleOp> load(mlir::MLIRContext &context,
                                       llvm::SourceMgr &sourceMgr,
                                       const Input &input);

/// How the tools print diagnostics: as MLIR's SourceMgrDiagnosticHandler
/// (file:line:col, the source line and a caret, notes), except that an
/// error in a filter given on the command line reads "tool: message",
/// then the filter and a caret under the place, as tcpdump users expect.
class DiagnosticPrinter {
public:
  DiagnosticPrinter(llvm::SourceMgr &sourceMgr, mlir::MLIRContext &context,
                    llvm::StringRef tool);
  ~DiagnosticPrinter();

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// The single netvm.application of a module, or null.
ApplicationOp getApplication(mlir::ModuleOp module);

/// A source file's text ("-": standard input, named "<stdin>"), read up to
/// `limit` bytes: a file larger than that (a device such as /dev/zero
/// never ends) is an error saying so, not a process that eats memory.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readSourceFile(llvm::StringRef path, size_t limit = size_t(64) << 20);

/// Write `text` to the file `path` ("-": standard output), checking every
/// write and the close: the error says why (the caller names the file),
/// rather than LLVM's fatal "IO failure on output stream" at exit.
llvm::Error writeTextFile(llvm::StringRef path, llvm::StringRef text);

/// The code the optimized IR is for: native code (little-endian hosts) or
/// the big-endian microengines, where swapping constants' byte order does
/// not pay.
enum class OptimizeFor { Native, ME };

/// Run the optimization pipeline of level `optLevel` (0-3) on `module`.
/// `configure` may adjust the pass manager first (instrumentation, IR
/// printing, timing).
mlir::LogicalResult optimize(
    mlir::ModuleOp module, unsigned optLevel,
    llvm::function_ref<mlir::LogicalResult(mlir::PassManager &)> configure =
        nullptr,
    OptimizeFor target = OptimizeFor::Native);

} // namespace driver
} // namespace netvm

#endif // NETVM_DRIVER_DRIVER_H
