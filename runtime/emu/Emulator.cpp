//===- Emulator.cpp - Memories, events, packets and the main loop --------===//
//
// Loading and predecoding images, the event queue and what events do
// (memory commands, rings, the hash unit, next-neighbour writes, the media
// switch fabric), context wake-up on signals, faults, the quantum loop and
// the statistics. The microengine interpreter is in Execute.cpp.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace netvm::me;

PacketInput::~PacketInput() = default;
bool PacketInput::live() const { return false; }
PacketOutput::~PacketOutput() = default;
void PacketOutput::transmit(const Transmission &t) {
  transmit(t.bytes, t.length, t.wireLength, t.port, t.cycle);
}
void PacketOutput::transmit(const uint8_t *, size_t, uint32_t, unsigned,
                            uint64_t) {}

const char *netvm::me::stallReasonName(StallReason reason) {
  static const char *const names[] = {"scratch", "sram", "dram",   "hash",
                                      "rx",      "tx",   "signal", "done"};
  static_assert(sizeof(names) / sizeof(names[0]) == StallCount,
                "one name per stall reason");
  return reason < StallCount ? names[reason] : "?";
}

static uint32_t loadBE(const uint8_t *p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 |
         p[3];
}

static void storeBE(uint8_t *p, uint32_t v) {
  p[0] = uint8_t(v >> 24);
  p[1] = uint8_t(v >> 16);
  p[2] = uint8_t(v >> 8);
  p[3] = uint8_t(v);
}

Emulator::Impl::Impl(const MachineConfig &cfg) : config(cfg) {
  std::fill(std::begin(bucketHead), std::end(bucketHead), noSlot);
  std::fill(std::begin(bucketTail), std::end(bucketTail), noSlot);
  config.numMEs = std::clamp(config.numMEs, 1u, maxMEs);
  unsigned shortest =
      std::min({config.scratchLatency, config.sramLatency, config.dramLatency,
                config.hashLatency, config.rxLatency, config.txLatency});
  config.quantum = std::max(1u, std::min(config.quantum, shortest));
  if (config.clockMHz <= 0)
    config.clockMHz = 600;
  stats.clockMHz = config.clockMHz;
  scratch.assign(config.scratchBytes, 0);
  sram.reset(static_cast<uint8_t *>(std::calloc(config.sramBytes, 1)));
  dram.reset(static_cast<uint8_t *>(std::calloc(config.dramBytes, 1)));
  config.sramChannels = std::clamp(config.sramChannels, 1u, 8u);
  controllers.push_back(Controller{config.scratchCommandCycles,
                                   config.scratchBytesPerCycle,
                                   config.scratchLatency,
                                   0,
                                   {},
                                   0,
                                   &stats.scratch,
                                   nullptr});
  stats.sramChannels.resize(config.sramChannels);
  for (MemoryStats &channel : stats.sramChannels)
    controllers.push_back(Controller{config.sramCommandCycles,
                                     config.sramBytesPerCycle,
                                     config.sramLatency,
                                     0,
                                     {},
                                     0,
                                     &stats.sram,
                                     &channel});
  controllers.push_back(Controller{config.dramCommandCycles,
                                   config.dramBytesPerCycle,
                                   config.dramLatency,
                                   0,
                                   {},
                                   0,
                                   &stats.dram,
                                   nullptr});
  for (Controller &k : controllers)
    if (k.bytesPerCycle && !(k.bytesPerCycle & (k.bytesPerCycle - 1)))
      k.bytesShift = __builtin_ctz(k.bytesPerCycle);
  mes.resize(config.numMEs);
  stats.mes.resize(config.numMEs);
  for (unsigned i = 0; i < config.numMEs; ++i) {
    mes[i].index = i;
    mes[i].stats = &stats.mes[i];
  }
  // Reflected CRC tables, one byte a step.
  const uint32_t polys[2] = {0xEDB88320u, 0x82F63B78u};
  for (int k = 0; k < 2; ++k)
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t crc = i;
      for (int bit = 0; bit < 8; ++bit)
        crc = (crc >> 1) ^ (polys[k] & (0u - (crc & 1u)));
      crcTable[k][i] = crc;
    }
}

uint8_t *Emulator::Impl::memoryBase(Memory memory) {
  switch (memory) {
  case Memory::Scratch:
    return scratch.data();
  case Memory::Sram:
    return sram.get();
  case Memory::Dram:
    return dram.get();
  }
  return nullptr;
}

bool Emulator::Impl::memoryRange(Memory memory, uint64_t address,
                                 uint64_t length) const {
  uint64_t size = memory == Memory::Scratch ? config.scratchBytes
                  : memory == Memory::Sram  ? config.sramBytes
                                            : config.dramBytes;
  return address <= size && length <= size - address;
}

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

/// Resolves a source (`dst` false) or destination operand of a context with
/// `n` GPRs per bank.
static uint16_t resolve(Operand op, unsigned n, bool dst, std::string &why) {
  unsigned i = op.index();
  auto reg = [&](unsigned base, const char *what) -> uint16_t {
    if (i < n)
      return uint16_t(base + i);
    why = printOperand(op, 0) + " does not exist (" + std::to_string(n) + " " +
          what + " a context in this context mode)";
    return opNone;
  };
  switch (op.cls()) {
  case OperandClass::GprA:
    return reg(0, "A GPRs");
  case OperandClass::GprB:
    return reg(n, "B GPRs");
  case OperandClass::XferS:
    return reg(dst ? 4 * n : 2 * n, "$ registers");
  case OperandClass::XferD:
    return reg(dst ? 5 * n : 3 * n, "$$ registers");
  case OperandClass::NN:
    return uint16_t(opNN | i);
  case OperandClass::LM:
    return uint16_t(opLM | i);
  case OperandClass::Special:
    switch (SpecialOperand(i)) {
    case SpecialOperand::None:
      return opNone;
    case SpecialOperand::Imm:
      if (dst)
        why = "an immediate is not a destination";
      return opImm;
    case SpecialOperand::NnRing:
      return opNnRing;
    case SpecialOperand::XferSIndex:
      return opXferIdx;
    case SpecialOperand::XferDIndex:
      return opXferIdx | 1;
    case SpecialOperand::XferSIndexInc:
      return opXferIdx | 2;
    case SpecialOperand::XferDIndexInc:
      return opXferIdx | 3;
    }
  }
  why = "bad operand";
  return opNone;
}

/// Predecodes one instruction word of an ME; `why` says what is wrong.
static DInst predecode(uint64_t word, unsigned n, unsigned contexts,
                       const MachineConfig &config, std::string &why) {
  DInst d;
  Instr in;
  if (!decode(word, in, why)) {
    d.bad = true;
    return d;
  }
  const InstrInfo &info = in.info();
  d.op = in.op;
  d.cycles = info.cycles;
  d.imm = in.imm;
  d.shift = in.shift;
  d.shiftAmount = in.shiftAmount;
  d.field = in.field;
  d.value = in.value;
  d.count = in.count;
  d.sig = in.sig;
  d.sigMode = in.sigMode;
  d.defer = in.defer;
  d.csr = in.csr;
  d.sigMask = in.sigMask;
  d.takenCost = uint8_t(
      config.branchPenalty > in.defer ? config.branchPenalty - in.defer : 0);
  d.dst = resolve(in.dst, n, true, why);
  if (why.empty())
    d.a = resolve(in.a, n, false, why);
  if (why.empty())
    d.b = resolve(in.b, n, false, why);
  if (why.empty() && info.format == Format::BrCtx && in.field >= contexts)
    why = "context " + std::to_string(in.field) + " does not exist";
  if (why.empty() &&
      (info.format == Format::Mem || info.format == Format::Hash) &&
      !in.dst.isNone()) {
    d.xfer = uint16_t(in.dst.index());
    if (d.xfer + transferWords(in.op, in.count) > n)
      why = "the command's transfer registers go beyond the " +
            std::to_string(n) + " a context has";
  }
  if (why.empty() &&
      (info.format == Format::LdField || info.format == Format::ImmedHalf) &&
      !in.dst.isGpr())
    why = "the destination of " + std::string(info.mnemonic) + " must be a GPR";
  d.bad = !why.empty();
  if (d.bad)
    d.op = Op::Invalid;
  return d;
}

void Emulator::Impl::installCode(MEState &me, const CodeBlock &block) {
  me.loaded = true;
  me.stopped = true;
  me.active = -1;
  me.readyMask = 0;
  me.block = -1;
  me.stats->loaded = true;
  me.numContexts = block.ctxMode;
  me.ctxEnable = block.ctxEnable;
  me.perBank = block.ctxMode == 8 ? 16 : 32;
  me.words = block.words;
  if (config.profile)
    me.stats->pcCycles.assign(block.words.size() + 1, 0);
  me.code.clear();
  me.badReason.assign(block.words.size(), std::string());
  for (size_t pc = 0; pc < block.words.size(); ++pc)
    me.code.push_back(predecode(block.words[pc], me.perBank, me.numContexts,
                                config, me.badReason[pc]));
  // Checks that need the whole program: targets and defer slots.
  for (size_t pc = 0; pc < me.code.size(); ++pc) {
    DInst &d = me.code[pc];
    if (d.bad)
      continue;
    const InstrInfo &info = *lookupOpcode(uint8_t(d.op));
    bool hasTarget =
        info.format >= Format::Branch && info.format <= Format::Jump;
    if (hasTarget && d.imm >= me.code.size()) {
      d.bad = true;
      d.op = Op::Invalid;
      me.badReason[pc] =
          "branch target " + std::to_string(d.imm) + " is beyond the program";
    }
    for (unsigned k = 1; !d.bad && k <= d.defer; ++k) {
      const DInst *slot = pc + k < me.code.size() ? &me.code[pc + k] : nullptr;
      if (!slot || slot->bad ||
          (lookupOpcode(uint8_t(slot->op))->flags & Control) ||
          slot->sigMode == SigMode::CtxSwap) {
        d.bad = true;
        d.op = Op::Invalid;
        me.badReason[pc] = "defer slot " + std::to_string(k) +
                           " does not hold a plain instruction";
      }
    }
  }
  // A sentinel after the last instruction: the interpreter finds the
  // pc leaving the program there instead of checking every pc.
  DInst sentinel;
  sentinel.cycles = 0;
  sentinel.bad = true;
  me.code.push_back(sentinel);
  for (Context &ctx : me.ctx)
    ctx.state = Context::Off;
}

void Emulator::Impl::startME(MEState &me, uint64_t now) {
  unsigned n = me.perBank;
  me.regfile.assign(size_t(me.numContexts) * 6 * n, 0);
  me.lm.assign(config.localMemoryWords, 0);
  std::fill(std::begin(me.nn), std::end(me.nn), 0);
  me.nnHead = me.nnCount = me.nnReserved = 0;
  std::fill(std::begin(me.camTag), std::end(me.camTag), 0);
  std::fill(std::begin(me.camState), std::end(me.camState), 0);
  for (unsigned e = 0; e < camEntries; ++e)
    me.camLru[e] = uint8_t(e);
  me.stopped = false;
  me.active = -1;
  me.readyMask = 0;
  me.lastCtx = me.numContexts - 1; // context 0 goes first
  me.now = std::max(me.now, now);
  me.nextWake = now;
  me.idleSince = now;
  me.faultPending = false;
  ++me.generation;
  // Ring counts are since the ME last started.
  std::fill(std::begin(me.ringOps), std::end(me.ringOps), netvm_emu_ring_ops{});
  me.stats->threads.resize(me.numContexts);
  for (unsigned c = 0; c < me.numContexts; ++c) {
    Context &ctx = me.ctx[c];
    ThreadStats *threadStats = &me.stats->threads[c];
    ctx = Context();
    ctx.regs = &me.regfile[size_t(c) * 6 * n];
    ctx.stats = threadStats;
    if ((me.ctxEnable >> c) & 1) {
      ctx.state = Context::Ready;
      ctx.readyAt = now;
      ctx.waitSince = now;
      me.readyMask |= 1u << c;
      ctx.stats->enabled = true;
    }
  }
}

bool Emulator::Impl::load(const Image &img, std::string &error) {
  uint32_t seen = 0;
  for (size_t b = 0; b < img.code.size(); ++b) {
    const CodeBlock &block = img.code[b];
    if (uint64_t(block.meMask) >> config.numMEs) { // 32 MEs: no bits beyond
      unsigned me = 0;
      while (!((block.meMask >> me) & 1) || me < config.numMEs)
        ++me;
      error = "the image has code for ME " + std::to_string(me) +
              " but the machine has " + std::to_string(config.numMEs) + " MEs";
      return false;
    }
    if (block.meMask & seen) {
      error = "two code blocks of the image load the same ME";
      return false;
    }
    seen |= block.meMask;
    if (block.words.size() > config.controlStore) {
      error = "the program of code block " + std::to_string(b) + " has " +
              std::to_string(block.words.size()) +
              " instructions; the control store holds " +
              std::to_string(config.controlStore);
      return false;
    }
  }
  for (const DataInit &data : img.data)
    if (!memoryRange(data.memory, data.address, data.bytes.size())) {
      error = std::string("initial data at ") + memoryName(data.memory) +
              " address " + printNumber(data.address) +
              " does not fit in the memory";
      return false;
    }
  for (const RingConfig &ring : img.rings)
    if (!memoryRange(Memory::Scratch, ring.base,
                     uint64_t(ring.sizeWords) * 4)) {
      error = "ring " + std::to_string(ring.ring) +
              " does not fit in scratch memory";
      return false;
    }

  for (const DataInit &data : img.data)
    std::memcpy(memoryBase(data.memory) + data.address, data.bytes.data(),
                data.bytes.size());
  for (const RingConfig &ring : img.rings) {
    Ring &r = rings[ring.ring];
    r.configured = true;
    r.base = ring.base;
    r.size = ring.sizeWords;
    stats.rings[ring.ring].configured = true;
    stats.rings[ring.ring].sizeWords = ring.sizeWords;
  }
  symbols = img.symbols;
  for (size_t b = 0; b < img.code.size(); ++b) {
    const CodeBlock &block = img.code[b];
    for (unsigned m = 0; m < config.numMEs; ++m) {
      if (!((block.meMask >> m) & 1))
        continue;
      MEState &me = mes[m];
      installCode(me, block);
      me.block = int(b);
      startME(me, 0);
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Events
//===----------------------------------------------------------------------===//

void Emulator::Impl::schedule(Event &&event) {
  uint32_t slot = allocEvent();
  pool(slot) = event;
  enqueue(slot);
}

void Emulator::Impl::wheelInsert(uint64_t time, uint64_t seq, uint32_t slot) {
  unsigned b = unsigned(time) & (wheelSize - 1);
  Event &event = pool(slot);
  event.seq = seq;
  uint32_t tail = bucketTail[b];
  if (tail == noSlot) {
    event.next = noSlot;
    bucketHead[b] = bucketTail[b] = slot;
    wheelMap[b / 64] |= uint64_t(1) << (b % 64);
  } else if (pool(tail).seq < seq) {
    event.next = noSlot;
    pool(tail).next = slot;
    bucketTail[b] = slot;
  } else {
    // An event from the far heap, older than those already here.
    uint32_t *link = &bucketHead[b];
    while (pool(*link).seq < seq)
      link = &pool(*link).next;
    event.next = *link;
    *link = slot;
  }
  ++wheelCount;
}

uint64_t Emulator::Impl::wheelNext() const {
  if (!wheelCount)
    return never;
  // Scan the bitmap from wheelBase's bucket, wrapping once.
  unsigned start = unsigned(wheelBase) & (wheelSize - 1);
  for (unsigned k = 0; k <= wheelSize / 64; ++k) {
    unsigned word = (start / 64 + k) % (wheelSize / 64);
    uint64_t bits = wheelMap[word];
    if (k == 0)
      bits &= ~uint64_t(0) << (start % 64);
    else if (k == wheelSize / 64)
      bits &= (uint64_t(1) << (start % 64)) - 1;
    if (!bits)
      continue;
    unsigned b = word * 64 + unsigned(__builtin_ctzll(bits));
    return wheelBase + ((b - start) & (wheelSize - 1));
  }
  return never;
}

uint64_t Emulator::Impl::nextEventTime() const {
  uint64_t next = wheelNext();
  if (!far.empty())
    next = std::min(next, far.top().time);
  for (const Key &k : late)
    next = std::min(next, k.time);
  return next;
}

uint64_t Controller::serve(uint64_t time, unsigned bytes) {
  uint64_t service =
      command + (bytesShift >= 0 ? (bytes + bytesPerCycle - 1) >> bytesShift
                 : bytesPerCycle ? (bytes + bytesPerCycle - 1) / bytesPerCycle
                                 : 0);
  while (serviceHead < serviceEnds.size() && serviceEnds[serviceHead] <= time)
    ++serviceHead;
  if (serviceHead == serviceEnds.size()) {
    serviceEnds.clear();
    serviceHead = 0;
  } else if (serviceHead >= 4096) {
    serviceEnds.erase(serviceEnds.begin(),
                      serviceEnds.begin() + std::ptrdiff_t(serviceHead));
    serviceHead = 0;
  }
  uint32_t ahead = uint32_t(serviceEnds.size() - serviceHead);
  uint64_t start = std::max(time, freeAt);
  freeAt = start + service;
  if (service)
    serviceEnds.push_back(freeAt);
  for (MemoryStats *ms : {stats, channel}) {
    if (!ms)
      continue;
    ms->maxQueue = std::max(ms->maxQueue, ahead);
    ++ms->commands;
    ms->busyCycles += service;
    ms->queueCycles += start - time;
  }
  return freeAt;
}

uint64_t Emulator::Impl::dma(Controller &k, uint64_t time, uint32_t length) {
  unsigned bytes = (length + 7) & ~7u; // whole quadwords
  ++k.stats->dmaCommands;
  k.stats->dmaBytes += bytes;
  return k.serve(time, bytes);
}

void Emulator::Impl::arrive(Event &e) {
  Controller &k = controllers[e.queued - 1];
  e.queued = 0;
  if (e.op == Op::MsfTx) {
    // The packet is read out of DRAM, then leaves.
    e.time = dma(k, e.time, e.data[0]) + config.txLatency;
    return;
  }
  unsigned bytes = e.op == Op::ScratchPut || e.op == Op::ScratchGet
                       ? 4 * e.count
                   : isAtomic(e.op) ? 8 // read and write one word
                                    : 4 * transferWords(e.op, e.count);
  e.time = k.serve(e.time, bytes) + k.latency;
}

void Emulator::Impl::apply(uint32_t slot) {
  Event &event = pool(slot);
  if (event.queued) {
    // Arrivals are applied in (cycle, issue order): the controller sees
    // commands in the order the machine issued them.
    arrive(event);
    enqueue(slot);
    return;
  }
  lastActivity = std::max(lastActivity, event.time);
  applyEvent(event);
  freeSlots.push_back(slot);
}

void Emulator::Impl::processEvents(uint64_t before) {
  // Late events first, in order (they are all before anything else).
  // (Two buffers swapped back and forth: no allocation per quantum.)
  while (!late.empty()) {
    lateBatch.clear();
    lateBatch.swap(late);
    std::sort(lateBatch.begin(), lateBatch.end(),
              [](const Key &x, const Key &y) { return y < x; });
    for (const Key &k : lateBatch)
      apply(k.slot);
  }
  for (;;) {
    while (!far.empty() && far.top().time - wheelBase < wheelSize) {
      Key k = far.top();
      far.pop();
      wheelInsert(k.time, k.seq, k.slot);
    }
    uint64_t t = wheelNext();
    if (t == never) {
      if (far.empty() || far.top().time >= before)
        break;
      wheelBase = far.top().time; // nothing in between: jump
      continue;
    }
    if (t >= before)
      break;
    wheelBase = t;
    unsigned b = unsigned(t) & (wheelSize - 1);
    // Applying may append events of this same cycle: take them one by one.
    for (uint32_t slot; (slot = bucketHead[b]) != noSlot;) {
      bucketHead[b] = pool(slot).next;
      if (bucketHead[b] == noSlot)
        bucketTail[b] = noSlot;
      --wheelCount;
      apply(slot);
    }
    wheelMap[b / 64] &= ~(uint64_t(1) << (b % 64));
    wheelBase = t + 1;
  }
  wheelBase = std::max(wheelBase, before);
}

void Emulator::Impl::fault(MEState &me, unsigned ctx, uint32_t pc,
                           const std::string &why, uint64_t cycle) {
  if (me.stopped)
    return;
  Fault f;
  f.me = me.index;
  f.ctx = ctx;
  f.pc = pc;
  f.reason = why;
  f.cycle = cycle;
  if (pc < me.words.size()) {
    f.word = me.words[pc];
    Instr in;
    std::string ignored;
    if (decode(f.word, in, ignored))
      f.instruction = printInstr(in);
    else {
      char hex[32];
      std::snprintf(hex, sizeof(hex), ".word64 0x%016llx",
                    static_cast<unsigned long long>(f.word));
      f.instruction = hex;
    }
  } else {
    f.instruction = "(none: the pc is beyond the program)";
  }
  stats.faults.push_back(std::move(f));
  if (me.active >= 0) {
    Context &c = me.ctx[me.active];
    c.stats->execCycles += cycle > c.startedAt ? cycle - c.startedAt : 0;
    c.state = Context::Killed;
  }
  retireContexts(me, cycle);
  lastActivity = std::max(lastActivity, cycle);
}

void Emulator::Impl::retireContexts(MEState &me, uint64_t now) {
  me.stopped = true;
  me.active = -1;
  me.readyMask = 0;
  for (unsigned k = 0; k < me.numContexts; ++k) {
    Context &c = me.ctx[k];
    if (c.state == Context::Waiting) {
      c.stats->waitCycles += now > c.waitSince ? now - c.waitSince : 0;
    } else if (c.state == Context::Ready && c.readyAt < now) {
      c.stats->waitCycles +=
          c.readyAt > c.waitSince ? c.readyAt - c.waitSince : 0;
      c.stats->readyCycles += now - c.readyAt;
    }
    if (c.state != Context::Off)
      c.state = Context::Killed;
  }
}

static uint64_t hash64(uint64_t value, uint64_t multiplier) {
  // Carry-less multiplication, reduced modulo x^64 + x^4 + x^3 + x + 1.
  uint64_t lo = 0, hi = 0;
  for (int bit = 0; bit < 64; ++bit)
    if ((multiplier >> bit) & 1) {
      lo ^= value << bit;
      hi ^= bit ? value >> (64 - bit) : 0;
    }
  for (int bit = 63; bit >= 0; --bit)
    if ((hi >> bit) & 1) {
      // x^(64+bit) = x^bit * (x^4 + x^3 + x + 1)
      uint64_t r = 0x1Bull;
      lo ^= r << bit;
      hi ^= bit > 59 ? r >> (64 - bit) : 0;
      hi &= ~(uint64_t(1) << bit);
    }
  return lo;
}

void Emulator::Impl::memoryEvent(Event &e) {
  MEState &me = mes[e.me];
  // A command of an earlier run of a restarted ME lands in memory (and
  // rings) but not in the registers of the code that runs now.
  bool stale = e.generation != me.generation;
  uint32_t discard[6 * 32]; // a context's registers at most
  uint32_t *regs = stale ? discard : me.ctx[e.ctx].regs;
  Op op = e.op;
  Memory memory = op >= Op::DramRead   ? Memory::Dram
                  : op >= Op::SramRead ? Memory::Sram
                                       : Memory::Scratch;
  MemoryStats &ms = memory == Memory::Scratch ? stats.scratch
                    : memory == Memory::Sram  ? stats.sram
                                              : stats.dram;
  uint8_t *base = memoryBase(memory);
  switch (op) {
  case Op::ScratchRead:
  case Op::SramRead:
  case Op::DramRead: {
    unsigned words = transferWords(op, e.count);
    for (unsigned i = 0; i < words; ++i)
      regs[e.xfer + i] = loadBE(base + e.addr + 4 * i);
    ++ms.reads;
    ms.bytesRead += 4 * words;
    break;
  }
  case Op::ScratchWrite:
  case Op::SramWrite:
  case Op::DramWrite: {
    unsigned words = transferWords(op, e.count);
    for (unsigned i = 0; i < words; ++i)
      storeBE(base + e.addr + 4 * i, e.data[i]);
    ++ms.writes;
    lastEffect = std::max(lastEffect, e.time);
    ms.bytesWritten += 4 * words;
    break;
  }
  case Op::ScratchPut: {
    Ring &ring = rings[e.addr];
    RingStats &rs = stats.rings[e.addr];
    if (ring.count + e.count > ring.size) {
      ++rs.overflows;
      if (config.ringOverflow == RingOverflow::Fault) {
        fault(me, e.ctx, e.pc,
              "scratch ring " + std::to_string(e.addr) + " overflow: put of " +
                  std::to_string(e.count) + " words with " +
                  std::to_string(ring.count) + " of " +
                  std::to_string(ring.size) + " in use",
              e.time);
        return;
      }
      break;
    }
    ringPut(e.addr, e.data, e.count);
    lastEffect = std::max(lastEffect, e.time);
    ++me.ringOps[e.addr].puts;
    break;
  }
  case Op::ScratchGet: {
    Ring &ring = rings[e.addr];
    RingStats &rs = stats.rings[e.addr];
    netvm_emu_ring_ops &ops = me.ringOps[e.addr];
    if (ring.count < e.count || stale || me.stopped ||
        ((me.fencedRings >> e.addr) & 1)) {
      // An empty ring reads as zeros (descriptors are never zero); so does
      // a fenced one for this ME, and every ring for a stopped ME, whose
      // gets still in flight take nothing.
      for (unsigned i = 0; i < e.count; ++i)
        regs[e.xfer + i] = 0;
      ++rs.emptyGets;
      ++ops.refused;
      break;
    }
    ringGet(e.addr, regs + e.xfer, e.count);
    lastEffect = std::max(lastEffect, e.time);
    if (!ops.gets)
      ops.firstGet = e.time;
    ops.lastGet = e.time;
    ++ops.gets;
    break;
  }
  case Op::Hash64:
    for (unsigned i = 0; i < e.count; ++i) {
      uint64_t h = hash64(uint64_t(e.data[2 * i]) << 32 | e.data[2 * i + 1],
                          config.hashMultiplier);
      regs[e.xfer + 2 * i] = uint32_t(h >> 32);
      regs[e.xfer + 2 * i + 1] = uint32_t(h);
    }
    ++stats.hashOps;
    break;
  default: {
    // Atomics on one word.
    lastEffect = std::max(lastEffect, e.time);
    uint8_t *p = base + e.addr;
    uint32_t old = loadBE(p), operand = e.data[0], result = old;
    bool returns = false;
    switch (op) {
    case Op::ScratchTestAdd:
    case Op::SramTestAdd:
      returns = true;
      [[fallthrough]];
    case Op::ScratchAdd:
    case Op::SramAdd:
      result = old + operand;
      break;
    case Op::ScratchTestSet:
    case Op::SramTestSet:
      returns = true;
      [[fallthrough]];
    case Op::ScratchSet:
    case Op::SramSet:
      result = old | operand;
      break;
    case Op::ScratchTestClr:
    case Op::SramTestClr:
      returns = true;
      [[fallthrough]];
    case Op::ScratchClr:
    case Op::SramClr:
      result = old & ~operand;
      break;
    case Op::ScratchSwap:
    case Op::SramSwap:
      returns = true;
      result = operand;
      break;
    case Op::ScratchIncr:
    case Op::SramIncr:
      result = old + 1;
      break;
    case Op::ScratchDecr:
    case Op::SramDecr:
      result = old - 1;
      break;
    default:
      break;
    }
    storeBE(p, result);
    if (returns)
      regs[e.xfer] = old;
    ++ms.atomics;
    break;
  }
  }
  if (!stale)
    deliverSignal(e.me, e.ctx, e.sig, e.time, e.reason);
}

void Emulator::Impl::ringPut(unsigned r, const uint32_t *words,
                             unsigned count) {
  Ring &ring = rings[r];
  for (unsigned i = 0; i < count; ++i)
    storeBE(scratch.data() + ring.base +
                4 * ((ring.head + ring.count + i) % ring.size),
            words[i]);
  ring.count += count;
  ++stats.rings[r].puts;
  stats.rings[r].maxOccupancy =
      std::max(stats.rings[r].maxOccupancy, ring.count);
}

void Emulator::Impl::ringGet(unsigned r, uint32_t *words, unsigned count) {
  Ring &ring = rings[r];
  for (unsigned i = 0; i < count; ++i)
    words[i] =
        loadBE(scratch.data() + ring.base + 4 * ((ring.head + i) % ring.size));
  ring.head = (ring.head + count) % ring.size;
  ring.count -= count;
  ++stats.rings[r].gets;
}

//===----------------------------------------------------------------------===//
// The host interface
//===----------------------------------------------------------------------===//

void Emulator::Impl::hostCross(unsigned words) {
  uint64_t cost =
      config.hostCrossingCycles + uint64_t(words) * config.hostWordCycles;
  hostClock += cost;
  ++stats.host.crossings;
  stats.host.words += words;
  stats.host.busyCycles += cost;
}

void Emulator::Impl::runHost(uint64_t time) {
  hostClock = time;
  ++stats.host.calls;
  netvm_emu_host handle{this};
  uint64_t again = hostFn(&handle, hostUser);
  lastActivity = std::max(lastActivity, hostClock);
  if (!again) {
    hostFn = nullptr;
    return;
  }
  Event next;
  next.kind = EventKind::Host;
  next.time = hostClock + again;
  schedule(std::move(next));
}

extern "C" uint64_t netvm_emu_host_now(const netvm_emu_host *host) {
  return host->impl->hostClock;
}

extern "C" int netvm_emu_host_ring_count(netvm_emu_host *host, unsigned ring) {
  Emulator::Impl &m = *host->impl;
  m.hostCross(0);
  if (ring >= numRings || !m.rings[ring].configured)
    return -1;
  return int(m.rings[ring].count);
}

extern "C" int netvm_emu_host_rx_backlog(netvm_emu_host *host) {
  Emulator::Impl &m = *host->impl;
  m.hostCross(0);
  return int(m.rbuf.size());
}

extern "C" int netvm_emu_host_ring_get(netvm_emu_host *host, unsigned ring,
                                       uint32_t *words, unsigned count) {
  Emulator::Impl &m = *host->impl;
  if (ring >= numRings || !m.rings[ring].configured || count < 1 ||
      count > maxCount || m.rings[ring].count < count) {
    m.hostCross(0);
    ++m.stats.host.failedGets;
    return -1;
  }
  m.ringGet(ring, words, count);
  ++m.stats.host.gets;
  m.hostCross(count);
  return 0;
}

extern "C" int netvm_emu_host_ring_put(netvm_emu_host *host, unsigned ring,
                                       const uint32_t *words, unsigned count) {
  Emulator::Impl &m = *host->impl;
  if (ring >= numRings || !m.rings[ring].configured || count < 1 ||
      count > maxCount ||
      m.rings[ring].count + m.hostPending[ring] + count > m.rings[ring].size) {
    m.hostCross(0);
    ++m.stats.host.failedPuts;
    return -1;
  }
  m.hostCross(count);
  Event e;
  e.kind = EventKind::HostPut;
  e.time = m.hostClock;
  e.addr = ring;
  e.count = uint8_t(count);
  std::copy(words, words + count, e.data);
  m.hostPending[ring] += count;
  ++m.stats.host.puts;
  m.schedule(std::move(e));
  return 0;
}

/// Whether a host memory access names a memory and a range inside it; if
/// not, it is refused and pays a crossing.
static bool hostAccess(Emulator::Impl &m, unsigned memory, uint32_t address,
                       const void *bytes, uint32_t length) {
  if (memory <= unsigned(Memory::Dram) &&
      m.memoryRange(Memory(memory), address, length) && (bytes || !length))
    return true;
  m.hostCross(0);
  ++m.stats.host.failedMemory;
  return false;
}

static unsigned wordsOf(uint32_t length) { return (length + 3) / 4; }

extern "C" int netvm_emu_host_read(netvm_emu_host *host, unsigned memory,
                                   uint32_t address, void *bytes,
                                   uint32_t length) {
  Emulator::Impl &m = *host->impl;
  if (!hostAccess(m, memory, address, bytes, length))
    return -1;
  uint8_t *to = static_cast<uint8_t *>(bytes);
  if (length)
    std::memcpy(to, m.memoryBase(Memory(memory)) + address, length);
  // The host's own writes still crossing come before this read.
  for (const Emulator::Impl::HostWrite &w : m.hostWrites) {
    if (w.memory != Memory(memory))
      continue;
    uint64_t from = std::max<uint64_t>(address, w.address);
    uint64_t end = std::min<uint64_t>(uint64_t(address) + length,
                                      uint64_t(w.address) + w.bytes.size());
    if (from < end)
      std::memcpy(to + (from - address), w.bytes.data() + (from - w.address),
                  end - from);
  }
  ++m.stats.host.memoryReads;
  m.stats.host.memoryBytes += length;
  m.hostCross(wordsOf(length));
  return 0;
}

extern "C" int netvm_emu_host_write(netvm_emu_host *host, unsigned memory,
                                    uint32_t address, const void *bytes,
                                    uint32_t length) {
  Emulator::Impl &m = *host->impl;
  if (!hostAccess(m, memory, address, bytes, length))
    return -1;
  m.hostCross(wordsOf(length));
  ++m.stats.host.memoryWrites;
  m.stats.host.memoryBytes += length;
  const uint8_t *from = static_cast<const uint8_t *>(bytes);
  m.hostWrites.push_back(
      {Memory(memory), address, std::vector<uint8_t>(from, from + length)});
  Event e;
  e.kind = EventKind::HostWrite;
  e.time = m.hostClock;
  m.schedule(std::move(e));
  return 0;
}

static MEState *hostME(Emulator::Impl &m, unsigned me) {
  return me < m.mes.size() ? &m.mes[me] : nullptr;
}

extern "C" int netvm_emu_host_me_load(netvm_emu_host *host, unsigned me,
                                      const uint64_t *words, unsigned count,
                                      unsigned contexts, uint32_t ctxEnable) {
  Emulator::Impl &m = *host->impl;
  MEState *target = hostME(m, me);
  if (!target || (target->loaded && !target->stopped) || !words || !count ||
      count > m.config.controlStore || (contexts != 4 && contexts != 8) ||
      (ctxEnable >> contexts) || !ctxEnable) {
    m.hostCross(0);
    return -1;
  }
  // Each instruction is two words across the interface.
  m.hostCross(2 * count);
  CodeBlock block;
  block.words.assign(words, words + count);
  block.ctxMode = uint8_t(contexts);
  block.ctxEnable = uint8_t(ctxEnable);
  m.installCode(*target, block);
  return 0;
}

extern "C" int netvm_emu_host_me_stop(netvm_emu_host *host, unsigned me) {
  Emulator::Impl &m = *host->impl;
  m.hostCross(0);
  MEState *target = hostME(m, me);
  if (!target || !target->loaded)
    return -1;
  if (!target->stopped) {
    m.retireContexts(*target, m.hostClock);
    ++target->generation; // its commands in flight are an earlier run's
  }
  return 0;
}

extern "C" int netvm_emu_host_me_start(netvm_emu_host *host, unsigned me) {
  Emulator::Impl &m = *host->impl;
  m.hostCross(0);
  MEState *target = hostME(m, me);
  if (!target || !target->loaded || !target->stopped)
    return -1;
  m.startME(*target, m.hostClock);
  return 0;
}

extern "C" int netvm_emu_host_ring_fence(netvm_emu_host *host, unsigned me,
                                         unsigned ring, int fenced) {
  Emulator::Impl &m = *host->impl;
  m.hostCross(0);
  MEState *target = hostME(m, me);
  if (!target || ring >= numRings)
    return -1;
  if (fenced)
    target->fencedRings |= 1u << ring;
  else
    target->fencedRings &= ~(1u << ring);
  return 0;
}

extern "C" int netvm_emu_host_me_ring_ops(netvm_emu_host *host, unsigned me,
                                          unsigned ring,
                                          netvm_emu_ring_ops *ops) {
  Emulator::Impl &m = *host->impl;
  m.hostCross(0);
  MEState *target = hostME(m, me);
  if (!target || ring >= numRings || !ops)
    return -1;
  *ops = target->ringOps[ring];
  return 0;
}

void Emulator::attachHost(netvm_emu_host_fn fn, void *user,
                          uint64_t firstCycle) {
  impl->hostFn = fn;
  impl->hostUser = user;
  impl->stats.hostAttached = fn != nullptr;
  if (!fn)
    return;
  Event first;
  first.kind = EventKind::Host;
  first.time = firstCycle;
  impl->schedule(std::move(first));
}

void Emulator::Impl::applyEvent(Event &e) {
  // Progress (MachineConfig::stallCycles): a packet, a next-neighbour
  // write, what the host puts or writes; memory commands decide below.
  if (e.kind != EventKind::Memory && e.kind != EventKind::Signal &&
      e.kind != EventKind::RxRequest && e.kind != EventKind::Host)
    lastEffect = std::max(lastEffect, e.time);
  switch (e.kind) {
  case EventKind::Host:
    if (hostFn)
      runHost(e.time);
    return;
  case EventKind::HostPut: {
    hostPending[e.addr] -= e.count;
    if (rings[e.addr].count + e.count > rings[e.addr].size) {
      ++stats.rings[e.addr].overflows;
      ++stats.host.overflows;
      return;
    }
    ringPut(e.addr, e.data, e.count);
    return;
  }
  case EventKind::HostWrite: {
    const HostWrite &w = hostWrites.front();
    if (!w.bytes.empty())
      std::memcpy(memoryBase(w.memory) + w.address, w.bytes.data(),
                  w.bytes.size());
    hostWrites.pop_front();
    return;
  }
  case EventKind::Memory:
    memoryEvent(e);
    return;
  case EventKind::RxRequest:
    rxQueue.push_back(
        RxRequest{e.time, e.me, e.ctx, e.sig, e.count, e.xfer, e.pc, e.addr});
    serveRx(e.time);
    return;
  case EventKind::Arrival: {
    unsigned port = e.aux;
    rxPorts[port].arrivalPending = false;
    --arrivalsPending;
    uint32_t wire;
    if (!pullPacket(port, e.time, &wire)) {
      serveRx(e.time); // waiting receives learn the input has ended
      return;
    }
    // The next packet starts when this one has passed on the wire
    // (with preamble, start delimiter and inter-frame gap: 20 bytes).
    double bits = (double(wire) + 20) * 8;
    uint64_t gap = uint64_t(
        std::ceil(bits * config.clockMHz / (config.lineRateGbps * 1000.0)));
    Event next;
    next.kind = EventKind::Arrival;
    next.time = e.time + std::max<uint64_t>(gap, 1);
    next.aux = port;
    rxPorts[port].arrivalPending = true;
    ++arrivalsPending;
    schedule(std::move(next));
    serveRx(e.time);
    return;
  }
  case EventKind::RxDone: {
    MEState &me = mes[e.me];
    uint32_t desc[6] = {0, 0, 1, 0, 0, 0}; // status bit 0: end of input
    if (e.aux != ~0u) {
      BufferedPacket &bp = inFlight[e.aux];
      const InputPacket &p = bp.packet;
      uint32_t length =
          uint32_t(std::min<size_t>(p.bytes.size(), config.maxPacketBytes));
      std::memcpy(dram.get() + e.addr, p.bytes.data(), length);
      uint32_t wire =
          std::max<uint32_t>(p.wireLength, uint32_t(p.bytes.size()));
      bool truncated = length < p.bytes.size();
      desc[0] = length;
      desc[1] = wire;
      desc[2] = (truncated ? 2u : 0u) | bp.port << 8;
      desc[3] = uint32_t(bp.sequence);
      desc[4] = p.seconds;
      desc[5] = p.microseconds;
      ++stats.packetsReceived;
      stats.bytesReceived += wire;
      stats.packetsTruncated += truncated;
      PortStats &ps = portStats(bp.port);
      ++ps.received;
      ps.bytesReceived += wire;
      ps.truncated += truncated;
      spare.push_back(std::move(bp.packet));
      inFlightFree.push_back(e.aux);
    }
    for (unsigned i = 0; i < e.count; ++i)
      me.ctx[e.ctx].regs[e.xfer + i] = desc[i];
    deliverSignal(e.me, e.ctx, e.sig, e.time, StallRx);
    return;
  }
  case EventKind::TxDone: {
    uint32_t length = e.data[0];
    uint32_t wire = std::max(e.data[1], length);
    if (output) {
      Transmission t;
      t.bytes = dram.get() + e.addr;
      t.length = length;
      t.wireLength = wire;
      t.port = e.data[2];
      t.cycle = e.time;
      t.dramAddress = e.addr;
      t.hasTag = e.count >= 4;
      t.tag = t.hasTag ? e.data[3] : 0;
      output->transmit(t);
    }
    ++stats.packetsSent;
    stats.bytesSent += wire;
    PortStats &ps = portStats(e.data[2]);
    ++ps.sent;
    ps.bytesSent += wire;
    deliverSignal(e.me, e.ctx, e.sig, e.time, StallTx);
    return;
  }
  case EventKind::NnWrite:
    mes[e.me].nn[e.aux] = e.data[0];
    return;
  case EventKind::NnPut: {
    MEState &to = mes[e.me];
    to.nn[(to.nnHead + to.nnCount) % numNN] = e.data[0];
    ++to.nnCount;
    return;
  }
  case EventKind::Signal:
    deliverSignal(e.me, e.ctx, e.sig, e.time, StallSignal);
    return;
  }
}

//===----------------------------------------------------------------------===//
// Media switch fabric
//===----------------------------------------------------------------------===//

PortStats &Emulator::Impl::portStats(unsigned port) {
  if (stats.ports.size() <= port)
    stats.ports.resize(port + 1);
  return stats.ports[port];
}

bool Emulator::Impl::pullPacket(unsigned port, uint64_t arrival,
                                uint32_t *wire) {
  RxPort &rx = rxPorts[port];
  if (rx.done)
    return false;
  // A buffer of a packet already in DRAM, emptied (its capacity stays).
  InputPacket packet;
  if (!spare.empty()) {
    packet = std::move(spare.back());
    spare.pop_back();
    packet.bytes.clear();
    packet.wireLength = 0;
    packet.seconds = packet.microseconds = 0;
    packet.port = -1;
  }
  if (!rx.input->next(packet)) {
    if (rx.input->live()) {
      spare.push_back(std::move(packet));
      return false; // nothing for now: asked again when a run resumes
    }
    rx.done = true;
    inputDone = std::all_of(rxPorts.begin(), rxPorts.end(),
                            [](const RxPort &p) { return p.done; });
    return false;
  }
  uint32_t length =
      std::max<uint32_t>(packet.wireLength, uint32_t(packet.bytes.size()));
  if (wire)
    *wire = length;
  ++stats.packetsOffered;
  if (packet.port >= 0 && packet.port < 16)
    port = unsigned(packet.port);
  PortStats &ps = portStats(port);
  ++ps.offered;
  uint64_t seq = packetsRead++;
  if (rbuf.size() >= config.rbufElements) {
    ++stats.packetsDropped;
    ++ps.dropped;
    spare.push_back(std::move(packet));
  } else {
    rbuf.push_back(BufferedPacket{arrival, seq, port, std::move(packet)});
  }
  return true;
}

void Emulator::Impl::fillRbuf(uint64_t time) {
  if (config.lineRateGbps > 0)
    return;
  // The ports with input take turns; live ports with nothing for now
  // end the round when none gave a packet.
  unsigned empty = 0;
  while (!inputDone && rbuf.size() < config.rbufElements &&
         empty < rxPorts.size()) {
    unsigned port = nextRxPort;
    nextRxPort = (nextRxPort + 1) % unsigned(rxPorts.size());
    if (!rxPorts[port].done && pullPacket(port, time))
      empty = 0;
    else
      ++empty;
  }
}

void Emulator::Impl::serveRx(uint64_t time) {
  while (!rxQueue.empty()) {
    const RxRequest &r = rxQueue.front();
    uint32_t aux;
    uint64_t when;
    if (!rbuf.empty()) {
      uint64_t start = std::max({r.time, rbuf.front().arrival, time});
      if (!inFlightFree.empty()) {
        aux = inFlightFree.back();
        inFlightFree.pop_back();
        inFlight[aux] = std::move(rbuf.front());
      } else {
        aux = uint32_t(inFlight.size());
        inFlight.push_back(std::move(rbuf.front()));
      }
      rbuf.pop_front();
      // The packet is written into DRAM through its controller.
      uint32_t length = uint32_t(std::min<size_t>(
          inFlight[aux].packet.bytes.size(), config.maxPacketBytes));
      when = dma(controllers.back(), start, length) + config.rxLatency;
      fillRbuf(start);
    } else if (inputDone && !arrivalsPending) {
      aux = ~0u;
      when = std::max(r.time, time) + config.rxLatency;
    } else {
      return;
    }
    // Filled in place (an event is large).
    uint32_t slot = allocEvent();
    Event &done = pool(slot);
    done.time = when;
    done.kind = EventKind::RxDone;
    done.op = Op::MsfRx;
    done.me = r.me;
    done.ctx = r.ctx;
    done.sig = r.sig;
    done.count = r.count;
    done.reason = StallRx;
    done.queued = 0;
    done.xfer = r.xfer;
    done.pc = r.pc;
    done.addr = r.addr;
    done.aux = aux;
    rxQueue.pop_front();
    enqueue(slot);
  }
}

//===----------------------------------------------------------------------===//
// The main loop
//===----------------------------------------------------------------------===//

void Emulator::Impl::run(void (*progress)(uint64_t, void *), void *user,
                         uint64_t progressCycles) {
  const uint64_t q = config.quantum;
  const uint64_t qMask = (q & (q - 1)) == 0 ? q - 1 : 0; // 0: not a power of 2
  uint64_t t = 0, nextProgress = progressCycles;
  if (paused)
    resume(t, nextProgress);
  else
    start();
  running = true;
  bool limited = false, stalled = false, interrupted = false;
  for (;;) {
    if (config.maxCycles && t >= config.maxCycles) {
      limited = true;
      break;
    }
    if (config.stallCycles && t > lastEffect + config.stallCycles) {
      stalled = true;
      break;
    }
    if (stopRequested.load(std::memory_order_relaxed)) {
      interrupted = true;
      break;
    }
    uint64_t end = t + q;
    processEvents(end);
    // The earliest cycle with work: an event, or a context of some ME.
    uint64_t next = never;
    for (MEState &me : mes) {
      if (!me.loaded || me.stopped)
        continue;
      if (me.nextWake < end)
        me.nextWake = runME(me, t, end);
      if (!me.stopped)
        next = std::min(next, me.nextWake);
    }
    t = end;
    if (progress && progressCycles && t >= nextProgress) {
      progress(t, user);
      nextProgress = t + progressCycles;
    }
    if (pauseRequested) {
      // Kept as it is: the next run() continues from here.
      pauseRequested = false;
      paused = true;
      resumeAt = t;
      running = false;
      stats.cycles = t;
      stats.stopReason = "paused";
      return;
    }
    next = std::min(next, nextEventTime());
    if (next == never)
      break;
    if (next > t)
      t = next - (qMask ? next & qMask : next % q);
  }
  paused = false;
  runEnd(limited, stalled, interrupted);
}

void Emulator::Impl::resume(uint64_t &t, uint64_t &nextProgress) {
  t = resumeAt;
  nextProgress += t;
  // The time paused is no stall; live inputs may have more now.
  lastEffect = std::max(lastEffect, t);
  paused = false;
  for (RxPort &rx : rxPorts)
    if (rx.input && !rx.done)
      fillRbuf(t);
  serveRx(t);
}

void Emulator::Impl::start() {
  for (RxPort &rx : rxPorts)
    rx.done = rx.input == nullptr;
  if (rxPorts.empty())
    rxPorts.emplace_back(); // no input: every receive ends at once
  inputDone = std::all_of(rxPorts.begin(), rxPorts.end(),
                          [](const RxPort &p) { return p.done; });
  if (config.lineRateGbps > 0) {
    // Each port's first packet arrives at cycle 0; each arrival reads the
    // next.
    for (unsigned port = 0; port < rxPorts.size(); ++port) {
      if (rxPorts[port].done)
        continue;
      Event first;
      first.kind = EventKind::Arrival;
      first.aux = port;
      rxPorts[port].arrivalPending = true;
      ++arrivalsPending;
      schedule(std::move(first));
    }
  } else {
    fillRbuf(0);
  }
  lastEffect = 0;
}

void Emulator::Impl::runEnd(bool limited, bool stalled, bool interrupted) {
  running = false;
  uint64_t endCycle = limited ? config.maxCycles : lastActivity;
  finish(endCycle);
  unsigned waiting = 0, loaded = 0, stopped = 0;
  for (const MEState &me : mes) {
    if (!me.loaded)
      continue;
    ++loaded;
    stopped += me.stopped;
    if (!me.stopped)
      for (unsigned c = 0; c < me.numContexts; ++c)
        waiting += me.ctx[c].state == Context::Waiting;
  }
  if (limited)
    stats.stopReason = "cycle limit";
  else if (interrupted)
    stats.stopReason = "interrupted";
  else if (stalled)
    stats.stopReason = "no progress: no memory write, ring put or get, packet, "
                       "next-neighbour write or host action for " +
                       std::to_string(config.stallCycles) +
                       " cycles (--stall-cycles)";
  else if (stopped == loaded)
    stats.stopReason = "every ME stopped";
  else if (waiting)
    stats.stopReason = "quiescent: " + std::to_string(waiting) +
                       " contexts waiting for signals nothing will raise";
  else
    stats.stopReason = "quiescent: every context finished";
  if (!inputDone || !rbuf.empty())
    stats.stopReason += "; input left unreceived";
}

void Emulator::Impl::finish(uint64_t end) {
  stats.cycles = end;
  for (MEState &me : mes) {
    if (!me.loaded)
      continue;
    MEStats &s = *me.stats;
    uint64_t attributed = 0;
    for (unsigned r = 0; r < StallDone; ++r)
      attributed += s.idleCycles[r];
    uint64_t busy = std::min(s.busyCycles, end);
    s.idleCycles[StallDone] =
        end > busy + attributed ? end - busy - attributed : 0;
    for (unsigned c = 0; c < me.numContexts; ++c) {
      Context &ctx = me.ctx[c];
      ThreadStats &ts = *ctx.stats;
      switch (ctx.state) {
      case Context::Running:
        ts.execCycles += end > ctx.startedAt ? end - ctx.startedAt : 0;
        break;
      case Context::Ready:
        if (ctx.readyAt < end) {
          ts.waitCycles +=
              ctx.readyAt > ctx.waitSince ? ctx.readyAt - ctx.waitSince : 0;
          ts.readyCycles += end - ctx.readyAt;
        } else if (end > ctx.waitSince) {
          ts.waitCycles += end - ctx.waitSince;
        }
        break;
      case Context::Waiting:
        ts.waitCycles += end > ctx.waitSince ? end - ctx.waitSince : 0;
        break;
      default:
        break;
      }
    }
  }
  for (unsigned r = 0; r < numRings; ++r)
    stats.rings[r].finalOccupancy = rings[r].count;
}

//===----------------------------------------------------------------------===//
// Inspection and the public interface
//===----------------------------------------------------------------------===//

std::string Emulator::Impl::dumpRegisters() const {
  std::string out;
  char line[96];
  static const char *const states[] = {"off", "running", "ready", "waiting",
                                       "killed"};
  for (const MEState &me : mes) {
    if (!me.loaded)
      continue;
    for (unsigned c = 0; c < me.numContexts; ++c) {
      const Context &ctx = me.ctx[c];
      if (!ctx.stats->enabled)
        continue;
      unsigned n = me.perBank;
      std::snprintf(
          line, sizeof(line), "me%u.ctx%u pc=%u %s cc=%c%c%c%c\n", me.index, c,
          ctx.pc, me.stopped ? "stopped" : states[ctx.state], ctx.z ? 'Z' : 'z',
          ctx.n ? 'N' : 'n', ctx.c ? 'C' : 'c', ctx.v ? 'V' : 'v');
      out += line;
      const char *banks[] = {"a", "b", "$", "$$"};
      for (unsigned bank = 0; bank < 4; ++bank)
        for (unsigned i = 0; i < n; ++i) {
          uint32_t v = ctx.regs[bank * n + i];
          if (bank >= 2 && v == 0)
            continue; // transfer registers only when set
          std::snprintf(line, sizeof(line), "me%u.ctx%u.%s%u = 0x%08x\n",
                        me.index, c, banks[bank], i, v);
          out += line;
        }
    }
  }
  return out;
}

Emulator::Emulator(const MachineConfig &config)
    : impl(std::make_unique<Impl>(config)) {}
Emulator::~Emulator() = default;

bool Emulator::load(const Image &image, std::string &error) {
  if (!impl->load(image, error))
    return false;
  impl->loaded = true;
  return true;
}
void Emulator::setInput(PacketInput *input) { setInput(0, input); }
void Emulator::setInput(unsigned port, PacketInput *input) {
  if (port >= maxPorts)
    return;
  if (impl->rxPorts.size() <= port)
    impl->rxPorts.resize(port + 1);
  impl->rxPorts[port].input = input;
  impl->portStats(port);
}
void Emulator::setOutput(PacketOutput *output) { impl->output = output; }
void Emulator::run(void (*progress)(uint64_t, void *), void *user,
                   uint64_t progressCycles) {
  impl->run(progress, user, progressCycles);
}
void Emulator::pause() { impl->pauseRequested = true; }
uint64_t Emulator::cycle() const { return impl->resumeAt; }
void Emulator::requestStop() {
  impl->stopRequested.store(true, std::memory_order_relaxed);
}
const Stats &Emulator::stats() const { return impl->stats; }
std::string Emulator::dumpRegisters() const { return impl->dumpRegisters(); }

bool Emulator::readMemory(Memory memory, uint32_t address, uint32_t length,
                          std::vector<uint8_t> &bytes) const {
  if (!impl->memoryRange(memory, address, length))
    return false;
  const uint8_t *base = memory == Memory::Scratch ? impl->scratch.data()
                        : memory == Memory::Sram  ? impl->sram.get()
                                                  : impl->dram.get();
  bytes.assign(base + address, base + address + length);
  return true;
}

bool Emulator::writeMemory(Memory memory, uint32_t address,
                           const uint8_t *bytes, uint32_t length,
                           std::string &error) {
  if (!impl->loaded) {
    error = "no image is loaded (memory is initialised by load())";
    return false;
  }
  if (impl->running) {
    error = "the emulator is running: write memory before or between runs "
            "(host code writes with netvm_emu_host_write)";
    return false;
  }
  if (unsigned(memory) > unsigned(Memory::Dram) ||
      !impl->memoryRange(memory, address, length)) {
    error =
        std::string("a write of ") + std::to_string(length) + " bytes at " +
        (unsigned(memory) > unsigned(Memory::Dram) ? "?" : memoryName(memory)) +
        " address " + printNumber(address) + " is outside the memory";
    return false;
  }
  if (!bytes && length) {
    error = "no bytes to write";
    return false;
  }
  if (length)
    std::memcpy(impl->memoryBase(memory) + address, bytes, length);
  return true;
}
