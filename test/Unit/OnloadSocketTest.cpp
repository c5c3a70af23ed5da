//===- OnloadSocketTest.cpp - The C socket API over the three designs ----===//
//
// netvm/onload/socket.h driven as a program would: bind several ports,
// feed frames with bad checksums, fragments and unbound ports, recv()
// every socket until it would block (some into short buffers), send to
// two destinations. Each socket must get exactly its datagrams, in order
// and byte for byte, every refused frame must be counted where its design
// refuses it, and the transmitted frames must be identical across designs
// with IP and UDP checksums that an independent sum accepts.
//
//===----------------------------------------------------------------------===//

#include "netvm/Target/ME/Assembler.h"
#include "netvm/onload/Onload.h"
#include "netvm/onload/socket.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>

using namespace netvm;

namespace {

const char *const designs[] = {"emu-nic", "softnic", "onloader"};

/// A stack of `design` through the C API, its image assembled here: the
/// design's program, or `program` if given.
netvm_onload_stack *openStack(const char *design,
                              const std::string &program = "") {
  netvm_onload_options o;
  netvm_onload_options_init(&o);
  o.design = design;
  std::string text = program;
  if (text.empty()) {
    size_t length = 0;
    EXPECT_EQ(netvm_onload_program(&o, nullptr, 0, &length), NETVM_ONLOAD_OK);
    text.assign(length + 1, '\0');
    netvm_onload_program(&o, text.data(), text.size(), &length);
    text.resize(length);
  }
  me::AssemblerOptions options;
  me::Image image;
  std::vector<std::string> errors;
  EXPECT_TRUE(me::assemble(text, "<onload>", options, image, errors))
      << (errors.empty() ? "" : errors[0]);
  std::vector<uint8_t> bytes = me::writeImage(image);
  netvm_onload_stack *stack = nullptr;
  char error[256];
  EXPECT_EQ(netvm_onload_open(&o, bytes.data(), bytes.size(), &stack, error,
                              sizeof(error)),
            NETVM_ONLOAD_OK)
      << error;
  return stack;
}

/// The one's-complement sum of 16-bit big-endian words, folded.
uint32_t sum16(const uint8_t *p, size_t n, uint32_t sum = 0) {
  for (size_t i = 0; i + 1 < n; i += 2)
    sum += uint32_t(p[i]) << 8 | p[i + 1];
  if (n & 1)
    sum += uint32_t(p[n - 1]) << 8;
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  return sum;
}

struct Expected {
  uint32_t srcIp;
  uint16_t srcPort;
  std::vector<uint8_t> payload;
};

/// 150 datagrams of varied sizes to ports 9000-9002; some with bad
/// checksums, fragments or for port 7, which nobody binds.
struct Wire {
  std::vector<std::vector<uint8_t>> frames;
  std::map<uint16_t, std::vector<Expected>> expected;
  unsigned bad = 0, fragments = 0, unbound = 0;
  Wire() {
    for (unsigned i = 0; i < 150; ++i) {
      onload::Datagram d;
      d.dstPort = uint16_t(9000 + i % 3);
      d.srcIp = 0x0a000100 + i % 5;
      d.srcPort = uint16_t(4000 + i);
      d.payload.resize(1 + (i * 37) % 400);
      for (size_t b = 0; b < d.payload.size(); ++b)
        d.payload[b] = uint8_t(i * 7 + b * 13);
      if (i % 11 == 5) {
        d.badChecksum = true;
        ++bad;
      } else if (i % 13 == 6) {
        d.fragment = true;
        ++fragments;
      } else if (i % 17 == 3) {
        d.dstPort = 7;
        ++unbound;
      } else {
        expected[d.dstPort].push_back({d.srcIp, d.srcPort, d.payload});
      }
      frames.push_back(onload::buildFrame(d));
    }
  }
};

} // namespace

TEST(OnloadSocket, BindRefusesTakenOutOfRangeAndFull) {
  netvm_onload_stack *s = openStack("onloader");
  ASSERT_NE(s, nullptr);
  int sock = -1;
  EXPECT_EQ(netvm_onload_bind(s, 9000, &sock), NETVM_ONLOAD_OK);
  EXPECT_EQ(sock, 0);
  EXPECT_EQ(netvm_onload_bind(s, 9000, &sock), NETVM_ONLOAD_IN_USE);
  EXPECT_STREQ(netvm_onload_error(s), "port 9000 is already bound");
  EXPECT_EQ(netvm_onload_bind(s, 0, &sock), NETVM_ONLOAD_INVALID);
  EXPECT_EQ(netvm_onload_bind(s, 65536, &sock), NETVM_ONLOAD_INVALID);
  EXPECT_NE(std::string(netvm_onload_error(s)).find("out of range"),
            std::string::npos);
  unsigned bound = 1;
  while (netvm_onload_bind(s, 10000 + bound, &sock) == NETVM_ONLOAD_OK)
    ++bound;
  EXPECT_EQ(bound, 256u); // the SRAM's control blocks
  EXPECT_EQ(netvm_onload_bind(s, 20000, &sock), NETVM_ONLOAD_NO_SPACE);
  EXPECT_NE(std::string(netvm_onload_error(s)).find("full"), std::string::npos);
  // Bad arguments elsewhere are errors, not crashes.
  size_t length = 0;
  char buffer[8];
  EXPECT_EQ(netvm_onload_recv(s, 999, buffer, 8, &length, nullptr),
            NETVM_ONLOAD_INVALID);
  std::vector<uint8_t> big(1473);
  EXPECT_EQ(netvm_onload_send(s, 0, 0x0a000001, 5000, big.data(), big.size()),
            NETVM_ONLOAD_INVALID);
  EXPECT_NE(std::string(netvm_onload_error(s)).find("1472"), std::string::npos);
  EXPECT_EQ(netvm_onload_feed_pcap(s, "/nonexistent/x.pcap"), NETVM_ONLOAD_IO);
  EXPECT_NE(std::string(netvm_onload_error(s)).find("/nonexistent/x.pcap"),
            std::string::npos);
  netvm_onload_close(s);

  netvm_onload_options o;
  netvm_onload_options_init(&o);
  o.design = "raw";
  netvm_onload_stack *none = nullptr;
  char error[128];
  EXPECT_EQ(netvm_onload_open(&o, "x", 1, &none, error, sizeof(error)),
            NETVM_ONLOAD_INVALID);
  EXPECT_EQ(none, nullptr);
  EXPECT_NE(std::string(error).find("unknown design 'raw'"), std::string::npos);
}

TEST(OnloadSocket, EverySocketGetsExactlyItsDatagramsInEveryDesign) {
  Wire wire;
  std::map<std::string, std::map<uint16_t, std::vector<std::vector<uint8_t>>>>
      got;
  for (const char *design : designs) {
    SCOPED_TRACE(design);
    netvm_onload_stack *s = openStack(design);
    ASSERT_NE(s, nullptr);
    int socks[3];
    for (int i = 0; i < 3; ++i)
      ASSERT_EQ(netvm_onload_bind(s, 9000 + i, &socks[i]), NETVM_ONLOAD_OK);
    for (const auto &f : wire.frames)
      ASSERT_EQ(netvm_onload_feed(s, f.data(), f.size()), NETVM_ONLOAD_OK);
    uint64_t calls = 0, truncated = 0, delivered = 0;
    for (int i = 0; i < 3; ++i) {
      // Port 9002 reads into 64 bytes: longer datagrams are truncated.
      size_t capacity = i == 2 ? 64 : 2048;
      const std::vector<Expected> &want = wire.expected[uint16_t(9000 + i)];
      for (size_t n = 0;; ++n) {
        std::vector<uint8_t> buffer(capacity, 0xee);
        size_t length = 0;
        netvm_onload_address from{};
        int status = netvm_onload_recv(s, socks[i], buffer.data(), capacity,
                                       &length, &from);
        ++calls;
        if (status == NETVM_ONLOAD_WOULD_BLOCK) {
          EXPECT_EQ(n, want.size()) << "port " << 9000 + i;
          break;
        }
        ASSERT_EQ(status, NETVM_ONLOAD_OK) << netvm_onload_error(s);
        ASSERT_LT(n, want.size()) << "port " << 9000 + i << ": too many";
        const Expected &e = want[n];
        EXPECT_EQ(length, e.payload.size()) << "datagram " << n;
        size_t copied = std::min(capacity, e.payload.size());
        EXPECT_TRUE(std::equal(e.payload.begin(), e.payload.begin() + copied,
                               buffer.begin()))
            << "port " << 9000 + i << " datagram " << n;
        if (copied < capacity)
          EXPECT_EQ(buffer[copied], 0xee); // nothing written past it
        EXPECT_EQ(from.ip, e.srcIp);
        EXPECT_EQ(from.port, e.srcPort);
        truncated += e.payload.size() > capacity;
        got[design][uint16_t(9000 + i)].emplace_back(buffer.begin(),
                                                     buffer.begin() + copied);
        ++delivered;
      }
    }
    EXPECT_GT(truncated, 0u);
    netvm_onload_stats st;
    ASSERT_EQ(netvm_onload_stats_get(s, &st), NETVM_ONLOAD_OK);
    EXPECT_EQ(st.fed, 150u);
    EXPECT_EQ(st.received, delivered);
    EXPECT_EQ(st.truncated, truncated);
    EXPECT_EQ(st.would_block, 3u);
    EXPECT_EQ(st.queued, 0u);
    EXPECT_EQ(st.drop_fabric, 0u);
    // Every refused frame, at its design's place.
    uint64_t checksum = st.drop_me_checksum + st.drop_host_checksum;
    uint64_t fragments = st.drop_me_fragment + st.drop_host_fragment;
    uint64_t unbound = st.drop_me_no_socket + st.drop_host_no_socket;
    EXPECT_EQ(checksum, wire.bad);
    EXPECT_EQ(fragments, wire.fragments);
    EXPECT_EQ(unbound, wire.unbound);
    EXPECT_EQ(delivered + checksum + fragments + unbound, 150u);
    std::string d = design;
    if (d == "emu-nic")
      EXPECT_EQ(
          st.drop_me_checksum + st.drop_me_fragment + st.drop_me_no_socket, 0u);
    if (d == "softnic") {
      EXPECT_EQ(st.drop_me_checksum, wire.bad);
      EXPECT_EQ(st.drop_host_fragment, wire.fragments);
      EXPECT_EQ(st.drop_host_no_socket, wire.unbound);
    }
    if (d == "onloader")
      EXPECT_EQ(st.drop_host_checksum + st.drop_host_fragment +
                    st.drop_host_no_socket,
                0u);
    // Per call: every recv() is a system call (and nothing else is, here);
    // the onloader copies nothing, it maps.
    EXPECT_EQ(st.syscalls, calls);
    if (d == "onloader") {
      EXPECT_EQ(st.copied_bytes, 0u);
      EXPECT_EQ(st.mappings, delivered);
    } else {
      EXPECT_GE(st.copied_bytes, st.received_bytes);
    }
    EXPECT_GT(st.host_cycles, 0u);
    netvm_onload_close(s);
  }
  EXPECT_EQ(got["emu-nic"], got["softnic"]);
  EXPECT_EQ(got["softnic"], got["onloader"]);
}

TEST(OnloadSocket, SentFramesAreIdenticalAcrossDesignsAndChecksumsHold) {
  std::map<std::string, std::vector<std::vector<uint8_t>>> frames;
  for (const char *design : designs) {
    SCOPED_TRACE(design);
    netvm_onload_stack *s = openStack(design);
    ASSERT_NE(s, nullptr);
    int a = -1, b = -1;
    ASSERT_EQ(netvm_onload_bind(s, 7000, &a), NETVM_ONLOAD_OK);
    ASSERT_EQ(netvm_onload_bind(s, 7001, &b), NETVM_ONLOAD_OK);
    for (unsigned i = 0; i < 40; ++i) {
      std::vector<uint8_t> data(1 + (i * 53) % 1472);
      for (size_t k = 0; k < data.size(); ++k)
        data[k] = uint8_t(i + k * 3);
      uint32_t ip = i % 2 ? 0xc0a80107 : 0x0a000001;
      uint16_t port = i % 2 ? 53 : 5000;
      ASSERT_EQ(netvm_onload_send(s, i % 3 ? a : b, ip, port, data.data(),
                                  data.size()),
                NETVM_ONLOAD_OK)
          << netvm_onload_error(s);
    }
    size_t count = 0;
    ASSERT_EQ(netvm_onload_transmitted_count(s, &count), NETVM_ONLOAD_OK)
        << netvm_onload_error(s);
    ASSERT_EQ(count, 40u);
    for (size_t i = 0; i < count; ++i) {
      const uint8_t *f = nullptr;
      size_t n = 0;
      ASSERT_EQ(netvm_onload_transmitted(s, i, &f, &n), NETVM_ONLOAD_OK);
      ASSERT_GE(n, 42u);
      // An independent check: the IP header and the UDP pseudo-header and
      // segment each sum to 0xffff.
      EXPECT_EQ(sum16(f + 14, 20), 0xffffu) << "frame " << i;
      uint32_t udpLength = uint32_t(f[38]) << 8 | f[39];
      EXPECT_EQ(udpLength + 34, n);
      EXPECT_EQ(uint32_t(f[16]) << 8 | f[17], udpLength + 20);
      uint32_t pseudo = sum16(f + 26, 8, 17 + udpLength);
      EXPECT_EQ(sum16(f + 34, udpLength, pseudo), 0xffffu) << "frame " << i;
      EXPECT_NE(f[40] | f[41], 0); // a checksum is there
      uint32_t src = uint32_t(f[26]) << 24 | f[27] << 16 | f[28] << 8 | f[29];
      EXPECT_EQ(src, 0x0a000002u);
      uint16_t srcPort = uint16_t(f[34] << 8 | f[35]);
      EXPECT_TRUE(srcPort == 7000 || srcPort == 7001);
      frames[design].emplace_back(f, f + n);
    }
    netvm_onload_stats st;
    ASSERT_EQ(netvm_onload_stats_get(s, &st), NETVM_ONLOAD_OK);
    EXPECT_EQ(st.sent, 40u);
    EXPECT_EQ(st.transmitted, 40u);
    EXPECT_EQ(st.transmit_mismatches, 0u);
    EXPECT_EQ(st.syscalls, 40u); // a send() each
    netvm_onload_close(s);
    std::sort(frames[design].begin(), frames[design].end());
  }
  EXPECT_EQ(frames["emu-nic"], frames["softnic"]);
  EXPECT_EQ(frames["softnic"], frames["onloader"]);
}

namespace {

/// A datagram of `n` bytes from 10.0.1.(k % 5):4000+k to `port`, its bytes
/// a function of k; bad checksum if asked.
onload::Datagram request(unsigned k, uint16_t port, size_t n,
                         bool bad = false) {
  onload::Datagram d;
  d.srcIp = 0x0a000100 + k % 5;
  d.srcPort = uint16_t(4000 + k);
  d.dstPort = port;
  d.payload.resize(n);
  for (size_t b = 0; b < n; ++b)
    d.payload[b] = uint8_t(k * 11 + b * 5);
  d.badChecksum = bad;
  return d;
}

void feed(netvm_onload_stack *s, const onload::Datagram &d) {
  std::vector<uint8_t> f = onload::buildFrame(d);
  ASSERT_EQ(netvm_onload_feed(s, f.data(), f.size()), NETVM_ONLOAD_OK);
}

/// recv into 2048 bytes; the datagram's payload, or nothing on WouldBlock.
int recvAll(netvm_onload_stack *s, int sock, std::vector<uint8_t> &got,
            netvm_onload_address &from) {
  got.assign(2048, 0);
  size_t length = 0;
  int status =
      netvm_onload_recv(s, sock, got.data(), got.size(), &length, &from);
  got.resize(status == NETVM_ONLOAD_OK ? length : 0);
  return status;
}

uint64_t clock(netvm_onload_stack *s) {
  uint64_t c = 0;
  EXPECT_EQ(netvm_onload_now(s, &c), NETVM_ONLOAD_OK);
  return c;
}

} // namespace

// One machine for the session's life: what the MEs count in a socket's
// control block (SRAM) and in their drop counters (scratch) accumulates
// over calls; with a fresh machine per call each figure would restart.
TEST(OnloadSocket, NpStateCarriesOverFromCallToCall) {
  for (const char *design : designs) {
    SCOPED_TRACE(design);
    std::string d = design;
    netvm_onload_stack *s = openStack(design);
    ASSERT_NE(s, nullptr);
    int a = -1, b = -1;
    ASSERT_EQ(netvm_onload_bind(s, 9000, &a), NETVM_ONLOAD_OK);
    ASSERT_EQ(netvm_onload_bind(s, 9001, &b), NETVM_ONLOAD_OK);
    unsigned k = 0;
    uint64_t last = clock(s), aGot = 0;
    for (unsigned round = 1; round <= 4; ++round) {
      // Each round: `round` datagrams for a, one for b, one bad checksum.
      std::vector<onload::Datagram> want;
      for (unsigned i = 0; i < round; ++i) {
        want.push_back(request(k++, 9000, 20 + 30 * i));
        feed(s, want.back());
      }
      feed(s, request(k++, 9001, 64));
      feed(s, request(k++, 9000, 100, true));
      for (const onload::Datagram &w : want) {
        std::vector<uint8_t> got;
        netvm_onload_address from{};
        ASSERT_EQ(recvAll(s, a, got, from), NETVM_ONLOAD_OK)
            << netvm_onload_error(s);
        EXPECT_EQ(got, w.payload);
        EXPECT_EQ(from.ip, w.srcIp);
        EXPECT_EQ(from.port, w.srcPort);
        ++aGot;
        uint64_t now = clock(s);
        EXPECT_GT(now, last); // every call takes emulated time
        last = now;
      }
      std::vector<uint8_t> got;
      netvm_onload_address from{};
      ASSERT_EQ(recvAll(s, b, got, from), NETVM_ONLOAD_OK);
      EXPECT_EQ(got.size(), 64u);
      EXPECT_EQ(recvAll(s, a, got, from), NETVM_ONLOAD_WOULD_BLOCK);
      uint64_t count = 0;
      if (d == "onloader") {
        // The MEs' own count in a's control block: every datagram so far.
        ASSERT_EQ(netvm_onload_np_count(s, a, &count), NETVM_ONLOAD_OK);
        EXPECT_EQ(count, aGot) << "round " << round;
        ASSERT_EQ(netvm_onload_np_count(s, b, &count), NETVM_ONLOAD_OK);
        EXPECT_EQ(count, round);
      } else {
        EXPECT_EQ(netvm_onload_np_count(s, a, &count), NETVM_ONLOAD_INVALID);
      }
      netvm_onload_stats st;
      ASSERT_EQ(netvm_onload_stats_get(s, &st), NETVM_ONLOAD_OK);
      // Bad checksums counted at the design's place, over all rounds.
      EXPECT_EQ(st.drop_me_checksum + st.drop_host_checksum, round);
      EXPECT_EQ(d == "emu-nic" ? st.drop_host_checksum : st.drop_me_checksum,
                round);
      EXPECT_EQ(st.fed, k);
      EXPECT_EQ(st.cycles, clock(s));
      // A socket bound mid-session leaves the others' blocks alone.
      int c = -1;
      ASSERT_EQ(netvm_onload_bind(s, 9100 + round, &c), NETVM_ONLOAD_OK);
      if (d == "onloader") {
        ASSERT_EQ(netvm_onload_np_count(s, a, &count), NETVM_ONLOAD_OK);
        EXPECT_EQ(count, aGot);
      }
    }
    netvm_onload_close(s);
  }
}

// Receive and send in flight on one machine: a datagram fed before a send
// is still delivered after it, byte for byte, and the sent frame leaves.
TEST(OnloadSocket, AFrameFedBeforeASendIsDeliveredAfterIt) {
  for (const char *design : designs) {
    SCOPED_TRACE(design);
    netvm_onload_stack *s = openStack(design);
    ASSERT_NE(s, nullptr);
    int a = -1;
    ASSERT_EQ(netvm_onload_bind(s, 9000, &a), NETVM_ONLOAD_OK);
    onload::Datagram in = request(1, 9000, 300);
    feed(s, in);
    std::vector<uint8_t> out(200);
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = uint8_t(i ^ 0x5a);
    ASSERT_EQ(netvm_onload_send(s, a, 0x0a000001, 5000, out.data(), out.size()),
              NETVM_ONLOAD_OK);
    ASSERT_EQ(netvm_onload_flush(s), NETVM_ONLOAD_OK) << netvm_onload_error(s);
    size_t count = 0;
    ASSERT_EQ(netvm_onload_transmitted_count(s, &count), NETVM_ONLOAD_OK);
    ASSERT_EQ(count, 1u);
    const uint8_t *f = nullptr;
    size_t n = 0;
    ASSERT_EQ(netvm_onload_transmitted(s, 0, &f, &n), NETVM_ONLOAD_OK);
    onload::Datagram o;
    o.srcIp = 0x0a000002;
    o.dstIp = 0x0a000001;
    o.srcPort = 9000;
    o.dstPort = 5000;
    o.payload = out;
    EXPECT_EQ(std::vector<uint8_t>(f, f + n), onload::buildFrame(o));
    std::vector<uint8_t> got;
    netvm_onload_address from{};
    ASSERT_EQ(recvAll(s, a, got, from), NETVM_ONLOAD_OK);
    EXPECT_EQ(got, in.payload);
    EXPECT_EQ(recvAll(s, a, got, from), NETVM_ONLOAD_WOULD_BLOCK);
    netvm_onload_close(s);
  }
}

// Echo round trips on one time line: request fed, recv, reply sent and
// flushed; each reply leaves after its request was fed, the clock only
// moves on, and the latency of a round trip is reported.
TEST(OnloadSocket, EchoRoundTripsRunOnOneTimeLine) {
  std::map<std::string, uint64_t> latency, hostCycles;
  for (const char *design : designs) {
    SCOPED_TRACE(design);
    netvm_onload_stack *s = openStack(design);
    ASSERT_NE(s, nullptr);
    int a = -1;
    ASSERT_EQ(netvm_onload_bind(s, 7, &a), NETVM_ONLOAD_OK);
    uint64_t lastLeft = 0;
    std::vector<uint64_t> trips;
    for (unsigned k = 0; k < 6; ++k) {
      onload::Datagram in = request(k, 7, 64);
      uint64_t fed = clock(s);
      EXPECT_GE(fed, lastLeft);
      feed(s, in);
      std::vector<uint8_t> got;
      netvm_onload_address from{};
      ASSERT_EQ(recvAll(s, a, got, from), NETVM_ONLOAD_OK)
          << netvm_onload_error(s);
      ASSERT_EQ(got, in.payload);
      ASSERT_EQ(
          netvm_onload_send(s, a, from.ip, from.port, got.data(), got.size()),
          NETVM_ONLOAD_OK);
      ASSERT_EQ(netvm_onload_flush(s), NETVM_ONLOAD_OK);
      uint64_t left = 0;
      ASSERT_EQ(netvm_onload_transmitted_at(s, k, &left), NETVM_ONLOAD_OK);
      EXPECT_GT(left, fed);
      EXPECT_GT(left, lastLeft);
      lastLeft = left;
      trips.push_back(left - fed);
      const uint8_t *f = nullptr;
      size_t n = 0;
      ASSERT_EQ(netvm_onload_transmitted(s, k, &f, &n), NETVM_ONLOAD_OK);
      onload::Datagram reply;
      reply.srcIp = 0x0a000002;
      reply.dstIp = in.srcIp;
      reply.srcPort = 7;
      reply.dstPort = in.srcPort;
      reply.payload = in.payload;
      EXPECT_EQ(std::vector<uint8_t>(f, f + n), onload::buildFrame(reply));
      // Some think time between round trips.
      ASSERT_EQ(netvm_onload_compute(s, 5000), NETVM_ONLOAD_OK);
    }
    size_t count = 0;
    EXPECT_EQ(netvm_onload_transmitted_at(s, 6, &lastLeft),
              NETVM_ONLOAD_INVALID);
    ASSERT_EQ(netvm_onload_transmitted_count(s, &count), NETVM_ONLOAD_OK);
    EXPECT_EQ(count, 6u);
    netvm_onload_stats st;
    ASSERT_EQ(netvm_onload_stats_get(s, &st), NETVM_ONLOAD_OK);
    EXPECT_EQ(st.compute_cycles, 6u * 5000);
    EXPECT_GT(st.receive_latency_cycles, 0u);
    EXPECT_GT(st.send_latency_cycles, 0u);
    // A round trip covers a receive and a send.
    uint64_t sum = 0;
    for (uint64_t t : trips)
      sum += t;
    EXPECT_GT(sum, st.receive_latency_cycles);
    latency[design] = sum / trips.size();
    hostCycles[design] = st.host_cycles;
    std::printf("%s: echo round trips", design);
    for (uint64_t t : trips)
      std::printf(" %llu", (unsigned long long)t);
    std::printf(" cycles; host %llu cycles\n",
                (unsigned long long)st.host_cycles);
    netvm_onload_close(s);
  }
  // One small datagram at a time the three are close in latency (emu-nic's
  // host does everything, but at once); the host's work is what the
  // designs move to the MEs.
  EXPECT_LT(latency["onloader"], latency["softnic"]);
  EXPECT_LT(hostCycles["onloader"], hostCycles["softnic"]);
  EXPECT_LT(hostCycles["softnic"], hostCycles["emu-nic"]);
}

// compute(): the program works while the NP goes on (and the host's own
// work preempts it). Datagrams fed before it are delivered during it, so
// the recv calls after it only cost their own charges (a system call and
// a mapping each, onloader).
TEST(OnloadSocket, ComputeOverlapsTheNpAndChargesTheClock) {
  netvm_onload_stack *s = openStack("onloader");
  ASSERT_NE(s, nullptr);
  int a = -1;
  ASSERT_EQ(netvm_onload_bind(s, 9000, &a), NETVM_ONLOAD_OK);
  for (unsigned k = 0; k < 10; ++k)
    feed(s, request(k, 9000, 500));
  uint64_t before = clock(s);
  ASSERT_EQ(netvm_onload_compute(s, 2'000'000), NETVM_ONLOAD_OK);
  uint64_t after = clock(s);
  EXPECT_GE(after, before + 2'000'000);
  // An interrupt, a wakeup and a HEAD write at most came in between.
  EXPECT_LT(after, before + 2'000'000 + 10'000);
  for (unsigned k = 0; k < 10; ++k) {
    std::vector<uint8_t> got;
    netvm_onload_address from{};
    ASSERT_EQ(recvAll(s, a, got, from), NETVM_ONLOAD_OK);
    EXPECT_EQ(got, request(k, 9000, 500).payload);
  }
  // 1000 (system call) + 100 (cached mapping) each, and a look of the host
  // (50 cycles) and a quantum (16) at most past each.
  uint64_t spent = clock(s) - after;
  EXPECT_GE(spent, 10u * 1100);
  EXPECT_LE(spent, 10u * (1100 + 66));
  netvm_onload_stats st;
  ASSERT_EQ(netvm_onload_stats_get(s, &st), NETVM_ONLOAD_OK);
  EXPECT_EQ(st.compute_cycles, 2'000'000u);
  EXPECT_EQ(st.received, 10u);
  netvm_onload_close(s);
}

// A machine that cannot finish a call fails it within the budget, and the
// stack stays failed: no call runs the broken machine again.
TEST(OnloadSocket, AStuckMachineFailsOnceAndForAll) {
  // MEs that stop at once: nothing fed is ever received.
  netvm_onload_stack *s =
      openStack("softnic", ".me 0\n.ctx_enable 1\n    ctx_arb[kill]\n");
  ASSERT_NE(s, nullptr);
  int a = -1;
  ASSERT_EQ(netvm_onload_bind(s, 9000, &a), NETVM_ONLOAD_OK);
  feed(s, request(0, 9000, 64));
  std::vector<uint8_t> got;
  netvm_onload_address from{};
  EXPECT_EQ(recvAll(s, a, got, from), NETVM_ONLOAD_FAILED);
  std::string first = netvm_onload_error(s);
  EXPECT_NE(first.find("recv did not finish in 22000000 cycles"),
            std::string::npos)
      << first;
  EXPECT_GE(clock(s), 22'000'000u);
  EXPECT_EQ(netvm_onload_flush(s), NETVM_ONLOAD_FAILED);
  EXPECT_EQ(std::string(netvm_onload_error(s)),
            "the stack failed earlier: " + first);
  netvm_onload_close(s);
}
