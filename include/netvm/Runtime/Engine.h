//===- Engine.h - Running applications, whatever the engine -----*- C++ -*-===//
//
// The run library: one interface over every way netvm runs an application.
// An Engine instantiates an application (init handlers), takes packets one
// at a time (push, pull) or in batches, reports what each packet did as one
// PacketResult (Result.h), keeps counters, and exposes data and shared
// memory to a control plane. netvm-run, the Python package, the benchmark
// and the tests are its clients; none of them talks to an engine's own API.
//
// Engines today:
//  - the reference interpreter (lib/Interpreter), on the netvm IR;
//  - native code (a JIT-compiled or linked netvm_app_desc) on the C
//    runtime's runners (runtime/include/netvm/runtime.h): one thread, N
//    replicas (run to completion) or a pipeline of NetPE stages, with events
//    in arrival order whatever the threads;
//  - an application compiled for the microengines (netvm/Target/ME) on the
//    IXP-like emulator (runtime/emu): every batch on a fresh machine, the
//    persistent memories carried from one run to the next.
//
// A new engine is one file in lib/Runtime: a
// subclass that implements initialize, push and the accessors, and a
// factory declared below. The batch and stream entries, the totals of
// engines that do not count for themselves (Tally) and every client work
// unchanged. docs/architecture.md ("Run library") says more.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_RUNTIME_ENGINE_H
#define NETVM_RUNTIME_ENGINE_H

#include "netvm/Runtime/Result.h"
#include "netvm/abi.h"
#include "netvm/coprocessor.h"
#include "netvm/io/PacketIO.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct netvm_runner; // runtime.h

namespace netvm {
class ApplicationOp;
}
namespace netvm::me {
struct CompiledApp;
struct MachineConfig;
struct Stats;
} // namespace netvm::me

namespace netvm::rt {

struct EngineOptions {
  /// Loop iterations a packet may run before the watchdog exception.
  uint64_t watchdogBudget = 1u << 20;
  /// Info memory size when no NetPE declares more (interpreter; compiled
  /// applications carry their size).
  uint32_t defaultInfoSize = 64;
  /// Native code: threads to run batches on. Stateless applications get a
  /// replica per thread; stateful ones one thread (see note()).
  unsigned threads = 1;
  /// Native code: split the NetPEs into `threads` pipeline stages (the
  /// application must be compiled with forwarded links).
  bool pipeline = false;
  /// Native code: packets a runner thread takes at a time (0: default).
  unsigned runnerBatch = 0;
  /// Native code, pipeline: the stages and their threads, as
  /// netvm_parse_stages reads them ("rx;work:2;tx"; empty: automatic).
  std::string stages;
  /// Native code, pipeline: move workers between the replicable stages at
  /// run time, with these netvm_parse_dynamic_policy settings.
  bool dynamic = false;
  std::string dynamicPolicy;
};

/// Receives each packet's result of a batch, in arrival order. `index` is
/// the packet's position in the batch; the result is only valid during the
/// call.
using ResultFn = llvm::function_ref<void(size_t index, const PacketResult &)>;

/// Receives each packet's result of a stream: its arrival number (from 1),
/// the packet as read (its length, wire length and time stamp; its bytes
/// as the application left them) and the result, valid during the call.
using StreamFn = llvm::function_ref<void(
    uint64_t number, const netvm_packet &packet, const PacketResult &)>;

/// Receives each packet that leaves through a sink, in arrival order, as it
/// left (valid during the call).
using OutputFn =
    llvm::function_ref<void(unsigned sink, const PacketView &packet)>;

/// An output as a view of its bytes.
PacketView view(const Output &out);

/// What a stream run read.
struct StreamStats {
  uint64_t packets = 0;
  /// Packets that left through a sink (counted when the run delivers
  /// results: with a StreamFn or StreamOptions::maxMatches).
  uint64_t matches = 0;
  double readSeconds = 0, processSeconds = 0;
};

struct StreamOptions {
  /// Stop after this many packets read (0: no limit).
  uint64_t maxPackets = 0;
  /// Stop after this many packets left through a sink (0: no limit), as
  /// tcpdump -c counts the packets its filter accepts. No packet after the
  /// last of them is run.
  uint64_t maxMatches = 0;
  /// Packets read before they are processed together.
  size_t chunk = 65536;
  /// Set from elsewhere (a signal handler) to stop reading.
  const volatile int *stop = nullptr;
  /// Every output of the stream (e.g. to a PcapWriter). Without a per-packet
  /// callback this is the fast way: native code runs whole batches.
  const OutputFn *onOutput = nullptr;
};

class Engine {
public:
  virtual ~Engine();

  /// The reference interpreter on `app` (which must outlive the engine).
  /// Null with `error` set if it cannot run the application.
  static std::unique_ptr<Engine> interpreter(ApplicationOp app,
                                             const EngineOptions &options,
                                             std::string &error);
  /// Native code described by `app` (a JIT-compiled or linked descriptor),
  /// on `options.threads` threads.
  static std::unique_ptr<Engine> native(const netvm_app_desc *app,
                                        const EngineOptions &options,
                                        std::string &error);
  /// `app` (an image and its layout, netvm/Target/ME/AppLayout.h, copied)
  /// on the ME emulator configured as `machine`. Each batch runs on a fresh
  /// machine loaded with the image and the memories that persist; push is
  /// a batch of one, pull is refused (see failure()). Null with `error` set
  /// if the image does not load on `machine` or the layout does not fit it.
  static std::unique_ptr<Engine> emulator(const me::CompiledApp &app,
                                          const EngineOptions &options,
                                          const me::MachineConfig &machine,
                                          std::string &error);

  /// "interpreter", "native", "emulator", "split".
  virtual const char *kind() const = 0;
  /// Threads batches run on, and why fewer than asked (or "").
  virtual unsigned threads() const { return 1; }
  virtual std::string note() const { return {}; }
  /// Why the engine stopped running packets (the emulated machine faulted,
  /// a run was cut short, a request it cannot serve), or "". Once set, the
  /// results of the run that failed and every later one are missing:
  /// clients check it after running and report it as an error.
  virtual std::string failure() const { return {}; }
  /// The emulator's statistics summed over every run so far (null for
  /// engines that do not emulate a machine).
  virtual const me::Stats *emulatorStats() const { return nullptr; }
  /// The native runner (runtime.h: its pipeline statistics), or null.
  virtual const ::netvm_runner *nativeRunner() const { return nullptr; }

  /// Run the init handlers; what they did (exceptions).
  virtual PacketResult initialize() = 0;
  /// Push one packet through source `source`.
  virtual PacketResult push(unsigned source, const TracePacket &packet) = 0;
  /// Push one packet through source `source` with its info memory starting
  /// as `info` (then zeros) instead of zeros: a packet that another engine,
  /// running the NetPEs before this source, hands over (the split engine,
  /// netvm/Runtime/Split.h). Nothing if this engine cannot (the emulator,
  /// native pipelines).
  virtual std::optional<PacketResult>
  pushWithInfo(unsigned source, const TracePacket &packet,
               llvm::ArrayRef<uint8_t> info) {
    (void)source;
    (void)packet;
    (void)info;
    return std::nullopt;
  }
  /// Pull one exchange buffer out of sink `sink`.
  virtual PacketResult pull(unsigned sink) = 0;
  /// Where pulls from sources get their packets.
  virtual void
  setSourcePuller(std::function<std::optional<TracePacket>(unsigned)> fn) = 0;

  /// Push every packet of `packets` through `source`. With `onResult`, each
  /// packet's result is delivered in arrival order at `detail`; without,
  /// only the counters move (the fastest way). The packets' bytes may be
  /// changed in place. The default runs push() per packet.
  virtual void run(unsigned source, llvm::MutableArrayRef<netvm_packet> packets,
                   const ResultFn *onResult = nullptr,
                   ResultDetail detail = ResultDetail::Full);
  /// run() over packets of several sources, `sources[i]` the source of
  /// `packets[i]`: one run for an engine that runs them in one batch (the
  /// emulator), else a run per stretch of packets of one source. Results
  /// are delivered with the packets' indexes in `packets`.
  void runMixed(llvm::ArrayRef<unsigned> sources,
                llvm::MutableArrayRef<netvm_packet> packets,
                const ResultFn *onResult, ResultDetail detail);
  /// Push every packet of `packets` through `source` and deliver only what
  /// leaves, in arrival order. The default collects it from run()'s
  /// results; native code runs whole batches and hands over the buffers.
  virtual void runOutputs(unsigned source,
                          llvm::MutableArrayRef<netvm_packet> packets,
                          const OutputFn &onOutput);
  /// Read packets from `reader` and run them in chunks through `source`
  /// until the input ends (a live capture's read timeout is not an end),
  /// `options.maxPackets` packets, `options.maxMatches` matching ones or
  /// `*options.stop`. With `onPacket`, each packet's result is delivered
  /// with its arrival number (from 1) and the packet as read; with
  /// `options.onOutput`, every output. Packets of a mapped file run where
  /// they are (PacketReader::stableViews). Returns false with `error` set
  /// if reading failed; the packets read before it ran.
  bool runStream(unsigned source, PacketReader &reader,
                 const StreamOptions &options, const StreamFn *onPacket,
                 ResultDetail detail, StreamStats &stats, std::string &error);
  /// The link type (DLT_) of the frames the application takes, which
  /// runStream checks its input against: Ethernet unless the tool says
  /// otherwise (ApplicationOp::linkTypeOrEthernet).
  int linkType = 1;

  virtual llvm::ArrayRef<std::string> sourceNames() const = 0;
  virtual llvm::ArrayRef<std::string> sinkNames() const = 0;
  virtual llvm::ArrayRef<std::string> peNames() const = 0;
  /// A source or sink by name, or nothing.
  std::optional<unsigned> findSource(llvm::StringRef name) const;

  /// Memories of the control plane (of the first replica).
  virtual llvm::MutableArrayRef<uint8_t> dataMemory(unsigned pe) = 0;
  virtual llvm::MutableArrayRef<uint8_t> sharedMemory() = 0;
  /// The instance of coprocessor `name` NetPE `pe` uses (of the first
  /// replica), or null: the emulator keeps its tables in the machine.
  virtual netvm_copro *coprocessor(unsigned pe, llvm::StringRef name) {
    (void)pe;
    (void)name;
    return nullptr;
  }

  /// The control plane of NetPE `pe`'s lookup coprocessor (docs/netil.md
  /// 7.2; the bridge's FIB): its entries, in the table's order (the host
  /// engines share one order, the emulator's is its SRAM table's); delete
  /// the entry of a key (whether there was one); delete the entries older
  /// than `maxAge` at `now` (how many). Nothing when the NetPE has no lookup
  /// table. The default works on coprocessor(pe, "lookup").
  virtual std::optional<std::vector<netvm_lookup_entry>>
  lookupEntries(unsigned pe);
  virtual std::optional<bool> lookupDelete(unsigned pe,
                                           llvm::ArrayRef<uint32_t> key);
  virtual std::optional<uint32_t> lookupAge(unsigned pe, uint32_t now,
                                            uint32_t maxAge);

  virtual Counters counters() const = 0;
  virtual PECounters peCounters(unsigned pe) const = 0;
  virtual SinkCounters sinkCounters(unsigned sink) const = 0;

protected:
  /// An engine that runs packets of several sources in one batch (the ME
  /// emulator: a receive port per source, and one run of the machine per
  /// batch) says so; runStream then keeps a chunk whole across sources and
  /// sets `mixedSources` (a source per packet) before calling run(), whose
  /// `source` argument is then the first packet's.
  virtual bool runsMixedSources() const { return false; }
  std::vector<unsigned> mixedSources;
};

/// Whether an application that takes frames of link type `expected`
/// (libpcap's DLT_; ApplicationOp::linkTypeOrEthernet) can run the packets
/// of `reader`: applications (NetIL assumes Ethernet) read Ethernet frames,
/// and a tcpdump expression reads the link type it was compiled for, so
/// any other link type is refused with `error` naming both, rather than
/// matching nothing. runStream checks it; tools call it to refuse before
/// they start.
bool checkLinkType(const PacketReader &reader, std::string &error,
                   int expected = 1);
/// libpcap's name of a link type and its number: "LINUX_SLL (113)".
std::string linkTypeName(int type);

/// Totals for engines that do not count for themselves: fed every result,
/// it keeps Counters and SinkCounters as the native runtime does.
class Tally {
public:
  explicit Tally(size_t sinks = 0) : sinks(sinks) {}
  void resize(size_t numSinks) { sinks.resize(numSinks); }
  /// `pushed` says whether the result is a packet pushed in.
  void add(const PacketResult &result, bool pushed);
  const Counters &counters() const { return totals; }
  SinkCounters sink(unsigned i) const {
    return i < sinks.size() ? sinks[i] : SinkCounters();
  }

private:
  Counters totals;
  std::vector<SinkCounters> sinks;
};

} // namespace netvm::rt

#endif // NETVM_RUNTIME_ENGINE_H
