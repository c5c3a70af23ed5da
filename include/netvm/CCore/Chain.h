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

#include "netvm/Runtime/Engine.h"
#include "netvm/Target/ME/AppLayout.h"
#include "netvm/emu/Emulator.h"

#include <cstdint>
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

/// The default layout's rings (docs/me-backend.md, "Placement").
constexpr unsigned freeRing = 0, transmitRing = 1, workRing = 2;
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

struct ChainRun {
  /// What left the chain, in order (after the host stage, if any).
  std::vector<std::vector<uint8_t>> outputs;
  /// What the ME stage transmitted, in order.
  std::vector<std::vector<uint8_t>> fromMEs;
  /// The ME stage's handler: runs, sends and drops (its NetPE counters).
  uint64_t meRuns = 0, meSent = 0, meDropped = 0;
  /// The host stage's drops.
  uint64_t hostDropped = 0;
  /// The emulated run: cycles and microseconds at the machine's clock.
  uint64_t cycles = 0;
  double micros = 0;
  SwapReport swap;
  me::Stats stats;
};

/// Runs `messages` (at the wire's pace: lossless input) through the ME
/// stage on a fresh emulator configured as `machine`, with `swap` during
/// the run, and every message the MEs transmit through `hostStage` (if not
/// null) in order. False with `error` if the images do not fit the machine
/// or each other, or the machine faulted.
bool runChain(const me::CompiledApp &meStage, rt::Engine *hostStage,
              const std::vector<std::vector<uint8_t>> &messages,
              const me::MachineConfig &machine, const SwapRequest &swap,
              ChainRun &run, std::string &error);

} // namespace netvm::ccore

#endif // NETVM_CCORE_CHAIN_H
