//===- Session.cpp - A UDP socket stack for programs ---------------------===//
//
// One emulated machine for a session's life: the design's image loaded
// once, both directions of Receive.cpp and Transmit.cpp attached to it as
// one host function (sharing the DMA engine and the host processor), the
// wire a live input that grows as the program feeds it. Every call that
// waits (recv, flush) or takes the host's time (recv's system call and
// copy, a header template's programmed write, compute) runs the machine on
// until its condition holds and pauses it there: the control blocks,
// rings, buffers, host-memory rings and everything in flight stay as they
// are for the next call.
//
//===----------------------------------------------------------------------===//

#include "netvm/onload/Session.h"

#include "Layout.h"

#include "netvm/hostif/Ring.h"
#include "netvm/io/PacketIO.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace netvm::onload {

/// A run that takes longer than this is stuck: the session stops it.
static uint64_t cycleBudget(size_t frames) {
  return 20'000'000 + uint64_t(frames) * 2'000'000;
}

Session::Session(const OnloadConfig &config, const me::Image &image)
    : cfg(config), image(image) {}

Session::~Session() = default;

std::unique_ptr<Session> Session::open(const OnloadConfig &config,
                                       const me::Image &image,
                                       std::string &error) {
  if (config.design == Design::Raw) {
    error = "the raw design has no UDP stack: open emu-nic, softnic or "
            "onloader";
    return nullptr;
  }
  me::MachineConfig machine = onloadMachine(config);
  if (config.buffers == 0 || config.buffers > freeRingWords ||
      config.txBuffers == 0 ||
      config.txBuffers > fromHostWords / txEntryWords - 16 ||
      bufferBase + uint64_t(config.buffers) * bufferBytes > txBufferBase ||
      txBufferBase + uint64_t(config.txBuffers) * bufferBytes >
          machine.dramBytes) {
    error = "between 1 and " + std::to_string(freeRingWords) +
            " receive and 1 and " +
            std::to_string(fromHostWords / txEntryWords - 16) +
            " transmit buffers fit the rings";
    return nullptr;
  }
  if (config.machine.sramBytes < destinationBlocks + 64 * controlBlockBytes) {
    error = "the machine's SRAM is too small for the socket table";
    return nullptr;
  }
  if (config.upRingBytes % hostif::slotAlign || config.upRingBytes < 8 * 1024 ||
      config.downRingBytes % hostif::slotAlign ||
      config.downRingBytes < 4 * 64) {
    error = "the UP ring must be a multiple of 64 bytes and at least 8 KB, "
            "the DOWN ring a multiple of 64 bytes and at least 256";
    return nullptr;
  }
  std::unique_ptr<Session> s(new Session(config, image));
  s->totals.clockMHz = config.machine.clockMHz;
  // One machine for the session's life: the program is loaded once; the
  // session's own budget (runUntil) replaces the emulator's stall limit,
  // since a program may think for long.
  machine.stallCycles = 0;
  s->machine = std::make_unique<me::Emulator>(machine);
  if (!s->machine->load(s->image, error))
    return nullptr;
  s->shared = std::make_unique<SharedHost>(config);
  s->hooks = std::make_unique<SessionHooks>();
  s->wire = std::make_unique<Traffic>();
  s->sends = std::make_unique<Traffic>();
  s->rxResult = std::make_unique<OnloadResult>();
  s->txResult = std::make_unique<OnloadResult>();
  Session *self = s.get();
  s->hooks->deliver = [self](uint16_t port, uint32_t srcIp, uint16_t srcPort,
                             const uint8_t *payload, uint32_t length,
                             uint32_t number, uint64_t at) {
    auto it = self->byPort.find(port);
    if (it == self->byPort.end()) {
      ++self->rxResult->corrupted; // delivered to a port nobody bound
      return;
    }
    SessionDatagram d;
    d.srcIp = srcIp;
    d.srcPort = srcPort;
    d.payload.assign(payload, payload + length);
    d.fedAt = number < self->fedAt.size() ? self->fedAt[number] : 0;
    d.deliveredAt = at;
    self->sockets[it->second].queue.push_back(std::move(d));
  };
  s->hooks->transmitted = [self](uint32_t seq, const uint8_t *bytes,
                                 size_t length, uint64_t cycle) {
    self->wireOut.emplace_back(bytes, bytes + length);
    self->wireOutAt.push_back(cycle);
    ++self->totals.transmitted;
    if (seq < self->sentAt.size() && cycle >= self->sentAt[seq])
      self->totals.sendLatencyCycles += cycle - self->sentAt[seq];
  };
  s->rxSide =
      receiveSide(s->cfg, *s->wire, *s->hooks, *s->rxResult, *s->shared);
  s->txSide =
      transmitSide(s->cfg, *s->sends, *s->hooks, *s->txResult, *s->shared);
  s->input = std::make_unique<TrafficInput>(*s->wire, true);
  s->machine->setInput(s->input.get());
  s->machine->setOutput(s->txSide->output());
  s->machine->attachHost(&Session::step, self, 0);
  return s;
}

uint64_t Session::step(netvm_emu_host *host, void *user) {
  Session &s = *static_cast<Session *>(user);
  uint64_t now = netvm_emu_host_now(host);
  s.rxSide->step(host);
  s.txSide->step(host);
  if (s.wanted) {
    bool done = (*s.wanted)(now);
    if (done || now >= s.deadline) {
      s.timedOut = !done;
      s.wanted = nullptr;
      s.machine->pause();
    }
  }
  return s.cfg.tick;
}

uint64_t Session::now() const { return machine->cycle(); }

bool Session::runUntil(const std::function<bool(uint64_t)> &done,
                       const char *what, std::string &error) {
  if (!failure.empty()) {
    error = "the stack failed earlier: " + failure;
    return false;
  }
  if (done(now()))
    return true;
  size_t outstanding =
      wire->frames.size() + sends->frames.size() -
      std::min<size_t>(wire->frames.size() + sends->frames.size(),
                       totals.received + totals.transmitted);
  wanted = &done;
  deadline = now() + cycleBudget(outstanding);
  timedOut = false;
  machine->run();
  wanted = nullptr;
  ++totals.runs;
  if (!checkRun(what, cycleBudget(outstanding), error)) {
    failure = error; // the machine is not in a state to go on
    return false;
  }
  return true;
}

bool Session::checkRun(const char *what, uint64_t budget, std::string &error) {
  const me::Stats &st = machine->stats();
  if (st.faults.size() > faultsSeen) {
    const me::Fault &f = st.faults[faultsSeen];
    faultsSeen = st.faults.size();
    error = std::string("the machine faulted during ") + what + ": ME " +
            std::to_string(f.me) + " context " + std::to_string(f.ctx) +
            " pc " + std::to_string(f.pc) + ": " + f.reason;
    return false;
  }
  if (st.stopReason != "paused") {
    error = std::string("the machine stopped during ") + what + ": " +
            st.stopReason;
    return false;
  }
  if (timedOut) {
    error = std::string(what) + " did not finish in " + std::to_string(budget) +
            " cycles";
    return false;
  }
  if (rxResult->corrupted) {
    error = "the receive path delivered " +
            std::to_string(rxResult->corrupted) +
            " datagrams no socket should get";
    return false;
  }
  return true;
}

bool Session::busy(uint64_t cycles, const char *what, std::string &error) {
  uint64_t until = std::max(shared->hostFree, now()) + cycles;
  shared->hostFree = until;
  return runUntil([until](uint64_t at) { return at >= until; }, what, error);
}

Session::Bind Session::bind(unsigned port, int &socket, std::string &error) {
  if (port == 0 || port > 65535) {
    error = "port " + std::to_string(port) + " is out of range (1-65535)";
    return Bind::OutOfRange;
  }
  if (byPort.count(uint16_t(port))) {
    error = "port " + std::to_string(port) + " is already bound";
    return Bind::InUse;
  }
  if (sockets.size() >= maxSockets) {
    error = "the socket table is full: " + std::to_string(maxSockets) +
            " control blocks in SRAM";
    return Bind::Full;
  }
  // The port table entry and the socket's control block go into SRAM
  // (the machine stands still between calls); the other sockets' blocks,
  // and the MEs' counts in them, stay as they are.
  if (!setUpSocket(*machine, unsigned(sockets.size()), uint16_t(port), error))
    return Bind::Full;
  Socket s;
  s.port = uint16_t(port);
  sockets.push_back(std::move(s));
  socket = int(sockets.size() - 1);
  byPort[uint16_t(port)] = socket;
  rxSide->bound(uint16_t(port));
  sends->boundPorts.push_back(uint16_t(port));
  wire->boundPorts.push_back(uint16_t(port));
  return Bind::Ok;
}

unsigned Session::port(int socket) const {
  return socket >= 0 && size_t(socket) < sockets.size() ? sockets[socket].port
                                                        : 0;
}

void Session::feed(const uint8_t *frame, size_t length) {
  wire->frames.emplace_back(frame, frame + length);
  fedAt.push_back(now());
  ++totals.fed;
}

bool Session::feedPcap(const std::string &path, std::string &error) {
  std::unique_ptr<rt::PacketReader> reader =
      rt::PacketReader::open(path, false, error);
  if (!reader)
    return false;
  if (reader->linkType() != 1) {
    error = path + ": link type " + std::to_string(reader->linkType()) +
            " is not Ethernet (1)";
    return false;
  }
  std::vector<std::vector<uint8_t>> frames;
  rt::TracePacket packet;
  while (reader->next(packet, error))
    frames.push_back(packet.bytes);
  if (!error.empty())
    return false;
  for (const std::vector<uint8_t> &f : frames)
    feed(f.data(), f.size());
  return true;
}

uint64_t Session::charge(double cycles) {
  uint64_t c = uint64_t(std::llround(cycles));
  totals.host.busyCycles += c;
  return c;
}

Session::Recv Session::recv(int socket, uint8_t *buffer, size_t capacity,
                            size_t &length, uint32_t &fromIp,
                            uint16_t &fromPort, std::string &error) {
  if (socket < 0 || size_t(socket) >= sockets.size()) {
    error = "no socket " + std::to_string(socket);
    return Recv::Error;
  }
  if (!buffer && capacity) {
    error = "a null buffer of " + std::to_string(capacity) + " bytes";
    return Recv::Error;
  }
  // Wait for the socket's next datagram, or until the wire has nothing
  // more.
  std::deque<SessionDatagram> &queue = sockets[socket].queue;
  std::function<bool(uint64_t)> ready = [&](uint64_t at) {
    return queue.empty() ? rxSide->idle(at) : queue.front().deliveredAt <= at;
  };
  if (!runUntil(ready, "recv", error))
    return Recv::Error;
  // The system call, found empty or not (HostCosts::syscall).
  const HostCosts &c = cfg.host;
  ++totals.host.syscalls;
  if (queue.empty()) {
    ++totals.wouldBlock;
    return busy(charge(c.syscall), "recv", error) ? Recv::WouldBlock
                                                  : Recv::Error;
  }
  SessionDatagram d = std::move(queue.front());
  queue.pop_front();
  length = d.payload.size();
  size_t copied = std::min(capacity, length);
  std::copy(d.payload.begin(), d.payload.begin() + copied, buffer);
  fromIp = d.srcIp;
  fromPort = d.srcPort;
  if (copied < length)
    ++totals.truncated;
  ++totals.received;
  totals.receivedBytes += copied;
  uint64_t cost = charge(c.syscall);
  if (cfg.design == Design::Onloader) {
    // The MEs put the payload in the socket's queue in user memory: recv
    // maps (or finds mapped) the buffer and hands it out in place.
    cost += charge(cfg.cacheMappings ? c.mapCached : c.mapBuffer);
    ++totals.host.mappings;
    totals.host.mappingHits += cfg.cacheMappings;
  } else {
    cost += charge(c.copyPerByte * double(copied));
    totals.host.copiedBytes += copied;
  }
  // The call takes the host's time; it returns when that is done.
  if (!busy(cost, "recv", error))
    return Recv::Error;
  totals.receiveLatencyCycles += now() - d.fedAt;
  return Recv::Ok;
}

bool Session::send(int socket, uint32_t dstIp, uint16_t dstPort,
                   const uint8_t *data, size_t length, std::string &error) {
  if (socket < 0 || size_t(socket) >= sockets.size()) {
    error = "no socket " + std::to_string(socket);
    return false;
  }
  if (dstPort == 0) {
    error = "destination port 0";
    return false;
  }
  if (length > 1472) {
    error = "a datagram of " + std::to_string(length) +
            " bytes does not fit one frame (at most 1472: fragmentation is "
            "not supported)";
    return false;
  }
  if (!data && length) {
    error = "a null buffer of " + std::to_string(length) + " bytes";
    return false;
  }
  Datagram d;
  d.srcIp = localIp;
  d.dstIp = dstIp;
  d.srcPort = sockets[socket].port;
  d.dstPort = dstPort;
  d.payload.assign(data, data + length);
  // Onloader: a control block per (socket, destination), its header
  // template written into SRAM by the host the first time (programmed
  // writes, on the host's time); later sends find it there.
  uint64_t key = uint64_t(dstIp) << 32 | uint32_t(socket) << 16 | dstPort;
  auto it = routes.find(key);
  if (it == routes.end()) {
    uint32_t capacity =
        (cfg.machine.sramBytes - destinationBlocks) / controlBlockBytes;
    if (routes.size() >= capacity) {
      error = "more than " + std::to_string(capacity) +
              " destinations: the SRAM has no room for their headers";
      return false;
    }
    it = routes.emplace(key, uint32_t(routes.size())).first;
    if (cfg.design == Design::Onloader) {
      if (!writeControlBlock(*machine,
                             destinationBlocks + it->second * controlBlockBytes,
                             unsigned(socket), d, error) ||
          !busy(charge(cfg.dma.pioWriteStart +
                       controlBlockBytes * cfg.dma.pioWriteCyclesPerByte),
                "send", error))
        return false;
    }
  }
  hooks->blocks.push_back(destinationBlocks + it->second * controlBlockBytes);
  sends->frames.push_back(buildFrame(d));
  sends->datagrams.push_back(std::move(d));
  sentAt.push_back(now());
  ++totals.sent;
  totals.sentBytes += length;
  return true;
}

bool Session::flush(std::string &error) {
  std::function<bool(uint64_t)> done = [this](uint64_t at) {
    return rxSide->idle(at) && txSide->idle(at);
  };
  if (!runUntil(done, "flush", error))
    return false;
  totals.transmitMismatches = txResult->corrupted;
  return true;
}

bool Session::compute(uint64_t cycles, std::string &error) {
  // The program runs while the host has nothing else to do: the driver's
  // and the stack's work (interrupts, protocol) preempts it, so it ends
  // `cycles` plus the host work that came in between after it began.
  totals.computeCycles += cycles;
  auto hostWork = [this] {
    return rxResult->host.busyCycles + txResult->host.busyCycles;
  };
  uint64_t start = std::max(now(), shared->hostFree), before = hostWork();
  std::function<bool(uint64_t)> done = [&](uint64_t at) {
    return at >= start + cycles + (hostWork() - before);
  };
  return runUntil(done, "compute", error);
}

bool Session::controlBlockCount(int socket, uint32_t &count) const {
  if (cfg.design != Design::Onloader || socket < 0 ||
      size_t(socket) >= sockets.size())
    return false;
  std::vector<uint8_t> word;
  if (!machine->readMemory(
          me::Memory::Sram,
          controlBlocks + uint32_t(socket) * controlBlockBytes + 4, 4, word))
    return false;
  count = uint32_t(word[0]) << 24 | uint32_t(word[1]) << 16 |
          uint32_t(word[2]) << 8 | word[3];
  return true;
}

SessionStats Session::stats() const {
  SessionStats s = totals;
  // The sides' host work and counters, over the machine's life.
  for (const OnloadResult *r : {rxResult.get(), txResult.get()}) {
    HostCounters &h = s.host;
    h.busyCycles += r->host.busyCycles;
    h.interrupts += r->host.interrupts;
    h.syscalls += r->host.syscalls;
    h.wakeups += r->host.wakeups;
    h.polls += r->host.polls;
    h.copiedBytes += r->host.copiedBytes;
    h.checksummedBytes += r->host.checksummedBytes;
    h.pioReadBytes += r->host.pioReadBytes;
    h.protocolRuns += r->host.protocolRuns;
    h.mappings += r->host.mappings;
    h.mappingHits += r->host.mappingHits;
    s.tailUpdates += r->tailUpdates;
    s.headUpdates += r->headUpdates;
  }
  s.drops = rxResult->drops;
  readMeDrops(*machine, s.drops);
  s.drops.fabric = machine->stats().packetsDropped;
  s.dmaTransfers = shared->dma.transfers;
  s.dmaBytes = shared->dma.bytesMoved;
  s.transmitMismatches = txResult->corrupted;
  s.cycles = now();
  s.queued = 0;
  for (const Socket &socket : sockets)
    s.queued += socket.queue.size();
  return s;
}

} // namespace netvm::onload
