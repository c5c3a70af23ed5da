//===- Execute.cpp - The microengine interpreter --------------------------===//
//
// Runs the contexts of one ME up to the end of a quantum: the round-robin
// arbiter among ready contexts, and the interpreter of predecoded
// instructions (one switch over the opcodes of MEInstrs.def). Registers,
// local memory, CAM and CRC are the ME's own and change at once; memory
// commands, next-neighbour writes and packets become events
// (Emulator.cpp). An instruction that faults sets faultPending and the ME
// stops after it, with a report.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <algorithm>

using namespace netvm::me;

#if defined(__GNUC__)
#define NETVM_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define NETVM_UNLIKELY(x) (x)
#endif

//===----------------------------------------------------------------------===//
// Arbiter
//===----------------------------------------------------------------------===//

uint64_t Emulator::Impl::runME(MEState &me, uint64_t from, uint64_t until) {
  // An ME skipped while idle catches up: nothing runs before `from`.
  me.now = std::max(me.now, from);
  while (!me.stopped && me.now < until) {
    if (me.active < 0) {
      int pick = -1, earliestCtx = -1;
      uint64_t earliest = never;
      // Round robin over the ready contexts, starting after the last one.
      unsigned n = me.numContexts;
      unsigned start = me.lastCtx + 1 == n ? 0 : me.lastCtx + 1;
      uint32_t mask = me.readyMask;
      uint32_t rotated =
          ((mask >> start) | (mask << ((n - start) & 31))) & ((1u << n) - 1);
      for (; rotated; rotated &= rotated - 1) {
        unsigned i = unsigned(__builtin_ctz(rotated)) + start;
        if (i >= n)
          i -= n;
        const Context &c = me.ctx[i];
        if (c.readyAt <= me.now) {
          pick = int(i);
          break;
        }
        if (c.readyAt < earliest) {
          earliest = c.readyAt;
          earliestCtx = int(i);
        }
      }
      if (pick < 0) {
        if (earliest >= until) {
          me.now = until;
          return earliest;
        }
        me.now = earliest;
        pick = earliestCtx;
      }
      Context &c = me.ctx[pick];
      if (me.now > me.idleSince)
        me.stats->idleCycles[c.wakeReason] += me.now - me.idleSince;
      c.stats->waitCycles +=
          c.readyAt > c.waitSince ? c.readyAt - c.waitSince : 0;
      c.stats->readyCycles += me.now - c.readyAt;
      c.state = Context::Running;
      me.readyMask &= ~(1u << unsigned(pick));
      c.startedAt = me.now;
      me.active = pick;
      me.lastCtx = unsigned(pick);
    }
    execute(me, me.ctx[me.active], until);
  }
  return me.stopped ? never : me.now;
}

//===----------------------------------------------------------------------===//
// Operands
//===----------------------------------------------------------------------===//

/// The word of local memory an LM operand addresses (updating the pointer
/// for ++/--), or -1 with a fault.
static int64_t lmWord(MEState &me, Context &c, unsigned bits) {
  unsigned pointer = (bits >> 6) & 1;
  LmMode mode = LmMode((bits >> 4) & 3);
  uint32_t addr = c.lmAddr[pointer] + 4 * (bits & 15);
  if (mode == LmMode::PostInc)
    c.lmAddr[pointer] += 4;
  else if (mode == LmMode::PostDec)
    c.lmAddr[pointer] -= 4;
  if ((addr & 3) || addr / 4 >= me.lm.size()) {
    me.faultPending = true;
    me.faultReason = "local-memory address " + printNumber(addr) +
                     " (active_lm_addr_" + std::to_string(pointer) +
                     ") is outside the " + std::to_string(me.lm.size()) +
                     " words or unaligned";
    return -1;
  }
  return addr / 4;
}

/// The register index *$index / *$$index address, or -1 with a fault.
static int64_t xferIndex(MEState &me, Context &c, unsigned bits, bool dst) {
  unsigned n = me.perBank;
  uint32_t t = c.tIndex;
  if (bits & 2)
    ++c.tIndex;
  if (t >= n) {
    me.faultPending = true;
    me.faultReason = "t_index " + std::to_string(t) + " is beyond the " +
                     std::to_string(n) + " transfer registers";
    return -1;
  }
  unsigned side = (bits & 1) ? (dst ? 5 : 3) : (dst ? 4 : 2);
  return int64_t(side * n + t);
}

uint32_t Emulator::Impl::readSlow(MEState &me, Context &c, uint16_t op,
                                  uint32_t imm) {
  switch (op & 0xff00) {
  case opImm:
    return imm;
  case opNone & 0xff00:
    return 0;
  case opLM: {
    int64_t w = lmWord(me, c, op & 0xff);
    return w < 0 ? 0 : me.lm[size_t(w)];
  }
  case opNN:
    return me.nn[op & 0x7f];
  case opNnRing: {
    if (me.nnCount == 0) {
      me.faultPending = true;
      me.faultReason = "next-neighbour ring empty (test nn_empty first)";
      return 0;
    }
    uint32_t v = me.nn[me.nnHead];
    me.nnHead = (me.nnHead + 1) % numNN;
    --me.nnCount;
    --me.nnReserved;
    return v;
  }
  case opXferIdx: {
    int64_t i = xferIndex(me, c, op & 3, false);
    return i < 0 ? 0 : c.regs[i];
  }
  }
  return 0;
}

void Emulator::Impl::writeSlow(MEState &me, Context &c, uint16_t op,
                               uint32_t value) {
  switch (op & 0xff00) {
  case opLM: {
    int64_t w = lmWord(me, c, op & 0xff);
    if (w >= 0)
      me.lm[size_t(w)] = value;
    return;
  }
  case opNN:
  case opNnRing: {
    if (me.index + 1 >= mes.size()) {
      me.faultPending = true;
      me.faultReason = "the last ME has no next neighbour";
      return;
    }
    MEState &next = mes[me.index + 1];
    Event e;
    e.time = me.now + config.nnLatency;
    e.me = uint8_t(next.index);
    e.data[0] = value;
    if ((op & 0xff00) == opNN) {
      e.kind = EventKind::NnWrite;
      e.aux = op & 0x7f;
    } else {
      if (next.nnReserved >= numNN) {
        me.faultPending = true;
        me.faultReason = "next-neighbour ring of ME " +
                         std::to_string(next.index) +
                         " full (test nn_full first)";
        return;
      }
      ++next.nnReserved;
      e.kind = EventKind::NnPut;
    }
    schedule(std::move(e));
    return;
  }
  case opXferIdx: {
    int64_t i = xferIndex(me, c, op & 3, true);
    if (i >= 0)
      c.regs[i] = value;
    return;
  }
  }
}

uint32_t Emulator::Impl::readCsr(MEState &me, Context &c, Csr csr) {
  switch (csr) {
  case Csr::ActiveLmAddr0:
    return c.lmAddr[0];
  case Csr::ActiveLmAddr1:
    return c.lmAddr[1];
  case Csr::ByteIndex:
    return c.byteIndex;
  case Csr::TIndex:
    return c.tIndex;
  case Csr::TimestampLow:
    return uint32_t(me.now);
  case Csr::TimestampHigh:
    return uint32_t(me.now >> 32);
  case Csr::ActiveCtxSts:
    return (me.index << 3) | unsigned(&c - me.ctx);
  case Csr::CrcRemainder:
    return c.crcRemainder;
  default:
    return 0;
  }
}

void Emulator::Impl::writeCsr(MEState &me, Context &c, Csr csr,
                              uint32_t value) {
  switch (csr) {
  case Csr::ActiveLmAddr0:
    c.lmAddr[0] = value;
    return;
  case Csr::ActiveLmAddr1:
    c.lmAddr[1] = value;
    return;
  case Csr::ByteIndex:
    c.byteIndex = value & 3;
    return;
  case Csr::TIndex:
    c.tIndex = value;
    return;
  case Csr::CrcRemainder:
    c.crcRemainder = value;
    return;
  case Csr::SameMeSignal: {
    unsigned self = unsigned(&c - me.ctx);
    unsigned target = (value & 0x80) ? (self + 1) % me.numContexts : value & 7;
    unsigned sig = (value >> 3) & 15;
    if (target >= me.numContexts || sig == 0) {
      me.faultPending = true;
      me.faultReason = "same_me_signal " + printNumber(value) +
                       " names no context or signal";
      return;
    }
    deliverSignal(me.index, target, sig, me.now, StallSignal);
    return;
  }
  case Csr::NextNeighborSignal:
  case Csr::PrevNeighborSignal:
  case Csr::InterthreadSignal: {
    // Another ME's context: (s << 3) | ctx, and for interthread_signal
    // the ME in bits 12:7.
    unsigned sig = (value >> 3) & 15;
    int64_t target = csr == Csr::NextNeighborSignal   ? int64_t(me.index) + 1
                     : csr == Csr::PrevNeighborSignal ? int64_t(me.index) - 1
                                                      : int64_t(value >> 7);
    if (target < 0 || target >= int64_t(mes.size()) || sig == 0 ||
        (csr == Csr::InterthreadSignal && (value >> 13) != 0)) {
      me.faultPending = true;
      me.faultReason = std::string(csrName(csr)) + " " + printNumber(value) +
                       " names no ME or signal";
      return;
    }
    Event e;
    e.kind = EventKind::Signal;
    e.time = me.now + config.nnLatency;
    e.me = uint8_t(target);
    e.ctx = uint8_t(value & 7);
    e.sig = uint8_t(sig);
    schedule(std::move(e));
    return;
  }
  default:
    return;
  }
}

bool Emulator::Impl::inputState(MEState &me, unsigned state) {
  if (state == StateNnEmpty)
    return me.nnCount == 0;
  if (state == StateNnFull)
    return me.index + 1 < mes.size() && mes[me.index + 1].nnReserved >= numNN;
  if (state < StateRingEmpty) {
    const Ring &r = rings[state - StateRingFull];
    return r.configured && r.count >= r.size;
  }
  const Ring &r = rings[state - StateRingEmpty];
  return !r.configured || r.count == 0;
}

//===----------------------------------------------------------------------===//
// CAM
//===----------------------------------------------------------------------===//

void Emulator::Impl::camTouch(MEState &me, unsigned entry) {
  uint8_t *lru = me.camLru;
  unsigned at = 0;
  while (lru[at] != entry)
    ++at;
  for (; at + 1 < camEntries; ++at)
    lru[at] = lru[at + 1];
  lru[camEntries - 1] = uint8_t(entry);
}

uint32_t Emulator::Impl::camLookup(MEState &me, uint32_t tag) {
  for (unsigned e = 0; e < camEntries; ++e)
    if (me.camTag[e] == tag) {
      camTouch(me, e);
      return uint32_t(me.camState[e]) << 8 | 0x80u | (e << 3);
    }
  return uint32_t(me.camLru[0]) << 3;
}

//===----------------------------------------------------------------------===//
// Memory commands
//===----------------------------------------------------------------------===//

void Emulator::Impl::issue(MEState &me, Context &c, const DInst &in,
                           uint32_t address) {
  unsigned n = me.perBank;
  // Filled in place (an event is large); every field is set here or below.
  uint32_t slot = allocEvent();
  Event &e = pool(slot);
  e.time = me.now;
  e.kind = EventKind::Memory;
  e.reason = StallDone;
  e.queued = 0;
  e.xfer = 0;
  e.aux = 0;
  e.op = in.op;
  e.generation = me.generation;
  e.me = uint8_t(me.index);
  e.ctx = uint8_t(&c - me.ctx);
  e.sig = in.sig;
  e.count = in.count;
  e.pc = c.pc;
  e.addr = address;
  auto bad = [&](const std::string &why) {
    me.faultPending = true;
    me.faultReason = why;
    freeSlots.push_back(slot);
  };
  auto range = [&](Memory memory, uint64_t length, unsigned align) {
    if (address % align) {
      bad(std::string(memoryName(memory)) + " address " + printNumber(address) +
          " is not aligned to " + std::to_string(align) + " bytes");
      return false;
    }
    if (!memoryRange(memory, address, length)) {
      bad(std::string(memoryName(memory)) + " access at " +
          printNumber(address) + " (" + std::to_string(length) +
          " bytes) is outside the memory");
      return false;
    }
    return true;
  };
  auto capture = [&](unsigned base, unsigned words) {
    for (unsigned i = 0; i < words; ++i)
      e.data[i] = c.regs[base + in.xfer + i];
  };
  switch (in.op) {
  case Op::ScratchPut:
  case Op::ScratchGet:
    if (address >= numRings || !rings[address].configured) {
      bad("scratch ring " + printNumber(address) + " is not configured");
      return;
    }
    e.reason = StallScratch;
    e.queued = 1 + uint8_t(Memory::Scratch); // arrives now
    if (in.op == Op::ScratchPut)
      capture(4 * n, in.count);
    else
      e.xfer = uint16_t(2 * n + in.xfer);
    break;
  case Op::Hash64:
    e.reason = StallHash;
    e.time = me.now + config.hashLatency;
    capture(4 * n, 2 * in.count);
    e.xfer = uint16_t(2 * n + in.xfer);
    break;
  case Op::MsfRx:
    if (!range(Memory::Dram, config.maxPacketBytes, 8))
      return;
    e.kind = EventKind::RxRequest;
    e.time = me.now;
    e.xfer = uint16_t(2 * n + in.xfer);
    break;
  case Op::MsfTx: {
    capture(4 * n, in.count);
    uint32_t length = e.data[0];
    if (in.count < 2)
      e.data[1] = 0;
    if (in.count < 3)
      e.data[2] = 0;
    if (in.count < 4)
      e.data[3] = 0; // no tag
    if (length > config.maxPacketBytes) {
      bad("transmit length " + std::to_string(length) + " is not 0-" +
          std::to_string(config.maxPacketBytes));
      return;
    }
    if (e.data[2] >= maxPorts) {
      bad("transmit port " + std::to_string(e.data[2]) + " is not 0-" +
          std::to_string(maxPorts - 1));
      return;
    }
    if (!range(Memory::Dram, length, 8))
      return;
    // Arrives at the DRAM controller now: the packet is read out of DRAM.
    e.kind = EventKind::TxDone;
    e.queued = uint8_t(1 + controllerFor(Memory::Dram, address));
    break;
  }
  default: {
    bool dram = in.op == Op::DramRead || in.op == Op::DramWrite;
    Memory memory = dram                    ? Memory::Dram
                    : in.op >= Op::SramRead ? Memory::Sram
                                            : Memory::Scratch;
    unsigned words = dram ? 2 * in.count : in.count;
    if (!range(memory, 4ull * words, dram ? 8 : 4))
      return;
    e.reason = uint8_t(memory == Memory::Dram   ? StallDram
                       : memory == Memory::Sram ? StallSram
                                                : StallScratch);
    e.queued = uint8_t(1 + controllerFor(memory, address)); // arrives now
    bool writes = in.op == Op::ScratchWrite || in.op == Op::SramWrite ||
                  in.op == Op::DramWrite;
    if (writes)
      capture(dram ? 5 * n : 4 * n, words);
    else if (isAtomic(in.op)) {
      if (in.op != Op::ScratchIncr && in.op != Op::ScratchDecr &&
          in.op != Op::SramIncr && in.op != Op::SramDecr)
        capture(4 * n, 1);
      e.xfer = uint16_t(2 * n + in.xfer);
    } else {
      e.xfer = uint16_t((dram ? 3 * n : 2 * n) + in.xfer);
    }
    break;
  }
  }
  enqueue(slot);
}

//===----------------------------------------------------------------------===//
// The interpreter
//===----------------------------------------------------------------------===//

static inline uint32_t shifted(Shift kind, unsigned amount, uint32_t b,
                               uint32_t a) {
  switch (kind) {
  case Shift::None:
    return b;
  case Shift::Lsl:
    return b << amount;
  case Shift::Lsr:
    return b >> amount;
  case Shift::Rotr:
    return (b >> amount) | (b << ((32 - amount) & 31));
  case Shift::Asr:
    return uint32_t(int32_t(b) >> amount);
  case Shift::LslInd:
    return b << (a & 31);
  case Shift::LsrInd:
    return b >> (a & 31);
  case Shift::AsrInd:
    return uint32_t(int32_t(b) >> (a & 31));
  }
  return b;
}

static inline uint32_t byteMask(unsigned mask) {
  return ((mask & 1) ? 0xffu : 0) | ((mask & 2) ? 0xff00u : 0) |
         ((mask & 4) ? 0xff0000u : 0) | ((mask & 8) ? 0xff000000u : 0);
}

void Emulator::Impl::execute(MEState &me, Context &c, uint64_t until) {
  uint32_t *const r = c.regs;
  const DInst *const code = me.code.data();
  // The instructions; code[size] is a sentinel (Op::Invalid).
  const uint32_t size = uint32_t(me.code.size()) - 1;
  const uint64_t began = me.now;
  uint64_t penalty = 0, instructions = 0;
  uint64_t *const profile =
      me.stats->pcCycles.empty() ? nullptr : me.stats->pcCycles.data();
  uint32_t pc = c.pc;
  uint8_t deferLeft = c.deferLeft;
  uint32_t deferTarget = c.deferTarget;
  bool swapOut = false;
  // me.now is the cycle at the end of the current instruction.
  uint64_t &now = me.now;
  auto account = [&] {
    me.stats->instructions += instructions;
    c.stats->instructions += instructions;
    me.stats->branchPenaltyCycles += penalty;
    me.stats->busyCycles += now - began;
    lastActivity = std::max(lastActivity, now);
  };

#define SRC(o, imm)                                                            \
  ((o) < special ? r[(o)] : (o) == opImm ? (imm) : readSlow(me, c, (o), (imm)))
#define DST(o, val)                                                            \
  do {                                                                         \
    uint32_t v_ = (val);                                                       \
    if ((o) < special)                                                         \
      r[(o)] = v_;                                                             \
    else if ((o) != opNone)                                                    \
      writeSlow(me, c, (o), v_);                                               \
  } while (0)
#define SETCC(res)                                                             \
  do {                                                                         \
    c.z = (res) == 0;                                                          \
    c.n = int32_t(res) < 0;                                                    \
  } while (0)
#define TAKEN(target)                                                          \
  do {                                                                         \
    if (profile)                                                               \
      profile[pc] += in.takenCost;                                             \
    if (in.defer) {                                                            \
      deferTarget = (target);                                                  \
      deferLeft = in.defer;                                                    \
      pc = pc + 1;                                                             \
    } else {                                                                   \
      pc = (target);                                                           \
    }                                                                          \
    now += in.takenCost;                                                       \
    penalty += in.takenCost;                                                   \
  } while (0)
#define BRANCH(cond)                                                           \
  do {                                                                         \
    if (cond)                                                                  \
      TAKEN(in.imm);                                                           \
    else                                                                       \
      pc = pc + 1;                                                             \
    goto next;                                                                 \
  } while (0)

  for (;;) {
    {
      const DInst &in = code[pc];
      now += in.cycles;
      ++instructions;
      if (profile)
        profile[pc] += in.cycles;
      switch (in.op) {
      case Op::Invalid: {
        if (pc == size) {
          // The sentinel: no instruction ran (its cost is 0).
          --instructions;
          fault(me, unsigned(&c - me.ctx), pc,
                "the program counter left the program (" +
                    std::to_string(size) + " instructions)",
                now);
          return;
        }
        const std::string &why = me.badReason[pc];
        fault(me, unsigned(&c - me.ctx), pc,
              "bad instruction: " + (why.empty() ? "undefined" : why), now);
        goto stopped;
      }
      case Op::Nop:
        break;
      case Op::Halt:
        c.pc = pc;
        c.stats->execCycles += now - c.startedAt;
        c.state = Context::Killed;
        retireContexts(me, now);
        goto stopped;
      case Op::CtxArb: {
        ArbMode mode = ArbMode(in.field);
        pc = pc + 1;
        uint64_t out = now + config.swapPenalty;
        if (mode == ArbMode::Kill) {
          c.state = Context::Killed;
        } else if (mode == ArbMode::Voluntary) {
          c.state = Context::Ready;
          me.readyMask |= 1u << unsigned(&c - me.ctx);
          c.readyAt = out;
          c.waitSince = out;
          c.wakeReason = StallSignal;
        } else {
          waitFor(me, c, in.sigMask, mode == ArbMode::Any, out);
        }
        swapOut = true;
        goto done;
      }

      // ALU.
      case Op::AluB: {
        uint32_t res =
            shifted(in.shift, in.shiftAmount, SRC(in.b, in.imm),
                    in.shift >= Shift::LslInd ? SRC(in.a, in.imm) : 0);
        SETCC(res);
        c.c = c.v = false;
        DST(in.dst, res);
        break;
      }
      case Op::AluNotB: {
        uint32_t res =
            ~shifted(in.shift, in.shiftAmount, SRC(in.b, in.imm),
                     in.shift >= Shift::LslInd ? SRC(in.a, in.imm) : 0);
        SETCC(res);
        c.c = c.v = false;
        DST(in.dst, res);
        break;
      }
      case Op::AluAdd:
      case Op::AluAddCarry: {
        uint32_t a = SRC(in.a, in.imm);
        uint32_t b = shifted(in.shift, in.shiftAmount, SRC(in.b, in.imm), a);
        uint64_t wide = uint64_t(a) + b + (in.op == Op::AluAddCarry && c.c);
        uint32_t res = uint32_t(wide);
        SETCC(res);
        c.c = (wide >> 32) != 0;
        c.v = ((~(a ^ b) & (a ^ res)) >> 31) != 0;
        DST(in.dst, res);
        break;
      }
      case Op::AluSub:
      case Op::AluSubCarry:
      case Op::AluRevSub: {
        uint32_t a = SRC(in.a, in.imm);
        uint32_t b = shifted(in.shift, in.shiftAmount, SRC(in.b, in.imm), a);
        if (in.op == Op::AluRevSub)
          std::swap(a, b);
        uint64_t borrowIn = in.op == Op::AluSubCarry && c.c;
        uint32_t res = uint32_t(uint64_t(a) - b - borrowIn);
        SETCC(res);
        c.c = uint64_t(a) < uint64_t(b) + borrowIn;
        c.v = (((a ^ b) & (a ^ res)) >> 31) != 0;
        DST(in.dst, res);
        break;
      }
      case Op::AluAnd:
      case Op::AluNotAnd:
      case Op::AluAndNot:
      case Op::AluOr:
      case Op::AluXor:
      case Op::AluMul: {
        uint32_t a = SRC(in.a, in.imm);
        uint32_t b = shifted(in.shift, in.shiftAmount, SRC(in.b, in.imm), a);
        uint32_t res = in.op == Op::AluAnd      ? a & b
                       : in.op == Op::AluNotAnd ? ~a & b
                       : in.op == Op::AluAndNot ? a & ~b
                       : in.op == Op::AluOr     ? a | b
                       : in.op == Op::AluXor    ? a ^ b
                                                : a * b;
        SETCC(res);
        c.c = c.v = false;
        DST(in.dst, res);
        break;
      }

      // Immediates, fields, bytes.
      case Op::Immed:
        DST(in.dst, in.imm);
        break;
      case Op::ImmedW0:
        r[in.dst] = (r[in.dst] & 0xffff0000u) | in.imm;
        break;
      case Op::ImmedW1:
        r[in.dst] = (r[in.dst] & 0xffffu) | (in.imm << 16);
        break;
      case Op::LdField:
      case Op::LdFieldClr: {
        uint32_t m = byteMask(in.field);
        uint32_t v = shifted(in.shift, in.shiftAmount, SRC(in.b, in.imm), 0);
        uint32_t keep = in.op == Op::LdField ? r[in.dst] & ~m : 0;
        r[in.dst] = keep | (v & m);
        break;
      }
      case Op::ByteAlign: {
        uint32_t a = SRC(in.a, in.imm), b = SRC(in.b, in.imm);
        unsigned k = in.field < 4 ? in.field : c.byteIndex & 3;
        DST(in.dst, k == 0 ? a : (a << (8 * k)) | (b >> (32 - 8 * k)));
        break;
      }

      // Branches.
      case Op::Br:
        TAKEN(in.imm);
        goto next;
      case Op::Beq:
        BRANCH(c.z);
      case Op::Bne:
        BRANCH(!c.z);
      case Op::Bmi:
        BRANCH(c.n);
      case Op::Bpl:
        BRANCH(!c.n);
      case Op::Bcs:
        BRANCH(c.c);
      case Op::Bcc:
        BRANCH(!c.c);
      case Op::Bvs:
        BRANCH(c.v);
      case Op::Bvc:
        BRANCH(!c.v);
      case Op::Blt:
        BRANCH(c.n != c.v);
      case Op::Bge:
        BRANCH(c.n == c.v);
      case Op::Bgt:
        BRANCH(!c.z && c.n == c.v);
      case Op::Ble:
        BRANCH(c.z || c.n != c.v);
      case Op::Bhi:
        BRANCH(!c.c && !c.z);
      case Op::Bls:
        BRANCH(c.c || c.z);
      case Op::BrEqByte:
      case Op::BrNeByte: {
        uint32_t v = SRC(in.a, in.imm);
        bool eq = ((v >> (8 * in.field)) & 0xff) == in.value;
        BRANCH(eq == (in.op == Op::BrEqByte));
      }
      case Op::BrBset:
      case Op::BrBclr: {
        bool set = (SRC(in.a, in.imm) >> in.field) & 1;
        BRANCH(set == (in.op == Op::BrBset));
      }
      case Op::BrEqCtx:
      case Op::BrNeCtx:
        BRANCH((unsigned(&c - me.ctx) == in.field) == (in.op == Op::BrEqCtx));
      case Op::BrSignal:
      case Op::BrNotSignal: {
        bool set = ((c.sigs >> in.field) & 1) && c.sigTime[in.field] <= now;
        if (set)
          c.sigs &= uint16_t(~(1u << in.field));
        BRANCH(set == (in.op == Op::BrSignal));
      }
      case Op::BrInpState:
      case Op::BrNotInpState:
        BRANCH(inputState(me, in.field) == (in.op == Op::BrInpState));
      case Op::Jump:
      case Op::Rtn: {
        uint32_t target = (in.op == Op::Jump ? in.imm : 0) + SRC(in.a, in.imm);
        if (target >= size) {
          me.faultPending = true;
          me.faultReason =
              "jump target " + printNumber(target) + " is beyond the program";
          break;
        }
        TAKEN(target);
        goto next;
      }

      // CSRs, CAM, CRC.
      case Op::CsrRd:
        DST(in.dst, readCsr(me, c, Csr(in.csr)));
        break;
      case Op::CsrWr:
        writeCsr(me, c, Csr(in.csr), SRC(in.a, in.imm));
        break;
      case Op::CamClear:
        for (unsigned e = 0; e < camEntries; ++e) {
          me.camTag[e] = 0;
          me.camState[e] = 0;
          me.camLru[e] = uint8_t(e);
        }
        break;
      case Op::CamLookup:
        DST(in.dst, camLookup(me, SRC(in.b, in.imm)));
        break;
      case Op::CamWrite: {
        unsigned entry = SRC(in.a, in.imm) & 15;
        me.camTag[entry] = SRC(in.b, in.imm);
        me.camState[entry] = in.field;
        camTouch(me, entry);
        break;
      }
      case Op::CamWriteState:
        me.camState[SRC(in.a, in.imm) & 15] = in.field;
        break;
      case Op::CamReadTag:
        DST(in.dst, me.camTag[SRC(in.b, in.imm) & 15]);
        break;
      case Op::CamReadState:
        DST(in.dst, me.camState[SRC(in.b, in.imm) & 15]);
        break;
      case Op::CrcBe:
      case Op::CrcLe: {
        uint32_t v = SRC(in.b, in.imm);
        const uint32_t *table = crcTable[in.field & 1];
        uint32_t crc = c.crcRemainder;
        for (int k = 0; k < 4; ++k) {
          unsigned shift = in.op == Op::CrcBe ? 24 - 8 * k : 8 * k;
          crc = (crc >> 8) ^ table[(crc ^ (v >> shift)) & 0xff];
        }
        c.crcRemainder = crc;
        DST(in.dst, v);
        break;
      }

      // Commands to the shared units.
      case Op::ScratchRead:
      case Op::ScratchWrite:
      case Op::ScratchAdd:
      case Op::ScratchTestAdd:
      case Op::ScratchSet:
      case Op::ScratchTestSet:
      case Op::ScratchClr:
      case Op::ScratchTestClr:
      case Op::ScratchSwap:
      case Op::ScratchIncr:
      case Op::ScratchDecr:
      case Op::ScratchPut:
      case Op::ScratchGet:
      case Op::SramRead:
      case Op::SramWrite:
      case Op::SramAdd:
      case Op::SramTestAdd:
      case Op::SramSet:
      case Op::SramTestSet:
      case Op::SramClr:
      case Op::SramTestClr:
      case Op::SramSwap:
      case Op::SramIncr:
      case Op::SramDecr:
      case Op::DramRead:
      case Op::DramWrite:
      case Op::Hash64:
      case Op::MsfRx:
      case Op::MsfTx: {
        uint32_t address =
            in.op == Op::Hash64 ? 0 : SRC(in.a, in.imm) + SRC(in.b, in.imm);
        c.pc = pc;
        if (in.sig)
          c.sigs &= uint16_t(~(1u << in.sig)); // a fresh signal
        issue(me, c, in, address);
        if (in.sigMode == SigMode::CtxSwap && !me.faultPending) {
          pc = pc + 1;
          waitFor(me, c, uint16_t(1u << in.sig), false,
                  now + config.swapPenalty);
          swapOut = true;
          goto done;
        }
        break;
      }
      }
    }
    pc = pc + 1;
    if (deferLeft && --deferLeft == 0)
      pc = deferTarget;
  next:
    if (NETVM_UNLIKELY(me.faultPending))
      goto faulted;
    c.pc = pc;
    if (now >= until)
      break;
  }
done:
  if (NETVM_UNLIKELY(me.faultPending))
    goto faulted;
  c.pc = pc;
  c.deferLeft = deferLeft;
  c.deferTarget = deferTarget;
  if (swapOut) {
    now += config.swapPenalty;
    me.stats->swapCycles += config.swapPenalty;
    me.stats->contextSwaps += 1;
    c.stats->swaps += 1;
    c.stats->execCycles += now - c.startedAt;
    me.active = -1;
    me.idleSince = now;
  }
  account();
  return;
faulted:
  // c.pc is still the faulting instruction's.
  me.faultPending = false;
  fault(me, unsigned(&c - me.ctx), c.pc, me.faultReason, now);
stopped:
  account();
#undef SRC
#undef DST
#undef SETCC
#undef TAKEN
#undef BRANCH
}
