//===- PacketIO.cpp - Reading and writing packet traces -------------------===//
//
// pcap input and output through libpcap; hexadecimal text input.
//
//===----------------------------------------------------------------------===//

#include "netvm/io/PacketIO.h"

#include <pcap/pcap.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

using namespace netvm::rt;

PacketReader::~PacketReader() = default;

namespace {

class PcapReader final : public PacketReader {
public:
  explicit PcapReader(pcap_t *handle) : handle(handle) {}
  ~PcapReader() override { pcap_close(handle); }

  bool next(TracePacket &packet, std::string &error) override {
    struct pcap_pkthdr *header;
    const u_char *data;
    int rc = pcap_next_ex(handle, &header, &data);
    timeout = rc == 0; // live capture: nothing within the read timeout
    if (rc == 1) {
      packet.bytes.assign(data, data + header->caplen);
      packet.wireLength = header->len;
      packet.seconds = static_cast<uint32_t>(header->ts.tv_sec);
      packet.microseconds = static_cast<uint32_t>(header->ts.tv_usec);
      return true;
    }
    if (rc == PCAP_ERROR)
      error = pcap_geterr(handle);
    return false;
  }
  int linkType() const override { return pcap_datalink(handle); }
  bool timedOut() const override { return timeout; }

private:
  pcap_t *handle;
  bool timeout = false;
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

} // namespace

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
  return std::make_unique<PcapReader>(handle);
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
  if (dumper)
    pcap_dump_close(static_cast<pcap_dumper_t *>(dumper));
  if (pcap)
    pcap_close(static_cast<pcap_t *>(pcap));
}

std::unique_ptr<PcapWriter>
PcapWriter::create(const std::string &path, int linkType, std::string &error) {
  std::unique_ptr<PcapWriter> writer(new PcapWriter());
  pcap_t *handle = pcap_open_dead(linkType, 262144);
  if (!handle) {
    error = path + ": cannot create a pcap handle";
    return nullptr;
  }
  writer->pcap = handle;
  pcap_dumper_t *dumper = pcap_dump_open(handle, path.c_str());
  if (!dumper) {
    error = path + ": " + pcap_geterr(handle);
    return nullptr;
  }
  writer->dumper = dumper;
  return writer;
}

void PcapWriter::write(const TracePacket &packet) {
  struct pcap_pkthdr header;
  std::memset(&header, 0, sizeof(header));
  header.ts.tv_sec = packet.seconds;
  header.ts.tv_usec = packet.microseconds;
  header.caplen = packet.bytes.size();
  header.len = std::max<uint32_t>(packet.wireLength, header.caplen);
  pcap_dump(reinterpret_cast<u_char *>(dumper), &header, packet.bytes.data());
  ++written;
}
