//===- PassUtils.cpp - What the netvm optimizer passes share --------------===//

#include "PassUtils.h"

#include "NetVM/NetVMPasses.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/FormatVariadic.h"

#include <mutex>

using namespace mlir;
using namespace netvm;

SplitOffset netvm::splitOffset(Value offset) {
  SplitOffset s;
  Value v = offset;
  for (unsigned depth = 0; depth < 16; ++depth) {
    APInt c;
    if (matchPattern(v, m_ConstantInt(&c))) {
      s.constant += static_cast<uint32_t>(c.getZExtValue());
      return s;
    }
    Operation *def = v.getDefiningOp();
    if (auto add = dyn_cast_or_null<arith::AddIOp>(def)) {
      if (matchPattern(add.getRhs(), m_ConstantInt(&c))) {
        s.constant += static_cast<uint32_t>(c.getZExtValue());
        v = add.getLhs();
        continue;
      }
      if (matchPattern(add.getLhs(), m_ConstantInt(&c))) {
        s.constant += static_cast<uint32_t>(c.getZExtValue());
        v = add.getRhs();
        continue;
      }
    }
    if (auto sub = dyn_cast_or_null<arith::SubIOp>(def))
      if (matchPattern(sub.getRhs(), m_ConstantInt(&c))) {
        s.constant -= static_cast<uint32_t>(c.getZExtValue());
        v = sub.getLhs();
        continue;
      }
    break;
  }
  s.base = v;
  return s;
}

Value netvm::materializeOffset(OpBuilder &b, Location loc,
                               const SplitOffset &offset) {
  Type i32 = b.getI32Type();
  Value c = arith::ConstantIntOp::create(
      b, loc, i32, static_cast<int64_t>(static_cast<int32_t>(offset.constant)));
  if (!offset.base)
    return c;
  if (offset.constant == 0)
    return offset.base;
  return arith::AddIOp::create(b, loc, offset.base, c);
}

bool netvm::mayWrite(Operation *op, MemSpace space) {
  if (isa<ExbufCreateOp, ExbufDeleteOp, ReceiveOp>(op))
    return space == MemSpace::Packet || space == MemSpace::Info;
  auto iface = dyn_cast<MemoryEffectOpInterface>(op);
  if (!iface)
    return !isPure(op) && !op->hasTrait<OpTrait::IsTerminator>();
  SmallVector<MemoryEffects::EffectInstance> effects;
  iface.getEffects(effects);
  SideEffects::Resource *resource = getResource(space);
  for (const MemoryEffects::EffectInstance &e : effects)
    if (isa<MemoryEffects::Write, MemoryEffects::Allocate, MemoryEffects::Free>(
            e.getEffect()) &&
        (e.getResource() == resource ||
         isa<SideEffects::DefaultResource>(e.getResource())))
      return true;
  return false;
}

bool netvm::isTransparentFor(Operation *op, MemSpace space) {
  if (auto check = dyn_cast<CheckBoundsOp>(op))
    return check.getSpace() == space;
  if (op->hasTrait<OpTrait::IsTerminator>())
    return false;
  auto iface = dyn_cast<MemoryEffectOpInterface>(op);
  if (!iface)
    return isPure(op);
  SmallVector<MemoryEffects::EffectInstance> effects;
  iface.getEffects(effects);
  return llvm::all_of(effects, [](const MemoryEffects::EffectInstance &e) {
    return isa<MemoryEffects::Read>(e.getEffect());
  });
}

bool netvm::replacesExchangeBuffer(HandlerOp handler) {
  bool replaces = false;
  handler.walk([&](Operation *op) {
    if (isa<ExbufCreateOp, ExbufDeleteOp, ReceiveOp>(op))
      replaces = true;
  });
  return replaces;
}

void CountingListener::notifyPatternEnd(const Pattern &pattern,
                                        LogicalResult result) {
  if (succeeded(result))
    ++byPattern[pattern.getDebugName()];
}

uint64_t CountingListener::applied(llvm::StringRef part) const {
  uint64_t n = 0;
  for (const auto &entry : byPattern)
    if (entry.getKey().contains(part))
      n += entry.getValue();
  return n;
}

namespace {
/// netvm's own statistics, in the order they were first counted.
struct StatisticsRegistry {
  std::mutex mutex;
  std::vector<PassStatistic> entries;
};
StatisticsRegistry &registry() {
  static StatisticsRegistry r;
  return r;
}

/// "numDominatedChecks" -> "dominated checks".
std::string displayName(llvm::StringRef member) {
  member.consume_front("num");
  std::string out;
  for (char c : member) {
    if (std::isupper(static_cast<unsigned char>(c))) {
      if (!out.empty())
        out += ' ';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out;
}
} // namespace

void netvm::bump(Pass &pass, Pass::Statistic &stat, const char *member,
                 uint64_t n) {
  stat += n;
  StatisticsRegistry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::string name = displayName(member);
  llvm::StringRef argument = pass.getArgument();
  for (PassStatistic &e : r.entries)
    if (e.pass == argument && e.name == name) {
      e.value += n;
      return;
    }
  r.entries.push_back({argument.str(), name, n});
}

std::vector<PassStatistic> netvm::takePassStatistics() {
  StatisticsRegistry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return std::exchange(r.entries, {});
}

void netvm::printPassStatistics(llvm::raw_ostream &os) {
  std::vector<PassStatistic> entries = takePassStatistics();
  os << "===" << std::string(73, '-') << "===\n"
     << "                      ... netvm pass statistics ...\n"
     << "===" << std::string(73, '-') << "===\n";
  llvm::StringRef current;
  for (const PassStatistic &e : entries) {
    if (e.pass != current) {
      os << e.pass << "\n";
      current = e.pass;
    }
    os << llvm::formatv("  (S) {0,6} {1}\n", e.value, e.name);
  }
}
