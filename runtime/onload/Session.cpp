//===- Session.cpp - A UDP socket stack for programs ---------------------===//
//
// The receive and transmit paths of Receive.cpp and Transmit.cpp, run with
// a session's hooks: received datagrams go to the sockets' queues, sent
// ones come from the program's send() calls, and the frames that leave are
// collected. Each run is a fresh emulator loaded with the design's image
// and the session's socket table (and, for the onloader, its control
// blocks and header templates in SRAM), over the frames fed since the last
// run or the sends since the last flush.
//
//===----------------------------------------------------------------------===//

#include "netvm/onload/Session.h"

#include "Layout.h"

#include "netvm/io/PacketIO.h"

#include <algorithm>
#include <cmath>

namespace netvm::onload {

/// A run that takes longer than this is stuck: the emulator stops it.
static uint64_t cycleBudget(size_t frames) {
  return 20'000'000 + uint64_t(frames) * 2'000'000;
}

std::unique_ptr<Session> Session::open(const OnloadConfig &config,
                                       const me::Image &image,
                                       std::string &error) {
  if (config.design == Design::Raw) {
    error = "the raw design has no UDP stack: open emu-nic, softnic or "
            "onloader";
    return nullptr;
  }
  if (config.buffers == 0 || config.buffers > freeRingWords ||
      config.txBuffers == 0 ||
      config.txBuffers > fromHostWords / txEntryWords - 16) {
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
  std::unique_ptr<Session> s(new Session(config, image));
  s->totals.clockMHz = config.machine.clockMHz;
  return s;
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
  Socket s;
  s.port = uint16_t(port);
  sockets.push_back(std::move(s));
  socket = int(sockets.size() - 1);
  byPort[uint16_t(port)] = socket;
  return Bind::Ok;
}

unsigned Session::port(int socket) const {
  return socket >= 0 && size_t(socket) < sockets.size() ? sockets[socket].port
                                                        : 0;
}

void Session::feed(const uint8_t *frame, size_t length) {
  wireIn.emplace_back(frame, frame + length);
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

void Session::add(const OnloadResult &r) {
  HostCounters &h = totals.host;
  h.busyCycles += r.host.busyCycles;
  h.interrupts += r.host.interrupts;
  h.syscalls += r.host.syscalls;
  h.wakeups += r.host.wakeups;
  h.polls += r.host.polls;
  h.copiedBytes += r.host.copiedBytes;
  h.checksummedBytes += r.host.checksummedBytes;
  h.pioReadBytes += r.host.pioReadBytes;
  h.protocolRuns += r.host.protocolRuns;
  h.mappings += r.host.mappings;
  h.mappingHits += r.host.mappingHits;
  Drops &d = totals.drops;
  d.fabric += r.drops.fabric;
  d.meNotUdp += r.drops.meNotUdp;
  d.meFragment += r.drops.meFragment;
  d.meChecksum += r.drops.meChecksum;
  d.meNoSocket += r.drops.meNoSocket;
  d.meMalformed += r.drops.meMalformed;
  d.hostNotUdp += r.drops.hostNotUdp;
  d.hostFragment += r.drops.hostFragment;
  d.hostChecksum += r.drops.hostChecksum;
  d.hostNoSocket += r.drops.hostNoSocket;
  d.hostMalformed += r.drops.hostMalformed;
  totals.dmaTransfers += r.dmaTransfers;
  totals.dmaBytes += r.dmaBytes;
  totals.tailUpdates += r.tailUpdates;
  totals.headUpdates += r.headUpdates;
  totals.cycles += r.cycles;
  ++totals.runs;
}

/// The checks every run shares: no ME faulted, the run finished.
static bool finished(const OnloadResult &r, uint64_t budget, const char *what,
                     std::string &error) {
  if (!r.faults.empty()) {
    error = std::string("the ") + what + " path faulted: " + r.faults[0];
    return false;
  }
  if (r.cycles >= budget) {
    error = std::string("the ") + what + " path did not finish in " +
            std::to_string(budget) + " cycles";
    return false;
  }
  return true;
}

bool Session::receive(std::string &error) {
  if (wireIn.empty())
    return true;
  Traffic t;
  t.frames = std::move(wireIn);
  wireIn.clear();
  for (const Socket &s : sockets)
    t.boundPorts.push_back(s.port);
  SessionHooks hooks;
  uint64_t strays = 0;
  hooks.deliver = [&](uint16_t port, uint32_t srcIp, uint16_t srcPort,
                      const uint8_t *payload, uint32_t length) {
    auto it = byPort.find(port);
    if (it == byPort.end()) {
      ++strays; // the stack delivered to a port nobody bound
      return;
    }
    SessionDatagram d;
    d.srcIp = srcIp;
    d.srcPort = srcPort;
    d.payload.assign(payload, payload + length);
    sockets[it->second].queue.push_back(std::move(d));
  };
  hooks.maxCycles = cycleBudget(t.frames.size());
  OnloadResult r;
  if (!receiveRun(cfg, image, t, &hooks, r, error))
    return false;
  add(r);
  if (!finished(r, hooks.maxCycles, "receive", error))
    return false;
  if (strays || r.corrupted) {
    error = "the receive path delivered " +
            std::to_string(strays + r.corrupted) +
            " datagrams no socket should get";
    return false;
  }
  return true;
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
  if (sockets[socket].queue.empty() && !receive(error))
    return Recv::Error;
  // The system call, found empty or not (HostCosts::syscall).
  const HostCosts &c = cfg.host;
  charge(c.syscall);
  ++totals.host.syscalls;
  std::deque<SessionDatagram> &queue = sockets[socket].queue;
  if (queue.empty()) {
    ++totals.wouldBlock;
    return Recv::WouldBlock;
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
  if (cfg.design == Design::Onloader) {
    // The MEs put the payload in the socket's queue in user memory: recv
    // maps (or finds mapped) the buffer and hands it out in place.
    charge(cfg.cacheMappings ? c.mapCached : c.mapBuffer);
    ++totals.host.mappings;
    totals.host.mappingHits += cfg.cacheMappings;
  } else {
    charge(c.copyPerByte * double(copied));
    totals.host.copiedBytes += copied;
  }
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
  Send s;
  s.socket = socket;
  s.datagram.srcIp = localIp;
  s.datagram.dstIp = dstIp;
  s.datagram.srcPort = sockets[socket].port;
  s.datagram.dstPort = dstPort;
  s.datagram.payload.assign(data, data + length);
  sends.push_back(std::move(s));
  ++totals.sent;
  totals.sentBytes += length;
  return true;
}

bool Session::flush(std::string &error) {
  if (!receive(error))
    return false;
  if (sends.empty())
    return true;
  Traffic t;
  for (const Socket &s : sockets)
    t.boundPorts.push_back(s.port);
  SessionHooks hooks;
  // Onloader: a control block per (socket, destination), its header
  // template written into SRAM by the host the first time (programmed
  // writes); later runs find it there.
  uint32_t capacity =
      (cfg.machine.sramBytes - destinationBlocks) / controlBlockBytes;
  for (const Send &s : sends) {
    const Datagram &d = s.datagram;
    uint64_t key =
        uint64_t(d.dstIp) << 32 | uint32_t(s.socket) << 16 | d.dstPort;
    auto it = routes.find(key);
    if (it == routes.end()) {
      if (routes.size() >= capacity) {
        error = "more than " + std::to_string(capacity) +
                " destinations: the SRAM has no room for their headers";
        return false;
      }
      it = routes.emplace(key, uint32_t(routes.size())).first;
      if (cfg.design == Design::Onloader)
        charge(cfg.dma.pioWriteStart +
               controlBlockBytes * cfg.dma.pioWriteCyclesPerByte);
    }
    t.datagrams.push_back(d);
    t.frames.push_back(buildFrame(d));
    hooks.blocks.push_back(destinationBlocks + it->second * controlBlockBytes);
  }
  for (const auto &[key, index] : routes) {
    Datagram header;
    header.srcIp = localIp;
    header.dstIp = uint32_t(key >> 32);
    unsigned socket = unsigned(key >> 16) & 0xffff;
    header.srcPort = sockets[socket].port;
    header.dstPort = uint16_t(key);
    hooks.templates.push_back(
        {destinationBlocks + index * controlBlockBytes, {socket, header}});
  }
  hooks.transmitted = [&](uint32_t, const uint8_t *bytes, size_t length) {
    wireOut.emplace_back(bytes, bytes + length);
    ++totals.transmitted;
  };
  hooks.maxCycles = cycleBudget(t.frames.size());
  sends.clear();
  OnloadResult r;
  if (!transmitRun(cfg, image, t, &hooks, r, error))
    return false;
  add(r);
  totals.transmitMismatches += r.corrupted;
  if (!finished(r, hooks.maxCycles, "transmit", error))
    return false;
  if (r.missing) {
    error = std::to_string(r.missing) + " sent datagrams never left";
    return false;
  }
  return true;
}

SessionStats Session::stats() const {
  SessionStats s = totals;
  s.queued = 0;
  for (const Socket &socket : sockets)
    s.queued += socket.queue.size();
  return s;
}

} // namespace netvm::onload
