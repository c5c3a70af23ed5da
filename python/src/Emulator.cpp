//===- Emulator.cpp - The ME emulator from Python
//--------------------------===//
//
// netvm.emulate: assemble a microengine program (docs/me-isa.md) and run it
// on the IXP-like emulator with packets from Python; returns the packets
// transmitted and the statistics, as netvm-emu reports them. Machine
// options (netvm/emu/Options.h) come as (name, value) strings, as
// netvm-emu's --name=value.
//
//===----------------------------------------------------------------------===//

#include "netvm/emu/Emulator.h"
#include "netvm/Target/ME/Assembler.h"
#include "netvm/emu/Options.h"
#include "netvm/emu/StatsJson.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace nb = nanobind;
using namespace nb::literals;
using namespace netvm::me;

namespace {

/// Packets from a Python list, in order.
class ListInput : public PacketInput {
public:
  explicit ListInput(std::vector<std::vector<uint8_t>> packets)
      : packets(std::move(packets)) {}
  bool next(InputPacket &packet) override {
    if (at == packets.size())
      return false;
    packet.bytes = std::move(packets[at++]);
    packet.wireLength = 0;
    return true;
  }

private:
  std::vector<std::vector<uint8_t>> packets;
  size_t at = 0;
};

struct Transmitted {
  unsigned port;
  uint64_t cycle;
  std::vector<uint8_t> bytes;
};

class ListOutput : public PacketOutput {
public:
  void transmit(const uint8_t *bytes, size_t length, uint32_t, unsigned port,
                uint64_t cycle) override {
    sent.push_back({port, cycle, std::vector<uint8_t>(bytes, bytes + length)});
  }
  std::vector<Transmitted> sent;
};

nb::dict memoryStats(const MemoryStats &m) {
  nb::dict d;
  d["reads"] = m.reads;
  d["writes"] = m.writes;
  d["atomics"] = m.atomics;
  d["commands"] = m.commands;
  d["busy_cycles"] = m.busyCycles;
  d["queue_cycles"] = m.queueCycles;
  d["max_queue"] = m.maxQueue;
  return d;
}

nb::dict emulate(
    const std::string &source, const std::string &fileName, nb::list ports,
    unsigned mes, double clockMHz, uint64_t maxCycles,
    const std::vector<std::pair<std::string, std::string>> &machineOptions) {
  MachineConfig config;
  config.numMEs = mes;
  config.clockMHz = clockMHz;
  config.maxCycles = maxCycles;
  if (mes == 0 || mes > maxMEs)
    throw nb::value_error(
        ("mes must be between 1 and " + std::to_string(maxMEs)).c_str());
  if (!(clockMHz > 0))
    throw nb::value_error("clock_mhz must be positive");
  for (const auto &[name, value] : machineOptions) {
    std::string error;
    if (!applyMachineOption(config, name, value, error))
      throw nb::value_error(error.c_str());
  }
  // One list of packets (bytes) per receive port, from port 0.
  if (ports.size() > maxPorts)
    throw nb::value_error("at most 16 receive ports");
  std::vector<std::vector<std::vector<uint8_t>>> input;
  for (nb::handle port : ports) {
    input.emplace_back();
    for (nb::handle p : nb::borrow<nb::list>(port)) {
      if (!nb::isinstance<nb::bytes>(p))
        throw nb::type_error("packets must be a list of bytes");
      nb::bytes b = nb::borrow<nb::bytes>(p);
      const auto *data = static_cast<const uint8_t *>(b.data());
      input.back().emplace_back(data, data + b.size());
    }
  }

  AssemblerOptions options;
  options.machine = config;
  Image image;
  std::vector<std::string> errors;
  if (!assemble(source, fileName, options, image, errors)) {
    std::string message;
    for (const std::string &e : errors)
      message += e + "\n";
    throw nb::value_error(message.c_str());
  }

  std::vector<std::unique_ptr<ListInput>> inputs;
  for (auto &packets : input)
    inputs.push_back(std::make_unique<ListInput>(std::move(packets)));
  ListOutput out;
  Stats stats;
  {
    nb::gil_scoped_release release;
    Emulator emulator(config);
    std::string error;
    if (!emulator.load(image, error)) {
      nb::gil_scoped_acquire acquire;
      throw nb::value_error(error.c_str());
    }
    for (size_t port = 0; port < inputs.size(); ++port)
      emulator.setInput(unsigned(port), inputs[port].get());
    emulator.setOutput(&out);
    emulator.run();
    stats = emulator.stats();
  }

  nb::dict result;
  nb::list sent;
  for (const Transmitted &t : out.sent)
    sent.append(
        nb::make_tuple(t.port, t.cycle,
                       nb::bytes(reinterpret_cast<const char *>(t.bytes.data()),
                                 t.bytes.size())));
  result["transmitted"] = sent;
  result["cycles"] = stats.cycles;
  result["seconds"] = stats.seconds();
  result["stop_reason"] = stats.stopReason;
  result["packets_offered"] = stats.packetsOffered;
  result["packets_received"] = stats.packetsReceived;
  result["packets_dropped"] = stats.packetsDropped;
  result["packets_sent"] = stats.packetsSent;
  result["bytes_received"] = stats.bytesReceived;
  result["bytes_sent"] = stats.bytesSent;
  nb::list meList;
  for (const MEStats &me : stats.mes) {
    nb::dict d;
    d["loaded"] = me.loaded;
    d["instructions"] = me.instructions;
    d["busy_cycles"] = me.busyCycles;
    d["context_swaps"] = me.contextSwaps;
    meList.append(d);
  }
  result["mes"] = meList;
  result["scratch"] = memoryStats(stats.scratch);
  result["sram"] = memoryStats(stats.sram);
  result["dram"] = memoryStats(stats.dram);
  nb::list faults;
  for (const Fault &f : stats.faults) {
    nb::dict d;
    d["me"] = f.me;
    d["context"] = f.ctx;
    d["pc"] = f.pc;
    d["instruction"] = f.instruction;
    d["reason"] = f.reason;
    d["cycle"] = f.cycle;
    faults.append(d);
  }
  result["faults"] = faults;
  result["statistics_json"] = statsToJson(stats);
  return result;
}

} // namespace

namespace netvm::python {
void bindEmulator(nb::module_ &m) {
  m.def("emulate", &emulate, "source"_a, "file_name"_a, "packets"_a, "mes"_a,
        "clock_mhz"_a, "max_cycles"_a, "options"_a,
        "Assemble a microengine program and run it on the emulator.");
}
} // namespace netvm::python
