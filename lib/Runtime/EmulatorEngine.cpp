//===- EmulatorEngine.cpp - The ME emulator as an engine ------------------===//
//
// An application compiled for the microengines (netvm/Target/ME/AppLayout.h)
// runs on the IXP-like emulator (runtime/emu). The emulator loads an image
// once and runs once, so every batch runs on a fresh machine: load the
// image, write forward the memory that must survive (AppLayout::persistent,
// then the data and shared memories as the control plane may have changed
// them), the watchdog budget and an empty event log; feed the batch on the
// receive port of its source; run until the machine is quiescent; then turn
// what it did into one PacketResult per packet:
//
//  - a transmitted packet carries its packet number (the receive
//    descriptor's word 3) as the tag of its transmit descriptor: its
//    transmit port is the sink, its info memory lies in DRAM just before
//    it (AppLayout::infoOffset);
//  - exceptions, drops of copies and sends to unconnected ports come from
//    the event log in SRAM;
//  - a packet that left nowhere, raised nothing and logged no drop was
//    dropped once.
//
// The init handlers run in a run without packets (initialize()). A fault
// of the machine, a run cut short (cycle limit, input left unreceived), an
// overflowing event log or a transmission the layout cannot place is a
// failure (Engine::failure()): the engine then refuses further packets
// rather than report results it cannot vouch for.
//
//===----------------------------------------------------------------------===//

#include "netvm/Runtime/Engine.h"
#include "netvm/Target/ME/AppLayout.h"
#include "netvm/emu/Emulator.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cstring>

using namespace netvm;
using namespace netvm::rt;
using me::AppLayout;

namespace {

uint32_t readWord(const uint8_t *p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 |
         uint32_t(p[3]);
}

void writeWord(uint8_t *p, uint32_t v) {
  p[0] = uint8_t(v >> 24);
  p[1] = uint8_t(v >> 16);
  p[2] = uint8_t(v >> 8);
  p[3] = uint8_t(v);
}

std::string regionName(const AppLayout::Region &r) {
  return std::string(me::memoryName(r.memory)) + " 0x" +
         llvm::utohexstr(r.address, /*LowerCase=*/true) + "+" +
         std::to_string(r.size);
}

//===----------------------------------------------------------------------===//
// Statistics over runs
//===----------------------------------------------------------------------===//

void add(me::MemoryStats &to, const me::MemoryStats &from) {
  to.reads += from.reads;
  to.writes += from.writes;
  to.atomics += from.atomics;
  to.bytesRead += from.bytesRead;
  to.bytesWritten += from.bytesWritten;
  to.commands += from.commands;
  to.busyCycles += from.busyCycles;
  to.queueCycles += from.queueCycles;
  to.maxQueue = std::max(to.maxQueue, from.maxQueue);
  to.dmaCommands += from.dmaCommands;
  to.dmaBytes += from.dmaBytes;
}

/// Adds the statistics of one run to the totals: counts and cycles are
/// summed (runs follow each other in time), maxima kept.
void add(me::Stats &to, const me::Stats &from) {
  to.cycles += from.cycles;
  to.clockMHz = from.clockMHz;
  to.stopReason = from.stopReason;
  if (to.mes.size() < from.mes.size())
    to.mes.resize(from.mes.size());
  for (size_t i = 0; i < from.mes.size(); ++i) {
    me::MEStats &t = to.mes[i];
    const me::MEStats &f = from.mes[i];
    t.loaded |= f.loaded;
    t.instructions += f.instructions;
    t.busyCycles += f.busyCycles;
    t.branchPenaltyCycles += f.branchPenaltyCycles;
    t.swapCycles += f.swapCycles;
    for (unsigned r = 0; r < me::StallCount; ++r)
      t.idleCycles[r] += f.idleCycles[r];
    t.contextSwaps += f.contextSwaps;
    if (t.pcCycles.size() < f.pcCycles.size())
      t.pcCycles.resize(f.pcCycles.size());
    for (size_t pc = 0; pc < f.pcCycles.size(); ++pc)
      t.pcCycles[pc] += f.pcCycles[pc];
    if (t.threads.size() < f.threads.size())
      t.threads.resize(f.threads.size());
    for (size_t c = 0; c < f.threads.size(); ++c) {
      me::ThreadStats &tt = t.threads[c];
      const me::ThreadStats &ft = f.threads[c];
      tt.enabled |= ft.enabled;
      tt.instructions += ft.instructions;
      tt.execCycles += ft.execCycles;
      tt.readyCycles += ft.readyCycles;
      tt.waitCycles += ft.waitCycles;
      tt.swaps += ft.swaps;
    }
  }
  add(to.scratch, from.scratch);
  add(to.sram, from.sram);
  add(to.dram, from.dram);
  if (to.sramChannels.size() < from.sramChannels.size())
    to.sramChannels.resize(from.sramChannels.size());
  for (size_t i = 0; i < from.sramChannels.size(); ++i)
    add(to.sramChannels[i], from.sramChannels[i]);
  to.hashOps += from.hashOps;
  for (unsigned i = 0; i < 16; ++i) {
    me::RingStats &t = to.rings[i];
    const me::RingStats &f = from.rings[i];
    t.configured |= f.configured;
    t.sizeWords = std::max(t.sizeWords, f.sizeWords);
    t.puts += f.puts;
    t.gets += f.gets;
    t.emptyGets += f.emptyGets;
    t.overflows += f.overflows;
    t.maxOccupancy = std::max(t.maxOccupancy, f.maxOccupancy);
    t.finalOccupancy = f.finalOccupancy;
  }
  to.packetsOffered += from.packetsOffered;
  to.packetsReceived += from.packetsReceived;
  to.packetsDropped += from.packetsDropped;
  to.packetsTruncated += from.packetsTruncated;
  to.packetsSent += from.packetsSent;
  to.bytesReceived += from.bytesReceived;
  to.bytesSent += from.bytesSent;
  if (to.ports.size() < from.ports.size())
    to.ports.resize(from.ports.size());
  for (size_t i = 0; i < from.ports.size(); ++i) {
    me::PortStats &t = to.ports[i];
    const me::PortStats &f = from.ports[i];
    t.offered += f.offered;
    t.received += f.received;
    t.dropped += f.dropped;
    t.truncated += f.truncated;
    t.sent += f.sent;
    t.bytesReceived += f.bytesReceived;
    t.bytesSent += f.bytesSent;
  }
  to.hostAttached |= from.hostAttached;
  to.host.calls += from.host.calls;
  to.host.crossings += from.host.crossings;
  to.host.words += from.host.words;
  to.host.busyCycles += from.host.busyCycles;
  to.host.puts += from.host.puts;
  to.host.gets += from.host.gets;
  to.host.failedPuts += from.host.failedPuts;
  to.host.failedGets += from.host.failedGets;
  to.host.overflows += from.host.overflows;
  to.host.memoryReads += from.host.memoryReads;
  to.host.memoryWrites += from.host.memoryWrites;
  to.host.failedMemory += from.host.failedMemory;
  to.host.memoryBytes += from.host.memoryBytes;
  to.faults.insert(to.faults.end(), from.faults.begin(), from.faults.end());
}

std::string describe(const me::Fault &f) {
  return "ME " + std::to_string(f.me) + " context " + std::to_string(f.ctx) +
         " pc " + std::to_string(f.pc) + " cycle " + std::to_string(f.cycle) +
         ": " + f.reason + " (" + f.instruction + ")";
}

//===----------------------------------------------------------------------===//
// One run of the machine
//===----------------------------------------------------------------------===//

/// A packet of a batch, as the run keeps it.
using BatchPacket = PacketView;

/// The batch, in order, on one receive port.
class BatchInput final : public me::PacketInput {
public:
  explicit BatchInput(llvm::ArrayRef<BatchPacket> packets) : packets(packets) {}
  bool next(me::InputPacket &packet) override {
    if (at == packets.size())
      return false;
    const BatchPacket &p = packets[at++];
    packet.bytes.assign(p.data, p.data + p.length);
    packet.wireLength = std::max(p.wireLength, p.length);
    packet.seconds = p.seconds;
    packet.microseconds = p.microseconds;
    packet.port = p.source;
    return true;
  }

private:
  llvm::ArrayRef<BatchPacket> packets;
  size_t at = 0;
};

/// Transmitted packets into the results of their packets (by tag).
class ResultOutput final : public me::PacketOutput {
public:
  ResultOutput(const me::Emulator &emu, const AppLayout &layout,
               llvm::ArrayRef<BatchPacket> packets,
               std::vector<PacketResult> &results, ResultDetail detail)
      : emu(emu), layout(layout), packets(packets), results(results),
        detail(detail) {}

  using me::PacketOutput::transmit;
  void transmit(const me::Transmission &t) override {
    if (!error.empty())
      return;
    if (!t.hasTag || t.tag >= results.size()) {
      error = "a packet left transmit port " + std::to_string(t.port) +
              " at cycle " + std::to_string(t.cycle) +
              (t.hasTag ? " tagged as packet " + std::to_string(t.tag) +
                              " of a run of " + std::to_string(results.size())
                        : std::string(" without a packet tag")) +
              " (the transmit descriptor's word 3 must be the receive "
              "descriptor's word 3)";
      return;
    }
    if (t.port >= layout.sinks.size()) {
      error = "packet " + std::to_string(t.tag) + " left transmit port " +
              std::to_string(t.port) + " but the application has " +
              std::to_string(layout.sinks.size()) + " sinks";
      return;
    }
    Output out;
    out.sink = t.port;
    out.length = static_cast<uint32_t>(t.length);
    out.wireLength = t.wireLength;
    out.seconds = packets[t.tag].seconds;
    out.microseconds = packets[t.tag].microseconds;
    if (detail == ResultDetail::Full) {
      out.bytes.assign(t.bytes, t.bytes + t.length);
      // The image carries the first infoCarried bytes (0 in a layout made
      // by hand: all); the back end proved the rest is zeros.
      uint32_t carried =
          std::min(layout.infoSize,
                   layout.infoCarried ? layout.infoCarried : layout.infoSize);
      if (!layout.infoUsed) {
        out.info.assign(layout.infoSize, 0);
      } else if (t.dramAddress < layout.infoOffset ||
                 !emu.readMemory(me::Memory::Dram,
                                 t.dramAddress - layout.infoOffset, carried,
                                 out.info)) {
        error = "packet " + std::to_string(t.tag) + " left from DRAM 0x" +
                llvm::utohexstr(t.dramAddress, true) +
                ", which has no info memory " +
                std::to_string(layout.infoOffset) + " bytes before it";
        return;
      } else {
        out.info.resize(layout.infoSize, 0);
      }
    }
    results[t.tag].outputs.push_back(std::move(out));
  }

  std::string error;

private:
  const me::Emulator &emu;
  const AppLayout &layout;
  llvm::ArrayRef<BatchPacket> packets;
  std::vector<PacketResult> &results;
  ResultDetail detail;
};

//===----------------------------------------------------------------------===//
// The engine
//===----------------------------------------------------------------------===//

class EmulatorEngine final : public Engine {
public:
  EmulatorEngine(const me::CompiledApp &compiled, const EngineOptions &options,
                 const me::MachineConfig &machine)
      : app(compiled), machine(machine), options(options),
        tally(compiled.layout.sinks.size()),
        peCounts(compiled.layout.pes.size()),
        data(compiled.layout.dataMemory.size()) {
    for (const AppLayout::Region &r : app.layout.persistent)
      persistent.push_back({r, std::vector<uint8_t>(r.size)});
    total.clockMHz = machine.clockMHz;
  }

  /// Loads the image once, to check it against the machine and the layout
  /// and to read the memories' initial contents.
  bool check(std::string &error) {
    const AppLayout &layout = app.layout;
    if (layout.sources.size() > me::maxPorts ||
        layout.sinks.size() > me::maxPorts) {
      error = "the application has " + std::to_string(layout.sources.size()) +
              " sources and " + std::to_string(layout.sinks.size()) +
              " sinks; the emulated machine has " +
              std::to_string(me::maxPorts) + " receive and transmit ports";
      return false;
    }
    if (layout.dataMemory.size() != layout.pes.size()) {
      error = "the layout gives " + std::to_string(layout.dataMemory.size()) +
              " data memories for " + std::to_string(layout.pes.size()) +
              " NetPEs";
      return false;
    }
    me::Emulator emu(machine);
    if (!emu.load(app.image, error)) {
      error = "cannot load the ME image: " + error;
      return false;
    }
    if (!save(emu, error))
      return false;
    std::vector<uint8_t> probe;
    if (layout.eventCapacity &&
        (!emu.readMemory(me::Memory::Sram, layout.eventCount, 4, probe) ||
         !emu.readMemory(me::Memory::Sram, layout.eventLog,
                         16 * layout.eventCapacity, probe))) {
      error = "the event log (SRAM 0x" +
              llvm::utohexstr(layout.eventLog, true) + ", " +
              std::to_string(layout.eventCapacity) +
              " events) lies outside the machine's SRAM";
      return false;
    }
    if (!emu.readMemory(me::Memory::Sram, layout.watchdogAddress, 4, probe)) {
      error = "the watchdog word (SRAM 0x" +
              llvm::utohexstr(layout.watchdogAddress, true) +
              ") lies outside the machine's SRAM";
      return false;
    }
    return true;
  }

  const char *kind() const override { return "emulator"; }
  std::string failure() const override { return failed; }
  const me::Stats *emulatorStats() const override { return &total; }

  PacketResult initialize() override {
    initialized = true;
    std::vector<PacketResult> results;
    execute(0, {}, ResultDetail::Full, results, initResult);
    tally.add(initResult, /*pushed=*/false);
    return initResult;
  }

  PacketResult push(unsigned source, const TracePacket &packet) override {
    BatchPacket p = viewOf(packet);
    std::vector<PacketResult> results;
    runBatch(source, p, ResultDetail::Full, results);
    return results.empty() ? PacketResult() : std::move(results.front());
  }

  PacketResult pull(unsigned) override {
    if (failed.empty())
      failed = "the ME emulator runs applications in push mode only: the ME "
               "back end has no pull handlers";
    return {};
  }
  void setSourcePuller(
      std::function<std::optional<TracePacket>(unsigned)>) override {}

  bool runsMixedSources() const override { return true; }

  void run(unsigned source, llvm::MutableArrayRef<netvm_packet> packets,
           const ResultFn *onResult, ResultDetail detail) override {
    std::vector<BatchPacket> batch(packets.size());
    bool mixed = mixedSources.size() == packets.size();
    for (size_t i = 0; i < packets.size(); ++i) {
      const netvm_packet &p = packets[i];
      batch[i] = {p.data, p.length, p.wire_length, p.seconds, p.microseconds};
      // Several sources in one run: each packet on its source's port.
      if (mixed)
        batch[i].source = static_cast<int>(mixedSources[i]);
    }
    mixedSources.clear();
    std::vector<PacketResult> results;
    runBatch(source, batch, onResult ? detail : ResultDetail::Verdicts,
             results);
    if (onResult)
      for (size_t i = 0; i < results.size(); ++i)
        (*onResult)(i, results[i]);
  }

  llvm::ArrayRef<std::string> sourceNames() const override {
    return app.layout.sources;
  }
  llvm::ArrayRef<std::string> sinkNames() const override {
    return app.layout.sinks;
  }
  llvm::ArrayRef<std::string> peNames() const override {
    return app.layout.pes;
  }
  llvm::MutableArrayRef<uint8_t> dataMemory(unsigned pe) override {
    if (pe >= data.size())
      return {};
    return data[pe];
  }
  llvm::MutableArrayRef<uint8_t> sharedMemory() override { return shared; }

  // The lookup table's control plane works on its copy that persists
  // between runs (the next run writes it into the machine), with the
  // table's format and hash (AppLayout.h).
  std::optional<std::vector<netvm_lookup_entry>>
  lookupEntries(unsigned pe) override {
    uint8_t *table = lookupTable(pe);
    if (!table)
      return std::nullopt;
    std::vector<netvm_lookup_entry> entries;
    for (uint32_t i = 0; i < me::meLookupSlots; ++i) {
      netvm_lookup_entry e{};
      if (readSlot(table, i, e))
        entries.push_back(e);
    }
    return entries;
  }
  std::optional<bool> lookupDelete(unsigned pe,
                                   llvm::ArrayRef<uint32_t> key) override {
    uint8_t *table = lookupTable(pe);
    if (!table)
      return std::nullopt;
    return deleteKey(table, key);
  }
  std::optional<uint32_t> lookupAge(unsigned pe, uint32_t now,
                                    uint32_t maxAge) override {
    uint8_t *table = lookupTable(pe);
    if (!table)
      return std::nullopt;
    // The stale keys first: deleting moves entries between slots.
    std::vector<netvm_lookup_entry> stale;
    for (uint32_t i = 0; i < me::meLookupSlots; ++i) {
      netvm_lookup_entry e{};
      if (readSlot(table, i, e) && now - e.stamp > maxAge)
        stale.push_back(e);
    }
    for (const netvm_lookup_entry &e : stale)
      deleteKey(table, {e.key, e.key_length});
    return static_cast<uint32_t>(stale.size());
  }

  Counters counters() const override { return tally.counters(); }
  PECounters peCounters(unsigned pe) const override {
    return pe < peCounts.size() ? peCounts[pe] : PECounters();
  }
  SinkCounters sinkCounters(unsigned sink) const override {
    return tally.sink(sink);
  }

private:
  /// NetPE `pe`'s lookup table as it persists between runs, or null.
  uint8_t *lookupTable(unsigned pe) {
    const AppLayout &layout = app.layout;
    if (pe >= layout.lookupTables.size() || !layout.lookupTables[pe])
      return nullptr;
    for (Saved &s : persistent)
      if (s.region.memory == me::Memory::Sram &&
          s.region.address == layout.lookupTables[pe] &&
          s.bytes.size() >= me::meLookupTableBytes)
        return s.bytes.data();
    return nullptr;
  }
  static uint8_t *slotOf(uint8_t *table, uint32_t i) {
    return table + me::meLookupSlotsOffset + i * me::meLookupSlotBytes;
  }
  /// Slot `i` into `e`; false if it is empty.
  static bool readSlot(uint8_t *table, uint32_t i, netvm_lookup_entry &e) {
    const uint8_t *slot = slotOf(table, i);
    uint32_t length = readWord(slot + 4 * me::meSlotLength);
    if (!length || length > NETVM_LOOKUP_MAX_KEY)
      return false;
    e.key_length = length;
    e.value = readWord(slot + 4 * me::meSlotValue);
    e.stamp = readWord(slot + 4 * me::meSlotStamp);
    for (uint32_t w = 0; w < length; ++w)
      e.key[w] = readWord(slot + 4 * (me::meSlotKey + w));
    return true;
  }
  /// Deletes the entry of `key`, keeping every other key reachable from
  /// its slot without tombstones: the entries after it in the probe run
  /// move back into the hole when their own slot is not between the hole
  /// and them (backward-shift deletion). Whether there was one.
  static bool deleteKey(uint8_t *table, llvm::ArrayRef<uint32_t> key) {
    constexpr uint32_t mask = me::meLookupSlots - 1;
    if (key.empty() || key.size() > NETVM_LOOKUP_MAX_KEY)
      return false;
    netvm_lookup_entry e{};
    uint32_t hole = me::meLookupHash(key.data(), key.size());
    for (;; hole = (hole + 1) & mask) {
      if (!readSlot(table, hole, e))
        return false;
      if (llvm::ArrayRef<uint32_t>(e.key, e.key_length) == key)
        break;
    }
    for (uint32_t j = (hole + 1) & mask; readSlot(table, j, e);
         j = (j + 1) & mask) {
      uint32_t home = me::meLookupHash(e.key, e.key_length);
      bool stays =
          hole <= j ? home > hole && home <= j : home > hole || home <= j;
      if (stays)
        continue;
      std::memcpy(slotOf(table, hole), slotOf(table, j), me::meLookupSlotBytes);
      hole = j;
    }
    writeWord(slotOf(table, hole) + 4 * me::meSlotLength, 0);
    writeWord(table, readWord(table) - 1);
    return true;
  }

  void fail(const std::string &why) {
    if (failed.empty())
      failed = why;
  }

  /// A batch through `source`: one result per packet in `results` (none
  /// after a failure).
  void runBatch(unsigned source, llvm::ArrayRef<BatchPacket> batch,
                ResultDetail detail, std::vector<PacketResult> &results) {
    if (batch.empty() || !failed.empty())
      return;
    if (source >= app.layout.sources.size()) {
      fail("source " + std::to_string(source) +
           " is out of range: the application has " +
           std::to_string(app.layout.sources.size()) + " sources");
      return;
    }
    if (!initialized)
      initialize();
    PacketResult unexpected;
    if (!execute(source, batch, detail, results, unexpected)) {
      results.clear();
      return;
    }
    for (PacketResult &r : results)
      tally.add(r, /*pushed=*/true);
  }

  /// One run of a fresh machine over `batch` on receive port `port`.
  /// Events of packets the batch does not have (the init handlers) go to
  /// `other`. False after a failure.
  bool execute(unsigned port, llvm::ArrayRef<BatchPacket> batch,
               ResultDetail detail, std::vector<PacketResult> &results,
               PacketResult &other) {
    if (!failed.empty())
      return false;
    const AppLayout &layout = app.layout;
    std::string error;
    me::Emulator emu(machine);
    if (!emu.load(app.image, error)) {
      fail("cannot load the ME image: " + error);
      return false;
    }
    // What survives from the last run, then the memories the control
    // plane sees (which lie in persistent memory or stand for it).
    auto write = [&](me::Memory memory, uint32_t address,
                     const std::vector<uint8_t> &bytes) {
      if (bytes.empty() ||
          emu.writeMemory(memory, address, bytes.data(), bytes.size(), error))
        return true;
      fail("cannot write " +
           regionName({memory, address, uint32_t(bytes.size())}) +
           " forward: " + error);
      return false;
    };
    for (const Saved &s : persistent)
      if (!write(s.region.memory, s.region.address, s.bytes))
        return false;
    for (size_t i = 0; i < data.size(); ++i)
      if (!write(layout.dataMemory[i].memory, layout.dataMemory[i].address,
                 data[i]))
        return false;
    if (!write(layout.sharedMemory.memory, layout.sharedMemory.address, shared))
      return false;
    std::vector<uint8_t> word(4);
    writeWord(word.data(),
              uint32_t(std::min<uint64_t>(options.watchdogBudget, ~0u)));
    if (!write(me::Memory::Sram, layout.watchdogAddress, word))
      return false;
    if (layout.eventCapacity) {
      writeWord(word.data(), 0);
      if (!write(me::Memory::Sram, layout.eventCount, word))
        return false;
    }

    results.assign(batch.size(), PacketResult());
    BatchInput input(batch);
    if (!batch.empty())
      emu.setInput(port, &input);
    ResultOutput output(emu, layout, batch, results, detail);
    emu.setOutput(&output);
    emu.run();
    const me::Stats &stats = emu.stats();
    add(total, stats);

    if (!stats.faults.empty()) {
      std::string why = "the emulator faulted: " + describe(stats.faults[0]);
      if (stats.faults.size() > 1)
        why += " (and " + std::to_string(stats.faults.size() - 1) +
               " more faults)";
      fail(why);
      return false;
    }
    if (!output.error.empty()) {
      fail(output.error);
      return false;
    }
    llvm::StringRef stop = stats.stopReason;
    if (stop.starts_with("cycle limit") ||
        stop.contains("input left unreceived")) {
      fail("the emulator stopped before the packets were processed (" +
           stats.stopReason + ")");
      return false;
    }
    if (stats.packetsTruncated) {
      fail(std::to_string(stats.packetsTruncated) +
           " packet(s) were longer than the machine's receive size of " +
           std::to_string(machine.maxPacketBytes) +
           " bytes (--max-packet) and would be truncated");
      return false;
    }
    if (stats.packetsReceived != batch.size()) {
      fail("the machine received " + std::to_string(stats.packetsReceived) +
           " of " + std::to_string(batch.size()) + " packets");
      return false;
    }
    std::vector<unsigned> dropEvents(batch.size());
    if (!readEvents(emu, results, dropEvents, other) || !readCounters(emu))
      return false;
    for (size_t i = 0; i < results.size(); ++i) {
      PacketResult &r = results[i];
      if (r.outputs.empty() && r.exceptions.empty() && !dropEvents[i] &&
          !r.unconnected)
        r.drops = 1;
    }
    return save(emu, error);
  }

  /// The event log into the results; events of packet numbers outside the
  /// run (init handlers) into `other`.
  bool readEvents(const me::Emulator &emu, std::vector<PacketResult> &results,
                  std::vector<unsigned> &dropEvents, PacketResult &other) {
    const AppLayout &layout = app.layout;
    if (!layout.eventCapacity)
      return true;
    std::vector<uint8_t> bytes;
    if (!emu.readMemory(me::Memory::Sram, layout.eventCount, 4, bytes)) {
      fail("cannot read the event count at SRAM 0x" +
           llvm::utohexstr(layout.eventCount, true));
      return false;
    }
    uint32_t count = readWord(bytes.data());
    if (count > layout.eventCapacity) {
      fail("the event log overflowed: " + std::to_string(count) +
           " events, room for " + std::to_string(layout.eventCapacity));
      return false;
    }
    if (!count)
      return true;
    if (!emu.readMemory(me::Memory::Sram, layout.eventLog, 16 * count, bytes)) {
      fail("cannot read the event log at SRAM 0x" +
           llvm::utohexstr(layout.eventLog, true));
      return false;
    }
    bool init = results.empty(); // the run of initialize()
    for (uint32_t e = 0; e < count; ++e) {
      const uint8_t *w = bytes.data() + 16 * e;
      uint32_t packet = readWord(w), kind = readWord(w + 4),
               site = readWord(w + 8), location = readWord(w + 12);
      uint32_t pe = site & 0xffff;
      bool ofPacket = !init && packet < results.size();
      if (!init && !ofPacket) {
        fail("event " + std::to_string(e) + " of the log names packet " +
             std::to_string(packet) + " in a run of " +
             std::to_string(results.size()) + " packets");
        return false;
      }
      PacketResult &r = ofPacket ? results[packet] : other;
      PECounters *counts = pe < peCounts.size() ? &peCounts[pe] : nullptr;
      switch (kind) {
      case uint32_t(me::EventKind::Exception): {
        ExceptionReport report;
        report.kind = site >> 16;
        report.pe = counts ? static_cast<int>(pe) : -1;
        report.handler = ofPacket ? NETVM_HANDLER_PUSH : NETVM_HANDLER_INIT;
        if (location < layout.locations.size())
          report.location = layout.locations[location];
        r.exceptions.push_back(std::move(report));
        if (counts)
          ++counts->exceptions;
        break;
      }
      case uint32_t(me::EventKind::Drop):
        ++r.drops;
        if (ofPacket)
          ++dropEvents[packet];
        // An image with counters counts its drops itself (readCounters).
        if (counts && !layout.peCounters)
          ++counts->dropped;
        break;
      case uint32_t(me::EventKind::Unconnected):
        ++r.unconnected;
        break;
      default:
        fail("event " + std::to_string(e) + " of the log has unknown kind " +
             std::to_string(kind));
        return false;
      }
    }
    return true;
  }

  /// Adds the run's per-NetPE counters (runs, sent, dropped) to the
  /// engine's; every run starts them at 0.
  bool readCounters(const me::Emulator &emu) {
    const AppLayout &layout = app.layout;
    if (!layout.peCounters || peCounts.empty())
      return true;
    std::vector<uint8_t> bytes;
    if (!emu.readMemory(me::Memory::Sram, layout.peCounters,
                        12 * peCounts.size(), bytes)) {
      fail("cannot read the NetPE counters at SRAM 0x" +
           llvm::utohexstr(layout.peCounters, true));
      return false;
    }
    for (size_t pe = 0; pe < peCounts.size(); ++pe) {
      peCounts[pe].runs += readWord(bytes.data() + 12 * pe);
      peCounts[pe].sent += readWord(bytes.data() + 12 * pe + 4);
      peCounts[pe].dropped += readWord(bytes.data() + 12 * pe + 8);
    }
    return true;
  }

  /// Reads the persistent regions and the memories of the control plane.
  bool save(const me::Emulator &emu, std::string &error) {
    auto read = [&](const AppLayout::Region &r, std::vector<uint8_t> &bytes) {
      if (!r.size) {
        bytes.clear();
        return true;
      }
      if (emu.readMemory(r.memory, r.address, r.size, bytes))
        return true;
      error = regionName(r) + " lies outside the machine's " +
              me::memoryName(r.memory);
      fail(error);
      return false;
    };
    for (Saved &s : persistent)
      if (!read(s.region, s.bytes))
        return false;
    for (size_t i = 0; i < data.size(); ++i)
      if (!read(app.layout.dataMemory[i], data[i]))
        return false;
    return read(app.layout.sharedMemory, shared);
  }

  struct Saved {
    AppLayout::Region region;
    std::vector<uint8_t> bytes;
  };

  me::CompiledApp app;
  me::MachineConfig machine;
  EngineOptions options;
  Tally tally;
  std::vector<PECounters> peCounts;
  std::vector<Saved> persistent;
  std::vector<std::vector<uint8_t>> data;
  std::vector<uint8_t> shared;
  me::Stats total;
  bool initialized = false;
  PacketResult initResult;
  std::string failed;
};
} // namespace

std::unique_ptr<Engine> Engine::emulator(const me::CompiledApp &app,
                                         const EngineOptions &options,
                                         const me::MachineConfig &machine,
                                         std::string &error) {
  auto engine = std::make_unique<EmulatorEngine>(app, options, machine);
  if (!engine->check(error))
    return nullptr;
  return engine;
}
