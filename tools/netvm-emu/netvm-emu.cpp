//===- netvm-emu.cpp - Run microengine programs on the emulator ----------===//
//
// Loads a microengine image (or assembles a .s file on the fly), feeds the
// media switch fabric from a pcap file, writes what the MEs transmit to
// another, and reports the statistics as a readable summary and as JSON.
// Faults stop the faulting ME with a report and make the exit status 1.
//
//===----------------------------------------------------------------------===//

#include "netvm/Emu/Emulator.h"
#include "netvm/Runtime/PacketIO.h"
#include "netvm/Target/ME/Assembler.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstring>
#include <unistd.h>
#include <optional>

namespace cl = llvm::cl;
using namespace netvm::me;

static cl::OptionCategory emuCategory("netvm-emu options");
static cl::opt<std::string> programFile(cl::Positional, cl::Required,
                                        cl::desc("<image or program.s>"),
                                        cl::cat(emuCategory));
static cl::opt<std::string> readFile("r", cl::desc("Receive packets from this pcap file"),
                                     cl::value_desc("in.pcap"),
                                     cl::cat(emuCategory));
static cl::opt<std::string> hexFile(
    "hex",
    cl::desc("Receive packets from a text file: one packet per line as "
             "hexadecimal bytes (as netvm-run --hex)"),
    cl::value_desc("packets.txt"), cl::cat(emuCategory));
static cl::opt<std::string> writeFile("w",
                                      cl::desc("Write transmitted packets to this pcap file"),
                                      cl::value_desc("out.pcap"),
                                      cl::cat(emuCategory));
// Registered as "emu-stats-json" and renamed in main(): LLVM's statistics
// own "stats-json" until then.
static cl::opt<std::string> statsJson(
    "emu-stats-json",
    cl::desc("Write the statistics as JSON to this file ('-': standard "
             "output, instead of the summary)"),
    cl::value_desc("file"), cl::cat(emuCategory));
static cl::opt<bool> quiet("q", cl::desc("No summary"), cl::cat(emuCategory));
static cl::opt<bool> dumpRegs("dump-regs",
                              cl::desc("Print every enabled context's "
                                       "registers after the run"),
                              cl::cat(emuCategory));
static cl::list<std::string>
    dumpMem("dump-mem",
            cl::desc("Print memory after the run: MEMORY:ADDRESS:LENGTH "
                     "(scratch, sram or dram; repeatable)"),
            cl::value_desc("mem:addr:len"), cl::cat(emuCategory));
static cl::opt<bool> hostTime("time",
                              cl::desc("Report host time and simulation speed "
                                       "on standard error"),
                              cl::cat(emuCategory));
static cl::opt<bool> progress(
    "progress",
    cl::desc("Show progress on standard error every 100M cycles (on a "
             "terminal it is shown anyway, on one updated line)"),
    cl::cat(emuCategory));

// The machine.
static cl::opt<unsigned> numMEs("mes", cl::desc("Microengines (default 8)"),
                                cl::init(8), cl::cat(emuCategory));
static cl::opt<unsigned> controlStore(
    "control-store",
    cl::desc("Control-store capacity in instructions (default 4096)"),
    cl::init(4096), cl::cat(emuCategory));
static cl::opt<double> clockMHz("clock-mhz",
                                cl::desc("ME clock in MHz (default 600)"),
                                cl::init(600), cl::cat(emuCategory));
static cl::opt<double> lineRate(
    "line-rate",
    cl::desc("Offer packets at this rate in Gbit/s, dropping those that "
             "find no free receive buffer (default 0: lossless, packets wait)"),
    cl::init(0), cl::cat(emuCategory));
static cl::opt<unsigned> rbufs("rbufs",
                               cl::desc("Receive buffer elements (default 16)"),
                               cl::init(16), cl::cat(emuCategory));
static cl::opt<uint64_t> maxCycles("max-cycles",
                                   cl::desc("Stop after this many cycles"),
                                   cl::init(0), cl::cat(emuCategory));
static cl::opt<unsigned> quantum(
    "quantum",
    cl::desc("Cycles each ME runs between exchanges of shared effects "
             "(default 16; at most the shortest memory latency)"),
    cl::init(16), cl::cat(emuCategory));
static cl::opt<std::string> ringOverflow(
    "ring-overflow",
    cl::desc("A put on a full scratch ring: fault (stop the ME, default) or "
             "drop (count it)"),
    cl::init("fault"), cl::cat(emuCategory));
static cl::list<std::string> latencies(
    "latency",
    cl::desc("Set a latency in cycles: UNIT=N with UNIT one of scratch, sram, "
             "dram, hash, rx, tx, nn, branch, swap (repeatable)"),
    cl::value_desc("unit=cycles"), cl::CommaSeparated, cl::cat(emuCategory));

static cl::list<std::string> controllerSettings(
    "controller",
    cl::desc("Set a memory controller's service: UNIT=CMD/BPC with UNIT one "
             "of scratch, sram, dram; CMD cycles a command plus one cycle per "
             "BPC bytes (BPC 0: no transfer time; 0/0: no queueing); "
             "repeatable"),
    cl::value_desc("unit=cmd/bpc"), cl::CommaSeparated, cl::cat(emuCategory));

static cl::opt<std::string> hostRelay(
    "host-relay",
    cl::desc("Attach host code that moves entries of WORDS words from scratch "
             "ring FROM to ring TO, and detaches after MARKERS (default 1) "
             "entries whose first word is 0xffffffff"),
    cl::value_desc("from:to:words[:markers]"), cl::cat(emuCategory));
static cl::opt<unsigned> hostPoll(
    "host-poll",
    cl::desc("Cycles the host relay waits between polls (default 1000)"),
    cl::init(1000), cl::cat(emuCategory));
static cl::opt<std::string> hostCost(
    "host-cost",
    cl::desc("Cost of a host crossing: CROSSING/WORD cycles (default "
             "300/9)"),
    cl::value_desc("crossing/word"), cl::cat(emuCategory));

namespace {
class PcapInput final : public PacketInput {
public:
  explicit PcapInput(std::unique_ptr<netvm::rt::PacketReader> reader)
      : reader(std::move(reader)) {}
  bool next(InputPacket &packet) override {
    netvm::rt::TracePacket trace;
    if (!reader->next(trace, error))
      return false;
    packet.bytes = std::move(trace.bytes);
    packet.wireLength = trace.wireLength;
    return true;
  }
  std::unique_ptr<netvm::rt::PacketReader> reader;
  std::string error;
};

class PcapOutput final : public PacketOutput {
public:
  PcapOutput(std::unique_ptr<netvm::rt::PcapWriter> writer, double clockMHz)
      : writer(std::move(writer)), clockMHz(clockMHz) {}
  void transmit(const uint8_t *bytes, size_t length, uint32_t wireLength,
                unsigned, uint64_t cycle) override {
    netvm::rt::TracePacket packet;
    packet.bytes.assign(bytes, bytes + length);
    packet.wireLength = wireLength;
    // The time the packet left, in emulated time.
    uint64_t us = uint64_t(double(cycle) / clockMHz);
    packet.seconds = uint32_t(us / 1000000);
    packet.microseconds = uint32_t(us % 1000000);
    writer->write(packet);
  }
  std::unique_ptr<netvm::rt::PcapWriter> writer;
  double clockMHz;
};
} // namespace

static bool configure(MachineConfig &config) {
  config.numMEs = numMEs;
  config.controlStore = controlStore;
  config.clockMHz = clockMHz;
  config.lineRateGbps = lineRate;
  config.rbufElements = std::max(1u, unsigned(rbufs));
  config.maxCycles = maxCycles;
  config.quantum = quantum;
  if (numMEs < 1 || numMEs > maxMEs) {
    llvm::errs() << "netvm-emu: --mes must be 1-" << maxMEs << "\n";
    return false;
  }
  if (clockMHz <= 0 || lineRate < 0) {
    llvm::errs() << "netvm-emu: the clock and line rate must be positive\n";
    return false;
  }
  if (ringOverflow == "fault")
    config.ringOverflow = RingOverflow::Fault;
  else if (ringOverflow == "drop")
    config.ringOverflow = RingOverflow::Drop;
  else {
    llvm::errs() << "netvm-emu: --ring-overflow is fault or drop\n";
    return false;
  }
  for (const std::string &setting : latencies) {
    size_t eq = setting.find('=');
    std::string unit = setting.substr(0, eq);
    unsigned long long value = 0;
    bool ok = eq != std::string::npos && eq + 1 < setting.size() &&
              !llvm::StringRef(setting).substr(eq + 1).getAsInteger(10, value) &&
              value < 100000;
    unsigned *field = unit == "scratch" ? &config.scratchLatency
                      : unit == "sram"  ? &config.sramLatency
                      : unit == "dram"  ? &config.dramLatency
                      : unit == "hash"  ? &config.hashLatency
                      : unit == "rx"    ? &config.rxLatency
                      : unit == "tx"    ? &config.txLatency
                      : unit == "nn"    ? &config.nnLatency
                      : unit == "branch" ? &config.branchPenalty
                      : unit == "swap"  ? &config.swapPenalty
                                        : nullptr;
    if (!ok || !field ||
        (value == 0 && unit != "branch" && unit != "swap" && unit != "nn")) {
      llvm::errs() << "netvm-emu: bad --latency '" << setting
                   << "' (UNIT=CYCLES, UNIT one of scratch, sram, dram, hash, "
                      "rx, tx, nn, branch, swap; memory latencies >= 1)\n";
      return false;
    }
    *field = unsigned(value);
  }
  if (!hostCost.empty()) {
    auto [crossing, word] = llvm::StringRef(hostCost).split('/');
    if (crossing.getAsInteger(10, config.hostCrossingCycles) ||
        word.getAsInteger(10, config.hostWordCycles)) {
      llvm::errs() << "netvm-emu: bad --host-cost '" << hostCost
                   << "' (CROSSING/WORD cycles)\n";
      return false;
    }
  }
  for (const std::string &setting : controllerSettings) {
    llvm::StringRef text(setting);
    auto [unit, rest] = text.split('=');
    auto [cmd, bpc] = rest.split('/');
    unsigned command = 0, rate = 0;
    unsigned *fields = unit == "scratch" ? &config.scratchCommandCycles
                       : unit == "sram"  ? &config.sramCommandCycles
                       : unit == "dram"  ? &config.dramCommandCycles
                                         : nullptr;
    if (!fields || cmd.getAsInteger(10, command) ||
        bpc.getAsInteger(10, rate) || command > 100000 || rate > 100000) {
      llvm::errs() << "netvm-emu: bad --controller '" << setting
                   << "' (UNIT=CMD/BPC, UNIT one of scratch, sram, dram)\n";
      return false;
    }
    unsigned *rates = unit == "scratch" ? &config.scratchBytesPerCycle
                      : unit == "sram"  ? &config.sramBytesPerCycle
                                        : &config.dramBytesPerCycle;
    *fields = command;
    *rates = rate;
  }
  return true;
}

static double ratio(uint64_t part, uint64_t whole) {
  return whole ? double(part) / double(whole) : 0.0;
}

static llvm::json::Value memoryJson(const MemoryStats &m, uint64_t cycles) {
  return llvm::json::Object{
      {"reads", int64_t(m.reads)},
      {"writes", int64_t(m.writes)},
      {"atomics", int64_t(m.atomics)},
      {"bytes_read", int64_t(m.bytesRead)},
      {"bytes_written", int64_t(m.bytesWritten)},
      {"commands", int64_t(m.commands)},
      {"busy_cycles", int64_t(m.busyCycles)},
      {"busy", ratio(m.busyCycles, cycles)},
      {"queue_cycles", int64_t(m.queueCycles)},
      {"mean_queue_depth", ratio(m.queueCycles + m.busyCycles, cycles)},
      {"max_queue_depth", int64_t(m.maxQueue)}};
}

static llvm::json::Value statsToJson(const Stats &s) {
  using llvm::json::Array;
  using llvm::json::Object;
  double seconds = s.seconds();
  Array mes;
  for (size_t i = 0; i < s.mes.size(); ++i) {
    const MEStats &m = s.mes[i];
    if (!m.loaded)
      continue;
    Object idle;
    for (unsigned r = 0; r < StallCount; ++r)
      idle[stallReasonName(StallReason(r))] = int64_t(m.idleCycles[r]);
    Array threads;
    for (size_t c = 0; c < m.threads.size(); ++c) {
      const ThreadStats &t = m.threads[c];
      if (!t.enabled)
        continue;
      threads.push_back(Object{{"ctx", int64_t(c)},
                               {"instructions", int64_t(t.instructions)},
                               {"exec_cycles", int64_t(t.execCycles)},
                               {"ready_cycles", int64_t(t.readyCycles)},
                               {"wait_cycles", int64_t(t.waitCycles)},
                               {"swaps", int64_t(t.swaps)},
                               {"utilisation", ratio(t.execCycles, s.cycles)}});
    }
    mes.push_back(Object{{"me", int64_t(i)},
                         {"instructions", int64_t(m.instructions)},
                         {"busy_cycles", int64_t(m.busyCycles)},
                         {"utilisation", ratio(m.busyCycles, s.cycles)},
                         {"branch_penalty_cycles", int64_t(m.branchPenaltyCycles)},
                         {"swap_cycles", int64_t(m.swapCycles)},
                         {"context_swaps", int64_t(m.contextSwaps)},
                         {"idle_cycles", std::move(idle)},
                         {"threads", std::move(threads)}});
  }
  Array rings;
  for (unsigned r = 0; r < 16; ++r) {
    const RingStats &ring = s.rings[r];
    if (!ring.configured)
      continue;
    rings.push_back(Object{{"ring", int64_t(r)},
                           {"size_words", int64_t(ring.sizeWords)},
                           {"puts", int64_t(ring.puts)},
                           {"gets", int64_t(ring.gets)},
                           {"empty_gets", int64_t(ring.emptyGets)},
                           {"overflows", int64_t(ring.overflows)},
                           {"max_occupancy", int64_t(ring.maxOccupancy)},
                           {"final_occupancy", int64_t(ring.finalOccupancy)}});
  }
  Array faults;
  for (const Fault &f : s.faults)
    faults.push_back(Object{{"me", int64_t(f.me)},
                            {"ctx", int64_t(f.ctx)},
                            {"pc", int64_t(f.pc)},
                            {"instruction", f.instruction},
                            {"reason", f.reason},
                            {"cycle", int64_t(f.cycle)}});
  return Object{
      {"cycles", int64_t(s.cycles)},
      {"clock_mhz", s.clockMHz},
      {"seconds", seconds},
      {"stop_reason", s.stopReason},
      {"packets",
       Object{{"offered", int64_t(s.packetsOffered)},
              {"received", int64_t(s.packetsReceived)},
              {"dropped", int64_t(s.packetsDropped)},
              {"truncated", int64_t(s.packetsTruncated)},
              {"sent", int64_t(s.packetsSent)},
              {"bytes_received", int64_t(s.bytesReceived)},
              {"bytes_sent", int64_t(s.bytesSent)},
              {"sent_per_second", seconds > 0 ? s.packetsSent / seconds : 0.0},
              {"sent_gbps",
               seconds > 0 ? s.bytesSent * 8.0 / seconds / 1e9 : 0.0}}},
      {"mes", std::move(mes)},
      {"memory", Object{{"scratch", memoryJson(s.scratch, s.cycles)},
                        {"sram", memoryJson(s.sram, s.cycles)},
                        {"dram", memoryJson(s.dram, s.cycles)},
                        {"hash_ops", int64_t(s.hashOps)}}},
      {"rings", std::move(rings)},
      {"host", !s.hostAttached
                   ? llvm::json::Value(nullptr)
                   : Object{{"calls", int64_t(s.host.calls)},
                            {"crossings", int64_t(s.host.crossings)},
                            {"words", int64_t(s.host.words)},
                            {"busy_cycles", int64_t(s.host.busyCycles)},
                            {"busy", ratio(s.host.busyCycles, s.cycles)},
                            {"gets", int64_t(s.host.gets)},
                            {"puts", int64_t(s.host.puts)},
                            {"failed_gets", int64_t(s.host.failedGets)},
                            {"failed_puts", int64_t(s.host.failedPuts)},
                            {"overflows", int64_t(s.host.overflows)}}},
      {"faults", std::move(faults)}};
}

static void printSummary(llvm::raw_ostream &os, const Stats &s) {
  double seconds = s.seconds();
  os << "cycles: " << s.cycles << " ("
     << llvm::format("%.2f", seconds * 1e6) << " us at "
     << llvm::format("%g", s.clockMHz) << " MHz); " << s.stopReason << "\n";
  os << "packets: " << s.packetsOffered << " offered, " << s.packetsReceived
     << " received, " << s.packetsDropped << " dropped, " << s.packetsSent
     << " sent";
  if (seconds > 0)
    os << " (" << llvm::format("%.3f", s.packetsSent / seconds / 1e6)
       << " Mpps, " << llvm::format("%.3f", s.bytesSent * 8.0 / seconds / 1e9)
       << " Gbit/s)";
  os << "\n";
  for (size_t i = 0; i < s.mes.size(); ++i) {
    const MEStats &m = s.mes[i];
    if (!m.loaded)
      continue;
    os << "me" << i << ": " << m.instructions << " instructions, busy "
       << llvm::format("%.1f%%", 100 * ratio(m.busyCycles, s.cycles))
       << " (branch penalties " << m.branchPenaltyCycles << ", swaps "
       << m.swapCycles << "); idle";
    bool any = false;
    for (unsigned r = 0; r < StallCount; ++r)
      if (m.idleCycles[r]) {
        os << (any ? ", " : ": ") << stallReasonName(StallReason(r)) << " "
           << llvm::format("%.1f%%", 100 * ratio(m.idleCycles[r], s.cycles));
        any = true;
      }
    if (!any)
      os << " 0%";
    os << "\n";
    for (size_t c = 0; c < m.threads.size(); ++c) {
      const ThreadStats &t = m.threads[c];
      if (!t.enabled)
        continue;
      os << "  ctx" << c << ": " << t.instructions << " instructions, running "
         << llvm::format("%.1f%%", 100 * ratio(t.execCycles, s.cycles))
         << ", ready "
         << llvm::format("%.1f%%", 100 * ratio(t.readyCycles, s.cycles))
         << ", waiting "
         << llvm::format("%.1f%%", 100 * ratio(t.waitCycles, s.cycles))
         << "\n";
    }
  }
  auto memory = [&](const char *name, const MemoryStats &m) {
    if (m.reads || m.writes || m.atomics || m.commands)
      os << name << ": " << m.reads << " reads, " << m.writes << " writes, "
         << m.atomics << " atomics; controller busy "
         << llvm::format("%.1f%%", 100 * ratio(m.busyCycles, s.cycles))
         << ", queue depth mean "
         << llvm::format("%.2f", ratio(m.queueCycles + m.busyCycles, s.cycles))
         << " max " << m.maxQueue << ", " << m.queueCycles
         << " cycles queued\n";
  };
  memory("scratch", s.scratch);
  memory("sram", s.sram);
  memory("dram", s.dram);
  if (s.hashOps)
    os << "hash: " << s.hashOps << " commands\n";
  if (s.hostAttached)
    os << "host: " << s.host.calls << " calls, " << s.host.crossings
       << " crossings, " << s.host.words << " words, busy "
       << llvm::format("%.1f%%", 100 * ratio(s.host.busyCycles, s.cycles))
       << " (" << s.host.busyCycles << " cycles); " << s.host.gets
       << " gets, " << s.host.puts << " puts, " << s.host.failedGets
       << " failed gets, " << s.host.failedPuts << " failed puts, "
       << s.host.overflows << " overflows\n";
  for (unsigned r = 0; r < 16; ++r) {
    const RingStats &ring = s.rings[r];
    if (ring.configured)
      os << "ring " << r << ": " << ring.puts << " puts, " << ring.gets
         << " gets, " << ring.emptyGets << " empty gets, " << ring.overflows
         << " overflows, occupancy max " << ring.maxOccupancy << " of "
         << ring.sizeWords << "\n";
  }
}

static void printFault(const Fault &f) {
  llvm::errs() << "netvm-emu: fault: ME " << f.me << " context " << f.ctx
               << " pc " << f.pc << " cycle " << f.cycle << ": " << f.reason
               << "\n    " << f.instruction << "\n";
}

static bool parseDumpSpec(const std::string &spec, Memory &memory,
                          uint32_t &address, uint32_t &length) {
  llvm::SmallVector<llvm::StringRef, 3> parts;
  llvm::StringRef(spec).split(parts, ':');
  if (parts.size() != 3)
    return false;
  if (parts[0] == "scratch")
    memory = Memory::Scratch;
  else if (parts[0] == "sram")
    memory = Memory::Sram;
  else if (parts[0] == "dram")
    memory = Memory::Dram;
  else
    return false;
  return !parts[1].getAsInteger(0, address) &&
         !parts[2].getAsInteger(0, length) && length <= (1u << 20);
}

namespace {
/// The host code of --host-relay, on the C API of netvm/Emu/host.h: at each
/// poll it reads how many words ring `from` holds and moves whole entries
/// to ring `to`; an entry the destination has no room for waits for the
/// next poll.
struct Relay {
  unsigned from = 0, to = 0, words = 0, markers = 1;
  unsigned seenMarkers = 0;
  uint64_t poll = 1000;
  bool holding = false;
  uint32_t entry[16] = {};

  static uint64_t run(netvm_emu_host *host, void *user) {
    auto &r = *static_cast<Relay *>(user);
    int available = netvm_emu_host_ring_count(host, r.from);
    for (;;) {
      if (!r.holding) {
        if (available < int(r.words) ||
            netvm_emu_host_ring_get(host, r.from, r.entry, r.words) != 0)
          break;
        available -= int(r.words);
        r.holding = true;
      }
      if (netvm_emu_host_ring_put(host, r.to, r.entry, r.words) != 0)
        break;
      r.holding = false;
      if (r.entry[0] == 0xffffffffu && ++r.seenMarkers == r.markers)
        return 0; // detach
    }
    return r.poll;
  }
};

/// Progress on standard error: a line every 100M cycles (--progress), or on
/// a terminal one line rewritten at most 4 times a second.
struct Progress {
  const Emulator *emulator = nullptr;
  bool terminal = false, shown = false;
  std::chrono::steady_clock::time_point start, last;

  static void report(uint64_t cycle, void *user) {
    auto &p = *static_cast<Progress *>(user);
    auto now = std::chrono::steady_clock::now();
    if (p.terminal && now - p.last < std::chrono::milliseconds(250))
      return;
    p.last = now;
    const Stats &s = p.emulator->stats();
    double host = std::chrono::duration<double>(now - p.start).count();
    std::string line = "netvm-emu: " + std::to_string(cycle / 1000000) +
                       "M cycles, " + std::to_string(s.packetsReceived) +
                       " packets received, " + std::to_string(s.packetsSent) +
                       " sent";
    if (host > 0)
      line += ", " + std::to_string(uint64_t(cycle / host / 1e6)) +
              "M cycles/s";
    if (p.terminal) {
      llvm::errs() << "\r" << line << "\x1b[K";
      p.shown = true;
    } else {
      llvm::errs() << line << "\n";
    }
    llvm::errs().flush();
  }
  void end() {
    if (shown)
      llvm::errs() << "\r\x1b[K";
  }
};
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(emuCategory);
  if (cl::Option *llvmStats = cl::getRegisteredOptions().lookup("stats-json"))
    llvmStats->setArgStr("llvm-stats-json");
  statsJson.setArgStr("stats-json");
  cl::ParseCommandLineOptions(
      argc, argv,
      "netvm-emu - run microengine programs on the IXP-like emulator\n\n"
      "Examples:\n"
      "  netvm-emu examples/me/forward.s -r in.pcap -w out.pcap\n"
      "  netvm-emu prog.img -r in.pcap --stats-json=stats.json\n"
      "  netvm-emu test.s --dump-regs --dump-mem=scratch:0:64\n");
  MachineConfig config;
  if (!configure(config))
    return 1;

  // The program: an image, or assembly.
  std::vector<uint8_t> bytes;
  std::string error;
  if (!readFileBytes(programFile, bytes, error)) {
    llvm::errs() << "netvm-emu: " << error << "\n";
    return 1;
  }
  Image image;
  if (looksLikeImage(bytes.data(), bytes.size())) {
    if (!readImage(bytes.data(), bytes.size(), image, error)) {
      llvm::errs() << "netvm-emu: " << programFile << ": " << error << "\n";
      return 1;
    }
  } else {
    AssemblerOptions options;
    options.machine = config;
    std::vector<std::string> errors;
    if (!assemble(std::string_view(reinterpret_cast<const char *>(bytes.data()),
                                   bytes.size()),
                  programFile, options, image, errors)) {
      for (const std::string &message : errors)
        llvm::errs() << message << "\n";
      return 1;
    }
  }
  std::vector<std::tuple<Memory, uint32_t, uint32_t>> dumps;
  for (const std::string &spec : dumpMem) {
    Memory memory;
    uint32_t address, length;
    if (!parseDumpSpec(spec, memory, address, length)) {
      llvm::errs() << "netvm-emu: bad --dump-mem '" << spec
                   << "' (MEMORY:ADDRESS:LENGTH, e.g. scratch:0x100:64)\n";
      return 1;
    }
    dumps.emplace_back(memory, address, length);
  }

  Emulator emulator(config);
  if (!emulator.load(image, error)) {
    llvm::errs() << "netvm-emu: " << programFile << ": " << error << "\n";
    return 1;
  }
  std::optional<PcapInput> input;
  int linkType = 1; // DLT_EN10MB
  if (!readFile.empty() && !hexFile.empty()) {
    llvm::errs() << "netvm-emu: -r and --hex are exclusive\n";
    return 1;
  }
  if (!readFile.empty() || !hexFile.empty()) {
    bool hex = !hexFile.empty();
    auto reader =
        netvm::rt::PacketReader::open(hex ? hexFile : readFile, hex, error);
    if (!reader) {
      llvm::errs() << "netvm-emu: " << error << "\n";
      return 1;
    }
    linkType = reader->linkType();
    input.emplace(std::move(reader));
    emulator.setInput(&*input);
  }
  std::optional<PcapOutput> output;
  if (!writeFile.empty()) {
    auto writer = netvm::rt::PcapWriter::create(writeFile, linkType, error);
    if (!writer) {
      llvm::errs() << "netvm-emu: " << error << "\n";
      return 1;
    }
    output.emplace(std::move(writer), config.clockMHz);
    emulator.setOutput(&*output);
  }

  Relay relay;
  if (!hostRelay.empty()) {
    llvm::SmallVector<llvm::StringRef, 4> parts;
    llvm::StringRef(hostRelay).split(parts, ':');
    bool ok = parts.size() == 3 || parts.size() == 4;
    ok = ok && !parts[0].getAsInteger(10, relay.from) &&
         !parts[1].getAsInteger(10, relay.to) &&
         !parts[2].getAsInteger(10, relay.words) &&
         (parts.size() == 3 || !parts[3].getAsInteger(10, relay.markers)) &&
         relay.from < 16 && relay.to < 16 && relay.words >= 1 &&
         relay.words <= 16 && relay.markers >= 1;
    if (!ok) {
      llvm::errs() << "netvm-emu: bad --host-relay '" << hostRelay
                   << "' (FROM:TO:WORDS[:MARKERS], rings 0-15, 1-16 words)\n";
      return 1;
    }
    relay.poll = std::max(1u, unsigned(hostPoll));
    emulator.attachHost(Relay::run, &relay);
  }

  auto start = std::chrono::steady_clock::now();
  Progress meter;
  meter.emulator = &emulator;
  meter.terminal = ::isatty(2);
  meter.start = meter.last = start;
  bool showProgress = progress || meter.terminal;
  emulator.run(showProgress ? Progress::report : nullptr, &meter,
               !showProgress     ? 0
               : meter.terminal ? 10000000
                                 : 100000000);
  meter.end();
  double host = std::chrono::duration<double>(
                    std::chrono::steady_clock::now() - start)
                    .count();
  const Stats &stats = emulator.stats();
  if (input && !input->error.empty()) {
    llvm::errs() << "netvm-emu: " << (hexFile.empty() ? readFile : hexFile)
                 << ": " << input->error << "\n";
    return 1;
  }

  if (statsJson == "-") {
    llvm::outs() << llvm::formatv("{0:2}", statsToJson(stats)) << "\n";
  } else {
    if (!statsJson.empty()) {
      std::error_code ec;
      llvm::raw_fd_ostream os(statsJson, ec);
      if (ec) {
        llvm::errs() << "netvm-emu: cannot write '" << statsJson
                     << "': " << ec.message() << "\n";
        return 1;
      }
      os << llvm::formatv("{0:2}", statsToJson(stats)) << "\n";
    }
    if (!quiet)
      printSummary(llvm::outs(), stats);
  }
  if (dumpRegs)
    llvm::outs() << emulator.dumpRegisters();
  for (auto [memory, address, length] : dumps) {
    std::vector<uint8_t> data;
    if (!emulator.readMemory(memory, address, length, data)) {
      llvm::errs() << "netvm-emu: --dump-mem range outside "
                   << memoryName(memory) << "\n";
      return 1;
    }
    for (uint32_t i = 0; i < length; i += 16) {
      llvm::outs() << memoryName(memory) << " "
                   << llvm::format("0x%06x:", address + i);
      for (uint32_t k = i; k < length && k < i + 16; ++k)
        llvm::outs() << llvm::format(" %02x", data[k]);
      llvm::outs() << "\n";
    }
  }
  if (hostTime) {
    uint64_t instructions = 0, meCycles = 0;
    for (const MEStats &m : stats.mes)
      if (m.loaded) {
        instructions += m.instructions;
        meCycles += stats.cycles;
      }
    llvm::errs() << "host: " << llvm::format("%.3f", host) << " s, "
                 << llvm::format("%.1f", stats.cycles / host / 1e6)
                 << " M chip cycles/s, "
                 << llvm::format("%.1f", meCycles / host / 1e6)
                 << " M ME-cycles/s (loaded MEs), "
                 << llvm::format("%.1f", instructions / host / 1e6)
                 << " M instructions/s\n";
  }
  llvm::outs().flush(); // reports follow the summary
  for (const Fault &f : stats.faults)
    printFault(f);
  return stats.faults.empty() ? 0 : 1;
}
