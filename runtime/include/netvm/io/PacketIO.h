//===- PacketIO.h - Reading and writing packet traces -----------*- C++ -*-===//
//
// Packet sources and sinks of the runtimes: pcap files through libpcap, and
// text files of hexadecimal bytes in the style of NetBee's test vectors.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_IO_PACKETIO_H
#define NETVM_IO_PACKETIO_H

#include "netvm/abi.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace netvm::rt {

struct TracePacket {
  std::vector<uint8_t> bytes; // captured bytes
  uint32_t wireLength = 0;    // length on the wire (>= bytes.size())
  uint32_t seconds = 0, microseconds = 0;
};

/// Packets gathered into one buffer for the runtime's batch entries
/// (netvm_instance_push_batch, netvm_runner_run).
class PacketBatch {
public:
  void clear() {
    arena.clear();
    offsets.clear();
    items.clear();
  }
  void add(const TracePacket &packet) {
    offsets.push_back(arena.size());
    arena.insert(arena.end(), packet.bytes.begin(), packet.bytes.end());
    netvm_packet p{};
    p.length = static_cast<uint32_t>(packet.bytes.size());
    p.seconds = packet.seconds;
    p.microseconds = packet.microseconds;
    p.wire_length = packet.wireLength;
    items.push_back(p);
  }
  size_t size() const { return items.size(); }
  bool empty() const { return items.empty(); }
  /// The packets, pointing into the buffer: valid until the next add().
  netvm_packet *packets() {
    for (size_t i = 0; i < items.size(); ++i)
      items[i].data = arena.data() + offsets[i];
    return items.data();
  }
  const netvm_packet &operator[](size_t i) const { return items[i]; }

private:
  std::vector<uint8_t> arena;
  std::vector<size_t> offsets;
  std::vector<netvm_packet> items;
};

class PacketReader {
public:
  virtual ~PacketReader();
  /// Open a pcap file, or (`hex`) a text file with one packet per line of
  /// whitespace-separated hexadecimal bytes ("0x1f" or "1f"); blank lines
  /// and lines starting with '#' are skipped. Null on error, with `error`
  /// set to a message naming the file (and line).
  static std::unique_ptr<PacketReader> open(const std::string &path, bool hex,
                                            std::string &error);
  /// Read a whole file of hexadecimal bytes as a single packet (NetBee's
  /// test-vector files spread one packet over several lines).
  static bool readHexPacket(const std::string &path, TracePacket &packet,
                            std::string &error);

  /// Capture from network interface `device` through libpcap (live, not
  /// promiscuous unless asked). Null on error, with `error` naming the
  /// device.
  /// Reads the files of `paths` in order, one packet each, as
  /// readHexPacket does.
  static std::unique_ptr<PacketReader>
  openHexPacketFiles(std::vector<std::string> paths);
  static std::unique_ptr<PacketReader>
  openLive(const std::string &device, bool promiscuous, std::string &error);

  /// The next packet; false at the end of the trace or on error (then
  /// `error` is non-empty), or, for live captures, when no packet came
  /// within the read timeout (then timedOut() is true).
  virtual bool next(TracePacket &packet, std::string &error) = 0;
  /// Whether the last next() returned false for a read timeout.
  virtual bool timedOut() const { return false; }
  /// The pcap link-layer type (DLT_EN10MB for hex files).
  virtual int linkType() const = 0;
};

/// Writes packets to a pcap file.
class PcapWriter {
public:
  ~PcapWriter();
  static std::unique_ptr<PcapWriter> create(const std::string &path,
                                            int linkType, std::string &error);
  void write(const TracePacket &packet);
  uint64_t count() const { return written; }

private:
  PcapWriter() = default;
  void *pcap = nullptr;   // pcap_t *
  void *dumper = nullptr; // pcap_dumper_t *
  uint64_t written = 0;
};

} // namespace netvm::rt

#endif // NETVM_IO_PACKETIO_H
