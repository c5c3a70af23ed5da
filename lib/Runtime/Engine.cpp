//===- Engine.cpp - Running applications, whatever the engine -------------===//
//
// What every engine shares: the batch entry in terms of push(), the stream
// entry over a PacketReader, and the Tally of results for engines that do
// not count for themselves. The engines are in their own files
// (InterpreterEngine.cpp, NativeEngine.cpp).
//
//===----------------------------------------------------------------------===//

#include "netvm/Runtime/Engine.h"

#include "llvm/ADT/STLExtras.h"

#include <chrono>
#include <pcap/pcap.h>

using namespace netvm;
using namespace netvm::rt;

Engine::~Engine() = default;

void Engine::runMixed(llvm::ArrayRef<unsigned> sources,
                      llvm::MutableArrayRef<netvm_packet> packets,
                      const ResultFn *onResult, ResultDetail detail) {
  if (packets.empty())
    return;
  if (runsMixedSources()) {
    mixedSources.assign(sources.begin(), sources.end());
    run(sources[0], packets, onResult, detail);
    mixedSources.clear();
    return;
  }
  for (size_t begin = 0, end; begin < packets.size(); begin = end) {
    for (end = begin + 1;
         end < packets.size() && sources[end] == sources[begin]; ++end)
      ;
    auto shifted = [&](size_t index, const PacketResult &result) {
      (*onResult)(begin + index, result);
    };
    ResultFn fn = shifted;
    run(sources[begin], packets.slice(begin, end - begin),
        onResult ? &fn : nullptr, detail);
  }
}

std::optional<std::vector<netvm_lookup_entry>>
Engine::lookupEntries(unsigned pe) {
  netvm_copro *c = coprocessor(pe, "lookup");
  if (!c)
    return std::nullopt;
  std::vector<netvm_lookup_entry> entries;
  netvm_lookup_entry e;
  for (uint32_t k = 0; netvm_lookup_get(c, k, &e); ++k)
    entries.push_back(e);
  return entries;
}

std::optional<bool> Engine::lookupDelete(unsigned pe,
                                         llvm::ArrayRef<uint32_t> key) {
  netvm_copro *c = coprocessor(pe, "lookup");
  if (!c)
    return std::nullopt;
  return netvm_lookup_delete(c, key.data(),
                             static_cast<uint32_t>(key.size())) != 0;
}

std::optional<uint32_t> Engine::lookupAge(unsigned pe, uint32_t now,
                                          uint32_t maxAge) {
  netvm_copro *c = coprocessor(pe, "lookup");
  if (!c)
    return std::nullopt;
  return netvm_lookup_age(c, now, maxAge);
}

std::optional<unsigned> Engine::findSource(llvm::StringRef name) const {
  auto it = llvm::find(sourceNames(), name);
  if (it == sourceNames().end())
    return std::nullopt;
  return it - sourceNames().begin();
}

void Engine::run(unsigned source, llvm::MutableArrayRef<netvm_packet> packets,
                 const ResultFn *onResult, ResultDetail detail) {
  TracePacket packet;
  for (size_t i = 0; i < packets.size(); ++i) {
    const netvm_packet &p = packets[i];
    packet.bytes.assign(p.data, p.data + p.length);
    packet.wireLength = p.wire_length;
    packet.seconds = p.seconds;
    packet.microseconds = p.microseconds;
    PacketResult result = push(source, packet);
    if (!onResult)
      continue;
    if (detail == ResultDetail::Verdicts)
      for (Output &out : result.outputs) {
        out.bytes.clear();
        out.info.clear();
      }
    (*onResult)(i, result);
  }
}

std::string rt::linkTypeName(int type) {
  const char *name = pcap_datalink_val_to_name(type);
  return std::string(name ? name : "unknown") + " (" + std::to_string(type) +
         ")";
}

bool rt::checkLinkType(const PacketReader &reader, std::string &error,
                       int expected) {
  int type = reader.linkType();
  if (type == expected)
    return true;
  error = "link type " + linkTypeName(type) + ": ";
  if (expected == DLT_EN10MB)
    error += "netvm's applications and NetPFL filters read Ethernet frames "
             "(EN10MB) only";
  else
    error += "the application reads " + linkTypeName(expected) + " frames";
  return false;
}

void Engine::runOutputs(unsigned source,
                        llvm::MutableArrayRef<netvm_packet> packets,
                        const OutputFn &onOutput) {
  auto deliver = [&](size_t, const PacketResult &result) {
    for (const Output &out : result.outputs)
      onOutput(out.sink, view(out));
  };
  ResultFn fn = deliver;
  run(source, packets, &fn, ResultDetail::Full);
}

PacketView rt::view(const Output &out) {
  PacketView v;
  v.data = out.bytes.data();
  v.length = static_cast<uint32_t>(out.bytes.size());
  v.wireLength = out.wireLength;
  v.seconds = out.seconds;
  v.microseconds = out.microseconds;
  return v;
}

bool Engine::runStream(unsigned source, PacketReader &reader,
                       const StreamOptions &options, const StreamFn *onPacket,
                       ResultDetail detail, StreamStats &stats,
                       std::string &error) {
  if (!checkLinkType(reader, error, linkType))
    return false;
  using Clock = std::chrono::steady_clock;
  auto secondsSince = [](Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  PacketBatch chunk;
  PacketView packet;
  // A chunk runs through one source: a packet for another source (the
  // input says which, PacketView::source) waits for the next chunk.
  TracePacket held;
  bool holding = false;
  auto sourceOf = [&](int which) {
    return which < 0 ? source : static_cast<unsigned>(which);
  };
  unsigned chunkSource = source;
  bool mixed = runsMixedSources();
  // With several threads processing, the next chunk's bytes come into
  // memory while this one runs.
  bool readAhead = threads() > 1 && reader.stableViews();
  size_t chunkBytes = 0;
  bool more = true, ok = true;
  auto done = [&] {
    return (options.maxPackets && stats.packets >= options.maxPackets) ||
           (options.maxMatches && stats.matches >= options.maxMatches) ||
           (options.stop && *options.stop);
  };
  while (more && !done()) {
    auto start = Clock::now();
    chunk.clear();
    mixedSources.clear();
    // Each packet matches at most once: a chunk no larger than the matches
    // still wanted never runs a packet past the last one.
    uint64_t limit = std::max<size_t>(1, options.chunk);
    if (options.maxMatches)
      limit = std::min(limit, options.maxMatches - stats.matches);
    if (holding) {
      chunk.add(viewOf(held));
      chunkSource = sourceOf(held.source);
      holding = false;
      ++stats.packets;
    }
    while (chunk.size() < limit) {
      if ((options.maxPackets && stats.packets >= options.maxPackets) ||
          (options.stop && *options.stop)) {
        more = false;
        break;
      }
      if (!reader.nextView(packet, error)) {
        if (reader.timedOut())
          break; // a quiet link: run what came so far, then read again
        ok = error.empty();
        more = false;
        break;
      }
      if (packet.source >= 0 &&
          static_cast<size_t>(packet.source) >= sourceNames().size()) {
        error = "packet " + std::to_string(stats.packets + 1) +
                " is for source " + std::to_string(packet.source) +
                ", but the application has " +
                std::to_string(sourceNames().size());
        ok = more = false;
        break;
      }
      if (chunk.empty()) {
        chunkSource = sourceOf(packet.source);
      } else if (!mixed && sourceOf(packet.source) != chunkSource) {
        assign(held, packet);
        holding = true;
        break;
      }
      if (mixed)
        mixedSources.push_back(sourceOf(packet.source));
      ++stats.packets;
      // A mapped file's packets run where they are; others are copied.
      chunkBytes += packet.length + 16;
      if (reader.stableViews())
        chunk.addInPlace(packet);
      else
        chunk.add(packet);
    }
    stats.readSeconds += secondsSince(start);
    if (chunk.empty())
      continue;
    if (readAhead && more)
      reader.readAhead(chunkBytes);
    chunkBytes = 0;
    start = Clock::now();
    uint64_t base = stats.packets - chunk.size();
    llvm::MutableArrayRef<netvm_packet> packets(chunk.packets(), chunk.size());
    if (onPacket || options.maxMatches) {
      auto deliver = [&](size_t i, const PacketResult &result) {
        stats.matches += !result.outputs.empty();
        if (options.onOutput)
          for (const Output &out : result.outputs)
            (*options.onOutput)(out.sink, view(out));
        if (onPacket)
          (*onPacket)(base + i + 1, packets[i], result);
      };
      ResultFn fn = deliver;
      run(chunkSource, packets, &fn,
          options.onOutput ? ResultDetail::Full
          : onPacket       ? detail
                           : ResultDetail::Verdicts);
    } else if (options.onOutput) {
      runOutputs(chunkSource, packets, *options.onOutput);
    } else {
      run(chunkSource, packets, nullptr, detail);
    }
    reader.release();
    stats.processSeconds += secondsSince(start);
  }
  return ok;
}

void Tally::add(const PacketResult &result, bool pushed) {
  totals.packets += pushed;
  totals.dropped += result.drops;
  totals.unconnected += result.unconnected;
  for (const ExceptionReport &e : result.exceptions)
    if (e.kind < NETVM_EXC_KINDS)
      ++totals.exceptions[e.kind];
  for (const Output &out : result.outputs)
    if (out.sink < sinks.size()) {
      ++sinks[out.sink].packets;
      sinks[out.sink].bytes += out.length;
    }
}
