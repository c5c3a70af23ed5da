//===- Profile.h - Profiling an application for the cost model --*- C++ -*-===//
//
// `netc -emit=partition --profile trace.pcap`: runs an optimized
// application once over a trace and fills a Profile (CostModel.h):
//
//  - on the reference interpreter, the executions of every block and the
//    push handler runs of every NetPE (the block frequencies);
//  - on the target's engine, the cost: on the microengines, the emulator's
//    issue cycles per instruction attributed to each NetPE's code and the
//    receive and transmit MEs' busy cycles per packet; on the host, the
//    time per packet of the JIT-compiled application on one thread, split
//    among the NetPEs as the model's estimates are.
//
// docs/partitioning.md ("Calibration") says how far prediction and
// measurement are apart.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_ANALYSIS_PROFILE_H
#define NETVM_ANALYSIS_PROFILE_H

#include "netvm/Analysis/CostModel.h"

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <string>

namespace netvm::analysis {

struct ProfileOptions {
  CostTarget target = CostTarget::Native;
  /// The trace (pcap, pcapng) pushed into source 0.
  std::string trace;
  /// Packets to run at most (0: the whole trace).
  uint64_t maxPackets = 0;
  /// Measure the cost on the target's engine (false: frequencies only).
  bool measure = true;
  /// Native: the -O level of the JIT; info memory size.
  unsigned optLevel = 2;
  unsigned defaultInfoSize = 64;
};

/// Profiles `module` (an application optimized for `options.target`).
/// False with `error` set if the trace cannot be read or the application
/// not run (an engine refuses it).
bool collectProfile(mlir::ModuleOp module, const ProfileOptions &options,
                    Profile &profile, std::string &error);

} // namespace netvm::analysis

#endif // NETVM_ANALYSIS_PROFILE_H
