//===- Stack.h - The host's UDP/IP input path -------------------*- C++ -*-===//
//
// The checks a host stack makes on a received frame before its datagram
// reaches a socket. Not installed.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_ONLOAD_STACK_H
#define NETVM_ONLOAD_STACK_H

#include "netvm/onload/Onload.h"

namespace netvm::onload {

enum class InputVerdict { Ok, NotUdp, Fragment, Malformed, BadChecksum };

struct ParsedDatagram {
  uint32_t srcIp = 0, dstIp = 0;
  uint16_t srcPort = 0, dstPort = 0;
  const uint8_t *payload = nullptr;
  uint32_t payloadLength = 0;
};

/// IPv4 without options carrying UDP; fragments are refused. `verify`:
/// check the UDP checksum (the host does it unless the MEs did).
InputVerdict parseInput(const uint8_t *frame, uint32_t length, bool verify,
                        ParsedDatagram &out);

} // namespace netvm::onload

#endif // NETVM_ONLOAD_STACK_H
