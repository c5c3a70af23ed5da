//===- Isa.cpp - Encoding, decoding and printing ME instructions ---------===//
//
// The field layout of the 64-bit instruction word (docs/me-isa.md,
// "Encoding"), shared by the assembler, the disassembler and the emulator:
//
//   63..56 opcode | 55..46 DST | 45..36 A | 35..26 B | 25..16 X | 15..0 IMM
//
// DST, A and B hold 10-bit operand specifiers where a format has operands;
// X holds the format's small fields; IMM the 16-bit immediate operand or
// the branch target. immed keeps its 32-bit value in bits 31..0.
//
//===----------------------------------------------------------------------===//

#include "netvm/emu/Isa.h"

#include <cstdio>

using namespace netvm::me;

static const InstrInfo table[] = {
#define ME_INSTR(Name, Opcode, Mnemonic, Sub, Fmt, Cycles, Flags)              \
  {Op::Name, Mnemonic, Sub, Format::Fmt, Cycles, Flags},
#include "netvm/emu/MEInstrs.def"
};

namespace {
/// Opcode -> row, built once from the table.
struct OpcodeIndex {
  const InstrInfo *rows[256] = {};
  OpcodeIndex() {
    for (const InstrInfo &info : table)
      rows[static_cast<uint8_t>(info.op)] = &info;
  }
};
} // namespace

const InstrInfo *netvm::me::lookupOpcode(uint8_t opcode) {
  static const OpcodeIndex index;
  return index.rows[opcode];
}

const InstrInfo *netvm::me::instrTable(size_t &count) {
  count = sizeof(table) / sizeof(table[0]);
  return table;
}

const InstrInfo &Instr::info() const { return *lookupOpcode(uint8_t(op)); }

static const char *const csrNames[] = {
    "active_lm_addr_0", "active_lm_addr_1",     "byte_index",
    "t_index",          "timestamp_low",        "timestamp_high",
    "active_ctx_sts",   "same_me_signal",       "next_neighbor_signal",
    "crc_remainder",    "prev_neighbor_signal", "interthread_signal"};
static_assert(sizeof(csrNames) / sizeof(csrNames[0]) == size_t(Csr::Count),
              "one name per CSR");

const char *netvm::me::formatName(Format format) {
  static const char *const names[] = {
      "None",      "CtxArb",        "Alu",    "Immed", "ImmedHalf", "LdField",
      "ByteAlign", "Branch",        "BrByte", "BrBit", "BrCtx",     "BrSignal",
      "BrState",   "Jump",          "Rtn",    "CsrRd", "CsrWr",     "DstSrc",
      "CamWrite",  "CamWriteState", "Crc",    "Mem",   "Hash"};
  static_assert(sizeof(names) / sizeof(names[0]) == size_t(Format::Hash) + 1,
                "one name per format");
  return names[size_t(format)];
}

const char *netvm::me::csrName(Csr csr) {
  return csr < Csr::Count ? csrNames[size_t(csr)] : nullptr;
}

bool netvm::me::csrReadable(Csr csr) {
  return csr < Csr::Count && csr != Csr::SameMeSignal &&
         csr != Csr::NextNeighborSignal && csr != Csr::PrevNeighborSignal &&
         csr != Csr::InterthreadSignal;
}

bool netvm::me::csrWritable(Csr csr) {
  return csr < Csr::Count && csr != Csr::TimestampLow &&
         csr != Csr::TimestampHigh && csr != Csr::ActiveCtxSts;
}

std::string netvm::me::stateName(unsigned state) {
  if (state == StateNnEmpty)
    return "nn_empty";
  if (state == StateNnFull)
    return "nn_full";
  if (state >= StateRingFull && state < StateRingEmpty)
    return "scr_ring" + std::to_string(state - StateRingFull) + "_full";
  if (state >= StateRingEmpty && state < StateCount)
    return "scr_ring" + std::to_string(state - StateRingEmpty) + "_empty";
  return "";
}

//===----------------------------------------------------------------------===//
// Field layout
//===----------------------------------------------------------------------===//

namespace {
/// Which of the common fields a format uses.
struct Layout {
  bool dst, a, b;  // operand specifiers
  bool rawA, rawB; // A or B holds a raw value instead
  bool imm16;      // IMM is an immediate operand (only if one is Imm)
  bool target;     // IMM is a branch target / jump base
};
} // namespace

static Layout layoutOf(Format format) {
  enum : uint8_t { D = 1, A = 2, B = 4, RawA = 8, RawB = 16, I = 32, T = 64 };
  // One entry per Format, in declaration order.
  static const uint8_t layouts[] = {
      0,                // None
      0,                // CtxArb: mode in X, signal mask in IMM
      D | A | B | I,    // Alu
      D,                // Immed: value in bits 31..0
      D,                // ImmedHalf: value in IMM
      D | RawA | B | I, // LdField: byte mask in A
      D | A | B | I,    // ByteAlign
      T,                // Branch
      A | RawB | T,     // BrByte: compared byte in B
      A | T,            // BrBit
      T,                // BrCtx
      T,                // BrSignal
      T,                // BrState
      A | T,            // Jump
      A,                // Rtn
      D,                // CsrRd
      A | I,            // CsrWr
      D | B | I,        // DstSrc
      A | B | I,        // CamWrite
      A | I,            // CamWriteState
      D | B | I,        // Crc
      D | A | B | I,    // Mem
      D,                // Hash
  };
  static_assert(sizeof(layouts) == size_t(Format::Hash) + 1,
                "one layout per format");
  uint8_t l = layouts[size_t(format)];
  return {bool(l & D),    bool(l & A), bool(l & B), bool(l & RawA),
          bool(l & RawB), bool(l & I), bool(l & T)};
}

static uint64_t bits(uint64_t word, unsigned hi, unsigned lo) {
  return (word >> lo) & ((uint64_t(1) << (hi - lo + 1)) - 1);
}

static uint64_t place(uint64_t value, unsigned hi, unsigned lo) {
  return (value & ((uint64_t(1) << (hi - lo + 1)) - 1)) << lo;
}

/// The X field (bits 25..16) of an instruction, relative to bit 16.
static uint32_t packX(const Instr &in, Format format) {
  switch (format) {
  case Format::CtxArb:
    return in.field & 3;
  case Format::Alu:
  case Format::LdField:
    return (uint32_t(in.shift) << 7) | (uint32_t(in.shiftAmount & 31) << 2);
  case Format::ByteAlign:
  case Format::CamWrite:
  case Format::CamWriteState:
  case Format::Crc:
    return in.field;
  case Format::Branch:
  case Format::Jump:
  case Format::Rtn:
    return in.defer & 3;
  case Format::BrByte:
  case Format::BrBit:
  case Format::BrCtx:
  case Format::BrSignal:
  case Format::BrState:
    return (uint32_t(in.field) << 2) | (in.defer & 3);
  case Format::CsrRd:
  case Format::CsrWr:
    return in.csr;
  case Format::Mem:
  case Format::Hash:
    return (uint32_t((in.count - 1) & 15) << 6) | (uint32_t(in.sig & 15) << 2) |
           uint32_t(in.sigMode);
  case Format::None:
  case Format::Immed:
  case Format::ImmedHalf:
  case Format::DstSrc:
    return 0;
  }
  return 0;
}

uint64_t netvm::me::encode(const Instr &in) {
  const InstrInfo &info = in.info();
  Layout layout = layoutOf(info.format);
  uint64_t word = place(uint8_t(in.op), 63, 56);
  word |= place(layout.dst ? in.dst.spec : Operand::noneSpec, 55, 46);
  if (info.format == Format::Immed)
    return word | in.imm; // bits 31..0; bits 45..32 stay zero
  if (info.format == Format::LdField)
    word |= place(in.field, 45, 36);
  else
    word |= place(layout.a ? in.a.spec : Operand::noneSpec, 45, 36);
  if (info.format == Format::BrByte)
    word |= place(in.value, 35, 26);
  else
    word |= place(layout.b ? in.b.spec : Operand::noneSpec, 35, 26);
  word |= place(packX(in, info.format), 25, 16);
  if (info.format == Format::CtxArb)
    word |= place(in.sigMask, 15, 0);
  else if (info.format == Format::ImmedHalf || layout.imm16 || layout.target)
    word |= place(in.imm, 15, 0);
  return word;
}

//===----------------------------------------------------------------------===//
// Decoding
//===----------------------------------------------------------------------===//

static bool operandValid(Operand op, std::string &why) {
  switch (op.cls()) {
  case OperandClass::GprA:
  case OperandClass::GprB:
  case OperandClass::XferS:
  case OperandClass::XferD:
    if (op.index() >= 32) {
      why = "register index " + std::to_string(op.index()) + " out of range";
      return false;
    }
    return true;
  case OperandClass::NN:
    return true;
  case OperandClass::LM:
    if (op.lmMode() != LmMode::Offset && op.lmOffset() != 0) {
      why = "local-memory operand with both an offset and an increment";
      return false;
    }
    if (unsigned(op.lmMode()) > 2) {
      why = "bad local-memory access mode";
      return false;
    }
    return true;
  case OperandClass::Special:
    if (op.index() > unsigned(SpecialOperand::XferDIndexInc)) {
      why = "bad special operand " + std::to_string(op.index());
      return false;
    }
    return true;
  }
  why = "bad operand class 7";
  return false;
}

std::string netvm::me::checkSourcePair(Operand a, Operand b) {
  if (a.isGpr() && a.cls() == b.cls())
    return std::string("both source operands are in GPR bank ") +
           (a.cls() == OperandClass::GprA ? "A" : "B") +
           "; an instruction reads at most one operand from each bank";
  if (a.cls() == OperandClass::LM && b.cls() == OperandClass::LM)
    return "both source operands are in local memory; an instruction "
           "reads at most one local-memory operand";
  if (a.isImm() && b.isImm())
    return "both source operands are immediates; an instruction has one "
           "immediate field";
  return "";
}

unsigned netvm::me::transferWords(Op op, unsigned count) {
  return (op == Op::DramRead || op == Op::DramWrite || op == Op::Hash64)
             ? 2 * count
             : count;
}

bool netvm::me::isAtomic(Op op) {
  return (op >= Op::ScratchAdd && op <= Op::ScratchDecr) ||
         (op >= Op::SramAdd && op <= Op::SramDecr);
}

/// Whether `op` may be written.
static bool writable(Operand op) { return !op.isImm(); }

bool netvm::me::decode(uint64_t word, Instr &in, std::string &why) {
  in = Instr();
  const InstrInfo *info = lookupOpcode(uint8_t(bits(word, 63, 56)));
  if (!info) {
    why = "undefined opcode " + printNumber(bits(word, 63, 56));
    return false;
  }
  in.op = info->op;
  Format format = info->format;
  Layout layout = layoutOf(format);
  Operand dst{uint16_t(bits(word, 55, 46))}, a{uint16_t(bits(word, 45, 36))},
      b{uint16_t(bits(word, 35, 26))};
  uint32_t x = uint32_t(bits(word, 25, 16));
  uint32_t imm = uint32_t(bits(word, 15, 0));

  auto unused = [&](bool used, Operand op, const char *name) {
    if (used || op.isNone())
      return true;
    why = std::string("unused field ") + name + " is not empty";
    return false;
  };
  if (format == Format::Immed) {
    if (bits(word, 45, 32) != 0) {
      why = "bits 45..32 of immed are not zero";
      return false;
    }
    if (!operandValid(dst, why))
      return false;
    if (!writable(dst)) {
      why = "destination is not writable";
      return false;
    }
    in.dst = dst;
    in.imm = uint32_t(word);
    return true;
  }
  if (!unused(layout.dst, dst, "DST") ||
      !unused(layout.a || layout.rawA, a, "A") ||
      !unused(layout.b || layout.rawB, b, "B"))
    return false;
  if (layout.dst) {
    if (!operandValid(dst, why))
      return false;
    if (!writable(dst)) {
      why = "destination is not writable";
      return false;
    }
    in.dst = dst;
  }
  if (layout.a) {
    if (!operandValid(a, why))
      return false;
    in.a = a;
  }
  if (layout.b) {
    if (!operandValid(b, why))
      return false;
    in.b = b;
  }
  if (layout.a && layout.b) {
    why = checkSourcePair(a, b);
    if (!why.empty())
      return false;
  }
  bool hasImmOperand = in.a.isImm() || in.b.isImm();
  if (format == Format::CtxArb)
    ; // the signal mask, below
  else if (format == Format::ImmedHalf || layout.target ||
           (layout.imm16 && hasImmOperand))
    in.imm = imm;
  else if (imm != 0) {
    why = "unused IMM field is not zero";
    return false;
  }

  auto xRange = [&](uint32_t limit) {
    if (x < limit)
      return true;
    why = "bad X field " + printNumber(x);
    return false;
  };
  switch (format) {
  case Format::None:
  case Format::ImmedHalf:
  case Format::DstSrc:
    return xRange(1);
  case Format::CtxArb:
    if (!xRange(4))
      return false;
    in.field = uint8_t(x);
    in.sigMask = uint16_t(imm);
    if ((in.sigMask & 1) ||
        ((ArbMode(x) == ArbMode::All || ArbMode(x) == ArbMode::Any) &&
         in.sigMask == 0) ||
        ((ArbMode(x) == ArbMode::Voluntary || ArbMode(x) == ArbMode::Kill) &&
         in.sigMask != 0)) {
      why = "bad signal mask " + printNumber(imm);
      return false;
    }
    return true;
  case Format::Alu:
  case Format::LdField:
    if ((x & 3) != 0) {
      why = "bad X field " + printNumber(x);
      return false;
    }
    in.shift = Shift(x >> 7);
    in.shiftAmount = uint8_t((x >> 2) & 31);
    if ((in.shift == Shift::None || in.shift >= Shift::LslInd) !=
        (in.shiftAmount == 0)) {
      why = in.shiftAmount ? "shift amount without a constant shift"
                           : "constant shift by 0";
      return false;
    }
    if (format == Format::LdField) {
      if (bits(word, 45, 36) > 15 || bits(word, 45, 36) == 0) {
        why = "bad byte mask " + printNumber(bits(word, 45, 36));
        return false;
      }
      in.field = uint8_t(bits(word, 45, 36));
      if (in.shift >= Shift::LslInd) {
        why = "ld_field has no indirect shift";
        return false;
      }
    }
    return true;
  case Format::ByteAlign:
    if (!xRange(5))
      return false;
    in.field = uint8_t(x);
    return true;
  case Format::Branch:
  case Format::Jump:
  case Format::Rtn:
    if (!xRange(4))
      return false;
    in.defer = uint8_t(x);
    return true;
  case Format::BrByte:
    if (bits(word, 35, 34) != 0) {
      why = "bits 35..34 of br=byte are not zero";
      return false;
    }
    if (!xRange(16))
      return false;
    in.value = uint8_t(bits(word, 33, 26));
    in.field = uint8_t(x >> 2);
    in.defer = uint8_t(x & 3);
    return true;
  case Format::BrBit:
  case Format::BrCtx:
  case Format::BrSignal:
  case Format::BrState: {
    uint32_t limit = format == Format::BrBit      ? 32
                     : format == Format::BrCtx    ? 8
                     : format == Format::BrSignal ? numSignals
                                                  : StateCount;
    in.field = uint8_t(x >> 2);
    in.defer = uint8_t(x & 3);
    if ((x >> 2) >= limit || (format == Format::BrSignal && in.field == 0)) {
      why = "bad X field " + printNumber(x);
      return false;
    }
    return true;
  }
  case Format::CsrRd:
  case Format::CsrWr:
    in.csr = uint16_t(x);
    if (format == Format::CsrRd ? !csrReadable(Csr(x)) : !csrWritable(Csr(x))) {
      why = std::string("CSR ") + printNumber(x) + " cannot be " +
            (format == Format::CsrRd ? "read" : "written");
      return false;
    }
    return true;
  case Format::CamWrite:
  case Format::CamWriteState:
    if (!xRange(16))
      return false;
    in.field = uint8_t(x);
    return true;
  case Format::Crc:
    if (!xRange(2))
      return false;
    in.field = uint8_t(x);
    return true;
  case Format::Mem:
  case Format::Hash: {
    in.count = uint8_t(((x >> 6) & 15) + 1);
    in.sig = uint8_t((x >> 2) & 15);
    in.sigMode = SigMode(x & 3);
    if (unsigned(in.sigMode) > 2 ||
        (in.sigMode == SigMode::None) != (in.sig == 0)) {
      why = "bad signal field " + printNumber(x & 63);
      return false;
    }
    if (isAtomic(in.op) && in.count != 1) {
      why = "an atomic command works on one word";
      return false;
    }
    if ((in.op == Op::MsfRx && in.count > 6) ||
        (in.op == Op::MsfTx && in.count > 4) ||
        (transferWords(in.op, 1) == 2 && in.count > 8)) {
      why = "count " + std::to_string(in.count) + " too large for the command";
      return false;
    }
    if (in.dst.isNone() &&
        (in.op == Op::ScratchIncr || in.op == Op::ScratchDecr ||
         in.op == Op::SramIncr || in.op == Op::SramDecr))
      return true;
    OperandClass want = (in.op == Op::DramRead || in.op == Op::DramWrite)
                            ? OperandClass::XferD
                            : OperandClass::XferS;
    if (in.dst.cls() != want) {
      why = std::string("the transfer operand is not a ") +
            (want == OperandClass::XferD ? "$$" : "$") + " register";
      return false;
    }
    if (in.dst.index() + transferWords(in.op, in.count) > 32) {
      why = "transfer registers beyond the last one";
      return false;
    }
    return true;
  }
  case Format::Immed:
    break;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

std::string netvm::me::printNumber(uint64_t value) {
  if (value < 16)
    return std::to_string(value);
  char buffer[24];
  std::snprintf(buffer, sizeof(buffer), "0x%llx",
                static_cast<unsigned long long>(value));
  return buffer;
}

std::string netvm::me::printOperand(Operand op, uint32_t imm) {
  unsigned i = op.index();
  switch (op.cls()) {
  case OperandClass::GprA:
    return "a" + std::to_string(i);
  case OperandClass::GprB:
    return "b" + std::to_string(i);
  case OperandClass::XferS:
    return "$" + std::to_string(i);
  case OperandClass::XferD:
    return "$$" + std::to_string(i);
  case OperandClass::NN:
    return "n$" + std::to_string(i);
  case OperandClass::LM: {
    std::string s = "*l$index" + std::to_string(op.lmPointer());
    if (op.lmMode() == LmMode::PostInc)
      return s + "++";
    if (op.lmMode() == LmMode::PostDec)
      return s + "--";
    if (op.lmOffset())
      s += "[" + std::to_string(op.lmOffset()) + "]";
    return s;
  }
  case OperandClass::Special:
    switch (SpecialOperand(i)) {
    case SpecialOperand::None:
      return "--";
    case SpecialOperand::Imm:
      return printNumber(imm);
    case SpecialOperand::NnRing:
      return "*n$index++";
    case SpecialOperand::XferSIndex:
      return "*$index";
    case SpecialOperand::XferDIndex:
      return "*$$index";
    case SpecialOperand::XferSIndexInc:
      return "*$index++";
    case SpecialOperand::XferDIndexInc:
      return "*$$index++";
    }
    break;
  }
  return "<bad operand>";
}

static std::string printShift(Shift shift, unsigned amount) {
  switch (shift) {
  case Shift::None:
    return "";
  case Shift::Lsl:
    return "<<" + std::to_string(amount);
  case Shift::Lsr:
    return ">>" + std::to_string(amount);
  case Shift::Rotr:
    return ">>rot" + std::to_string(amount);
  case Shift::Asr:
    return ">>asr" + std::to_string(amount);
  case Shift::LslInd:
    return "<<indirect";
  case Shift::LsrInd:
    return ">>indirect";
  case Shift::AsrInd:
    return ">>asr indirect";
  }
  return "";
}

static const char *const crcKindNames[] = {"crc_32", "crc_32c"};

static std::string printSignal(unsigned sig) {
  return "s" + std::to_string(sig);
}

std::string
netvm::me::printInstr(const Instr &in,
                      const std::function<std::string(uint32_t)> &label) {
  const InstrInfo &info = in.info();
  auto target = [&](uint32_t t) {
    std::string name = label ? label(t) : std::string();
    return name.empty() ? printNumber(t) : name;
  };
  auto opnd = [&](Operand op) { return printOperand(op, in.imm); };
  auto deferSuffix = [&] {
    return in.defer ? ", defer[" + std::to_string(in.defer) + "]"
                    : std::string();
  };
  std::string m = info.mnemonic;
  switch (info.format) {
  case Format::None:
    return m;
  case Format::CtxArb: {
    ArbMode mode = ArbMode(in.field);
    if (mode == ArbMode::Voluntary)
      return m + "[voluntary]";
    if (mode == ArbMode::Kill)
      return m + "[kill]";
    std::string s = m + "[";
    bool first = true;
    for (unsigned sig = 1; sig < numSignals; ++sig)
      if (in.sigMask & (1u << sig)) {
        s += (first ? "" : ", ") + printSignal(sig);
        first = false;
      }
    return s + "]" + (mode == ArbMode::Any ? ", any" : "");
  }
  case Format::Alu: {
    std::string shift = printShift(in.shift, in.shiftAmount);
    std::string s = (shift.empty() ? "alu[" : "alu_shf[") + opnd(in.dst) +
                    ", " + opnd(in.a) + ", " + info.sub + ", " + opnd(in.b);
    return s + (shift.empty() ? "" : ", " + shift) + "]";
  }
  case Format::Immed:
  case Format::ImmedHalf:
    return m + "[" + opnd(in.dst) + ", " + printNumber(in.imm) + "]";
  case Format::LdField: {
    std::string mask;
    for (int bit = 3; bit >= 0; --bit)
      mask += (in.field >> bit) & 1 ? '1' : '0';
    std::string shift = printShift(in.shift, in.shiftAmount);
    return m + "[" + opnd(in.dst) + ", " + mask + ", " + opnd(in.b) +
           (shift.empty() ? "" : ", " + shift) + "]";
  }
  case Format::ByteAlign:
    return m + "[" + opnd(in.dst) + ", " + opnd(in.a) + ", " + opnd(in.b) +
           (in.field < 4 ? ", " + std::to_string(in.field) : "") + "]";
  case Format::Branch:
    return m + "[" + target(in.imm) + "]" + deferSuffix();
  case Format::BrByte:
    return m + "[" + opnd(in.a) + ", " + std::to_string(in.field) + ", " +
           printNumber(in.value) + ", " + target(in.imm) + "]" + deferSuffix();
  case Format::BrBit:
  case Format::BrCtx:
    return m + "[" +
           (info.format == Format::BrBit ? opnd(in.a) + ", " : std::string()) +
           std::to_string(in.field) + ", " + target(in.imm) + "]" +
           deferSuffix();
  case Format::BrSignal:
    return m + "[" + printSignal(in.field) + ", " + target(in.imm) + "]" +
           deferSuffix();
  case Format::BrState:
    return m + "[" + stateName(in.field) + ", " + target(in.imm) + "]" +
           deferSuffix();
  case Format::Jump:
    return m + "[" + opnd(in.a) + ", " + target(in.imm) + "]" + deferSuffix();
  case Format::Rtn:
    return m + "[" + opnd(in.a) + "]" + deferSuffix();
  case Format::CsrRd:
    return m + "[" + opnd(in.dst) + ", " + csrName(Csr(in.csr)) + "]";
  case Format::CsrWr:
    return m + "[" + csrName(Csr(in.csr)) + ", " + opnd(in.a) + "]";
  case Format::DstSrc:
    return m + "[" + opnd(in.dst) + ", " + opnd(in.b) + "]";
  case Format::CamWrite:
    return m + "[" + opnd(in.a) + ", " + opnd(in.b) + ", " +
           std::to_string(in.field) + "]";
  case Format::CamWriteState:
    return m + "[" + opnd(in.a) + ", " + std::to_string(in.field) + "]";
  case Format::Crc:
    return m + "[" + crcKindNames[in.field & 1] + ", " + opnd(in.dst) + ", " +
           opnd(in.b) + "]";
  case Format::Mem:
  case Format::Hash: {
    std::string s = m + "[";
    if (info.format == Format::Mem)
      s += std::string(info.sub) + ", " + opnd(in.dst) + ", " + opnd(in.a) +
           ", " + opnd(in.b) + ", ";
    else
      s += opnd(in.dst) + ", ";
    s += std::to_string(in.count) + "]";
    if (in.sigMode == SigMode::SigDone)
      s += ", sig_done[" + printSignal(in.sig) + "]";
    else if (in.sigMode == SigMode::CtxSwap)
      s += ", ctx_swap[" + printSignal(in.sig) + "]";
    return s;
  }
  }
  return m;
}
