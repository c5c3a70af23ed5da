//===- RegisterAllocation.cpp - Registers for a me.func -------------------===//
//
// Graph colouring over the interference of virtual registers, with the two
// banks of GPRs chosen on a second graph (the pairs of sources each
// instruction reads), transfer registers allocated as contiguous groups for
// the words of a memory command, and local-memory slots for what does not
// fit. docs/me-backend.md ("Register allocation") explains the choices.
//
//===----------------------------------------------------------------------===//

#include "CodeGenInternal.h"

#include "mlir/Analysis/Liveness.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace netvm;
using namespace netvm::me;
namespace med = netvm::medialect;

std::string Reg::name() const {
  switch (kind) {
  case GprA:
    return "a" + std::to_string(index);
  case GprB:
    return "b" + std::to_string(index);
  case XferS:
    return "$" + std::to_string(index);
  case XferD:
    return "$$" + std::to_string(index);
  case LM:
    return "*l$index0[" + std::to_string(index) + "]";
  case None:
    break;
  }
  return "--";
}

Operand Reg::operand() const {
  switch (kind) {
  case GprA:
    return Operand::make(OperandClass::GprA, index);
  case GprB:
    return Operand::make(OperandClass::GprB, index);
  case XferS:
    return Operand::make(OperandClass::XferS, index);
  case XferD:
    return Operand::make(OperandClass::XferD, index);
  case LM:
    return Operand::lm(0, LmMode::Offset, index);
  case None:
    break;
  }
  return Operand::none();
}

Reg netvm::me::fixedArgRegister(StringRef name) {
  if (name == "buffer")
    return {Reg::GprA, 0};
  if (name == "length")
    return {Reg::GprB, 0};
  if (name == "wire")
    return {Reg::GprA, 1};
  if (name == "port")
    return {Reg::GprB, 1};
  return {Reg::GprB, 2}; // tag
}

namespace {

bool allocatable(Value v) {
  Operation *def = v.getDefiningOp();
  return !(def && isa<med::ConstOp, med::ArgOp, med::HeaderOp>(def));
}

/// The pairs of register sources that one instruction reads through its two
/// ports (they want different banks).
SmallVector<std::pair<Value, Value>> sourcePairs(Operation *op) {
  SmallVector<std::pair<Value, Value>> pairs;
  auto add = [&](Value a, Value b) {
    if (a && b && a != b)
      pairs.push_back({a, b});
  };
  if (auto alu = dyn_cast<med::AluOp>(op))
    add(alu.getA(), alu.getB());
  else if (auto br = dyn_cast<med::CmpBrOp>(op))
    add(br.getA(), br.getB());
  else if (auto set = dyn_cast<med::SetCCOp>(op))
    add(set.getA(), set.getB());
  else if (auto sel = dyn_cast<med::SelectOp>(op))
    add(sel.getA(), sel.getB());
  else if (auto align = dyn_cast<med::ByteAlignOp>(op))
    add(align.getA(), align.getB());
  else if (auto mem = dyn_cast<med::MemOp>(op))
    add(mem.getA(), mem.getB());
  else if (auto cam = dyn_cast<med::CamWriteOp>(op))
    add(cam.getEntry(), cam.getTag());
  return pairs;
}

} // namespace

LogicalResult netvm::me::allocateRegisters(med::FuncOp func,
                                           const AllocationOptions &options,
                                           Allocation &result) {
  Liveness liveness(func);
  // Interference and bank-pair graphs over allocatable values.
  DenseMap<Value, llvm::SmallSetVector<Value, 8>> interferes, pairs;
  llvm::SetVector<Value> order;
  auto edge = [&](Value a, Value b) {
    if (a == b || !allocatable(a) || !allocatable(b))
      return;
    interferes[a].insert(b);
    interferes[b].insert(a);
  };
  for (Block &block : func.getBody()) {
    for (BlockArgument arg : block.getArguments())
      order.insert(arg);
    for (Operation &op : block)
      for (Value r : op.getResults())
        if (allocatable(r))
          order.insert(r);
  }
  for (Block &block : func.getBody()) {
    llvm::SmallSetVector<Value, 32> live;
    for (Value v : liveness.getLiveOut(&block))
      if (allocatable(v))
        live.insert(v);
    for (Operation &op : llvm::reverse(block)) {
      for (Value r : op.getResults()) {
        for (Value v : live)
          edge(r, v);
        for (Value other : op.getResults())
          edge(r, other);
      }
      // A select writes its result before it reads the false value.
      if (auto sel = dyn_cast<med::SelectOp>(op))
        edge(sel.getResult(), sel.getFalseValue());
      for (Value r : op.getResults())
        live.remove(r);
      for (Value v : op.getOperands())
        if (allocatable(v))
          live.insert(v);
      // Pairs with a fixed register (an argument) count too.
      for (auto [a, b] : sourcePairs(&op)) {
        if (allocatable(a))
          pairs[a].insert(b);
        if (allocatable(b))
          pairs[b].insert(a);
      }
    }
    for (BlockArgument arg : block.getArguments()) {
      for (Value v : live)
        edge(arg, v);
      for (BlockArgument other : block.getArguments())
        edge(arg, other);
    }
  }

  // Hints: a block argument likes the register of what flows into it.
  DenseMap<Value, SmallVector<Value>> hints;
  func.walk([&](BranchOpInterface branch) {
    for (unsigned s = 0; s < branch->getNumSuccessors(); ++s) {
      Block *dest = branch->getSuccessor(s);
      OperandRange operands =
          branch.getSuccessorOperands(s).getForwardedOperands();
      for (auto [arg, value] : llvm::zip(dest->getArguments(), operands)) {
        hints[arg].push_back(value);
        hints[value].push_back(arg);
      }
    }
  });

  DenseMap<Value, Reg> &regs = result.registers;
  // Transfer register groups first: the words of one command are
  // contiguous.
  for (Value v : order) {
    auto mem = v.getDefiningOp<med::MemOp>();
    if (!mem || regs.count(v))
      continue;
    Reg::Kind kind = mem.getUnit() == "dram" ? Reg::XferD : Reg::XferS;
    unsigned first = kind == Reg::XferD ? options.firstFreeDramXfer : 0;
    unsigned last =
        kind == Reg::XferD ? options.endDramXfer : options.endSramXfer;
    unsigned n = mem.getNumResults();
    std::optional<unsigned> base;
    for (unsigned b = first; b + n <= last && !base; ++b) {
      bool free = true;
      for (Value r : mem.getResults())
        for (Value other : interferes.lookup(r)) {
          auto it = regs.find(other);
          if (it != regs.end() && it->second.kind == kind &&
              it->second.index >= b && it->second.index < b + n)
            free = false;
        }
      if (free)
        base = b;
    }
    if (!base)
      return mem.emitError("the microengine back end ran out of transfer "
                           "registers for this command");
    for (auto [i, r] : llvm::enumerate(mem.getResults()))
      regs[r] = {kind, *base + static_cast<unsigned>(i)};
  }

  auto bankOf = [&](Value v) -> std::optional<Reg::Kind> {
    if (auto arg = v.getDefiningOp<med::ArgOp>())
      return fixedArgRegister(arg.getName()).kind;
    auto it = regs.find(v);
    if (it == regs.end())
      return std::nullopt;
    if (it->second.kind == Reg::GprA || it->second.kind == Reg::GprB)
      return it->second.kind;
    return std::nullopt;
  };
  for (Value v : order) {
    if (regs.count(v))
      continue;
    // Registers the neighbours hold.
    std::set<std::pair<int, unsigned>> taken;
    for (Value other : interferes.lookup(v)) {
      auto it = regs.find(other);
      if (it != regs.end())
        taken.insert({it->second.kind, it->second.index});
    }
    // The bank: away from the partners of its instructions.
    unsigned wantA = 0, wantB = 0;
    for (Value partner : pairs.lookup(v))
      if (auto bank = bankOf(partner))
        (*bank == Reg::GprA ? wantB : wantA)++;
    SmallVector<Reg::Kind, 2> banks;
    if (wantB > wantA)
      banks = {Reg::GprB, Reg::GprA};
    else
      banks = {Reg::GprA, Reg::GprB};
    std::optional<Reg> chosen;
    // A hinted register first (coalescing a copy away).
    for (Value hint : hints.lookup(v)) {
      auto it = regs.find(hint);
      if (it == regs.end() ||
          (it->second.kind != Reg::GprA && it->second.kind != Reg::GprB))
        continue;
      if (!taken.count({it->second.kind, it->second.index}) &&
          (wantA == 0 || wantB == 0 || it->second.kind == banks.front())) {
        chosen = it->second;
        break;
      }
    }
    for (Reg::Kind bank : banks) {
      if (chosen)
        break;
      const SmallVector<unsigned> &pool =
          bank == Reg::GprA ? options.poolA : options.poolB;
      for (unsigned index : pool)
        if (!taken.count({bank, index})) {
          chosen = Reg{bank, index};
          break;
        }
    }
    if (!chosen) {
      for (unsigned slot = 0; slot < options.spillSlots; ++slot)
        if (!taken.count({Reg::LM, slot})) {
          chosen = Reg{Reg::LM, slot};
          ++result.spills;
          break;
        }
    }
    if (!chosen)
      return func.emitError("the microengine back end ran out of registers "
                            "and spill slots for handler '")
             << func.getSymName() << "'";
    regs[v] = *chosen;
  }
  return success();
}
