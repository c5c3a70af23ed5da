//===- MEOps.cpp - Operations of the me dialect ---------------------------===//
//
// Verifiers check every row-selecting token against the instruction table
// (MEInstrs.def), so the dialect cannot name an instruction the machine
// does not have.
//
//===----------------------------------------------------------------------===//

#include "ME/MEOps.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace netvm;
using namespace netvm::medialect;

const me::InstrInfo *netvm::medialect::lookupRow(StringRef mnemonic,
                                                 StringRef sub) {
  size_t count = 0;
  const me::InstrInfo *table = me::instrTable(count);
  for (size_t i = 0; i < count; ++i)
    if (mnemonic == table[i].mnemonic && sub == table[i].sub)
      return &table[i];
  return nullptr;
}

ArrayRef<RowClaim> netvm::medialect::rowClaims() {
  static const RowClaim claims[] = {
      {"me.nop", "nop", ""},
      {"me.ctx_arb", "ctx_arb", ""},
      {"me.alu", "alu", "*"},
      {"me.copy", "alu", "b"},
      {"me.arg_set", "alu", "b"},
      {"me.lm_read", "alu", "b"},
      {"me.lm_write", "alu", "b"},
      {"me.const", "immed", ""},
      {"me.immed_half", "immed_w0", ""},
      {"me.immed_half", "immed_w1", ""},
      {"me.ld_field", "ld_field", ""},
      {"me.ld_field", "ld_field_w_clr", ""},
      {"me.byte_align", "byte_align", ""},
      {"me.br", "br", ""},
      {"me.cmp_br", "beq", ""},
      {"me.cmp_br", "bne", ""},
      {"me.cmp_br", "bmi", ""},
      {"me.cmp_br", "bpl", ""},
      {"me.cmp_br", "bcs", ""},
      {"me.cmp_br", "bcc", ""},
      {"me.cmp_br", "bvs", ""},
      {"me.cmp_br", "bvc", ""},
      {"me.cmp_br", "blt", ""},
      {"me.cmp_br", "bge", ""},
      {"me.cmp_br", "bgt", ""},
      {"me.cmp_br", "ble", ""},
      {"me.cmp_br", "bhi", ""},
      {"me.cmp_br", "bls", ""},
      {"me.byte_br", "br=byte", ""},
      {"me.byte_br", "br!=byte", ""},
      {"me.bit_br", "br_bset", ""},
      {"me.bit_br", "br_bclr", ""},
      {"me.csr_rd", "local_csr_rd", ""},
      {"me.csr_wr", "local_csr_wr", ""},
      {"me.cam_clear", "cam_clear", ""},
      {"me.cam_lookup", "cam_lookup", ""},
      {"me.cam_write", "cam_write", ""},
      {"me.cam_write_state", "cam_write_state", ""},
      {"me.cam_read", "cam_read_tag", ""},
      {"me.cam_read", "cam_read_state", ""},
      {"me.crc", "crc_be", ""},
      {"me.crc", "crc_le", ""},
      {"me.mem", "scratch", "*"},
      {"me.mem", "sram", "*"},
      {"me.mem", "dram", "*"},
      {"me.mem", "msf", "*"},
      {"me.hash", "hash_64", ""},
  };
  return claims;
}

ArrayRef<RowExclusion> netvm::medialect::rowExclusions() {
  static const RowExclusion exclusions[] = {
      {"halt", "stops every context of the ME: the packet path's end, never a "
               "handler's"},
      {"br=ctx", "the packet path's context set-up"},
      {"br!=ctx", "the packet path's context set-up"},
      {"br_signal", "signals are waited for by the commands that raise them"},
      {"br_!signal", "signals are waited for by the commands that raise them"},
      {"br_inp_state", "ring states are the packet path's (its gets retry)"},
      {"br_!inp_state", "ring states are the packet path's (its gets retry)"},
      {"jump", "jump tables are written by the emitter for me.switch"},
      {"rtn", "the packet path's returns from shared code"},
  };
  return exclusions;
}

StringRef netvm::medialect::invertCondition(StringRef cond) {
  return llvm::StringSwitch<StringRef>(cond)
      .Case("beq", "bne")
      .Case("bne", "beq")
      .Case("bmi", "bpl")
      .Case("bpl", "bmi")
      .Case("bcs", "bcc")
      .Case("bcc", "bcs")
      .Case("bvs", "bvc")
      .Case("bvc", "bvs")
      .Case("blt", "bge")
      .Case("bge", "blt")
      .Case("bgt", "ble")
      .Case("ble", "bgt")
      .Case("bhi", "bls")
      .Case("bls", "bhi")
      .Default("");
}

//===----------------------------------------------------------------------===//
// Shared checks
//===----------------------------------------------------------------------===//

static LogicalResult verifyAluOp(Operation *op, StringRef aluOp) {
  const me::InstrInfo *row = lookupRow("alu", aluOp);
  if (!row)
    return op->emitOpError("'")
           << aluOp << "' is not an ALU operation of the instruction table";
  return success();
}

static LogicalResult verifyCondition(Operation *op, StringRef cond) {
  const me::InstrInfo *row = lookupRow(cond, "");
  if (!row || row->format != me::Format::Branch || cond == "br")
    return op->emitOpError("'")
           << cond << "' is not a conditional branch of the instruction table";
  return success();
}

static LogicalResult verifyShift(Operation *op, std::optional<StringRef> shift,
                                 std::optional<uint32_t> amount,
                                 bool allowIndirect) {
  if (!shift) {
    if (amount)
      return op->emitOpError("has a shift amount without a shift");
    return success();
  }
  bool indirect =
      llvm::StringSwitch<bool>(*shift)
          .Cases({"<<indirect", ">>indirect", ">>asr indirect"}, true)
          .Default(false);
  bool direct = llvm::StringSwitch<bool>(*shift)
                    .Cases({"<<", ">>", ">>rot", ">>asr"}, true)
                    .Default(false);
  if (!indirect && !direct)
    return op->emitOpError("unknown shift '") << *shift << "'";
  if (indirect && !allowIndirect)
    return op->emitOpError("indirect shifts are not allowed here");
  if (direct && (!amount || *amount < 1 || *amount > 31))
    return op->emitOpError("shift '") << *shift << "' needs an amount 1-31";
  if (indirect && amount)
    return op->emitOpError("an indirect shift takes its amount from 'a'");
  return success();
}

//===----------------------------------------------------------------------===//
// Operations
//===----------------------------------------------------------------------===//

LogicalResult FuncOp::verifyRegions() {
  if (getBody().empty())
    return emitOpError("has no body");
  if (getBody().front().getNumArguments() != 0)
    return emitOpError("entry block takes no arguments (use me.arg)");
  if (getHandler() != "init" && getHandler() != "push" &&
      getHandler() != "pull")
    return emitOpError("handler must be init, push or pull");
  return success();
}

LogicalResult ArgOp::verify() {
  if (!llvm::is_contained({"buffer", "length", "wire", "port", "tag"},
                          getName()))
    return emitOpError("unknown argument '")
           << getName() << "' (buffer, length, wire, port or tag)";
  return success();
}

OpFoldResult ConstOp::fold(FoldAdaptor) { return getValueAttr(); }

LogicalResult AluOp::verify() {
  if (failed(verifyAluOp(*this, getOp())))
    return failure();
  bool unary = getOp() == "b" || getOp() == "~b";
  bool indirect = getShift() && getShift()->ends_with("indirect");
  // b and ~b read only b, except that an indirect shift takes its amount
  // from a.
  if (unary && getA() && !indirect)
    return emitOpError("'") << getOp() << "' takes no 'a' operand";
  if (!unary && !getA())
    return emitOpError("'") << getOp() << "' needs an 'a' operand";
  if (indirect && !unary)
    return emitOpError("indirect shifts need ALU operation b or ~b");
  if (indirect && !getA())
    return emitOpError("an indirect shift needs 'a'");
  return verifyShift(*this, getShift(), getAmount(), true);
}

LogicalResult LdFieldOp::verify() {
  if (getMask() == 0 || getMask() > 15)
    return emitOpError("byte mask must be 1-15");
  return verifyShift(*this, getShift(), getAmount(), false);
}

LogicalResult ImmedHalfOp::verify() {
  if (getHalf() > 1)
    return emitOpError("half must be 0 (immed_w0) or 1 (immed_w1)");
  if (getValue() > 0xffff)
    return emitOpError("value must fit in 16 bits");
  return success();
}

LogicalResult ByteAlignOp::verify() {
  if (getN() > 4)
    return emitOpError("byte must be 0-3, or 4 for the byte_index CSR");
  return success();
}

SuccessorOperands BrOp::getSuccessorOperands(unsigned) {
  return SuccessorOperands(getDestOperandsMutable());
}

SuccessorOperands CmpBrOp::getSuccessorOperands(unsigned index) {
  return SuccessorOperands(index == 0 ? getTrueOperandsMutable()
                                      : getFalseOperandsMutable());
}

LogicalResult CmpBrOp::verify() {
  if (failed(verifyCondition(*this, getCond())))
    return failure();
  return verifyAluOp(*this, getOp());
}

SuccessorOperands BitBrOp::getSuccessorOperands(unsigned index) {
  return SuccessorOperands(index == 0 ? getTrueOperandsMutable()
                                      : getFalseOperandsMutable());
}

LogicalResult BitBrOp::verify() {
  if (getBit() > 31)
    return emitOpError("bit must be 0-31");
  return success();
}

SuccessorOperands ByteBrOp::getSuccessorOperands(unsigned) {
  return SuccessorOperands(MutableOperandRange(getOperation(), 0, 0));
}

LogicalResult ByteBrOp::verify() {
  if (getByte() > 3)
    return emitOpError("byte must be 0-3");
  if (getValue() > 255)
    return emitOpError("value must be 0-255");
  for (Block *succ : getOperation()->getSuccessors())
    if (succ->getNumArguments())
      return emitOpError("successors take no arguments");
  return success();
}

SuccessorOperands SwitchOp::getSuccessorOperands(unsigned) {
  return SuccessorOperands(MutableOperandRange(getOperation(), 0, 0));
}

LogicalResult SwitchOp::verify() {
  if (getDests().size() != getCases().size() + 1)
    return emitOpError("needs a default successor and one per case");
  for (Block *succ : getDests())
    if (succ->getNumArguments())
      return emitOpError("successors take no arguments");
  return success();
}

LogicalResult SetCCOp::verify() {
  if (failed(verifyCondition(*this, getCond())))
    return failure();
  return verifyAluOp(*this, getOp());
}

LogicalResult SelectOp::verify() {
  if (failed(verifyCondition(*this, getCond())))
    return failure();
  return verifyAluOp(*this, getOp());
}

LogicalResult PacketReadOp::verify() {
  if (getSize() != 1 && getSize() != 2 && getSize() != 4)
    return emitOpError("size must be 1, 2 or 4");
  return success();
}

LogicalResult ArgSetOp::verify() {
  if (getName() != "length" && getName() != "wire")
    return emitOpError("sets 'length' or 'wire', not '") << getName() << "'";
  return success();
}

static LogicalResult verifyLocal(Operation *op, uint32_t window,
                                 uint32_t word) {
  if (window > 1)
    return op->emitOpError("window must be 0 or 1");
  if (word > 15)
    return op->emitOpError("word must be 0-15 (the offset field of "
                           "*l$indexN[word])");
  return success();
}

LogicalResult LocalReadOp::verify() {
  return verifyLocal(*this, getWindow(), getWord());
}

LogicalResult LocalWriteOp::verify() {
  return verifyLocal(*this, getWindow(), getWord());
}

static std::optional<me::Csr> lookupCsr(StringRef name) {
  for (unsigned i = 0; i < static_cast<unsigned>(me::Csr::Count); ++i)
    if (name == me::csrName(static_cast<me::Csr>(i)))
      return static_cast<me::Csr>(i);
  return std::nullopt;
}

LogicalResult CsrReadOp::verify() {
  std::optional<me::Csr> csr = lookupCsr(getCsr());
  if (!csr)
    return emitOpError("unknown CSR '") << getCsr() << "'";
  if (!me::csrReadable(*csr))
    return emitOpError("CSR '") << getCsr() << "' is not readable";
  return success();
}

LogicalResult CsrWriteOp::verify() {
  std::optional<me::Csr> csr = lookupCsr(getCsr());
  if (!csr)
    return emitOpError("unknown CSR '") << getCsr() << "'";
  if (!me::csrWritable(*csr))
    return emitOpError("CSR '") << getCsr() << "' is not writable";
  return success();
}

LogicalResult CrcOp::verify() {
  if (getKind() != "crc_32" && getKind() != "crc_32c")
    return emitOpError("kind must be crc_32 or crc_32c");
  return success();
}

LogicalResult MemOp::verify() {
  const me::InstrInfo *row = lookupRow(getUnit(), getCmd());
  if (!row || row->format != me::Format::Mem)
    return emitOpError("'")
           << getUnit() << "[" << getCmd()
           << "]' is not a memory command of the instruction table";
  unsigned count = getCount();
  unsigned maxCount = getUnit() == "dram" ? 8 : me::maxCount;
  if (me::isAtomic(row->op))
    maxCount = 1;
  if (count < 1 || count > maxCount)
    return emitOpError("count must be 1-") << maxCount;
  unsigned words = me::transferWords(row->op, count);
  bool reads = getCmd() == "read" || getCmd() == "get" ||
               getCmd().starts_with("test_and") || getCmd() == "swap" ||
               getCmd() == "rx";
  bool writes =
      getCmd() == "write" || getCmd() == "put" ||
      (me::isAtomic(row->op) && getCmd() != "incr" && getCmd() != "decr") ||
      getCmd() == "tx";
  if (reads && getUnit() != "msf" && getNumResults() != words)
    return emitOpError("returns ")
           << words << " words, not " << getNumResults();
  if (!reads && getNumResults())
    return emitOpError("'") << getCmd() << "' returns nothing";
  if (writes && getUnit() != "msf" && getData().size() != words)
    return emitOpError("takes ")
           << words << " data words, not " << getData().size();
  if (!writes && !getData().empty())
    return emitOpError("'") << getCmd() << "' takes no data";
  return success();
}

LogicalResult HashOp::verify() {
  if (getData().empty() || getData().size() % 2 || getData().size() > 16)
    return emitOpError("hashes 1-8 values of two words");
  if (getNumResults() != getData().size())
    return emitOpError("returns as many words as it hashes");
  return success();
}

LogicalResult CtxArbOp::verify() {
  if (getMode() != "voluntary" && getMode() != "kill")
    return emitOpError("mode must be voluntary or kill");
  return success();
}

#define GET_OP_CLASSES
#include "ME/MEOps.cpp.inc"
