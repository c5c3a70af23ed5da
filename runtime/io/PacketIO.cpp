//===- PacketIO.cpp - Reading and writing packet traces -------------------===//
//
// pcap input: classic pcap files mapped into memory and read in place, the
// rest (pcapng, pipes, unusual files, live capture) through libpcap; pcap
// output through a large buffer; hexadecimal text input.
//
//===----------------------------------------------------------------------===//

#include "netvm/io/PacketIO.h"

#include <pcap/pcap.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace netvm::rt;

PacketReader::~PacketReader() = default;

bool PacketReader::copyNext(TracePacket &packet, std::string &error) {
  PacketView view;
  if (!nextView(view, error))
    return false;
  assign(packet, view);
  return true;
}

bool PacketReader::nextView(PacketView &view, std::string &error) {
  if (!next(viewed, error))
    return false;
  view = viewOf(viewed);
  return true;
}

namespace {

class PcapReader final : public PacketReader {
public:
  explicit PcapReader(pcap_t *handle) : handle(handle) {}
  ~PcapReader() override { pcap_close(handle); }

  bool next(TracePacket &packet, std::string &error) override {
    return copyNext(packet, error);
  }
  /// The packet in libpcap's buffer (valid until the next read).
  bool nextView(PacketView &view, std::string &error) override {
    struct pcap_pkthdr *header;
    const u_char *data;
    int rc = pcap_next_ex(handle, &header, &data);
    timeout = rc == 0; // live capture: nothing within the read timeout
    if (rc == 1) {
      view.data = data;
      view.length = header->caplen;
      view.wireLength = header->len;
      view.seconds = static_cast<uint32_t>(header->ts.tv_sec);
      view.microseconds = static_cast<uint32_t>(header->ts.tv_usec);
      return true;
    }
    if (rc == PCAP_ERROR)
      error = pcap_geterr(handle);
    return false;
  }
  int linkType() const override { return pcap_datalink(handle); }
  bool swapped() const override { return pcap_is_swapped(handle) == 1; }
  uint32_t netmask() const override { return mask; }
  uint32_t mask = 0;
  uint32_t snapLength() const override {
    return static_cast<uint32_t>(pcap_snapshot(handle));
  }
  bool timedOut() const override { return timeout; }

private:
  pcap_t *handle;
  bool timeout = false;
};

/// libpcap's reader of `path`, or null with `error` set.
std::unique_ptr<PacketReader> openWithLibpcap(const std::string &path,
                                              std::string &error) {
  char errbuf[PCAP_ERRBUF_SIZE] = {0};
  pcap_t *handle = pcap_open_offline(path.c_str(), errbuf);
  if (!handle) {
    // libpcap's message names the file when it could not open it.
    std::string message = errbuf;
    error = message.find(path) == std::string::npos ? path + ": " + message
                                                    : message;
    return nullptr;
  }
  return std::make_unique<PcapReader>(handle);
}

/// The largest snapshot length libpcap accepts for Ethernet.
constexpr uint32_t maxSnapLength = 262144;

/// A classic pcap file (version 2.4, Ethernet, microsecond or nanosecond
/// timestamps in either byte order) mapped into memory: packets are read
/// where they are, without a copy, and the views stay valid as long as the
/// reader. The mapping is private and writable, so the runtime may change
/// packets in place; the file never changes. A record it does not expect
/// (longer than the snapshot length, truncated) hands the rest of the file
/// to libpcap, which then reads or reports it as it always would.
class MappedPcapReader final : public PacketReader {
public:
  /// The reader of `path`, or null if the file is not one it reads (then
  /// libpcap opens it).
  static std::unique_ptr<MappedPcapReader> open(const std::string &path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return nullptr;
    struct stat st;
    uint8_t header[24];
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_size < static_cast<off_t>(sizeof header) ||
        pread(fd, header, sizeof header, 0) != sizeof header) {
      ::close(fd);
      return nullptr;
    }
    auto reader = std::unique_ptr<MappedPcapReader>(new MappedPcapReader());
    uint32_t magic = load32(header, false);
    if (magic == 0xa1b2c3d4 || magic == 0xa1b23c4d) {
      reader->swapped = false;
    } else if (magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1) {
      reader->swapped = true;
      magic = __builtin_bswap32(magic);
    } else {
      ::close(fd);
      return nullptr;
    }
    reader->nanoseconds = magic == 0xa1b23c4d;
    uint32_t version = load32(header + 4, false);
    uint16_t major = static_cast<uint16_t>(
                 reader->swapped ? version >> 24 | (version >> 8 & 0xff00)
                                 : version),
             minor = static_cast<uint16_t>(reader->swapped
                                               ? (version >> 8 & 0xff) |
                                                     (version << 8 & 0xff00)
                                               : version >> 16);
    reader->snap = reader->load32(header + 16);
    uint32_t link = reader->load32(header + 20);
    if (major != 2 || minor != 4 || link != DLT_EN10MB || reader->snap == 0 ||
        reader->snap > maxSnapLength) {
      ::close(fd);
      return nullptr;
    }
    void *base =
        mmap(nullptr, st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (base == MAP_FAILED)
      return nullptr;
    madvise(base, st.st_size, MADV_SEQUENTIAL);
    reader->path = path;
    reader->base = static_cast<uint8_t *>(base);
    reader->size = static_cast<size_t>(st.st_size);
    reader->offset = sizeof header;
    return reader;
  }
  ~MappedPcapReader() override {
    if (ahead.joinable())
      ahead.join();
    munmap(base, size);
  }

  bool nextView(PacketView &view, std::string &error) override {
    if (rest)
      return rest->nextView(view, error);
    size_t left = size - offset;
    if (left == 0)
      return false;
    const uint8_t *record = base + offset;
    uint32_t caplen = left >= 16 ? load32(record + 8) : 0;
    if (left < 16 || caplen > snap || caplen > left - 16)
      return handOver(error) && rest->nextView(view, error);
    view.data = record + 16;
    view.length = caplen;
    view.wireLength = load32(record + 12);
    view.seconds = load32(record);
    uint32_t fraction = load32(record + 4);
    view.microseconds = nanoseconds ? fraction / 1000 : fraction;
    offset += 16 + caplen;
    ++delivered;
    return true;
  }
  bool next(TracePacket &packet, std::string &error) override {
    return copyNext(packet, error);
  }
  bool stableViews() const override { return !rest; }
  void release() override {
    size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    size_t upTo = offset / page * page;
    if (upTo > released) {
      madvise(base + released, upTo - released, MADV_DONTNEED);
      released = upTo;
    }
  }
  void readAhead(size_t bytes) override {
    if (ahead.joinable())
      ahead.join();
    if (rest || offset >= size)
      return;
    // Fault the pages in on a thread of their own: the mapping is the
    // process's, so the reads of the next chunk then find them mapped.
    size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    size_t from = offset / page * page;
    size_t to = std::min(size, offset + bytes);
    const uint8_t *map = base;
    ahead = std::thread([map, from, to, page] {
      unsigned sum = 0;
      for (size_t at = from; at < to; at += page)
        sum += *static_cast<const volatile uint8_t *>(map + at);
      (void)sum;
    });
  }
  int linkType() const override { return DLT_EN10MB; }
  uint32_t snapLength() const override { return snap; }

private:
  MappedPcapReader() = default;

  static uint32_t load32(const uint8_t *p, bool swap) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return swap ? __builtin_bswap32(v) : v;
  }
  uint32_t load32(const uint8_t *p) const { return load32(p, swapped); }

  /// Continue with libpcap from the record after the last one delivered.
  bool handOver(std::string &error) {
    rest = openWithLibpcap(path, error);
    if (!rest)
      return false;
    TracePacket skipped;
    for (uint64_t i = 0; i < delivered; ++i)
      if (!rest->next(skipped, error)) {
        if (error.empty())
          error = path + ": the file changed while it was read";
        return false;
      }
    return true;
  }

  std::string path;
  uint8_t *base = nullptr;
  size_t size = 0, offset = 0, released = 0;
  uint64_t delivered = 0;
  uint32_t snap = 0;
  bool swapped = false, nanoseconds = false;
  std::unique_ptr<PacketReader> rest; // libpcap, after a hand-over
  std::thread ahead;                  // readAhead()'s
};

/// Parse whitespace-separated hex bytes; false (with `error`) on a bad
/// token.
bool parseHexBytes(const std::string &text, std::vector<uint8_t> &bytes,
                   std::string &error) {
  std::istringstream in(text);
  std::string token;
  while (in >> token) {
    std::string digits = token;
    if (digits.size() > 2 && digits[0] == '0' &&
        (digits[1] == 'x' || digits[1] == 'X'))
      digits = digits.substr(2);
    if (digits.empty() || digits.size() > 8 ||
        !std::all_of(digits.begin(), digits.end(),
                     [](unsigned char c) { return std::isxdigit(c); })) {
      error = "'" + token + "' is not a hexadecimal byte";
      return false;
    }
    unsigned long value = std::stoul(digits, nullptr, 16);
    if (value > 0xff) {
      error = "'" + token + "' does not fit in a byte";
      return false;
    }
    bytes.push_back(static_cast<uint8_t>(value));
  }
  return true;
}

class HexReader final : public PacketReader {
public:
  HexReader(std::string path, std::ifstream in)
      : path(std::move(path)), in(std::move(in)) {}

  bool next(TracePacket &packet, std::string &error) override {
    std::string line;
    while (std::getline(in, line)) {
      ++lineNo;
      size_t first = line.find_first_not_of(" \t\r");
      if (first == std::string::npos || line[first] == '#')
        continue;
      packet = TracePacket();
      std::string why;
      // '@N' first: the packet enters by source N.
      if (line[first] == '@') {
        size_t end = line.find_first_of(" \t\r", first);
        std::string digits =
            line.substr(first + 1, end == std::string::npos ? std::string::npos
                                                            : end - first - 1);
        if (digits.empty() || digits.size() > 4 ||
            !std::all_of(digits.begin(), digits.end(),
                         [](unsigned char c) { return std::isdigit(c); })) {
          error = path + ":" + std::to_string(lineNo) + ":" +
                  std::to_string(first + 1) + ": '@" + digits +
                  "' is not a source number";
          return false;
        }
        packet.source = std::stoi(digits);
        line = line.substr(end == std::string::npos ? line.size() : end);
      }
      if (!parseHexBytes(line, packet.bytes, why)) {
        error = path + ":" + std::to_string(lineNo) + ": " + why;
        return false;
      }
      packet.wireLength = packet.bytes.size();
      // Give hex packets distinct, reproducible timestamps.
      packet.seconds = static_cast<uint32_t>(count);
      ++count;
      return true;
    }
    return false;
  }
  int linkType() const override { return DLT_EN10MB; }

private:
  std::string path;
  std::ifstream in;
  unsigned lineNo = 0;
  uint64_t count = 0;
};

/// Pcap files, one per source, merged by time stamp.
class PerSourceReader final : public PacketReader {
public:
  bool add(int source, std::unique_ptr<PacketReader> reader, std::string path,
           std::string &error) {
    Input in{source, std::move(reader), std::move(path), {}, false};
    if (!fill(in, error))
      return false;
    inputs.push_back(std::move(in));
    return true;
  }
  bool next(TracePacket &packet, std::string &error) override {
    Input *first = nullptr;
    for (Input &in : inputs)
      if (in.has &&
          (!first ||
           std::make_pair(in.head.seconds, in.head.microseconds) <
               std::make_pair(first->head.seconds, first->head.microseconds)))
        first = &in;
    if (!first)
      return false;
    packet = std::move(first->head);
    packet.source = first->source;
    return fill(*first, error);
  }
  int linkType() const override { return inputs.front().reader->linkType(); }
  bool swapped() const override { return inputs.front().reader->swapped(); }
  uint32_t snapLength() const override {
    uint32_t most = 0;
    for (const Input &in : inputs)
      most = std::max(most, in.reader->snapLength());
    return most;
  }

private:
  struct Input {
    int source;
    std::unique_ptr<PacketReader> reader;
    std::string path;
    TracePacket head;
    bool has;
  };
  /// Read the next packet of `in`; false on a read error.
  static bool fill(Input &in, std::string &error) {
    in.has = in.reader->next(in.head, error);
    if (!in.has && !error.empty()) {
      error = in.path + ": " + error;
      return false;
    }
    return true;
  }
  std::vector<Input> inputs;
};

} // namespace

std::unique_ptr<PacketReader>
PacketReader::openPerSource(const std::vector<std::string> &paths,
                            std::string &error) {
  auto merged = std::make_unique<PerSourceReader>();
  int linkType = -1;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (paths[i].empty())
      continue;
    std::unique_ptr<PacketReader> reader = open(paths[i], false, error);
    if (!reader)
      return nullptr;
    if (linkType >= 0 && reader->linkType() != linkType) {
      error = paths[i] + ": link-layer type " +
              std::to_string(reader->linkType()) + " differs from " +
              std::to_string(linkType) + " of the other inputs";
      return nullptr;
    }
    linkType = reader->linkType();
    if (!merged->add(static_cast<int>(i), std::move(reader), paths[i], error))
      return nullptr;
  }
  if (linkType < 0) {
    error = "no input file";
    return nullptr;
  }
  return merged;
}

std::unique_ptr<PacketReader> PacketReader::open(const std::string &path,
                                                 bool hex, std::string &error) {
  if (hex) {
    std::ifstream in(path);
    if (!in) {
      error = path + ": " + std::strerror(errno);
      return nullptr;
    }
    return std::make_unique<HexReader>(path, std::move(in));
  }
  // NETVM_PCAP_READER=libpcap: always libpcap (to compare the readers).
  const char *which = std::getenv("NETVM_PCAP_READER");
  if (!which || std::strcmp(which, "libpcap") != 0)
    if (auto mapped = MappedPcapReader::open(path))
      return mapped;
  return openWithLibpcap(path, error);
}

std::unique_ptr<PacketReader> PacketReader::openLive(const std::string &device,
                                                     bool promiscuous,
                                                     std::string &error) {
  char errbuf[PCAP_ERRBUF_SIZE] = {0};
  pcap_t *handle = pcap_create(device.c_str(), errbuf);
  if (!handle) {
    error = device + ": " + errbuf;
    return nullptr;
  }
  pcap_set_snaplen(handle, 262144);
  pcap_set_promisc(handle, promiscuous ? 1 : 0);
  // Short timeouts: a quiet link still lets the caller process what it has.
  pcap_set_timeout(handle, 100);
  int rc = pcap_activate(handle);
  if (rc < 0) {
    std::string why =
        rc == PCAP_ERROR ? pcap_geterr(handle) : pcap_statustostr(rc);
    if (rc == PCAP_ERROR_PERM_DENIED)
      why += " (capturing needs root or CAP_NET_RAW)";
    error = device + ": " + why;
    pcap_close(handle);
    return nullptr;
  }
  auto reader = std::make_unique<PcapReader>(handle);
  // As tcpdump hands it to pcap_compile: pcap_lookupnet's value as it
  // comes (0 when the interface has no IPv4 address).
  bpf_u_int32 net = 0, mask = 0;
  if (pcap_lookupnet(device.c_str(), &net, &mask, errbuf) == 0)
    reader->mask = mask;
  return reader;
}

bool PacketReader::readHexPacket(const std::string &path, TracePacket &packet,
                                 std::string &error) {
  std::ifstream in(path);
  if (!in) {
    error = path + ": " + std::strerror(errno);
    return false;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  packet = TracePacket();
  std::string why;
  if (!parseHexBytes(buffer.str(), packet.bytes, why)) {
    error = path + ": " + why;
    return false;
  }
  packet.wireLength = packet.bytes.size();
  return true;
}

namespace {
/// One packet per file, the files in order (NetBee's test vectors).
class HexPacketFiles final : public PacketReader {
public:
  explicit HexPacketFiles(std::vector<std::string> paths)
      : paths(std::move(paths)) {}
  bool next(TracePacket &packet, std::string &error) override {
    if (nextFile == paths.size())
      return false;
    return readHexPacket(paths[nextFile++], packet, error);
  }
  int linkType() const override { return DLT_EN10MB; }

private:
  std::vector<std::string> paths;
  size_t nextFile = 0;
};
} // namespace

std::unique_ptr<PacketReader>
PacketReader::openHexPacketFiles(std::vector<std::string> paths) {
  return std::make_unique<HexPacketFiles>(std::move(paths));
}

PcapWriter::~PcapWriter() {
  std::string ignored;
  flush(ignored);
  if (dumper)
    pcap_dump_close(static_cast<pcap_dumper_t *>(dumper));
  if (pcap)
    pcap_close(static_cast<pcap_t *>(pcap));
}

/// Bytes buffered before a write.
static constexpr size_t writeBuffer = 1 << 20;

std::unique_ptr<PcapWriter> PcapWriter::create(const std::string &path,
                                               int linkType, std::string &error,
                                               uint32_t snapLength) {
  std::unique_ptr<PcapWriter> writer(new PcapWriter());
  pcap_t *handle = pcap_open_dead_with_tstamp_precision(
      linkType, static_cast<int>(snapLength), PCAP_TSTAMP_PRECISION_MICRO);
  if (!handle) {
    error = path + ": cannot create a pcap handle";
    return nullptr;
  }
  writer->pcap = handle;
  // libpcap writes the file header (its link type and snapshot length);
  // the records go through our buffer to the same descriptor.
  pcap_dumper_t *dumper = pcap_dump_open(handle, path.c_str());
  if (!dumper) {
    error = path + ": " + pcap_geterr(handle);
    return nullptr;
  }
  writer->dumper = dumper;
  FILE *file = pcap_dump_file(dumper);
  if (fflush(file) != 0) {
    error = path + ": " + std::strerror(errno);
    return nullptr;
  }
  writer->fd = fileno(file);
  writer->path = path;
  writer->buffer.reserve(writeBuffer + 16 + maxSnapLength);
  return writer;
}

void PcapWriter::write(const TracePacket &packet) { write(viewOf(packet)); }

void PcapWriter::write(const PacketView &packet) {
  // struct pcap_sf_pkthdr: 32-bit seconds, microseconds, lengths.
  uint32_t header[4] = {packet.seconds, packet.microseconds, packet.length,
                        std::max(packet.wireLength, packet.length)};
  const uint8_t *bytes = reinterpret_cast<const uint8_t *>(header);
  buffer.insert(buffer.end(), bytes, bytes + sizeof header);
  buffer.insert(buffer.end(), packet.data, packet.data + packet.length);
  ++written;
  if (buffer.size() >= writeBuffer) {
    std::string ignored; // kept in `failure`, reported by flush()
    flush(ignored);
  }
}

bool PcapWriter::flush(std::string &error) {
  size_t done = 0;
  while (done < buffer.size() && failure.empty()) {
    ssize_t n = ::write(fd, buffer.data() + done, buffer.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      failure = path + ": " + std::strerror(n < 0 ? errno : EIO);
    else
      done += static_cast<size_t>(n);
  }
  buffer.clear();
  error = failure;
  return failure.empty();
}
