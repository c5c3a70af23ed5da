//===- FlowKey.h - State partitioned by a key computed from the packet ---===//
//
// A NetPE whose data memory is partitioned by a flow key may run on several
// host threads or MEs that share its data memory, each packet dealt to the
// replica of its bucket (docs/partitioning.md, "Flow-keyed replicas"). The
// proof:
// every access of data memory by its push handler lies at
//
//     c + stride x bucket(K),   bucket(K) = K & (2^b - 1)  or  K mod n
//
// for one key K (the same value, or the same computation, everywhere), the
// accesses' windows [c, c + width) fitting in `stride` bytes together, and
// K a pure function of the packet's bytes (packet loads, constants,
// arithmetic, hash, CRC), so that packets of different buckets never touch
// the same bytes. Nothing else may carry state between packets: no shared
// memory, coprocessors, random numbers, pull ports, and no writes of the
// packet (the key is computed on the packet as it arrives).
//
// buildFlowKeyHandler clones the key's backward slice into a handler of its
// own (the attribute `netvm.flow_key`), which the native code generator
// compiles into the descriptor's `pe_key` entry and the ME back end into
// the receive MEs' code (docs/me-backend.md, "Dealing by flow key"): it
// writes the bucket into
// the first word of its exchange buffer's info memory, or 0xFFFFFFFF when
// a packet load of the slice would fault (the NetPE then faults before any
// state access, so any replica may run it).
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_ANALYSIS_FLOWKEY_H
#define NETVM_ANALYSIS_FLOWKEY_H

#include "mlir/IR/Value.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir {
class Operation;
class OpBuilder;
} // namespace mlir

namespace netvm {
class PEOp;
class HandlerOp;
} // namespace netvm

namespace netvm::analysis {

struct FlowKeyProof {
  /// The NetPE's state is partitioned by the key.
  bool proved = false;
  /// Why not (empty when proved): e.g. "its data memory address 0 does not
  /// come from a flow key".
  std::string reason;
  /// The key K (before the bucket is taken), the buckets (2^b or n), and
  /// whether the bucket is a mask (else a remainder).
  mlir::Value key;
  uint64_t buckets = 0;
  bool mask = true;
  /// Bytes per bucket, and the accesses' window within it.
  uint64_t stride = 0, first = 0, end = 0;
  /// The operations computing K, operands before users.
  std::vector<mlir::Operation *> slice;
};

/// Decides whether `pe`'s data memory is partitioned by a flow key.
FlowKeyProof proveFlowKey(PEOp pe);

/// Adds to `pe` the key handler of a proof (a push handler with the unit
/// attribute `netvm.flow_key`; the PE verifier refuses a second push
/// handler, so only the back ends call this, on their way to code: the
/// native lowering for the descriptor's pe_key, the ME back end for its
/// receive MEs). With `histogram` it counts the buckets instead: data
/// memory word `bucket` (4 x buckets bytes) is incremented, nothing is
/// written for a packet that would fault (the profile's spread of the
/// packets over the buckets, collectProfile).
HandlerOp buildFlowKeyHandler(PEOp pe, const FlowKeyProof &proof,
                              bool histogram = false);

/// The attribute that marks a key handler.
inline constexpr const char *kFlowKeyAttr = "netvm.flow_key";

} // namespace netvm::analysis

#endif // NETVM_ANALYSIS_FLOWKEY_H
