//===- Stack.cpp - Frames, traffic and the host's UDP/IP input -----------===//
//
// Building Ethernet/IPv4/UDP frames with their checksums (the traffic
// generator), and the host stack's input path: the checks an unmodified
// stack makes before a datagram reaches a socket.
//
//===----------------------------------------------------------------------===//

#include "Stack.h"

#include "Bytes.h"

#include "netvm/semantics.h"

namespace netvm::onload {

using namespace bytes;

/// The UDP checksum's sum over the pseudo-header and the UDP segment at
/// `udp` (header and payload, `udpLength` bytes), folded.
static uint32_t udpSum(const uint8_t *ip, const uint8_t *udp,
                       uint32_t udpLength) {
  uint32_t sum = netvm_checksum(ip + 12, 8); // source and destination
  sum = netvm_checksum_add(sum, 17);
  sum = netvm_checksum_add(sum, udpLength);
  return netvm_checksum_add(sum, netvm_checksum(udp, udpLength));
}

std::vector<uint8_t> buildFrame(const Datagram &d) {
  uint32_t udpLength = 8 + uint32_t(d.payload.size());
  std::vector<uint8_t> f(14 + 20 + udpLength, 0);
  // Ethernet: made-up unicast addresses, type IPv4.
  for (int i = 0; i < 6; ++i) {
    f[i] = uint8_t(0x02 + i);
    f[6 + i] = uint8_t(0x12 + i);
  }
  put16(f, 12, 0x0800);
  f[14] = 0x45;
  put16(f, 16, 20 + udpLength);
  put16(f, 18, 1);
  put16(f, 20, d.fragment ? 0x2000 : 0x4000); // MF, or DF
  f[22] = 64;
  f[23] = 17;
  put32(f, 26, d.srcIp);
  put32(f, 30, d.dstIp);
  put16(f, 24, ~netvm_checksum(&f[14], 20) & 0xffff);
  put16(f, 34, d.srcPort);
  put16(f, 36, d.dstPort);
  put16(f, 38, udpLength);
  std::copy(d.payload.begin(), d.payload.end(), f.begin() + 42);
  uint32_t check = ~udpSum(&f[14], &f[34], udpLength) & 0xffff;
  if (check == 0)
    check = 0xffff; // 0 means "no checksum"
  if (d.badChecksum)
    check ^= 0x5a5a;
  put16(f, 40, check);
  return f;
}

InputVerdict parseInput(const uint8_t *frame, uint32_t length, bool verify,
                        ParsedDatagram &out) {
  if (length < 42 || get16(frame + 12) != 0x0800 || frame[14] != 0x45 ||
      frame[23] != 17)
    return InputVerdict::NotUdp;
  const uint8_t *ip = frame + 14;
  if (get16(ip + 6) & 0x3fff)
    return InputVerdict::Fragment;
  const uint8_t *udp = ip + 20;
  uint32_t udpLength = get16(udp + 4);
  if (udpLength < 8 || 34 + udpLength > length ||
      get16(ip + 2) != 20 + udpLength)
    return InputVerdict::Malformed;
  if (verify && get16(udp + 6) != 0 && udpSum(ip, udp, udpLength) != 0xffff)
    return InputVerdict::BadChecksum;
  out.srcIp = get32(ip + 12);
  out.dstIp = get32(ip + 16);
  out.srcPort = uint16_t(get16(udp));
  out.dstPort = uint16_t(get16(udp + 2));
  out.payload = udp + 8;
  out.payloadLength = udpLength - 8;
  return InputVerdict::Ok;
}

Traffic makeTraffic(unsigned count, unsigned payloadBytes, unsigned ports,
                    unsigned badEvery, unsigned fragmentEvery,
                    unsigned unboundEvery) {
  Traffic t;
  if (payloadBytes < 4)
    payloadBytes = 4;
  ports = ports ? ports : 1;
  for (unsigned p = 0; p < ports; ++p)
    t.boundPorts.push_back(uint16_t(9000 + p));
  uint32_t state = 0x12345678;
  for (unsigned i = 0; i < count; ++i) {
    Datagram d;
    d.dstPort = uint16_t(9000 + i % ports);
    if (unboundEvery && i % unboundEvery == unboundEvery - 1)
      d.dstPort = 7; // nobody listens
    d.srcPort = uint16_t(5000 + i % 7);
    d.payload.resize(payloadBytes);
    put32(d.payload, 0, i);
    for (unsigned b = 4; b < payloadBytes; ++b) {
      state = state * 1103515245u + 12345u;
      d.payload[b] = uint8_t(state >> 16);
    }
    d.badChecksum = badEvery && i % badEvery == badEvery - 1;
    d.fragment = fragmentEvery && i % fragmentEvery == fragmentEvery - 1;
    t.frames.push_back(buildFrame(d));
    t.datagrams.push_back(std::move(d));
  }
  return t;
}

Traffic makeSendTraffic(unsigned count, unsigned payloadBytes, unsigned ports) {
  Traffic t = makeTraffic(count, payloadBytes, ports);
  for (size_t i = 0; i < t.datagrams.size(); ++i) {
    Datagram &d = t.datagrams[i];
    d.srcIp = 0x0a000002;
    d.dstIp = 0x0a000001;
    d.srcPort = t.boundPorts[i % t.boundPorts.size()];
    d.dstPort = 5000;
    t.frames[i] = buildFrame(d);
  }
  return t;
}

std::vector<uint8_t> headerTemplate(uint16_t port) {
  Datagram d;
  d.srcIp = 0x0a000002;
  d.dstIp = 0x0a000001;
  d.srcPort = port;
  d.dstPort = 5000;
  return headerTemplate(d);
}

std::vector<uint8_t> headerTemplate(const Datagram &header) {
  Datagram d = header;
  d.payload.clear();
  d.badChecksum = d.fragment = false;
  std::vector<uint8_t> f = buildFrame(d);
  put16(f, 16, 0); // total length
  put16(f, 24, 0);
  put16(f, 24, ~netvm_checksum(&f[14], 20) & 0xffff);
  put16(f, 38, 0); // UDP length
  put16(f, 40, 0); // checksum
  return f;
}

} // namespace netvm::onload
