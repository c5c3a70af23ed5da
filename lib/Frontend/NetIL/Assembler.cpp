//===- Assembler.cpp - NetIL stack code to netvm SSA
//--------------------------===//
//
// Turns a parsed NetIL program into a `netvm.pe`:
//
//  1. the control-flow graph of each code segment (basic blocks split at
//     labels and after branches);
//  2. the static checks of the NetVM paper (section 3.3): unknown labels,
//     ports and coprocessors, stack underflow, depth beyond .maxstacksize,
//     different depths where paths merge, paths that run off the end of a
//     segment, reads of uninitialised locals, constant-offset accesses
//     outside a declared memory;
//  3. SSA construction: stack slots and locals are variables, converted with
//     the algorithm of Braun et al. ("Simple and Efficient Construction of
//     Static Single Assignment Form", CC 2013); phis become block arguments
//     and trivial ones are removed, so stack shuffling and locals leave no
//     trace in the IR.
//
//===----------------------------------------------------------------------===//

#include "netvm/Frontend/NetIL.h"

#include "AST.h"
#include "Diags.h"
#include "Parser.h"

#include "NetVM/NetVMOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace netvm;
using namespace netvm::netil;
using llvm::SMLoc;

namespace {

/// How a basic block ends.
struct Exit {
  enum Kind { Jump, CondBr, Switch, Send, Drop, Ret, Trap } kind = Jump;
  Location loc;
  Value condition;                                  // CondBr, Switch selector
  unsigned target = 0, other = 0;                   // Jump/CondBr(true, false)
  SmallVector<std::pair<uint32_t, unsigned>> cases; // Switch
  std::string port;                                 // Send
  ExceptionKind trap = ExceptionKind::Exit;         // Trap
  explicit Exit(Location loc) : loc(loc) {}
};

struct BasicBlock {
  unsigned begin = 0, end = 0; // instruction range [begin, end)
  SmallVector<unsigned, 2> succs;
  SmallVector<unsigned, 2> preds;
  int entryDepth = -1;
  bool reachable = false;
  Block *block = nullptr;
  bool filled = false, sealed = false;
  DenseMap<unsigned, Value> defs; // variable -> current value at block end
  SmallVector<std::pair<unsigned, BlockArgument>> incompletePhis;
  std::optional<Exit> exit;
};

/// Variables of the SSA construction: stack slot `i` (counted from the
/// bottom) and local `n`.
inline unsigned stackVar(unsigned slot) { return 2 * slot; }
inline unsigned localVar(unsigned local) { return 2 * local + 1; }

class HandlerBuilder {
public:
  HandlerBuilder(Diags &diags, Program &prog, const Handler &h, PEOp pe)
      : diags(diags), prog(prog), h(h), pe(pe), builder(pe.getContext()) {}

  /// Build the handler op at the end of the NetPE body. Returns failure
  /// after reporting errors.
  LogicalResult build();

private:
  // CFG and checks.
  LogicalResult buildCFG();
  LogicalResult analyzeStack();
  void checkLocals();
  std::optional<unsigned> resolveLabel(const std::string &name, SMLoc loc);

  // SSA construction.
  Value readVariable(unsigned var, unsigned bb);
  Value readVariableRecursive(unsigned var, unsigned bb);
  void writeVariable(unsigned var, unsigned bb, Value value) {
    blocks[bb].defs[var] = value;
  }
  BlockArgument newPhi(unsigned bb);
  void addPhiOperands(unsigned var, BlockArgument phi, unsigned bb);
  void sealBlock(unsigned bb);
  Value resolve(Value v);
  void finalizePhis();
  void emitTerminators();
  Value initialValue(unsigned var);

  // Instruction translation.
  LogicalResult fillBlock(unsigned bb);
  LogicalResult translate(const Instr &instr, unsigned bb, unsigned index);
  Value constant(uint32_t value);
  Value pop(unsigned bb);
  Value peekAt(unsigned bb, unsigned fromTop);
  void setAt(unsigned fromTop, Value v) {
    stack[stack.size() - 1 - fromTop] = v;
  }
  void push(Value v) { stack.push_back(v); }
  void drop(unsigned n) { stack.resize(stack.size() - n); }
  bool requireExchangeBuffer(const Instr &instr);
  bool requireCoprocessor(const Instr &instr);
  PortOp requirePort(const Instr &instr, PortKind kind);

  Diags &diags;
  Program &prog;
  const Handler &h;
  PEOp pe;
  OpBuilder builder;
  HandlerOp handlerOp;

  std::vector<BasicBlock> blocks;
  std::vector<unsigned> blockOf;     // first instruction index -> block id
  unsigned entry = 0;                // id of the entry block
  std::vector<unsigned> labelTarget; // per instruction: resolved target block

  // Per-block translation state.
  SmallVector<Value> stack; // null: slot not read yet from the predecessors
  Location curLoc = UnknownLoc::get(pe.getContext());

  // Keyed by uint64_t: 0xFFFFFFFF is DenseMap's empty key for uint32_t.
  DenseMap<uint64_t, Value> constants;
  Operation *lastConstant = nullptr;
  Value zero; // initial value of locals

  // Phi bookkeeping: operands per predecessor, in `preds` order.
  llvm::MapVector<BlockArgument, SmallVector<Value, 4>> phiOperands;
  DenseMap<BlockArgument, unsigned> phiBlock;
  DenseMap<Value, Value> replacement;
};

} // namespace

//===----------------------------------------------------------------------===//
// CFG and static checks
//===----------------------------------------------------------------------===//

static StringRef segmentName(HandlerKind kind) {
  switch (kind) {
  case HandlerKind::Init:
    return ".init";
  case HandlerKind::Push:
    return ".push";
  case HandlerKind::Pull:
    return ".pull";
  }
  return "";
}

std::optional<unsigned> HandlerBuilder::resolveLabel(const std::string &name,
                                                     SMLoc loc) {
  auto it = h.labels.find(name);
  if (it == h.labels.end()) {
    auto diag = diags.error(loc) << "jump to unknown label '" << name << "'";
    StringRef best;
    unsigned bestDistance = 3;
    for (const auto &entry : h.labels) {
      unsigned d = StringRef(name).edit_distance(entry.getKey(), true, 3);
      if (d < bestDistance) {
        bestDistance = d;
        best = entry.getKey();
      }
    }
    if (!best.empty())
      diag << "; did you mean '" << best << "'?";
    return std::nullopt;
  }
  return it->second;
}

LogicalResult HandlerBuilder::buildCFG() {
  const std::vector<Instr> &code = h.code;
  size_t n = code.size();
  // Leaders: the first instruction, every label target, every instruction
  // after a branch or an instruction that ends the flow.
  llvm::BitVector leader(n + 1);
  leader.set(0);
  leader.set(n);
  for (const auto &entry : h.labels)
    leader.set(entry.getValue());
  for (size_t i = 0; i < n; ++i)
    if (code[i].isBranch() || code[i].endsFlow())
      leader.set(i + 1);

  blockOf.assign(n + 1, ~0u);
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (!leader.test(j))
      ++j;
    BasicBlock bb;
    bb.begin = i;
    bb.end = j;
    blockOf[i] = blocks.size();
    blocks.push_back(std::move(bb));
    i = j;
  }
  // A virtual block for "past the end of the segment".
  unsigned endBlock = blocks.size();
  blockOf[n] = endBlock;
  {
    BasicBlock bb;
    bb.begin = bb.end = n;
    blocks.push_back(std::move(bb));
  }

  bool ok = true;
  labelTarget.assign(n, ~0u);
  auto target = [&](const std::string &name, SMLoc loc) -> unsigned {
    std::optional<unsigned> index = resolveLabel(name, loc);
    if (!index) {
      ok = false;
      return ~0u;
    }
    return blockOf[*index];
  };
  for (unsigned b = 0; b + 1 < blocks.size(); ++b) {
    BasicBlock &bb = blocks[b];
    const Instr &last = code[bb.end - 1];
    unsigned fallthrough = blockOf[bb.end];
    SmallVector<unsigned, 4> succs;
    switch (last.op()) {
    case Opcode::JUMP:
    case Opcode::JUMPW:
      succs.push_back(target(last.name, last.nameLoc));
      break;
    case Opcode::SWITCH:
      for (const SwitchCase &c : last.cases)
        succs.push_back(target(c.label, c.loc));
      succs.push_back(last.defaultCase ? target(last.defaultCase->label,
                                                last.defaultCase->loc)
                                       : fallthrough);
      break;
    case Opcode::RET:
    case Opcode::SNDPKT:
    case Opcode::EXIT:
      break;
    default:
      if (last.isBranch()) {
        succs.push_back(target(last.name, last.nameLoc));
        labelTarget[bb.end - 1] = succs.back();
      }
      succs.push_back(fallthrough);
      break;
    }
    for (unsigned s : succs) {
      if (s == ~0u)
        continue;
      if (!llvm::is_contained(bb.succs, s))
        bb.succs.push_back(s);
    }
  }
  return success(ok);
}

LogicalResult HandlerBuilder::analyzeStack() {
  const std::vector<Instr> &code = h.code;
  unsigned endBlock = blocks.size() - 1;
  unsigned initialDepth = h.kind == HandlerKind::Init ? 0 : 1;
  uint32_t limit = h.maxStack.value_or(0);
  bool ok = true;
  // Where each block's entry depth was first established, for notes.
  DenseMap<unsigned, SMLoc> depthOrigin;

  SmallVector<unsigned> worklist;
  blocks[0].entryDepth = initialDepth;
  blocks[0].reachable = true;
  depthOrigin[0] = h.loc;
  worklist.push_back(0);
  while (!worklist.empty()) {
    unsigned b = worklist.pop_back_val();
    BasicBlock &bb = blocks[b];
    if (b == endBlock)
      continue;
    int depth = bb.entryDepth;
    bool blockOk = true;
    for (unsigned i = bb.begin; i < bb.end && blockOk; ++i) {
      const Instr &instr = code[i];
      if (limit && static_cast<uint32_t>(depth) >= limit) {
        diags.error(instr.loc)
            << "stack depth " << depth << " reaches .maxstacksize " << limit
            << " before '" << instr.info->mnemonic
            << "' (the depth must stay below the declared maximum)";
        ok = blockOk = false;
        break;
      }
      auto [pops, pushes] = instr.stackEffect();
      if (static_cast<int>(pops) > depth) {
        diags.error(instr.loc)
            << "stack underflow: '" << instr.info->mnemonic << "' needs "
            << pops << " value(s) but the stack holds " << depth;
        ok = blockOk = false;
        break;
      }
      depth += static_cast<int>(pushes) - static_cast<int>(pops);
    }
    if (!blockOk)
      continue;
    SMLoc exitLoc = code[bb.end - 1].loc;
    for (unsigned s : bb.succs) {
      BasicBlock &succ = blocks[s];
      if (s == endBlock) {
        diags.error(exitLoc)
            << "execution can run past the end of the " << segmentName(h.kind)
            << " segment here; end every path with 'ret' or 'pkt.send'";
        ok = false;
        continue;
      }
      if (succ.entryDepth < 0) {
        succ.entryDepth = depth;
        succ.reachable = true;
        depthOrigin[s] = exitLoc;
        worklist.push_back(s);
      } else if (succ.entryDepth != depth) {
        auto diag = diags.error(exitLoc)
                    << "stack depth differs where paths merge: " << depth
                    << " value(s) on this path, " << succ.entryDepth
                    << " on another";
        diag.attachNote(diags.loc(depthOrigin[s]))
            << "the other path comes from here";
        diag.attachNote(diags.loc(code[succ.begin].loc))
            << "the paths merge here";
        ok = false;
      }
    }
  }
  return success(ok);
}

void HandlerBuilder::checkLocals() {
  const std::vector<Instr> &code = h.code;
  unsigned numLocals = h.locals.value_or(0);
  unsigned nblocks = blocks.size();
  // Range check first.
  for (const BasicBlock &bb : blocks) {
    if (!bb.reachable)
      continue;
    for (unsigned i = bb.begin; i < bb.end; ++i) {
      const Instr &instr = code[i];
      if (instr.op() != Opcode::LOCLD && instr.op() != Opcode::LOCST)
        continue;
      if (instr.imm >= numLocals) {
        auto diag = diags.error(instr.loc)
                    << "local " << instr.imm << " is out of range: the "
                    << segmentName(h.kind) << " segment declares " << numLocals
                    << " local(s)";
        if (h.locals)
          diag.attachNote(diags.loc(h.localsLoc)) << "declared here";
        else
          diag << " (add a .locals directive)";
      }
    }
  }
  if (numLocals == 0)
    return;
  // Forward data flow: locals definitely (must) and possibly (may) written.
  std::vector<llvm::BitVector> mustIn(nblocks,
                                      llvm::BitVector(numLocals, true)),
      mayIn(nblocks, llvm::BitVector(numLocals));
  auto transfer = [&](unsigned b, llvm::BitVector set) {
    for (unsigned i = blocks[b].begin; i < blocks[b].end; ++i)
      if (code[i].op() == Opcode::LOCST && code[i].imm < numLocals)
        set.set(code[i].imm);
    return set;
  };
  mustIn[0].reset();
  bool changed = true;
  while (changed) {
    changed = false;
    for (unsigned b = 0; b < nblocks; ++b) {
      if (!blocks[b].reachable)
        continue;
      llvm::BitVector mustOut = transfer(b, mustIn[b]);
      llvm::BitVector mayOut = transfer(b, mayIn[b]);
      for (unsigned s : blocks[b].succs) {
        llvm::BitVector m = mustIn[s];
        m &= mustOut;
        if (m != mustIn[s]) {
          mustIn[s] = m;
          changed = true;
        }
        llvm::BitVector y = mayIn[s];
        y |= mayOut;
        if (y != mayIn[s]) {
          mayIn[s] = y;
          changed = true;
        }
      }
    }
  }
  for (unsigned b = 0; b < nblocks; ++b) {
    if (!blocks[b].reachable)
      continue;
    llvm::BitVector must = mustIn[b], may = mayIn[b];
    for (unsigned i = blocks[b].begin; i < blocks[b].end; ++i) {
      const Instr &instr = code[i];
      if (instr.imm >= numLocals)
        continue;
      if (instr.op() == Opcode::LOCST) {
        must.set(instr.imm);
        may.set(instr.imm);
      } else if (instr.op() == Opcode::LOCLD) {
        if (!may.test(instr.imm))
          // NetBee zeroes locals and its programs rely on it, so this is a
          // warning, not an error.
          diags.warning(instr.loc) << "use of uninitialized local " << instr.imm
                                   << ": no path writes it before this read "
                                      "(it reads as 0)";
        else if (!must.test(instr.imm))
          diags.warning(instr.loc)
              << "local " << instr.imm
              << " may be read before it is written on some path (it "
                 "then reads as 0)";
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// SSA construction (Braun et al.)
//===----------------------------------------------------------------------===//

Value HandlerBuilder::constant(uint32_t value) {
  auto it = constants.find(value);
  if (it != constants.end())
    return it->second;
  OpBuilder::InsertionGuard guard(builder);
  Block *entryBlock = &handlerOp.getBody().front();
  if (lastConstant)
    builder.setInsertionPointAfter(lastConstant);
  else
    builder.setInsertionPointToStart(entryBlock);
  auto op = arith::ConstantOp::create(
      builder, builder.getUnknownLoc(),
      builder.getI32IntegerAttr(static_cast<int32_t>(value)));
  lastConstant = op;
  constants[value] = op;
  return op;
}

Value HandlerBuilder::initialValue(unsigned var) {
  if (var == stackVar(0) && h.kind != HandlerKind::Init)
    return handlerOp.getPortArgument();
  // Locals start as zero (reads of unwritten locals are diagnosed by
  // checkLocals); the stack analysis guarantees no other slot is read.
  return constant(0);
}

BlockArgument HandlerBuilder::newPhi(unsigned bb) {
  BlockArgument arg =
      blocks[bb].block->addArgument(builder.getI32Type(), curLoc);
  phiOperands[arg];
  phiBlock[arg] = bb;
  return arg;
}

Value HandlerBuilder::readVariable(unsigned var, unsigned bb) {
  auto it = blocks[bb].defs.find(var);
  if (it != blocks[bb].defs.end())
    return it->second;
  return readVariableRecursive(var, bb);
}

Value HandlerBuilder::readVariableRecursive(unsigned var, unsigned bb) {
  BasicBlock &block = blocks[bb];
  Value value;
  if (block.preds.empty()) {
    value = initialValue(var);
  } else if (!block.sealed) {
    BlockArgument phi = newPhi(bb);
    block.incompletePhis.emplace_back(var, phi);
    value = phi;
  } else if (block.preds.size() == 1) {
    value = readVariable(var, block.preds.front());
  } else {
    BlockArgument phi = newPhi(bb);
    writeVariable(var, bb, phi);
    addPhiOperands(var, phi, bb);
    value = phi;
  }
  writeVariable(var, bb, value);
  return value;
}

void HandlerBuilder::addPhiOperands(unsigned var, BlockArgument phi,
                                    unsigned bb) {
  SmallVector<Value, 4> operands;
  for (unsigned pred : blocks[bb].preds)
    operands.push_back(readVariable(var, pred));
  phiOperands[phi] = std::move(operands);
}

void HandlerBuilder::sealBlock(unsigned bb) {
  BasicBlock &block = blocks[bb];
  block.sealed = true;
  auto incomplete = std::move(block.incompletePhis);
  for (auto [var, phi] : incomplete)
    addPhiOperands(var, phi, bb);
}

Value HandlerBuilder::resolve(Value v) {
  while (true) {
    auto it = replacement.find(v);
    if (it == replacement.end())
      return v;
    v = it->second;
  }
}

void HandlerBuilder::finalizePhis() {
  // Remove trivial phis (all operands equal, ignoring self references)
  // until nothing changes.
  llvm::DenseSet<BlockArgument> dead;
  bool changed = true;
  while (changed) {
    changed = false;
    for (auto &[phi, operands] : phiOperands) {
      if (dead.contains(phi))
        continue;
      Value same;
      bool trivial = true;
      for (Value op : operands) {
        Value r = resolve(op);
        if (r == phi || r == same)
          continue;
        if (same) {
          trivial = false;
          break;
        }
        same = r;
      }
      if (!trivial)
        continue;
      replacement[phi] = same ? same : constant(0);
      dead.insert(phi);
      changed = true;
    }
  }
  // Rewrite the uses of trivial phis first, so that the use lists below
  // are accurate.
  for (auto &[phi, operands] : phiOperands)
    if (dead.contains(phi))
      phi.replaceAllUsesWith(resolve(phi));
  // Remove phis nobody uses (neither operations nor other live phis).
  changed = true;
  while (changed) {
    changed = false;
    // Uses not visible in MLIR yet: operands of live phis and the
    // conditions of the terminators emitted later.
    llvm::DenseSet<Value> usedByPhis;
    for (auto &[phi, operands] : phiOperands)
      if (!dead.contains(phi))
        for (Value op : operands)
          usedByPhis.insert(resolve(op));
    for (const BasicBlock &bb : blocks)
      if (bb.exit && bb.exit->condition)
        usedByPhis.insert(resolve(bb.exit->condition));
    for (auto &[phi, operands] : phiOperands) {
      if (dead.contains(phi) || usedByPhis.contains(phi) || !phi.use_empty())
        continue;
      dead.insert(phi);
      changed = true;
    }
  }
  DenseMap<Block *, SmallVector<BlockArgument>> byBlock;
  for (auto &[phi, operands] : phiOperands)
    if (dead.contains(phi))
      byBlock[phi.getOwner()].push_back(phi);
  for (auto &[block, args] : byBlock) {
    llvm::sort(args, [](BlockArgument a, BlockArgument b) {
      return a.getArgNumber() > b.getArgNumber();
    });
    for (BlockArgument arg : args)
      block->eraseArgument(arg.getArgNumber());
  }
  for (BlockArgument phi : dead)
    phiOperands.erase(phi);
}

void HandlerBuilder::emitTerminators() {
  // Arguments for the edge pred -> succ: the live phis of succ, in order.
  auto edgeArgs = [&](unsigned pred, unsigned succ) {
    SmallVector<Value> args;
    const BasicBlock &s = blocks[succ];
    unsigned predIndex = llvm::find(s.preds, pred) - s.preds.begin();
    for (BlockArgument arg : s.block->getArguments()) {
      if (arg == handlerOp.getPortArgument())
        continue;
      args.push_back(resolve(phiOperands[arg][predIndex]));
    }
    return args;
  };
  for (unsigned b = 0; b < blocks.size(); ++b) {
    BasicBlock &bb = blocks[b];
    if (!bb.block || !bb.exit)
      continue;
    Exit &exit = *bb.exit;
    builder.setInsertionPointToEnd(bb.block);
    Value cond = exit.condition ? resolve(exit.condition) : Value();
    switch (exit.kind) {
    case Exit::Jump:
      cf::BranchOp::create(builder, exit.loc, blocks[exit.target].block,
                           edgeArgs(b, exit.target));
      break;
    case Exit::CondBr:
      cf::CondBranchOp::create(
          builder, exit.loc, cond, blocks[exit.target].block,
          edgeArgs(b, exit.target), blocks[exit.other].block,
          edgeArgs(b, exit.other));
      break;
    case Exit::Switch: {
      SmallVector<int32_t> values;
      SmallVector<Block *> dests;
      SmallVector<SmallVector<Value>> operandStorage;
      for (auto &[value, target] : exit.cases) {
        values.push_back(static_cast<int32_t>(value));
        dests.push_back(blocks[target].block);
        operandStorage.push_back(edgeArgs(b, target));
      }
      SmallVector<ValueRange> operands(operandStorage.begin(),
                                       operandStorage.end());
      cf::SwitchOp::create(builder, exit.loc, cond, blocks[exit.target].block,
                           edgeArgs(b, exit.target), values, dests, operands);
      break;
    }
    case Exit::Send:
      SendOp::create(builder, exit.loc, exit.port);
      break;
    case Exit::Drop:
      DropOp::create(builder, exit.loc);
      break;
    case Exit::Ret:
      RetOp::create(builder, exit.loc);
      break;
    case Exit::Trap:
      TrapOp::create(builder, exit.loc, exit.trap);
      break;
    }
  }
}

//===----------------------------------------------------------------------===//
// Instruction translation
//===----------------------------------------------------------------------===//

Value HandlerBuilder::pop(unsigned bb) {
  Value v = peekAt(bb, 0);
  stack.pop_back();
  return v;
}

Value HandlerBuilder::peekAt(unsigned bb, unsigned fromTop) {
  unsigned slot = stack.size() - 1 - fromTop;
  if (!stack[slot])
    stack[slot] = readVariable(stackVar(slot), bb);
  return stack[slot];
}

bool HandlerBuilder::requireExchangeBuffer(const Instr &instr) {
  if (h.kind != HandlerKind::Init)
    return true;
  diags.error(instr.loc) << "'" << instr.info->mnemonic
                         << "' needs an exchange buffer, which an init "
                            "handler does not have";
  return false;
}

bool HandlerBuilder::requireCoprocessor(const Instr &instr) {
  if (pe.getCoprocessorIndex(instr.name) >= 0)
    return true;
  diags.error(instr.nameLoc) << "coprocessor '" << instr.name
                             << "' is not declared; add '.use_coprocessor "
                             << instr.name << "' to the .metadata segment";
  return false;
}

PortOp HandlerBuilder::requirePort(const Instr &instr, PortKind kind) {
  PortOp port = pe.lookupPort(instr.name);
  if (port && port.getKind() == kind)
    return port;
  auto diag = diags.error(instr.nameLoc);
  if (!port)
    diag << "unknown port '" << instr.name << "'";
  else
    diag << "port '" << instr.name << "' is a "
         << stringifyPortKind(port.getKind()) << " port";
  diag << "; '" << instr.info->mnemonic << "' needs a "
       << stringifyPortKind(kind) << " port";
  SmallVector<std::string> candidates;
  for (PortOp p : pe.getPorts())
    if (p.getKind() == kind)
      candidates.push_back(("'" + p.getSymName() + "'").str());
  if (!candidates.empty())
    diag << " (declared: " << llvm::join(candidates, ", ") << ")";
  return {};
}

LogicalResult HandlerBuilder::fillBlock(unsigned b) {
  BasicBlock &bb = blocks[b];
  builder.setInsertionPointToEnd(bb.block);
  stack.assign(bb.entryDepth, Value());
  bool ok = true;
  for (unsigned i = bb.begin; i < bb.end; ++i)
    if (failed(translate(h.code[i], b, i)))
      ok = false;
  // Fall through to the next block if the last instruction does not end
  // the block itself.
  if (!bb.exit && !bb.succs.empty()) {
    bb.exit.emplace(curLoc);
    bb.exit->kind = Exit::Jump;
    bb.exit->target = bb.succs.front();
  }
  // Record the stack slots this block changed.
  for (unsigned slot = 0; slot < stack.size(); ++slot)
    if (stack[slot])
      writeVariable(stackVar(slot), b, stack[slot]);
  bb.filled = true;
  return success(ok);
}

static arith::CmpIPredicate predicateFor(Opcode op) {
  switch (op) {
  case Opcode::JCMPEQ:
    return arith::CmpIPredicate::eq;
  case Opcode::JCMPNEQ:
    return arith::CmpIPredicate::ne;
  case Opcode::JCMPG:
    return arith::CmpIPredicate::ugt;
  case Opcode::JCMPGE:
    return arith::CmpIPredicate::uge;
  case Opcode::JCMPL:
    return arith::CmpIPredicate::ult;
  case Opcode::JCMPLE:
    return arith::CmpIPredicate::ule;
  case Opcode::JCMPG_S:
    return arith::CmpIPredicate::sgt;
  case Opcode::JCMPGE_S:
    return arith::CmpIPredicate::sge;
  case Opcode::JCMPL_S:
    return arith::CmpIPredicate::slt;
  case Opcode::JCMPLE_S:
    return arith::CmpIPredicate::sle;
  default:
    llvm_unreachable("not a jcmp opcode");
  }
}

namespace {
struct MemAccess {
  MemSpace space;
  unsigned bits;
  bool isSigned;
};
} // namespace

static std::optional<MemAccess> loadAccess(Opcode op) {
  switch (op) {
  case Opcode::PBLDS:
    return MemAccess{MemSpace::Packet, 8, true};
  case Opcode::PBLDU:
    return MemAccess{MemSpace::Packet, 8, false};
  case Opcode::PSLDS:
    return MemAccess{MemSpace::Packet, 16, true};
  case Opcode::PSLDU:
    return MemAccess{MemSpace::Packet, 16, false};
  case Opcode::PILD:
    return MemAccess{MemSpace::Packet, 32, false};
  case Opcode::DBLDS:
    return MemAccess{MemSpace::Data, 8, true};
  case Opcode::DBLDU:
    return MemAccess{MemSpace::Data, 8, false};
  case Opcode::DSLDS:
    return MemAccess{MemSpace::Data, 16, true};
  case Opcode::DSLDU:
    return MemAccess{MemSpace::Data, 16, false};
  case Opcode::DILD:
    return MemAccess{MemSpace::Data, 32, false};
  case Opcode::SBLDS:
    return MemAccess{MemSpace::Shared, 8, true};
  case Opcode::SBLDU:
    return MemAccess{MemSpace::Shared, 8, false};
  case Opcode::SSLDS:
    return MemAccess{MemSpace::Shared, 16, true};
  case Opcode::SSLDU:
    return MemAccess{MemSpace::Shared, 16, false};
  case Opcode::SILD:
    return MemAccess{MemSpace::Shared, 32, false};
  case Opcode::ISBLD:
    return MemAccess{MemSpace::Info, 8, false};
  case Opcode::ISSLD:
    return MemAccess{MemSpace::Info, 16, false};
  case Opcode::ISSBLD:
    return MemAccess{MemSpace::Info, 8, true};
  case Opcode::ISSSLD:
    return MemAccess{MemSpace::Info, 16, true};
  case Opcode::ISSILD:
    return MemAccess{MemSpace::Info, 32, false};
  default:
    return std::nullopt;
  }
}

static std::optional<MemAccess> storeAccess(Opcode op) {
  switch (op) {
  case Opcode::DBSTR:
    return MemAccess{MemSpace::Data, 8, false};
  case Opcode::DSSTR:
    return MemAccess{MemSpace::Data, 16, false};
  case Opcode::DISTR:
    return MemAccess{MemSpace::Data, 32, false};
  case Opcode::PBSTR:
    return MemAccess{MemSpace::Packet, 8, false};
  case Opcode::PSSTR:
    return MemAccess{MemSpace::Packet, 16, false};
  case Opcode::PISTR:
    return MemAccess{MemSpace::Packet, 32, false};
  case Opcode::SBSTR:
    return MemAccess{MemSpace::Shared, 8, false};
  case Opcode::SSSTR:
    return MemAccess{MemSpace::Shared, 16, false};
  case Opcode::SISTR:
    return MemAccess{MemSpace::Shared, 32, false};
  case Opcode::IBSTR:
    return MemAccess{MemSpace::Info, 8, false};
  case Opcode::ISSTR:
    return MemAccess{MemSpace::Info, 16, false};
  case Opcode::IISTR:
    return MemAccess{MemSpace::Info, 32, false};
  default:
    return std::nullopt;
  }
}

/// Source and destination memories of the copy instructions.
static std::optional<std::pair<MemSpace, MemSpace>> copySpaces(Opcode op) {
  switch (op) {
  case Opcode::DPMCPY:
    return std::make_pair(MemSpace::Data, MemSpace::Packet);
  case Opcode::PDMCPY:
    return std::make_pair(MemSpace::Packet, MemSpace::Data);
  case Opcode::DSMCPY:
    return std::make_pair(MemSpace::Data, MemSpace::Shared);
  case Opcode::SDMCPY:
    return std::make_pair(MemSpace::Shared, MemSpace::Data);
  case Opcode::SPMCPY:
    return std::make_pair(MemSpace::Shared, MemSpace::Packet);
  case Opcode::PSMCPY:
    return std::make_pair(MemSpace::Packet, MemSpace::Shared);
  case Opcode::IPMCPY:
    return std::make_pair(MemSpace::InitData, MemSpace::Packet);
  default:
    return std::nullopt;
  }
}

LogicalResult HandlerBuilder::translate(const Instr &instr, unsigned b,
                                        unsigned index) {
  Location loc = diags.loc(instr.loc);
  curLoc = loc;
  BasicBlock &bb = blocks[b];
  auto i32 = builder.getI32Type();
  auto binary = [&](auto makeOp) {
    Value t = pop(b);
    Value s = pop(b);
    push(makeOp(s, t));
  };
  auto branchTo = [&](Value cond) {
    bb.exit.emplace(loc);
    bb.exit->kind = Exit::CondBr;
    bb.exit->condition = cond;
    bb.exit->target = labelTarget[index];
    bb.exit->other = blocks.size() > b ? bb.succs.back() : 0;
    // The fall-through successor is the block after this one.
    for (unsigned s : bb.succs)
      if (blocks[s].begin == bb.end)
        bb.exit->other = s;
  };
  auto extend = [&](Value v, unsigned bits, bool isSigned) -> Value {
    if (bits == 32)
      return v;
    if (isSigned)
      return arith::ExtSIOp::create(builder, loc, i32, v);
    return arith::ExtUIOp::create(builder, loc, i32, v);
  };
  auto truncate = [&](Value v, unsigned bits) -> Value {
    if (bits == 32)
      return v;
    return arith::TruncIOp::create(builder, loc, builder.getIntegerType(bits),
                                   v);
  };
  auto maskShift = [&](Value amount) {
    return arith::AndIOp::create(builder, loc, amount, constant(31));
  };
  // NetIL's three-way comparison: 0 if equal, 1 if `top` is greater than
  // `below`, -1 otherwise.
  auto threeWay = [&](Value top, Value below, bool isSigned) -> Value {
    Value eq = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq,
                                     top, below);
    Value gt = arith::CmpIOp::create(builder, loc,
                                     isSigned ? arith::CmpIPredicate::sgt
                                              : arith::CmpIPredicate::ugt,
                                     top, below);
    Value sign =
        arith::SelectOp::create(builder, loc, gt, constant(1), constant(~0u));
    return arith::SelectOp::create(builder, loc, eq, constant(0), sign);
  };

  if (std::optional<MemAccess> access = loadAccess(instr.op())) {
    if ((access->space == MemSpace::Packet ||
         access->space == MemSpace::Info) &&
        !requireExchangeBuffer(instr)) {
      drop(1);
      push(constant(0));
      return failure();
    }
    Value offset = pop(b);
    Value v = LoadOp::create(builder, loc, builder.getIntegerType(access->bits),
                             access->space, offset, /*in_bounds=*/false);
    push(extend(v, access->bits, access->isSigned));
    return success();
  }
  if (std::optional<MemAccess> access = storeAccess(instr.op())) {
    if ((access->space == MemSpace::Packet ||
         access->space == MemSpace::Info) &&
        !requireExchangeBuffer(instr)) {
      drop(2);
      return failure();
    }
    Value address = pop(b);
    Value value = pop(b);
    StoreOp::create(builder, loc, truncate(value, access->bits), access->space,
                    address, /*in_bounds=*/false);
    return success();
  }
  if (auto spaces = copySpaces(instr.op())) {
    bool needsExbuf =
        spaces->first == MemSpace::Packet || spaces->second == MemSpace::Packet;
    if (needsExbuf && !requireExchangeBuffer(instr)) {
      drop(3);
      return failure();
    }
    Value length = pop(b);
    Value dst = pop(b);
    Value src = pop(b);
    CopyOp::create(builder, loc, spaces->first, src, spaces->second, dst,
                   length);
    return success();
  }

  switch (instr.op()) {
  case Opcode::IPLEN: {
    if (!requireExchangeBuffer(instr)) {
      drop(1);
      push(constant(0));
      return failure();
    }
    Value offset = pop(b);
    Value byte = LoadOp::create(builder, loc, builder.getI8Type(),
                                MemSpace::Packet, offset, false);
    Value wide = arith::ExtUIOp::create(builder, loc, i32, byte);
    Value low = arith::AndIOp::create(builder, loc, wide, constant(0x0f));
    push(arith::ShLIOp::create(builder, loc, low, constant(2)));
    return success();
  }
  case Opcode::ADD:
  case Opcode::ADDSOV:
  case Opcode::ADDUOV:
    binary([&](Value s, Value t) {
      return arith::AddIOp::create(builder, loc, s, t).getResult();
    });
    return success();
  case Opcode::SUB:
  case Opcode::SUBSOV:
  case Opcode::SUBUOV:
    binary([&](Value s, Value t) {
      return arith::SubIOp::create(builder, loc, s, t).getResult();
    });
    return success();
  case Opcode::IMUL:
  case Opcode::IMULSOV:
  case Opcode::IMULUOV:
    binary([&](Value s, Value t) {
      return arith::MulIOp::create(builder, loc, s, t).getResult();
    });
    return success();
  case Opcode::MOD:
    binary([&](Value s, Value t) {
      Value nonZero = arith::CmpIOp::create(
          builder, loc, arith::CmpIPredicate::ne, t, constant(0));
      CheckOp::create(builder, loc, nonZero, ExceptionKind::DivisionByZero);
      return arith::RemUIOp::create(builder, loc, s, t).getResult();
    });
    return success();
  case Opcode::NEG:
    push(arith::SubIOp::create(builder, loc, constant(0), pop(b)));
    return success();
  case Opcode::NOT:
    push(arith::XOrIOp::create(builder, loc, pop(b), constant(~0u)));
    return success();
  case Opcode::OR:
    binary([&](Value s, Value t) {
      return arith::OrIOp::create(builder, loc, s, t).getResult();
    });
    return success();
  case Opcode::AND:
    binary([&](Value s, Value t) {
      return arith::AndIOp::create(builder, loc, s, t).getResult();
    });
    return success();
  case Opcode::XOR:
    binary([&](Value s, Value t) {
      return arith::XOrIOp::create(builder, loc, s, t).getResult();
    });
    return success();
  case Opcode::IINC_1:
  case Opcode::IINC_2:
  case Opcode::IINC_3:
  case Opcode::IINC_4:
  case Opcode::IDEC_1:
  case Opcode::IDEC_2:
  case Opcode::IDEC_3:
  case Opcode::IDEC_4: {
    unsigned depth = instr.stackEffect().first - 1;
    bool inc = instr.op() == Opcode::IINC_1 || instr.op() == Opcode::IINC_2 ||
               instr.op() == Opcode::IINC_3 || instr.op() == Opcode::IINC_4;
    Value v = peekAt(b, depth);
    Value r =
        inc ? arith::AddIOp::create(builder, loc, v, constant(1)).getResult()
            : arith::SubIOp::create(builder, loc, v, constant(1)).getResult();
    setAt(depth, r);
    return success();
  }
  case Opcode::SHL:
    binary([&](Value s, Value t) {
      return arith::ShLIOp::create(builder, loc, s, maskShift(t)).getResult();
    });
    return success();
  case Opcode::SHR:
    binary([&](Value s, Value t) {
      return arith::ShRSIOp::create(builder, loc, s, maskShift(t)).getResult();
    });
    return success();
  case Opcode::USHR:
    binary([&](Value s, Value t) {
      return arith::ShRUIOp::create(builder, loc, s, maskShift(t)).getResult();
    });
    return success();
  case Opcode::ROTL:
  case Opcode::ROTR: {
    bool left = instr.op() == Opcode::ROTL;
    binary([&](Value s, Value t) {
      Value n = maskShift(t);
      Value back =
          maskShift(arith::SubIOp::create(builder, loc, constant(32), n));
      Value a = left ? arith::ShLIOp::create(builder, loc, s, n).getResult()
                     : arith::ShRUIOp::create(builder, loc, s, n).getResult();
      Value c = left ? arith::ShRUIOp::create(builder, loc, s, back).getResult()
                     : arith::ShLIOp::create(builder, loc, s, back).getResult();
      return arith::OrIOp::create(builder, loc, a, c).getResult();
    });
    return success();
  }
  case Opcode::IRND:
    push(RandomOp::create(builder, loc, i32));
    return success();
  case Opcode::CMP:
  case Opcode::CMP_S: {
    Value t = pop(b);
    Value s = pop(b);
    push(threeWay(t, s, instr.op() == Opcode::CMP_S));
    return success();
  }
  case Opcode::MCMP: {
    Value t = pop(b);
    Value s = pop(b);
    Value mask = pop(b);
    push(threeWay(arith::AndIOp::create(builder, loc, t, mask),
                  arith::AndIOp::create(builder, loc, s, mask), false));
    return success();
  }
  case Opcode::JCMPEQ:
  case Opcode::JCMPNEQ:
  case Opcode::JCMPG:
  case Opcode::JCMPGE:
  case Opcode::JCMPL:
  case Opcode::JCMPLE:
  case Opcode::JCMPG_S:
  case Opcode::JCMPGE_S:
  case Opcode::JCMPL_S:
  case Opcode::JCMPLE_S: {
    Value t = pop(b);
    Value s = pop(b);
    branchTo(
        arith::CmpIOp::create(builder, loc, predicateFor(instr.op()), s, t));
    return success();
  }
  case Opcode::JEQ:
  case Opcode::JNE: {
    Value v = pop(b);
    branchTo(arith::CmpIOp::create(builder, loc,
                                   instr.op() == Opcode::JEQ
                                       ? arith::CmpIPredicate::eq
                                       : arith::CmpIPredicate::ne,
                                   v, constant(0)));
    return success();
  }
  case Opcode::JUMP:
  case Opcode::JUMPW:
    bb.exit.emplace(loc);
    bb.exit->kind = Exit::Jump;
    bb.exit->target = bb.succs.front();
    return success();
  case Opcode::SWITCH: {
    Value selector = pop(b);
    bb.exit.emplace(loc);
    bb.exit->kind = Exit::Switch;
    bb.exit->condition = selector;
    DenseMap<uint64_t, SMLoc> seen; // not uint32_t: see `constants`
    for (const SwitchCase &c : instr.cases) {
      auto [it, inserted] = seen.try_emplace(c.value, c.loc);
      if (!inserted) {
        auto diag = diags.warning(c.loc)
                    << "duplicate switch case " << c.value
                    << " is never taken (the first one wins)";
        diag.attachNote(diags.loc(it->second)) << "first case here";
        continue;
      }
      bb.exit->cases.emplace_back(c.value, blockOf[h.labels.lookup(c.label)]);
    }
    bb.exit->target = instr.defaultCase
                          ? blockOf[h.labels.lookup(instr.defaultCase->label)]
                          : blockOf[bb.end];
    return success();
  }
  case Opcode::RET:
    if (!stack.empty())
      diags.warning(instr.loc)
          << "'ret' with " << stack.size()
          << " value(s) left on the stack; they are discarded (NetBee "
             "reports a failure here)";
    bb.exit.emplace(loc);
    bb.exit->kind = h.kind == HandlerKind::Push ? Exit::Drop : Exit::Ret;
    return success();
  case Opcode::PUSH:
    push(constant(instr.imm));
    return success();
  case Opcode::PUSH2:
    push(constant(instr.imm));
    push(constant(instr.imm2));
    return success();
  case Opcode::POP:
    drop(1);
    return success();
  case Opcode::POP_I:
    drop(instr.imm);
    return success();
  case Opcode::CONST_0:
    push(constant(0));
    return success();
  case Opcode::CONST_1:
    push(constant(1));
    return success();
  case Opcode::CONST_2:
    push(constant(2));
    return success();
  case Opcode::CONST__1:
    push(constant(~0u));
    return success();
  case Opcode::TSTAMP_S:
  case Opcode::TSTAMP_US:
    push(TimestampOp::create(builder, loc, i32,
                             instr.op() == Opcode::TSTAMP_S
                                 ? TimeUnit::Seconds
                                 : TimeUnit::Microseconds));
    return success();
  case Opcode::DUP:
    push(peekAt(b, 0));
    return success();
  case Opcode::SWAP: {
    Value t = pop(b);
    Value s = pop(b);
    push(t);
    push(s);
    return success();
  }
  case Opcode::IESWAP:
    push(ByteSwapOp::create(builder, loc, i32, pop(b)));
    return success();
  case Opcode::SLEEP:
    drop(1);
    return success();
  case Opcode::PBL:
    if (!requireExchangeBuffer(instr)) {
      push(constant(0));
      return failure();
    }
    push(PacketLengthOp::create(builder, loc, i32));
    return success();
  case Opcode::JFLDEQ:
  case Opcode::JFLDNEQ:
  case Opcode::JFLDLT:
  case Opcode::JFLDGT: {
    if (!requireExchangeBuffer(instr)) {
      drop(3);
      return failure();
    }
    Value length = pop(b);
    Value rhs = pop(b);
    Value lhs = pop(b);
    FieldCmpKind kind = instr.op() == Opcode::JFLDEQ    ? FieldCmpKind::Eq
                        : instr.op() == Opcode::JFLDNEQ ? FieldCmpKind::Ne
                        : instr.op() == Opcode::JFLDLT  ? FieldCmpKind::Lt
                                                        : FieldCmpKind::Gt;
    branchTo(FieldCmpOp::create(builder, loc, builder.getI1Type(), kind, lhs,
                                rhs, length));
    return success();
  }
  case Opcode::PSCANB:
  case Opcode::PSCANW:
  case Opcode::PSCANDW: {
    if (!requireExchangeBuffer(instr)) {
      drop(2);
      push(constant(0));
      return failure();
    }
    unsigned bits = instr.op() == Opcode::PSCANB   ? 8
                    : instr.op() == Opcode::PSCANW ? 16
                                                   : 32;
    Value value = pop(b);
    Value offset = pop(b);
    push(
        PacketScanOp::create(builder, loc, i32, offset, truncate(value, bits)));
    return success();
  }
  case Opcode::SNDPKT: {
    if (!requireExchangeBuffer(instr))
      return failure();
    if (!requirePort(instr, PortKind::PushOutput))
      return failure();
    bb.exit.emplace(loc);
    bb.exit->kind = Exit::Send;
    bb.exit->port = instr.name;
    return success();
  }
  case Opcode::DSNDPKT:
    if (!requireExchangeBuffer(instr) ||
        !requirePort(instr, PortKind::PushOutput))
      return failure();
    SendDupOp::create(builder, loc, instr.name);
    return success();
  case Opcode::RCVPKT:
    if (!requireExchangeBuffer(instr) ||
        !requirePort(instr, PortKind::PullInput))
      return failure();
    ReceiveOp::create(builder, loc, instr.name);
    return success();
  case Opcode::CRTEXBUF: {
    if (!requireExchangeBuffer(instr)) {
      drop(1);
      return failure();
    }
    ExbufCreateOp::create(builder, loc, pop(b));
    return success();
  }
  case Opcode::DELEXBUF:
    if (!requireExchangeBuffer(instr))
      return failure();
    ExbufDeleteOp::create(builder, loc);
    return success();
  case Opcode::SDMSIZE:
  case Opcode::SSMSIZE:
    // Declarations; collected before translation.
    return success();
  case Opcode::NOP:
  case Opcode::BRKPOINT:
    return success();
  case Opcode::EXIT:
    bb.exit.emplace(loc);
    bb.exit->kind = Exit::Trap;
    bb.exit->trap = ExceptionKind::Exit;
    return success();
  case Opcode::INFOCLR:
    if (!requireExchangeBuffer(instr))
      return failure();
    InfoClearOp::create(builder, loc);
    return success();
  case Opcode::FINDBITSET:
    push(FindBitOp::create(builder, loc, i32, pop(b)));
    return success();
  case Opcode::MFINDBITSET:
    binary([&](Value s, Value t) {
      return FindBitOp::create(builder, loc, i32,
                               arith::AndIOp::create(builder, loc, s, t))
          .getResult();
    });
    return success();
  case Opcode::XFINDBITSET:
    for (unsigned k = 0; k < instr.imm; ++k)
      setAt(k, FindBitOp::create(builder, loc, i32, peekAt(b, k)));
    return success();
  case Opcode::XMFINDBITSET: {
    Value mask = pop(b);
    for (unsigned k = 0; k < instr.imm; ++k)
      setAt(k, FindBitOp::create(
                   builder, loc, i32,
                   arith::AndIOp::create(builder, loc, peekAt(b, k), mask)));
    return success();
  }
  case Opcode::SETBIT:
  case Opcode::CLEARBIT:
  case Opcode::FLIPBIT:
  case Opcode::TESTBIT:
  case Opcode::TESTNBIT: {
    BitOpKind kind = instr.op() == Opcode::SETBIT     ? BitOpKind::Set
                     : instr.op() == Opcode::CLEARBIT ? BitOpKind::Clear
                     : instr.op() == Opcode::FLIPBIT  ? BitOpKind::Flip
                     : instr.op() == Opcode::TESTBIT  ? BitOpKind::Test
                                                      : BitOpKind::TestNot;
    binary([&](Value s, Value t) {
      return BitOp::create(builder, loc, i32, kind, s, t).getResult();
    });
    return success();
  }
  case Opcode::CLZ:
    push(math::CountLeadingZerosOp::create(builder, loc, pop(b)));
    return success();
  case Opcode::HASH32:
    push(HashOp::create(builder, loc, i32, ValueRange{pop(b)}));
    return success();
  case Opcode::HASH: {
    if (instr.imm == 0) {
      // The hash of no bytes is 0 (as in NetBee).
      push(constant(0));
      return success();
    }
    SmallVector<Value> words(instr.imm);
    for (unsigned k = 0; k < instr.imm; ++k)
      words[instr.imm - 1 - k] = pop(b);
    push(HashOp::create(builder, loc, i32, words));
    return success();
  }
  case Opcode::CHKSUMADD:
    binary([&](Value s, Value t) {
      return ChecksumAddOp::create(builder, loc, i32, s, t).getResult();
    });
    return success();
  case Opcode::CHKSUMSUB:
    binary([&](Value s, Value t) {
      return ChecksumSubOp::create(builder, loc, i32, s, t).getResult();
    });
    return success();
  case Opcode::CHKSUMCALCPKT:
  case Opcode::JUMPCHECKSUM: {
    if (!requireExchangeBuffer(instr)) {
      drop(2);
      if (instr.op() == Opcode::CHKSUMCALCPKT)
        push(constant(0));
      return failure();
    }
    Value length = pop(b);
    Value offset = pop(b);
    Value sum = ChecksumOp::create(builder, loc, i32, offset, length);
    if (instr.op() == Opcode::CHKSUMCALCPKT) {
      push(sum);
      return success();
    }
    branchTo(arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, sum,
                                   constant(0xffff)));
    return success();
  }
  case Opcode::CRCCALC:
  case Opcode::CRCCALCPKT: {
    std::optional<CrcKind> kind = symbolizeCrcKind(instr.imm);
    bool isPacket = instr.op() == Opcode::CRCCALCPKT;
    if (!kind) {
      diags.error(instr.loc) << "unknown CRC algorithm " << instr.imm
                             << " (0 = CRC-32, 1 = CRC-32C)";
      drop(isPacket ? 2 : 1);
      push(constant(0));
      return failure();
    }
    if (!isPacket) {
      push(CrcOp::create(builder, loc, i32, *kind, pop(b)));
      return success();
    }
    if (!requireExchangeBuffer(instr)) {
      drop(2);
      push(constant(0));
      return failure();
    }
    Value length = pop(b);
    Value offset = pop(b);
    push(PacketCrcOp::create(builder, loc, i32, *kind, offset, length));
    return success();
  }
  case Opcode::LOCLD:
    push(instr.imm < h.locals.value_or(0) ? readVariable(localVar(instr.imm), b)
                                          : constant(0));
    return success();
  case Opcode::LOCST: {
    Value v = pop(b);
    if (instr.imm < h.locals.value_or(0))
      writeVariable(localVar(instr.imm), b, v);
    return success();
  }
  case Opcode::COPINIT: {
    if (!requireCoprocessor(instr)) {
      push(constant(0));
      return failure();
    }
    auto it = prog.dataLabels.find(instr.dataLabel);
    if (it == prog.dataLabels.end()) {
      diags.error(instr.dataLoc)
          << "unknown .data label '" << instr.dataLabel << "'";
      push(constant(0));
      return failure();
    }
    push(CoproInitOp::create(builder, loc, i32, instr.name, it->second));
    return success();
  }
  case Opcode::COPIN:
    if (!requireCoprocessor(instr)) {
      push(constant(0));
      return failure();
    }
    push(CoproReadOp::create(builder, loc, i32, instr.name, instr.imm));
    return success();
  case Opcode::COPOUT: {
    Value v = pop(b);
    if (!requireCoprocessor(instr))
      return failure();
    CoproWriteOp::create(builder, loc, instr.name, instr.imm, v);
    return success();
  }
  case Opcode::COPRUN:
    if (!requireCoprocessor(instr))
      return failure();
    CoproInvokeOp::create(builder, loc, instr.name, instr.imm);
    return success();
  case Opcode::COPPKTOUT:
    if (!requireCoprocessor(instr) || !requireExchangeBuffer(instr))
      return failure();
    CoproExbufOp::create(builder, loc, instr.name);
    return success();
  default:
    break;
  }
  diags.error(instr.loc) << "internal error: no translation for '"
                         << instr.info->mnemonic << "'";
  return failure();
}

//===----------------------------------------------------------------------===//
// Handler
//===----------------------------------------------------------------------===//

LogicalResult HandlerBuilder::build() {
  if (h.code.empty()) {
    diags.error(h.loc) << "the " << segmentName(h.kind)
                       << " segment has no instructions; end it with 'ret'";
    return failure();
  }
  unsigned errorsBefore = diags.errorCount();
  if (failed(buildCFG()))
    return failure();
  if (failed(analyzeStack()))
    return failure();
  checkLocals();
  if (diags.errorCount() != errorsBefore)
    return failure();

  // Predecessors of reachable blocks; a jump to the first instruction needs
  // a separate entry block, since an MLIR entry block has no predecessors.
  for (unsigned b = 0; b < blocks.size(); ++b)
    if (blocks[b].reachable)
      for (unsigned s : blocks[b].succs)
        blocks[s].preds.push_back(b);
  entry = 0;
  if (!blocks[0].preds.empty()) {
    BasicBlock pre;
    pre.begin = pre.end = 0;
    pre.succs.push_back(0);
    pre.reachable = true;
    pre.entryDepth = blocks[0].entryDepth;
    entry = blocks.size();
    blocks.push_back(std::move(pre));
    blocks[0].preds.insert(blocks[0].preds.begin(), entry);
  }

  builder.setInsertionPointToEnd(pe.getBodyBlock());
  handlerOp = HandlerOp::create(builder, diags.loc(h.loc), h.kind);
  if (h.maxStack)
    handlerOp.setMaxStackAttr(builder.getI32IntegerAttr(*h.maxStack));
  if (h.locals)
    handlerOp.setLocalsAttr(builder.getI32IntegerAttr(*h.locals));
  Region &body = handlerOp.getBody();
  blocks[entry].block = &body.front();
  // MLIR blocks in source order, entry first.
  for (unsigned b = 0; b < blocks.size(); ++b)
    if (blocks[b].reachable && b != entry)
      blocks[b].block = new Block(), body.push_back(blocks[b].block);

  // Reverse post-order from the entry.
  SmallVector<unsigned> rpo;
  {
    llvm::BitVector visited(blocks.size());
    SmallVector<std::pair<unsigned, unsigned>> dfs;
    dfs.push_back({entry, 0});
    visited.set(entry);
    while (!dfs.empty()) {
      auto &[b, next] = dfs.back();
      if (next < blocks[b].succs.size()) {
        unsigned s = blocks[b].succs[next++];
        if (!visited.test(s)) {
          visited.set(s);
          dfs.push_back({s, 0});
        }
        continue;
      }
      rpo.push_back(b);
      dfs.pop_back();
    }
    std::reverse(rpo.begin(), rpo.end());
  }

  auto trySeal = [&](unsigned b) {
    if (blocks[b].sealed)
      return;
    if (llvm::all_of(blocks[b].preds,
                     [&](unsigned p) { return blocks[p].filled; }))
      sealBlock(b);
  };
  bool ok = true;
  trySeal(entry);
  for (unsigned b : rpo) {
    if (b == entry && entry != 0) {
      // The synthetic entry only jumps to the first block.
      blocks[b].exit.emplace(diags.loc(h.loc));
      blocks[b].exit->kind = Exit::Jump;
      blocks[b].exit->target = 0;
      stack.assign(blocks[b].entryDepth, Value());
      blocks[b].filled = true;
    } else if (failed(fillBlock(b))) {
      ok = false;
    }
    for (unsigned s : blocks[b].succs)
      trySeal(s);
  }
  for (unsigned b : rpo)
    if (!blocks[b].sealed)
      sealBlock(b);
  if (!ok)
    return failure();
  finalizePhis();
  emitTerminators();
  return success();
}

//===----------------------------------------------------------------------===//
// NetPE
//===----------------------------------------------------------------------===//

/// Constant-offset accesses that fall outside a memory whose size the
/// NetPE declares are certain to fail at run time: report them now.
static LogicalResult checkConstantAccesses(PEOp pe, const Program &prog) {
  auto sizeOf = [&](MemSpace space) -> std::optional<uint64_t> {
    switch (space) {
    case MemSpace::Data:
      return pe.getDatamemSize();
    case MemSpace::InitData:
      return prog.data.size();
    case MemSpace::Info:
      if (prog.infoSize)
        return *prog.infoSize;
      return std::nullopt;
    case MemSpace::Shared:
      if (prog.sharedSize)
        return *prog.sharedSize;
      return std::nullopt;
    case MemSpace::Packet:
      return std::nullopt;
    }
    return std::nullopt;
  };
  auto describeSize = [&](MemSpace space) -> std::string {
    switch (space) {
    case MemSpace::Data:
      return "data memory (.datamem_size " +
             std::to_string(pe.getDatamemSize()) + ")";
    case MemSpace::InitData:
      return "initialised data (" + std::to_string(prog.data.size()) +
             " bytes in .data)";
    case MemSpace::Info:
      return "info memory (.info_size " + std::to_string(*prog.infoSize) + ")";
    case MemSpace::Shared:
      return "shared memory (set.share " + std::to_string(*prog.sharedSize) +
             ")";
    case MemSpace::Packet:
      return "packet";
    }
    return "";
  };
  bool ok = true;
  pe.walk([&](Operation *op) {
    auto report = [&](MemSpace space, Value offset, Value lengthValue,
                      uint64_t width) {
      std::optional<uint64_t> size = sizeOf(space);
      APInt value;
      if (!size || !matchPattern(offset, m_ConstantInt(&value)))
        return;
      if (lengthValue) {
        APInt len;
        if (!matchPattern(lengthValue, m_ConstantInt(&len)))
          return;
        width = len.getZExtValue();
      }
      uint64_t start = value.getZExtValue();
      if (start + width <= *size)
        return;
      if (space == MemSpace::Info) {
        // The application's info memory is the largest of its NetPEs' and
        // at least the runtime's default, so this may still work.
        mlir::emitWarning(op->getLoc())
            << "access to bytes [" << start << ", " << start + width
            << ") lies beyond the NetPE's " << describeSize(space)
            << "; it works only if the application's info memory is larger "
               "(at least 64 bytes by default)";
        return;
      }
      ok = false;
      mlir::emitError(op->getLoc())
          << "access to bytes [" << start << ", " << start + width
          << ") is outside the NetPE's " << describeSize(space)
          << "; it would always raise "
          << stringifyExceptionKind(boundsExceptionFor(space));
    };
    if (auto load = dyn_cast<LoadOp>(op))
      report(load.getSpace(), load.getOffset(), {},
             load.getType().getIntOrFloatBitWidth() / 8);
    else if (auto store = dyn_cast<StoreOp>(op))
      report(store.getSpace(), store.getOffset(), {},
             store.getValue().getType().getIntOrFloatBitWidth() / 8);
    else if (auto copy = dyn_cast<CopyOp>(op)) {
      report(copy.getSrcSpace(), copy.getSrc(), copy.getLength(), 0);
      report(copy.getDstSpace(), copy.getDst(), copy.getLength(), 0);
    }
  });
  return success(ok);
}

/// Collect `set.mem` / `set.share` declarations from the init handler.
static LogicalResult collectDeclarations(Diags &diags, Program &prog) {
  bool ok = true;
  for (unsigned k = 0; k < 3; ++k) {
    if (!prog.handlers[k])
      continue;
    for (const Instr &instr : prog.handlers[k]->code) {
      if (instr.op() != Opcode::SDMSIZE && instr.op() != Opcode::SSMSIZE)
        continue;
      if (prog.handlers[k]->kind != HandlerKind::Init) {
        diags.error(instr.loc) << "'" << instr.info->mnemonic
                               << "' may only appear in the .init segment";
        ok = false;
        continue;
      }
      bool isData = instr.op() == Opcode::SDMSIZE;
      if (instr.imm > (64u << 20)) {
        diags.error(instr.loc)
            << "'" << instr.info->mnemonic << " " << instr.imm
            << "' asks for more than the 64 MiB limit of "
               "a NetVM memory";
        ok = false;
        continue;
      }
      std::optional<uint32_t> &slot =
          isData ? prog.datamemSize : prog.sharedSize;
      SMLoc &slotLoc = isData ? prog.datamemLoc : prog.sharedLoc;
      if (!slot) {
        slot = instr.imm;
        slotLoc = instr.loc;
      } else if (*slot != instr.imm) {
        auto diag = diags.error(instr.loc)
                    << "'" << instr.info->mnemonic << " " << instr.imm
                    << "' conflicts with the size " << *slot
                    << " declared before";
        diag.attachNote(diags.loc(slotLoc)) << "declared here";
        ok = false;
      }
    }
  }
  return success(ok);
}

PEOp netvm::netil::assemble(llvm::SourceMgr &sourceMgr, unsigned bufferId,
                            ApplicationOp app, StringRef defaultName,
                            bool forceName) {
  MLIRContext *ctx = app.getContext();
  Diags diags(sourceMgr, bufferId, ctx);
  std::optional<Program> parsed = parse(diags);
  if (!parsed)
    return {};
  Program &prog = *parsed;
  if (failed(collectDeclarations(diags, prog)))
    return {};

  bool hasCode =
      llvm::any_of(prog.handlers, [](const auto &h) { return h.has_value(); });
  if (!hasCode) {
    diags.error(prog.fileLoc) << "no code segment: a NetPE needs at least "
                                 "one of .init, .push, .pull";
    return {};
  }
  bool useDirective = !forceName && !prog.peName.empty();
  std::string name = useDirective ? prog.peName : defaultName.str();
  if (app.lookupSymbol(name)) {
    diags.error(useDirective ? prog.peNameLoc : prog.fileLoc)
        << "the application already has a NetPE or endpoint named '" << name
        << "'";
    return {};
  }

  OpBuilder builder(ctx);
  builder.setInsertionPointToEnd(app.getBodyBlock());
  auto pe = PEOp::create(builder, diags.loc(prog.fileLoc), name);
  auto fail = [&]() -> PEOp {
    pe.erase();
    return {};
  };
  if (prog.datamemSize)
    pe.setDatamemSize(*prog.datamemSize);
  if (prog.infoSize)
    pe.setInfoSize(*prog.infoSize);
  if (prog.sharedSize)
    pe.setSharedmemSize(*prog.sharedSize);
  if (!prog.coprocessors.empty()) {
    SmallVector<StringRef> names;
    for (auto &c : prog.coprocessors)
      names.push_back(c.first);
    pe.setCoprocessorsAttr(builder.getStrArrayAttr(names));
  }
  if (!prog.data.empty())
    pe.setInitdataAttr(builder.getDenseI8ArrayAttr(llvm::ArrayRef<int8_t>(
        reinterpret_cast<const int8_t *>(prog.data.data()), prog.data.size())));

  builder.setInsertionPointToEnd(pe.getBodyBlock());
  for (const PortDecl &port : prog.ports)
    PortOp::create(builder, diags.loc(port.loc), port.name, port.kind);

  // Ports need handlers to run.
  for (const PortDecl &port : prog.ports) {
    if (port.kind == PortKind::PushInput &&
        !prog.handlers[static_cast<unsigned>(HandlerKind::Push)]) {
      diags.error(port.loc) << "push input port '" << port.name
                            << "' needs a .push segment to handle its "
                               "packets";
      return fail();
    }
    if (port.kind == PortKind::PullOutput &&
        !prog.handlers[static_cast<unsigned>(HandlerKind::Pull)]) {
      diags.error(port.loc) << "pull output port '" << port.name
                            << "' needs a .pull segment to produce packets";
      return fail();
    }
  }

  bool ok = true;
  for (unsigned k = 0; k < 3; ++k) {
    if (!prog.handlers[k])
      continue;
    HandlerBuilder hb(diags, prog, *prog.handlers[k], pe);
    if (failed(hb.build()))
      ok = false;
  }
  if (!ok)
    return fail();

  if (failed(checkConstantAccesses(pe, prog)))
    return fail();
  if (failed(mlir::verify(pe)))
    return fail();
  return pe;
}

void netvm::netil::listMnemonics(
    llvm::function_ref<void(llvm::StringRef)> callback) {
  for (const OpcodeInfo &info : allOpcodes())
    if (info.unsupported.empty())
      callback(info.mnemonic);
}
