//===- Onload.cpp - The onload layer's socket API (nanobind) -------------===//
//
// What netvm/onload.py builds on (docs/onload.md, "Socket API";
// docs/python.md): a stack of one design over the C API of
// netvm/onload/socket.h, its ME program assembled here. Calls return the
// C API's status with their results; onload.py turns statuses into
// Python exceptions.
//
//===----------------------------------------------------------------------===//

#include "netvm/Target/ME/Assembler.h"
#include "netvm/onload/socket.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

namespace nb = nanobind;
using namespace nb::literals;

namespace {

struct PyStack {
  netvm_onload_stack *stack = nullptr;
  PyStack() = default;
  PyStack(const PyStack &) = delete;
  PyStack &operator=(const PyStack &) = delete;
  ~PyStack() { netvm_onload_close(stack); }
  std::string error() const { return netvm_onload_error(stack); }
};

nb::bytes toBytes(const uint8_t *data, size_t size) {
  return nb::bytes(reinterpret_cast<const char *>(data), size);
}

/// Opens a stack: the design's program, assembled, then the C API's open.
/// Bad options raise ValueError.
PyStack *open(const std::string &design, bool pipelinedDma,
              bool adaptiveUpdates, bool combining, const std::string &notify,
              bool mappingCache, double dmaReadMBps, unsigned rxMEs,
              unsigned txMEs, uint32_t localIp) {
  netvm_onload_options o;
  netvm_onload_options_init(&o);
  o.design = design.c_str();
  o.pipelined_dma = pipelinedDma;
  o.adaptive_updates = adaptiveUpdates;
  o.combining = combining;
  o.notify = notify.c_str();
  o.mapping_cache = mappingCache;
  if (dmaReadMBps > 0)
    o.dma_read_mbps = dmaReadMBps;
  o.rx_mes = rxMEs;
  o.tx_mes = txMEs;
  o.local_ip = localIp;
  char error[512] = "";
  size_t length = 0;
  if (netvm_onload_program(&o, nullptr, 0, &length) != NETVM_ONLOAD_OK) {
    // The options are wrong: let open say how.
    netvm_onload_stack *none = nullptr;
    netvm_onload_open(&o, nullptr, 0, &none, error, sizeof(error));
    throw std::invalid_argument(error);
  }
  std::string text(length + 1, '\0');
  netvm_onload_program(&o, text.data(), text.size(), &length);
  text.resize(length);
  netvm::me::AssemblerOptions options;
  netvm::me::Image image;
  std::vector<std::string> errors;
  if (!netvm::me::assemble(text, "<onload>", options, image, errors))
    throw std::runtime_error("the onload ME program does not assemble: " +
                             (errors.empty() ? std::string() : errors[0]));
  std::vector<uint8_t> bytes = netvm::me::writeImage(image);
  auto stack = std::make_unique<PyStack>();
  if (netvm_onload_open(&o, bytes.data(), bytes.size(), &stack->stack, error,
                        sizeof(error)) != NETVM_ONLOAD_OK)
    throw std::invalid_argument(error);
  return stack.release();
}

nb::dict toDict(const netvm_onload_stats &s) {
  nb::dict host;
  host["busy_cycles"] = s.host_cycles;
  host["interrupts"] = s.interrupts;
  host["syscalls"] = s.syscalls;
  host["wakeups"] = s.wakeups;
  host["polls"] = s.polls;
  host["copied_bytes"] = s.copied_bytes;
  host["checksummed_bytes"] = s.checksummed_bytes;
  host["pio_read_bytes"] = s.pio_read_bytes;
  host["protocol_runs"] = s.protocol_runs;
  host["mappings"] = s.mappings;
  host["mapping_hits"] = s.mapping_hits;
  nb::dict drops;
  drops["fabric"] = s.drop_fabric;
  drops["me_not_udp"] = s.drop_me_not_udp;
  drops["me_fragment"] = s.drop_me_fragment;
  drops["me_checksum"] = s.drop_me_checksum;
  drops["me_no_socket"] = s.drop_me_no_socket;
  drops["me_malformed"] = s.drop_me_malformed;
  drops["host_not_udp"] = s.drop_host_not_udp;
  drops["host_fragment"] = s.drop_host_fragment;
  drops["host_checksum"] = s.drop_host_checksum;
  drops["host_no_socket"] = s.drop_host_no_socket;
  drops["host_malformed"] = s.drop_host_malformed;
  nb::dict d;
  d["host"] = host;
  d["drops"] = drops;
  d["fed"] = s.fed;
  d["received"] = s.received;
  d["received_bytes"] = s.received_bytes;
  d["truncated"] = s.truncated;
  d["would_block"] = s.would_block;
  d["queued"] = s.queued;
  d["sent"] = s.sent;
  d["sent_bytes"] = s.sent_bytes;
  d["transmitted"] = s.transmitted;
  d["transmit_mismatches"] = s.transmit_mismatches;
  d["dma_transfers"] = s.dma_transfers;
  d["dma_bytes"] = s.dma_bytes;
  d["tail_updates"] = s.tail_updates;
  d["head_updates"] = s.head_updates;
  d["runs"] = s.runs;
  d["cycles"] = s.cycles;
  d["clock_mhz"] = s.clock_mhz;
  d["receive_latency_cycles"] = s.receive_latency_cycles;
  d["send_latency_cycles"] = s.send_latency_cycles;
  d["compute_cycles"] = s.compute_cycles;
  return d;
}

} // namespace

namespace netvm::python {

void bindOnload(nb::module_ &m) {
  nb::class_<PyStack>(m, "OnloadStack",
                      "A UDP stack of one onload design on the emulator "
                      "(netvm.onload.Stack wraps it).")
      .def("error", &PyStack::error, "The message of the last failed call.")
      .def(
          "bind",
          [](PyStack &s, unsigned port) {
            int socket = -1;
            int status = netvm_onload_bind(s.stack, port, &socket);
            return std::make_tuple(status, socket);
          },
          "port"_a, "(status, socket)")
      .def(
          "feed",
          [](PyStack &s, nb::bytes frame) {
            return netvm_onload_feed(s.stack, frame.data(), frame.size());
          },
          "frame"_a, "status")
      .def(
          "feed_pcap",
          [](PyStack &s, const std::string &path) {
            return netvm_onload_feed_pcap(s.stack, path.c_str());
          },
          "path"_a, "status")
      .def(
          "recv",
          [](PyStack &s, int socket, size_t capacity) {
            std::vector<uint8_t> buffer(capacity);
            size_t length = 0;
            netvm_onload_address from{};
            int status = netvm_onload_recv(s.stack, socket, buffer.data(),
                                           capacity, &length, &from);
            size_t copied = std::min(capacity, length);
            return std::make_tuple(status, toBytes(buffer.data(), copied),
                                   length, from.ip, from.port);
          },
          "socket"_a, "capacity"_a, "(status, data, full length, ip, port)")
      .def(
          "send",
          [](PyStack &s, int socket, uint32_t ip, uint16_t port,
             nb::bytes data) {
            return netvm_onload_send(s.stack, socket, ip, port, data.data(),
                                     data.size());
          },
          "socket"_a, "ip"_a, "port"_a, "data"_a, "status")
      .def(
          "flush", [](PyStack &s) { return netvm_onload_flush(s.stack); },
          "status")
      .def(
          "transmitted",
          [](PyStack &s) {
            size_t count = 0;
            int status = netvm_onload_transmitted_count(s.stack, &count);
            nb::list frames;
            for (size_t i = 0; i < count; ++i) {
              const uint8_t *bytes = nullptr;
              size_t length = 0;
              netvm_onload_transmitted(s.stack, i, &bytes, &length);
              frames.append(toBytes(bytes, length));
            }
            return std::make_tuple(status, frames);
          },
          "(status, frames)")
      .def(
          "compute",
          [](PyStack &s, uint64_t cycles) {
            return netvm_onload_compute(s.stack, cycles);
          },
          "cycles"_a, "status")
      .def(
          "now",
          [](PyStack &s) {
            uint64_t cycle = 0;
            netvm_onload_now(s.stack, &cycle);
            return cycle;
          },
          "The emulated clock (cycles).")
      .def(
          "transmitted_at",
          [](PyStack &s) {
            std::vector<uint64_t> at;
            uint64_t cycle = 0;
            for (size_t i = 0; netvm_onload_transmitted_at(
                                   s.stack, i, &cycle) == NETVM_ONLOAD_OK;
                 ++i)
              at.push_back(cycle);
            return at;
          },
          "The cycle each transmitted frame left, so far.")
      .def(
          "np_count",
          [](PyStack &s, int socket) {
            uint64_t count = 0;
            int status = netvm_onload_np_count(s.stack, socket, &count);
            return std::make_tuple(status, count);
          },
          "socket"_a, "(status, the MEs' datagram count)")
      .def(
          "stats",
          [](PyStack &s) {
            netvm_onload_stats stats;
            int status = netvm_onload_stats_get(s.stack, &stats);
            return std::make_tuple(status, toDict(stats));
          },
          "(status, statistics)");
  m.def("onload_open", &open, "design"_a, "pipelined_dma"_a,
        "adaptive_updates"_a, "combining"_a, "notify"_a, "mapping_cache"_a,
        "dma_read_mbps"_a, "rx_mes"_a, "tx_mes"_a, "local_ip"_a,
        nb::rv_policy::take_ownership,
        "Opens a stack (ValueError for bad options).");
}

} // namespace netvm::python
