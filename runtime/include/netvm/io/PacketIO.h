//===- PacketIO.h - Reading and writing packet traces -----------*- C++ -*-===//
//
// Packet sources and sinks of the runtimes: pcap files (classic pcap files
// mapped into memory and read in place; pcapng, pipes and anything unusual
// through libpcap, the parser of record), live capture, and text files of
// hexadecimal bytes in the style of NetBee's test vectors.
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
  /// The source it enters by, when the input says (per-source pcaps, '@N'
  /// in hex text); -1: the source the caller chose.
  int source = -1;
};

/// A packet where a reader holds it: valid until the reader's next read,
/// or as long as the reader lives if its views are stable.
struct PacketView {
  const uint8_t *data = nullptr;
  uint32_t length = 0;     // captured bytes
  uint32_t wireLength = 0; // length on the wire (>= length)
  uint32_t seconds = 0, microseconds = 0;
  int source = -1; // as TracePacket::source
};

/// A view of `packet`'s bytes (valid while it is unchanged).
inline PacketView viewOf(const TracePacket &packet) {
  PacketView view;
  view.data = packet.bytes.data();
  view.length = static_cast<uint32_t>(packet.bytes.size());
  view.wireLength = packet.wireLength;
  view.seconds = packet.seconds;
  view.microseconds = packet.microseconds;
  view.source = packet.source;
  return view;
}

/// Make `packet` a copy of `view`.
inline void assign(TracePacket &packet, const PacketView &view) {
  packet.bytes.assign(view.data, view.data + view.length);
  packet.wireLength = view.wireLength;
  packet.seconds = view.seconds;
  packet.microseconds = view.microseconds;
  packet.source = view.source;
}

/// Packets gathered into one buffer for the runtime's batch entries
/// (netvm_instance_push_batch, netvm_runner_run).
class PacketBatch {
public:
  void clear() {
    arena.clear();
    offsets.clear();
    items.clear();
  }
  void add(const TracePacket &packet) { add(viewOf(packet)); }
  /// Add a copy of `packet`.
  void add(const PacketView &packet) {
    offsets.push_back(arena.size());
    arena.insert(arena.end(), packet.data, packet.data + packet.length);
    items.push_back(item(packet));
  }
  /// Add `packet` in place: its memory must stay valid (and writable: the
  /// runtime may change packets in place) while the batch is used.
  void addInPlace(const PacketView &packet) {
    offsets.push_back(inPlace);
    items.push_back(item(packet));
    items.back().data = const_cast<uint8_t *>(packet.data);
  }
  size_t size() const { return items.size(); }
  bool empty() const { return items.empty(); }
  /// The packets, pointing into the buffer: valid until the next add().
  netvm_packet *packets() {
    for (size_t i = 0; i < items.size(); ++i)
      if (offsets[i] != inPlace)
        items[i].data = arena.data() + offsets[i];
    return items.data();
  }
  const netvm_packet &operator[](size_t i) const { return items[i]; }

private:
  static constexpr size_t inPlace = ~size_t(0);
  static netvm_packet item(const PacketView &packet) {
    netvm_packet p{};
    p.length = packet.length;
    p.seconds = packet.seconds;
    p.microseconds = packet.microseconds;
    p.wire_length = packet.wireLength;
    return p;
  }
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

  /// Reads the files of `paths` in order, one packet each, as
  /// readHexPacket does.
  static std::unique_ptr<PacketReader>
  openHexPacketFiles(std::vector<std::string> paths);
  /// One pcap file per source, merged in time order (ties: the lower
  /// source first): `paths[i]` feeds source i, an empty path none. Each
  /// packet carries its source. Null on error, with `error` naming the file.
  static std::unique_ptr<PacketReader>
  openPerSource(const std::vector<std::string> &paths, std::string &error);
  /// Capture from network interface `device` through libpcap (live, not
  /// promiscuous unless asked). Null on error, with `error` naming the
  /// device.
  static std::unique_ptr<PacketReader>
  openLive(const std::string &device, bool promiscuous, std::string &error);

  /// The next packet; false at the end of the trace or on error (then
  /// `error` is non-empty), or, for live captures, when no packet came
  /// within the read timeout (then timedOut() is true).
  virtual bool next(TracePacket &packet, std::string &error) = 0;
  /// The next packet without a copy where the reader can (as next()).
  virtual bool nextView(PacketView &view, std::string &error);
  /// Whether the views of nextView() stay valid, and their bytes writable,
  /// as long as the reader lives (a mapped file).
  virtual bool stableViews() const { return false; }
  /// The views given so far are no longer used: a mapped file lets their
  /// memory go (peak memory stays a chunk, not the file).
  virtual void release() {}
  /// Start bringing about `bytes` bytes of input after the last view into
  /// memory on another thread, and return at once (a mapped file faults
  /// its pages in; other readers do nothing). Runs that process a chunk on
  /// several threads read the next one meanwhile.
  virtual void readAhead(size_t bytes) { (void)bytes; }
  /// Whether the last next() returned false for a read timeout.
  virtual bool timedOut() const { return false; }
  /// The pcap link-layer type (DLT_EN10MB for hex files).
  virtual int linkType() const = 0;
  /// Whether a savefile was written in the opposite byte order to this
  /// machine's (libpcap's pcap_is_swapped): DLT_NULL's header is in the
  /// capturing host's order.
  virtual bool swapped() const { return false; }
  /// The netmask of the captured network, which tcpdump gives
  /// pcap_compile for `ip broadcast`: the interface's (pcap_lookupnet) for
  /// live capture, 0 for files and when it is not known.
  virtual uint32_t netmask() const { return 0; }
  /// The snapshot length of a pcap input (262144 for other inputs).
  virtual uint32_t snapLength() const { return 262144; }

protected:
  /// next() for readers that implement nextView().
  bool copyNext(TracePacket &packet, std::string &error);
  TracePacket viewed; // what nextView() returns by default
};

/// Writes packets to a pcap file ('-': standard output) as libpcap's
/// pcap_dump would (tcpdump -w), through a large buffer: one system call
/// per megabyte, not per packet. The header carries the link type and the
/// snapshot length given (those of the input: the file's are kept).
class PcapWriter {
public:
  ~PcapWriter();
  static std::unique_ptr<PcapWriter> create(const std::string &path,
                                            int linkType, std::string &error,
                                            uint32_t snapLength = 262144);
  void write(const TracePacket &packet);
  /// The record's original length is max(wireLength, length).
  void write(const PacketView &packet);
  /// Write what is buffered; false (with `error`) if a write failed.
  bool flush(std::string &error);
  uint64_t count() const { return written; }

private:
  PcapWriter() = default;
  void *pcap = nullptr;   // pcap_t *
  void *dumper = nullptr; // pcap_dumper_t *
  int fd = -1;
  std::vector<uint8_t> buffer;
  std::string path, failure;
  uint64_t written = 0;
};

} // namespace netvm::rt

#endif // NETVM_IO_PACKETIO_H
