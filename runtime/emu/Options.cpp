//===- Options.cpp - Named options of the emulated machine ----------------===//
//
// The table of machine options (runtime/include/netvm/emu/Options.h): each
// entry names a MachineConfig field (or a group of them, for the latencies and
// the controllers) and how its value is parsed and checked, so a new
// configuration field needs one entry here and is then settable from
// netvm-emu, the C API and Python alike.
//
//===----------------------------------------------------------------------===//

#include "netvm/emu/Options.h"
#include "netvm/emu/Image.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <type_traits>
#include <utility>

using namespace netvm::me;

/// An unsigned integer, decimal or 0x-hexadecimal, all of `text`, at most
/// `max`.
static bool parseInteger(std::string_view text, uint64_t max, uint64_t &value) {
  unsigned base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  }
  if (text.empty())
    return false;
  value = 0;
  for (char c : text) {
    unsigned digit;
    if (c >= '0' && c <= '9')
      digit = unsigned(c - '0');
    else if (base == 16 && c >= 'a' && c <= 'f')
      digit = unsigned(c - 'a' + 10);
    else if (base == 16 && c >= 'A' && c <= 'F')
      digit = unsigned(c - 'A' + 10);
    else
      return false;
    if (digit > max || value > (max - digit) / base)
      return false;
    value = value * base + digit;
  }
  return true;
}

/// A finite number, all of `text`.
static bool parseNumber(std::string_view text, double &value) {
  if (text.empty() || text.front() == ' ' || text.front() == '\t')
    return false;
  std::string copy(text);
  char *end = nullptr;
  value = std::strtod(copy.c_str(), &end);
  return end == copy.c_str() + copy.size() && std::isfinite(value);
}

static std::string integerRange(uint64_t min, uint64_t max, uint64_t limit) {
  if (max == limit)
    return min == 0 ? "an unsigned integer"
                    : "an integer >= " + std::to_string(min);
  return "an integer " + std::to_string(min) + "-" + std::to_string(max);
}

namespace {
/// Parses one value (one item of a list option) into the configuration;
/// on failure says what the option accepts in `allowed`.
using Setter = bool (*)(MachineConfig &config, std::string_view value,
                        std::string &allowed);

struct OptionEntry {
  MachineOptionInfo info;
  Setter set;
  bool list; // comma-separated items
};

struct LatencyUnit {
  const char *name;
  unsigned MachineConfig::*field;
  unsigned min;
};

struct ControllerUnit {
  const char *name;
  unsigned MachineConfig::*commandCycles;
  unsigned MachineConfig::*bytesPerCycle;
};
} // namespace

/// An integer field in [Min, Max].
template <auto Field, uint64_t Min, uint64_t Max>
static bool setInteger(MachineConfig &config, std::string_view text,
                       std::string &allowed) {
  using T = std::remove_reference_t<decltype(config.*Field)>;
  static_assert(Max <= std::numeric_limits<T>::max());
  uint64_t value;
  if (!parseInteger(text, Max, value) || value < Min) {
    allowed = integerRange(Min, Max, std::numeric_limits<T>::max());
    return false;
  }
  config.*Field = T(value);
  return true;
}

/// A number field, > 0 or >= 0.
template <auto Field, bool Positive>
static bool setNumber(MachineConfig &config, std::string_view text,
                      std::string &allowed) {
  double value;
  if (!parseNumber(text, value) || value < 0 || (Positive && value == 0)) {
    allowed = Positive ? "a number > 0" : "a number >= 0";
    return false;
  }
  config.*Field = value;
  return true;
}

static bool setRingOverflow(MachineConfig &config, std::string_view text,
                            std::string &allowed) {
  if (text == "fault")
    config.ringOverflow = RingOverflow::Fault;
  else if (text == "drop")
    config.ringOverflow = RingOverflow::Drop;
  else {
    allowed = "fault or drop";
    return false;
  }
  return true;
}

/// Latencies and penalties: UNIT=CYCLES, below maxLatency.
static constexpr uint64_t maxLatency = 99999;
static constexpr LatencyUnit latencyUnits[] = {
    {"scratch", &MachineConfig::scratchLatency, 1},
    {"sram", &MachineConfig::sramLatency, 1},
    {"dram", &MachineConfig::dramLatency, 1},
    {"hash", &MachineConfig::hashLatency, 1},
    {"rx", &MachineConfig::rxLatency, 1},
    {"tx", &MachineConfig::txLatency, 1},
    {"nn", &MachineConfig::nnLatency, 0},
    {"branch", &MachineConfig::branchPenalty, 0},
    {"swap", &MachineConfig::swapPenalty, 0},
};

static bool setLatency(MachineConfig &config, std::string_view text,
                       std::string &allowed) {
  size_t eq = text.find('=');
  std::string_view unit = text.substr(0, eq);
  uint64_t value = 0;
  if (eq != std::string_view::npos)
    for (const LatencyUnit &u : latencyUnits)
      if (unit == u.name &&
          parseInteger(text.substr(eq + 1), maxLatency, value) &&
          value >= u.min) {
        config.*u.field = unsigned(value);
        return true;
      }
  allowed = "UNIT=CYCLES, UNIT one of";
  std::string positive;
  for (const LatencyUnit &u : latencyUnits) {
    allowed += std::string(&u == latencyUnits ? " " : ", ") + u.name;
    if (u.min)
      positive += std::string(positive.empty() ? "" : ", ") + u.name;
  }
  allowed += "; cycles 0-" + std::to_string(maxLatency) + ", at least 1 for " +
             positive;
  return false;
}

/// Memory controllers: UNIT=CMD/BPC.
static constexpr uint64_t maxControllerSetting = 100000;
static constexpr ControllerUnit controllerUnits[] = {
    {"scratch", &MachineConfig::scratchCommandCycles,
     &MachineConfig::scratchBytesPerCycle},
    {"sram", &MachineConfig::sramCommandCycles,
     &MachineConfig::sramBytesPerCycle},
    {"dram", &MachineConfig::dramCommandCycles,
     &MachineConfig::dramBytesPerCycle},
};

/// Splits "A<sep>B" into A and B; false without the separator.
static bool split(std::string_view text, char separator, std::string_view &a,
                  std::string_view &b) {
  size_t at = text.find(separator);
  if (at == std::string_view::npos)
    return false;
  a = text.substr(0, at);
  b = text.substr(at + 1);
  return true;
}

static bool setController(MachineConfig &config, std::string_view text,
                          std::string &allowed) {
  std::string_view unit, rest, cmd, bpc;
  uint64_t command, rate;
  if (split(text, '=', unit, rest) && split(rest, '/', cmd, bpc) &&
      parseInteger(cmd, maxControllerSetting, command) &&
      parseInteger(bpc, maxControllerSetting, rate))
    for (const ControllerUnit &u : controllerUnits)
      if (unit == u.name) {
        config.*u.commandCycles = unsigned(command);
        config.*u.bytesPerCycle = unsigned(rate);
        return true;
      }
  allowed = "UNIT=CMD/BPC, UNIT one of";
  for (const ControllerUnit &u : controllerUnits)
    allowed += std::string(&u == controllerUnits ? " " : ", ") + u.name;
  allowed += "; CMD and BPC 0-" + std::to_string(maxControllerSetting);
  return false;
}

static bool setHostCost(MachineConfig &config, std::string_view text,
                        std::string &allowed) {
  std::string_view crossing, word;
  uint64_t crossingCycles, wordCycles;
  constexpr uint64_t max = std::numeric_limits<unsigned>::max();
  if (!split(text, '/', crossing, word) ||
      !parseInteger(crossing, max, crossingCycles) ||
      !parseInteger(word, max, wordCycles)) {
    allowed = "CROSSING/WORD cycles";
    return false;
  }
  config.hostCrossingCycles = unsigned(crossingCycles);
  config.hostWordCycles = unsigned(wordCycles);
  return true;
}

static constexpr unsigned maxUnsigned = std::numeric_limits<unsigned>::max();

// The help texts are netvm-emu's --help.
static constexpr OptionEntry optionTable[] = {
    {{"mes", "N", "Microengines (default 8)"},
     setInteger<&MachineConfig::numMEs, 1, maxMEs>,
     false},
    {{"control-store", "N",
      "Control-store capacity in instructions (default 4096)"},
     setInteger<&MachineConfig::controlStore, 1, 1u << 20>,
     false},
    {{"clock-mhz", "MHZ", "ME clock in MHz (default 600)"},
     setNumber<&MachineConfig::clockMHz, true>,
     false},
    {{"line-rate", "GBPS",
      "Offer packets at this rate in Gbit/s, dropping those that find no "
      "free receive buffer (default 0: lossless, packets wait)"},
     setNumber<&MachineConfig::lineRateGbps, false>,
     false},
    {{"sram-channels", "N",
      "SRAM channels, each with its own controller over an equal part of "
      "SRAM (default 2)"},
     setInteger<&MachineConfig::sramChannels, 1, 8>,
     false},
    {{"max-packet", "BYTES",
      "Bytes of a packet that receive copies to DRAM; longer packets are "
      "truncated (default 2048; 65536 for applications compiled by netc, "
      "netvm-run --engine=emu and Python)"},
     setInteger<&MachineConfig::maxPacketBytes, 64, 65536>,
     false},
    {{"rbufs", "N", "Receive buffer elements (default 16)"},
     setInteger<&MachineConfig::rbufElements, 1, 1u << 20>,
     false},
    {{"latency", "UNIT=CYCLES[,...]",
      "Set a latency in cycles: UNIT=N with UNIT one of scratch, sram, "
      "dram, hash, rx, tx, nn, branch, swap (repeatable)"},
     setLatency,
     true},
    {{"controller", "UNIT=CMD/BPC[,...]",
      "Set a memory controller's service: UNIT=CMD/BPC with UNIT one of "
      "scratch, sram, dram; CMD cycles a command plus one cycle per BPC "
      "bytes (BPC 0: no transfer time; 0/0: no queueing); repeatable"},
     setController,
     true},
    {{"quantum", "N",
      "Cycles each ME runs between exchanges of shared effects (default "
      "16; at most the shortest memory latency)"},
     setInteger<&MachineConfig::quantum, 1, maxUnsigned>,
     false},
    {{"ring-overflow", "fault|drop",
      "A put on a full scratch ring: fault (stop the ME, default) or drop "
      "(count it)"},
     setRingOverflow,
     false},
    {{"max-cycles", "N", "Stop after this many cycles"},
     setInteger<&MachineConfig::maxCycles, 0,
                std::numeric_limits<uint64_t>::max()>,
     false},
    {{"stall-cycles", "N",
      "Stop after N cycles without progress (no memory write, ring put or "
      "non-empty get, packet, next-neighbour write or host action; default "
      "100000000, 0: never)"},
     setInteger<&MachineConfig::stallCycles, 0,
                std::numeric_limits<uint64_t>::max()>,
     false},
    {{"host-cost", "CROSSING/WORD",
      "Cost of a host crossing: CROSSING/WORD cycles (default 300/9)"},
     setHostCost,
     false},
};

static const OptionEntry *findEntry(std::string_view name) {
  for (const OptionEntry &entry : optionTable)
    if (name == entry.info.name)
      return &entry;
  return nullptr;
}

size_t netvm::me::machineOptionCount() {
  return sizeof(optionTable) / sizeof(optionTable[0]);
}

const MachineOptionInfo &netvm::me::machineOption(size_t index) {
  return optionTable[index].info;
}

const MachineOptionInfo *netvm::me::findMachineOption(std::string_view name) {
  const OptionEntry *entry = findEntry(name);
  return entry ? &entry->info : nullptr;
}

bool netvm::me::applyMachineOption(MachineConfig &config, std::string_view name,
                                   std::string_view value, std::string &error,
                                   std::string_view spelling) {
  const OptionEntry *entry = findEntry(name);
  if (!entry) {
    error = "unknown option '" + std::string(spelling) + std::string(name) +
            "' (one of";
    for (const OptionEntry &e : optionTable)
      error += std::string(&e == optionTable ? " " : ", ") + e.info.name;
    error += ")";
    return false;
  }
  // A copy, so that a list that fails half-way changes nothing.
  MachineConfig updated = config;
  std::string_view rest = value;
  for (;;) {
    size_t comma = entry->list ? rest.find(',') : std::string_view::npos;
    std::string_view item = rest.substr(0, comma);
    std::string allowed;
    if (!entry->set(updated, item, allowed)) {
      error = "bad " + std::string(spelling) + entry->info.name + " '" +
              std::string(item) + "' (" + allowed + ")";
      return false;
    }
    if (comma == std::string_view::npos)
      break;
    rest.remove_prefix(comma + 1);
  }
  config = updated;
  return true;
}
