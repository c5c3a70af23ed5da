//===- Input.cpp - What to compile, and how tools print diagnostics -------===//
//
// One description of a compiler's input (driver::Input) for every client:
// resolveInput checks what a user gave in a tool's own option names, load
// compiles it with the right front end, and DiagnosticPrinter shows the
// diagnostics of all of them the same way.
//
//===----------------------------------------------------------------------===//

#include "netvm/Driver/Driver.h"
#include "netvm/Frontend/NetPFL.h"
#include "netvm/Frontend/PcapFilter.h"
#include "netvm/ProtoDB/ProtoDB.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace netvm;
using namespace netvm::driver;

// Every tool that prints diagnostics with DiagnosticPrinter takes it
// (configureHelp lists it with the tool's own options).
static llvm::cl::opt<unsigned> errorLimit(
    "error-limit",
    llvm::cl::desc("Stop showing diagnostics after this many errors, as "
                   "clang's -ferror-limit (default 20; 0: no limit)"),
    llvm::cl::init(20));

/// Whether a positional word names an application file rather than a word
/// of a tcpdump expression (netvm-run -r f.pcap tcp port 80): by its
/// extension alone, never by what exists on disk or by a '/', so that no
/// expression (`net 10.0.0.0/8`, `udp` beside a directory `udp/`) is ever
/// taken for a file. No tcpdump expression word ends in these.
static bool isApplicationFileName(StringRef word) {
  StringRef ext = llvm::sys::path::extension(word);
  return ext == ".netil" || ext == ".nvapp" || ext == ".mlir";
}

FailureOr<Input> netvm::driver::resolveInput(const InputOptions &options,
                                             std::string &error) {
  int filters = options.pcapFilter.has_value() + options.pfl.has_value() +
                options.filterFile.has_value();
  std::string filterOptions =
      (options.pcapFilterOption + ", " + options.pflOption + " or " +
       options.filterFileOption)
          .str();
  if (filters > 1) {
    error = "give one filter: " + filterOptions;
    return failure();
  }
  Input input;
  input.protoDB = options.protoDB;
  input.appName = options.appName;
  if (filters) {
    StringRef given = options.pcapFilter ? options.pcapFilterOption
                      : options.pfl      ? options.pflOption
                                         : options.filterFileOption;
    if (!options.files.empty()) {
      error = (given + " gives the whole input (a filter): give no input "
                       "files with it")
                  .str();
      return failure();
    }
    if (options.filterFile) {
      if (!options.filterFileLanguage) {
        error = (options.filterFileOption + " needs " + options.languageOption +
                 "=pfl or " + options.languageOption + "=pcap-filter")
                    .str();
        return failure();
      }
      input.kind = Input::Kind::FilterFile;
      input.filter = *options.filterFile;
      input.language = *options.filterFileLanguage;
    } else {
      input.kind = Input::Kind::Filter;
      input.filter = options.pcapFilter ? *options.pcapFilter : *options.pfl;
      input.language = options.pcapFilter ? FilterLanguage::PcapFilter
                                          : FilterLanguage::NetPFL;
    }
    return input;
  }
  if (options.files.empty()) {
    error = (Twine("no input: give NetIL files, an .nvapp or .mlir file, ") +
             (options.expressionWords ? "the words of a tcpdump expression, "
                                      : "") +
             options.pcapFilterOption + " EXPRESSION, " + options.pflOption +
             " FILTER or " + options.filterFileOption + " FILE")
                .str();
    return failure();
  }
  if (options.expressionWords &&
      !isApplicationFileName(options.files.front())) {
    input.kind = Input::Kind::Filter;
    input.filter = llvm::join(options.files, " ");
    input.language = FilterLanguage::PcapFilter;
    return input;
  }
  input.files = options.files;
  return input;
}

/// Compile the filter of `input` through its front end; its text becomes a
/// buffer of `sourceMgr`, where the front end's diagnostics point.
static OwningOpRef<ModuleOp> compileFilter(MLIRContext &context,
                                           llvm::SourceMgr &sourceMgr,
                                           const Input &input) {
  std::string text = input.filter, name = input.filterName;
  if (input.kind == Input::Kind::FilterFile) {
    auto buffer = readSourceFile(input.filter);
    if (!buffer) {
      emitError(FileLineColLoc::get(&context, input.filter, 0, 0))
          << "cannot read: " << llvm::toString(buffer.takeError());
      return nullptr;
    }
    text = (*buffer)->getBuffer().str();
    name = input.filter == "-" ? "<stdin>" : input.filter;
    // tcpdump -F blanks comments out; offsets (and columns) stay as
    // written.
    if (input.language == FilterLanguage::PcapFilter)
      for (size_t i = 0; i < text.size(); ++i)
        if (text[i] == '#')
          for (; i < text.size() && text[i] != '\n'; ++i)
            text[i] = ' ';
  }
  unsigned bufferId = sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, name), llvm::SMLoc());
  std::string appName = input.appName.empty() ? "filter" : input.appName;
  if (input.language == FilterLanguage::PcapFilter) {
    pcapfilter::CompileOptions options;
    options.appName = appName;
    options.linkType = input.linkType;
    options.swapped = input.linkSwapped;
    options.netmask = input.netmask;
    return pcapfilter::compile(context, sourceMgr, bufferId, options);
  }
  std::unique_ptr<protodb::Database> db;
  if (!input.protoDB.empty()) {
    protodb::LoadError error;
    db = protodb::Database::load(input.protoDB, error);
    if (!db) {
      emitError(FileLineColLoc::get(&context, error.loc.file, error.loc.line,
                                    error.loc.column))
          << error.message;
      return nullptr;
    }
  }
  netpfl::CompileOptions options;
  options.appName = appName;
  options.database = db.get();
  return netpfl::compile(context, sourceMgr, bufferId, options);
}

OwningOpRef<ModuleOp> netvm::driver::load(MLIRContext &context,
                                          llvm::SourceMgr &sourceMgr,
                                          const Input &input) {
  for (const auto &[name, text] : input.buffers)
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(text, name), llvm::SMLoc());
  if (input.kind == Input::Kind::Files) {
    LoadOptions options;
    options.appName = input.appName;
    return loadApplication(context, sourceMgr, input.files, options);
  }
  return compileFilter(context, sourceMgr, input);
}

//===----------------------------------------------------------------------===//
// DiagnosticPrinter
//===----------------------------------------------------------------------===//

struct DiagnosticPrinter::Impl {
  Impl(llvm::SourceMgr &sourceMgr, MLIRContext &context, StringRef tool)
      : sourceMgr(sourceMgr), tool(tool.str()), fallback(sourceMgr, &context),
        handler(&context, [this](Diagnostic &diag) { return print(diag); }) {}

  /// A filter from the command line ("<expression>"): "tool: message",
  /// then the filter and a caret. A file without a position (one that
  /// cannot be read): "file: error: message". Anything else: MLIR's own
  /// rendering.
  LogicalResult print(Diagnostic &diag) {
    // Garbage input gives an error every few bytes: show the first ones,
    // say that the rest are left out, and swallow them.
    if (errorLimit && errors >= errorLimit) {
      if (diag.getSeverity() == DiagnosticSeverity::Error && !saidLimit) {
        llvm::errs() << tool << ": too many errors (" << errorLimit.getValue()
                     << "): the rest are not shown (--error-limit=0 shows "
                        "them all)\n";
        saidLimit = true;
      }
      return success();
    }
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      ++errors;
    auto loc = dyn_cast<FileLineColLoc>(diag.getLocation());
    if (!loc)
      return failure();
    llvm::raw_ostream &os = llvm::errs();
    const char *severity =
        diag.getSeverity() == DiagnosticSeverity::Warning ? "warning: "
        : diag.getSeverity() == DiagnosticSeverity::Error ? "error: "
                                                          : "note: ";
    if (loc.getFilename() != "<expression>") {
      if (loc.getLine() == 0) {
        os << loc.getFilename().getValue() << ": " << severity << diag.str()
           << "\n";
        return success();
      }
      // MLIR's rendering echoes the whole line: keep it for lines a reader
      // can take in, and show a window around the column of longer ones
      // (a 40 KB line of garbage would otherwise be printed per error).
      std::optional<StringRef> line = sourceLine(loc);
      if (!line || line->size() <= kLongLine)
        return failure();
      os << loc.getFilename().getValue() << ":" << loc.getLine() << ":"
         << loc.getColumn() << ": " << severity << diag.str() << "\n";
      printExcerpt(os, "", *line, loc.getColumn());
      for (Diagnostic &note : diag.getNotes())
        os << "note: " << note.str() << "\n";
      return success();
    }
    os << tool << ": ";
    if (diag.getSeverity() == DiagnosticSeverity::Warning)
      os << "warning: ";
    os << diag.str() << "\n";
    if (std::optional<StringRef> line = sourceLine(loc))
      printExcerpt(os, "  ", *line, loc.getColumn());
    for (Diagnostic &note : diag.getNotes())
      os << tool << ": note: " << note.str() << "\n";
    return success();
  }

  /// Lines longer than this many bytes are shown as a window around the
  /// column, with "..." where text is left out.
  static constexpr size_t kLongLine = 160;

  /// `line` and a caret under column `column` (1-based, in bytes), each
  /// after `indent`. The caret goes under the character: one space per
  /// character (not per byte), a tab where the line has one.
  static void printExcerpt(llvm::raw_ostream &os, StringRef indent,
                           StringRef line, unsigned column) {
    size_t at = std::min<size_t>(column - 1, line.size());
    size_t begin = 0, end = line.size();
    if (line.size() > kLongLine) {
      begin = at > kLongLine / 2 ? at - kLongLine / 2 : 0;
      end = std::min(line.size(), begin + kLongLine);
      // Never cut a UTF-8 character in two.
      auto isContinuation = [&](size_t i) {
        return i < line.size() && (line[i] & 0xC0) == 0x80;
      };
      while (begin > 0 && isContinuation(begin))
        --begin;
      while (isContinuation(end))
        ++end;
    }
    StringRef lead = begin > 0 ? "..." : "";
    StringRef shown = line.slice(begin, end);
    std::string caret(lead.size(), ' ');
    for (char c : line.slice(begin, at))
      if ((c & 0xC0) != 0x80)
        caret += c == '\t' ? '\t' : ' ';
    os << indent << lead << shown << (end < line.size() ? "..." : "") << "\n";
    os << indent << caret << "^\n";
  }

  /// The line of `loc` in the buffer it names, if it has one.
  std::optional<StringRef> sourceLine(FileLineColLoc loc) {
    if (loc.getLine() == 0 || loc.getColumn() == 0)
      return std::nullopt;
    for (unsigned id = 1; id <= sourceMgr.getNumBuffers(); ++id) {
      const llvm::MemoryBuffer *buffer = sourceMgr.getMemoryBuffer(id);
      if (buffer->getBufferIdentifier() != loc.getFilename())
        continue;
      SmallVector<StringRef> lines;
      buffer->getBuffer().split(lines, '\n');
      if (loc.getLine() > lines.size())
        return std::nullopt;
      return lines[loc.getLine() - 1].rtrim('\r');
    }
    return std::nullopt;
  }

  llvm::SourceMgr &sourceMgr;
  std::string tool;
  unsigned errors = 0;
  bool saidLimit = false;
  SourceMgrDiagnosticHandler fallback;
  ScopedDiagnosticHandler handler;
};

DiagnosticPrinter::DiagnosticPrinter(llvm::SourceMgr &sourceMgr,
                                     MLIRContext &context, StringRef tool)
    : impl(std::make_unique<Impl>(sourceMgr, context, tool)) {}
DiagnosticPrinter::~DiagnosticPrinter() = default;
