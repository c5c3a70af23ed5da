//===- Application.h - Compiled applications for the Python package -*- C++
//-*-===//
//
// What `netvm.compile` makes: an application loaded through lib/Driver
// (NetIL, .nvapp, MLIR, NetPFL or tcpdump expressions, from files or from
// text), optimized at an -O level, with its diagnostics as records, its IR
// at every stage, LLVM IR, assembly and objects for a target, and a JIT
// descriptor for instances. Plain C++ (errors are C++ exceptions that
// nanobind turns into Python ones); Module.cpp binds it.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_PYTHON_APPLICATION_H
#define NETVM_PYTHON_APPLICATION_H

#include "netvm/Target/ME/AppLayout.h"
#include "netvm/abi.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace netvm::rt {
class Engine;
struct EngineOptions;
} // namespace netvm::rt

namespace netvm::python {

/// Machine options of the emulator by name (netvm/emu/Options.h), in the
/// order they apply: ("latency", "dram=240"), ...
using MachineOptions = std::vector<std::pair<std::string, std::string>>;

/// The machine the options describe; throws std::invalid_argument with
/// the option's message for a bad name or value.
me::MachineConfig machineConfig(const MachineOptions &options);

/// Whether this build has the ME back end (lib/Target/ME/CodeGen).
bool haveMECodeGen();

/// One compiler message, with where it points (file empty, line and column
/// 0 when it points nowhere in particular).
struct Diagnostic {
  std::string severity; // "error", "warning", "note", "remark"
  std::string message;
  std::string file;
  unsigned line = 0, column = 0;
  /// The message as netc prints it (location, source line, caret).
  std::string rendered;
  std::vector<Diagnostic> notes;
};

enum class Language { NetIL, AppDescription, MLIR, NetPFL, PcapFilter };

struct CompileRequest {
  Language language = Language::NetIL;
  /// NetIL, .nvapp, MLIR: the inputs in order, as (file name, text); no
  /// text means: read the file. Filters: exactly one input.
  std::vector<std::pair<std::string, std::optional<std::string>>> inputs;
  /// Files an application description names, given as text.
  std::map<std::string, std::string> files;
  unsigned optLevel = 2;
  /// NetPFL: a NetPDL protocol database file (empty: netvm's own).
  std::string protoDB;
  /// The application's name (empty: the driver's default).
  std::string name;
  /// "native", or "me": the application is for the microengines, with
  /// the machine `machine` describes (the caller compiles it with
  /// meProgram(), once the Application exists).
  std::string target = "native";
  MachineOptions machine;
  /// tcpdump expressions: the capture's link type (libpcap's DLT_) and
  /// whether its savefile is byte-swapped, as pcap_compile takes them.
  int linkType = 1;
  bool linkSwapped = false;
};

struct PassStatistic {
  std::string pass, name;
  uint64_t value = 0;
};

class Application {
public:
  ~Application();

  /// Compile `request`; null on error. `diagnostics` receives every
  /// message (warnings also on success).
  static std::unique_ptr<Application>
  compile(const CompileRequest &request, std::vector<Diagnostic> &diagnostics);

  const std::string &name() const { return appName; }
  const std::vector<std::string> &sources() const { return sourceNames; }
  const std::vector<std::string> &sinks() const { return sinkNames; }
  const std::vector<std::string> &pes() const { return peNames; }
  unsigned optLevel() const { return level; }
  const std::vector<PassStatistic> &passStatistics() const { return stats; }
  /// Whether some handler may write packet memory (stores, copies into the
  /// packet): batches must then run on copies of the caller's packets.
  bool writesPackets() const { return packetWrites; }
  /// The link type of the traces it reads (libpcap's DLT_; Ethernet but
  /// for tcpdump expressions compiled for another).
  int linkType() const { return links; }

  /// The IR at `stage`: "input", "instrumented", "optimized" or
  /// "llvm-dialect". Throws std::invalid_argument for another stage.
  std::string mlir(const std::string &stage);
  /// LLVM IR for `triple` (empty: this machine), optimized at the -O level.
  std::string llvmIR(const std::string &triple, const std::string &cpu);
  /// Assembly or an object file for `triple` (empty: this machine).
  std::string assembly(const std::string &triple, const std::string &cpu);
  std::string object(const std::string &triple, const std::string &cpu,
                     const std::string &descriptor);
  /// The application compiled into this process (once; later calls return
  /// the same descriptor, valid until the process ends).
  const netvm_app_desc *jit();

  const std::string &target() const { return targetName; }
  const MachineOptions &machine() const { return machineOptions; }
  /// The application compiled for the microengines (once, for the machine
  /// of the request); null after the back end refused it, with its
  /// messages in `diagnostics`. Throws std::runtime_error if this build
  /// has no ME back end.
  std::shared_ptr<const me::CompiledApp>
  meProgram(std::vector<Diagnostic> &diagnostics);
  /// The reference interpreter on the optimized application (which must
  /// outlive it); null with `error` set if it cannot run it.
  std::unique_ptr<rt::Engine> interpreter(const rt::EngineOptions &options,
                                          std::string &error);

private:
  struct State;
  explicit Application(std::unique_ptr<State> state);
  std::string codegen(const std::string &triple, const std::string &cpu,
                      const std::string &descriptor, int kind);

  std::unique_ptr<State> state;
  std::string appName;
  std::vector<std::string> sourceNames, sinkNames, peNames;
  unsigned level = 2;
  std::vector<PassStatistic> stats;
  bool packetWrites = true;
  int links = 1;
  const netvm_app_desc *jitted = nullptr;
  std::string targetName = "native";
  MachineOptions machineOptions;
  std::shared_ptr<const me::CompiledApp> compiledME;
};

} // namespace netvm::python

#endif // NETVM_PYTHON_APPLICATION_H
