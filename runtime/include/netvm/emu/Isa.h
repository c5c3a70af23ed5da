//===- Isa.h - The microengine instruction set ------------------*- C++ -*-===//
//
// The netvm microengine (ME) instruction set as data: opcodes and formats
// expanded from MEInstrs.def, operand specifiers, the decoded instruction,
// and the 64-bit encoding (encode/decode) with the printer shared by the
// disassembler and the emulator's fault reports. Plain C++17, no LLVM, so
// the emulator runtime can use it; the assembler (lib/Target/ME) builds on
// it. docs/me-isa.md is the reference for every field.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_EMU_ISA_H
#define NETVM_EMU_ISA_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace netvm::me {

/// Operand syntax and field layout of a group of instructions.
enum class Format : uint8_t {
  None,          // nop
  CtxArb,        // ctx_arb[s1, s2] (, any) | ctx_arb[voluntary|kill]
  Alu,           // alu[dst, a, op, b] | alu_shf[dst, a, op, b, shift]
  Immed,         // immed[dst, value32]
  ImmedHalf,     // immed_w0[dst, value16]
  LdField,       // ld_field[dst, mask, src (, shift)]
  ByteAlign,     // byte_align[dst, a, b (, n)]
  Branch,        // bcc[target] (, defer[n])
  BrByte,        // br=byte[src, byte, value, target]
  BrBit,         // br_bset[src, bit, target]
  BrCtx,         // br=ctx[ctx, target]
  BrSignal,      // br_signal[sig, target]
  BrState,       // br_inp_state[condition, target]
  Jump,          // jump[src, base]
  Rtn,           // rtn[src]
  CsrRd,         // local_csr_rd[dst, csr]
  CsrWr,         // local_csr_wr[csr, src]
  DstSrc,        // cam_lookup[dst, src]
  CamWrite,      // cam_write[entry, src, state]
  CamWriteState, // cam_write_state[entry, state]
  Crc,           // crc_be[kind, dst, src]
  Mem,           // unit[cmd, xfer, a, b (, count)] (, sig_done[s]|ctx_swap[s])
  Hash,          // hash_64[xfer, count] (, sig_done[s]|ctx_swap[s])
};

enum InstrFlags : uint8_t {
  SetsCC = 1,   // sets the condition codes
  Control = 2,  // changes the flow of the context: not in a defer slot
  ReadsDst = 4, // reads its destination register (read-modify-write)
  Swap = 8,     // may swap the context out
};

enum class Op : uint8_t {
  Invalid = 0,
#define ME_INSTR(Name, Opcode, Mnemonic, Sub, Format, Cycles, Flags)           \
  Name = Opcode,
#include "netvm/emu/MEInstrs.def"
};

struct InstrInfo {
  Op op;
  const char *mnemonic;
  const char *sub;
  Format format;
  uint8_t cycles;
  uint8_t flags;
};

const char *formatName(Format format);

/// The row of an opcode, or null for an opcode the table does not define.
const InstrInfo *lookupOpcode(uint8_t opcode);
/// Every row of the table, in table order.
const InstrInfo *instrTable(size_t &count);

//===----------------------------------------------------------------------===//
// Operands
//===----------------------------------------------------------------------===//

/// Operand classes: bits 9:7 of a 10-bit operand specifier.
enum class OperandClass : uint8_t {
  GprA = 0,    // A-bank GPR, context-relative index
  GprB = 1,    // B-bank GPR
  XferS = 2,   // $n: SRAM transfer register (read side as a source)
  XferD = 3,   // $$n: DRAM transfer register
  NN = 4,      // n$n: next-neighbour register, absolute 0..127
  LM = 5,      // *l$indexP: local memory through pointer P
  Special = 6, // see SpecialOperand
};

/// Indexes of the Special class.
enum class SpecialOperand : uint8_t {
  None = 0,          // --
  Imm = 1,           // the instruction's 16-bit immediate field
  NnRing = 2,        // *n$index++: next-neighbour ring get (source) / put (dst)
  XferSIndex = 3,    // *$index: S transfer register at the t_index CSR
  XferDIndex = 4,    // *$$index
  XferSIndexInc = 5, // *$index++
  XferDIndexInc = 6, // *$$index++
};

/// Local-memory access modes (bits 5:4 of an LM operand index).
enum class LmMode : uint8_t { Offset = 0, PostInc = 1, PostDec = 2 };

/// A 10-bit operand specifier.
struct Operand {
  uint16_t spec = noneSpec;

  static constexpr uint16_t noneSpec = (6u << 7) | 0u;
  static Operand make(OperandClass cls, unsigned index) {
    return Operand{static_cast<uint16_t>((static_cast<unsigned>(cls) << 7) |
                                         (index & 0x7f))};
  }
  static Operand special(SpecialOperand s) {
    return make(OperandClass::Special, static_cast<unsigned>(s));
  }
  static Operand none() { return Operand{}; }
  static Operand imm() { return special(SpecialOperand::Imm); }
  static Operand lm(unsigned pointer, LmMode mode, unsigned offset) {
    return make(OperandClass::LM, (pointer << 6) |
                                      (static_cast<unsigned>(mode) << 4) |
                                      (offset & 15));
  }

  OperandClass cls() const { return static_cast<OperandClass>(spec >> 7); }
  unsigned index() const { return spec & 0x7f; }
  bool isNone() const { return spec == noneSpec; }
  bool isImm() const { return spec == imm().spec; }
  bool is(SpecialOperand s) const { return spec == special(s).spec; }
  bool isGpr() const {
    return cls() == OperandClass::GprA || cls() == OperandClass::GprB;
  }
  unsigned lmPointer() const { return (spec >> 6) & 1; }
  LmMode lmMode() const { return static_cast<LmMode>((spec >> 4) & 3); }
  unsigned lmOffset() const { return spec & 15; }
  bool operator==(Operand o) const { return spec == o.spec; }
  bool operator!=(Operand o) const { return spec != o.spec; }
};

/// Shifter kinds (Alu, LdField).
enum class Shift : uint8_t {
  None = 0,
  Lsl = 1,    // <<n
  Lsr = 2,    // >>n
  Rotr = 3,   // >>rotn (<<rotn is printed as >>rot(32-n))
  Asr = 4,    // >>asrn
  LslInd = 5, // <<indirect: amount = a & 31
  LsrInd = 6, // >>indirect
  AsrInd = 7, // >>asr indirect
};

/// Context arbitration modes of ctx_arb.
enum class ArbMode : uint8_t { All = 0, Any = 1, Voluntary = 2, Kill = 3 };

/// How a memory command reports completion.
enum class SigMode : uint8_t { None = 0, SigDone = 1, CtxSwap = 2 };

/// CRC algorithms of crc_be/crc_le.
enum class CrcKind : uint8_t { Crc32 = 0, Crc32c = 1 };

/// Local CSRs.
enum class Csr : uint16_t {
  ActiveLmAddr0 = 0,
  ActiveLmAddr1 = 1,
  ByteIndex = 2,
  TIndex = 3,
  TimestampLow = 4,
  TimestampHigh = 5,
  ActiveCtxSts = 6,
  SameMeSignal = 7,
  NextNeighborSignal = 8,
  CrcRemainder = 9,
  PrevNeighborSignal = 10,
  InterthreadSignal = 11,
  Count
};
const char *csrName(Csr csr);
bool csrReadable(Csr csr);
bool csrWritable(Csr csr);

/// Conditions of br_inp_state: nn_empty, nn_full, scr_ringN_full,
/// scr_ringN_empty.
enum : uint8_t {
  StateNnEmpty = 0,
  StateNnFull = 1,
  StateRingFull = 2,   // + ring number
  StateRingEmpty = 18, // + ring number
  StateCount = 34
};
std::string stateName(unsigned state);

/// Hardware limits the encoding fixes.
constexpr unsigned numSignals = 16; // signals 1..15 per context
constexpr unsigned numRings = 16;   // scratch rings
constexpr unsigned numNN = 128;     // next-neighbour registers per ME
constexpr unsigned camEntries = 16;
constexpr unsigned maxCount = 16; // words (or DRAM quadwords) per command

/// A decoded instruction. Fields a format does not use stay zero / none.
struct Instr {
  Op op = Op::Invalid;
  Operand dst, a, b;
  /// The 16-bit immediate operand (Alu, Mem, ...), the branch target or
  /// jump base, or immed's 32-bit value.
  uint32_t imm = 0;
  Shift shift = Shift::None;
  uint8_t shiftAmount = 0;
  /// Format-specific small field: ld_field byte mask, byte_align byte (4:
  /// from byte_index), br=byte byte, br_bset bit, br=ctx context,
  /// br_signal signal, br_inp_state condition, CAM state, CRC kind,
  /// ctx_arb mode.
  uint8_t field = 0;
  uint8_t value = 0;    // br=byte: the byte compared with
  uint16_t csr = 0;     // local_csr_rd/wr
  uint16_t sigMask = 0; // ctx_arb
  uint8_t count = 0;    // Mem, Hash: 1..16
  uint8_t sig = 0;      // Mem, Hash: signal 1..15
  SigMode sigMode = SigMode::None;
  uint8_t defer = 0; // branches: instructions executed before the jump

  const InstrInfo &info() const;
};

/// Transfer registers a command of `count` units reads or writes (DRAM and
/// hash units are 8 bytes, two registers).
unsigned transferWords(Op op, unsigned count);

/// Scratch and SRAM atomic commands (one word, read-modify-write).
bool isAtomic(Op op);

/// The 64-bit encoding. encode() expects an instruction the assembler
/// validated; decode() checks every field and says what is wrong.
uint64_t encode(const Instr &instr);
bool decode(uint64_t word, Instr &instr, std::string &why);

/// Operand rules shared by the assembler and the loader: the two sources
/// of an instruction read through two ports, so they may not both be in
/// the same GPR bank, both in local memory or both immediates. Empty when
/// the pair is fine, else the reason.
std::string checkSourcePair(Operand a, Operand b);

/// Prints an instruction in assembly syntax. `label(target)` may name
/// branch targets (return empty to print the number).
std::string
printInstr(const Instr &instr,
           const std::function<std::string(uint32_t)> &label = nullptr);
std::string printOperand(Operand op, uint32_t imm);
/// Prints an integer the way the disassembler does (decimal below 16).
std::string printNumber(uint64_t value);

} // namespace netvm::me

#endif // NETVM_EMU_ISA_H
