//===- Internal.h - State of the emulated network processor -----*- C++ -*-===//
//
// The emulator's machine state, shared by Emulator.cpp (loading, the event
// queue, memories, rings, the media switch fabric, the main loop and the
// statistics) and Execute.cpp (the microengine interpreter).
//
// Timing model in one paragraph: every ME keeps its own clock and runs its
// contexts for a quantum of cycles; every effect that crosses an ME (memory
// commands, rings, next-neighbour writes, packets) is an event in one queue
// ordered by (cycle, issue order) and is applied between quanta. The
// quantum is at most the shortest memory latency, so a command issued in
// one quantum always completes in a later one and memory sees commands in
// cycle order, whatever the order in which MEs were simulated.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_RUNTIME_EMU_INTERNAL_H
#define NETVM_RUNTIME_EMU_INTERNAL_H

#include "netvm/emu/Emulator.h"
#include "netvm/emu/Isa.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <deque>
#include <memory>
#include <queue>
#include <string>
#include <vector>

namespace netvm::me {

constexpr uint64_t never = ~uint64_t(0);

/// Resolved operands of a predecoded instruction: below `special`, an
/// index into the context's register array; else a special access.
enum : uint16_t {
  special = 0x8000,
  opNone = special | 0x000,
  opImm = special | 0x100,
  opLM = special | 0x200, // | LM index bits of the specifier
  opNN = special | 0x300, // | register number
  opNnRing = special | 0x400,
  opXferIdx = special | 0x500, // | 1: $$ (DRAM) side, | 2: post-increment
};

/// A predecoded instruction.
struct DInst {
  Op op = Op::Invalid;
  uint8_t cycles = 1;
  uint8_t takenCost = 0; // branch penalty after its defer slots
  bool bad = false;
  uint16_t dst = opNone, a = opNone, b = opNone;
  uint32_t imm = 0;
  Shift shift = Shift::None;
  uint8_t shiftAmount = 0;
  uint8_t field = 0, value = 0, count = 0, sig = 0, defer = 0;
  SigMode sigMode = SigMode::None;
  uint16_t csr = 0, sigMask = 0;
  uint16_t xfer = 0; // memory commands: register index of the first word
};

struct Context {
  enum State : uint8_t { Off, Running, Ready, Waiting, Killed };
  State state = Off;
  uint32_t *regs = nullptr;
  uint32_t pc = 0;
  uint16_t sigs = 0; // asserted signals
  uint16_t waitMask = 0;
  bool waitAny = false;
  uint8_t deferLeft = 0;
  uint32_t deferTarget = 0;
  bool z = false, n = false, c = false, v = false;
  uint32_t lmAddr[2] = {0, 0};
  uint32_t byteIndex = 0, tIndex = 0, crcRemainder = 0;
  uint64_t sigTime[numSignals] = {};
  uint8_t sigReason[numSignals] = {};
  uint64_t readyAt = 0; // Ready: from this cycle
  uint8_t wakeReason = StallDone;
  uint64_t waitSince = 0; // Waiting (or Ready): since this cycle
  uint64_t startedAt = 0; // Running: since this cycle
  ThreadStats *stats = nullptr;
};

struct MEState {
  unsigned index = 0;
  bool loaded = false;
  bool stopped = false;
  unsigned numContexts = 8;
  unsigned perBank = 16; // GPRs per bank (and transfer registers) a context
  int block = -1;        // code block of the image
  std::vector<DInst> code;
  std::vector<uint64_t> words;
  std::vector<std::string> badReason; // per instruction, if bad
  std::vector<uint32_t> regfile;
  Context ctx[8];
  std::vector<uint32_t> lm;
  uint32_t nn[numNN] = {};
  unsigned nnHead = 0, nnCount = 0, nnReserved = 0;
  uint32_t camTag[camEntries] = {};
  uint8_t camState[camEntries] = {};
  uint8_t camLru[camEntries] = {}; // camLru[0] is the least recently used
  uint64_t now = 0;
  /// No context can run before this cycle unless an event wakes one.
  uint64_t nextWake = 0;
  int active = -1;
  uint32_t readyMask = 0; // contexts in state Ready
  unsigned lastCtx = 7;   // round robin starts after it
  uint64_t idleSince = 0;
  bool idle = true;
  /// Contexts started at PC 0 (the code block's ctxEnable).
  uint32_t ctxEnable = 0;
  /// Bumped when the host restarts the ME: commands of an earlier run
  /// still in flight land in memory but no longer in its registers.
  uint16_t generation = 0;
  /// Rings whose gets by this ME are refused (host.h, ring fences).
  uint32_t fencedRings = 0;
  netvm_emu_ring_ops ringOps[numRings] = {};
  // Set by an instruction that faulted; checked after it.
  bool faultPending = false;
  std::string faultReason;
  MEStats *stats = nullptr;
};

enum class EventKind : uint8_t {
  Memory,    // a scratch/SRAM/DRAM/hash command completes
  RxRequest, // an rx command reaches the MSF
  RxDone,    // a packet (or the end of input) lands in DRAM + descriptor
  TxDone,    // a packet leaves
  Arrival,   // a packet reaches the RBUF (line-rate mode)
  NnWrite,   // a next-neighbour register write lands
  NnPut,     // a next-neighbour ring put lands
  Signal,    // a signal from another ME
  Host,      // the host function runs
  HostPut,   // a host ring put lands
  HostWrite, // a host write to scratch/SRAM/DRAM lands
};

struct Event {
  uint64_t time = 0;
  EventKind kind = EventKind::Memory;
  Op op = Op::Invalid;
  uint8_t me = 0, ctx = 0, sig = 0, count = 0;
  uint8_t reason = StallDone;
  /// 1 + controller index while the command is on its way to a memory
  /// controller (time = arrival); 0 once it has a completion time.
  uint8_t queued = 0;
  uint16_t xfer = 0;       // register index where read data goes
  uint16_t generation = 0; // the issuing ME's (MEState::generation)
  uint32_t pc = 0;
  uint32_t addr = 0;
  uint32_t aux = 0;
  /// The queue's: the order among events of one cycle, and the next event
  /// of the same wheel bucket.
  uint32_t next = 0;
  uint64_t seq = 0;
  uint32_t data[maxCount] = {};
};

struct RxRequest {
  uint64_t time;
  uint8_t me, ctx, sig, count;
  uint16_t xfer;
  uint32_t pc, addr;
};

struct BufferedPacket {
  uint64_t arrival;
  uint64_t sequence;
  unsigned port;
  InputPacket packet;
};

/// A receive port of the media switch fabric.
struct RxPort {
  PacketInput *input = nullptr;
  bool done = true;            // no input, or its end was read
  bool arrivalPending = false; // line rate: its next Arrival is queued
};

/// A memory controller (one SRAM channel, or the scratch or DRAM
/// controller): one queue served in arrival order.
struct Controller {
  unsigned command = 0, bytesPerCycle = 0, latency = 0;
  uint64_t freeAt = 0;
  /// The service ends of commands not yet served, from serviceHead on
  /// (a FIFO in a vector: they only grow).
  std::vector<uint64_t> serviceEnds;
  size_t serviceHead = 0;
  MemoryStats *stats = nullptr;   // of the memory
  MemoryStats *channel = nullptr; // of this SRAM channel
  /// log2(bytesPerCycle) when it is a power of two (no division per
  /// command), else -1.
  int bytesShift = -1;
  /// Serves a command of `bytes` bytes arriving at `time` (calls come in
  /// cycle order): the cycle its service ends.
  uint64_t serve(uint64_t time, unsigned bytes);
};

struct Ring {
  bool configured = false;
  uint32_t base = 0, size = 0; // words
  uint32_t head = 0, count = 0;
};

class Emulator::Impl {
public:
  explicit Impl(const MachineConfig &config);

  bool load(const Image &image, std::string &error);
  void run(void (*progress)(uint64_t, void *), void *user,
           uint64_t progressCycles);
  /// run()'s parts: the first run's set-up, a paused run's resumption,
  /// and the end of a run that stops.
  void start();
  void resume(uint64_t &t, uint64_t &nextProgress);
  void runEnd(bool limited, bool stalled, bool interrupted);
  std::string dumpRegisters() const;

  // Execute.cpp
  /// Runs `me` over [from, until); returns the cycle it next has work
  /// (never if only a signal can wake it).
  uint64_t runME(MEState &me, uint64_t from, uint64_t until);
  void execute(MEState &me, Context &ctx, uint64_t until);
  uint32_t readSlow(MEState &me, Context &ctx, uint16_t op, uint32_t imm);
  void writeSlow(MEState &me, Context &ctx, uint16_t op, uint32_t value);
  uint32_t readCsr(MEState &me, Context &ctx, Csr csr);
  void writeCsr(MEState &me, Context &ctx, Csr csr, uint32_t value);
  void issue(MEState &me, Context &ctx, const DInst &in, uint32_t address);
  bool inputState(MEState &me, unsigned state);
  uint32_t camLookup(MEState &me, uint32_t tag);
  void camTouch(MEState &me, unsigned entry);

  // Emulator.cpp
  void schedule(Event &&event);
  /// A free event slot to fill in place, then enqueue().
  uint32_t allocEvent();
  void enqueue(uint32_t slot);
  void processEvents(uint64_t before);
  void wheelInsert(uint64_t time, uint64_t seq, uint32_t slot);
  /// The first non-empty bucket's cycle, or never.
  uint64_t wheelNext() const;
  uint64_t nextEventTime() const;
  void apply(uint32_t slot);
  void applyEvent(Event &event);
  void memoryEvent(Event &event);
  /// A packet transfer of the media switch fabric through controller `k`
  /// (DRAM), arriving at `time`: the cycle its service ends.
  uint64_t dma(Controller &k, uint64_t time, uint32_t length);
  /// A command reaches its controller: gives it its completion time.
  void arrive(Event &event);
  void deliverSignal(unsigned me, unsigned ctx, unsigned sig, uint64_t time,
                     uint8_t reason);
  void tryWake(MEState &me, Context &ctx);
  void waitFor(MEState &me, Context &ctx, uint16_t mask, bool any,
               uint64_t now);
  void fault(MEState &me, unsigned ctx, uint32_t pc, const std::string &why,
             uint64_t cycle);
  /// Stops an ME: its contexts end (with their statistics) at `now`.
  void retireContexts(MEState &me, uint64_t now);
  void serveRx(uint64_t time);
  /// Reads port `port`'s next packet into the RBUF (or drops it): false at
  /// the end of its input.
  bool pullPacket(unsigned port, uint64_t arrival, uint32_t *wire = nullptr);
  PortStats &portStats(unsigned port);
  void fillRbuf(uint64_t time);
  void finish(uint64_t end);
  bool memoryRange(Memory memory, uint64_t address, uint64_t length) const;
  uint8_t *memoryBase(Memory memory);

  MachineConfig config;
  Stats stats;
  std::vector<MEState> mes;
  std::vector<uint8_t> scratch;
  /// Zeroed by calloc, lazily by the OS: a large DRAM costs nothing until
  /// touched.
  struct FreeDeleter {
    void operator()(uint8_t *p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t[], FreeDeleter> sram, dram;
  Ring rings[numRings];
  /// Scratch, the SRAM channels, DRAM (controllerFor).
  std::vector<Controller> controllers;
  unsigned controllerFor(Memory memory, uint32_t address) const {
    if (memory == Memory::Scratch)
      return 0;
    if (memory == Memory::Dram)
      return unsigned(controllers.size()) - 1;
    return 1 +
           unsigned(uint64_t(address) * config.sramChannels / config.sramBytes);
  }
  const Image *image = nullptr;
  bool loaded = false;  // an image was loaded
  bool running = false; // inside run()
  std::vector<Symbol> symbols;

  // The event queue, ordered by (time, sequence): a timing wheel of one
  // bucket per cycle for the next wheelSize cycles (commands complete within
  // a few hundred), a heap for later events, and a list of "late" events
  // whose cycle is already behind the wheel (effects shorter than a quantum:
  // next-neighbour writes, receive requests), applied first and in order.
  static constexpr unsigned wheelBits = 12, wheelSize = 1u << wheelBits;
  struct Key {
    uint64_t time, seq;
    uint32_t slot;
    bool operator<(const Key &o) const { // for the max-heap: earliest on top
      return time != o.time ? time > o.time : seq > o.seq;
    }
  };
  /// Each bucket is a list of events linked through Event::next, in
  /// sequence order, from its head to its tail (noSlot: empty).
  static constexpr uint32_t noSlot = ~0u;
  uint32_t bucketHead[wheelSize], bucketTail[wheelSize];
  uint64_t wheelMap[wheelSize / 64] = {}; // non-empty buckets
  uint64_t wheelBase = 0; // every event before this cycle is applied
  size_t wheelCount = 0;
  std::priority_queue<Key> far; // at wheelBase + wheelSize or later
  std::vector<Key> late;        // before wheelBase
  std::vector<Key> lateBatch;   // late events being applied
  /// Event slots in chunks that never move (applying an event may
  /// schedule more); cheaper to index than a deque.
  static constexpr unsigned chunkBits = 8;
  std::vector<std::unique_ptr<Event[]>> eventChunks;
  uint32_t eventSlots = 0;
  Event &pool(uint32_t slot) {
    return eventChunks[slot >> chunkBits][slot & ((1u << chunkBits) - 1)];
  }
  std::vector<uint32_t> freeSlots;
  uint64_t sequence = 0;
  uint64_t lastActivity = 0;
  /// The last cycle the machine made progress (MachineConfig::
  /// stallCycles), and a stop asked for from outside (Emulator::
  /// requestStop).
  uint64_t lastEffect = 0;
  std::atomic<bool> stopRequested{false};
  /// Emulator::pause: asked for, and the cycle a paused run resumes at.
  bool pauseRequested = false, paused = false;
  uint64_t resumeAt = 0;

  // The host interface.
  netvm_emu_host_fn hostFn = nullptr;
  void *hostUser = nullptr;
  uint64_t hostClock = 0;
  uint32_t hostPending[numRings] = {}; // words of host puts in flight
  /// Host memory writes in flight, in the order they land (the host's
  /// clock only advances): a HostWrite event applies the first. The host's
  /// own reads see them (its accesses are in program order).
  struct HostWrite {
    Memory memory;
    uint32_t address;
    std::vector<uint8_t> bytes;
  };
  std::deque<HostWrite> hostWrites;
  void runHost(uint64_t time);
  /// Puts the code of `block` into `me` (stopped, contexts off).
  void installCode(MEState &me, const CodeBlock &block);
  /// Resets `me`'s contexts, registers, local memory and CAM and makes
  /// its enabled contexts ready at `now`.
  void startME(MEState &me, uint64_t now);
  /// Ring operations that fit (checked by the caller), with statistics.
  void ringPut(unsigned ring, const uint32_t *words, unsigned count);
  void ringGet(unsigned ring, uint32_t *words, unsigned count);
  /// Pays a crossing of `words` words on the host's clock.
  void hostCross(unsigned words);

  // Media switch fabric.
  std::vector<RxPort> rxPorts; // index: port
  unsigned nextRxPort = 0;     // lossless: the port whose turn it is
  unsigned arrivalsPending = 0;
  PacketOutput *output = nullptr;
  std::deque<BufferedPacket> rbuf;
  std::deque<RxRequest> rxQueue;
  std::vector<BufferedPacket> inFlight; // packets between RBUF and DRAM
  /// Packets whose bytes are in DRAM (or dropped): their buffers are
  /// given to the inputs again, so that reading a packet allocates
  /// nothing.
  std::vector<InputPacket> spare;
  std::vector<uint32_t> inFlightFree;
  bool inputDone = false; // every port's input is over
  uint64_t packetsRead = 0;
  uint64_t nextArrival = 0;
  std::vector<uint8_t> txBuffer;

  uint32_t crcTable[2][256];
};

//===----------------------------------------------------------------------===//
// Hot paths, inline for both Emulator.cpp and Execute.cpp
//===----------------------------------------------------------------------===//

inline uint32_t Emulator::Impl::allocEvent() {
  if (!freeSlots.empty()) {
    uint32_t slot = freeSlots.back();
    freeSlots.pop_back();
    return slot;
  }
  if ((eventSlots >> chunkBits) == eventChunks.size())
    eventChunks.emplace_back(new Event[1u << chunkBits]);
  return eventSlots++;
}

inline void Emulator::Impl::enqueue(uint32_t slot) {
  Event &event = pool(slot);
  uint64_t time = event.time, seq = sequence++;
  if (time < wheelBase) {
    late.push_back(Key{time, seq, slot});
  } else if (time - wheelBase < wheelSize) {
    unsigned b = unsigned(time) & (wheelSize - 1);
    uint32_t tail = bucketTail[b];
    if (tail == noSlot) {
      event.seq = seq;
      event.next = noSlot;
      bucketHead[b] = bucketTail[b] = slot;
      wheelMap[b / 64] |= uint64_t(1) << (b % 64);
      ++wheelCount;
    } else {
      wheelInsert(time, seq, slot); // after the tail (or before: far events)
    }
  } else {
    far.push(Key{time, seq, slot});
  }
}

inline void Emulator::Impl::tryWake(MEState &me, Context &c) {
  uint16_t have = c.sigs & c.waitMask;
  if (c.waitAny ? have == 0 : have != c.waitMask)
    return;
  uint64_t when = c.waitAny ? never : 0;
  uint8_t reason = StallSignal;
  for (unsigned bits = have; bits; bits &= bits - 1) {
    unsigned s = unsigned(__builtin_ctz(bits));
    if (c.waitAny ? c.sigTime[s] < when : c.sigTime[s] >= when) {
      when = c.sigTime[s];
      reason = c.sigReason[s];
    }
  }
  c.sigs &= uint16_t(~have);
  c.state = Context::Ready;
  me.readyMask |= 1u << unsigned(&c - me.ctx);
  c.readyAt = std::max(when, c.waitSince);
  c.wakeReason = reason;
  me.nextWake = std::min(me.nextWake, c.readyAt);
}

inline void Emulator::Impl::waitFor(MEState &me, Context &c, uint16_t mask,
                                    bool any, uint64_t now) {
  c.state = Context::Waiting;
  c.waitMask = mask;
  c.waitAny = any;
  c.waitSince = now;
  tryWake(me, c);
}

inline void Emulator::Impl::deliverSignal(unsigned meIndex, unsigned ctxIndex,
                                          unsigned sig, uint64_t time,
                                          uint8_t reason) {
  MEState &me = mes[meIndex];
  if (me.stopped || sig == 0 || ctxIndex >= me.numContexts)
    return;
  Context &c = me.ctx[ctxIndex];
  if (c.state == Context::Off || c.state == Context::Killed)
    return;
  c.sigs |= uint16_t(1u << sig);
  c.sigTime[sig] = time;
  c.sigReason[sig] = reason;
  if (c.state == Context::Waiting)
    tryWake(me, c);
}

} // namespace netvm::me

struct netvm_emu_host {
  netvm::me::Emulator::Impl *impl;
};

#endif // NETVM_RUNTIME_EMU_INTERNAL_H
