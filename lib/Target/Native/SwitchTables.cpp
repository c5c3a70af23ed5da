//===- SwitchTables.cpp - Switches rewritten for code generation ----------===//
//
// A 1,000-term `host` list or NetPFL `or` becomes, after the netvm
// optimizer (netvm-form-switches), a few switches of 1,000 to 2,000 cases.
// LLVM lowers each into a tree of compare-and-branch blocks, and code
// generation of those trees took most of the compile time of such a filter
// even at -O0 (0.75 s of 1.4 s). This rewrite gives each such switch a
// branch-free binary search of a sorted constant table of its case values
// (one load and one select per halving), then a branch to the default or a
// switch on the matching entry's successor number, which has as many cases
// as the switch had distinct successors (one, for a `host` list). The code
// is then linear in the number of distinct successors, not of cases, and a
// packet pays about log2(cases) loads from a table that stays in cache.
//
// Small sets go the other way (compareSmallSwitches): LLVM makes a switch
// of an `or` of a few comparisons of one value, and code generation makes
// that a tree of unpredictable branches; after the pipeline such a switch
// becomes one branch on the `or` again, or, when both ways only compute a
// few values and meet, selects of those values.
//
//===----------------------------------------------------------------------===//

#include "netvm/Target/Native.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

using namespace netvm;

namespace {

/// Rewrites `sw` (in block B) as described in the file comment.
void searchTable(llvm::SwitchInst *sw) {
  llvm::BasicBlock *block = sw->getParent();
  llvm::Function *function = block->getParent();
  llvm::Module &module = *function->getParent();
  llvm::LLVMContext &context = module.getContext();
  auto *type = llvm::cast<llvm::IntegerType>(sw->getCondition()->getType());

  // The cases by unsigned value, and the distinct successors in the order
  // they first appear.
  struct Case {
    llvm::APInt value;
    unsigned successor;
  };
  llvm::SmallVector<Case> cases;
  llvm::SmallVector<llvm::BasicBlock *> successors;
  llvm::DenseMap<llvm::BasicBlock *, unsigned> number;
  for (auto c : sw->cases()) {
    auto [it, inserted] =
        number.try_emplace(c.getCaseSuccessor(), successors.size());
    if (inserted)
      successors.push_back(c.getCaseSuccessor());
    cases.push_back({c.getCaseValue()->getValue(), it->second});
  }
  llvm::sort(cases,
             [](const Case &a, const Case &b) { return a.value.ult(b.value); });

  // The values each successor's phis take from B (equal on every edge
  // from B, as LLVM requires), before B's edges go away.
  llvm::BasicBlock *fallback = sw->getDefaultDest();
  llvm::SmallVector<llvm::BasicBlock *> targets(successors);
  if (!number.count(fallback))
    targets.push_back(fallback);
  llvm::DenseMap<llvm::PHINode *, llvm::Value *> incoming;
  for (llvm::BasicBlock *target : targets)
    for (llvm::PHINode &phi : target->phis()) {
      incoming[&phi] = phi.getIncomingValueForBlock(block);
      phi.removeIncomingValueIf(
          [&](unsigned i) { return phi.getIncomingBlock(i) == block; },
          /*DeletePHIIfEmpty=*/false);
    }

  auto makeTable = [&](llvm::Type *elementType,
                       llvm::ArrayRef<llvm::Constant *> elements,
                       const char *name) {
    auto *arrayType = llvm::ArrayType::get(elementType, elements.size());
    return new llvm::GlobalVariable(
        module, arrayType, /*isConstant=*/true,
        llvm::GlobalValue::PrivateLinkage,
        llvm::ConstantArray::get(arrayType, elements), name);
  };
  llvm::SmallVector<llvm::Constant *> keys;
  for (const Case &c : cases)
    keys.push_back(llvm::ConstantInt::get(type, c.value));
  llvm::GlobalVariable *keyTable = makeTable(type, keys, "netvm.switch.keys");

  // Branch-free lower bound: `at` ends on the last key <= the value (or on
  // the first key when every key is greater).
  llvm::IRBuilder<> b(sw);
  llvm::Type *indexType = b.getInt64Ty();
  llvm::Value *value = sw->getCondition();
  auto load = [&](llvm::GlobalVariable *table, llvm::Type *elementType,
                  llvm::Value *index) {
    llvm::Value *address = b.CreateInBoundsGEP(table->getValueType(), table,
                                               {b.getInt64(0), index});
    return b.CreateLoad(elementType, address);
  };
  llvm::Value *at = llvm::ConstantInt::get(indexType, 0);
  for (uint64_t length = cases.size(); length > 1;) {
    uint64_t half = length / 2;
    llvm::Value *probe = b.CreateAdd(at, b.getInt64(half));
    llvm::Value *key = load(keyTable, type, probe);
    at = b.CreateSelect(b.CreateICmpULE(key, value), probe, at);
    length -= half;
  }
  llvm::Value *found = b.CreateICmpEQ(load(keyTable, type, at), value);

  // Where each successor is now entered from: B (one successor) or a
  // dispatch block that switches on the entry's successor number.
  llvm::SmallVector<std::pair<llvm::BasicBlock *, llvm::BasicBlock *>> edges;
  if (successors.size() == 1) {
    b.CreateCondBr(found, successors[0], fallback);
    edges.push_back({block, successors[0]});
  } else {
    llvm::SmallVector<llvm::Constant *> numbers;
    for (const Case &c : cases)
      numbers.push_back(b.getInt32(c.successor));
    llvm::GlobalVariable *numberTable =
        makeTable(b.getInt32Ty(), numbers, "netvm.switch.successors");
    auto *dispatch = llvm::BasicBlock::Create(context, "switch.dispatch",
                                              function, block->getNextNode());
    b.CreateCondBr(found, dispatch, fallback);
    b.SetInsertPoint(dispatch);
    llvm::Value *which = load(numberTable, b.getInt32Ty(), at);
    // The last successor is the dispatch switch's default: every entry
    // names one of them.
    llvm::SwitchInst *next =
        b.CreateSwitch(which, successors.back(), successors.size() - 1);
    for (unsigned i = 0; i + 1 < successors.size(); ++i)
      next->addCase(b.getInt32(i), successors[i]);
    for (llvm::BasicBlock *successor : successors)
      edges.push_back({dispatch, successor});
  }
  edges.push_back({block, fallback});
  sw->eraseFromParent();

  for (auto [from, to] : edges)
    for (llvm::PHINode &phi : to->phis())
      phi.addIncoming(incoming.lookup(&phi), from);
}

/// The block both arms of a branch from `from` continue in, when each arm
/// is a few instructions that may run on either path (null otherwise).
llvm::BasicBlock *commonJoin(llvm::BasicBlock *from, llvm::BasicBlock *a,
                             llvm::BasicBlock *b) {
  auto next = [&](llvm::BasicBlock *arm) -> llvm::BasicBlock * {
    auto *br = llvm::dyn_cast<llvm::BranchInst>(arm->getTerminator());
    if (!br || br->isConditional())
      return nullptr;
    // At most 8 instructions each (a mispredicted branch costs more).
    unsigned work = 0;
    for (llvm::Instruction &i : *arm) {
      if (&i == br || llvm::isa<llvm::PHINode>(i))
        continue;
      if (++work > 8 || !llvm::isSafeToSpeculativelyExecute(&i))
        return nullptr;
    }
    return br->getSuccessor(0);
  };
  llvm::BasicBlock *join = next(a);
  if (!join || join != next(b) || join == from)
    return nullptr;
  return join;
}

/// Ends `block` with a jump to the block both arms continue in: the arms'
/// instructions are copied into it and `condition` selects their results
/// (true: `member`'s). False, changing nothing, when the arms do not allow
/// it (commonJoin).
bool selectArms(llvm::BasicBlock *block, llvm::Value *condition,
                llvm::BasicBlock *member, llvm::BasicBlock *fallback) {
  llvm::BasicBlock *join = commonJoin(block, member, fallback);
  if (!join)
    return false;
  llvm::ValueToValueMapTy copies[2];
  llvm::BasicBlock *arms[2] = {member, fallback};
  for (unsigned k = 0; k < 2; ++k)
    for (llvm::Instruction &i : *arms[k]) {
      if (auto *phi = llvm::dyn_cast<llvm::PHINode>(&i)) {
        copies[k][phi] = phi->getIncomingValueForBlock(block);
        continue;
      }
      if (i.isTerminator())
        break;
      llvm::Instruction *copy = i.clone();
      copy->insertInto(block, block->end());
      llvm::RemapInstruction(copy, copies[k],
                             llvm::RF_IgnoreMissingLocals |
                                 llvm::RF_NoModuleLevelChanges);
      copies[k][&i] = copy;
    }
  llvm::IRBuilder<> b(block);
  for (llvm::PHINode &phi : join->phis()) {
    auto valueFrom = [&](unsigned k) -> llvm::Value * {
      llvm::Value *v = phi.getIncomingValueForBlock(arms[k]);
      auto it = copies[k].find(v);
      return it == copies[k].end() ? v : static_cast<llvm::Value *>(it->second);
    };
    phi.addIncoming(b.CreateSelect(condition, valueFrom(0), valueFrom(1)),
                    block);
  }
  b.CreateBr(join);
  for (llvm::BasicBlock *arm : arms)
    arm->removePredecessor(block);
  return true;
}

/// Rewrites `sw`, whose cases all lead to one block, as a branch on the
/// `or` of one comparison per case (see compareSmallSwitches).
void compareCases(llvm::SwitchInst *sw) {
  llvm::BasicBlock *block = sw->getParent();
  llvm::BasicBlock *member = sw->case_begin()->getCaseSuccessor();
  llvm::BasicBlock *fallback = sw->getDefaultDest();
  // A phi has an entry per edge: keep one for the member block.
  for (llvm::PHINode &phi : member->phis()) {
    llvm::Value *value = phi.getIncomingValueForBlock(block);
    phi.removeIncomingValueIf(
        [&](unsigned i) { return phi.getIncomingBlock(i) == block; },
        /*DeletePHIIfEmpty=*/false);
    phi.addIncoming(value, block);
  }
  llvm::IRBuilder<> b(sw);
  llvm::Value *value = sw->getCondition();
  llvm::Value *any = nullptr;
  for (auto c : sw->cases()) {
    llvm::Value *equal = b.CreateICmpEQ(value, c.getCaseValue());
    any = any ? b.CreateOr(any, equal) : equal;
  }
  sw->eraseFromParent();
  // When both ways only count (the batch entry's fast loop: a packet sent
  // or dropped), the verdict becomes selects: no branch at all.
  if (selectArms(block, any, member, fallback))
    return;
  llvm::BranchInst *branch =
      llvm::BranchInst::Create(member, fallback, any, block);
  // Keeps code generation from splitting the `or` into a branch per case
  // again (SelectionDAGBuilder::visitBr).
  branch->setMetadata(llvm::LLVMContext::MD_unpredictable,
                      llvm::MDNode::get(block->getContext(), {}));
}

} // namespace

void netvm::native::compareSmallSwitches(llvm::Module &module,
                                         unsigned maxCases) {
  for (llvm::Function &function : module) {
    llvm::SmallVector<llvm::SwitchInst *> sets;
    for (llvm::BasicBlock &block : function) {
      auto *sw = llvm::dyn_cast<llvm::SwitchInst>(block.getTerminator());
      if (!sw || sw->getNumCases() < 2 || sw->getNumCases() > maxCases)
        continue;
      llvm::BasicBlock *member = sw->case_begin()->getCaseSuccessor();
      if (member == sw->getDefaultDest() ||
          llvm::any_of(sw->cases(),
                       [&](auto c) { return c.getCaseSuccessor() != member; }))
        continue;
      // Values within a machine word of each other become a bit test,
      // which is branch-free already.
      llvm::APInt low = sw->case_begin()->getCaseValue()->getValue();
      llvm::APInt high = low;
      for (auto c : sw->cases()) {
        const llvm::APInt &v = c.getCaseValue()->getValue();
        if (v.ult(low))
          low = v;
        if (v.ugt(high))
          high = v;
      }
      if ((high - low).ult(64))
        continue;
      sets.push_back(sw);
    }
    for (llvm::SwitchInst *sw : sets)
      compareCases(sw);
    if (!sets.empty())
      llvm::EliminateUnreachableBlocks(function);
  }
}

void netvm::native::searchLargeSwitches(llvm::Module &module,
                                        unsigned minCases) {
  for (llvm::Function &function : module) {
    llvm::SmallVector<llvm::SwitchInst *> large;
    for (llvm::BasicBlock &block : function)
      if (auto *sw = llvm::dyn_cast<llvm::SwitchInst>(block.getTerminator()))
        if (sw->getNumCases() >= minCases)
          large.push_back(sw);
    for (llvm::SwitchInst *sw : large)
      searchTable(sw);
  }
}
