//===- SwapConstantByteOrder.cpp - Swap constants, not loaded values ------===//
//
// Packet fields are big-endian; the hosts netvm targets are little-endian,
// so every 16- and 32-bit load pays a byte swap. Where a loaded value only
// meets constants in equality tests, possibly through masks with constants
// (`(ip.flags & 0x1fff) == 0`), the swap can be applied to the constants at
// compile time instead (paper Fig. 8): a byte permutation commutes with
// `&` and preserves `==`. The load becomes `little_endian`.
//
//===----------------------------------------------------------------------===//

#include "NetVM/NetVMPasses.h"
#include "PassUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

#define DEBUG_TYPE "netvm-swap-constant-byte-order"

namespace netvm {
#define GEN_PASS_DEF_NETVMSWAPCONSTANTBYTEORDER
#include "NetVM/NetVMPasses.h.inc"
} // namespace netvm

using namespace mlir;
using namespace netvm;

namespace {

/// Reverse the low `bytes` bytes of `v` (the others must be zero).
uint64_t swapBytes(uint64_t v, unsigned bytes) {
  uint64_t out = 0;
  for (unsigned i = 0; i < bytes; ++i)
    out |= ((v >> (8 * i)) & 0xff) << (8 * (bytes - 1 - i));
  return out;
}

struct SwapConstantByteOrderPass
    : public netvm::impl::NetVMSwapConstantByteOrderBase<
          SwapConstantByteOrderPass> {
  void runOnOperation() override {
    SmallVector<LoadOp> loads;
    getOperation().walk([&](LoadOp load) {
      unsigned bits = load.getType().getIntOrFloatBitWidth();
      if (!load.getLittleEndian() && (bits == 16 || bits == 32))
        loads.push_back(load);
    });
    for (LoadOp load : loads) {
      SmallVector<OpOperand *> constants;
      unsigned bytes = load.getType().getIntOrFloatBitWidth() / 8;
      if (!onlyEqualities(load.getResult(), bytes, constants))
        continue;
      // Swap each constant use (a fresh constant: others may share it).
      for (OpOperand *use : constants) {
        APInt c;
        matchPattern(use->get(), m_ConstantInt(&c));
        OpBuilder b(use->getOwner());
        Value swapped = arith::ConstantIntOp::create(
            b, use->getOwner()->getLoc(), use->get().getType(),
            static_cast<int64_t>(swapBytes(c.getZExtValue(), bytes)));
        use->set(swapped);
      }
      load.setLittleEndian(true);
      NETVM_BUMP(numLoads);
    }
  }

  /// Does `v` (holding the loaded bytes in its low `bytes` bytes) reach
  /// only equality tests with constants, through zero-extensions and masks
  /// with constants? Collects the constant operands to swap.
  bool onlyEqualities(Value v, unsigned bytes,
                      SmallVectorImpl<OpOperand *> &constants) {
    uint64_t fits = bytes == 4 ? 0xFFFFFFFFull : (1ull << (8 * bytes)) - 1;
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (isa<arith::ExtUIOp>(user)) {
        if (!onlyEqualities(user->getResult(0), bytes, constants))
          return false;
        continue;
      }
      if (user->getNumOperands() != 2)
        return false;
      OpOperand &other = user->getOpOperand(1 - use.getOperandNumber());
      APInt c;
      if (!matchPattern(other.get(), m_ConstantInt(&c)))
        return false;
      // A constant with bits beyond the loaded bytes cannot be swapped
      // within them.
      if (c.getZExtValue() & ~fits)
        return false;
      if (auto cmp = dyn_cast<arith::CmpIOp>(user)) {
        if (cmp.getPredicate() != arith::CmpIPredicate::eq &&
            cmp.getPredicate() != arith::CmpIPredicate::ne)
          return false;
        constants.push_back(&other);
        continue;
      }
      if (isa<arith::AndIOp>(user)) {
        constants.push_back(&other);
        if (!onlyEqualities(user->getResult(0), bytes, constants))
          return false;
        continue;
      }
      return false;
    }
    return true;
  }
};

} // namespace
