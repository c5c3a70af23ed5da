//===- Emitter.cpp - Allocated me.func -> machine instructions ------------===//
//
// Writes each operation of an allocated handler as instructions: constants
// folded into the immediate field or loaded into the temporaries, the
// two-bank rule repaired with a move where the allocator could not keep
// it, pseudo-instructions expanded, block arguments passed by parallel
// copies on their edges, and falls-through laid out where the successor
// is the next block.
//
//===----------------------------------------------------------------------===//

#include "CodeGenInternal.h"

#include "netvm/Target/ME/Assembler.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"

#include <map>
#include <mutex>

using namespace mlir;
using namespace netvm;
using namespace netvm::me;
namespace med = netvm::medialect;

Line netvm::me::asmLine(const std::string &text, const std::string &comment) {
  static std::mutex mutex;
  static std::map<std::string, Instr> cache;
  Line line;
  line.comment = comment;
  std::string source = text;
  size_t at = source.find('@');
  if (at != std::string::npos) {
    size_t end = source.find_first_of(",]", at);
    line.target = source.substr(at + 1, end - at - 1);
    source = source.substr(0, at) + "L" + source.substr(end);
  }
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(source);
  if (it == cache.end()) {
    Image image;
    std::vector<std::string> errors;
    AssemblerOptions options;
    bool ok = assemble(".me 0\nL: " + source + "\n", "<packet path>", options,
                       image, errors);
    Instr instr;
    std::string why;
    if (!ok || image.code.empty() || image.code[0].words.empty() ||
        !decode(image.code[0].words[0], instr, why))
      llvm::report_fatal_error(llvm::Twine("bad packet-path line '") + text +
                               "': " + (errors.empty() ? why : errors[0]));
    it = cache.emplace(source, instr).first;
  }
  line.instr = it->second;
  return line;
}

namespace {

Shift shiftKind(std::optional<StringRef> shift) {
  if (!shift)
    return Shift::None;
  return llvm::StringSwitch<Shift>(*shift)
      .Case("<<", Shift::Lsl)
      .Case(">>", Shift::Lsr)
      .Case(">>rot", Shift::Rotr)
      .Case(">>asr", Shift::Asr)
      .Case("<<indirect", Shift::LslInd)
      .Case(">>indirect", Shift::LsrInd)
      .Case(">>asr indirect", Shift::AsrInd)
      .Default(Shift::None);
}

me::Op rowOp(StringRef mnemonic, StringRef sub = "") {
  const InstrInfo *row = med::lookupRow(mnemonic, sub);
  assert(row && "a row the verifier accepted");
  return row->op;
}

class FuncEmitter {
public:
  FuncEmitter(med::FuncOp func, const Allocation &allocation,
              const ExitLabels &exits, CodeSection &section, EmitStats &stats)
      : func(func), allocation(allocation), exits(exits), section(section),
        stats(stats) {}

  LogicalResult run(const std::string &entry);

private:
  void emit(Instr instr, const std::string &target = "",
            const std::string &comment = "") {
    Line line;
    line.labels = std::move(section.pendingLabels);
    section.pendingLabels.clear();
    line.instr = instr;
    line.target = target;
    line.comment = comment;
    section.lines.push_back(std::move(line));
    ++stats.instructions;
  }
  void label(const std::string &name) { section.pendingLabels.push_back(name); }

  static Operand temp(Reg::Kind bank) {
    return Operand::make(
        bank == Reg::GprA ? OperandClass::GprA : OperandClass::GprB, tempIndex);
  }
  Reg regOf(Value v) const {
    if (auto arg = v.getDefiningOp<med::ArgOp>())
      return fixedArgRegister(arg.getName());
    if (auto hdr = v.getDefiningOp<med::HeaderOp>())
      return {Reg::XferD, hdr.getIndex()};
    auto it = allocation.registers.find(v);
    return it == allocation.registers.end() ? Reg() : it->second;
  }
  static std::optional<uint32_t> constOf(Value v) {
    if (auto c = v.getDefiningOp<med::ConstOp>())
      return c.getValue();
    return std::nullopt;
  }
  /// immed[temp, value].
  Operand loadTemp(Reg::Kind bank, uint32_t value) {
    Instr in;
    in.op = me::Op::Immed;
    in.dst = temp(bank);
    in.imm = value;
    emit(in);
    return in.dst;
  }
  static bool isGpr(Operand o, OperandClass cls) { return o.cls() == cls; }

  /// The two source operands of an instruction with one immediate field:
  /// constants become the immediate (one) or a temporary, and a pair that
  /// breaks the two-bank rule gets a move into a temporary.
  void sources(Value a, Value b, Instr &in) {
    in.a = Operand::none();
    in.b = Operand::none();
    bool immUsed = false;
    auto place = [&](Value v, Operand &slot, Operand other) {
      if (!v)
        return;
      if (auto c = constOf(v)) {
        if (*c <= 0xffff && !immUsed) {
          slot = Operand::imm();
          in.imm = *c;
          immUsed = true;
          return;
        }
        Reg::Kind bank =
            other.cls() == OperandClass::GprA ? Reg::GprB : Reg::GprA;
        slot = loadTemp(bank, *c);
        return;
      }
      slot = regOf(v).operand();
    };
    // Place the register operands first so temporaries avoid their bank.
    if (a && !constOf(a))
      place(a, in.a, Operand::none());
    if (b && !constOf(b))
      place(b, in.b, in.a);
    if (a && constOf(a))
      place(a, in.a, in.b);
    if (b && constOf(b))
      place(b, in.b, in.a);
    repairPair(in);
  }
  /// `dram[read]` of the 2 quadwords at `address` rounded down to
  /// `~quadMask + 1` bytes into pkt_read's transfer registers, then b15 =
  /// `address & lowMask`; returns b15.
  Operand readPacketQuadwords(Operand address, uint32_t quadMask,
                              uint32_t lowMask, llvm::StringRef comment) {
    Instr base;
    base.op = me::Op::AluAndNot;
    base.dst = temp(Reg::GprA);
    base.a = address;
    base.b = Operand::imm();
    base.imm = quadMask;
    repairPair(base);
    emit(base, "", comment.str());
    Instr read;
    read.op = me::Op::DramRead;
    read.dst = Operand::make(OperandClass::XferD, pktReadXfer);
    read.a = base.dst;
    read.b = Operand::imm();
    read.imm = 0;
    read.count = 2;
    read.sig = 15;
    read.sigMode = SigMode::CtxSwap;
    emit(read);
    Instr low;
    low.op = me::Op::AluAnd;
    low.dst = temp(Reg::GprB);
    low.a = address;
    low.b = Operand::imm();
    low.imm = lowMask;
    repairPair(low);
    emit(low);
    return low.dst;
  }
  void repairPair(Instr &in) {
    if (checkSourcePair(in.a, in.b).empty())
      return;
    // Move b into the temporary of the other bank.
    Reg::Kind bank = in.a.cls() == OperandClass::GprA ? Reg::GprB : Reg::GprA;
    Instr mv;
    mv.op = me::Op::AluB;
    mv.dst = temp(bank);
    mv.a = Operand::none();
    mv.b = in.b;
    if (in.b.isImm())
      mv.imm = in.imm;
    emit(mv);
    ++stats.bankMoves;
    in.b = mv.dst;
  }
  /// A single source (alu b, moves): constants as the immediate or immed.
  Operand source(Value v, Instr &in) {
    if (auto c = constOf(v)) {
      if (*c <= 0xffff) {
        in.imm = *c;
        return Operand::imm();
      }
      return loadTemp(Reg::GprA, *c);
    }
    return regOf(v).operand();
  }
  void move(Operand dst, Value src) {
    Instr in;
    in.op = me::Op::AluB;
    in.dst = dst;
    in.a = Operand::none();
    in.b = source(src, in);
    // A transfer register as a source is the read one, as a destination
    // the write one: $$0 to $$0 is a real move.
    bool xfer =
        dst.cls() == OperandClass::XferD || dst.cls() == OperandClass::XferS;
    if (in.b == dst && !xfer)
      return;
    emit(in);
  }

  /// A block's label, or where it forwards to when it only branches on.
  /// A move that leaves the condition codes alone.
  void keepingMove(Operand dst, Value src) {
    Instr in;
    if (auto c = constOf(src)) {
      in.op = me::Op::Immed;
      in.dst = dst;
      in.imm = *c;
      emit(in);
      return;
    }
    Operand from = regOf(src).operand();
    if (from == dst)
      return;
    in.op = me::Op::LdFieldClr;
    in.dst = dst;
    in.field = 0xf;
    in.a = Operand::none();
    in.b = from;
    emit(in);
  }
  std::string labelOf(Block *block) {
    auto it = forward.find(block);
    if (it != forward.end())
      return it->second;
    return labels.find(block)->second;
  }
  /// Parallel copies into a successor's arguments.
  void edgeCopies(Block *dest, OperandRange operands);
  /// Branch (or fall through) to a successor with its operands.
  void jumpTo(Block *dest, OperandRange operands, const std::string &next) {
    edgeCopies(dest, operands);
    if (labelOf(dest) != next) {
      Instr br;
      br.op = me::Op::Br;
      emit(br, labelOf(dest));
    }
  }
  /// A conditional branch to `dest`, through a stub when the edge has
  /// copies to make.
  std::string edgeTarget(Block *dest, OperandRange operands) {
    if (operands.empty())
      return labelOf(dest);
    std::string stub = labelOf(dest) + "_from" + std::to_string(stubs.size());
    stubs.push_back({stub, dest, operands});
    return stub;
  }
  void compare(StringRef op, Value a, Value b) {
    Instr in;
    in.op = rowOp("alu", op);
    in.dst = Operand::none();
    sources(a, b, in);
    emit(in);
  }
  void branch(StringRef cond, const std::string &target) {
    Instr in;
    in.op = rowOp(cond);
    emit(in, target);
  }

  LogicalResult emitOp(Operation *op, const std::string &next);

  med::FuncOp func;
  const Allocation &allocation;
  const ExitLabels &exits;
  CodeSection &section;
  EmitStats &stats;
  DenseMap<Block *, std::string> labels, forward;
  struct Stub {
    std::string label;
    Block *dest;
    OperandRange operands;
  };
  std::vector<Stub> stubs;
  unsigned localLabels = 0;
  std::string prefix;
};

void FuncEmitter::edgeCopies(Block *dest, OperandRange operands) {
  struct Move {
    Operand dst;
    Value src;
    Operand srcOperand; // when src was moved to a temporary
  };
  std::vector<Move> moves;
  for (auto [arg, value] : llvm::zip(dest->getArguments(), operands)) {
    // A dead argument has no register of its own (it interferes with
    // nothing): writing it could clobber a live value.
    if (arg.use_empty())
      continue;
    Operand dst = regOf(arg).operand();
    if (!constOf(value) && regOf(value).operand() == dst)
      continue;
    moves.push_back({dst, value, Operand::none()});
  }
  auto srcOf = [&](const Move &m) {
    return m.srcOperand.isNone() && !constOf(m.src) ? regOf(m.src).operand()
                                                    : m.srcOperand;
  };
  while (!moves.empty()) {
    bool progressed = false;
    for (size_t i = 0; i < moves.size(); ++i) {
      bool blocked = false;
      for (size_t j = 0; j < moves.size(); ++j)
        if (j != i && srcOf(moves[j]) == moves[i].dst)
          blocked = true;
      if (blocked)
        continue;
      if (!moves[i].srcOperand.isNone()) {
        Instr in;
        in.op = me::Op::AluB;
        in.dst = moves[i].dst;
        in.b = moves[i].srcOperand;
        emit(in);
      } else {
        move(moves[i].dst, moves[i].src);
      }
      moves.erase(moves.begin() + i);
      progressed = true;
      break;
    }
    if (!progressed) {
      // A cycle: park one source in a temporary.
      Move &m = moves.front();
      Instr in;
      in.op = me::Op::AluB;
      in.dst = temp(Reg::GprA);
      in.b = srcOf(m);
      emit(in);
      m.srcOperand = in.dst;
    }
  }
}

LogicalResult FuncEmitter::emitOp(Operation *op, const std::string &next) {
  Location loc = op->getLoc();
  (void)loc;
  auto dstOf = [&](Value v) { return regOf(v).operand(); };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<med::ConstOp, med::ArgOp, med::HeaderOp>(
          [&](Operation *) { return success(); })
      .Case([&](med::CopyOp o) {
        move(dstOf(o.getResult()), o.getInput());
        return success();
      })
      .Case([&](med::AluOp o) {
        Instr in;
        in.op = rowOp("alu", o.getOp());
        in.dst = dstOf(o.getResult());
        in.shift = shiftKind(o.getShift());
        in.shiftAmount = o.getAmount().value_or(0);
        sources(o.getA(), o.getB(), in);
        if (!o.getA())
          in.a = Operand::none();
        emit(in);
        return success();
      })
      .Case([&](med::LdFieldOp o) {
        Instr in;
        in.op = o.getOld() ? me::Op::LdField : me::Op::LdFieldClr;
        in.dst = dstOf(o.getResult());
        in.field = o.getMask();
        in.a = Operand::none();
        in.shift = shiftKind(o.getShift());
        in.shiftAmount = o.getAmount().value_or(0);
        in.b = source(o.getB(), in);
        if (o.getOld()) {
          if (in.b == in.dst) {
            // The source is about to be overwritten by the copy of old.
            Instr mv;
            mv.op = me::Op::AluB;
            mv.dst = temp(Reg::GprB);
            mv.b = in.b;
            emit(mv);
            in.b = mv.dst;
          }
          move(in.dst, o.getOld());
        }
        emit(in);
        return success();
      })
      .Case([&](med::ImmedHalfOp o) {
        Instr in;
        in.op = o.getHalf() ? me::Op::ImmedW1 : me::Op::ImmedW0;
        in.dst = dstOf(o.getResult());
        in.imm = o.getValue();
        move(in.dst, o.getOld());
        emit(in);
        return success();
      })
      .Case([&](med::ByteAlignOp o) {
        Instr in;
        in.op = me::Op::ByteAlign;
        in.dst = dstOf(o.getResult());
        in.field = o.getN();
        sources(o.getA(), o.getB(), in);
        emit(in);
        return success();
      })
      .Case([&](med::SetCCOp o) {
        compare(o.getOp(), o.getA(), o.getB());
        Operand dst = dstOf(o.getResult());
        std::string done = prefix + "_l" + std::to_string(localLabels++);
        Instr one;
        one.op = me::Op::Immed;
        one.dst = dst;
        one.imm = 1;
        emit(one);
        branch(o.getCond(), done);
        Instr zero = one;
        zero.imm = 0;
        emit(zero);
        label(done);
        return success();
      })
      .Case([&](med::SelectOp o) {
        compare(o.getOp(), o.getA(), o.getB());
        Operand dst = dstOf(o.getResult());
        std::string done = prefix + "_l" + std::to_string(localLabels++);
        // Between the compare and its branch only moves that keep the
        // condition codes: immed and ld_field_w_clr (an alu would set them).
        keepingMove(dst, o.getTrueValue());
        branch(o.getCond(), done);
        keepingMove(dst, o.getFalseValue());
        label(done);
        // The moves may be empty (both in dst): keep a target for the label.
        return success();
      })
      .Case([&](med::PacketReadOp o) {
        Operand dst = dstOf(o.getResult());
        Operand address = regOf(o.getAddress()).operand();
        std::string hi = prefix + "_l" + std::to_string(localLabels++);
        std::string done = prefix + "_l" + std::to_string(localLabels++);
        Operand d0 = Operand::make(OperandClass::XferD, pktReadXfer);
        Operand d1 = Operand::make(OperandClass::XferD, pktReadXfer + 1);
        Operand d2 = Operand::make(OperandClass::XferD, pktReadXfer + 2);
        Operand low = readPacketQuadwords(address, 7, 3,
                                          "the quadwords holding the bytes");
        Instr csr;
        csr.op = me::Op::CsrWr;
        csr.csr = static_cast<uint16_t>(Csr::ByteIndex);
        csr.a = low;
        emit(csr);
        Instr bit;
        bit.op = me::Op::BrBset;
        bit.a = address;
        bit.field = 2;
        emit(bit, hi);
        Instr align;
        align.op = me::Op::ByteAlign;
        align.dst = dst;
        align.a = d0;
        align.b = d1;
        align.field = 4; // byte_index
        emit(align);
        Instr br;
        br.op = me::Op::Br;
        emit(br, done);
        label(hi);
        align.a = d1;
        align.b = d2;
        emit(align);
        label(done);
        if (o.getSize() < 4) {
          Instr shr;
          shr.op = me::Op::AluB;
          shr.dst = dst;
          shr.a = Operand::none();
          shr.b = dst;
          shr.shift = Shift::Lsr;
          shr.shiftAmount = 32 - 8 * o.getSize();
          emit(shr);
        }
        return success();
      })
      .Case([&](med::PacketFillOp o) {
        // t_index = pktReadXfer + the word's place in the 16 bytes.
        Operand word = readPacketQuadwords(regOf(o.getAddress()).operand(), 15,
                                           15, "the 16 bytes holding the word");
        Instr shr;
        shr.op = me::Op::AluB;
        shr.dst = word;
        shr.a = Operand::none();
        shr.b = word;
        shr.shift = Shift::Lsr;
        shr.shiftAmount = 2;
        emit(shr);
        Instr add;
        add.op = me::Op::AluAdd;
        add.dst = word;
        add.a = word;
        add.b = Operand::imm();
        add.imm = pktReadXfer;
        repairPair(add);
        emit(add);
        Instr csr;
        csr.op = me::Op::CsrWr;
        csr.csr = static_cast<uint16_t>(Csr::TIndex);
        csr.a = word;
        emit(csr);
        return success();
      })
      .Case([&](med::PacketNextOp o) {
        Instr in;
        in.op = me::Op::AluB;
        in.dst = dstOf(o.getResult());
        in.a = Operand::none();
        in.b =
            Operand::make(OperandClass::Special,
                          static_cast<unsigned>(SpecialOperand::XferDIndexInc));
        emit(in);
        return success();
      })
      .Case([&](med::MemOp o) {
        // The data words go to write transfer registers first.
        bool dram = o.getUnit() == "dram";
        OperandClass xfer = dram ? OperandClass::XferD : OperandClass::XferS;
        for (auto [i, v] : llvm::enumerate(o.getData()))
          move(Operand::make(xfer, static_cast<unsigned>(i)), v);
        Instr in;
        in.op = rowOp(o.getUnit(), o.getCmd());
        in.dst = o.getNumResults() ? regOf(o.getResult(0)).operand()
                                   : Operand::make(xfer, 0);
        sources(o.getA(), o.getB(), in);
        in.count = o.getCount();
        in.sig = 15;
        in.sigMode = SigMode::CtxSwap;
        emit(in);
        return success();
      })
      .Case([&](med::ArgSetOp o) {
        move(fixedArgRegister(o.getName()).operand(), o.getValue());
        return success();
      })
      .Case([&](med::LocalReadOp o) {
        Instr in;
        in.op = me::Op::AluB;
        in.dst = dstOf(o.getResult());
        in.a = Operand::none();
        in.b = Operand::lm(o.getWindow(), LmMode::Offset, o.getWord());
        emit(in);
        return success();
      })
      .Case([&](med::LocalWriteOp o) {
        Instr in;
        in.op = me::Op::AluB;
        in.dst = Operand::lm(o.getWindow(), LmMode::Offset, o.getWord());
        in.a = Operand::none();
        in.b = source(o.getValue(), in);
        emit(in);
        return success();
      })
      .Case([&](med::CrcOp o) {
        Instr in;
        in.op = o.getBigEndian() ? me::Op::CrcBe : me::Op::CrcLe;
        in.dst = dstOf(o.getResult());
        in.field =
            uint8_t(o.getKind() == "crc_32" ? CrcKind::Crc32 : CrcKind::Crc32c);
        in.a = Operand::none();
        in.b = source(o.getInput(), in);
        emit(in);
        return success();
      })
      .Case([&](med::CamClearOp) {
        Instr in;
        in.op = me::Op::CamClear;
        emit(in);
        return success();
      })
      .Case([&](med::CamLookupOp o) {
        Instr in;
        in.op = me::Op::CamLookup;
        in.dst = dstOf(o.getResult());
        in.a = Operand::none();
        in.b = source(o.getTag(), in);
        emit(in);
        return success();
      })
      .Case([&](med::CamWriteOp o) {
        Instr in;
        in.op = me::Op::CamWrite;
        sources(o.getEntry(), o.getTag(), in);
        in.field = uint8_t(o.getState());
        emit(in);
        return success();
      })
      .Case([&](med::CsrReadOp o) {
        Instr in;
        in.op = me::Op::CsrRd;
        in.dst = dstOf(o.getResult());
        for (unsigned c = 0; c < static_cast<unsigned>(Csr::Count); ++c)
          if (o.getCsr() == csrName(static_cast<Csr>(c)))
            in.csr = c;
        emit(in);
        return success();
      })
      .Case([&](med::CsrWriteOp o) {
        Instr in;
        in.op = me::Op::CsrWr;
        for (unsigned c = 0; c < static_cast<unsigned>(Csr::Count); ++c)
          if (o.getCsr() == csrName(static_cast<Csr>(c)))
            in.csr = c;
        in.a = source(o.getValue(), in);
        emit(in);
        return success();
      })
      .Case([&](med::NopOp) {
        Instr in;
        in.op = me::Op::Nop;
        emit(in);
        return success();
      })
      .Case([&](med::BrOp o) {
        jumpTo(o.getDest(), o.getDestOperands(), next);
        return success();
      })
      .Case([&](med::CmpBrOp o) {
        compare(o.getOp(), o.getA(), o.getB());
        // Prefer falling through to the false successor.
        if (labelOf(o.getFalseDest()) == next ||
            labelOf(o.getTrueDest()) != next || !o.getTrueOperands().empty()) {
          branch(o.getCond(), edgeTarget(o.getTrueDest(), o.getTrueOperands()));
          jumpTo(o.getFalseDest(), o.getFalseOperands(), next);
        } else {
          branch(med::invertCondition(o.getCond()),
                 edgeTarget(o.getFalseDest(), o.getFalseOperands()));
          jumpTo(o.getTrueDest(), o.getTrueOperands(), next);
        }
        return success();
      })
      .Case([&](med::BitBrOp o) {
        Instr in;
        in.op = o.getSet() ? me::Op::BrBset : me::Op::BrBclr;
        in.a = regOf(o.getInput()).operand();
        in.field = o.getBit();
        emit(in, edgeTarget(o.getTrueDest(), o.getTrueOperands()));
        jumpTo(o.getFalseDest(), o.getFalseOperands(), next);
        return success();
      })
      .Case([&](med::ByteBrOp o) {
        Instr in;
        in.op = o.getEqual() ? me::Op::BrEqByte : me::Op::BrNeByte;
        in.a = regOf(o.getInput()).operand();
        in.field = o.getByte();
        in.value = o.getValue();
        emit(in, labelOf(o.getTrueDest()));
        jumpTo(o.getFalseDest(),
               OperandRange(o->getOperands().end(), o->getOperands().end()),
               next);
        return success();
      })
      .Case([&](med::SwitchOp o) {
        // Dense switches of 4 or more cases (a range at most twice the
        // number of cases, at most 64) jump through a table of branches:
        // 4 instructions whatever the case; others are a chain of
        // compares, 2 instructions a case.
        ArrayRef<int32_t> cases = o.getCases();
        if (cases.size() >= 4 && !constOf(o.getInput())) {
          uint32_t lo = static_cast<uint32_t>(cases[0]), hi = lo;
          for (int32_t c : cases) {
            lo = std::min(lo, static_cast<uint32_t>(c));
            hi = std::max(hi, static_cast<uint32_t>(c));
          }
          uint64_t range = uint64_t(hi) - lo + 1;
          if (range <= 2 * cases.size() && range <= 64) {
            Operand x = regOf(o.getInput()).operand();
            Operand index = temp(Reg::GprA);
            Instr sub;
            sub.op = me::Op::AluSub;
            sub.dst = index;
            sub.a = x;
            if (lo <= 0xffff) {
              sub.b = Operand::imm();
              sub.imm = lo;
            } else {
              sub.b = loadTemp(
                  x.cls() == OperandClass::GprB ? Reg::GprA : Reg::GprB, lo);
            }
            repairPair(sub);
            emit(sub, "", "jump table");
            Instr cmp;
            cmp.op = me::Op::AluSub;
            cmp.dst = Operand::none();
            cmp.a = index;
            cmp.b = Operand::imm();
            cmp.imm = static_cast<uint32_t>(range);
            emit(cmp);
            branch("bcc", labelOf(o.getDests()[0]));
            std::string table = prefix + "_l" + std::to_string(localLabels++);
            Instr jump;
            jump.op = me::Op::Jump;
            jump.a = index;
            emit(jump, table);
            label(table);
            for (uint64_t k = 0; k < range; ++k) {
              Block *dest = o.getDests()[0];
              for (auto [i, value] : llvm::enumerate(cases))
                if (static_cast<uint32_t>(value) == lo + k)
                  dest = o.getDests()[i + 1];
              Instr br;
              br.op = me::Op::Br;
              emit(br, labelOf(dest));
              section.lines.back().fixed = true;
            }
            return success();
          }
        }
        // A chain of compares; the most common NetIL switches are small.
        for (auto [i, value] : llvm::enumerate(o.getCases())) {
          Instr in;
          in.op = me::Op::AluSub;
          in.dst = Operand::none();
          in.a = regOf(o.getInput()).operand();
          if (auto c = constOf(o.getInput()))
            in.a = loadTemp(Reg::GprA, *c);
          uint32_t v = static_cast<uint32_t>(value);
          if (v <= 0xffff) {
            in.b = Operand::imm();
            in.imm = v;
          } else {
            in.b = loadTemp(
                in.a.cls() == OperandClass::GprA ? Reg::GprB : Reg::GprA, v);
          }
          repairPair(in);
          emit(in);
          branch("beq", labelOf(o.getDests()[i + 1]));
        }
        Block *dflt = o.getDests()[0];
        if (labelOf(dflt) != next) {
          Instr br;
          br.op = me::Op::Br;
          emit(br, labelOf(dflt));
        }
        return success();
      })
      .Case([&](med::WatchdogOp o) {
        Operand counter = Operand::make(OperandClass::GprA, watchdogRegA);
        Instr in;
        in.op = me::Op::AluSub;
        in.dst = counter;
        in.a = counter;
        in.b = Operand::imm();
        in.imm = 1;
        emit(in, "", "watchdog");
        branch("bcs", labelOf(o.getExpired()));
        if (labelOf(o.getNext()) != next) {
          Instr br;
          br.op = me::Op::Br;
          emit(br, labelOf(o.getNext()));
        }
        return success();
      })
      .Case([&](med::SendOp o) {
        Instr br;
        br.op = me::Op::Br;
        emit(br, exits.send(o.getPort()));
        return success();
      })
      .Case([&](med::StateTokenOp) {
        if (exits.stateWord < 0)
          return success();
        Operand held = Operand::lm(0, LmMode::Offset, exits.stateWord);
        std::string have = prefix + "_l" + std::to_string(localLabels++);
        Instr test;
        test.op = me::Op::AluB;
        test.dst = Operand::none();
        test.a = Operand::none();
        test.b = held;
        emit(test, "", "the state token: held already?");
        branch("bne", have);
        emit(asmLine("ctx_arb[s7]").instr);
        Instr set;
        set.op = me::Op::AluB;
        set.dst = held;
        set.a = Operand::none();
        set.b = Operand::imm();
        set.imm = 1;
        emit(set);
        label(have);
        return success();
      })
      .Case([&](med::SendCopyOp o) -> LogicalResult {
        if (!exits.sendCopy)
          return o.emitError("internal error: no packet path for send_copy");
        std::string error;
        if (!exits.sendCopy(o.getPort(), section, error))
          return o.emitError(error);
        return success();
      })
      .Case([&](med::DropOp o) {
        if (o.getCounted() && exits.dropCounter) {
          // Fire and forget: the emulator completes it before the run ends.
          std::string address = std::to_string(exits.dropCounter);
          if (exits.dropCounter > 0xffff) {
            emit(asmLine("immed[a15, " + address + "]").instr);
            address = "a15";
          }
          emit(asmLine("sram[incr, --, " + address + ", 0]").instr, "",
               "dropped");
        }
        Instr br;
        br.op = me::Op::Br;
        emit(br, o.getLogged() ? exits.dropLogged : exits.drop);
        return success();
      })
      .Case([&](med::RaiseOp o) {
        Instr kind;
        kind.op = me::Op::Immed;
        kind.dst = temp(Reg::GprA);
        kind.imm = exits.pe | (o.getKind() << 16);
        emit(kind, "", "exception");
        Instr where = kind;
        where.dst = temp(Reg::GprB);
        where.imm = o.getLocation();
        emit(where);
        Instr br;
        br.op = me::Op::Br;
        emit(br, exits.raise);
        return success();
      })
      .Default([&](Operation *op) {
        return op->emitError("the microengine emitter does not handle '")
               << op->getName() << "' yet";
      });
}

LogicalResult FuncEmitter::run(const std::string &entry) {
  prefix = entry;
  unsigned n = 0;
  for (Block &block : func.getBody())
    labels[&block] = n++ == 0 ? entry : entry + "_" + std::to_string(n - 1);
  // Blocks that only branch on (to a block, a send or a drop) are not
  // emitted: branches to them go straight to where they lead.
  std::function<std::optional<std::string>(Block *, unsigned)> leadsTo =
      [&](Block *block, unsigned depth) -> std::optional<std::string> {
    if (block->isEntryBlock() || block->getNumArguments() ||
        !llvm::hasSingleElement(*block) || depth > 16)
      return std::nullopt;
    Operation &op = block->front();
    if (auto send = dyn_cast<med::SendOp>(op))
      return exits.send(send.getPort());
    if (auto drop = dyn_cast<med::DropOp>(op)) {
      if (drop.getCounted())
        return std::nullopt; // the count comes first
      return drop.getLogged() ? exits.dropLogged : exits.drop;
    }
    if (auto br = dyn_cast<med::BrOp>(op)) {
      if (!br.getDestOperands().empty())
        return std::nullopt;
      if (auto further = leadsTo(br.getDest(), depth + 1))
        return further;
      return labels[br.getDest()];
    }
    return std::nullopt;
  };
  for (Block &block : func.getBody())
    if (auto target = leadsTo(&block, 0))
      forward[&block] = *target;
  // Layout: chains of blocks, each followed by the block it falls into
  // (the false successor of a compare, the target of a branch).
  auto fallsInto = [&](Block *block) -> Block * {
    Operation *term = block->getTerminator();
    Block *dest = nullptr;
    if (auto br = dyn_cast<med::BrOp>(term))
      dest = br.getDest();
    else if (auto cmp = dyn_cast<med::CmpBrOp>(term))
      dest = cmp.getFalseDest();
    else if (auto bit = dyn_cast<med::BitBrOp>(term))
      dest = bit.getFalseDest();
    else if (auto wd = dyn_cast<med::WatchdogOp>(term))
      dest = wd.getNext();
    // Through blocks that only branch on.
    for (unsigned depth = 0; dest && forward.count(dest) && depth < 16;
         ++depth) {
      auto br = dyn_cast<med::BrOp>(dest->front());
      dest = br ? br.getDest() : nullptr;
    }
    return dest;
  };
  std::vector<Block *> emitted;
  llvm::SmallPtrSet<Block *, 16> placed;
  for (Block &start : func.getBody()) {
    for (Block *block = &start;
         block && !forward.count(block) && placed.insert(block).second;
         block = fallsInto(block))
      emitted.push_back(block);
  }
  for (size_t i = 0; i < emitted.size(); ++i) {
    Block *block = emitted[i];
    label(labels[block]);
    std::string next =
        i + 1 < emitted.size() ? labels[emitted[i + 1]] : std::string();
    for (Operation &op : *block)
      if (failed(emitOp(&op, next)))
        return failure();
  }
  for (size_t i = 0; i < stubs.size(); ++i) {
    Stub stub = stubs[i];
    label(stub.label);
    jumpTo(stub.dest, stub.operands, "");
  }
  return success();
}

} // namespace

LogicalResult netvm::me::emitHandler(med::FuncOp func,
                                     const Allocation &allocation,
                                     const ExitLabels &exits,
                                     const std::string &entry,
                                     CodeSection &section, EmitStats &stats) {
  return FuncEmitter(func, allocation, exits, section, stats).run(entry);
}
