//===- Transmit.cpp - The transmit path of the three designs -------------===//
//
// The sending application and the host stack, the NP side of the DOWN
// direction (seed 002's HOSTINGRESS and freelist manager, and the DMA
// engine reading host memory, modelled with netvm/hostif) and the ME code
// that finishes and transmits each frame. emu-nic: the host builds the
// whole frame, checksum included, and writes it into an NP buffer by
// programmed I/O, with an interrupt per completion. softnic: the host
// builds the frame without its checksum and posts a descriptor in the
// DOWN ring; the NP DMAs the frame in, the MEs fill the checksum. onloader:
// the host posts a descriptor of the user's payload; the NP DMAs the
// payload, the MEs build the headers from the socket's template and fill
// the checksum. Frames complete out of order (16 transmitting contexts);
// the freelist moves the DOWN ring's HEAD in order.
//
//===----------------------------------------------------------------------===//

#include "Layout.h"

#include "netvm/emu/Emulator.h"
#include "netvm/hostif/Freelist.h"
#include "netvm/hostif/Ring.h"
#include "netvm/onload/Onload.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>

namespace netvm::onload {

using namespace hostif;

namespace {

struct Times {
  uint64_t start = 0, posted = 0, dmaStart = 0, dmaDone = 0;
};

struct Read {
  uint64_t done = 0;
  uint32_t seq = 0, buffer = 0;
  int entry = -1;
};

class Transmitter : public me::PacketOutput, public Side {
public:
  Transmitter(const OnloadConfig &config, const Traffic &traffic,
              const SessionHooks *hooks, OnloadResult &result,
              SharedHost *shared = nullptr)
      : config(config), traffic(traffic), hooks(hooks), result(result),
        ownDma(config.dma, config.features.pipelinedDma),
        dma(shared ? shared->dma : ownDma),
        hostFree(shared ? shared->hostFree : ownFree),
        producer(config.downRingBytes), consumer(config.downRingBytes),
        down(config.downRingBytes), freelist(config.downRingBytes / 64),
        times(traffic.datagrams.size()), seen(traffic.datagrams.size()) {
    for (unsigned i = 0; i < config.txBuffers; ++i)
      buffers.push_back(txBufferBase + i * bufferBytes);
  }

  static uint64_t step(netvm_emu_host *host, void *self) {
    return static_cast<Transmitter *>(self)->call(host);
  }
  void transmit(const me::Transmission &t) override;
  void finish(const me::Stats &stats);
  // A session's side: the program's sends grow the traffic.
  void step(netvm_emu_host *host) override {
    if (times.size() < traffic.frames.size()) {
      times.resize(traffic.frames.size());
      seen.resize(traffic.frames.size());
    }
    call(host);
  }
  bool idle(uint64_t) const override {
    return result.delivered + result.corrupted + result.duplicates >=
               traffic.frames.size() &&
           direct.empty();
  }
  me::PacketOutput *output() override { return this; }

private:
  uint64_t call(netvm_emu_host *host);
  void hostSend(netvm_emu_host *host, uint64_t now);
  void npSide(netvm_emu_host *host, uint64_t now);
  uint64_t charge(double cycles) {
    uint64_t c = uint64_t(std::llround(cycles));
    result.host.busyCycles += c;
    return c;
  }
  double pioWrite(uint32_t bytes) const {
    return config.dma.pioWriteStart + bytes * config.dma.pioWriteCyclesPerByte;
  }
  void post(netvm_emu_host *host, uint32_t buffer, uint32_t seq);

  const OnloadConfig &config;
  const Traffic &traffic;
  const SessionHooks *hooks; // null: the modelled application
  OnloadResult &result;
  DmaEngine ownDma;
  DmaEngine &dma; // a session's is shared with its receive side
  uint64_t ownFree = 0;
  uint64_t &hostFree;    // ... and so is the host's time
  RingProducer producer; // the host's side of the DOWN ring
  RingConsumer consumer; // the NP's
  std::vector<uint8_t> down;
  Freelist freelist;
  std::vector<uint32_t> buffers;        // free NP transmit buffers
  std::map<uint32_t, int> busy;         // buffer -> freelist entry
  std::map<uint32_t, uint32_t> holding; // buffer -> datagram posted in it
  std::vector<Read> reads;
  std::multimap<uint64_t, uint32_t> landing; // descriptors: cycle -> TAIL
  std::multimap<uint64_t, uint32_t> headLanding;
  std::multimap<uint64_t, std::pair<uint32_t, uint32_t>> direct; // emu-nic
  std::vector<Times> times;
  std::vector<bool> seen;
  uint32_t next = 0;
  uint64_t lastHead = 0;
  uint32_t committed = 0, sentHead = 0;
  unsigned headsInFlight = 0;
  uint64_t lastTransmit = 0;
  bool markersSent = false, started = false;
  StageSums stageSums;
};

} // namespace

void Transmitter::transmit(const me::Transmission &t) {
  uint32_t seq = UINT32_MAX;
  if (hooks) {
    // A session's payloads carry no sequence number: the buffer says
    // which datagram the frame is.
    auto it = holding.find(t.dramAddress);
    if (it != holding.end())
      seq = it->second;
    hooks->transmitted(seq, t.bytes, t.length, t.cycle);
  } else if (t.length >= 46)
    seq = uint32_t(t.bytes[42]) << 24 | uint32_t(t.bytes[43]) << 16 |
          uint32_t(t.bytes[44]) << 8 | t.bytes[45];
  if (seq >= traffic.frames.size() || traffic.frames[seq].size() != t.length ||
      !std::equal(t.bytes, t.bytes + t.length, traffic.frames[seq].begin())) {
    ++result.corrupted;
    return;
  }
  if (!countDelivery(result, seen, seq, traffic.datagrams[seq].payload.size()))
    return;
  lastTransmit = std::max(lastTransmit, t.cycle);
  const Times &w = times[seq];
  StageSums &s = stageSums;
  s.add("1 host send", w.start, w.posted);
  s.add("2 DOWN ring to the NP side", w.posted, w.dmaStart);
  s.add("3 DMA from host memory", w.dmaStart, w.dmaDone);
  s.add("4 MEs: headers, checksum, transmit", w.dmaDone, t.cycle);
}

void Transmitter::post(netvm_emu_host *host, uint32_t buffer, uint32_t seq) {
  const std::vector<uint8_t> &frame = traffic.frames[seq];
  uint32_t flags = 0, block = 0;
  if (config.design == Design::SoftNic)
    flags = txFillChecksum;
  if (config.design == Design::Onloader && hooks) {
    flags = txFillChecksum | txBuildHeaders;
    block = hooks->blocks[seq];
  } else if (config.design == Design::Onloader) {
    flags = txFillChecksum | txBuildHeaders;
    size_t socket =
        std::find(traffic.boundPorts.begin(), traffic.boundPorts.end(),
                  traffic.datagrams[seq].srcPort) -
        traffic.boundPorts.begin();
    block = controlBlocks + uint32_t(socket) * controlBlockBytes;
  }
  uint32_t entry[txEntryWords] = {buffer, uint32_t(frame.size()), flags, block};
  holding[buffer] = seq;
  netvm_emu_host_ring_put(host, fromHostRing, entry, txEntryWords);
}

void Transmitter::hostSend(netvm_emu_host *host, uint64_t now) {
  const HostCosts &c = config.host;
  while (!direct.empty() && direct.begin()->first <= now) {
    auto [buffer, seq] = direct.begin()->second;
    const std::vector<uint8_t> &frame = traffic.frames[seq];
    netvm_emu_host_write(host, NETVM_EMU_DRAM, buffer, frame.data(),
                         uint32_t(frame.size()));
    post(host, buffer, seq);
    direct.erase(direct.begin());
  }
  if (hostFree > now)
    return;
  uint64_t at = now;
  if (config.design == Design::EmuNic) {
    // Completions first: an interrupt and an uncached read each.
    for (uint32_t buffer : takeDone(host)) {
      buffers.push_back(buffer);
      ++result.host.interrupts;
      at += charge(c.interrupt + config.dma.pioReadBurstCycles);
    }
    if (next < traffic.frames.size() && !buffers.empty()) {
      uint32_t seq = next++;
      times[seq].start = at;
      uint32_t length = uint32_t(traffic.datagrams[seq].payload.size());
      const std::vector<uint8_t> &frame = traffic.frames[seq];
      // send(): copy in, output processing with the checksum in software,
      // then the driver writes the frame and the descriptor across.
      at += charge(c.syscall + c.copyPerByte * length + c.protocolTx +
                   c.checksumPerByte * (length + 8) +
                   pioWrite(uint32_t(frame.size())) + pioWrite(16));
      ++result.host.syscalls;
      ++result.host.protocolRuns;
      result.host.copiedBytes += length;
      result.host.checksummedBytes += length + 8;
      // The writes land when the host's work is done.
      direct.emplace(at, std::make_pair(buffers.back(), seq));
      buffers.pop_back();
      times[seq].posted = times[seq].dmaStart = times[seq].dmaDone = at;
    }
    hostFree = at;
    return;
  }
  if (next >= traffic.frames.size())
    return;
  Placement where;
  if (!producer.place(12, where))
    return; // the DOWN ring is full: send() waits for the HEAD
  uint32_t seq = next++;
  times[seq].start = at;
  uint32_t length = uint32_t(traffic.datagrams[seq].payload.size());
  if (config.design == Design::SoftNic) {
    at += charge(c.syscall + c.copyPerByte * length + c.protocolTx);
    ++result.host.protocolRuns;
    result.host.copiedBytes += length;
  } else {
    at +=
        charge(c.syscall + (config.cacheMappings ? c.mapCached : c.mapBuffer));
    ++result.host.mappings;
    result.host.mappingHits += config.cacheMappings;
  }
  ++result.host.syscalls;
  // The descriptor (the buffer's address and length; here the datagram's
  // number) and the TAIL go across by programmed writes.
  at += charge(pioWrite(slotBytes(12)) + pioWrite(4));
  ++result.tailUpdates;
  if (where.wrap)
    encodeHeader(&down[where.wrapAt], MsgWrap, 0);
  encodeHeader(&down[where.offset], MsgData, 12);
  uint8_t *d = &down[where.offset + headerBytes];
  for (int b = 0; b < 4; ++b)
    d[b] = uint8_t(seq >> (24 - 8 * b));
  producer.commit(where);
  landing.emplace(at, producer.tail());
  times[seq].posted = at;
  hostFree = at;
}

void Transmitter::npSide(netvm_emu_host *host, uint64_t now) {
  while (!landing.empty() && landing.begin()->first <= now) {
    consumer.setTail(landing.begin()->second);
    landing.erase(landing.begin());
  }
  while (!headLanding.empty() && headLanding.begin()->first <= now) {
    producer.setHead(headLanding.begin()->second);
    headLanding.erase(headLanding.begin());
    --headsInFlight;
  }
  // Reads that arrived: the frame (or payload) is in DRAM, the MEs take
  // it from here.
  std::sort(reads.begin(), reads.end(),
            [](const Read &a, const Read &b) { return a.done < b.done; });
  size_t n = 0;
  for (; n < reads.size() && reads[n].done <= now; ++n) {
    const Read &r = reads[n];
    const std::vector<uint8_t> &frame = traffic.frames[r.seq];
    uint32_t skip = config.design == Design::Onloader ? 42 : 0;
    std::vector<uint8_t> bytes(frame.begin() + skip, frame.end());
    if (config.design == Design::SoftNic)
      bytes[40] = bytes[41] = 0; // the host left the checksum to the MEs
    netvm_emu_host_write(host, NETVM_EMU_DRAM, r.buffer + skip, bytes.data(),
                         uint32_t(bytes.size()));
    post(host, r.buffer, r.seq);
    busy[r.buffer] = r.entry;
    times[r.seq].dmaDone = r.done;
  }
  reads.erase(reads.begin(), reads.begin() + n);
  // Transmitted frames: their buffers come back and their DOWN entries
  // complete, in whatever order the contexts finished.
  for (uint32_t buffer : takeDone(host)) {
    buffers.push_back(buffer);
    auto it = busy.find(buffer);
    if (it != busy.end()) {
      freelist.complete(unsigned(it->second));
      busy.erase(it);
    }
  }
  freelist.commit(committed);
  // HOSTINGRESS: take descriptors while there is a buffer, a freelist entry
  // and room at the DMA engine.
  unsigned limit = config.features.pipelinedDma ? 2 : 1;
  Message m;
  while (reads.size() + headsInFlight < limit && !buffers.empty() &&
         freelist.inUse() < freelist.capacity() &&
         consumer.peek(down.data(), m) && m.type == MsgData) {
    const uint8_t *d = &down[m.offset + headerBytes];
    uint32_t seq = uint32_t(d[0]) << 24 | uint32_t(d[1]) << 16 |
                   uint32_t(d[2]) << 8 | d[3];
    consumer.consume(m);
    Read r;
    r.seq = seq;
    r.buffer = buffers.back();
    buffers.pop_back();
    r.entry = freelist.issue(m.newHead);
    uint32_t bytes = uint32_t(traffic.frames[seq].size());
    if (config.design == Design::Onloader)
      bytes = uint32_t(traffic.datagrams[seq].payload.size());
    times[seq].dmaStart = now;
    r.done = dma.submit(now, bytes, nullptr, true);
    reads.push_back(r);
  }
  // The HEAD goes back by DMA: at once when idle, at most every period
  // under load (adaptive), or after every change.
  bool loaded = !consumer.empty();
  if (committed != sentHead && reads.size() + headsInFlight < limit &&
      (!config.features.adaptiveUpdates || !loaded ||
       now - lastHead >= config.features.updatePeriod)) {
    sentHead = committed;
    lastHead = now;
    ++headsInFlight;
    ++result.headUpdates;
    headLanding.emplace(dma.submit(now, 4), committed);
  }
}

uint64_t Transmitter::call(netvm_emu_host *host) {
  uint64_t now = netvm_emu_host_now(host);
  if (!started && !hooks) {
    // A buffer for each receiving context, so that it reaches the end of
    // the (empty) input and stops (a session's receive side runs).
    started = true;
    for (unsigned i = 0; i < config.rxMEs * 8; ++i) {
      uint32_t buffer = bufferBase + i * bufferBytes;
      netvm_emu_host_ring_put(host, freeRing, &buffer, 1);
    }
  }
  if (config.design != Design::EmuNic)
    npSide(host, now);
  hostSend(host, now);
  if (!hooks &&
      result.delivered + result.corrupted + result.duplicates >=
          traffic.frames.size() &&
      !markersSent) {
    // Every frame has left: stop the transmitting contexts.
    stopTransmitters(host, config);
    markersSent = true;
    return 0;
  }
  return config.tick;
}

void Transmitter::finish(const me::Stats &stats) {
  result.dmaTransfers = dma.transfers;
  result.dmaBytes = dma.bytesMoved;
  result.lastDelivery = lastTransmit;
  result.firstArrival = 0;
  stageSums.finish(result, stats);
  for (bool s : seen)
    result.missing += !s;
}

std::unique_ptr<Side> transmitSide(const OnloadConfig &config,
                                   const Traffic &traffic,
                                   const SessionHooks &hooks,
                                   OnloadResult &result, SharedHost &shared) {
  return std::make_unique<Transmitter>(config, traffic, &hooks, result,
                                       &shared);
}

bool runTransmit(const OnloadConfig &config, const me::Image &image,
                 const Traffic &traffic, OnloadResult &result,
                 std::string &error) {
  result = OnloadResult();
  result.offered = traffic.frames.size();
  me::MachineConfig machine = onloadMachine(config);
  if (config.txBuffers == 0 ||
      config.txBuffers > fromHostWords / txEntryWords - 16 ||
      txBufferBase + uint64_t(config.txBuffers) * bufferBytes >
          machine.dramBytes) {
    error = "between 1 and " +
            std::to_string(fromHostWords / txEntryWords - 16) +
            " transmit buffers fit the rings and DRAM";
    return false;
  }
  if (config.downRingBytes % slotAlign || config.downRingBytes < 4 * 64) {
    error = "the DOWN ring must be a multiple of 64 bytes, at least 256";
    return false;
  }
  me::Emulator emulator(machine);
  if (!emulator.load(image, error) ||
      !setUpSockets(emulator, traffic.boundPorts, error))
    return false;
  // Nothing arrives: the receiving contexts stop at once.
  Traffic none;
  TrafficInput input(none);
  emulator.setInput(&input);
  Transmitter transmitter(config, traffic, nullptr, result);
  emulator.setOutput(&transmitter);
  emulator.attachHost(&Transmitter::step, &transmitter, 0);
  emulator.run();
  transmitter.finish(emulator.stats());
  return true;
}

} // namespace netvm::onload
