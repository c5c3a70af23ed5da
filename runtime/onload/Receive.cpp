//===- Receive.cpp - The receive path of the three designs ---------------===//
//
// The NP side of the host/NP interface (the HOSTEGRESS and head/tail
// manager threads of seed 002 and the DMA engine, modelled here with the
// cost model of netvm/hostif/Dma.h) and the host (the driver, the stack
// and a receiving application), attached to the emulator as host code.
// The emulator's own host-crossing cost is set to zero for these runs: the
// interface's costs are the ones of this model. Every call looks at the
// machine once (the `tick`), lands what finished, moves new entries and
// lets the host work if it is free.
//
//===----------------------------------------------------------------------===//

#include "Layout.h"
#include "Stack.h"

#include "netvm/emu/Emulator.h"
#include "netvm/hostif/Ring.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <optional>

namespace netvm::onload {

using namespace hostif;

const char *designName(Design design) {
  switch (design) {
  case Design::EmuNic:
    return "emu-nic";
  case Design::SoftNic:
    return "softnic";
  case Design::Onloader:
    return "onloader";
  case Design::Raw:
    return "raw";
  }
  return "?";
}

bool parseDesign(const std::string &name, Design &design) {
  for (Design d :
       {Design::EmuNic, Design::SoftNic, Design::Onloader, Design::Raw})
    if (name == designName(d)) {
      design = d;
      return true;
    }
  return false;
}

uint64_t Drops::total() const {
  return fabric + meNotUdp + meFragment + meChecksum + meNoSocket +
         meMalformed + hostNotUdp + hostFragment + hostChecksum + hostNoSocket +
         hostMalformed;
}

double OnloadResult::datagramsPerSecond() const {
  if (lastDelivery <= firstArrival || !delivered)
    return 0;
  return double(delivered) * clockMHz * 1e6 /
         double(lastDelivery - firstArrival);
}

double OnloadResult::hostCyclesPerDatagram() const {
  return delivered ? double(host.busyCycles) / double(delivered) : 0;
}

namespace {

/// When a message passed each point (ME cycles).
struct Track {
  uint32_t seq = 0, number = 0; // number: the frame's place on the wire
  uint64_t rx = 0, done = 0, got = 0, landed = 0, visible = 0, start = 0;
  bool verified = false; // softnic: the MEs checked the UDP checksum
};

struct Entry {
  uint32_t buffer = 0, length = 0, info = 0;
  Track track;
  std::vector<uint8_t> bytes;
  unsigned ring = 0;
  std::vector<uint8_t> payload; // what goes into the UP ring
};

struct UpRing {
  explicit UpRing(uint32_t size) : producer(size), consumer(size), mem(size) {}
  RingProducer producer;
  RingConsumer consumer;
  std::vector<uint8_t> mem;
  uint32_t landedTail = 0, sentTail = 0;
  unsigned landedCount = 0, visibleCount = 0;
  std::deque<Track> tracks; // landed messages, in ring order
  bool waiting = false;     // onloader: the application sleeps on it
};

struct Transfer {
  uint64_t done = 0;
  bool tail = false;
  unsigned ring = 0;
  uint32_t tailValue = 0;
  unsigned covers = 0; // tail: messages it makes visible
  std::vector<std::pair<Placement, Entry>> messages;
};

class Receiver : public Side {
public:
  Receiver(const OnloadConfig &config, const Traffic &traffic,
           const SessionHooks *hooks, OnloadResult &result,
           SharedHost *shared = nullptr)
      : config(config), traffic(traffic), hooks(hooks), result(result),
        ownDma(config.dma, config.features.pipelinedDma),
        dma(shared ? shared->dma : ownDma),
        hostFree(shared ? shared->hostFree : ownFree) {
    unsigned rings =
        config.design == Design::Onloader ? traffic.boundPorts.size() : 1;
    for (unsigned i = 0; i < rings; ++i)
      up.emplace_back(config.upRingBytes);
    seen.assign(traffic.datagrams.size(), false);
    for (size_t i = 0; i < traffic.boundPorts.size(); ++i)
      sockets[traffic.boundPorts[i]] = unsigned(i);
  }

  static uint64_t step(netvm_emu_host *host, void *self) {
    return static_cast<Receiver *>(self)->call(host);
  }

  uint64_t call(netvm_emu_host *host);
  void finish(const me::Stats &stats);
  // A session's side.
  void step(netvm_emu_host *host) override { call(host); }
  bool idle(uint64_t now) const override {
    return nextNumber == traffic.frames.size() && idle() && hostFree <= now;
  }
  void bound(uint16_t port) override {
    if (config.design == Design::Onloader)
      up.emplace_back(config.upRingBytes);
    unsigned index = unsigned(sockets.size());
    sockets[port] = index;
  }

private:
  void start(netvm_emu_host *host);
  void land(netvm_emu_host *host, uint64_t now);
  void take(netvm_emu_host *host, uint64_t now);
  void accept(netvm_emu_host *host, Entry e);
  void schedule(uint64_t now);
  void hostWork(netvm_emu_host *host, uint64_t now);
  uint64_t drain(UpRing &ring, unsigned index, uint64_t at);
  void deliver(const uint8_t *payload, uint32_t length, uint16_t port,
               uint32_t srcIp, uint16_t srcPort, Track track, uint64_t at);
  void account(Track track, uint64_t at);
  bool refused(InputVerdict verdict);
  uint64_t charge(double cycles) {
    uint64_t c = uint64_t(std::llround(cycles));
    result.host.busyCycles += c;
    return c;
  }
  uint64_t headWrite() {
    ++result.headUpdates;
    return charge(config.dma.pioWriteStart +
                  4 * config.dma.pioWriteCyclesPerByte);
  }
  bool idle() const;

  const OnloadConfig &config;
  const Traffic &traffic;
  const SessionHooks *hooks; // null: the modelled application
  OnloadResult &result;
  DmaEngine ownDma;
  DmaEngine &dma; // a session's is shared with its transmit side
  uint64_t ownFree = 0;
  uint64_t &hostFree; // ... and so is the host's time
  std::vector<UpRing> up;
  std::map<uint16_t, unsigned> sockets;
  std::vector<bool> seen;
  std::deque<Entry> pending; // NP side, waiting for a DMA
  std::deque<Entry> device;  // emu-nic: the device's receive queue
  /// A session: entries by packet number until their predecessors are
  /// taken, so that every socket sees the input's order (16 contexts
  /// finish frames out of order); refused frames are placeholders.
  std::map<uint32_t, std::optional<Entry>> reorder;
  uint32_t nextNumber = 0;
  std::vector<Transfer> inFlight;                               // DMAs
  std::multimap<uint64_t, std::pair<unsigned, uint32_t>> heads; // PIO HEADs
  bool started = false;
  unsigned markers = 0;
  uint64_t nextPoll = 0, lastUpdate = 0;
  uint64_t interruptAt = UINT64_MAX;
  bool interruptsOn = true;
  StageSums stageSums;
};

} // namespace

void putFreeBuffers(netvm_emu_host *host, unsigned count) {
  std::vector<uint32_t> words;
  for (unsigned i = 0; i < count; ++i)
    words.push_back(bufferBase + i * bufferBytes);
  for (size_t i = 0; i < words.size(); i += 16)
    netvm_emu_host_ring_put(host, freeRing, &words[i],
                            unsigned(std::min<size_t>(16, words.size() - i)));
}

std::string describeFault(const me::Fault &f) {
  return "ME " + std::to_string(f.me) + " context " + std::to_string(f.ctx) +
         " pc " + std::to_string(f.pc) + ": " + f.reason;
}

void Receiver::start(netvm_emu_host *host) {
  started = true;
  putFreeBuffers(host, config.buffers);
}

bool Receiver::refused(InputVerdict verdict) {
  switch (verdict) {
  case InputVerdict::Ok:
    return false;
  case InputVerdict::NotUdp:
    ++result.drops.hostNotUdp;
    break;
  case InputVerdict::Fragment:
    ++result.drops.hostFragment;
    break;
  case InputVerdict::Malformed:
    ++result.drops.hostMalformed;
    break;
  case InputVerdict::BadChecksum:
    ++result.drops.hostChecksum;
    break;
  }
  return true;
}

void Receiver::deliver(const uint8_t *payload, uint32_t length, uint16_t port,
                       uint32_t srcIp, uint16_t srcPort, Track track,
                       uint64_t at) {
  if (hooks) {
    // A session: the datagram goes to the program's socket queue.
    hooks->deliver(port, srcIp, srcPort, payload, length, track.number, at);
    ++result.delivered;
    result.deliveredBytes += length;
    account(track, at);
    return;
  }
  // The application checks what it received against what was sent.
  uint32_t seq = length >= 4
                     ? uint32_t(payload[0]) << 24 | uint32_t(payload[1]) << 16 |
                           uint32_t(payload[2]) << 8 | payload[3]
                     : UINT32_MAX;
  if (seq >= traffic.datagrams.size()) {
    ++result.corrupted;
    return;
  }
  const Datagram &d = traffic.datagrams[seq];
  if (d.payload.size() != length ||
      !std::equal(d.payload.begin(), d.payload.end(), payload) ||
      (port && port != d.dstPort) || d.badChecksum || d.fragment) {
    ++result.corrupted;
    return;
  }
  if (!countDelivery(result, seen, seq, length))
    return;
  account(track, at);
}

void Receiver::account(Track track, uint64_t at) {
  result.lastDelivery = std::max(result.lastDelivery, at);
  if (track.rx && (!result.firstArrival || track.rx < result.firstArrival))
    result.firstArrival = track.rx;
  StageSums &s = stageSums;
  s.add("1 ME receive and protocol", track.rx, track.done);
  s.add("2 ring to the NP side", track.done, track.got);
  s.add("3 DMA (queue, descriptor, transfer)", track.got, track.landed);
  s.add("4 TAIL update", track.landed, track.visible);
  s.add("5 host notices (interrupt or poll, wakeup)", track.visible,
        track.start);
  s.add("6 host stack and recv", track.start, at);
}

void Receiver::land(netvm_emu_host *host, uint64_t now) {
  std::sort(
      inFlight.begin(), inFlight.end(),
      [](const Transfer &a, const Transfer &b) { return a.done < b.done; });
  size_t n = 0;
  for (; n < inFlight.size() && inFlight[n].done <= now; ++n) {
    Transfer &t = inFlight[n];
    UpRing &ring = up[t.ring];
    if (t.tail) {
      ring.consumer.setTail(t.tailValue);
      for (unsigned i = ring.visibleCount; i < t.covers; ++i)
        ring.tracks[i - (ring.landedCount - ring.tracks.size())].visible =
            t.done;
      ring.visibleCount = std::max(ring.visibleCount, t.covers);
      // Interrupts: the head/tail manager raises one with an update the
      // host asked for (onloader: only for a sleeping application).
      bool wanted =
          config.design == Design::Onloader
              ? ring.waiting
              : config.features.notify != Notify::Polling && interruptsOn;
      if (wanted && config.features.notify != Notify::Polling)
        interruptAt = std::min(interruptAt, t.done);
      continue;
    }
    for (auto &[where, entry] : t.messages) {
      if (where.wrap)
        encodeHeader(&ring.mem[where.wrapAt], MsgWrap,
                     ring.mem.size() - where.wrapAt - headerBytes);
      encodeHeader(&ring.mem[where.offset], MsgData,
                   uint32_t(entry.payload.size()));
      std::copy(entry.payload.begin(), entry.payload.end(),
                ring.mem.begin() + where.offset + headerBytes);
      ring.landedTail = where.newTail;
      entry.track.landed = t.done;
      ring.tracks.push_back(entry.track);
      ++ring.landedCount;
      // The buffer goes back to the MEs once its bytes have left.
      netvm_emu_host_ring_put(host, freeRing, &entry.buffer, 1);
    }
  }
  inFlight.erase(inFlight.begin(), inFlight.begin() + n);
  while (!heads.empty() && heads.begin()->first <= now) {
    auto [ring, head] = heads.begin()->second;
    up[ring].producer.setHead(head);
    heads.erase(heads.begin());
  }
}

void Receiver::take(netvm_emu_host *host, uint64_t now) {
  int words = netvm_emu_host_ring_count(host, toHostRing);
  for (; words >= int(entryWords); words -= entryWords) {
    uint32_t w[entryWords];
    if (netvm_emu_host_ring_get(host, toHostRing, w, entryWords) != 0)
      break;
    if (w[0] == markerBuffer) {
      ++markers;
      continue;
    }
    if (w[2] == refusedInfo) {
      // Refused and counted by the MEs: the buffer goes back.
      netvm_emu_host_ring_put(host, freeRing, &w[0], 1);
      if (hooks)
        reorder.emplace(w[5], std::nullopt);
      continue;
    }
    Entry e;
    e.buffer = w[0];
    e.length = w[1];
    e.info = w[2];
    e.track.rx = w[3];
    e.track.done = w[4];
    e.track.number = w[5];
    e.track.got = now;
    e.track.verified = config.design == Design::SoftNic && e.info == 1;
    e.bytes.resize(e.length);
    netvm_emu_host_read(host, NETVM_EMU_DRAM, e.buffer, e.bytes.data(),
                        e.length);
    if (hooks)
      reorder.emplace(w[5], std::move(e));
    else
      accept(host, std::move(e));
  }
  // A session's lossless wire numbers every frame: release them in order.
  while (!reorder.empty() && reorder.begin()->first == nextNumber) {
    if (reorder.begin()->second)
      accept(host, std::move(*reorder.begin()->second));
    reorder.erase(reorder.begin());
    ++nextNumber;
  }
}

void Receiver::accept(netvm_emu_host *host, Entry e) {
  if (config.design == Design::EmuNic) {
    device.push_back(std::move(e));
    return;
  }
  if (config.design == Design::Onloader) {
    // The ME found the socket; the payload goes to its queue in user
    // memory, with the sender's address in front (12 bytes).
    ParsedDatagram p;
    if (refused(parseInput(e.bytes.data(), e.length, false, p)) ||
        e.info >= up.size()) {
      ++result.corrupted; // the ME let through what it should not have
      netvm_emu_host_ring_put(host, freeRing, &e.buffer, 1);
      return;
    }
    e.ring = e.info;
    e.payload.resize(12 + p.payloadLength);
    uint32_t meta[3] = {p.srcIp, uint32_t(p.srcPort) << 16 | p.dstPort,
                        p.payloadLength};
    for (int i = 0; i < 3; ++i)
      for (int b = 0; b < 4; ++b)
        e.payload[i * 4 + b] = uint8_t(meta[i] >> (24 - 8 * b));
    std::copy(p.payload, p.payload + p.payloadLength, e.payload.begin() + 12);
  } else {
    e.payload = e.bytes;
  }
  pending.push_back(std::move(e));
}

void Receiver::schedule(uint64_t now) {
  unsigned limit = config.features.pipelinedDma ? 2 : 1;
  while (inFlight.size() < limit) {
    // TAIL first when it is due: at once when idle, at most every period
    // under load (adaptive), or after every message.
    UpRing *dirty = nullptr;
    unsigned index = 0;
    for (unsigned i = 0; i < up.size(); ++i)
      if (up[i].landedTail != up[i].sentTail) {
        dirty = &up[i];
        index = i;
        break;
      }
    bool loaded = !pending.empty();
    if (dirty && (!config.features.adaptiveUpdates || !loaded ||
                  now - lastUpdate >= config.features.updatePeriod)) {
      Transfer t;
      t.tail = true;
      t.ring = index;
      t.tailValue = dirty->landedTail;
      t.covers = dirty->landedCount;
      dirty->sentTail = dirty->landedTail;
      t.done = dma.submit(now, 4);
      lastUpdate = now;
      ++result.tailUpdates;
      inFlight.push_back(std::move(t));
      continue;
    }
    if (pending.empty())
      return;
    Transfer t;
    t.ring = pending.front().ring;
    UpRing &ring = up[t.ring];
    uint32_t bytes = 0;
    while (!pending.empty() && pending.front().ring == t.ring) {
      Placement where;
      Entry &e = pending.front();
      if (!ring.producer.place(uint32_t(e.payload.size()), where))
        break;
      uint32_t span = slotBytes(uint32_t(e.payload.size()));
      if (!t.messages.empty() && (!config.features.combining || where.wrap ||
                                  bytes + span > config.features.combineBytes))
        break;
      ring.producer.commit(where);
      bytes += span;
      t.messages.emplace_back(where, std::move(e));
      pending.pop_front();
    }
    if (t.messages.empty())
      return; // the ring is full: wait for the host's HEAD
    if (t.messages.size() > 1)
      result.combinedMessages += t.messages.size();
    t.done = dma.submit(now, bytes);
    inFlight.push_back(std::move(t));
  }
}

uint64_t Receiver::drain(UpRing &ring, unsigned index, uint64_t at) {
  const HostCosts &c = config.host;
  bool any = false;
  Message m;
  while (ring.consumer.peek(ring.mem.data(), m)) {
    if (m.type != MsgData) {
      ++result.corrupted; // a damaged ring: stop here
      break;
    }
    Track track = ring.tracks.front();
    ring.tracks.pop_front();
    track.start = at;
    const uint8_t *bytes = &ring.mem[m.offset + headerBytes];
    any = true;
    if (config.design == Design::Raw) {
      at += charge(c.poll);
      deliver(bytes + 42, m.length - 42, 0, 0, 0, track, at);
    } else if (config.design == Design::SoftNic) {
      // The unmodified stack: protocol input, the checksum unless the MEs
      // verified it, then recv() copies the payload to the user.
      ParsedDatagram p;
      at += charge(c.protocol);
      ++result.host.protocolRuns;
      if (!track.verified) {
        at += charge(c.checksumPerByte * m.length);
        result.host.checksummedBytes += m.length;
      }
      InputVerdict v = parseInput(bytes, m.length, !track.verified, p);
      auto socket = sockets.find(p.dstPort);
      if (v == InputVerdict::Ok && socket == sockets.end()) {
        ++result.drops.hostNoSocket;
      } else if (!refused(v)) {
        if (!hooks) { // a session charges its recv() calls itself
          at += charge(c.syscall + c.copyPerByte * p.payloadLength);
          ++result.host.syscalls;
          result.host.copiedBytes += p.payloadLength;
        }
        deliver(p.payload, p.payloadLength, p.dstPort, p.srcIp, p.srcPort,
                track, at);
      }
    } else { // onloader: recv() hands out the payload in place
      if (!hooks) {
        at += charge(c.syscall +
                     (config.cacheMappings ? c.mapCached : c.mapBuffer));
        ++result.host.syscalls;
        ++result.host.mappings;
        result.host.mappingHits += config.cacheMappings;
      }
      uint32_t src = uint32_t(bytes[0]) << 24 | uint32_t(bytes[1]) << 16 |
                     uint32_t(bytes[2]) << 8 | bytes[3];
      uint32_t ports = uint32_t(bytes[4]) << 24 | uint32_t(bytes[5]) << 16 |
                       uint32_t(bytes[6]) << 8 | bytes[7];
      deliver(bytes + 12, m.length - 12, uint16_t(ports), src,
              uint16_t(ports >> 16), track, at);
      (void)index;
    }
    ring.consumer.consume(m);
  }
  if (any) {
    // The HEAD goes back to the NP by a programmed write.
    at += headWrite();
    heads.emplace(at, std::make_pair(index, ring.consumer.head()));
  }
  return at;
}

void Receiver::hostWork(netvm_emu_host *host, uint64_t now) {
  if (hostFree > now)
    return;
  const HostCosts &c = config.host;
  uint64_t at = now;
  if (config.design == Design::EmuNic) {
    // An interrupt per packet; the driver reads the descriptor and the
    // frame out of the NP's memory (uncached programmed reads), checks the
    // checksum in software and runs the stack; recv() copies to the user.
    if (device.empty())
      return;
    Entry e = std::move(device.front());
    device.pop_front();
    e.track.landed = e.track.visible = e.track.got;
    ++result.host.interrupts;
    at += charge(c.interrupt);
    e.track.start = at;
    uint32_t bursts = 1 + (e.length + 63) / 64;
    result.host.pioReadBytes += e.length;
    at += charge(bursts * config.dma.pioReadBurstCycles +
                 c.copyPerByte * e.length);
    result.host.copiedBytes += e.length;
    ParsedDatagram p;
    at += charge(c.protocol + c.checksumPerByte * e.length);
    ++result.host.protocolRuns;
    result.host.checksummedBytes += e.length;
    InputVerdict v = parseInput(e.bytes.data(), e.length, true, p);
    auto socket = sockets.find(p.dstPort);
    if (v == InputVerdict::Ok && socket == sockets.end()) {
      ++result.drops.hostNoSocket;
    } else if (!refused(v)) {
      at += charge(c.wakeup);
      ++result.host.wakeups;
      if (!hooks) { // a session charges its recv() calls itself
        at += charge(c.syscall + c.copyPerByte * p.payloadLength);
        ++result.host.syscalls;
        result.host.copiedBytes += p.payloadLength;
      }
      deliver(p.payload, p.payloadLength, p.dstPort, p.srcIp, p.srcPort,
              e.track, at);
    }
    // The buffer goes back by a programmed write of the free ring.
    at += headWrite();
    netvm_emu_host_ring_put(host, freeRing, &e.buffer, 1);
    hostFree = at;
    return;
  }
  Notify notify = config.features.notify;
  bool anyVisible = false;
  for (UpRing &r : up)
    anyVisible |= !r.consumer.empty();
  if (notify == Notify::Polling) {
    if (now < nextPoll)
      return;
    at += charge(c.poll * up.size());
    result.host.polls += up.size();
    for (unsigned i = 0; i < up.size(); ++i)
      at = drain(up[i], i, at);
    nextPoll = at + config.features.pollInterval;
    hostFree = at;
    return;
  }
  if (config.design == Design::Onloader) {
    // The application loops on recv(); with nothing there it sleeps, and
    // the next TAIL update for its socket raises an interrupt.
    if (interruptAt <= now) {
      interruptAt = UINT64_MAX;
      ++result.host.interrupts;
      ++result.host.wakeups;
      at += charge(c.interrupt + c.wakeup);
    } else if (std::any_of(up.begin(), up.end(),
                           [](const UpRing &r) { return r.waiting; })) {
      return;
    }
    for (unsigned i = 0; i < up.size(); ++i) {
      up[i].waiting = false;
      at = drain(up[i], i, at);
    }
    // recv() found nothing: one more system call, then sleep (a session
    // charges its recv() calls itself).
    if (!hooks) {
      at += charge(c.syscall);
      ++result.host.syscalls;
    }
    for (UpRing &r : up)
      r.waiting = true;
    hostFree = at;
    return;
  }
  // softnic and raw: interrupts (every update) or NAPI-like adaptive
  // polling (an interrupt, then polls until the ring is empty).
  if (interruptsOn || notify == Notify::Interrupts) {
    if (interruptAt > now)
      return;
    interruptAt = UINT64_MAX;
    ++result.host.interrupts;
    at += charge(c.interrupt);
    if (notify == Notify::Adaptive)
      interruptsOn = false;
  } else {
    at += charge(c.poll);
    ++result.host.polls;
    if (!anyVisible) {
      interruptsOn = true; // empty: back to interrupts
      hostFree = at;
      return;
    }
  }
  if (config.design == Design::SoftNic && anyVisible) {
    ++result.host.wakeups; // the application sleeping in recv()
    at += charge(c.wakeup);
  }
  at = drain(up[0], 0, at);
  hostFree = at;
}

bool Receiver::idle() const {
  // A session's live wire never ends: its contexts put no markers.
  if ((!hooks && markers < config.rxMEs * 8) || !pending.empty() ||
      !inFlight.empty() || !device.empty() || !reorder.empty())
    return false;
  for (const UpRing &r : up)
    if (!r.consumer.empty() || r.landedTail != r.sentTail)
      return false;
  return true;
}

uint64_t Receiver::call(netvm_emu_host *host) {
  uint64_t now = netvm_emu_host_now(host);
  if (!started)
    start(host);
  land(host, now);
  take(host, now);
  if (config.design != Design::EmuNic)
    schedule(now);
  hostWork(host, now);
  if (!hooks && idle() && hostFree <= now) {
    // Stop the transmitting contexts too.
    stopTransmitters(host, config);
    return 0;
  }
  return config.tick;
}

void Receiver::finish(const me::Stats &stats) {
  stageSums.finish(result, stats);
  result.dmaTransfers = dma.transfers;
  result.dmaBytes = dma.bytesMoved;
  uint64_t expected = 0;
  for (size_t i = 0; i < traffic.datagrams.size(); ++i) {
    const Datagram &d = traffic.datagrams[i];
    bool bound = sockets.count(d.dstPort);
    if (!d.badChecksum && !d.fragment && bound) {
      ++expected;
      if (!seen[i])
        ++result.missing;
    }
  }
  (void)expected;
}

TrafficInput::~TrafficInput() = default;

bool TrafficInput::next(me::InputPacket &packet) {
  if (index == traffic.frames.size())
    return false;
  packet.bytes = traffic.frames[index++];
  packet.wireLength = 0;
  return true;
}

bool countDelivery(OnloadResult &result, std::vector<bool> &seen, uint32_t seq,
                   uint64_t bytes) {
  if (seen[seq]) {
    ++result.duplicates;
    return false;
  }
  seen[seq] = true;
  ++result.delivered;
  result.deliveredBytes += bytes;
  return true;
}

void StageSums::finish(OnloadResult &result, const me::Stats &stats) const {
  for (auto &[name, sum] : sums)
    result.stages.push_back(
        {name.substr(2), result.delivered ? sum / result.delivered : 0});
  result.cycles = stats.cycles;
  result.clockMHz = stats.clockMHz;
  for (const me::Fault &f : stats.faults)
    result.faults.push_back(describeFault(f));
}

me::MachineConfig onloadMachine(const OnloadConfig &config) {
  me::MachineConfig machine = config.machine;
  machine.hostCrossingCycles = 0;
  machine.hostWordCycles = 0;
  return machine;
}

void stopTransmitters(netvm_emu_host *host, const OnloadConfig &config) {
  uint32_t marker[txEntryWords] = {markerBuffer, 0, 0, 0};
  for (unsigned i = 0; i < config.txMEs * 8; ++i)
    netvm_emu_host_ring_put(host, fromHostRing, marker, txEntryWords);
}

std::vector<uint32_t> takeDone(netvm_emu_host *host) {
  std::vector<uint32_t> buffers;
  for (int n = netvm_emu_host_ring_count(host, txDoneRing); n > 0; --n) {
    uint32_t buffer;
    if (netvm_emu_host_ring_get(host, txDoneRing, &buffer, 1) != 0)
      break;
    buffers.push_back(buffer);
  }
  return buffers;
}

bool setUpSockets(me::Emulator &emulator, const std::vector<uint16_t> &ports,
                  std::string &error) {
  for (size_t i = 0; i < ports.size(); ++i)
    if (!setUpSocket(emulator, unsigned(i), ports[i], error))
      return false;
  return true;
}

bool setUpSocket(me::Emulator &emulator, unsigned socket, uint16_t port,
                 std::string &error) {
  uint32_t block = controlBlocks + socket * controlBlockBytes;
  uint8_t entry[4] = {uint8_t(block >> 24), uint8_t(block >> 16),
                      uint8_t(block >> 8), uint8_t(block)};
  Datagram header;
  header.srcIp = 0x0a000002;
  header.dstIp = 0x0a000001;
  header.srcPort = port;
  header.dstPort = 5000;
  return emulator.writeMemory(me::Memory::Sram, portTable + 4 * port, entry, 4,
                              error) &&
         writeControlBlock(emulator, block, socket, header, error);
}

bool writeControlBlock(me::Emulator &emulator, uint32_t block, unsigned socket,
                       const Datagram &header, std::string &error) {
  uint8_t cb[controlBlockBytes] = {uint8_t(socket >> 24), uint8_t(socket >> 16),
                                   uint8_t(socket >> 8), uint8_t(socket)};
  std::vector<uint8_t> bytes = headerTemplate(header);
  std::copy(bytes.begin(), bytes.end(), cb + templateOffset);
  return emulator.writeMemory(me::Memory::Sram, block, cb, sizeof(cb), error);
}

Side::~Side() = default;

std::unique_ptr<Side> receiveSide(const OnloadConfig &config,
                                  const Traffic &traffic,
                                  const SessionHooks &hooks,
                                  OnloadResult &result, SharedHost &shared) {
  return std::make_unique<Receiver>(config, traffic, &hooks, result, &shared);
}

void readMeDrops(const me::Emulator &emulator, Drops &drops) {
  std::vector<uint8_t> counters;
  if (!emulator.readMemory(me::Memory::Scratch, statsAddress, 20, counters))
    return;
  auto word = [&](uint32_t at) {
    return uint32_t(counters[at]) << 24 | uint32_t(counters[at + 1]) << 16 |
           uint32_t(counters[at + 2]) << 8 | counters[at + 3];
  };
  drops.meNotUdp = word(statNotUdp);
  drops.meFragment = word(statFragment);
  drops.meChecksum = word(statChecksum);
  drops.meNoSocket = word(statNoSocket);
  drops.meMalformed = word(statMalformed);
}

bool runReceive(const OnloadConfig &config, const me::Image &image,
                const Traffic &traffic, OnloadResult &result,
                std::string &error) {
  result = OnloadResult();
  result.offered = traffic.frames.size();
  me::MachineConfig machine = onloadMachine(config);
  machine.lineRateGbps = config.lineRateGbps;
  if (config.buffers == 0 || config.buffers > freeRingWords ||
      bufferBase + uint64_t(config.buffers) * bufferBytes > machine.dramBytes) {
    error = "between 1 and " + std::to_string(freeRingWords) +
            " receive buffers fit the free ring and DRAM";
    return false;
  }
  if (config.upRingBytes % slotAlign || config.upRingBytes < 8 * 1024) {
    error = "the UP ring must be a multiple of 64 bytes and at least 8 KB";
    return false;
  }
  me::Emulator emulator(machine);
  if (!emulator.load(image, error))
    return false;
  if (!setUpSockets(emulator, traffic.boundPorts, error))
    return false;
  TrafficInput input(traffic);
  emulator.setInput(&input);
  Receiver receiver(config, traffic, nullptr, result);
  emulator.attachHost(&Receiver::step, &receiver, 0);
  emulator.run();
  const me::Stats &stats = emulator.stats();
  receiver.finish(stats);
  result.drops.fabric = stats.packetsDropped;
  readMeDrops(emulator, result.drops);
  return true;
}

} // namespace netvm::onload
