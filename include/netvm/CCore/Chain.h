//===- Chain.h - C-CORE chains across the MEs and the host ------*- C++ -*-===//
//
// The handler manager of the C-CORE layer (docs/ccore.md): a handler's
// NetIL compiled for an ME (the ME back end, default layout: the handler on
// ME 1 between the receive ME 0 and the transmit ME 2) or for the host (the
// JIT), a chain of an ME stage and a host stage run over a stream of
// messages on the emulator, and the hot-swap of the ME stage's code while
// messages flow, through a spare ME or in place, with the emulator's ME
// control (runtime/include/netvm/emu/host.h): fence the old ME off its work
// ring, wait until every message it took has left it, then start the new
// code (preloaded on the spare ME, or loaded into the old ME). Messages
// wait in the work ring meanwhile: none is lost or reordered.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_CCORE_CHAIN_H
#define NETVM_CCORE_CHAIN_H

#include "netvm/CCore/Query.h"
#include "netvm/CCore/Transport.h"
#include "netvm/Runtime/Engine.h"
#include "netvm/Target/ME/AppLayout.h"
#include "netvm/emu/Emulator.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace netvm::ccore {

/// Compiles one handler's NetIL (a single NetPE) for the MEs, default
/// layout, at -O2. False with the diagnostics in `error`.
bool compileForME(const std::string &netil, const std::string &name,
                  const me::MachineConfig &machine, me::CompiledApp &out,
                  std::string &error);

/// Compiles one handler's NetIL for the host: a JIT engine. Null with the
/// diagnostics in `error`.
std::unique_ptr<rt::Engine> compileForHost(const std::string &netil,
                                           const std::string &name,
                                           std::string &error);

/// The same for an application of several handlers (a multicast).
bool compileForME(const HandlerApp &app, const me::MachineConfig &machine,
                  me::CompiledApp &out, std::string &error);
std::unique_ptr<rt::Engine> compileForHost(const HandlerApp &app,
                                           std::string &error);

/// The default layout's rings (docs/me-backend.md, "Placement").
constexpr unsigned freeRing = 0, transmitRing = 1, workRing = 2, copyRing = 3;
/// The ME the default layout runs the handlers on.
constexpr unsigned handlerME = 1;

struct SwapRequest {
  enum class Mode { None, Spare, InPlace };
  Mode mode = Mode::None;
  /// When the switch starts (the fence), in ME cycles.
  uint64_t atCycle = 0;
  /// The new code: an image of the same layout (its handler ME's code is
  /// loaded).
  const me::CompiledApp *next = nullptr;
  /// The idle ME that receives the new code (Spare).
  unsigned spareME = 3;
  /// A pipeline of ME stages (HandlerApp::stages): the stage whose code
  /// is swapped (1, 2, ...; its one ME is fenced off its ring, drained and
  /// replaced). 0: the default layout's handler ME.
  unsigned stage = 0;
  /// Cycles between two looks of the control loop at the old ME's rings.
  uint64_t pollCycles = 60;
};

struct SwapReport {
  bool done = false;
  unsigned oldME = 0, newME = 0;
  /// The host's clock when the new code was loaded (Spare: before the
  /// switch), the fence landed, the old ME was found drained, and the new
  /// code started.
  uint64_t loadedCycle = 0, fenceCycle = 0, drainedCycle = 0, startCycle = 0;
  /// The old ME's last and the new ME's first message taken: the gap is
  /// the downtime the stream sees.
  uint64_t oldLastGet = 0, newFirstGet = 0;
  /// Messages the old ME took.
  uint64_t oldMessages = 0;
  uint64_t downtimeCycles() const {
    return newFirstGet > oldLastGet ? newFirstGet - oldLastGet : 0;
  }
};

/// A reconfiguration in place: a new value for one word of a running
/// handler's data memory (a generic handler's `$` parameter,
/// parameterAddress), without a code change. The control loop fences the
/// handler ME off its work ring, waits until every message it took has
/// left it, writes the word across the host interface, restarts the ME
/// (its contexts may hold the old value, read ahead) and lifts the fence:
/// the messages taken before see the old value, the others the new one,
/// and none is lost or reordered.
struct ParamChange {
  /// When the change starts (the fence), in ME cycles.
  uint64_t atCycle = 0;
  /// The NetPE (declaration order) and the byte offset in its data memory.
  unsigned pe = 0;
  uint32_t offset = 0;
  uint32_t value = 0;
  /// For reports.
  std::string name;
  /// The parameter's name (without `$`): automatic specialization
  /// recompiles with the new value.
  std::string parameter;
};

/// The changes of parameter `name` (without `$`) to `value` at `atCycle`
/// for every handler of `queries` (NetPE order) that has it, appended to
/// `out`. False with `error` if none has it.
bool parameterChanges(const std::vector<Query> &queries,
                      const std::string &name, uint32_t value, uint64_t atCycle,
                      std::vector<ParamChange> &out, std::string &error);

struct ParamReport {
  bool done = false;
  /// The fence, the drain and the write's landing (host clock).
  uint64_t fenceCycle = 0, writtenCycle = 0;
  /// Messages the handler took before the change: they saw the old value.
  uint64_t messagesBefore = 0;
  /// The handler's last message before and first after the change (0:
  /// none came after it).
  uint64_t lastGetBefore = 0, firstGetAfter = 0;
  uint64_t downtimeCycles() const {
    return firstGetAfter > lastGetBefore ? firstGetAfter - lastGetBefore : 0;
  }
};

/// Compiles the ME stage's specialized form with the given parameter
/// values (an image of the same layout as the generic one).
using Specializer =
    std::function<bool(const std::map<std::string, uint32_t> &parameters,
                       me::CompiledApp &out, std::string &error)>;

/// The specializer of a chain's first stage (emitHandlerApp's arguments,
/// `options` with specialize set by it): it compiles for `machine`. The
/// schema must outlive it.
Specializer specializerFor(const Schema &schema,
                           std::optional<std::string> query,
                           std::vector<Subscriber> subscribers,
                           HandlerOptions options,
                           const me::MachineConfig &machine);

/// Automatic specialization (docs/ccore.md, "Automatic specialization"):
/// the control loop watches the generic ME stage; once its format and
/// parameters have been stable for `stableCycles` ME cycles and the
/// handler has taken `stableMessages` messages since the last change
/// (either may be 0), it compiles the specialized form with the current
/// parameter values, loads it on the spare ME and switches to it as a
/// hot-swap through the spare does. A parameter change while the
/// specialized code runs fences it, waits for the drain, writes the new
/// value into the generic handler's data memory and starts the generic
/// code again on its ME (still loaded): the change holds from the first
/// message after it, and the clock of stability starts again.
struct AutoSpecialize {
  bool enabled = false;
  /// Default: 100 us at the IXP2400's 600 MHz.
  uint64_t stableCycles = 60000, stableMessages = 0;
  /// Cycles between two looks of the watcher at the handler's ring counts.
  uint64_t watchCycles = 1000;
  /// The generic form's parameter values at the start.
  std::map<std::string, uint32_t> parameters;
  Specializer specialize;
};

/// What the host control loop does during a run: at most one hot-swap (not
/// with automatic specialization) and any number of reconfigurations, in
/// the order of their cycles.
struct ChainControl {
  SwapRequest swap;
  std::vector<ParamChange> params;
  AutoSpecialize autoSpecialize;
  /// Reliable UDP with retransmission (the ME stage starts with a reliable
  /// reassembler, addReassembler): the messages go through the sender
  /// model at the machine's line rate; what the MEs send to transmit port
  /// 1 is its return path. Not with a swap, reconfiguration or automatic
  /// specialization.
  ReliableOptions reliable;
};

/// One switch of the handler's code that automatic specialization made:
/// to the specialized form, or back to the generic one at a parameter
/// change.
struct AutoSwapReport {
  bool toSpecialized = true;
  SwapReport swap;
  /// Messages the handler took before the switch (over every ME).
  uint64_t messagesBefore = 0;
  /// The host's wall-clock time compiling the specialized form (0: the
  /// image of those values was compiled before; or back to generic). The
  /// emulated clock does not advance meanwhile (docs/ccore.md).
  double compileMilliseconds = 0;
  /// The constants of the specialized form (toSpecialized).
  std::map<std::string, uint32_t> parameters;
};

/// One ME stage of a pipeline of handlers (HandlerApp::stages): its
/// handlers, its ME and the work ring it takes from, and its figures.
/// Every message passes every stage in order (a stage passes on what it
/// did not run), so each stage takes every message received.
struct StageRun {
  std::vector<std::string> pes;
  unsigned me = 0, ring = 0;
  /// Messages it took from its ring; its handlers' runs (the NetPE
  /// counters: the .init run included), sends and drops.
  uint64_t messages = 0, runs = 0, sent = 0, dropped = 0;
  uint64_t busyCycles = 0, instructions = 0;
  /// Busy cycles over the run's cycles.
  double utilization = 0;
  double cyclesPerMessage() const {
    return messages ? double(busyCycles) / double(messages) : 0;
  }
};

struct ChainRun {
  /// What left the chain, in order (after the host stage, if any).
  std::vector<std::vector<uint8_t>> outputs;
  /// What the ME stage transmitted, in order, with the cycle each left
  /// and the number of the input message it came from (~0: untagged).
  std::vector<std::vector<uint8_t>> fromMEs;
  std::vector<uint64_t> fromMEsCycles, fromMEsTags;
  /// The ME stage's handler: runs, sends and drops (its NetPE counters;
  /// of a multicast: the first handler's runs, every handler's sends and
  /// drops summed).
  uint64_t meRuns = 0, meSent = 0, meDropped = 0;
  /// The host stage's drops.
  uint64_t hostDropped = 0;
  /// The emulated run: cycles and microseconds at the machine's clock.
  uint64_t cycles = 0;
  double micros = 0;
  /// With a line rate (MachineConfig::lineRateGbps): per message with an
  /// output, the cycles from its arrival on the wire to its last output
  /// leaving the MEs (the paper's per-message overhead): mean and most.
  double meanLatencyCycles = 0;
  uint64_t maxLatencyCycles = 0, latencyMessages = 0;
  /// The host stage's thread: messages pushed, the time spent in the
  /// pushes (steady clock) and the host's cycle counter over them (the
  /// TSC on x86-64; 0 where no counter is read).
  uint64_t hostMessages = 0, hostNanoseconds = 0, hostCycles = 0;
  SwapReport swap;
  /// Indexed like ChainControl::params.
  std::vector<ParamReport> params;
  /// Automatic specialization's switches, in order.
  std::vector<AutoSwapReport> autoSwaps;
  /// The ME serving the work ring at the end; per ME, the messages it took
  /// from the work ring and the instructions of its code last loaded.
  unsigned handlerME = netvm::ccore::handlerME;
  std::vector<uint64_t> handlerMessages;
  std::vector<uint32_t> codeWords;
  /// With retransmission: the sender's figures and the control messages
  /// the MEs transmitted (the return path, not in `fromMEs`).
  ReliableReport reliable;
  uint64_t controlMessages = 0;
  /// Each NetPE's data memory at the end of the run (ME stage).
  std::vector<std::vector<uint8_t>> dataMemory;
  /// A pipeline's ME stages in order (empty: the default layout). Then
  /// meRuns are the first stage's runs, meSent the last stage's sends and
  /// meDropped every stage's drops.
  std::vector<StageRun> stages;
  me::Stats stats;
};

/// Runs `messages` (at the machine's line rate, or lossless) through the
/// ME stage on a fresh emulator configured as `machine`, with the swap and
/// reconfigurations of `control` during the run, and every message the MEs
/// transmit through `hostStage` (if not null) in order. False with `error` if
/// the images do not fit the machine or each other, or the machine faulted.
bool runChain(const me::CompiledApp &meStage, rt::Engine *hostStage,
              const std::vector<std::vector<uint8_t>> &messages,
              const me::MachineConfig &machine, const ChainControl &control,
              ChainRun &run, std::string &error);

/// Runs `messages` through host stages only (the whole chain on a host
/// thread, JIT code): each message through the first stage, what it sends
/// through the next, and so on; the time and cycles go to the run's host
/// figures. False with `error` if a stage failed.
bool runHostChain(const std::vector<rt::Engine *> &stages,
                  const std::vector<std::vector<uint8_t>> &messages,
                  ChainRun &run, std::string &error);

/// The host's cycle counter (the TSC on x86-64; 0 elsewhere).
uint64_t hostCycleCounter();

/// The resource manager's view of a run (docs/ccore.md, "Resource
/// manager"): per ME its role, control-store use and load; per queue (the
/// scratch rings between the stages, the free-buffer rings) its size and
/// occupancy; per host thread its messages and time.
struct MELoad {
  unsigned me = 0;
  /// receive, handler, transmit, spare (loaded, idle) or idle.
  std::string role;
  uint32_t codeWords = 0, controlStore = 0;
  uint64_t busyCycles = 0, idleCycles = 0, instructions = 0;
  /// Messages it took from the work ring (a handler's).
  uint64_t messages = 0;
  /// A pipeline's stage it runs (1, 2, ...; 0: none, or the default
  /// layout's handler ME).
  unsigned stage = 0;
  /// Busy cycles over the run's cycles.
  double utilization = 0;
};
struct QueueLoad {
  std::string name;
  unsigned ring = 0;
  uint32_t sizeWords = 0, maxOccupancy = 0, finalOccupancy = 0;
  uint64_t puts = 0, gets = 0, overflows = 0;
};
struct HostThreadLoad {
  std::string name;
  uint64_t messages = 0, nanoseconds = 0, cycles = 0;
};
struct ResourceReport {
  uint64_t cycles = 0;
  double clockMHz = 0;
  uint64_t messagesIn = 0, messagesOut = 0, receiveDrops = 0;
  /// The DRAM controller's busy cycles over the run's (packet transfers).
  double dramUtilization = 0;
  std::vector<MELoad> mes;
  std::vector<QueueLoad> queues;
  std::vector<HostThreadLoad> hostThreads;
  /// The hot-swaps of the run: "manual" (SwapRequest), "specialize" or
  /// "generic" (automatic specialization).
  struct Swap {
    std::string kind;
    unsigned oldME = 0, newME = 0;
    uint64_t fenceCycle = 0, startCycle = 0, downtimeCycles = 0;
    uint64_t messagesBefore = 0;
    double compileMilliseconds = 0;
  };
  std::vector<Swap> swaps;
};

/// The report of a run of `meStage` (and `control`'s swap) on `machine`.
ResourceReport resourceReport(const ChainRun &run,
                              const me::CompiledApp &meStage,
                              const ChainControl &control,
                              const me::MachineConfig &machine);
/// The report as one JSON object.
std::string toJSON(const ResourceReport &report);

/// Placement of a new chain's handler (docs/ccore.md, "Placement"): on the
/// MEs if it compiles for them, an idle ME (besides the spare) takes it and
/// the cost model's estimate of its cycles per message fits the budget the
/// rate leaves; else on the host if the host's estimate fits its budget;
/// else refused, with the reason.
struct PlacementRequest {
  /// Offered rate (Gbit/s; 0: no rate to meet) and message size.
  double rateGbps = 0;
  uint32_t messageBytes = 600;
  /// MEs a chain's ME stage needs (receive, handler, transmit; a pipeline
  /// of N handler stages, HandlerApp::stages, needs N + 2 whatever this
  /// says) and whether one more is kept idle for hot-swaps.
  unsigned stageMEs = 3;
  bool keepSpare = true;
  /// MEs other chains already use.
  unsigned busyMEs = 0;
  /// Host threads free for a host stage.
  unsigned freeHostThreads = 1;
  /// False: the host only, or the MEs only (the other side is not tried).
  bool allowME = true, allowHost = true;
};
struct Placement {
  enum class Where { ME, Host, Refused } where = Where::Refused;
  std::string reason;
  /// Budgets per message at the rate (0: no rate), and the estimates.
  double budgetCycles = 0, budgetNanoseconds = 0;
  double meCycles = 0, hostNanoseconds = 0;
  /// The instructions of each ME after the receive ME that runs handlers
  /// (the handler ME, or each stage's of a pipeline), and the largest.
  std::vector<uint32_t> meWords;
  uint32_t codeWords = 0;
  /// MEs the chain holds on the MEs: receive, its handler MEs, transmit.
  unsigned mes = 0;
};
Placement placeChain(const HandlerApp &handler, const PlacementRequest &request,
                     const me::MachineConfig &machine);
const char *whereName(Placement::Where where);

/// The resource manager's table of running chains (docs/ccore.md,
/// "Resource manager"): it keeps every chain it placed with what it holds,
/// places each new chain on what is left (placeChain's rule: the MEs, else
/// the host, else refused with each resource's need and what is free) and
/// frees a chain's resources when it is removed. One ME of the machine is
/// kept idle for hot-swaps (the spare) unless told otherwise; a chain on
/// the MEs holds `stageMEs` MEs (receive, handler, transmit; a pipeline of
/// N handler stages N + 2), one on the host one host thread. The table is
/// bookkeeping: it does not run chains.
struct ChainDemand {
  /// Offered rate (Gbit/s; 0: none) and message size.
  double rateGbps = 0;
  uint32_t messageBytes = 600;
  unsigned stageMEs = 3;
  /// Where the chain may go: auto (the rule), me or host only.
  enum class Side { Auto, ME, Host } side = Side::Auto;
};
struct RunningChain {
  unsigned id = 0;
  std::string name;
  /// What it runs: its handlers (NetPEs) and the query text, for reports.
  unsigned stages = 0;
  std::string description;
  Placement::Where where = Placement::Where::Refused;
  /// The MEs (ascending; the handler ME is the second) or host threads it
  /// holds.
  std::vector<unsigned> mes, hostThreads;
  /// The handler ME's instructions of control store (MEs; a pipeline's:
  /// the largest of its stages', each in meWords in stage order).
  uint32_t codeWords = 0;
  std::vector<uint32_t> meWords;
  double rateGbps = 0;
  /// The cost model's estimate per message on its side, the budget the
  /// rate leaves (0: no rate) and the predicted load: estimate over budget
  /// (the handler ME's or the host thread's share; 0 without a rate).
  double estimate = 0, budget = 0, load = 0;
};
class ResourceManager {
public:
  ResourceManager(const me::MachineConfig &machine, unsigned hostThreads = 2,
                  bool keepSpare = true);
  /// Places `handler` as chain `name` (unique): on success adds it to the
  /// table and returns its placement (`id` gets its number); refused (or a
  /// name in use) leaves the table as it was, with the reason.
  Placement add(const std::string &name, const HandlerApp &handler,
                const ChainDemand &demand, unsigned *id = nullptr,
                const std::string &description = "");
  /// Removes a chain by name and frees what it held; false if unknown.
  bool remove(const std::string &name);
  const std::vector<RunningChain> &chains() const { return table; }
  /// Free MEs (the spare not counted), the spare (or -1), free host
  /// threads.
  unsigned freeMEs() const;
  int spareME() const { return spare; }
  unsigned freeHostThreads() const;
  /// Control store words each ME holds (0: free or spare).
  std::vector<uint32_t> controlStoreUse() const;
  /// The table as text (one line per chain, then the free resources) and as
  /// a JSON object.
  std::string text() const;
  std::string toJSON() const;

private:
  me::MachineConfig machine;
  int spare = -1;
  /// Per ME and host thread, the chain id holding it (0: free).
  std::vector<unsigned> meOwner, threadOwner;
  std::vector<RunningChain> table;
  unsigned nextId = 1;
};

} // namespace netvm::ccore

#endif // NETVM_CCORE_CHAIN_H
