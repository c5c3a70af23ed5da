//===- FlowKey.cpp - State partitioned by a key computed from the packet -===//
//
// The proof that a NetPE's data memory is partitioned by a flow key, and
// the key handler cloned from it (FlowKey.h, docs/partitioning.md).
//
//===----------------------------------------------------------------------===//

#include "netvm/Analysis/FlowKey.h"

#include "NetVM/NetVMOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

#include <optional>

using namespace mlir;

namespace netvm::analysis {
namespace {

std::optional<uint64_t> constantOf(Value v) {
  APInt value;
  if (matchPattern(v, m_ConstantInt(&value)))
    return value.getZExtValue();
  return std::nullopt;
}

bool isPowerOfTwo(uint64_t v) { return v && !(v & (v - 1)); }

/// An address as `c + stride x bucket(key)` (no key: a constant).
struct Address {
  Value key;
  bool mask = true;
  uint64_t buckets = 0, stride = 0, c = 0;
};

/// Decomposes `v`; false with `why` when it has another form.
bool decompose(Value v, Address &a, std::string &why) {
  if (std::optional<uint64_t> c = constantOf(v)) {
    a = Address();
    a.c = *c;
    return true;
  }
  Operation *op = v.getDefiningOp();
  auto bothConstant = [&](Value x, Value y, Value &other, uint64_t &k) {
    if (std::optional<uint64_t> c = constantOf(y)) {
      other = x;
      k = *c;
      return true;
    }
    if (std::optional<uint64_t> c = constantOf(x)) {
      other = y;
      k = *c;
      return true;
    }
    return false;
  };
  if (auto add = dyn_cast_or_null<arith::AddIOp>(op)) {
    Address x, y;
    if (!decompose(add.getLhs(), x, why) || !decompose(add.getRhs(), y, why))
      return false;
    if (x.key && y.key) {
      why = "adds two values computed from the packet";
      return false;
    }
    a = x.key ? x : y;
    a.c = x.c + y.c;
    return true;
  }
  Value other;
  uint64_t k = 0;
  if (auto orOp = dyn_cast_or_null<arith::OrIOp>(op);
      orOp && bothConstant(orOp.getLhs(), orOp.getRhs(), other, k)) {
    // x | k is x + k when k lies below x's lowest possibly set bit.
    if (!decompose(other, a, why))
      return false;
    if (a.key && a.c == 0 && k < (a.stride & -a.stride)) {
      a.c = k;
      return true;
    }
    why = "ors a constant into bits the bucket may use";
    return false;
  }
  auto scale = [&](Value x, uint64_t factor) {
    if (!decompose(x, a, why))
      return false;
    a.stride *= factor;
    a.c *= factor;
    if (a.stride >= (1ull << 32) || a.c >= (1ull << 32)) {
      why = "scales the bucket beyond 32 bits";
      return false;
    }
    return true;
  };
  if (auto mul = dyn_cast_or_null<arith::MulIOp>(op);
      mul && bothConstant(mul.getLhs(), mul.getRhs(), other, k))
    return scale(other, k);
  if (auto shl = dyn_cast_or_null<arith::ShLIOp>(op)) {
    std::optional<uint64_t> s = constantOf(shl.getRhs());
    if (s && *s < 32)
      return scale(shl.getLhs(), 1ull << *s);
  }
  if (auto rem = dyn_cast_or_null<arith::RemUIOp>(op)) {
    std::optional<uint64_t> n = constantOf(rem.getRhs());
    if (n && *n > 0) {
      a = Address();
      a.key = rem.getLhs();
      a.mask = false;
      a.buckets = *n;
      a.stride = 1;
      return true;
    }
  }
  if (auto andOp = dyn_cast_or_null<arith::AndIOp>(op);
      andOp && bothConstant(andOp.getLhs(), andOp.getRhs(), other, k) && k) {
    // (x << s) & ((2^b - 1) << s) is (x & (2^b - 1)) << s.
    unsigned s = llvm::countr_zero(k);
    uint64_t m = k >> s;
    if (isPowerOfTwo(m + 1)) {
      Value x = other;
      if (s) {
        Operation *inner = other.getDefiningOp();
        std::optional<uint64_t> amount;
        if (auto shl = dyn_cast_or_null<arith::ShLIOp>(inner))
          amount = constantOf(shl.getRhs());
        if (auto mul = dyn_cast_or_null<arith::MulIOp>(inner))
          if (std::optional<uint64_t> f = constantOf(mul.getRhs());
              f && isPowerOfTwo(*f))
            amount = llvm::countr_zero(*f);
        if (!amount || *amount != s) {
          why = "masks a value that is not shifted by the mask's zeros";
          return false;
        }
        x = inner->getOperand(0);
      }
      a = Address();
      a.key = x;
      a.mask = true;
      a.buckets = m + 1;
      a.stride = 1ull << s;
      return true;
    }
  }
  why = "is not c + stride x (key & mask) or (key mod n)";
  return false;
}

/// Whether two values compute the same thing (the same value, or the same
/// operations on the same operands: copies made by versioning).
bool sameComputation(Value x, Value y, unsigned depth = 0) {
  if (x == y)
    return true;
  if (depth > 64)
    return false;
  Operation *a = x.getDefiningOp(), *b = y.getDefiningOp();
  if (!a || !b || a->getName() != b->getName() ||
      a->getNumOperands() != b->getNumOperands() || a->getNumRegions() ||
      b->getNumRegions() ||
      cast<OpResult>(x).getResultNumber() !=
          cast<OpResult>(y).getResultNumber() ||
      x.getType() != y.getType())
    return false;
  // Attributes, but for the bounds-check marks and what the optimizer
  // records of a version (netvm.min_packet_length).
  auto attrs = [](Operation *op) {
    SmallVector<NamedAttribute> list;
    for (NamedAttribute n : op->getAttrs())
      if (n.getName() != "in_bounds" &&
          !n.getName().getValue().starts_with("netvm."))
        list.push_back(n);
    return list;
  };
  if (attrs(a) != attrs(b))
    return false;
  for (auto [p, q] : llvm::zip(a->getOperands(), b->getOperands()))
    if (!sameComputation(p, q, depth + 1))
      return false;
  return true;
}

/// Collects the backward slice of `key` (operands first) if it is a pure
/// function of the packet's bytes; else `why`.
bool collectSlice(Value key, std::vector<Operation *> &slice,
                  std::string &why) {
  llvm::DenseSet<Operation *> seen;
  std::function<bool(Value)> visit = [&](Value v) -> bool {
    Operation *op = v.getDefiningOp();
    if (!op) {
      why = "the key depends on a value merged from several paths (a block "
            "argument: a loop, or a local set on several paths)";
      return false;
    }
    if (!seen.insert(op).second)
      return true;
    if (auto load = dyn_cast<LoadOp>(op)) {
      if (load.getSpace() != MemSpace::Packet) {
        why = "the key reads " + stringifyMemSpace(load.getSpace()).str() +
              " memory";
        return false;
      }
    } else if (isa<PacketLengthOp>(op)) {
    } else if (isa<arith::DivUIOp, arith::RemUIOp, arith::DivSIOp,
                   arith::RemSIOp>(op)) {
      std::optional<uint64_t> d = constantOf(op->getOperand(1));
      if (!d || *d == 0 || *d == 0xFFFFFFFFu) {
        why = "the key divides by a value that may be zero";
        return false;
      }
    } else if (op->getDialect() != nullptr &&
               (op->getDialect()->getNamespace() == "arith" ||
                isa<HashOp, CrcOp, ByteSwapOp, FindBitOp, BitOp, ChecksumAddOp,
                    ChecksumSubOp>(op))) {
      if (!isMemoryEffectFree(op) || op->getNumRegions()) {
        why = "the key uses '" + op->getName().getStringRef().str() + "'";
        return false;
      }
    } else {
      why = "the key uses '" + op->getName().getStringRef().str() +
            "' (not a pure function of packet bytes the key function can "
            "compute)";
      return false;
    }
    for (Value operand : op->getOperands())
      if (!visit(operand))
        return false;
    slice.push_back(op);
    return true;
  };
  return visit(key);
}

std::string describe(Operation *op) {
  std::string s = op->getName().getStringRef().str();
  if (auto loc = dyn_cast<FileLineColLoc>(op->getLoc()))
    s += " at " + loc.getFilename().str() + ":" +
         std::to_string(loc.getLine()) + ":" + std::to_string(loc.getColumn());
  return s;
}

} // namespace

FlowKeyProof proveFlowKey(PEOp pe) {
  FlowKeyProof proof;
  auto refuse = [&](std::string why) {
    proof.proved = false;
    proof.reason = std::move(why);
    return proof;
  };
  for (PortOp port : pe.getPorts())
    if (!port.isPush())
      return refuse("has pull ports");
  HandlerOp push = pe.getHandler(HandlerKind::Push);
  if (!push)
    return refuse("has no push handler");

  struct Access {
    Operation *op;
    Value offset;
    uint64_t width;
  };
  std::vector<Access> accesses;
  std::string why;
  WalkResult walk = push.walk([&](Operation *op) {
    auto space = [&](MemSpace s, Value offset, uint64_t width, bool write) {
      if (s == MemSpace::Shared) {
        why = "uses shared memory";
        return false;
      }
      if (s == MemSpace::Packet && write) {
        why = "writes the packet (its key is computed on the packet as it "
              "arrives)";
        return false;
      }
      if (s == MemSpace::Data)
        accesses.push_back({op, offset, width});
      return true;
    };
    bool ok = true;
    if (auto ld = dyn_cast<LoadOp>(op))
      ok = space(ld.getSpace(), ld.getOffset(),
                 ld.getType().getIntOrFloatBitWidth() / 8, false);
    else if (auto st = dyn_cast<StoreOp>(op))
      ok = space(st.getSpace(), st.getOffset(),
                 st.getValue().getType().getIntOrFloatBitWidth() / 8, true);
    else if (auto at = dyn_cast<AtomicAddOp>(op))
      ok = space(at.getSpace(), at.getOffset(), 4, true);
    else if (auto cp = dyn_cast<CopyOp>(op)) {
      std::optional<uint64_t> length = constantOf(cp.getLength());
      bool data = cp.getSrcSpace() == MemSpace::Data ||
                  cp.getDstSpace() == MemSpace::Data;
      if (data && !length) {
        why = "copies a length not known at compile time to or from its data "
              "memory (" +
              describe(op) + ")";
        ok = false;
      } else {
        ok = space(cp.getSrcSpace(), cp.getSrc(), length.value_or(0), false) &&
             space(cp.getDstSpace(), cp.getDst(), length.value_or(0), true);
      }
    } else if (isa<RandomOp>(op)) {
      why = "draws random numbers";
      ok = false;
    } else if (isa<CoproInvokeOp, CoproInitOp, CoproWriteOp, CoproReadOp,
                   CoproExbufOp>(op)) {
      why = "uses coprocessors";
      ok = false;
    } else if (isa<ExbufCreateOp, ExbufDeleteOp, ReceiveOp>(op)) {
      why = "replaces its exchange buffer";
      ok = false;
    }
    return ok ? WalkResult::advance() : WalkResult::interrupt();
  });
  if (walk.wasInterrupted())
    return refuse(why);
  if (accesses.empty())
    return refuse("keeps no state in its data memory");

  Address first;
  bool haveKey = false;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const Access &a : accesses) {
    Address addr;
    if (!decompose(a.offset, addr, why))
      return refuse("its data memory address (" + describe(a.op) + ") " + why);
    if (!addr.key)
      return refuse("its data memory address " + std::to_string(addr.c) + " (" +
                    describe(a.op) +
                    ") does not come from a flow key: every packet uses it");
    if (!haveKey) {
      first = addr;
      haveKey = true;
    } else if (!sameComputation(first.key, addr.key)) {
      return refuse("its data memory accesses use different keys (" +
                    describe(a.op) + ")");
    } else if (first.mask != addr.mask || first.buckets != addr.buckets ||
               first.stride != addr.stride) {
      return refuse("its data memory accesses take buckets of different "
                    "sizes (" +
                    describe(a.op) + ")");
    }
    lo = std::min(lo, addr.c);
    hi = std::max(hi, addr.c + a.width);
  }
  if (hi - lo > first.stride)
    return refuse("its accesses span " + std::to_string(hi - lo) +
                  " bytes of a bucket of " + std::to_string(first.stride) +
                  ": neighbouring buckets overlap");
  if (first.buckets * first.stride + hi > (1ull << 32))
    return refuse("its buckets wrap around 32-bit addresses");
  if (!collectSlice(first.key, proof.slice, why))
    return refuse(why);
  proof.proved = true;
  proof.key = first.key;
  proof.buckets = first.buckets;
  proof.mask = first.mask;
  proof.stride = first.stride;
  proof.first = lo;
  proof.end = hi;
  return proof;
}

HandlerOp buildFlowKeyHandler(PEOp pe, const FlowKeyProof &proof,
                              bool histogram) {
  MLIRContext *ctx = pe.getContext();
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(pe.getBodyBlock());
  Location loc = proof.key.getLoc();
  auto handler = HandlerOp::create(b, loc, HandlerKind::Push);
  handler->setAttr(kFlowKeyAttr, b.getUnitAttr());
  Region &body = handler.getBody();
  Block *block = &body.front();
  Type i32 = b.getI32Type();

  // The bucket goes to info memory word 0; 0xFFFFFFFF when the slice would
  // fault.
  Block *fallback = new Block();
  body.push_back(fallback);
  {
    OpBuilder fb = OpBuilder::atBlockEnd(fallback);
    if (!histogram) {
      Value none = arith::ConstantIntOp::create(fb, loc, i32, -1);
      Value zero = arith::ConstantIntOp::create(fb, loc, i32, 0);
      StoreOp::create(fb, loc, none, MemSpace::Info, zero, /*in_bounds=*/true);
    }
    RetOp::create(fb, loc);
  }

  b.setInsertionPointToEnd(block);
  Value length = PacketLengthOp::create(b, loc, i32);
  IRMapping map;
  for (Operation *op : proof.slice) {
    if (auto load = dyn_cast<LoadOp>(op)) {
      // offset <= length && width <= length - offset, or the fallback.
      Value offset = map.lookupOrDefault(load.getOffset());
      uint64_t width = load.getType().getIntOrFloatBitWidth() / 8;
      Value w = arith::ConstantIntOp::create(b, loc, i32, width);
      Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule,
                                           offset, length);
      Value room = arith::SubIOp::create(b, loc, length, offset);
      Value fits =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, w, room);
      Value ok = arith::AndIOp::create(b, loc, inside, fits);
      Block *next = new Block();
      body.push_back(next);
      cf::CondBranchOp::create(b, loc, ok, next, fallback);
      b.setInsertionPointToEnd(next);
      Operation *clone = b.clone(*op, map);
      clone->setAttr("in_bounds", b.getUnitAttr());
      for (NamedAttribute n : llvm::to_vector(clone->getAttrs()))
        if (n.getName().getValue().starts_with("netvm."))
          clone->removeAttr(n.getName());
      continue;
    }
    b.clone(*op, map);
  }
  Value key = map.lookupOrDefault(proof.key);
  Value n = arith::ConstantIntOp::create(
      b, loc, i32, proof.mask ? proof.buckets - 1 : proof.buckets);
  Value bucket = proof.mask ? Value(arith::AndIOp::create(b, loc, key, n))
                            : Value(arith::RemUIOp::create(b, loc, key, n));
  if (histogram) {
    // Data memory word `bucket` counts the bucket's packets.
    Value four = arith::ConstantIntOp::create(b, loc, i32, 4);
    Value at = arith::MulIOp::create(b, loc, bucket, four);
    Value count = LoadOp::create(b, loc, i32, MemSpace::Data, at,
                                 /*in_bounds=*/true, /*little_endian=*/false);
    Value one = arith::ConstantIntOp::create(b, loc, i32, 1);
    Value more = arith::AddIOp::create(b, loc, count, one);
    StoreOp::create(b, loc, more, MemSpace::Data, at, /*in_bounds=*/true);
    RetOp::create(b, loc);
    return handler;
  }
  Value zero = arith::ConstantIntOp::create(b, loc, i32, 0);
  StoreOp::create(b, loc, bucket, MemSpace::Info, zero, /*in_bounds=*/true);
  RetOp::create(b, loc);
  return handler;
}

} // namespace netvm::analysis
