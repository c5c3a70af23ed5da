//===- PassUtils.h - What the netvm optimizer passes share ------*- C++ -*-===//
//
// Offsets as a variable base plus a constant, and the questions the memory
// passes ask of an operation: may it write a memory space, may it do
// anything a packet could observe.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_LIB_TRANSFORMS_PASSUTILS_H
#define NETVM_LIB_TRANSFORMS_PASSUTILS_H

#include "NetVM/NetVMOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

#include <cstdint>
#include <optional>

namespace netvm {

/// An offset as `base + constant` (base null: a constant offset), looking
/// through chains of `arith.addi` and `arith.subi` with constants. The sum
/// is taken modulo 2^32, as the IR computes it.
struct SplitOffset {
  mlir::Value base;
  uint32_t constant = 0;
  bool operator==(const SplitOffset &o) const {
    return base == o.base && constant == o.constant;
  }
};
SplitOffset splitOffset(mlir::Value offset);

/// The value `base + constant` at the builder's insertion point (a
/// constant when base is null, the base itself when the constant is 0).
mlir::Value materializeOffset(mlir::OpBuilder &b, mlir::Location loc,
                              const SplitOffset &offset);

/// May `op` write memory `space` (or replace the exchange buffer, for the
/// packet and info memory)? Operations that declare no memory effects and
/// are not pure may write anything.
bool mayWrite(mlir::Operation *op, MemSpace space);

/// Can running `op` be told apart from not running it, other than by an
/// exception of `space`'s bounds check? Pure operations, reads, and bounds
/// checks and in-bounds accesses of `space` cannot.
bool isTransparentFor(mlir::Operation *op, MemSpace space);

/// Does the handler replace its exchange buffer (after which packet and
/// info accesses see another packet)?
bool replacesExchangeBuffer(HandlerOp handler);

/// Add `n` to statistic `stat` of `pass`. Debian's LLVM is built without
/// statistics (llvm::Statistic does nothing in release builds), so netvm
/// also keeps its own counts, which `printPassStatistics` reports (netc
/// prints them for --mlir-pass-statistics).
void bump(mlir::Pass &pass, mlir::Pass::Statistic &stat, const char *member,
          uint64_t n = 1);
#define NETVM_BUMP(stat, ...) ::netvm::bump(*this, stat, #stat, ##__VA_ARGS__)

/// A rewriter listener that counts operations erased by folding or as
/// dead, and successful applications per pattern debug name.
struct CountingListener : public mlir::RewriterBase::Listener {
  void notifyOperationErased(mlir::Operation *) override { ++erased; }
  void notifyPatternEnd(const mlir::Pattern &pattern,
                        mlir::LogicalResult result) override;
  /// Successful applications of patterns whose debug name contains `part`.
  uint64_t applied(llvm::StringRef part) const;
  uint64_t erased = 0;
  llvm::StringMap<uint64_t> byPattern;
};

} // namespace netvm

#endif // NETVM_LIB_TRANSFORMS_PASSUTILS_H
