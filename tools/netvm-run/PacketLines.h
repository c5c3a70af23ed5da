//===- PacketLines.h - tcpdump-like lines for packets -----------*- C++ -*-===//
//
// One line per packet, as tcpdump prints it: a time stamp, then the
// headers from the link layer up, decoded with a NetPDL protocol database
// (netvm's own: lib/ProtoDB) and printed in tcpdump's words for the
// protocols tcpdump users read every day (Ethernet, VLAN, MPLS, ARP, IPv4,
// IPv6, TCP, UDP, ICMP, ICMPv6); any other protocol of the database by its
// name. Options as tcpdump's -t..-ttttt, -e, -x/-xx, -X/-XX and -A.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_TOOLS_NETVM_RUN_PACKETLINES_H
#define NETVM_TOOLS_NETVM_RUN_PACKETLINES_H

#include "netvm/abi.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdint>

namespace netvm::protodb {
class Database;
}

namespace netvm::tools {

struct LineOptions {
  /// How many -t: 0 the time of day, 1 none, 2 seconds since 1970, 3 since
  /// the previous packet, 4 the date and time, 5 since the first packet.
  unsigned timestamps = 0;
  /// -e: the link-layer header (addresses, EtherType, VLAN tags).
  bool linkHeader = false;
  /// -x (1), -xx (2): the bytes in hex, from the network layer or from the
  /// link layer; with `ascii` also as ASCII (-X, -XX).
  unsigned hex = 0;
  bool ascii = false;
  /// -A: the bytes as ASCII only, from the network layer.
  bool asciiOnly = false;
  /// The link type of the packets (libpcap's DLT_). Ethernet frames are
  /// decoded from the database's start; a Linux cooked (v1, v2), raw IP or
  /// loopback header is skipped and the line starts at the network layer
  /// (-e adds nothing for them).
  int linkType = 1;
};

class PacketLines {
public:
  PacketLines(const protodb::Database &db, const LineOptions &options)
      : db(db), options(options) {}
  /// The line (and dump) of `packet`: its captured bytes, wire length and
  /// time stamp.
  void print(llvm::raw_ostream &os, const netvm_packet &packet);

private:
  void timestamp(llvm::raw_ostream &os, const netvm_packet &packet);

  const protodb::Database &db;
  LineOptions options;
  bool seenFirst = false;
  uint64_t firstMicros = 0, previousMicros = 0;
};

} // namespace netvm::tools

#endif // NETVM_TOOLS_NETVM_RUN_PACKETLINES_H
