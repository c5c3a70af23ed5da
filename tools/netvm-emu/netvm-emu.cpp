//===- netvm-emu.cpp - Run microengine programs on the emulator ----------===//
//
// Loads a microengine image (or assembles a .s file on the fly), feeds the
// media switch fabric from a pcap file, writes what the MEs transmit to
// another, and reports the statistics as a readable summary and as JSON.
// Faults stop the faulting ME with a report and make the exit status 1.
//
//===----------------------------------------------------------------------===//

#include "netvm/Driver/Driver.h"
#include "netvm/Target/ME/Assembler.h"
#include "netvm/emu/Emulator.h"
#include "netvm/emu/Options.h"
#include "netvm/emu/StatsJson.h"
#include "netvm/io/PacketIO.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <csignal>
#include <cstring>
#include <map>
#include <optional>
#include <unistd.h>

namespace cl = llvm::cl;
using namespace netvm::me;

static cl::OptionCategory emuCategory("netvm-emu options");
static cl::opt<std::string> programFile(cl::Positional, cl::Required,
                                        cl::desc("<image or program.s>"),
                                        cl::cat(emuCategory));
static cl::list<std::string>
    readFiles("r",
              cl::desc("Receive packets from this pcap file; repeated, the "
                       "k-th file feeds receive port k"),
              cl::value_desc("in.pcap"), cl::cat(emuCategory));
static cl::opt<std::string>
    hexFile("hex",
            cl::desc("Receive packets from a text file: one packet per line as "
                     "hexadecimal bytes (as netvm-run --hex)"),
            cl::value_desc("packets.txt"), cl::cat(emuCategory));
static cl::list<std::string>
    writeFiles("w",
               cl::desc("Write transmitted packets to this pcap file; "
                        "repeated, the k-th file takes transmit port k"),
               cl::value_desc("out.pcap"), cl::cat(emuCategory));
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
static cl::opt<bool>
    progress("progress",
             cl::desc("Show progress on standard error every 100M cycles (on a "
                      "terminal it is shown anyway, on one updated line)"),
             cl::cat(emuCategory));

// The machine: options of netvm/emu/Options.h, applied to the
// configuration by name, with the descriptions it gives. The value names are
// those the typed options showed in --help.
static const char *machineHelp(const char *name) {
  return findMachineOption(name)->help;
}
static cl::opt<std::string> numMEs("mes", cl::desc(machineHelp("mes")),
                                   cl::value_desc("uint"),
                                   cl::cat(emuCategory));
static cl::opt<std::string> controlStore("control-store",
                                         cl::desc(machineHelp("control-store")),
                                         cl::value_desc("uint"),
                                         cl::cat(emuCategory));
static cl::opt<std::string> clockMHz("clock-mhz",
                                     cl::desc(machineHelp("clock-mhz")),
                                     cl::value_desc("number"),
                                     cl::cat(emuCategory));
static cl::opt<std::string> lineRate("line-rate",
                                     cl::desc(machineHelp("line-rate")),
                                     cl::value_desc("number"),
                                     cl::cat(emuCategory));
static cl::opt<std::string> sramChannels("sram-channels",
                                         cl::desc(machineHelp("sram-channels")),
                                         cl::value_desc("uint"),
                                         cl::cat(emuCategory));
static cl::opt<std::string> rbufs("rbufs", cl::desc(machineHelp("rbufs")),
                                  cl::value_desc("uint"), cl::cat(emuCategory));
static cl::opt<std::string> maxCycles("max-cycles",
                                      cl::desc(machineHelp("max-cycles")),
                                      cl::value_desc("ulong"),
                                      cl::cat(emuCategory));
static cl::opt<std::string> stallCycles("stall-cycles",
                                        cl::desc(machineHelp("stall-cycles")),
                                        cl::value_desc("ulong"),
                                        cl::cat(emuCategory));
static cl::opt<std::string> quantum("quantum", cl::desc(machineHelp("quantum")),
                                    cl::value_desc("uint"),
                                    cl::cat(emuCategory));
static cl::opt<std::string> ringOverflow("ring-overflow",
                                         cl::desc(machineHelp("ring-overflow")),
                                         cl::value_desc("string"),
                                         cl::cat(emuCategory));
static cl::list<std::string> latencies("latency",
                                       cl::desc(machineHelp("latency")),
                                       cl::value_desc("unit=cycles"),
                                       cl::CommaSeparated,
                                       cl::cat(emuCategory));
static cl::list<std::string>
    controllerSettings("controller", cl::desc(machineHelp("controller")),
                       cl::value_desc("unit=cmd/bpc"), cl::CommaSeparated,
                       cl::cat(emuCategory));

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
static cl::opt<std::string> hostCost("host-cost",
                                     cl::desc(machineHelp("host-cost")),
                                     cl::value_desc("crossing/word"),
                                     cl::cat(emuCategory));

namespace {
class PcapInput final : public PacketInput {
public:
  explicit PcapInput(std::unique_ptr<netvm::rt::PacketReader> reader)
      : reader(std::move(reader)) {}
  bool next(InputPacket &packet) override {
    // The buffers go round: the reader fills the one the emulator gave
    // back (keeping its capacity), so reading allocates nothing.
    std::swap(trace.bytes, packet.bytes);
    if (!reader->next(trace, error))
      return false;
    std::swap(trace.bytes, packet.bytes);
    packet.wireLength = trace.wireLength;
    packet.seconds = trace.seconds;
    packet.microseconds = trace.microseconds;
    return true;
  }
  std::unique_ptr<netvm::rt::PacketReader> reader;
  netvm::rt::TracePacket trace;
  std::string error;
};

/// One pcap file for every transmit port, or one per port (packets to a
/// port without a file are counted).
class PcapOutput final : public PacketOutput {
public:
  PcapOutput(std::vector<std::unique_ptr<netvm::rt::PcapWriter>> writers,
             double clockMHz)
      : writers(std::move(writers)), clockMHz(clockMHz) {}
  void transmit(const uint8_t *bytes, size_t length, uint32_t wireLength,
                unsigned port, uint64_t cycle) override {
    netvm::rt::PcapWriter *writer = writers.size() == 1 ? writers[0].get()
                                    : port < writers.size()
                                        ? writers[port].get()
                                        : nullptr;
    if (!writer) {
      ++unwritten[port];
      return;
    }
    netvm::rt::TracePacket packet;
    packet.bytes.assign(bytes, bytes + length);
    packet.wireLength = wireLength;
    // The time the packet left, in emulated time.
    uint64_t us = uint64_t(double(cycle) / clockMHz);
    packet.seconds = uint32_t(us / 1000000);
    packet.microseconds = uint32_t(us % 1000000);
    writer->write(packet);
  }
  std::vector<std::unique_ptr<netvm::rt::PcapWriter>> writers;
  double clockMHz;
  std::map<unsigned, uint64_t> unwritten; // port -> packets
};
} // namespace

/// Applies the machine options given on the command line.
/// The machine Ctrl-C stops (Emulator::requestStop is safe in a signal
/// handler).
static Emulator *interrupted = nullptr;
static void onInterrupt(int) {
  if (interrupted)
    interrupted->requestStop();
}

static bool configure(MachineConfig &config) {
  std::string error;
  auto apply = [&](const cl::Option &option, const std::string &value) {
    if (applyMachineOption(config, option.ArgStr, value, error, "--"))
      return true;
    llvm::errs() << "netvm-emu: " << error << "\n";
    return false;
  };
  for (cl::opt<std::string> *option :
       {&numMEs, &controlStore, &clockMHz, &lineRate, &sramChannels, &rbufs,
        &maxCycles, &stallCycles, &quantum, &ringOverflow, &hostCost})
    if (option->getNumOccurrences() && !apply(*option, *option))
      return false;
  auto applyList = [&](const cl::list<std::string> &option) {
    for (const std::string &item : option)
      if (!apply(option, item))
        return false;
    return true;
  };
  if (!applyList(latencies) || !applyList(controllerSettings))
    return false;
  return true;
}

static double ratio(uint64_t part, uint64_t whole) {
  return whole ? double(part) / double(whole) : 0.0;
}

static void printSummary(llvm::raw_ostream &os, const Stats &s) {
  double seconds = s.seconds();
  os << "cycles: " << s.cycles << " (" << llvm::format("%.2f", seconds * 1e6)
     << " us at " << llvm::format("%g", s.clockMHz) << " MHz); " << s.stopReason
     << "\n";
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
         << llvm::format("%.1f%%", 100 * ratio(t.waitCycles, s.cycles)) << "\n";
    }
  }
  // Busy and queue depth per controller (SRAM has one per channel).
  auto memory = [&](const char *name, const MemoryStats &m,
                    size_t controllers) {
    if (!(m.reads || m.writes || m.atomics || m.commands))
      return;
    uint64_t capacity = s.cycles * std::max<size_t>(controllers, 1);
    os << name << ": " << m.reads << " reads, " << m.writes << " writes, "
       << m.atomics << " atomics";
    if (m.dmaCommands)
      os << ", " << m.dmaCommands << " packet transfers";
    os << "; controller" << (controllers > 1 ? "s" : "") << " busy "
       << llvm::format("%.1f%%", 100 * ratio(m.busyCycles, capacity))
       << ", queue depth mean "
       << llvm::format("%.2f", ratio(m.queueCycles + m.busyCycles, capacity))
       << " max " << m.maxQueue << ", " << m.queueCycles << " cycles queued";
    if (controllers > 1) {
      os << " (busy per channel";
      for (const MemoryStats &c : s.sramChannels)
        os << " "
           << llvm::format("%.1f%%", 100 * ratio(c.busyCycles, s.cycles));
      os << ")";
    }
    os << "\n";
  };
  memory("scratch", s.scratch, 1);
  memory("sram", s.sram, s.sramChannels.size());
  memory("dram", s.dram, 1);
  if (s.hashOps)
    os << "hash: " << s.hashOps << " commands\n";
  if (s.hostAttached)
    os << "host: " << s.host.calls << " calls, " << s.host.crossings
       << " crossings, " << s.host.words << " words, busy "
       << llvm::format("%.1f%%", 100 * ratio(s.host.busyCycles, s.cycles))
       << " (" << s.host.busyCycles << " cycles); " << s.host.gets << " gets, "
       << s.host.puts << " puts, " << s.host.failedGets << " failed gets, "
       << s.host.failedPuts << " failed puts, " << s.host.overflows
       << " overflows"
       << (s.host.memoryReads || s.host.memoryWrites || s.host.failedMemory
               ? "; " + std::to_string(s.host.memoryReads) + " reads, " +
                     std::to_string(s.host.memoryWrites) + " writes (" +
                     std::to_string(s.host.memoryBytes) + " bytes), " +
                     std::to_string(s.host.failedMemory) + " refused"
               : std::string())
       << "\n";
  // Per port, when more than port 0 carried packets.
  if (s.ports.size() > 1)
    for (size_t p = 0; p < s.ports.size(); ++p) {
      const PortStats &port = s.ports[p];
      if (port.offered || port.sent)
        os << "port " << p << ": " << port.offered << " offered, "
           << port.received << " received, " << port.dropped << " dropped, "
           << port.sent << " sent\n";
    }
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
/// The host code of --host-relay, on the C API of netvm/emu/host.h: at each
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
      line +=
          ", " + std::to_string(uint64_t(cycle / host / 1e6)) + "M cycles/s";
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
  // Inputs: port k reads the k-th -r file (or --hex, port 0).
  std::vector<std::string> inputNames(readFiles.begin(), readFiles.end());
  if (!inputNames.empty() && !hexFile.empty()) {
    llvm::errs() << "netvm-emu: -r and --hex are exclusive\n";
    return 1;
  }
  if (inputNames.size() > maxPorts || writeFiles.size() > maxPorts) {
    llvm::errs() << "netvm-emu: at most " << maxPorts
                 << " -r and -w files (one a port)\n";
    return 1;
  }
  if (!hexFile.empty())
    inputNames.push_back(hexFile);
  std::vector<std::unique_ptr<PcapInput>> inputs;
  int linkType = 1; // DLT_EN10MB
  for (const std::string &name : inputNames) {
    auto reader = netvm::rt::PacketReader::open(name, !hexFile.empty(), error);
    if (!reader) {
      llvm::errs() << "netvm-emu: " << error << "\n";
      return 1;
    }
    if (inputs.empty())
      linkType = reader->linkType();
    inputs.push_back(std::make_unique<PcapInput>(std::move(reader)));
    emulator.setInput(unsigned(inputs.size() - 1), inputs.back().get());
  }
  std::optional<PcapOutput> output;
  if (!writeFiles.empty()) {
    std::vector<std::unique_ptr<netvm::rt::PcapWriter>> writers;
    for (const std::string &name : writeFiles) {
      writers.push_back(netvm::rt::PcapWriter::create(name, linkType, error));
      if (!writers.back()) {
        llvm::errs() << "netvm-emu: " << error << "\n";
        return 1;
      }
    }
    output.emplace(std::move(writers), config.clockMHz);
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
  // Ctrl-C (or SIGTERM) stops the machine at the end of its quantum; the
  // summary of what ran is printed as for any other end.
  interrupted = &emulator;
  std::signal(SIGINT, onInterrupt);
  std::signal(SIGTERM, onInterrupt);
  emulator.run(showProgress ? Progress::report : nullptr, &meter,
               !showProgress    ? 0
               : meter.terminal ? 10000000
                                : 100000000);
  meter.end();
  double host =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  const Stats &stats = emulator.stats();
  for (size_t k = 0; k < inputs.size(); ++k) {
    const std::string &message = inputs[k]->error;
    if (message.empty())
      continue;
    // Messages that name a line already name the file.
    llvm::errs() << "netvm-emu: ";
    if (!llvm::StringRef(message).starts_with(inputNames[k] + ":"))
      llvm::errs() << inputNames[k] << ": ";
    llvm::errs() << message << "\n";
    return 1;
  }
  if (output)
    for (auto [port, packets] : output->unwritten)
      llvm::errs() << "netvm-emu: warning: " << packets
                   << " packets sent to port " << port
                   << ", which has no -w file\n";

  if (statsJson == "-") {
    llvm::outs() << statsToJson(stats) << "\n";
  } else {
    if (!statsJson.empty()) {
      if (llvm::Error e = netvm::driver::writeTextFile(
              statsJson, statsToJson(stats) + "\n")) {
        llvm::errs() << "netvm-emu: cannot write '" << statsJson
                     << "': " << llvm::toString(std::move(e)) << "\n";
        return 1;
      }
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
  // A machine stopped from outside, or for making no progress, did not end
  // by itself: say so after the summary.
  if (stats.stopReason == "interrupted") {
    llvm::errs() << "netvm-emu: interrupted\n";
    return 130;
  }
  if (llvm::StringRef(stats.stopReason).starts_with("no progress")) {
    llvm::errs() << "netvm-emu: stopped: " << stats.stopReason << "\n";
    return 1;
  }
  return stats.faults.empty() ? 0 : 1;
}
