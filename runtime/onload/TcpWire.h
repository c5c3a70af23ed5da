//===- TcpWire.h - What the TCP paths' ME and host sides share --*- C++ -*-===//
//
// The TO_HOST entry kinds, the counters and the transmit entries of the
// TCP receive (Tcp.cpp) and send (TcpSend.cpp) paths. Not installed.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_ONLOAD_TCPWIRE_H
#define NETVM_ONLOAD_TCPWIRE_H

#include "netvm/onload/Tcp.h"

#include <cstdint>
#include <vector>

namespace netvm::onload::tcpwire {

/// Entries' info word on TO_HOST: kind << 24 | detail << 16 | connection.
constexpr uint32_t kindFast = 1, kindDivert = 2, kindNoConnection = 3,
                   kindNotTcp = 4, kindHost = 5, kindAck = 6;
/// The detail of a kindAck entry: what its ACK field did to snd_una.
constexpr uint32_t ackAdvanced = 0, ackDuplicate = 1, ackOld = 2;
constexpr uint32_t stateBytes = 64, ackOffset = 1536;
/// Per connection in SRAM at tcpCounters + 32 * index (statistics, not
/// state): ACKs that advanced snd_una, duplicate ACKs (no data, snd_una
/// unchanged), old or invalid ACKs (behind snd_una or beyond snd_nxt),
/// bytes acknowledged, segments and payload bytes the MEs built.
constexpr uint32_t counterBytes = 32;
/// FROM_HOST entries of the TCP send path: [buffer, length, flags << 24 |
/// number, state address]; flag txTcpBuild: the MEs build the headers of a
/// `length`-byte payload at buffer + 54, else they send `length` bytes as
/// they are. The number orders the entries (24 bits, wrapping).
constexpr uint32_t txTcpBuild = 1;

/// Connection i of the generated ones: local port 80 + i, remote port
/// 5000 + i, plus 1000 until its table slot (local xor remote) is free in
/// `slots` (65536 flags), which it then takes.
TcpConnection numberedConnection(unsigned i, std::vector<bool> &slots);

} // namespace netvm::onload::tcpwire

#endif // NETVM_ONLOAD_TCPWIRE_H
