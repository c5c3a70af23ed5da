//===- StatsJson.cpp - The emulator's statistics as JSON ------------------===//
//
// Builds a small JSON tree of the statistics and prints it: object keys in
// byte order, two spaces of indentation, integers in decimal and other
// numbers with 17 significant digits (%.17g: they read back exactly). This
// is the output netvm-emu wrote with llvm::json before, byte for byte; the
// emulator library has no LLVM, so it prints its own.
//
//===----------------------------------------------------------------------===//

#include "netvm/emu/StatsJson.h"
#include "netvm/emu/Emulator.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>
#include <vector>

using namespace netvm::me;

namespace {
class Json {
public:
  using Object = std::map<std::string, Json>;
  using Array = std::vector<Json>;

  Json() = default;
  static Json integer(int64_t value) {
    Json json(Kind::Integer);
    json.integerValue = value;
    return json;
  }
  static Json number(double value) {
    Json json(Kind::Number);
    json.numberValue = value;
    return json;
  }
  static Json string(std::string value) {
    Json json(Kind::String);
    json.text = std::move(value);
    return json;
  }
  static Json array(Array elements) {
    Json json(Kind::Array);
    json.elements = std::move(elements);
    return json;
  }
  static Json object(Object members) {
    Json json(Kind::Object);
    json.members = std::move(members);
    return json;
  }

  /// Adds a member to an object.
  void add(const std::string &key, Json value) {
    members[key] = std::move(value);
  }
  void print(std::string &out, unsigned indent) const;

private:
  enum class Kind { Null, Integer, Number, String, Array, Object };
  explicit Json(Kind kind) : kind(kind) {}

  Kind kind = Kind::Null;
  int64_t integerValue = 0;
  double numberValue = 0;
  std::string text;
  Array elements;
  Object members;
};
} // namespace

/// The length of the well-formed UTF-8 sequence at `s[at]`, or 0.
static size_t utf8Length(const std::string &s, size_t at) {
  auto byte = [&](size_t i) { return (unsigned char)s[i]; };
  unsigned char lead = byte(at);
  size_t length;
  unsigned char low = 0x80, high = 0xbf; // range of the second byte
  if (lead < 0x80)
    return 1;
  if (lead >= 0xc2 && lead <= 0xdf)
    length = 2;
  else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    low = lead == 0xe0 ? 0xa0 : 0x80;
    high = lead == 0xed ? 0x9f : 0xbf;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    low = lead == 0xf0 ? 0x90 : 0x80;
    high = lead == 0xf4 ? 0x8f : 0xbf;
  } else
    return 0;
  if (at + length > s.size() || byte(at + 1) < low || byte(at + 1) > high)
    return 0;
  for (size_t i = 2; i < length; ++i)
    if (byte(at + i) < 0x80 || byte(at + i) > 0xbf)
      return 0;
  return length;
}

/// A JSON string: quotes and backslashes escaped, control characters as
/// \t, \n, \r or \u00XX; a byte that is not part of well-formed UTF-8
/// becomes U+FFFD.
static void quote(std::string &out, const std::string &s) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    unsigned char c = (unsigned char)s[i];
    size_t length = utf8Length(s, i);
    if (length == 0) {
      out += "\xef\xbf\xbd";
      ++i;
      continue;
    }
    if (length > 1) {
      out.append(s, i, length);
      i += length;
      continue;
    }
    ++i;
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c >= 0x20) {
      out += char(c);
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      char escape[8];
      std::snprintf(escape, sizeof(escape), "\\u%04x", c);
      out += escape;
    }
  }
  out += '"';
}

static void newline(std::string &out, unsigned indent) {
  out += '\n';
  out.append(indent, ' ');
}

void Json::print(std::string &out, unsigned indent) const {
  switch (kind) {
  case Kind::Null:
    out += "null";
    return;
  case Kind::Integer:
    out += std::to_string(integerValue);
    return;
  case Kind::Number: {
    char buffer[40];
    std::snprintf(buffer, sizeof(buffer), "%.17g", numberValue);
    out += buffer;
    return;
  }
  case Kind::String:
    quote(out, text);
    return;
  case Kind::Array:
    out += '[';
    for (size_t i = 0; i < elements.size(); ++i) {
      if (i)
        out += ',';
      newline(out, indent + 2);
      elements[i].print(out, indent + 2);
    }
    if (!elements.empty())
      newline(out, indent);
    out += ']';
    return;
  case Kind::Object:
    out += '{';
    for (auto it = members.begin(); it != members.end(); ++it) {
      if (it != members.begin())
        out += ',';
      newline(out, indent + 2);
      quote(out, it->first);
      out += ": ";
      it->second.print(out, indent + 2);
    }
    if (!members.empty())
      newline(out, indent);
    out += '}';
    return;
  }
}

static Json count(uint64_t value) { return Json::integer(int64_t(value)); }

static Json ratio(uint64_t part, uint64_t whole) {
  return Json::number(whole ? double(part) / double(whole) : 0.0);
}

/// A memory with `channels` controllers: busy and mean queue depth are per
/// controller.
static Json memoryJson(const MemoryStats &m, uint64_t cycles,
                       unsigned channels = 1) {
  uint64_t capacity = cycles * channels;
  return Json::object({
      {"reads", count(m.reads)},
      {"writes", count(m.writes)},
      {"atomics", count(m.atomics)},
      {"bytes_read", count(m.bytesRead)},
      {"bytes_written", count(m.bytesWritten)},
      {"commands", count(m.commands)},
      {"busy_cycles", count(m.busyCycles)},
      {"busy", ratio(m.busyCycles, capacity)},
      {"queue_cycles", count(m.queueCycles)},
      {"mean_queue_depth", ratio(m.queueCycles + m.busyCycles, capacity)},
      {"max_queue_depth", count(m.maxQueue)},
      {"dma_commands", count(m.dmaCommands)},
      {"dma_bytes", count(m.dmaBytes)},
  });
}

static Json channelJson(const MemoryStats &m, size_t index, uint64_t cycles) {
  return Json::object({
      {"channel", count(index)},
      {"commands", count(m.commands)},
      {"busy_cycles", count(m.busyCycles)},
      {"busy", ratio(m.busyCycles, cycles)},
      {"queue_cycles", count(m.queueCycles)},
      {"mean_queue_depth", ratio(m.queueCycles + m.busyCycles, cycles)},
      {"max_queue_depth", count(m.maxQueue)},
  });
}

static Json portJson(const PortStats &p, size_t index) {
  return Json::object({
      {"port", count(index)},
      {"offered", count(p.offered)},
      {"received", count(p.received)},
      {"dropped", count(p.dropped)},
      {"truncated", count(p.truncated)},
      {"sent", count(p.sent)},
      {"bytes_received", count(p.bytesReceived)},
      {"bytes_sent", count(p.bytesSent)},
  });
}

static Json threadJson(const ThreadStats &t, size_t ctx, uint64_t cycles) {
  return Json::object({
      {"ctx", count(ctx)},
      {"instructions", count(t.instructions)},
      {"exec_cycles", count(t.execCycles)},
      {"ready_cycles", count(t.readyCycles)},
      {"wait_cycles", count(t.waitCycles)},
      {"swaps", count(t.swaps)},
      {"utilisation", ratio(t.execCycles, cycles)},
  });
}

static Json meJson(const MEStats &m, size_t me, uint64_t cycles) {
  Json::Object idle;
  for (unsigned r = 0; r < StallCount; ++r)
    idle[stallReasonName(StallReason(r))] = count(m.idleCycles[r]);
  Json::Array threads;
  for (size_t c = 0; c < m.threads.size(); ++c)
    if (m.threads[c].enabled)
      threads.push_back(threadJson(m.threads[c], c, cycles));
  return Json::object({
      {"me", count(me)},
      {"instructions", count(m.instructions)},
      {"busy_cycles", count(m.busyCycles)},
      {"utilisation", ratio(m.busyCycles, cycles)},
      {"branch_penalty_cycles", count(m.branchPenaltyCycles)},
      {"swap_cycles", count(m.swapCycles)},
      {"context_swaps", count(m.contextSwaps)},
      {"idle_cycles", Json::object(std::move(idle))},
      {"threads", Json::array(std::move(threads))},
  });
}

static Json ringJson(const RingStats &ring, unsigned index) {
  return Json::object({
      {"ring", count(index)},
      {"size_words", count(ring.sizeWords)},
      {"puts", count(ring.puts)},
      {"gets", count(ring.gets)},
      {"empty_gets", count(ring.emptyGets)},
      {"overflows", count(ring.overflows)},
      {"max_occupancy", count(ring.maxOccupancy)},
      {"final_occupancy", count(ring.finalOccupancy)},
  });
}

static Json hostJson(const Stats &s) {
  if (!s.hostAttached)
    return Json();
  const HostStats &h = s.host;
  return Json::object({
      {"calls", count(h.calls)},
      {"crossings", count(h.crossings)},
      {"words", count(h.words)},
      {"busy_cycles", count(h.busyCycles)},
      {"busy", ratio(h.busyCycles, s.cycles)},
      {"gets", count(h.gets)},
      {"puts", count(h.puts)},
      {"failed_gets", count(h.failedGets)},
      {"failed_puts", count(h.failedPuts)},
      {"overflows", count(h.overflows)},
      {"memory_reads", count(h.memoryReads)},
      {"memory_writes", count(h.memoryWrites)},
      {"failed_memory", count(h.failedMemory)},
      {"memory_bytes", count(h.memoryBytes)},
  });
}

static Json faultJson(const Fault &f) {
  return Json::object({
      {"me", count(f.me)},
      {"ctx", count(f.ctx)},
      {"pc", count(f.pc)},
      {"instruction", Json::string(f.instruction)},
      {"reason", Json::string(f.reason)},
      {"cycle", count(f.cycle)},
  });
}

std::string netvm::me::statsToJson(const Stats &s) {
  double seconds = s.seconds();
  Json::Array mes, rings, faults, ports, channels;
  for (size_t p = 0; p < s.ports.size(); ++p)
    ports.push_back(portJson(s.ports[p], p));
  for (size_t c = 0; c < s.sramChannels.size(); ++c)
    channels.push_back(channelJson(s.sramChannels[c], c, s.cycles));
  unsigned numChannels = std::max<unsigned>(1, unsigned(s.sramChannels.size()));
  Json sram = memoryJson(s.sram, s.cycles, numChannels);
  sram.add("channels", Json::array(std::move(channels)));
  for (size_t i = 0; i < s.mes.size(); ++i)
    if (s.mes[i].loaded)
      mes.push_back(meJson(s.mes[i], i, s.cycles));
  for (unsigned r = 0; r < 16; ++r)
    if (s.rings[r].configured)
      rings.push_back(ringJson(s.rings[r], r));
  for (const Fault &f : s.faults)
    faults.push_back(faultJson(f));
  Json packets = Json::object({
      {"offered", count(s.packetsOffered)},
      {"received", count(s.packetsReceived)},
      {"dropped", count(s.packetsDropped)},
      {"truncated", count(s.packetsTruncated)},
      {"sent", count(s.packetsSent)},
      {"bytes_received", count(s.bytesReceived)},
      {"bytes_sent", count(s.bytesSent)},
      {"sent_per_second",
       Json::number(seconds > 0 ? s.packetsSent / seconds : 0.0)},
      {"sent_gbps",
       Json::number(seconds > 0 ? s.bytesSent * 8.0 / seconds / 1e9 : 0.0)},
  });
  Json memory = Json::object({
      {"scratch", memoryJson(s.scratch, s.cycles)},
      {"sram", std::move(sram)},
      {"dram", memoryJson(s.dram, s.cycles)},
      {"hash_ops", count(s.hashOps)},
  });
  Json root = Json::object({
      {"cycles", count(s.cycles)},
      {"clock_mhz", Json::number(s.clockMHz)},
      {"seconds", Json::number(seconds)},
      {"stop_reason", Json::string(s.stopReason)},
      {"packets", std::move(packets)},
      {"ports", Json::array(std::move(ports))},
      {"mes", Json::array(std::move(mes))},
      {"memory", std::move(memory)},
      {"rings", Json::array(std::move(rings))},
      {"host", hostJson(s)},
      {"faults", Json::array(std::move(faults))},
  });
  std::string out;
  root.print(out, 0);
  return out;
}
