//===- Split.h - An application split between the MEs and host -*- C++ -*-===//
//
// The split run (docs/applications.md, "Split between the microengines and
// the host"): the NetPEs the microengines can run, a prefix of the NetPE
// graph, compiled for the MEs and run on the emulator; the rest
// JIT-compiled and run on the host; each connection from the first part to
// the second cut into a sink of the first and a source of the second, and
// every packet that leaves the first through such a sink pushed into the
// second with its info memory. The results are the whole application's,
// as any engine reports them.
//
// Two layers: the composite engine (splitEngine) joins any two engines,
// given how their sources and sinks meet, and needs no MLIR; the cut and
// the compilation (planSplit, createSplitEngine, in the NetVMSplit
// library) work on the netvm IR.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_RUNTIME_SPLIT_H
#define NETVM_RUNTIME_SPLIT_H

#include "netvm/Runtime/Engine.h"
#include "netvm/emu/Machine.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace netvm::rt {

/// How the two parts of a split application meet, and what the whole
/// application's sources, sinks and NetPEs are.
struct SplitRoutes {
  /// Where a sink of the head leads: a sink of the whole application, or
  /// (toTail) a source of the tail, the cut connection.
  struct Route {
    bool toTail = false;
    unsigned index = 0;
  };
  std::vector<Route> headSinks;
  /// Per sink of the tail: the sink of the whole application.
  std::vector<unsigned> tailSinks;
  /// The whole application's names in declaration order. Its sources are
  /// the head's, in the same order.
  std::vector<std::string> sources, sinks, pes;
  /// Per NetPE of the whole application: whether the tail runs it, and its
  /// index in the part that does.
  std::vector<std::pair<bool, unsigned>> peHomes;
};

/// An engine that pushes packets into `head` and every packet that leaves
/// it towards the tail into `tail` (with its info memory; null when the
/// head runs every NetPE), reporting one result per packet as if one
/// engine ran the whole application. Null with `error` set if the routes
/// do not fit the engines.
std::unique_ptr<Engine> splitEngine(std::unique_ptr<Engine> head,
                                    std::unique_ptr<Engine> tail,
                                    SplitRoutes routes, std::string &error);

/// Where the split puts each NetPE, and the connections it cuts.
struct SplitPlan {
  std::vector<std::string> head, tail;
  /// "from -> to" of every cut connection.
  std::vector<std::string> cuts;
};

/// Cuts the application of `module` (loaded, not optimized): the head is
/// every NetPE that the microengines can run (no host-only coprocessor, no
/// pull port) and whose every upstream NetPE is in the head too. False with
/// `error` set if no NetPE can go to the MEs, if a source feeds a NetPE of
/// the tail, or if both parts use the shared memory.
bool planSplit(mlir::ModuleOp module, SplitPlan &plan, std::string &error);

struct SplitOptions {
  EngineOptions engine;
  /// The -O level of both parts.
  unsigned optLevel = 2;
  /// The emulated machine and the ME placement of the head, as netvm-run
  /// --me-placement gives it ("" for the default layout).
  me::MachineConfig machine;
  std::string mePlacement;
};

/// The split engine of the application of `module` (loaded, not
/// optimized; it is not changed): the head optimized for the MEs, compiled
/// by the ME back end and run on the emulator, the tail optimized for and
/// JIT-compiled on the host. `plan` says where each NetPE went. Null with
/// `error` set (and the back end's diagnostics emitted on the module's
/// context) if either part cannot be compiled.
std::unique_ptr<Engine> createSplitEngine(mlir::ModuleOp module,
                                          const SplitOptions &options,
                                          SplitPlan &plan, std::string &error);

} // namespace netvm::rt

#endif // NETVM_RUNTIME_SPLIT_H
