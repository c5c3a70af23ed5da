//===- Compile.cpp - A NetVM application as an ME image -------------------===//
//
// The driver of the back end and the packet path around the handlers. The
// layout is the one of the hand-written filter pipelines
// (examples/me/pipeline-rx-tx.inc), so compiled and hand-written programs
// are measured in the same pipeline:
//
//   ME 0, receive (8 contexts): free buffer -> msf[rx] -> work ring, in
//        packet order (two tokens pass from context to context);
//   ME 1, the NetPEs (8 contexts): take work in order, prefetch the
//        header, run the handlers to completion (a send to a NetPE on this
//        ME is a branch to its entry), put what goes to a sink on the
//        transmit ring in order, free what is dropped;
//   ME 2, transmit (1 context): msf[tx] with the packet's tag and port,
//        then free the buffer.
//
// docs/me-backend.md has the memory map and what is refused.
//
//===----------------------------------------------------------------------===//

#include "netvm/Target/ME/CodeGen.h"

#include "CodeGenInternal.h"

#include "ME/MEOps.h"
#include "NetVM/NetVMOps.h"
#include "netvm/Analysis/FlowKey.h"
#include "netvm/Conversion/NetVMToME.h"

#include "netvm/semantics.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

#include <set>
#include <sstream>

using namespace mlir;
using namespace netvm;
using namespace netvm::me;
namespace med = netvm::medialect;

namespace {

// The memory map (docs/me-backend.md, "Memory map").
constexpr unsigned freeRing = 0, txRing = 1, workRing = 2, copyRing = 3;
constexpr uint32_t freeRingBase = 0x0, txRingBase = 0x800,
                   workRingBase = 0x1000, copyRingBase = 0x1800;
constexpr unsigned entryWords = 5; // buffer, length, wire, status, tag
/// Work ring entries with the arrival time: seconds, microseconds after.
constexpr unsigned timedEntryWords = 7;
constexpr unsigned defaultBuffers = 64;
constexpr uint32_t bufferBase = 0x10000;
/// Info memory travels in the 64 bytes before each buffer, and lives in
/// local memory window 1 (words 16-31 of the context's 64) while the packet
/// is on the ME.
constexpr uint32_t infoBytes = meInfoWindowBytes;

/// Packet buffers: as large as the machine's receive copies
/// (MachineConfig::maxPacketBytes), each after its info memory.
struct Buffers {
  uint32_t bytes = 2048;
  /// With fan-out, 64 bytes after each buffer where a parked copy keeps
  /// its length and wire length (a destination before it may replace the
  /// packet with exbuf_create, which changes those registers).
  uint32_t tail = 0;
  /// Buffers of the free ring (a multiple of 16).
  unsigned count = defaultBuffers;
  uint32_t stride() const { return bytes + infoBytes + tail; }
  /// With fan-out, the copies come from a pool of their own (ring 3, the
  /// buffers after the 64 of ring 0), so that the receive ME, which takes
  /// every free buffer it can, cannot starve a copy. A buffer goes back
  /// to the ring of its pool.
  uint32_t copyPoolBase() const {
    return bufferBase + infoBytes + count * stride();
  }
};
constexpr uint32_t watchdogAddress = 0x0, eventCountAddress = 0x4,
                   eventLogAddress = 0x100, eventCapacity = 16384;
/// Per-NetPE counters [runs, sent, dropped]: below the event log for the
/// first 20 NetPEs (an immediate address, one instruction an increment),
/// after it for applications with more.
constexpr uint32_t peCountersLow = 0x8, peCountersHigh = 0x40100;
constexpr unsigned peCountersLowMax = 20;
/// Set once the init handlers have run: a host runs the image once per
/// batch with this word carried forward, and .init must run once in all.
constexpr uint32_t initDoneAddress = 0xfc;
/// The same for stages 2, 3, ... of a pipeline (a word each).
constexpr uint32_t stageInitDoneBase = 0x7ff00;

/// Data memories, initialised data and shared memory, in SRAM from here.
constexpr uint32_t sramDataBase = 0x80000;
constexpr unsigned handlerME = 1, rxME = 0, txME = 2;

std::string hex(uint32_t v) {
  std::ostringstream os;
  os << "0x" << std::hex << v;
  return os.str();
}

struct LineBuilder {
  CodeSection &section;
  void operator()(const std::string &text, const std::string &comment = "") {
    Line line = asmLine(text, comment);
    line.labels = std::move(section.pendingLabels);
    section.pendingLabels.clear();
    section.lines.push_back(std::move(line));
  }
  void label(const std::string &name) { section.pendingLabels.push_back(name); }
  /// A branch whose next `slots` instructions fill its penalty (defer):
  /// they run whether it is taken or not, and may not be branches,
  /// ctx_arb or commands with ctx_swap.
  void deferred(const std::string &text, unsigned slots,
                const std::string &comment = "") {
    (*this)(text, comment);
    section.lines.back().instr.defer = uint8_t(slots);
  }
  /// Puts the entry in $0.. on a ring in packet order: wait for the put
  /// token (s2), issue the put, pass the token to the next context, then
  /// wait for the put (signal `done`).
  void orderedPut(unsigned ring, const std::string &done,
                  const std::string &comment = "",
                  unsigned words = entryWords) {
    orderedPut(std::to_string(ring), done, comment, words);
  }
  /// The same with the ring's number in a register.
  void orderedPut(const std::string &ring, const std::string &done,
                  const std::string &comment = "",
                  unsigned words = entryWords) {
    (*this)("ctx_arb[s2]", comment);
    (*this)("scratch[put, $0, " + ring + ", 0, " + std::to_string(words) +
            "], sig_done[" + done + "]");
    (*this)("local_csr_wr[same_me_signal, " + hex(0x80 | (2 << 3)) + "]");
    (*this)("ctx_arb[" + done + "]");
  }
};

/// Adds 1 to the SRAM word at `address` without waiting (no signal: the
/// emulator completes the command before the run ends).
void countUp(LineBuilder &a, uint32_t address, const std::string &what) {
  if (address <= 0xffff) {
    a("sram[incr, --, " + hex(address) + ", 0]", what);
    return;
  }
  a("immed[a15, " + hex(address) + "]", what);
  a("sram[incr, --, a15, 0]");
}

/// Puts the buffer a0 (also in $0) back on its free ring (b15 scratch).
void freeBuffer(LineBuilder &a, const Buffers &pool, unsigned copies,
                const std::string &label, const std::string &sig,
                const std::string &then) {
  if (!copies) {
    a("scratch[put, $0, " + std::to_string(freeRing) + ", 0, 1], ctx_swap[" +
      sig + "]");
    if (!then.empty())
      a("br[@" + then + "]");
    return;
  }
  a("immed[b15, " + hex(pool.copyPoolBase()) + "]");
  a("alu[--, a0, -, b15]");
  a("bcc[@" + label + "_copy]", "a buffer of the copy pool");
  a("scratch[put, $0, " + std::to_string(freeRing) + ", 0, 1], ctx_swap[" +
    sig + "]");
  a("br[@" + then + "]");
  a.label(label + "_copy");
  a("scratch[put, $0, " + std::to_string(copyRing) + ", 0, 1], ctx_swap[" +
    sig + "]");
  if (!then.empty())
    a("br[@" + then + "]");
}

/// ME 2: transmit in ring order with the tag, then free the buffer. A
/// pipeline's transmit ME (`pipeME`, not 0) reads the last stage's ring,
/// whose entries are all final (Layout::finalEntry): some only free their
/// buffer; one end marker ends it.
void transmitStage(Program &program, const Buffers &pool, unsigned copies,
                   unsigned pipeME = 0, unsigned ring = txRing,
                   unsigned words = entryWords) {
  CodeSection section;
  section.meMask = 1u << (pipeME ? pipeME : txME);
  section.ctxEnable = 1;
  section.title = "ME " + std::to_string(pipeME ? pipeME : txME) + ": transmit";
  LineBuilder a{section};
  a("immed[b5, 0]", "end markers seen");
  a.label("tx_loop");
  a("scratch[get, $0, " + std::to_string(ring) + ", 0, " +
    std::to_string(words) + "], ctx_swap[s1]");
  a("alu[a0, --, b, $0]");
  a("beq[@tx_loop]", "nothing to send yet");
  a("alu[--, a0, +, 1]");
  a("beq[@tx_marker]");
  if (pipeME)
    a("br_bset[$3, 9, @tx_free]", "a buffer to free only");
  a("alu[$0, --, b, $1]", "length");
  a("alu[$1, --, b, $2]", "wire length");
  if (pipeME)
    a("alu[$2, $3, and, 0xff]", "transmit port: the sink");
  else
    a("alu[$2, --, b, $3]", "transmit port: the sink");
  a("alu[$3, --, b, $4]", "tag");
  a("msf[tx, $0, a0, 0, 4], ctx_swap[s2]");
  a.label("tx_free");
  a("alu[$0, --, b, a0]");
  if (copies) {
    freeBuffer(a, pool, copies, "tx_free", "s3", "tx_loop");
  } else {
    a("scratch[put, $0, " + std::to_string(freeRing) + ", 0, 1], sig_done[s3]");
    a("ctx_arb[s3]");
    a("br[@tx_loop]");
  }
  a.label("tx_marker");
  if (!pipeME) {
    a("alu[b5, b5, +, 1]");
    a("alu[--, b5, -, 8]");
    a("bne[@tx_loop]");
  }
  a("ctx_arb[kill]");
  program.code.push_back(std::move(section));
}

/// A layout other than the default three MEs (docs/me-backend.md,
/// "Placement"): receive on MEs 0 .. rx - 1, the NetPEs on the `replicas`
/// MEs after them (the same code; the receive side deals packets among
/// them), transmit on the ME after those.
///
/// Rings: 0 free buffers, 1 order (which replica has packet j, in packet
/// order), 3 the copy pool, 4 + k the work of replica k, 10 + k what
/// replica k transmits. A transmit entry is [buffer, length, wire, sink |
/// lastEntry | freeOnly, tag], or [endOfPacket, 0, 0, 0, 0] at the end of
/// a packet with fan-out (whose outputs do not know they are the last).
struct Layout {
  bool multi = false;
  unsigned rx = 1, replicas = 1;
  /// Replicas in a fixed turn (CodeGenOptions::dynamicReplicas off): every
  /// receive ME deals its packets to replicas 0 .. K-1 in turn and the
  /// transmit ME follows without the replica word or the order ring.
  bool fixedTurn = false;
  /// Replicas dealt by flow key (docs/me-backend.md, "Dealing by flow
  /// key"): the receive side runs the key function of the stage's
  /// flow-keyed NetPE on each packet and deals it to replica bucket mod K,
  /// putting the replica (1 + k) on the order ring in packet order; the
  /// transmit ME follows the order ring packet by packet. `keyBuckets`:
  /// the buckets of the key (2^b or n), for the division by K.
  bool keyed = false;
  uint32_t keyBuckets = 0;
  /// A pipeline of several stages (docs/me-backend.md, "Stages"): stage s
  /// on stageMEs[s] MEs from stageFirst[s], taking its work from ring
  /// stageRing0 + s; the last one's outputs go to stagedTxRing. Every
  /// stage forwards every packet in order, so the transmit ME reads one
  /// ordered stream.
  bool staged = false;
  std::vector<unsigned> stageMEs, stageFirst;
  static constexpr unsigned stageRing0 = 4, stagedTxRing = 2;
  /// Scratch words of a pipeline: the next packet number (receive, handed
  /// from receive ME to receive ME like the turn), and per stage with
  /// replicas the number (<< 16) of the next packet it may put on the ring
  /// after it.
  static constexpr uint32_t sequenceWord = 0x600, nextOut0 = 0x610;
  /// Status bits of a pipeline's entries: a transmit entry (the packet has
  /// left its NetPEs: to a sink, or freeOnly) that the later stages pass
  /// on; the packet's number in bits 31:16; otherwise bits 15:8 name the
  /// NetPE input it goes to (an index into the forward table).
  static constexpr uint32_t finalEntry = 0x400;
  unsigned firstReplica() const { return rx; }
  unsigned txME() const { return rx + replicas; }
  /// The rings of the layout: free, order, work and transmit rings of
  /// each replica, the copy pool's; placed by placeRings.
  std::vector<RingConfig> rings;
  /// Places `sizes` (ring number -> words) from 0x800 in scratch, the
  /// largest first (a ring's base is a multiple of its size); returns the
  /// end of the last.
  uint32_t placeRings(const std::map<unsigned, uint32_t> &sizes) {
    rings = {RingConfig{0, 0x0, 128}, RingConfig{orderRing, 0x200, 128}};
    std::vector<std::pair<uint32_t, unsigned>> bySize;
    for (auto [ring, words] : sizes)
      bySize.push_back({words, ring});
    llvm::sort(bySize, [](auto x, auto y) {
      return x.first != y.first ? x.first > y.first : x.second < y.second;
    });
    uint32_t at = 0x800;
    for (auto [words, ring] : bySize) {
      at = (at + words * 4 - 1) / (words * 4) * (words * 4);
      rings.push_back(RingConfig{uint8_t(ring), at, words});
      at += words * 4;
    }
    return at;
  }
  static constexpr unsigned orderRing = 1, workRing0 = 4, txRing0 = 10;
  /// The dealer's words: the number of replicas that get new packets
  /// (the replica word, written by a host; 0 or more than the stage has:
  /// all), the end of input dealt. (0x600-0x607 held the turn when it
  /// travelled from receive ME to receive ME; each keeps its own now.)
  static constexpr uint32_t activeWord = 0x608, endWord = 0x60c;
  /// Status bits of a transmit entry: the packet's last; only free the
  /// buffer (dropped: every buffer of the free ring goes back through the
  /// transmit ME, so that at most that many packets are between receive
  /// and transmit, and no ring overflows).
  static constexpr uint32_t endOfPacket = 0xfffffffe, lastEntry = 0x100,
                            freeOnly = 0x200;
};

/// Hands token `sig` to the next receive context: the next context of
/// this ME, or from context 7 to context 0 of the next receive ME (a6:
/// its interthread_signal value without the signal).
void passRxToken(LineBuilder &a, const Layout &l, unsigned sig,
                 const std::string &label) {
  std::string next =
      "local_csr_wr[same_me_signal, " + hex(0x80 | (sig << 3)) + "]";
  if (l.rx == 1) {
    a(next);
    return;
  }
  a("br=ctx[7, @" + label + "]");
  a(next);
  a("br[@" + label + "_done]");
  a.label(label);
  a("alu[a15, a6, or, " + hex(sig << 3) + "]", "to the next receive ME");
  a("local_csr_wr[interthread_signal, a15]");
  a.label(label + "_done");
}

/// a6: the interthread_signal value of context 0 of the next receive ME
/// (from a5, this context's ME << 3 | context), with several.
void nextReceiveME(LineBuilder &a, const Layout &l) {
  if (l.rx == 1)
    return;
  a("alu_shf[a6, --, b, a5, >>3]", "the next receive ME");
  a("alu[a6, a6, +, 1]");
  a("alu[--, a6, -, " + std::to_string(l.rx) + "]");
  a("bne[@rx_next_me]");
  a("immed[a6, 0]");
  a.label("rx_next_me");
  a("alu_shf[a6, --, b, a6, <<7]");
}

/// To rx_end_pass unless this is the first receive context to see the end
/// of the input (the end word, test_and_set).
void firstAtEnd(LineBuilder &a) {
  a("immed[$8, 1]");
  a("scratch[test_and_set, $8, " + hex(Layout::endWord) +
        ", 0, 1], ctx_swap[s3]",
    "the first to see the end?");
  a("alu[--, --, b, $8]");
  a("bne[@rx_end_pass]");
}

/// The end of the input on the receive MEs of several replicas (rx_end):
/// the first context to see it puts one end marker ([0xffffffff, 0, 0, 1,
/// 0...], `words` words) on every work ring and one on the order ring;
/// each context that takes one puts it back.
void endOfInput(LineBuilder &a, const Layout &l, unsigned words) {
  a.label("rx_end");
  a("ctx_arb[s6]", "the last put is in");
  a("ctx_arb[s2]");
  firstAtEnd(a);
  a("immed[$0, 0xffffffff]", "end marker");
  a("immed[$1, 0]");
  a("immed[$2, 0]");
  a("immed[$3, 1]");
  for (unsigned w = 4; w < words; ++w)
    a("immed[$" + std::to_string(w) + ", 0]");
  for (unsigned k = 0; k < l.replicas; ++k)
    a("scratch[put, $0, " + std::to_string(Layout::workRing0 + k) + ", 0, " +
      std::to_string(words) + "], ctx_swap[s3]");
  a("immed[$9, 0xffffffff]");
  a("scratch[put, $9, " + std::to_string(Layout::orderRing) +
    ", 0, 1], ctx_swap[s3]");
  a.label("rx_end_pass");
  passRxToken(a, l, 2, "rx_pass3");
  a("ctx_arb[kill]");
}

/// A round of the dealing passes ceil(16 / n) times over replicas 0 .. n - 1
/// (at least 16 packets, so that the transmit ME reads the order ring at
/// most once in 16 packets), but once with one replica, so that a
/// controller that adds replicas to a parked stage is heard at the next
/// packet (bench/alloc.py: p99 2.6x the peak allocation's with rounds of
/// 16 there, 1.98x with rounds of 1). passesTable writes the passes after the
/// first for n = 1..8 into local memory at byte `at` + 4n (window 1);
/// roundPasses copies the one of n (B-bank register `n`, temporary A-bank
/// `tmp`) into word 3 of window 0.
constexpr unsigned roundPackets = 16;
void passesTable(LineBuilder &a, unsigned at) {
  a("local_csr_wr[active_lm_addr_1, " + std::to_string(at) + "]",
    "the passes of a round after the first, by its replicas");
  for (unsigned n = 1; n <= 8; ++n)
    a("alu[*l$index1[" + std::to_string(n) + "], --, b, " +
      std::to_string(n == 1 ? 0 : (roundPackets + n - 1) / n - 1) + "]");
}
void roundPasses(LineBuilder &a, unsigned at, const std::string &n,
                 const std::string &tmp) {
  a("alu_shf[" + tmp + ", " + std::to_string(at) + ", +, " + n + ", <<2]",
    "the passes over the replicas: ceil(16 / n)");
  a("local_csr_wr[active_lm_addr_1, " + tmp + "]");
  a("alu[" + tmp + ", --, b, *l$index1[0]]");
  a("alu[*l$index0[3], --, b, " + tmp + "]", "the passes left");
}

/// A free buffer into a0, a packet received into it under the receive
/// token (to rx_end at the end of the input), and the work entry's buffer,
/// length and wire length in $0-$2; the descriptor's status, number and
/// arrival time stay in $2.. (read). With `putPending`, the context's last
/// put of work may still be under way (s6): it must have taken its write
/// registers before they are written again.
void receivePacket(LineBuilder &a, const Layout &l, bool timestamps,
                   bool putPending = false) {
  a.label("rx_loop");
  a("scratch[get, $0, " + std::to_string(freeRing) + ", 0, 1], ctx_swap[s3]");
  a("alu[a0, --, b, $0]");
  a("beq[@rx_loop]", "no free buffer yet");
  a("ctx_arb[s1]", "receive token");
  a("msf[rx, $0, a0, 0, " + std::to_string(timestamps ? 6 : 4) +
    "], sig_done[s3]");
  passRxToken(a, l, 1, "rx_pass1");
  a("ctx_arb[s3]");
  a("br_bset[$2, 0, @rx_end]", "end of input");
  if (putPending) {
    a("br_!signal[s6, @rx_put_wait]", "the last put is in");
    a.label("rx_put_done");
  }
  a("alu[$0, --, b, a0]");
  a("alu[$1, --, b, $0]", "length");
  a("alu[$2, --, b, $1]", "wire length");
}

/// Puts the buffers on the free ring (and the copy pool's, `copies`
/// buffers), from a1 on.
void fillFreeRing(LineBuilder &a, const Buffers &pool, unsigned copies) {
  a("immed[b1, " + std::to_string(pool.stride()) + "]",
    "info memory, then the packet");
  a("immed[a2, " + std::to_string(pool.count / 16) + "]");
  a.label("fill");
  a("local_csr_wr[t_index, 0]");
  a("immed[b2, 16]");
  a.label("fill_word");
  a("alu[*$index++, --, b, a1]");
  a("alu[a1, a1, +, b1]");
  a("alu[b2, b2, -, 1]");
  a("bne[@fill_word]");
  a("scratch[put, $0, " + std::to_string(freeRing) + ", 0, 16], ctx_swap[s3]");
  a("alu[a2, a2, -, 1]");
  a("bne[@fill]");
  if (copies) {
    a("immed[a2, " + std::to_string(copies) + "]", "the pool of copies");
    a.label("fill_copies");
    a("alu[$0, --, b, a1]");
    a("scratch[put, $0, " + std::to_string(copyRing) + ", 0, 1], ctx_swap[s3]");
    a("alu[a1, a1, +, b1]");
    a("alu[a2, a2, -, 1]");
    a("bne[@fill_copies]");
  }
}

/// The receive MEs of a pipeline (Layout::staged): packets onto the first
/// stage's ring in packet order, each numbered (status bits 31:16) under
/// the put token: local memory word 0 of the ME holding the token keeps
/// the next number (<< 16), handed on through scratch with the token
/// across receive MEs. The first context to see the end puts one marker,
/// numbered after the last packet.
void stagedReceiveStage(Program &program, const Layout &l, const Buffers &pool,
                        bool timestamps) {
  CodeSection section;
  section.meMask = ((1u << l.rx) - 1) << rxME;
  section.title = l.rx == 1 ? "ME 0: receive"
                            : "MEs 0-" + std::to_string(l.rx - 1) + ": receive";
  LineBuilder a{section};
  std::string ring = std::to_string(Layout::stageRing0);
  std::string seqWord = hex(Layout::sequenceWord);
  unsigned words = timestamps ? timedEntryWords : entryWords;
  a("local_csr_rd[a5, active_ctx_sts]", "(ME << 3) | context");
  nextReceiveME(a, l);
  a("local_csr_wr[active_lm_addr_0, 0]",
    "every context: the next packet number in word 0");
  a("immed[b4, 0x10000]", "one packet number");
  a("alu[--, --, b, a5]");
  a("bne[@rx_loop]", "ME 0 context 0 fills the free ring");
  a("immed[a1, " + hex(bufferBase + infoBytes) + "]");
  fillFreeRing(a, pool, 0);
  a("alu[*l$index0[0], --, b, 0]");
  a("local_csr_wr[same_me_signal, " + hex(1 << 3) + "]");
  a("local_csr_wr[same_me_signal, " + hex(2 << 3) + "]");
  // The number from the previous receive ME (context 0), to it (context 7).
  auto numberIn = [&](const std::string &label) {
    if (l.rx == 1)
      return;
    a("br!=ctx[0, @" + label + "]");
    a("scratch[read, $8, " + seqWord + ", 0, 1], ctx_swap[s4]",
      "the packet number, from the previous receive ME");
    a("alu[*l$index0[0], --, b, $8]");
    a.label(label);
  };
  auto numberOut = [&](const std::string &label) {
    if (l.rx == 1)
      return;
    a("br!=ctx[7, @" + label + "]");
    a("alu[$8, --, b, *l$index0[0]]", "the number, for the next receive ME");
    a("scratch[write, $8, " + seqWord + ", 0, 1], ctx_swap[s4]");
    a.label(label);
  };
  receivePacket(a, l, timestamps);
  a("alu[$4, --, b, $3]", "the packet's number in the input: its tag");
  if (timestamps) {
    a("alu[$5, --, b, $4]", "arrival time: seconds");
    a("alu[$6, --, b, $5]", "microseconds");
  }
  a("ctx_arb[s2]", "put token");
  numberIn("rx_have_number");
  a("alu[a4, --, b, *l$index0[0]]", "the packet's number << 16");
  a("alu[$3, a4, or, $2]", "status, with the number");
  a("alu[*l$index0[0], a4, +, b4]");
  a("scratch[put, $0, " + ring + ", 0, " + std::to_string(words) +
        "], sig_done[s3]",
    "the first stage's work");
  numberOut("rx_kept_number");
  passRxToken(a, l, 2, "rx_pass2");
  a("ctx_arb[s3]");
  a("br[@rx_loop]");
  a.label("rx_end");
  a("ctx_arb[s2]");
  numberIn("rx_end_number");
  firstAtEnd(a);
  a("immed[$0, 0xffffffff]", "end marker, numbered after the packets");
  a("immed[$1, 0]");
  a("immed[$2, 0]");
  a("alu[a4, --, b, *l$index0[0]]");
  a("alu[$3, a4, or, 1]");
  for (unsigned w = 4; w < words; ++w)
    a("immed[$" + std::to_string(w) + ", 0]");
  a("scratch[put, $0, " + ring + ", 0, " + std::to_string(words) +
    "], ctx_swap[s3]");
  a.label("rx_end_pass");
  numberOut("rx_end_kept");
  passRxToken(a, l, 2, "rx_pass3");
  a("ctx_arb[kill]");
  program.code.push_back(std::move(section));
}

/// The receive MEs (ME 0, or MEs 0 .. l.rx - 1): receive into free
/// buffers, hand [buffer, length, wire, status, tag] to the work ring in
/// packet order, followed by the arrival time's seconds and microseconds
/// when `timestamps`. `copies`: the buffers of the copy pool (0 without
/// fan-out). In a multi-ME layout each packet is dealt to a replica: the
/// next one in turn among the first `active` (the stage's replica word),
/// its number put on the order ring; two tokens pass from context to
/// context, across the receive MEs.
void receiveStage(Program &program, const Layout &l, const Buffers &pool,
                  unsigned copies, bool timestamps) {
  // Local memory (window 0 at 0): the turn (the next packet's work ring),
  // the round's last replica's work ring, -, the passes left in the
  // round; the passes table at byte 64.
  constexpr unsigned rxPassesTable = 64;
  CodeSection section;
  section.meMask = ((1u << l.rx) - 1) << rxME;
  section.title = l.rx == 1 ? "ME 0: receive"
                            : "MEs 0-" + std::to_string(l.rx - 1) + ": receive";
  LineBuilder a{section};
  std::string lastReplica = std::to_string(l.replicas - 1);
  if (!l.multi)
    a("br!=ctx[0, @rx_loop]");
  else
    a("local_csr_rd[a5, active_ctx_sts]", "(ME << 3) | context");
  if (l.multi)
    nextReceiveME(a, l);
  if (l.multi) {
    // Each receive ME deals its own packets from its own turn and round.
    a("alu[a15, a5, and, 7]", "no put of work to wait for yet (s6)");
    a("alu[a15, a15, or, " + hex(6 << 3) + "]");
    a("local_csr_wr[same_me_signal, a15]");
    if (l.fixedTurn) {
      // Packet j goes to replica j mod K. Context c of receive ME m takes
      // packets j = 8m + c (a5), then every 8R: a4 is its next packet's
      // work ring.
      a("alu[a4, --, b, a5]", "a fixed turn: this context's first packet");
      a.label("rx_first_ring");
      a("alu[--, a4, -, " + std::to_string(l.replicas) + "]");
      a("bcs[@rx_first_ring_done]");
      a("alu[a4, a4, -, " + std::to_string(l.replicas) + "]");
      a("br[@rx_first_ring]");
      a.label("rx_first_ring_done");
      a("alu[a4, a4, +, " + std::to_string(Layout::workRing0) + "]",
        "its replica's work ring");
      a("br!=ctx[0, @rx_loop]");
    } else {
      a("local_csr_wr[active_lm_addr_0, 0]",
        "every context: the turn in word 0, the round's last in word 1");
      a("br!=ctx[0, @rx_loop]");
      a("immed[a4, 0xffffffff]", "past the round: read the replica word");
      a("alu[*l$index0[0], --, b, a4]");
      a("alu[*l$index0[1], --, b, 0]");
      a("alu[*l$index0[3], --, b, 0]");
      passesTable(a, rxPassesTable);
    }
    a("alu[--, --, b, a5]");
    a("bne[@rx_loop]", "ME 0 context 0 fills the free ring");
    a("immed[a1, " + hex(bufferBase + infoBytes) + "]");
  } else {
    a("immed[a1, " + hex(bufferBase + infoBytes) + "]",
      "context 0 fills the free ring");
  }
  fillFreeRing(a, pool, copies);
  a("local_csr_wr[same_me_signal, " + hex(1 << 3) + "]");
  a("local_csr_wr[same_me_signal, " + hex(2 << 3) + "]");
  receivePacket(a, l, timestamps, l.multi);
  a("alu[$3, --, b, $2]", "status");
  a("alu[$4, --, b, $3]", "the packet's number: its tag");
  unsigned words = timestamps ? timedEntryWords : entryWords;
  if (timestamps) {
    a("alu[$5, --, b, $4]", "arrival time: seconds");
    a("alu[$6, --, b, $5]", "microseconds");
  }
  // The end marker's work entry in $0..
  auto endMarker = [&] {
    a("immed[$0, 0xffffffff]", "end marker");
    a("immed[$1, 0]");
    a("immed[$2, 0]");
    a("immed[$3, 1]");
    a("immed[$4, 0]");
    if (timestamps) {
      a("immed[$5, 0]");
      a("immed[$6, 0]");
    }
  };
  if (!l.multi) {
    a.orderedPut(workRing, "s3", "put token", words);
    a("br[@rx_loop]");
    a.label("rx_end");
    endMarker();
    a.orderedPut(workRing, "s3", "", words);
    a("ctx_arb[kill]");
    program.code.push_back(std::move(section));
    return;
  }
  // Packets are dealt in rounds: replicas 0 .. n - 1 in turn, where n,
  // read from the replica word at the start of each round, goes on the
  // order ring, so that the transmit ME follows the same turns. The turn
  // and n - 1 of the round are local memory words 0 and 1 of the receive
  // ME: with several receive MEs each deals its blocks of 8 packets from
  // its own turn and rounds (nothing travels with the put token), and the
  // transmit ME keeps a copy of each receive ME's turn and round.
  if (l.fixedTurn) {
    a("ctx_arb[s2]", "put token");
    // The next packet's receive need not wait for the put (s6, tested
    // before the write registers are written again).
    a("scratch[put, $0, a4, 0, " + std::to_string(words) + "], sig_done[s6]",
      "the replica's work");
    passRxToken(a, l, 2, "rx_pass2");
    unsigned step = 8 * l.rx % l.replicas;
    if (step) {
      a("alu[a4, a4, +, " + std::to_string(step) + "]",
        "the next packet's: 8R later");
      a("alu[--, a4, -, " + std::to_string(Layout::workRing0 + l.replicas) +
        "]");
      a("bcs[@rx_loop]");
      a("alu[a4, a4, -, " + std::to_string(l.replicas) + "]");
    }
    a("br[@rx_loop]");
  } else {
    a("ctx_arb[s2]", "put token");
    a("alu[a4, --, b, *l$index0[0]]", "this packet's replica's work ring");
    a("alu[--, *l$index0[1], -, a4]");
    a("bcs[@rx_round]", "the round is over");
    a.label("rx_dealt");
    a("alu[*l$index0[0], a4, +, 1]");
    // The next packet's receive need not wait for the put (s6, tested
    // before the write registers are written again).
    a("scratch[put, $0, a4, 0, " + std::to_string(words) + "], sig_done[s6]",
      "the replica's work");
    passRxToken(a, l, 2, "rx_pass2");
    a("br[@rx_loop]");
  }
  a.label("rx_put_wait");
  a("ctx_arb[s6]");
  a("br[@rx_put_done]");
  if (!l.fixedTurn) {
    a.label("rx_round");
    a("alu[b4, *l$index0[3], -, 1]", "another pass of the round?");
    a("bcs[@rx_new_round]");
    a("alu[*l$index0[3], --, b, b4]");
    a("immed[a4, " + std::to_string(Layout::workRing0) + "]");
    a("br[@rx_dealt]");
    a.label("rx_new_round");
    a("scratch[read, $10, " + hex(Layout::activeWord) + ", 0, 1], ctx_swap[s4]",
      "a new round: the replicas that get new packets");
    a("alu[b4, $10, -, 1]");
    a("alu[--, b4, -, " + lastReplica + "]");
    a("bls[@rx_active]");
    a("immed[b4, " + lastReplica + "]", "0 or too many: all");
    a.label("rx_active");
    a("alu[*l$index0[1], b4, +, " + std::to_string(Layout::workRing0) + "]",
      "the round's last work ring");
    a("alu[b2, b4, +, 1]");
    roundPasses(a, rxPassesTable, "b2", "a1");
    a("alu[$11, b4, +, 1]");
    a("scratch[put, $11, " + std::to_string(Layout::orderRing) +
          ", 0, 1], ctx_swap[s5]",
      "the round's replicas, for the transmit ME");
    a("immed[a4, " + std::to_string(Layout::workRing0) + "]");
    a("br[@rx_dealt]");
  }
  endOfInput(a, l, words);
  program.code.push_back(std::move(section));
}

/// The receive MEs of a layout dealt by flow key (Layout::keyed): as
/// receiveStage, but each packet runs the key function first (`keyCode`
/// appends it: the flow-keyed NetPE's key slice, its packet loads guarded,
/// writing the bucket into info word 0 and leaving at rx_keyed, or at
/// rx_key_fault), then goes to replica bucket mod K (replica 0 when the
/// key would fault: the NetPE faults before any state access there), and
/// under the put token its work goes on the replica's work ring and 1 + k
/// on the order ring, which the transmit ME follows.
/// Registers: a0 buffer, b0 length, a1 wire length, b2 tag (the handler's
/// arguments), b3 status, b4 and a3 the arrival time, a4 the ring, a5/a6
/// the context and the next receive ME; the key's registers come from the
/// rest (keyAllocation).
LogicalResult
keyedReceiveStage(Program &program, const Layout &l, const Buffers &pool,
                  bool timestamps, unsigned headerBytes,
                  const std::function<LogicalResult(CodeSection &)> &keyCode) {
  CodeSection section;
  section.meMask = ((1u << l.rx) - 1) << rxME;
  section.title = l.rx == 1 ? "ME 0: receive, dealing by flow key"
                            : "MEs 0-" + std::to_string(l.rx - 1) +
                                  ": receive, dealing by flow key";
  LineBuilder a{section};
  unsigned words = timestamps ? timedEntryWords : entryWords;
  const unsigned K = l.replicas;
  a("local_csr_rd[a5, active_ctx_sts]", "(ME << 3) | context");
  nextReceiveME(a, l);
  a("alu[a15, a5, and, 7]", "no put of work to wait for yet (s6)");
  a("alu[a15, a15, or, " + hex(6 << 3) + "]");
  a("local_csr_wr[same_me_signal, a15]");
  // Local memory as on the NetPEs' MEs: 64 words a context, spill slots
  // in window 0, the key's info word (window 1) at word 16.
  a("alu[a15, a5, and, 7]");
  a("alu_shf[a15, --, b, a15, <<8]");
  a("local_csr_wr[active_lm_addr_0, a15]", "spill slots");
  a("alu[a15, a15, +, 64]");
  a("local_csr_wr[active_lm_addr_1, a15]", "the key's info memory");
  a("br!=ctx[0, @rx_loop]");
  a("alu[--, --, b, a5]");
  a("bne[@rx_loop]", "ME 0 context 0 fills the free ring");
  a("immed[a1, " + hex(bufferBase + infoBytes) + "]");
  fillFreeRing(a, pool, 0);
  a("local_csr_wr[same_me_signal, " + hex(1 << 3) + "]");
  a("local_csr_wr[same_me_signal, " + hex(2 << 3) + "]");
  receivePacket(a, l, timestamps, /*putPending=*/true);
  // The descriptor into registers: the key's code may use any transfer
  // register.
  a("alu[b0, --, b, $0]", "length");
  a("alu[a1, --, b, $1]", "wire length");
  a("alu[b3, --, b, $2]", "status");
  a("alu[b2, --, b, $3]", "the packet's number: its tag");
  if (timestamps) {
    a("alu[b4, --, b, $4]", "arrival time: seconds");
    a("alu[a3, --, b, $5]", "microseconds");
  }
  if (headerBytes)
    a("dram[read, $$0, a0, 0, " + std::to_string(headerBytes / 8) +
          "], ctx_swap[s4]",
      "the key's header: bytes 0-" + std::to_string(headerBytes - 1));
  if (failed(keyCode(section)))
    return failure();
  a.label("rx_key_fault");
  a("immed[a4, 0]", "a packet the NetPE faults on: any replica");
  a("br[@rx_keyed_ring]");
  a.label("rx_keyed");
  a("alu[a4, --, b, *l$index1[0]]", "the bucket");
  a("alu[--, a4, +, 1]");
  a("beq[@rx_key_fault]", "a packet load of the key would fault");
  if ((K & (K - 1)) == 0) {
    a("alu[a4, a4, and, " + std::to_string(K - 1) + "]", "bucket mod K");
  } else {
    // bucket mod K by shifted subtraction, from the largest K << s below
    // the buckets (the bucket is less than keyBuckets).
    unsigned top = 0;
    while (top < 31 && (uint64_t(K) << (top + 1)) < l.keyBuckets)
      ++top;
    for (int s = top; s >= 0; --s) {
      std::string label = "rx_mod" + std::to_string(s);
      a("immed[b15, " + hex(K << s) + "]", s == int(top) ? "bucket mod K" : "");
      a("alu[a15, a4, -, b15]");
      a("bcs[@" + label + "]");
      a("alu[a4, --, b, a15]");
      a.label(label);
    }
  }
  a.label("rx_keyed_ring");
  a("alu[$0, --, b, a0]");
  a("alu[$1, --, b, b0]", "length");
  a("alu[$2, --, b, a1]", "wire length");
  a("alu[$3, --, b, b3]", "status");
  a("alu[$4, --, b, b2]", "tag");
  if (timestamps) {
    a("alu[$5, --, b, b4]");
    a("alu[$6, --, b, a3]");
  }
  a("alu[$9, a4, +, 1]", "1 + the replica, for the transmit ME");
  a("alu[a4, a4, +, " + std::to_string(Layout::workRing0) + "]",
    "its work ring");
  a("ctx_arb[s2]", "put token");
  a("scratch[put, $0, a4, 0, " + std::to_string(words) + "], sig_done[s6]",
    "the replica's work");
  a("scratch[put, $9, " + std::to_string(Layout::orderRing) +
        ", 0, 1], sig_done[s5]",
    "the packet's replica, in packet order");
  passRxToken(a, l, 2, "rx_pass2");
  a("ctx_arb[s5]");
  a("br[@rx_loop]");
  a.label("rx_put_wait");
  a("ctx_arb[s6]");
  a("br[@rx_put_done]");
  endOfInput(a, l, words);
  program.code.push_back(std::move(section));
  return success();
}

/// The transmit ME of a multi-ME layout (8 contexts): packets in the
/// receive side's turns, each from its replica's transmit ring. A context
/// takes the next packet's turn under the turn token (s1) and a ticket of
/// its ring, passes the turn token on, and gets the packet's entries when
/// its ticket is served, so the rings are read in parallel and each in
/// order. Local memory: ring k's record at byte 16k (window 1): its next
/// ticket, the ticket served, its ring number and the waiter (the
/// same_me_signal value that wakes the context waiting for the next
/// ticket, 0: none); the turn (16 x the replica: the byte address of its
/// record), 16 x the round's last replica and the passes left in the round
/// at byte rxTurns (window 0; with several receive MEs one such copy per
/// receive ME at rxTurns + 16m, whose third word points at the next ME's).
/// A context whose ticket is not served yet sleeps on s6 (the first such
/// context of a ring; any other spins) and the context that serves its
/// ticket wakes it. The transmit token (s2), held from a packet's first
/// msf[tx] to its last, keeps the packets in input order.
void orderedTransmitStage(Program &program, const Layout &l,
                          const Buffers &pool, unsigned copies) {
  CodeSection section;
  section.meMask = 1u << l.txME();
  section.title = "ME " + std::to_string(l.txME()) + ": transmit";
  LineBuilder a{section};
  std::string passGet =
                  "local_csr_wr[same_me_signal, " + hex(0x80 | (1 << 3)) + "]",
              passTx =
                  "local_csr_wr[same_me_signal, " + hex(0x80 | (2 << 3)) + "]";
  // With a fixed turn a record is 32 bytes: word 4 is the next replica's
  // record (the next turn).
  constexpr unsigned rxTurns = 128, records = 256, noWaiter = 15 << 3;
  const unsigned record = l.fixedTurn ? 32 : 16;
  // With a fixed turn every receive ME deals by the packet's number, so
  // one turn serves them all; otherwise the transmit ME keeps a copy of
  // each receive ME's.
  const unsigned dealers = l.fixedTurn || l.keyed ? 1 : l.rx;
  // With a fixed turn and no copies, as pipeline-multirx-tx.inc: packet j
  // is on ring j mod K, so context c knows its packets' rings (b3: the
  // next one's index) and each ring has a token, signal 7 + k, that the
  // context of packet j hands to the context of packet j + K ((c + K) & 7,
  // a6) once it has taken its entry: no turn token and no tickets.
  const bool ringTokens = l.fixedTurn && !copies && l.replicas <= 6;
  const unsigned K = l.replicas;
  a("immed[b7, 0]", "the transmit token is not held");
  if (dealers > 1)
    a("immed[a6, " + std::to_string(rxTurns) + "]",
      "the first packet's dealer: receive ME 0");
  a("local_csr_rd[a7, active_ctx_sts]");
  a("alu[a7, a7, and, 7]");
  if (!copies) {
    // Context c's own free-put signal (s5): no free to wait for yet.
    a("alu[a5, a7, or, " + hex(5 << 3) + "]");
    a("local_csr_wr[same_me_signal, a5]");
  }
  if (ringTokens) {
    a("alu[b3, --, b, a7]", "context c's first packet, c: its ring");
    a.label("tx_first_ring");
    a("alu[--, b3, -, " + std::to_string(K) + "]");
    a("bcs[@tx_first_ring_done]");
    a("alu[b3, b3, -, " + std::to_string(K) + "]");
    a("br[@tx_first_ring]");
    a.label("tx_first_ring_done");
    a("alu[a6, a7, +, " + std::to_string(K) + "]",
      "the context of the packet K later");
    a("alu[a6, a6, and, 7]");
    a("alu[--, a7, -, " + std::to_string(K) + "]");
    a("bcc[@tx_not_first]", "packet c is the first on ring c: its token");
    a("alu[b4, b3, +, 7]");
    a("alu_shf[a4, a7, or, b4, <<3]");
    a("local_csr_wr[same_me_signal, a4]");
    a.label("tx_not_first");
    a("br!=ctx[0, @tx_loop]");
    a("local_csr_wr[same_me_signal, " + hex(2 << 3) + "]");
  } else {
    a("alu[a7, a7, or, " + hex(6 << 3) + "]", "what wakes this context: s6");
    a("local_csr_wr[active_lm_addr_0, " + std::to_string(rxTurns) + "]",
      "every context: the (first) dealer's turn and round");
    a("br!=ctx[0, @tx_loop]");
    a("immed[a3, 0xffffffff]", "past the round: read the order ring");
    for (unsigned k = 0; k < l.replicas; ++k) {
      a("local_csr_wr[active_lm_addr_1, " +
            std::to_string(records + record * k) + "]",
        k ? "" : "the rings' records");
      a("alu[*l$index1[0], --, b, 0]");
      a("alu[*l$index1[1], --, b, 0]");
      a("alu[*l$index1[2], --, b, " + std::to_string(Layout::txRing0 + k) +
        "]");
      a("alu[*l$index1[3], --, b, " + hex(noWaiter) + "]");
      if (l.fixedTurn)
        a("alu[*l$index1[4], --, b, " +
          std::to_string(records + record * ((k + 1) % l.replicas)) + "]");
    }
    // A copy of each receive ME's turn and round (with several, each deals
    // its own blocks of 8 packets, receiveStage): context c's packets c,
    // c + 8, ... are in blocks of receive MEs 0, 1, .., R - 1, 0, ... (a6:
    // the copy of its next one).
    for (unsigned m = 0; m < dealers; ++m) {
      a("local_csr_wr[active_lm_addr_0, " + std::to_string(rxTurns + 16 * m) +
            "]",
        m ? "" : "receive ME m's turn, round, next and passes at 128 + 16m");
      if (l.fixedTurn)
        a("alu[*l$index0[0], --, b, " + std::to_string(records) + "]",
          "replica 0 first");
      else
        a("alu[*l$index0[0], --, b, a3]");
      a("alu[*l$index0[1], --, b, 0]");
      if (dealers > 1)
        a("alu[*l$index0[2], --, b, " +
          std::to_string(rxTurns + 16 * ((m + 1) % l.rx)) + "]");
      a("alu[*l$index0[3], --, b, 0]");
    }
    a("local_csr_wr[active_lm_addr_0, " + std::to_string(rxTurns) + "]");
    if (!l.fixedTurn && !l.keyed)
      passesTable(a, 0);
    a("local_csr_wr[same_me_signal, " + hex(1 << 3) + "]");
    a("local_csr_wr[same_me_signal, " + hex(2 << 3) + "]");
  }
  // Serving the next ticket of the ring (window 1) and waking its waiter,
  // without a branch: with no waiter the record holds noWaiter, a signal
  // (s15 of context 0) that nothing here waits for.
  auto serveNext = [&](const std::string &comment) {
    a("alu[*l$index1[1], b4, +, 1]", comment);
    a("alu[a4, --, b, *l$index1[3]]");
    a("local_csr_wr[same_me_signal, a4]", "wake its waiter");
    a("alu[*l$index1[3], --, b, " + hex(noWaiter) + "]");
  };
  // With ring tokens: the next packet's ring token passed on, and this
  // context's next ring (8 packets later).
  auto passRingToken = [&] {
    a("alu[b4, b3, +, 7]");
    a("alu_shf[a4, a6, or, b4, <<3]");
    a("local_csr_wr[same_me_signal, a4]", "the ring's token, K packets on");
    if (unsigned step = 8 % K) {
      a("alu[b3, b3, +, " + std::to_string(step) + "]",
        "this context's next ring");
      a("alu[--, b3, -, " + std::to_string(K) + "]");
      a("bcs[@tx_ring_next]");
      a("alu[b3, b3, -, " + std::to_string(K) + "]");
      a.label("tx_ring_next");
    }
  };
  a.label("tx_loop");
  if (ringTokens) {
    a("alu_shf[a2, --, b, b3, <<1]", "two instructions a ring");
    a("jump[a2, @tx_ring_token]");
    a.label("tx_ring_token");
    for (unsigned k = 0; k < K; ++k) {
      a("ctx_arb[s" + std::to_string(7 + k) + "]", k ? "" : "ring k's token");
      section.lines.back().fixed = true;
      a("br[@tx_took_token]");
      section.lines.back().fixed = true;
    }
    a.label("tx_took_token");
    a("alu[a3, b3, +, " + std::to_string(Layout::txRing0) + "]",
      "its transmit ring");
  } else {
    // The replicas in the receive side's turns (receiveStage).
    a("ctx_arb[s1]", "turn token");
    if (dealers > 1) {
      a("local_csr_wr[active_lm_addr_0, a6]",
        "the turn of this block's dealer");
      a("alu[a6, --, b, *l$index0[2]]", "the next block's");
    }
    if (l.keyed) {
      // Dealt by flow key: the order ring says whose each packet is.
      // While the ring is empty (the transmit ME ahead of the receive
      // side) the holder of the turn looks at its state, not with gets
      // that would load the scratch controller the replicas' rings share.
      a.label("tx_order");
      a("br_!inp_state[scr_ring" + std::to_string(Layout::orderRing) +
            "_empty, @tx_order_get]",
        "a packet's replica on the order ring?");
      a("ctx_arb[voluntary]");
      a("br[@tx_order]");
      a.label("tx_order_get");
      a("scratch[get, $0, " + std::to_string(Layout::orderRing) +
            ", 0, 1], ctx_swap[s3]",
        "the packet's replica (1 + k), in packet order");
      a("alu[b3, --, b, $0]");
      a("beq[@tx_order]", "not received yet");
      a("alu[--, b3, +, 1]");
      a("beq[@tx_end]");
      a("alu_shf[b3, --, b, b3, <<4]");
      a("alu[b3, b3, +, " + std::to_string(records - record) + "]",
        "its ring's record");
      a("local_csr_wr[active_lm_addr_1, b3]", "window 1: the ring's record");
    } else if (l.fixedTurn) {
      a("alu[b3, --, b, *l$index0[0]]", "this packet's replica's record");
      a("local_csr_wr[active_lm_addr_1, b3]", "window 1: the ring's record");
      a("alu[*l$index0[0], --, b, *l$index1[4]]", "the next turn");
    } else {
      a("alu[b3, --, b, *l$index0[0]]", "this packet's replica (x 16)");
      a("alu[--, *l$index0[1], -, b3]");
      a("bcs[@tx_round]", "the round is over");
      a.label("tx_turn");
      a("alu[*l$index0[0], b3, +, " + std::to_string(record) + "]");
      a("local_csr_wr[active_lm_addr_1, b3]", "window 1: the ring's record");
    }
    a("alu[b4, --, b, *l$index1[0]]", "a ticket of the ring");
    a("alu[*l$index1[0], b4, +, 1]");
    a("alu[a3, --, b, *l$index1[2]]", "its transmit ring");
    a(passGet);
    a("alu[--, b4, -, *l$index1[1]]");
    a("bne[@tx_wait]", "not served yet");
  }
  a.label("tx_entry");
  a("scratch[get, $0, a3, 0, " + std::to_string(entryWords) +
    "], ctx_swap[s3]");
  a("alu[a0, --, b, $0]");
  a("beq[@tx_entry]", "nothing yet");
  if (!copies) {
    // Without copies every entry is its packet's last; the end marker
    // carries freeOnly, so the packet path tests one bit.
    if (ringTokens)
      passRingToken();
    else
      serveNext("next ticket");
    a.deferred("br_bset[$3, 9, @tx_drop]", 1,
               "a buffer to free only, or the end");
    a("alu[$0, --, b, $1]", "length");
    a("alu[$1, --, b, $2]", "wire length");
    a("alu[$2, $3, and, 0xff]", "transmit port: the sink");
    a("alu[$3, --, b, $4]", "tag");
    a("br_!signal[s2, @tx_token_wait]", "the transmit token (no swap)");
    a.label("tx_send");
    a("msf[tx, $0, a0, 0, 4], sig_done[s4]");
    a(passTx);
    a("ctx_arb[s4]");
    // The buffer back to the free ring (the put need not complete before
    // the next packet: s5, tested before $7 is written again).
    auto freeIt = [&](const std::string &n) {
      a("br_!signal[s5, @tx_free_wait" + n + "]",
        "this context's last free is in");
      a.label("tx_free_put" + n);
      a.deferred("br[@tx_loop]", 2);
      a("alu[$7, --, b, a0]");
      a("scratch[put, $7, " + std::to_string(freeRing) +
        ", 0, 1], sig_done[s5]");
      a.label("tx_free_wait" + n);
      a("ctx_arb[s5]");
      a("br[@tx_free_put" + n + "]");
    };
    freeIt("");
    a.label("tx_token_wait");
    a("ctx_arb[s2]");
    a("br[@tx_send]");
    a.label("tx_drop");
    a("alu[--, a0, +, 1]");
    a("beq[@tx_end_ring]", "the end of the input");
    a("ctx_arb[s2]", "keep the transmit token moving");
    a(passTx);
    freeIt("_drop");
  } else {
    a("alu[--, a0, +, 1]");
    a("beq[@tx_end_ring]", "the end of the input");
    a("alu[b6, --, b, $3]", "the sink | last entry");
    a("alu[--, a0, +, 2]");
    a("beq[@tx_packet_end]");
    a("br_bclr[b6, 8, @tx_kept]");
    serveNext("the packet's last entry: next ticket");
    a.label("tx_kept");
    a("br_bset[b6, 9, @tx_drop]", "a buffer to free only");
    a("alu[$0, --, b, $1]", "length");
    a("alu[$1, --, b, $2]", "wire length");
    a("alu[$2, b6, and, 0xff]", "transmit port: the sink");
    a("alu[$3, --, b, $4]", "tag");
    a("alu[--, --, b, b7]");
    a("bne[@tx_held]");
    a("ctx_arb[s2]", "transmit token");
    a("immed[b7, 1]");
    a.label("tx_held");
    a("msf[tx, $0, a0, 0, 4], sig_done[s4]");
    a("br_bclr[b6, 8, @tx_sent]");
    a("immed[b7, 0]");
    a(passTx);
    a.label("tx_sent");
    a("ctx_arb[s4]");
    a.label("tx_free");
    a("alu[$0, --, b, a0]");
    freeBuffer(a, pool, copies, "tx_free", "s5", "tx_next");
    a.label("tx_next");
    a("br_bset[b6, 8, @tx_loop]");
    a("br[@tx_entry]", "the packet's next entry");
    a.label("tx_drop");
    a("br_bclr[b6, 8, @tx_free]");
    a("alu[--, --, b, b7]");
    a("bne[@tx_drop_pass]");
    a("ctx_arb[s2]", "keep the transmit token moving");
    a.label("tx_drop_pass");
    a("immed[b7, 0]");
    a(passTx);
    a("br[@tx_free]");
    a.label("tx_packet_end");
    serveNext("next ticket");
    a("alu[--, --, b, b7]");
    a("bne[@tx_pass]");
    a("ctx_arb[s2]", "keep the transmit token moving");
    a.label("tx_pass");
    a("immed[b7, 0]");
    a(passTx);
    a("br[@tx_loop]");
  }
  // Waiting for the ticket: the first waiter of a ring leaves its wake-up
  // in the record and sleeps; a later one (only when a round has fewer
  // replicas than 4, 8 contexts sharing them) spins until it is first.
  // The first waiter is always the next ticket's: it is woken when that
  // is served.
  if (!ringTokens) {
    a.label("tx_wait");
    a("alu[--, *l$index1[3], -, " + hex(noWaiter) + "]");
    a("bne[@tx_wait_other]");
    a("alu[*l$index1[3], --, b, a7]", "wake me when my ticket is served");
    a("ctx_arb[s6]");
    a("br[@tx_entry]", "served");
    a.label("tx_wait_other");
    a("ctx_arb[voluntary]");
    a("alu[--, b4, -, *l$index1[1]]");
    a("bne[@tx_wait]");
    a("br[@tx_entry]", "served");
  }
  if (!l.fixedTurn && !l.keyed) {
    a.label("tx_round");
    a("alu[b3, *l$index0[3], -, 1]", "another pass of the round?");
    a("bcs[@tx_new_round]");
    a("alu[*l$index0[3], --, b, b3]");
    a("immed[b3, " + std::to_string(records) + "]");
    a("br[@tx_turn]");
    a.label("tx_new_round");
    a("scratch[get, $0, " + std::to_string(Layout::orderRing) +
      ", 0, 1], ctx_swap[s3]");
    a("alu[b3, --, b, $0]");
    a("beq[@tx_new_round]", "the next round has not started");
    a("alu[--, b3, +, 1]");
    a("beq[@tx_end]");
    roundPasses(a, 0, "b3", "a4");
    a("alu_shf[b3, --, b, b3, <<4]");
    a("alu[b3, b3, +, " + std::to_string(records - record) + "]");
    a("alu[*l$index0[1], --, b, b3]", "the round's last replica's record");
    a("immed[b3, " + std::to_string(records) + "]");
    a("br[@tx_turn]");
  }
  // The end: the marker back where it was, for the next context.
  a.label("tx_end_ring");
  a("alu[$8, --, b, a0]");
  for (unsigned w = 1; w < entryWords; ++w)
    a("immed[$" + std::to_string(w + 8) + ", " +
      (w == 3 ? hex(Layout::freeOnly) : std::string("0")) + "]");
  a("scratch[put, $8, a3, 0, " + std::to_string(entryWords) +
    "], ctx_swap[s3]");
  if (!ringTokens)
    serveNext("next ticket");
  a("ctx_arb[kill]");
  if (l.fixedTurn) {
    program.code.push_back(std::move(section));
    return;
  }
  a.label("tx_end");
  a("immed[$8, 0xffffffff]");
  a("scratch[put, $8, " + std::to_string(Layout::orderRing) +
    ", 0, 1], ctx_swap[s3]");
  a(passGet);
  a("ctx_arb[kill]");
  program.code.push_back(std::move(section));
}

/// Removes unconditional branches to the next instruction (the packet
/// path and the handlers are laid out one after the other, so a send to
/// the next NetPE or to `to_sink` often falls through).
void removeBranchesToNext(CodeSection &section) {
  std::vector<Line> &lines = section.lines;
  for (size_t i = 0; i + 1 < lines.size();) {
    Line &line = lines[i];
    const std::vector<std::string> &next = lines[i + 1].labels;
    bool toNext =
        line.instr.op == me::Op::Br && line.instr.defer == 0 && !line.fixed &&
        std::find(next.begin(), next.end(), line.target) != next.end();
    if (!toNext) {
      ++i;
      continue;
    }
    std::vector<std::string> labels = std::move(line.labels);
    lines.erase(lines.begin() + i);
    lines[i].labels.insert(lines[i].labels.begin(), labels.begin(),
                           labels.end());
  }
}

struct PEInfo {
  PEOp pe;
  unsigned index = 0;
  med::FuncOp push, init;
  MEHandlerInfo pushInfo, initInfo;
};

} // namespace

LogicalResult netvm::me::compileApplication(ModuleOp module,
                                            const CodeGenOptions &options,
                                            CompiledApp &result,
                                            OwningOpRef<ModuleOp> *meIR) {
  ApplicationOp app;
  module.walk([&](ApplicationOp a) { app = a; });
  if (!app)
    return module.emitError("no netvm.application to compile");
  MLIRContext *ctx = module.getContext();
  ctx->getOrLoadDialect<med::MEDialect>();
  result = CompiledApp();
  AppLayout &layout = result.layout;

  // Sources, sinks, NetPEs.
  std::vector<SourceOp> sources;
  std::vector<SinkOp> sinks;
  std::vector<PEInfo> pes;
  for (Operation &op : *app.getBodyBlock()) {
    if (auto s = dyn_cast<SourceOp>(op))
      sources.push_back(s);
    else if (auto s = dyn_cast<SinkOp>(op))
      sinks.push_back(s);
    else if (auto pe = dyn_cast<PEOp>(op)) {
      PEInfo info;
      info.pe = pe;
      info.index = pes.size();
      pes.push_back(info);
    }
  }
  // The placement: which MEs receive, run the NetPEs, transmit.
  Layout L;
  std::vector<unsigned> peStage(pes.size(), 0);
  const Placement &placement = options.placement;
  if (!placement.isDefault()) {
    std::map<std::string, unsigned> stageOf;
    std::vector<std::string> unknown, twice, missing;
    for (auto [i, stage] : llvm::enumerate(placement.stages))
      for (const std::string &name : stage.pes) {
        if (!app.lookupPE(name))
          unknown.push_back(name);
        else if (!stageOf.emplace(name, i).second)
          twice.push_back(name);
      }
    for (PEInfo &info : pes)
      if (!stageOf.count(info.pe.getSymName().str()))
        missing.push_back(info.pe.getSymName().str());
    auto names = [](const std::vector<std::string> &v) {
      std::string out;
      for (const std::string &n : v)
        out += (out.empty() ? "'" : ", '") + n + "'";
      return out;
    };
    if (!unknown.empty())
      return app.emitError("the placement names NetPEs the application does "
                           "not have: ")
             << names(unknown);
    if (!twice.empty())
      return app.emitError("the placement puts NetPEs in more than one "
                           "stage: ")
             << names(twice);
    // One stage without names: every NetPE.
    bool allInOne =
        placement.stages.size() == 1 && placement.stages[0].pes.empty();
    if (!missing.empty() && !placement.stages.empty() && !allInOne)
      return app.emitError("the placement leaves NetPEs out of every "
                           "stage: ")
             << names(missing);
    unsigned stageMEs = 0;
    for (const StagePlacement &stage : placement.stages) {
      if (stage.mes == 0)
        return app.emitError("a stage of the placement has no ME");
      if (stage.pes.empty() && !allInOne)
        return app.emitError("a stage of the placement has no NetPE");
      stageMEs += stage.mes;
    }
    if (placement.stages.empty())
      stageMEs = 1;
    if (placement.receiveMEs == 0)
      return app.emitError("the placement has no receive ME");
    unsigned total = placement.receiveMEs + stageMEs + 1;
    if (total > options.machine.numMEs)
      return app.emitError("the placement needs ")
             << total << " MEs (" << placement.receiveMEs << " receive, "
             << stageMEs << " for the stages, 1 transmit); the machine has "
             << options.machine.numMEs;
    L.rx = placement.receiveMEs;
    L.replicas = stageMEs;
    if (placement.stages.size() > 1) {
      L.staged = true;
      unsigned next = L.rx;
      for (const StagePlacement &stage : placement.stages) {
        L.stageFirst.push_back(next);
        L.stageMEs.push_back(stage.mes);
        next += stage.mes;
      }
      for (PEInfo &info : pes)
        peStage[info.index] = stageOf[info.pe.getSymName().str()];
    }
    // One receive ME and one ME for every NetPE: the default layout.
    L.multi = !L.staged && (L.rx > 1 || L.replicas > 1);
    L.fixedTurn = L.multi && !options.dynamicReplicas;
  }
  for (SourceOp s : sources)
    layout.sources.push_back(s.getSymName().str());
  for (SinkOp s : sinks)
    layout.sinks.push_back(s.getSymName().str());
  if (sources.size() > 16 || sinks.size() > 16)
    return app.emitError("the microengine back end runs at most 16 sources "
                         "and 16 sinks (the media switch fabric's ports); "
                         "this application has ")
           << sources.size() << " and " << sinks.size();

  // Where each connection goes: (from) -> list of (to).
  struct Endpoint {
    PEOp pe;
    unsigned port = 0;
    int sink = -1;
  };
  std::map<std::pair<std::string, unsigned>, std::vector<Endpoint>> outputs;
  // Source k is receive port k: the packet path dispatches on the port.
  std::vector<std::vector<Endpoint>> fromSources(sources.size());
  for (ConnectOp connect : app.getBodyBlock()->getOps<ConnectOp>()) {
    SymbolRefAttr from = connect.getFrom(), to = connect.getTo();
    Endpoint dest;
    if (to.getNestedReferences().empty()) {
      for (auto [i, s] : llvm::enumerate(sinks))
        if (s.getSymName() == to.getRootReference())
          dest.sink = static_cast<int>(i);
    } else {
      dest.pe = app.lookupPE(to.getRootReference());
      if (!dest.pe)
        return connect.emitError("unknown NetPE");
      PortOp port = dest.pe.lookupPort(to.getLeafReference());
      if (!port || port.getKind() != PortKind::PushInput)
        return connect.emitError(
            "the microengine back end runs push connections only");
      dest.port = dest.pe.getPortNumber(port);
    }
    if (from.getNestedReferences().empty()) {
      for (auto [i, s] : llvm::enumerate(sources))
        if (s.getSymName() == from.getRootReference())
          fromSources[i].push_back(dest);
    } else {
      PEOp pe = app.lookupPE(from.getRootReference());
      PortOp port = pe ? pe.lookupPort(from.getLeafReference()) : PortOp();
      if (!port || port.getKind() != PortKind::PushOutput)
        return connect.emitError(
            "the microengine back end runs push connections only");
      outputs[{pe.getSymName().str(), pe.getPortNumber(port)}].push_back(dest);
    }
  }
  for (auto [i, dests] : llvm::enumerate(fromSources))
    if (dests.empty())
      return app.emitError("the source '")
             << layout.sources[i] << "' has no connection";

  // Fan-out: a port (or the source) with several connections sends a copy
  // of the packet to each, depth first in connection order, as the
  // interpreter does. At the port, a copy of the buffer (and of its info
  // memory) is made for every destination after the first and parked in a
  // local-memory slot; when the packet's path ends, the parked copy of the
  // most downstream port goes on. Slots are checked in reverse topological
  // order of their NetPEs: every port with a parked copy lies on one path
  // from the source, so the most downstream one is the most recent.
  std::map<std::string, unsigned> topo; // NetPE name -> topological index
  {
    std::map<std::string, unsigned> indegree;
    std::map<std::string, std::vector<std::string>> next;
    for (PEInfo &info : pes)
      indegree[info.pe.getSymName().str()] = 0;
    for (auto &[from, dests] : outputs)
      for (Endpoint d : dests)
        if (d.pe) {
          next[from.first].push_back(d.pe.getSymName().str());
          ++indegree[d.pe.getSymName().str()];
        }
    std::vector<std::string> ready;
    for (auto &[name, n] : indegree)
      if (!n)
        ready.push_back(name);
    while (!ready.empty()) {
      std::string name = ready.back();
      ready.pop_back();
      topo[name] = topo.size();
      for (const std::string &n : next[name])
        if (--indegree[n] == 0)
          ready.push_back(n);
    }
  }
  struct FanOut {
    std::vector<Endpoint> dests;
    unsigned firstSlot = 0; // slots firstSlot .. + dests.size() - 2
    unsigned order = 0;     // topological index of its NetPE (0: source)
  };
  std::vector<FanOut> fanOuts;
  std::map<std::pair<std::string, unsigned>, unsigned> fanOutOf;
  unsigned copySlots = 0;
  auto planFanOut = [&](const std::vector<Endpoint> &dests, unsigned order) {
    FanOut f;
    f.dests = dests;
    f.firstSlot = copySlots;
    f.order = order;
    copySlots += dests.size() - 1;
    fanOuts.push_back(f);
    return fanOuts.size() - 1;
  };
  std::vector<int> sourceFanOut(fromSources.size(), -1);
  for (auto [i, dests] : llvm::enumerate(fromSources))
    if (dests.size() > 1)
      sourceFanOut[i] = static_cast<int>(planFanOut(dests, 0));
  for (auto &[from, dests] : outputs)
    if (dests.size() > 1) {
      if (!topo.count(from.first))
        return app.emitError("the microengine back end copies packets only "
                             "in an acyclic application (NetPE '")
               << from.first << "' is on a cycle)";
      fanOutOf[from] = planFanOut(dests, topo[from.first] + 1);
    }
  bool fanOut = !fanOuts.empty();
  // Local memory window 0 of each context: spill slots from word 0, the
  // watchdog budget in word 15; with fan-out, word 14 says whether the
  // packet holds the transmit token and the copy slots go down from 13.
  constexpr unsigned maxCopySlots = 8;
  if (copySlots > maxCopySlots)
    return app.emitError("the microengine back end parks at most ")
           << maxCopySlots << " copies of a packet; the fan-out of this "
           << "application needs " << copySlots << " (over by "
           << copySlots - maxCopySlots << ")";
  // With pkt.senddup, the word below the slots keeps the copy's buffer.
  constexpr unsigned heldWord = 14;
  auto slotWord = [](unsigned slot) { return 13 - slot; };
  unsigned dupWord = slotWord(copySlots);
  unsigned spillSlots = fanOut ? slotWord(copySlots) : 15;
  // With timestamps, the packet's arrival time (seconds, microseconds) in
  // the two words below the copy's buffer: every copy of the packet runs
  // on the same context, so they hold for all of them.
  bool timestamps = false;
  for (PEInfo &info : pes)
    info.pe.walk([&](TimestampOp) { timestamps = true; });
  int timeWord = -1;
  if (timestamps) {
    timeWord = static_cast<int>(dupWord) - 2;
    spillSlots = std::min(spillSlots, static_cast<unsigned>(timeWord));
  }

  // The NetPEs' counters: word `which` (0 runs, 1 sent, 2 dropped) of `pe`.
  layout.peCounters =
      pes.size() <= peCountersLowMax ? peCountersLow : peCountersHigh;
  auto counterOf = [&](unsigned pe, unsigned which) {
    return layout.peCounters + 12 * pe + 4 * which;
  };

  // Instruction selection, into a module of me.funcs kept with the input.
  OpBuilder builder(ctx);
  OwningOpRef<ModuleOp> meModule = ModuleOp::create(app.getLoc());
  builder.setInsertionPointToEnd(meModule->getBody());
  MELoweringOptions lowering;
  lowering.maxHeaderBytes = pktReadXfer * 4;
  // Buffers in whole 64-byte blocks (DRAM writes of a new exchange buffer).
  Buffers pool;
  pool.bytes = (std::max(options.machine.maxPacketBytes, 64u) + 63) & ~63u;
  // A parked copy keeps its length and wire length only where a NetPE may
  // replace the packet (exbuf_create and exbuf_delete change those
  // registers): elsewhere the DRAM write and read would cost every copy
  // two round trips for nothing (watch.nvapp: 0.740 Mpps against 0.906).
  bool replacesPackets = false;
  app.walk([&](Operation *op) {
    replacesPackets |= isa<ExbufCreateOp, ExbufDeleteOp>(op);
  });
  pool.tail = fanOut && replacesPackets ? 64 : 0;
  lowering.bufferBytes = pool.bytes;
  lowering.timestampWord = timeWord;
  lowering.eventCount = eventCountAddress;
  lowering.eventLog = eventLogAddress;
  lowering.eventCapacity = eventCapacity;
  lowering.dropEvent = static_cast<uint32_t>(EventKind::Drop);
  // Info memory: as large as the largest NetPE's, as the other engines.
  layout.infoSize = options.defaultInfoSize;
  for (PEInfo &info : pes)
    layout.infoSize = std::max(layout.infoSize, info.pe.getInfoSize());
  layout.infoOffset = infoBytes;
  layout.infoCarried = std::min(layout.infoSize, infoBytes);
  // Bounds checks against the declared size; accesses past the window are
  // refused by the lowering, so the bytes past it stay zeros.
  lowering.infoSize = layout.infoSize;
  uint32_t sramNext = sramDataBase;
  std::vector<DataInit> initData;
  // The cache of lookup slots (CAM and local memory above the contexts'
  // areas) for the first 15 NetPEs with a table (the CAM's states 1-15),
  // when the machine's local memory holds it.
  unsigned lookupCaches = 0;
  bool cacheFits =
      uint64_t(options.machine.localMemoryWords) * 4 >= meLookupCacheEnd;
  for (PEInfo &info : pes) {
    PEOp pe = info.pe;
    // SRAM: the NetPE's data memory and initialised data.
    auto place = [&](uint32_t size) {
      uint32_t at = sramNext;
      sramNext = (sramNext + size + 7) & ~7u;
      return at;
    };
    // Coprocessors: the lookup table in SRAM; the others run on the host.
    lowering.lookupBase = 0;
    lowering.lookupCache = 0;
    for (Attribute attr : pe.getCoprocessors()) {
      StringRef name = cast<StringAttr>(attr).getValue();
      if (name == "lookup") {
        // The table lives on from run to run (batches).
        lowering.lookupBase = place(meLookupTableBytes);
        if (cacheFits && lookupCaches < 15)
          lowering.lookupCache = ++lookupCaches;
        layout.persistent.push_back(
            {Memory::Sram, lowering.lookupBase, meLookupTableBytes});
        layout.lookupTables.resize(pes.size(), 0);
        layout.lookupTables[info.index] = lowering.lookupBase;
        continue;
      }
      bool host = name == "regexp" || name == "stringmatching";
      return pe.emitError("the microengine back end cannot run coprocessor '")
             << name << "' (NetPE '" << pe.getSymName() << "'): "
             << (host ? "it runs on the host only (Hyperscan)"
                      : "only 'lookup' runs on the MEs")
             << "; docs/me-backend.md lists what it refuses";
    }
    lowering.dataBase = place(pe.getDatamemSize());
    layout.dataMemory.push_back(
        {Memory::Sram, lowering.dataBase, pe.getDatamemSize()});
    if (pe.getDatamemSize())
      layout.persistent.push_back(layout.dataMemory.back());
    if (auto init = pe.getInitdata()) {
      lowering.initDataBase = place(init->size());
      DataInit data;
      data.memory = Memory::Sram;
      data.address = lowering.initDataBase;
      for (int8_t byte : *init)
        data.bytes.push_back(static_cast<uint8_t>(byte));
      if (!data.bytes.empty())
        initData.push_back(std::move(data));
    }
    bool random = false;
    pe.walk([&](RandomOp) { random = true; });
    if (random) {
      // The NetPE's xorshift32 state, seeded as on every engine.
      lowering.randomState = place(4);
      layout.persistent.push_back({Memory::Sram, lowering.randomState, 4});
      DataInit seed;
      seed.memory = Memory::Sram;
      seed.address = lowering.randomState;
      uint32_t v = NETVM_RANDOM_SEED;
      seed.bytes = {uint8_t(v >> 24), uint8_t(v >> 16), uint8_t(v >> 8),
                    uint8_t(v)};
      initData.push_back(std::move(seed));
    }
    if (pe.getSharedmemSize()) {
      if (!layout.sharedMemory.size) {
        layout.sharedMemory = {Memory::Sram, place(pe.getSharedmemSize()),
                               pe.getSharedmemSize()};
        layout.persistent.push_back(layout.sharedMemory);
      }
      lowering.sharedBase = layout.sharedMemory.address;
    }
    lowering.peIndex = info.index;
    lowering.dropCounter = counterOf(info.index, 2);
    for (HandlerOp handler : pe.getBodyBlock()->getOps<HandlerOp>()) {
      if (handler.getKind() == HandlerKind::Pull)
        return handler.emitError("the microengine back end does not run pull "
                                 "handlers (NetPE '")
               << pe.getSymName() << "')";
      MEHandlerInfo &hinfo = handler.getKind() == HandlerKind::Push
                                 ? info.pushInfo
                                 : info.initInfo;
      FailureOr<med::FuncOp> func =
          lowerHandlerToME(handler, builder, lowering, layout.locations, hinfo);
      if (failed(func))
        return failure();
      (handler.getKind() == HandlerKind::Push ? info.push : info.init) = *func;
    }
  }
  // Dealing by flow key (docs/me-backend.md, "Dealing by flow key"): one
  // stage replicated on K MEs whose only NetPE with state is fed by the
  // sources alone and keeps its data memory in buckets of a key computed
  // from the packet (analysis::proveFlowKey). Each bucket's packets then
  // go to one replica, whose state token orders them; the replicas share
  // the data memory in SRAM and never touch the same bytes.
  med::FuncOp keyFunc;
  MEHandlerInfo keyInfo;
  PEInfo *keyedPE = nullptr;
  if (L.multi && L.replicas > 1 && !options.dynamicReplicas) {
    PEInfo *only = nullptr;
    unsigned withState = 0;
    bool random = false, copies = fanOut;
    for (PEInfo &info : pes) {
      random |= info.pushInfo.usesRandom;
      copies |= info.pushInfo.sendsCopies;
      if (info.pushInfo.writesState) {
        ++withState;
        only = &info;
      }
    }
    bool fedBySources = only != nullptr;
    for (auto &[from, dests] : outputs)
      for (const Endpoint &d : dests)
        fedBySources &= !(only && d.pe == only->pe);
    for (const std::vector<Endpoint> &dests : fromSources)
      for (const Endpoint &d : dests)
        fedBySources &= only && d.pe == only->pe;
    if (withState == 1 && !random && !copies && fedBySources) {
      analysis::FlowKeyProof proof = analysis::proveFlowKey(only->pe);
      if (proof.proved) {
        HandlerOp keyHandler = analysis::buildFlowKeyHandler(only->pe, proof);
        MELoweringOptions keyLowering = lowering;
        keyLowering.peIndex = only->index;
        keyLowering.dropCounter = 0;
        keyLowering.infoSize = std::max(lowering.infoSize, 4u);
        FailureOr<med::FuncOp> func = lowerHandlerToME(
            keyHandler, builder, keyLowering, layout.locations, keyInfo);
        keyHandler.erase();
        if (failed(func))
          return failure();
        keyFunc = *func;
        keyFunc.setSymName((only->pe.getSymName() + ".key").str());
        keyedPE = only;
        L.keyed = true;
        L.fixedTurn = false;
        L.keyBuckets = proof.buckets > 0xffffffffull
                           ? 0xffffffffu
                           : static_cast<uint32_t>(proof.buckets);
      }
    }
  }
  if (sramNext > options.machine.sramBytes)
    return app.emitError("the NetPEs' memories and tables need ")
           << sramNext - sramDataBase << " bytes of SRAM from "
           << hex(sramDataBase) << "; the machine has "
           << options.machine.sramBytes << " bytes (over by "
           << sramNext - options.machine.sramBytes << ")";
  if (failed(verify(*meModule)))
    return failure();

  Program program;
  program.header = {"generated by netc --target=me from application '" +
                        app.getSymName().str() + "'",
                    "ME 0 receives, ME 1 runs the NetPEs, ME 2 transmits "
                    "(docs/me-backend.md)"};
  program.rings = {RingConfig{freeRing, freeRingBase, 128},
                   RingConfig{txRing, txRingBase, 512},
                   RingConfig{workRing, workRingBase, 512}};
  // SRAM: the watchdog budget word, the event count and the event log.
  DataInit budget;
  budget.memory = Memory::Sram;
  budget.address = watchdogAddress;
  uint32_t defaultBudget = layout.defaultWatchdog;
  budget.bytes = {uint8_t(defaultBudget >> 24), uint8_t(defaultBudget >> 16),
                  uint8_t(defaultBudget >> 8), uint8_t(defaultBudget)};
  program.data.push_back(budget);
  for (DataInit &init : initData)
    program.data.push_back(std::move(init));
  layout.watchdogAddress = watchdogAddress;
  layout.eventCount = eventCountAddress;
  layout.eventLog = eventLogAddress;
  layout.eventCapacity = eventCapacity;
  for (PEInfo &info : pes)
    layout.pes.push_back(info.pe.getSymName().str());
  for (PEInfo &info : pes)
    layout.infoUsed |= info.pushInfo.usesInfo || info.initInfo.usesInfo;
  // Whole quadwords of the window (the rest of info memory is zeros).
  unsigned infoWords = (layout.infoCarried + 7) / 8 * 2;

  // Enough copies that every context can park all of a packet's.
  // pkt.senddup: copies that leave at once, one buffer a context at a time.
  bool dups = false;
  for (PEInfo &info : pes)
    dups |= info.pushInfo.sendsCopies || info.initInfo.sendsCopies;
  if (dups) {
    fanOut = true;
    spillSlots = std::min(spillSlots, dupWord);
  }
  unsigned copyBuffers = 8 * (copySlots + (dups ? 1 : 0));
  // With state written by the handlers, packets reach it in order: a third
  // token (s7) passes from context to context; a packet takes it at its
  // first state access (me.state_token) and passes it on when it leaves.
  // Local memory word `stateWord` says whether it holds it.
  bool stateful = false;
  for (PEInfo &info : pes)
    stateful |= info.pushInfo.writesState;
  int stateWord = -1;
  if (stateful) {
    stateWord = static_cast<int>(spillSlots) - 1;
    spillSlots = static_cast<unsigned>(stateWord);
  }
  // The MEs a NetPE runs on: its stage's.
  auto replicasOf = [&](const PEInfo &info) {
    return L.staged ? L.stageMEs[peStage[info.index]] : L.replicas;
  };
  for (PEInfo &info : pes)
    if (replicasOf(info) > 1 && &info != keyedPE) {
      const char *why = info.pushInfo.writesState
                            ? "writes data or shared memory (or its lookup "
                              "table)"
                        : info.pushInfo.usesRandom ? "draws random numbers"
                                                   : nullptr;
      if (why)
        return info.pe.emitError("NetPE '")
               << info.pe.getSymName() << "' " << why << ": "
               << replicasOf(info)
               << " replicas would diverge; the microengine back end "
                  "replicates only NetPEs without state, or whose data "
                  "memory a flow key partitions and that the sources "
                  "alone feed (give its stage one ME)";
    }
  unsigned workWords = timestamps ? timedEntryWords : entryWords;
  if (L.multi) {
    // Rings in scratch: as many buffers (a multiple of 16, at most 64) as
    // let every ring hold all it may have to: each packet between receive
    // and transmit holds a buffer of the free ring.
    auto ringWords = [](uint32_t words) {
      uint32_t size = 128;
      while (size < words)
        size *= 2;
      return size;
    };
    // Copies on replicas: a replica running ahead would fill the shared
    // copy pool with outputs that wait for an earlier packet of another
    // replica, which then finds no copy buffer (a pool per replica would
    // cure it; not done yet).
    if (L.replicas > 1 && fanOut)
      return app.emitError("the microengine back end does not replicate "
                           "NetPEs that copy packets (fan-out or "
                           "pkt.senddup) yet: give the stage one ME");
    for (pool.count = defaultBuffers; pool.count >= 16; pool.count -= 16) {
      std::map<unsigned, uint32_t> sizes;
      for (unsigned k = 0; k < L.replicas; ++k) {
        sizes[Layout::workRing0 + k] = ringWords((pool.count + 1) * workWords);
        // Outputs and dropped buffers, with fan-out an end entry a packet,
        // the end marker.
        sizes[Layout::txRing0 + k] = ringWords(
            (pool.count * (fanOut ? 2 : 1) + copyBuffers + 1) * entryWords);
      }
      if (fanOut)
        sizes[copyRing] = ringWords(copyBuffers);
      bool small = true;
      for (auto [ring, words] : sizes)
        small &= words <= 1024;
      if (small && L.placeRings(sizes) <= options.machine.scratchBytes)
        break;
    }
    if (pool.count < 16)
      return app.emitError("the rings of ")
             << L.replicas << " replicas do not fit the machine's "
             << options.machine.scratchBytes << " bytes of scratch";
  }
  if (L.staged) {
    // A pipeline forwards packets with their buffers; copies would need a
    // pool per stage and the parked copies of a packet on several MEs.
    if (fanOut)
      return app.emitError("the microengine back end does not run an "
                           "application that copies packets (fan-out or "
                           "pkt.senddup) in a pipeline of ")
             << L.stageMEs.size() << " stages yet: give it one stage";
    // A send goes to a NetPE of the same stage (a branch) or of a later
    // one (the rings run one way).
    for (auto &[from, dests] : outputs)
      for (const Endpoint &d : dests) {
        if (!d.pe)
          continue;
        PEInfo *src = nullptr, *dst = nullptr;
        for (PEInfo &info : pes) {
          if (info.pe.getSymName() == from.first)
            src = &info;
          if (info.pe == d.pe)
            dst = &info;
        }
        unsigned s0 = peStage[src->index], s1 = peStage[dst->index];
        if (s1 < s0)
          return src->pe.emitError("NetPE '")
                 << from.first << "' (stage " << s0 + 1 << ") sends to NetPE '"
                 << dst->pe.getSymName() << "' of an earlier stage (" << s1 + 1
                 << "): a pipeline on the MEs only sends packets forward; "
                    "put them in one stage or reorder the stages";
      }
    // Shared memory is reached in packet order by one ME (its state token,
    // or the order of atomic adds against the packets' reads): the NetPEs
    // that declare it or reach it (an operation on the shared space, as a
    // NetPE may without declaring a size) stay in one stage.
    auto reachesShared = [](PEOp pe) {
      if (pe.getSharedmemSize())
        return true;
      return pe
          ->walk([](Operation *op) {
            for (NamedAttribute attr : op->getAttrs())
              if (auto space = dyn_cast<MemSpaceAttr>(attr.getValue()))
                if (space.getValue() == MemSpace::Shared)
                  return WalkResult::interrupt();
            return WalkResult::advance();
          })
          .wasInterrupted();
    };
    std::set<unsigned> sharedStages;
    std::string sharers;
    for (PEInfo &info : pes)
      if (reachesShared(info.pe)) {
        sharedStages.insert(peStage[info.index]);
        sharers +=
            (sharers.empty() ? "'" : ", '") + info.pe.getSymName().str() + "'";
      }
    if (sharedStages.size() > 1)
      return app.emitError("NetPEs ")
             << sharers
             << " share memory: a pipeline on the MEs keeps them in one "
                "stage";
    // Rings: the free ring, one per stage and the transmit ring, each
    // holding every buffer's entry and the end marker.
    std::map<unsigned, uint32_t> sizes;
    for (pool.count = defaultBuffers; pool.count >= 16; pool.count -= 16) {
      uint32_t words = 128;
      while (words < (pool.count + 1) * workWords)
        words *= 2;
      sizes.clear();
      for (unsigned st = 0; st < L.stageMEs.size(); ++st)
        sizes[Layout::stageRing0 + st] = words;
      sizes[Layout::stagedTxRing] = words;
      if (L.placeRings(sizes) <= options.machine.scratchBytes)
        break;
    }
    if (pool.count < 16 || Layout::stageRing0 + L.stageMEs.size() > 16)
      return app.emitError("the rings of a pipeline of ")
             << L.stageMEs.size() << " stages do not fit the machine's "
             << options.machine.scratchBytes << " bytes of scratch";
  }
  uint64_t dramEnd =
      uint64_t(pool.copyPoolBase()) + uint64_t(copyBuffers) * pool.stride();
  if (dramEnd > options.machine.dramBytes)
    return app.emitError("the packet buffers (")
           << pool.count + copyBuffers << " of " << pool.bytes
           << " bytes) do not fit the machine's DRAM of "
           << options.machine.dramBytes << " bytes";
  if (L.multi) {
    program.header[1] =
        "MEs 0-" + std::to_string(L.rx - 1) + " receive, MEs " +
        std::to_string(L.firstReplica()) + "-" + std::to_string(L.txME() - 1) +
        " run the NetPEs (replicas), ME " + std::to_string(L.txME()) +
        " transmits (docs/me-backend.md)";
    program.rings = L.rings;
    if (L.keyed) {
      // The key's registers: those the receive path leaves (a0, b0, a1,
      // b2 are its arguments; a3-a6, b3, b4 the path's).
      auto keyCode = [&](CodeSection &into) -> LogicalResult {
        AllocationOptions alloc;
        alloc.poolA = {7, 8, 9, 10, 11, 12, 13, 14};
        alloc.poolB = {5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
        alloc.firstFreeDramXfer = keyInfo.headerBytes / 4;
        alloc.spillSlots = 15;
        Allocation allocation;
        if (failed(allocateRegisters(keyFunc, alloc, allocation)))
          return failure();
        ExitLabels exits;
        exits.pe = keyedPE->index;
        exits.send = [](unsigned) { return std::string("rx_keyed"); };
        exits.drop = exits.dropLogged = "rx_keyed";
        exits.raise = "rx_key_fault";
        exits.sendCopy = [](unsigned, CodeSection &, std::string &error) {
          error = "a key function sends no copies";
          return false;
        };
        EmitStats stats;
        return emitHandler(keyFunc, allocation, exits, "rx_key", into, stats);
      };
      if (failed(keyedReceiveStage(program, L, pool, timestamps,
                                   keyInfo.headerBytes, keyCode)))
        return failure();
    } else {
      receiveStage(program, L, pool, copyBuffers, timestamps);
    }
    removeBranchesToNext(program.code.back());
    AppLayout::Stage stage;
    stage.replicaWord = L.fixedTurn || L.keyed ? 0 : Layout::activeWord;
    stage.maxReplicas = L.replicas;
    for (unsigned k = 0; k < L.replicas; ++k) {
      stage.mes.push_back(L.firstReplica() + k);
      stage.workRings.push_back(Layout::workRing0 + k);
    }
    stage.workEntryWords = timestamps ? timedEntryWords : entryWords;
    for (PEInfo &info : pes)
      stage.pes.push_back(info.index);
    layout.stages.push_back(stage);
  } else if (L.staged) {
    program.header[1] =
        "MEs 0-" + std::to_string(L.rx - 1) + " receive, a pipeline of " +
        std::to_string(L.stageMEs.size()) + " stages on MEs " +
        std::to_string(L.rx) + "-" + std::to_string(L.txME() - 1) + ", ME " +
        std::to_string(L.txME()) + " transmits (docs/me-backend.md)";
    program.rings = L.rings;
    stagedReceiveStage(program, L, pool, timestamps);
    removeBranchesToNext(program.code.back());
    for (unsigned st = 0; st < L.stageMEs.size(); ++st) {
      AppLayout::Stage stage;
      stage.maxReplicas = L.stageMEs[st];
      for (unsigned k = 0; k < L.stageMEs[st]; ++k) {
        stage.mes.push_back(L.stageFirst[st] + k);
        stage.workRings.push_back(Layout::stageRing0 + st);
      }
      stage.workEntryWords = workWords;
      for (PEInfo &info : pes)
        if (peStage[info.index] == st)
          stage.pes.push_back(info.index);
      layout.stages.push_back(stage);
    }
  } else {
    if (fanOut)
      program.rings.push_back(RingConfig{copyRing, copyRingBase, 128});
    receiveStage(program, L, pool, copyBuffers, timestamps);
  }

  // In a pipeline, the packet's number (status bits 31:16, kept << 16) in
  // a local memory word while it is on a stage's ME.
  int numberWord = -1;
  if (L.staged) {
    numberWord = static_cast<int>(spillSlots) - 1;
    spillSlots = static_cast<unsigned>(numberWord);
  }
  // Cross-stage sends: the NetPE inputs a packet is forwarded to, numbered
  // in the work entry's status bits 15:8.
  std::vector<Endpoint> forwards;
  auto forwardOf = [&](const Endpoint &d) {
    for (size_t i = 0; i < forwards.size(); ++i)
      if (forwards[i].pe == d.pe && forwards[i].port == d.port)
        return static_cast<unsigned>(i);
    forwards.push_back(d);
    return static_cast<unsigned>(forwards.size() - 1);
  };
  auto stageOfPE = [&](PEOp pe) {
    for (PEInfo &info : pes)
      if (info.pe == pe)
        return peStage[info.index];
    return 0u;
  };
  std::vector<MEReport> stageReports;
  unsigned sections = L.staged ? L.stageMEs.size() : 1;
  for (unsigned st = 0; st < sections; ++st) {
    // ME 1: the NetPEs (in a pipeline, those of stage `st`).
    CodeSection section;
    section.meMask = 1u << handlerME;
    section.title = "ME 1: the NetPEs of '" + app.getSymName().str() + "'";
    if (L.multi) {
      section.meMask = ((1u << L.replicas) - 1) << L.firstReplica();
      section.title = "MEs " + std::to_string(L.firstReplica()) + "-" +
                      std::to_string(L.txME() - 1) + ": the NetPEs of '" +
                      app.getSymName().str() + "', replicas";
    }
    // This section's MEs: the first and how many (replicas).
    unsigned firstME = L.multi ? L.firstReplica() : handlerME, mes = L.replicas;
    if (L.staged) {
      firstME = L.stageFirst[st];
      mes = L.stageMEs[st];
      section.meMask = ((1u << mes) - 1) << firstME;
      section.title = "ME" + std::string(mes > 1 ? "s " : " ") +
                      std::to_string(firstME) +
                      (mes > 1 ? "-" + std::to_string(firstME + mes - 1) : "") +
                      ": stage " + std::to_string(st + 1) + " of '" +
                      app.getSymName().str() + "'";
    }
    auto here = [&](const PEInfo &info) {
      return !L.staged || peStage[info.index] == st;
    };
    // A pipeline's rings: this stage's work, and the next stage's (or the
    // transmit ring) for what it passes on.
    std::string stageRing = std::to_string(Layout::stageRing0 + st);
    std::string nextRing = std::to_string(
        st + 1 < sections ? Layout::stageRing0 + st + 1 : Layout::stagedTxRing);
    bool stageStateful = false;
    for (PEInfo &info : pes)
      stageStateful |= here(info) && info.pushInfo.writesState;
    LineBuilder a{section};
    // A replica's ring (ring0 + k on replica k) into a15; the ring operand.
    auto replicaRing = [&](LineBuilder &b, unsigned ring0) {
      if (!L.multi)
        return std::to_string(ring0 == Layout::workRing0 ? workRing : txRing);
      b("local_csr_rd[a15, active_ctx_sts]");
      b("alu_shf[a15, --, b, a15, >>3]", "this ME: its replica's ring");
      if (ring0 >= L.firstReplica())
        b("alu[a15, a15, +, " + std::to_string(ring0 - L.firstReplica()) + "]");
      else
        b("alu[a15, a15, -, " + std::to_string(L.firstReplica() - ring0) + "]");
      return std::string("a15");
    };
    bool watchdog = false;
    for (PEInfo &info : pes)
      watchdog |= info.pushInfo.usesWatchdog || info.initInfo.usesWatchdog;
    // Leaving: the state token goes on, taken first if the packet never
    // needed it (the next packet waits for this one either way).
    unsigned statePasses = 0;
    auto passState = [&] {
      if (!stageStateful)
        return;
      std::string word = "*l$index0[" + std::to_string(stateWord) + "]";
      std::string have = "state_held" + std::to_string(statePasses++);
      a("alu[--, --, b, " + word + "]");
      a("bne[@" + have + "]");
      a("ctx_arb[s7]", "keep the state token moving");
      a.label(have);
      a("alu[" + word + ", --, b, 0]");
      a("local_csr_wr[same_me_signal, " + hex(0x80 | (7 << 3)) + "]",
        "state token");
    };
    if (watchdog) {
      // Each context's local memory: 64 words at context x 256 bytes; word
      // 15 keeps the watchdog budget, words 0-14 are spill slots.
      a("local_csr_rd[a15, active_ctx_sts]");
      a("alu[a15, a15, and, 7]");
      a("alu_shf[a15, --, b, a15, <<8]");
      a("local_csr_wr[active_lm_addr_0, a15]");
      a("immed[a3, " + hex(watchdogAddress) + "]");
      a("sram[read, $0, a3, 0, 1], ctx_swap[s4]", "the watchdog budget");
      a("alu[*l$index0[15], --, b, $0]");
    } else {
      // Removed again below when no handler spills.
      a("local_csr_rd[a15, active_ctx_sts]");
      a("alu[a15, a15, and, 7]");
      a("alu_shf[a15, --, b, a15, <<8]");
      a("local_csr_wr[active_lm_addr_0, a15]", "spill slots");
    }
    if (layout.infoUsed) {
      a("alu[a15, a15, +, " + std::to_string(16 * 4) + "]");
      a("local_csr_wr[active_lm_addr_1, a15]", "info memory: words 16-31");
    }
    if (stageStateful)
      a("alu[*l$index0[" + std::to_string(stateWord) + "], --, b, 0]",
        "no state token held");
    if (fanOut) {
      for (unsigned slot = 0; slot < copySlots; ++slot)
        a("alu[*l$index0[" + std::to_string(slotWord(slot)) + "], --, b, 0]",
          "no parked copy");
      a("alu[*l$index0[" + std::to_string(heldWord) + "], --, b, 0]",
        "no transmit token held");
    }
    a("br!=ctx[0, @work_loop]");
    // The cache of lookup slots starts empty in every run: the host's
    // control plane changes the tables between runs.
    if (lookupCaches)
      a("cam_clear", "the cache of lookup slots");
    // Init handlers run once, in context 0, before the first packet.
    std::vector<std::pair<PEInfo *, std::string>> inits;
    for (PEInfo &info : pes)
      if (info.init && here(info))
        inits.push_back({&info, "init_" + std::to_string(info.index)});
    // A pipeline's stages run their own init handlers, each with its word.
    uint32_t initDone =
        st == 0 ? initDoneAddress : stageInitDoneBase + 4 * (st - 1);
    // The word as an operand: an immediate, or in a15 past 16 bits.
    auto initDoneOperand = [&]() -> std::string {
      if (initDone <= 0xffff)
        return hex(initDone);
      a("immed[a15, " + hex(initDone) + "]");
      return "a15";
    };
    if (!inits.empty() && mes > 1) {
      // The first replica runs them; the others wait until it has.
      a("local_csr_rd[a15, active_ctx_sts]");
      a("alu_shf[a15, --, b, a15, >>3]");
      a("alu[--, a15, -, " + std::to_string(firstME) + "]");
      a("beq[@init_run]");
      a.label("init_wait");
      a("sram[read, $0, " + initDoneOperand() + ", 0, 1], ctx_swap[s4]",
        "the first replica ran the init handlers?");
      a("alu[--, --, b, $0]");
      a("beq[@init_wait]");
      a("br[@start_tokens]");
      a.label("init_run");
    }
    if (!inits.empty()) {
      a("sram[read, $0, " + initDoneOperand() + ", 0, 1], ctx_swap[s4]",
        "the init handlers ran in an earlier run?");
      a("alu[--, --, b, $0]");
      a("bne[@start_tokens]");
      a("immed[b0, 0]", "no exchange buffer: empty packet");
    }
    for (size_t i = 0; i < inits.size(); ++i) {
      if (watchdog)
        a("alu[a2, --, b, *l$index0[15]]");
      countUp(a, counterOf(inits[i].first->index, 0), "a run of .init");
      a("br[@" + inits[i].second + "]");
      a.label(inits[i].second + "_done");
    }
    if (!inits.empty()) {
      a("immed[$0, 1]");
      a("sram[write, $0, " + initDoneOperand() + ", 0, 1], ctx_swap[s4]",
        "they did");
      layout.persistent.push_back({Memory::Sram, initDone, 4});
    }
    a.label("start_tokens");
    a("local_csr_wr[same_me_signal, " + hex(1 << 3) + "]");
    a("local_csr_wr[same_me_signal, " + hex(2 << 3) + "]");
    if (stageStateful)
      a("local_csr_wr[same_me_signal, " + hex(7 << 3) + "]");
    a.label("work_loop");
    std::string workRingOperand =
        L.staged ? stageRing : replicaRing(a, Layout::workRing0);
    a("ctx_arb[s1]", "work token");
    // A replica waits for work on its ring's state (br_inp_state, no
    // scratch command; a jump table picks the ring's instruction), so that
    // the replicas' empty polls do not load the scratch controller that
    // their work and transmit rings share. After workSpins empty looks
    // (a parked replica, or one starved of input) it polls the ring with
    // gets, which sleep, until work comes (a1: the looks left).
    bool pollState = L.multi && !L.staged;
    constexpr unsigned workSpins = 32;
    if (pollState) {
      a("alu[b15, a15, -, " + std::to_string(Layout::workRing0) + "]");
      a("alu_shf[b15, --, b, b15, <<1]", "two instructions a ring");
      a("immed[a1, " + std::to_string(workSpins) + "]");
    }
    a.label("get_work");
    if (pollState) {
      a("jump[b15, @work_poll]");
      a.label("work_poll");
      for (unsigned k = 0; k < L.replicas; ++k) {
        a("br_!inp_state[scr_ring" + std::to_string(Layout::workRing0 + k) +
              "_empty, @work_take]",
          k ? "" : "work on the ring?");
        section.lines.back().fixed = true;
        a("br[@work_idle]");
        section.lines.back().fixed = true;
      }
      a.label("work_idle");
      a("alu[a1, a1, -, 1]");
      a("beq[@work_take]", "looked long enough: poll with gets");
      a("ctx_arb[voluntary]");
      a("br[@get_work]");
      a.label("work_take");
    }
    a("scratch[get, $0, " + workRingOperand + ", 0, " +
      std::to_string(timestamps ? timedEntryWords : entryWords) +
      "], ctx_swap[s4]");
    a("alu[a0, --, b, $0]");
    a(pollState ? "beq[@work_take]" : "beq[@get_work]", "nothing queued yet");
    a("local_csr_wr[same_me_signal, " + hex(0x80 | (1 << 3)) + "]");
    a("alu[b0, --, b, $1]");
    a("alu[a1, --, b, $2]");
    if (L.staged) {
      a("alu_shf[a15, --, b, $3, >>16]", "the packet's number");
      a("alu_shf[a15, --, b, a15, <<16]");
      a("alu[*l$index0[" + std::to_string(numberWord) + "], --, b, a15]");
      // The end marker by its buffer: status bits 7:0 of a transmit entry
      // are its sink.
      a("alu[--, a0, +, 1]");
      a("beq[@work_end]");
    } else {
      a("br_bset[$3, 0, @work_end]");
    }
    a("alu[b2, --, b, $4]", "tag");
    if (timestamps) {
      a("alu[*l$index0[" + std::to_string(timeWord) + "], --, b, $5]",
        "arrival time");
      a("alu[*l$index0[" + std::to_string(timeWord + 1) + "], --, b, $6]");
    }
    for (unsigned w = 0; w < infoWords && layout.infoUsed; ++w)
      a("alu[*l$index1[" + std::to_string(w) + "], --, b, 0]",
        w == 0 ? "info memory starts as zeros" : "");
    if (watchdog)
      a("alu[a2, --, b, *l$index0[15]]", "the packet's loop budget");
    auto entryOf = [&](PEOp pe) {
      for (PEInfo &info : pes)
        if (info.pe == pe)
          return "pe" + std::to_string(info.index) + "_entry";
      return std::string();
    };
    // The input port goes to b1 only for handlers that read it.
    auto readsPort = [&](PEOp pe) {
      for (PEInfo &info : pes)
        if (info.pe == pe && info.push) {
          bool reads = false;
          info.push.walk([&](med::ArgOp arg) {
            reads |= arg.getName() == "port" && !arg.getResult().use_empty();
          });
          return reads;
        }
      return false;
    };
    // The cross-stage sends this stage makes (forwards' indexes).
    std::set<unsigned> forwardsOut;
    auto gotoEndpoint = [&](const Endpoint &dest) {
      if (dest.sink >= 0) {
        a("immed[b1, " + std::to_string(dest.sink) + "]");
        a("br[@to_sink]");
        return;
      }
      if (L.staged && stageOfPE(dest.pe) != st) {
        unsigned d = forwardOf(dest);
        forwardsOut.insert(d);
        a("br[@forward" + std::to_string(d) + "]", "to a later stage");
        return;
      }
      if (readsPort(dest.pe))
        a("immed[b1, " + std::to_string(dest.port) + "]", "input port");
      a("br[@" + entryOf(dest.pe) + "]");
    };
    // A copy of the packet (buffer a0, info memory in local memory) for
    // every destination of `f` after the first, parked in its slot; then on
    // to the first destination.
    unsigned clones = 0;
    auto emitFanOut = [&](const FanOut &f) {
      for (size_t i = 1; i < f.dests.size(); ++i) {
        std::string slot =
            "*l$index0[" + std::to_string(slotWord(f.firstSlot + i - 1)) + "]";
        std::string l = "copy" + std::to_string(clones++);
        a.label(l + "_buffer");
        a("scratch[get, $0, " + std::to_string(copyRing) +
              ", 0, 1], ctx_swap[s3]",
          "a copy for destination " + std::to_string(i + 1) + " of " +
              std::to_string(f.dests.size()));
        a("alu[a15, --, b, $0]");
        a("beq[@" + l + "_buffer]", "no free buffer yet");
        a("alu[" + slot + ", --, b, a15]", "parked");
        // A destination before this one may replace the packet
        // (exbuf_create changes the length and wire registers): the copy
        // keeps its own in its buffer's tail.
        if (pool.tail) {
          a("alu[$$0, --, b, b0]");
          a("alu[$$1, --, b, a1]");
          a("immed[b15, " + hex(pool.bytes) + "]");
          a("alu[a15, a15, +, b15]");
          a("dram[write, $$0, a15, 0, 1], ctx_swap[s3]", "its length and wire");
          a("alu[a15, --, b, " + slot + "]");
        }
        if (layout.infoUsed && infoWords) {
          for (unsigned w = 0; w < infoWords; ++w)
            a("alu[$$" + std::to_string(w) + ", --, b, *l$index1[" +
              std::to_string(w) + "]]");
          a("alu[a15, a15, -, " + std::to_string(infoBytes) + "]");
          a("dram[write, $$0, a15, 0, " + std::to_string(infoWords / 2) +
                "], ctx_swap[s3]",
            "its info memory");
        }
        a("immed[b15, 0]", "the packet, 64 bytes at a time");
        a.label(l + "_loop");
        a("alu[a15, a0, +, b15]");
        a("dram[read, $$0, a15, 0, 8], ctx_swap[s3]");
        for (unsigned w = 0; w < 16; ++w)
          a("alu[$$" + std::to_string(w) + ", --, b, $$" + std::to_string(w) +
            "]");
        a("alu[a15, b15, +, " + slot + "]");
        a("dram[write, $$0, a15, 0, 8], ctx_swap[s3]");
        a("alu[b15, b15, +, 64]");
        a("alu[a15, --, b, b0]");
        a("alu[--, a15, -, b15]");
        a("bhi[@" + l + "_loop]");
      }
      gotoEndpoint(f.dests.front());
    };
    // The source's destinations; with several sources, the receive port
    // (status bits 15:8) says which.
    auto dispatch = [&](size_t k) {
      if (sourceFanOut[k] >= 0)
        emitFanOut(fanOuts[sourceFanOut[k]]);
      else
        gotoEndpoint(fromSources[k].front());
    };
    if (L.staged && st > 0) {
      // A later stage: a packet for one of its NetPEs, or one passed on.
      a("br_bset[$3, 10, @pass_on]", "a transmit entry");
      a("alu_shf[a15, 0xff, and, $3, >>8]", "the NetPE input it goes to");
      for (size_t d = 0; d < forwards.size(); ++d)
        if (stageOfPE(forwards[d].pe) == st) {
          a("alu[--, a15, -, " + std::to_string(d) + "]");
          a("beq[@forward_in" + std::to_string(d) + "]");
        }
      a("br[@pass_on]", "for a later stage");
    } else if (fromSources.size() > 1) {
      a("alu_shf[a15, 0xff, and, $3, >>8]", "the receive port: the source");
      for (size_t k = 1; k < fromSources.size(); ++k) {
        a("alu[--, a15, -, " + std::to_string(k) + "]");
        a("beq[@source" + std::to_string(k) + "]");
      }
    }
    for (size_t k = 0; k < fromSources.size() && !(L.staged && st > 0); ++k) {
      if (k)
        a.label("source" + std::to_string(k));
      dispatch(k);
    }

    // Each NetPE: its entry (header prefetch) and its handler.
    std::vector<MEReport> reports;
    bool anyUnconnected = false;
    MEReport handlerReport;
    handlerReport.me = handlerME;
    handlerReport.controlStore = options.machine.controlStore;
    std::string roles;
    for (PEInfo &info : pes) {
      if (!here(info))
        continue;
      // The NetPE's lines, for AppLayout::codeRanges.
      size_t firstLine = section.lines.size();
      roles += (roles.empty() ? "" : ", ") + info.pe.getSymName().str();
      auto emitFunc = [&](med::FuncOp func, const MEHandlerInfo &hinfo,
                          const std::string &entry,
                          ExitLabels exits) -> LogicalResult {
        AllocationOptions alloc;
        alloc.firstFreeDramXfer = hinfo.headerBytes / 4;
        alloc.spillSlots = spillSlots;
        Allocation allocation;
        if (failed(allocateRegisters(func, alloc, allocation)))
          return failure();
        // Record the allocation in the IR (-emit=me shows it).
        for (auto &[value, reg] : allocation.registers)
          if (Operation *def = value.getDefiningOp())
            def->setAttr("reg", StringAttr::get(ctx, reg.name()));
        EmitStats stats;
        if (failed(emitHandler(func, allocation, exits, entry, section, stats)))
          return failure();
        handlerReport.spills += allocation.spills;
        handlerReport.bankMoves += stats.bankMoves;
        return success();
      };
      ExitLabels exits;
      exits.pe = info.index;
      exits.dropCounter = counterOf(info.index, 2);
      exits.stateWord = stageStateful ? stateWord : -1;
      exits.sendCopy = [&, peName = info.pe.getSymName().str()](
                           unsigned port, CodeSection &into,
                           std::string &error) {
        auto it = outputs.find({peName, port});
        if (it == outputs.end() || it->second.size() != 1 ||
            it->second.front().sink < 0) {
          error = "the microengine back end sends a copy (pkt.senddup) only "
                  "through a port connected to one sink (NetPE '" +
                  peName + "')";
          return false;
        }
        LineBuilder c{into};
        std::string l = "dup" + std::to_string(clones++);
        std::string dup = "*l$index0[" + std::to_string(dupWord) + "]";
        c.label(l + "_buffer");
        c("scratch[get, $15, " + std::to_string(copyRing) +
              ", 0, 1], ctx_swap[s3]",
          "pkt.senddup: a copy of the packet");
        c("alu[a15, --, b, $15]");
        c("beq[@" + l + "_buffer]", "no free buffer yet");
        c("alu[" + dup + ", --, b, a15]");
        // Only $$12-$$15 and the temporaries: the handler's registers live.
        for (unsigned chunk = 0; layout.infoUsed && chunk < infoWords / 4;
             ++chunk) {
          for (unsigned w = 0; w < 4; ++w)
            c("alu[$$" + std::to_string(pktReadXfer + w) +
              ", --, b, *l$index1[" + std::to_string(4 * chunk + w) + "]]");
          c("alu[a15, " + dup + ", -, " +
            std::to_string(infoBytes - 16 * chunk) + "]");
          c("dram[write, $$" + std::to_string(pktReadXfer) +
            ", a15, 0, 2], ctx_swap[s3]");
        }
        c("immed[b15, 0]");
        c.label(l + "_loop");
        c("alu[a15, a0, +, b15]");
        c("dram[read, $$" + std::to_string(pktReadXfer) +
          ", a15, 0, 2], ctx_swap[s3]");
        for (unsigned w = 0; w < 4; ++w)
          c("alu[$$" + std::to_string(pktReadXfer + w) + ", --, b, $$" +
            std::to_string(pktReadXfer + w) + "]");
        c("alu[a15, b15, +, " + dup + "]");
        c("dram[write, $$" + std::to_string(pktReadXfer) +
          ", a15, 0, 2], ctx_swap[s3]");
        c("alu[b15, b15, +, 16]");
        c("alu[a15, --, b, b0]");
        c("alu[--, a15, -, b15]");
        c("bhi[@" + l + "_loop]");
        c("alu[$0, --, b, " + dup + "]");
        c("alu[$1, --, b, b0]");
        c("alu[$2, --, b, a1]");
        c("alu[$3, --, b, " + std::to_string(it->second.front().sink) + "]",
          "the sink");
        c("alu[$4, --, b, b2]");
        std::string held = "*l$index0[" + std::to_string(heldWord) + "]";
        c("alu[--, --, b, " + held + "]");
        c("bne[@" + l + "_put]");
        c("ctx_arb[s2]", "transmit token, held for the packet's copies");
        c("alu[" + held + ", --, b, 1]");
        c.label(l + "_put");
        std::string ring = replicaRing(c, Layout::txRing0);
        c("scratch[put, $0, " + ring + ", 0, " + std::to_string(entryWords) +
          "], ctx_swap[s5]");
        LineBuilder counted{into};
        countUp(counted, counterOf(info.index, 1), "sent");
        return true;
      };
      std::string tag = "pe" + std::to_string(info.index);
      exits.send = [&, tag](unsigned port) {
        return tag + "_out" + std::to_string(port);
      };
      if (info.push) {
        a.label(tag + "_entry");
        countUp(a, counterOf(info.index, 0), "a run of " + tag);
        if (unsigned bytes = info.pushInfo.headerBytes)
          a("dram[read, $$0, a0, 0, " + std::to_string(bytes / 8) +
                "], ctx_swap[s4]",
            "the header: bytes 0-" + std::to_string(bytes - 1));
        // With fan-out, every dropped copy is an event (the host cannot
        // tell a dropped copy from the packet's other outputs).
        exits.drop = fanOut ? tag + "_drop" : "drop";
        exits.dropLogged = tag + "_drop";
        exits.raise = "raise";
        if (failed(emitFunc(info.push, info.pushInfo, tag + "_push", exits)))
          return failure();
      }
      if (info.init) {
        std::string name = "init_" + std::to_string(info.index);
        exits.drop = exits.dropLogged = name + "_done";
        exits.raise = name + "_raise";
        exits.stateWord = -1; // before the tokens start: alone anyway
        exits.dropCounter = 0;
        if (failed(emitFunc(info.init, info.initInfo, name, exits)))
          return failure();
      }
      // The NetPE's output ports.
      for (PortOp port : info.pe.getBodyBlock()->getOps<PortOp>()) {
        if (port.getKind() != PortKind::PushOutput)
          continue;
        unsigned number = info.pe.getPortNumber(port);
        a.label(tag + "_out" + std::to_string(number));
        countUp(a, counterOf(info.index, 1), "sent");
        auto it = outputs.find({info.pe.getSymName().str(), number});
        if (it == outputs.end()) {
          anyUnconnected = true;
          a("immed[a15, " + hex(info.index | (3u << 16)) + "]",
            "unconnected port " + port.getSymName().str());
          a("immed[b15, 0]");
          a("br[@unconnected]");
          continue;
        }
        if (it->second.size() > 1)
          emitFanOut(fanOuts[fanOutOf[{info.pe.getSymName().str(), number}]]);
        else
          gotoEndpoint(it->second.front());
      }
      if ((fanOut || info.pushInfo.logsDrops) && info.push) {
        a.label(tag + "_drop");
        a("immed[a15, " + std::to_string(info.index) + "]", "a copy dropped");
        a("immed[b15, 0]");
        a("immed[a4, " + std::to_string(unsigned(EventKind::Drop)) + "]");
        a("br[@log_event]");
      }
      if (info.init) {
        // An exception in init: log it, go on with the next init.
        std::string name = "init_" + std::to_string(info.index);
        a.label(name + "_raise");
        a("immed[b2, 0xffffffff]", "no packet");
        a("immed[a4, 1]", "EventKind::Exception");
        a("br[@log_event]");
        (void)name;
      }
      for (size_t i = firstLine; i < section.lines.size(); ++i)
        section.lines[i].owner = static_cast<int>(info.index);
    }
    handlerReport.role = roles.empty() ? "no NetPE" : roles;

    // Leaving: to a sink (b1 = the sink), dropped, or an exception logged.
    // Info memory goes with the packet: the 64 bytes before its buffer.
    auto infoOut = [&] {
      if (!layout.infoUsed || !infoWords)
        return;
      for (unsigned w = 0; w < infoWords; ++w)
        a("alu[$$" + std::to_string(w) + ", --, b, *l$index1[" +
              std::to_string(w) + "]]",
          w == 0 ? "info memory before the buffer" : "");
      a("alu[a15, a0, -, " + std::to_string(infoBytes) + "]");
      a("dram[write, $$0, a15, 0, " + std::to_string(infoWords / 2) +
        "], ctx_swap[s6]");
    };
    // A pipeline: the entry in $0.. onto the ring after this stage, in
    // packet order: the put token among this ME's contexts, or with
    // replicas the packet's number against the stage's next-out word.
    std::string number = "*l$index0[" + std::to_string(numberWord) + "]";
    unsigned puts = 0;
    auto putNext = [&] {
      if (mes == 1) {
        a.orderedPut(nextRing, "s5", "in packet order", workWords);
        return;
      }
      std::string l = "put_next" + std::to_string(puts++);
      std::string word = hex(Layout::nextOut0 + 4 * st);
      a.label(l + "_wait");
      a("scratch[read, $8, " + word + ", 0, 1], ctx_swap[s5]",
        "the number of the stage's next packet out");
      a("alu[a15, --, b, " + number + "]");
      a("alu[--, a15, -, $8]");
      a("beq[@" + l + "]");
      a("ctx_arb[voluntary]", "an earlier packet first");
      a("br[@" + l + "_wait]");
      a.label(l);
      a("scratch[put, $0, " + nextRing + ", 0, " + std::to_string(workWords) +
        "], ctx_swap[s5]");
      a("immed[$8, 0x10000]");
      a("scratch[add, $8, " + word + ", 0, 1], ctx_swap[s5]",
        "the next packet's turn");
    };
    // A pipeline's entry from $3 on: the packet's number | `status` (a15
    // holds other bits to or in when `withA15`), the tag, the arrival time.
    auto stagedEntry = [&](uint32_t status, bool withA15, bool times) {
      if (withA15)
        a("alu[a15, a15, or, " + number + "]");
      else
        a("alu[a15, --, b, " + number + "]", "the packet's number");
      a("alu[$3, a15, or, " + hex(status) + "]");
      a("alu[$4, --, b, b2]", "tag");
      if (workWords > entryWords) {
        if (times) {
          a("alu[$5, --, b, *l$index0[" + std::to_string(timeWord) + "]]",
            "arrival time");
          a("alu[$6, --, b, *l$index0[" + std::to_string(timeWord + 1) + "]]");
        } else {
          a("immed[$5, 0]");
          a("immed[$6, 0]");
        }
      }
      putNext();
      a("br[@work_loop]");
    };
    a.label("to_sink");
    // In a pipeline the packet's state accesses are over when it leaves
    // its NetPEs: the next packet may start its own while this one's info
    // memory and entry are written.
    if (L.staged)
      passState();
    infoOut();
    a("alu[$0, --, b, a0]");
    a("alu[$1, --, b, b0]");
    a("alu[$2, --, b, a1]");
    if (L.staged) {
      a("alu[a15, --, b, b1]", "the sink");
      stagedEntry(Layout::finalEntry, true, false);
    } else if (L.multi && !fanOut)
      a("alu[$3, b1, or, " + hex(Layout::lastEntry) + "]",
        "the sink, the packet's last entry");
    else
      a("alu[$3, --, b, b1]", "the sink: its transmit port");
    a("alu[$4, --, b, b2]", "tag");
    std::string txRingOperand = replicaRing(a, Layout::txRing0);
    std::string held = "*l$index0[" + std::to_string(heldWord) + "]";
    // The transmit entry in $0.. onto `ring`, the transmit token taken first
    // unless the packet holds it already.
    auto heldPut = [&](const std::string &ring, const std::string &label) {
      a("alu[--, --, b, " + held + "]");
      a("bne[@" + label + "]");
      a("ctx_arb[s2]", "transmit token, held for the packet's copies");
      a("alu[" + held + ", --, b, 1]");
      a.label(label);
      a("scratch[put, $0, " + ring + ", 0, " + std::to_string(entryWords) +
        "], ctx_swap[s5]");
    };
    if (fanOut) {
      // The packet takes the transmit token at its first output and keeps
      // it until its last copy is done, so that every sink sees the packets
      // in order.
      heldPut(txRingOperand, "put_held");
      a("br[@packet_end]");
    } else {
      a.orderedPut(txRingOperand, "s5", "transmit token");
      passState();
      a("br[@work_loop]");
    }
    if (anyUnconnected) {
      a.label("unconnected");
      a("immed[a4, 3]", "EventKind::Unconnected");
      a("br[@log_event]");
    }
    a.label("raise");
    a("immed[a4, 1]", "EventKind::Exception");
    // log_event: [tag b2, kind a4, pe | kind << 16 in a15, location b15].
    a.label("log_event");
    a("immed[$0, 1]");
    a("immed[a3, " + hex(eventCountAddress) + "]");
    a("sram[test_and_add, $0, a3, 0, 1], ctx_swap[s6]", "count the event");
    a("immed[b3, " + std::to_string(eventCapacity) + "]");
    a("alu[--, $0, -, b3]");
    a("bcc[@event_done]", "the log is full: the count says so");
    a("alu_shf[a3, --, b, $0, <<4]", "4 words an event");
    a("immed[b3, " + hex(eventLogAddress) + "]");
    a("alu[a3, a3, +, b3]");
    a("alu[$0, --, b, b2]");
    a("alu[$1, --, b, a4]");
    a("alu[$2, --, b, a15]");
    a("alu[$3, --, b, b15]");
    a("sram[write, $0, a3, 0, 4], ctx_swap[s6]");
    a.label("event_done");
    if (!inits.empty()) {
      a("alu[--, b2, +, 1]", "an event of an init handler?");
      a("bne[@drop]");
    }
    // An event of an init handler: back to the next one.
    for (auto &[info, name] : inits) {
      a("alu[b3, a15, and, 0xffff]", "the NetPE of the event");
      a("alu[--, b3, -, " + std::to_string(info->index) + "]");
      a("beq[@" + name + "_done]");
    }
    if (!inits.empty())
      a("br[@start_tokens]");
    a.label("drop");
    a("alu[$0, --, b, a0]");
    if (L.staged) {
      // Through the later stages to the transmit ME, which frees it.
      passState();
      a("immed[$1, 0]");
      a("immed[$2, 0]");
      stagedEntry(Layout::finalEntry | Layout::freeOnly, false, false);
    }
    if (L.multi) {
      // A buffer of the free ring goes back through the transmit ME, in
      // packet order (Layout::freeOnly).
      if (fanOut) {
        a("immed[b15, " + hex(pool.copyPoolBase()) + "]");
        a("alu[--, a0, -, b15]");
        a("bcc[@drop_copy]", "a buffer of the copy pool");
      }
      a("immed[$1, 0]");
      a("immed[$2, 0]");
      a("immed[$3, " +
            hex(Layout::freeOnly | (fanOut ? 0 : Layout::lastEntry)) + "]",
        "only free the buffer");
      a("alu[$4, --, b, b2]");
      std::string ring = replicaRing(a, Layout::txRing0);
      if (fanOut) {
        heldPut(ring, "drop_held");
        a("br[@packet_end]");
        a.label("drop_copy");
        a("scratch[put, $0, " + std::to_string(copyRing) +
          ", 0, 1], ctx_swap[s5]");
      } else {
        a.orderedPut(ring, "s5", "transmit token");
        passState();
        a("br[@work_loop]");
      }
    }
    if (fanOut) {
      if (!L.multi)
        freeBuffer(a, pool, copyBuffers, "drop_free", "s5", "packet_end");
      // The end of a copy's path: the parked copies of the most downstream
      // port first, then the transmit token moves on.
      a.label("packet_end");
      std::vector<const FanOut *> byOrder;
      for (const FanOut &f : fanOuts)
        byOrder.push_back(&f);
      llvm::sort(byOrder, [](const FanOut *x, const FanOut *y) {
        return x->order != y->order ? x->order > y->order
                                    : x->firstSlot < y->firstSlot;
      });
      for (const FanOut *f : byOrder)
        for (size_t i = 1; i < f->dests.size(); ++i) {
          unsigned slot = f->firstSlot + i - 1;
          a("alu[--, --, b, *l$index0[" + std::to_string(slotWord(slot)) +
            "]]");
          a("bne[@resume" + std::to_string(slot) + "]");
        }
      a("alu[--, --, b, " + held + "]");
      a("bne[@packet_pass]");
      a("ctx_arb[s2]", "keep the transmit token moving");
      a.label("packet_pass");
      if (L.multi) {
        a("immed[$0, " + hex(Layout::endOfPacket) + "]",
          "the end of the packet's entries");
        for (unsigned w = 1; w < entryWords; ++w)
          a("immed[$" + std::to_string(w) + ", 0]");
        std::string ring = replicaRing(a, Layout::txRing0);
        a("scratch[put, $0, " + ring + ", 0, " + std::to_string(entryWords) +
          "], ctx_swap[s5]");
      }
      a("alu[" + held + ", --, b, 0]");
      a("local_csr_wr[same_me_signal, " + hex(0x80 | (2 << 3)) + "]");
      passState();
      a("br[@work_loop]");
      for (const FanOut *f : byOrder)
        for (size_t i = 1; i < f->dests.size(); ++i) {
          unsigned slot = f->firstSlot + i - 1;
          std::string word =
              "*l$index0[" + std::to_string(slotWord(slot)) + "]";
          a.label("resume" + std::to_string(slot));
          a("alu[a0, --, b, " + word + "]", "a parked copy goes on");
          a("alu[" + word + ", --, b, 0]");
          if (pool.tail) {
            a("immed[b15, " + hex(pool.bytes) + "]");
            a("alu[a15, a0, +, b15]");
            a("dram[read, $$0, a15, 0, 1], ctx_swap[s3]",
              "its length and wire");
            a("alu[b0, --, b, $$0]");
            a("alu[a1, --, b, $$1]");
          }
          if (layout.infoUsed && infoWords) {
            a("alu[a15, a0, -, " + std::to_string(infoBytes) + "]");
            a("dram[read, $$0, a15, 0, " + std::to_string(infoWords / 2) +
              "], ctx_swap[s3]");
            for (unsigned w = 0; w < infoWords; ++w)
              a("alu[*l$index1[" + std::to_string(w) + "], --, b, $$" +
                std::to_string(w) + "]");
          }
          gotoEndpoint(f->dests[i]);
        }
    } else if (!L.multi && !L.staged) {
      a("scratch[put, $0, " + std::to_string(freeRing) +
        ", 0, 1], sig_done[s5]");
      a("ctx_arb[s2]", "keep the transmit token moving");
      a("local_csr_wr[same_me_signal, " + hex(0x80 | (2 << 3)) + "]");
      a("ctx_arb[s5]");
      passState();
      a("br[@work_loop]");
    }
    a.label("work_end");
    a("immed[$0, 0xffffffff]", "end marker");
    if (L.staged) {
      // The first context to take the marker passes it on after the
      // stage's packets (it is numbered after them); it goes back on this
      // stage's ring with status bit 1, for the next context, which stops.
      a("br_bset[$3, 1, @work_end_passed]");
      for (unsigned w = 1; w < workWords; ++w)
        a(w == 3 ? "alu[$3, --, b, $3]"
                 : "immed[$" + std::to_string(w) + ", 0]",
          w == 3 ? "its number" : "");
      putNext();
      a("immed[$0, 0xffffffff]");
      a.label("work_end_passed");
      for (unsigned w = 1; w < workWords; ++w)
        a("immed[$" + std::to_string(w) + ", " + (w == 3 ? "3" : "0") + "]");
      a("scratch[put, $0, " + stageRing + ", 0, " + std::to_string(workWords) +
        "], ctx_swap[s5]");
      a("ctx_arb[kill]");
      // Sends to a later stage: the packet, its info memory and arrival
      // time onto the next ring, naming the NetPE input.
      for (unsigned d : forwardsOut) {
        a.label("forward" + std::to_string(d));
        passState();
        infoOut();
        a("alu[$0, --, b, a0]");
        a("alu[$1, --, b, b0]");
        a("alu[$2, --, b, a1]");
        stagedEntry(d << 8, false, true);
      }
      // Packets for a later stage, and transmit entries, go on as they are.
      if (st > 0) {
        a.label("pass_on");
        for (unsigned w = 0; w < workWords; ++w)
          a("alu[$" + std::to_string(w) + ", --, b, $" + std::to_string(w) +
            "]");
        passState();
        putNext();
        a("br[@work_loop]");
      }
      // A packet from an earlier stage: its info memory, then its NetPE.
      for (size_t d = 0; d < forwards.size(); ++d) {
        if (st == 0 || stageOfPE(forwards[d].pe) != st)
          continue;
        a.label("forward_in" + std::to_string(d));
        if (layout.infoUsed && infoWords) {
          a("alu[a15, a0, -, " + std::to_string(infoBytes) + "]");
          a("dram[read, $$0, a15, 0, " + std::to_string(infoWords / 2) +
                "], ctx_swap[s3]",
            "its info memory");
          for (unsigned w = 0; w < infoWords; ++w)
            a("alu[*l$index1[" + std::to_string(w) + "], --, b, $$" +
              std::to_string(w) + "]");
        }
        gotoEndpoint(forwards[d]);
      }
    } else if (L.multi) {
      // The first context to take the marker puts one on the transmit ring
      // after the replica's packets (for the transmit ME, whose turn may
      // come here); the marker goes back on the work ring, for the next
      // context, with status bit 1 saying so.
      a("br_bset[$3, 1, @work_end_passed]");
      for (unsigned w = 1; w < entryWords; ++w)
        a("immed[$" + std::to_string(w) + ", " +
          (w == 3 ? hex(Layout::freeOnly) : std::string("0")) + "]");
      a.orderedPut(replicaRing(a, Layout::txRing0), "s5",
                   "the end, after this replica's packets");
      a("immed[$0, 0xffffffff]");
      a.label("work_end_passed");
      unsigned words = timestamps ? timedEntryWords : entryWords;
      for (unsigned w = 1; w < words; ++w)
        a("immed[$" + std::to_string(w) + ", " + (w == 3 ? "3" : "0") + "]");
      std::string ring = replicaRing(a, Layout::workRing0);
      a("scratch[put, $0, " + ring + ", 0, " + std::to_string(words) +
        "], ctx_swap[s5]");
    } else {
      a.orderedPut(txRing, "s5");
    }
    if (!L.staged)
      a("ctx_arb[kill]");
    if (!watchdog && handlerReport.spills == 0 && !layout.infoUsed && !fanOut &&
        !stageStateful && !timestamps && !L.staged)
      section.lines.erase(section.lines.begin(), section.lines.begin() + 4);
    removeBranchesToNext(section);
    handlerReport.instructions = section.lines.size();
    // Each NetPE's code, on every ME of the section.
    for (size_t i = 0; i < section.lines.size();) {
      size_t end = i + 1;
      while (end < section.lines.size() &&
             section.lines[end].owner == section.lines[i].owner)
        ++end;
      if (section.lines[i].owner >= 0)
        for (unsigned me = 0; me < 32; ++me)
          if (section.meMask & (1u << me))
            layout.codeRanges.push_back({unsigned(section.lines[i].owner), me,
                                         uint32_t(i), uint32_t(end)});
      i = end;
    }
    program.code.push_back(std::move(section));
    // One report line per ME of the section.
    for (unsigned k = 0; k < mes; ++k) {
      handlerReport.me = firstME + k;
      stageReports.push_back(handlerReport);
    }
  }

  if (L.multi) {
    orderedTransmitStage(program, L, pool, copyBuffers);
    removeBranchesToNext(program.code.back());
  } else if (L.staged) {
    transmitStage(program, pool, 0, L.txME(), Layout::stagedTxRing, workWords);
  } else {
    transmitStage(program, pool, copyBuffers);
  }

  // Resources.
  for (const CodeSection &s : program.code)
    if (s.lines.size() > options.machine.controlStore)
      return app.emitError("the ME code does not fit: ")
             << s.title << " needs " << s.lines.size()
             << " instructions, the control store holds "
             << options.machine.controlStore << " (over by "
             << s.lines.size() - options.machine.controlStore << ")";
  MEReport rx, tx;
  rx.me = rxME;
  rx.role = "receive";
  rx.instructions = program.code[0].lines.size();
  tx.me = txME;
  tx.role = "transmit";
  tx.instructions = program.code.back().lines.size();
  rx.controlStore = tx.controlStore = options.machine.controlStore;
  // One line per ME.
  for (unsigned me = 0; me < L.rx; ++me) {
    rx.me = me;
    result.report.push_back(rx);
  }
  for (const MEReport &r : stageReports)
    result.report.push_back(r);
  tx.me = L.multi || L.staged ? L.txME() : txME;
  result.report.push_back(tx);

  std::string error;
  if (!program.encode(result.image, error))
    return app.emitError("internal error in the ME back end: ") << error;
  result.assembly = program.print();
  if (meIR)
    *meIR = std::move(meModule);
  return success();
}
