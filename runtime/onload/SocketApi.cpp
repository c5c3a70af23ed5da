//===- SocketApi.cpp - The C API of netvm/onload/socket.h ----------------===//
//
// Opaque handles over onload::Session; every error becomes a status and a
// message kept in the stack.
//
//===----------------------------------------------------------------------===//

#include "netvm/onload/Session.h"
#include "netvm/onload/socket.h"

#include <cstring>

using namespace netvm;
using namespace netvm::onload;

struct netvm_onload_stack {
  std::unique_ptr<Session> session;
  std::string error;
  int fail(int status, std::string message) {
    error = std::move(message);
    return status;
  }
};

static void copyMessage(const std::string &message, char *out, size_t size) {
  if (!out || !size)
    return;
  size_t n = std::min(size - 1, message.size());
  std::memcpy(out, message.data(), n);
  out[n] = 0;
}

void netvm_onload_options_init(netvm_onload_options *options) {
  if (!options)
    return;
  OnloadConfig defaults;
  options->design = "onloader";
  options->pipelined_dma = defaults.features.pipelinedDma;
  options->adaptive_updates = defaults.features.adaptiveUpdates;
  options->combining = defaults.features.combining;
  options->notify = "adaptive";
  options->mapping_cache = defaults.cacheMappings;
  options->dma_read_mbps =
      defaults.machine.clockMHz / defaults.dma.readCyclesPerByte;
  options->rx_mes = defaults.rxMEs;
  options->tx_mes = defaults.txMEs;
  options->local_ip = 0x0a000002;
}

/// The configuration the options describe, or false with `error` set.
static bool toConfig(const netvm_onload_options *o, OnloadConfig &config,
                     std::string &error) {
  if (!o) {
    error = "no options";
    return false;
  }
  std::string design = o->design ? o->design : "";
  if (!parseDesign(design, config.design) || config.design == Design::Raw) {
    error = "unknown design '" + design + "' (emu-nic, softnic or onloader)";
    return false;
  }
  std::string notify = o->notify ? o->notify : "";
  if (notify == "polling")
    config.features.notify = hostif::Notify::Polling;
  else if (notify == "interrupts")
    config.features.notify = hostif::Notify::Interrupts;
  else if (notify == "adaptive")
    config.features.notify = hostif::Notify::Adaptive;
  else {
    error = "unknown notification '" + notify +
            "' (polling, interrupts or adaptive)";
    return false;
  }
  if (o->rx_mes < 1 || o->tx_mes < 1 || o->rx_mes + o->tx_mes > 8) {
    error = "receiving and transmitting MEs: at least 1 each, 8 together";
    return false;
  }
  if (!(o->dma_read_mbps >= 1 && o->dma_read_mbps <= 10000)) {
    error = "the DMA read bandwidth must be 1 to 10000 MB/s";
    return false;
  }
  config.features.pipelinedDma = o->pipelined_dma != 0;
  config.features.adaptiveUpdates = o->adaptive_updates != 0;
  config.features.combining = o->combining != 0;
  config.cacheMappings = o->mapping_cache != 0;
  config.dma.readCyclesPerByte = config.machine.clockMHz / o->dma_read_mbps;
  config.rxMEs = o->rx_mes;
  config.txMEs = o->tx_mes;
  return true;
}

int netvm_onload_program(const netvm_onload_options *options, char *buffer,
                         size_t capacity, size_t *length) {
  OnloadConfig config;
  std::string error;
  if (!toConfig(options, config, error))
    return NETVM_ONLOAD_INVALID;
  std::string text = meProgram(config);
  if (length)
    *length = text.size();
  copyMessage(text, buffer, capacity);
  return NETVM_ONLOAD_OK;
}

int netvm_onload_open(const netvm_onload_options *options, const void *image,
                      size_t size, netvm_onload_stack **stack, char *error,
                      size_t errorSize) {
  if (!stack) {
    copyMessage("no place for the stack", error, errorSize);
    return NETVM_ONLOAD_INVALID;
  }
  *stack = nullptr;
  OnloadConfig config;
  std::string message;
  if (!toConfig(options, config, message)) {
    copyMessage(message, error, errorSize);
    return NETVM_ONLOAD_INVALID;
  }
  me::Image decoded;
  if (!image || !me::readImage(static_cast<const uint8_t *>(image), size,
                               decoded, message)) {
    copyMessage(image ? "the ME image: " + message : "no ME image", error,
                errorSize);
    return NETVM_ONLOAD_INVALID;
  }
  std::unique_ptr<Session> session = Session::open(config, decoded, message);
  if (!session) {
    copyMessage(message, error, errorSize);
    return NETVM_ONLOAD_INVALID;
  }
  session->setLocalAddress(options->local_ip);
  *stack = new netvm_onload_stack{std::move(session), {}};
  return NETVM_ONLOAD_OK;
}

void netvm_onload_close(netvm_onload_stack *stack) { delete stack; }

const char *netvm_onload_error(const netvm_onload_stack *stack) {
  return stack ? stack->error.c_str() : "no stack";
}

int netvm_onload_bind(netvm_onload_stack *stack, unsigned port, int *socket) {
  if (!stack)
    return NETVM_ONLOAD_INVALID;
  if (!socket)
    return stack->fail(NETVM_ONLOAD_INVALID, "no place for the socket");
  std::string error;
  switch (stack->session->bind(port, *socket, error)) {
  case Session::Bind::Ok:
    return NETVM_ONLOAD_OK;
  case Session::Bind::OutOfRange:
    return stack->fail(NETVM_ONLOAD_INVALID, error);
  case Session::Bind::InUse:
    return stack->fail(NETVM_ONLOAD_IN_USE, error);
  case Session::Bind::Full:
    break;
  }
  return stack->fail(NETVM_ONLOAD_NO_SPACE, error);
}

int netvm_onload_feed(netvm_onload_stack *stack, const void *frame,
                      size_t length) {
  if (!stack)
    return NETVM_ONLOAD_INVALID;
  if (!frame && length)
    return stack->fail(NETVM_ONLOAD_INVALID, "a null frame");
  stack->session->feed(static_cast<const uint8_t *>(frame), length);
  return NETVM_ONLOAD_OK;
}

int netvm_onload_feed_pcap(netvm_onload_stack *stack, const char *path) {
  if (!stack)
    return NETVM_ONLOAD_INVALID;
  if (!path)
    return stack->fail(NETVM_ONLOAD_INVALID, "no file name");
  std::string error;
  if (!stack->session->feedPcap(path, error))
    return stack->fail(NETVM_ONLOAD_IO, error);
  return NETVM_ONLOAD_OK;
}

int netvm_onload_recv(netvm_onload_stack *stack, int socket, void *buffer,
                      size_t capacity, size_t *length,
                      netvm_onload_address *from) {
  if (!stack)
    return NETVM_ONLOAD_INVALID;
  if (!length)
    return stack->fail(NETVM_ONLOAD_INVALID, "no place for the length");
  std::string error;
  uint32_t ip = 0;
  uint16_t port = 0;
  *length = 0;
  switch (stack->session->recv(socket, static_cast<uint8_t *>(buffer), capacity,
                               *length, ip, port, error)) {
  case Session::Recv::Ok:
    if (from) {
      from->ip = ip;
      from->port = port;
    }
    return NETVM_ONLOAD_OK;
  case Session::Recv::WouldBlock:
    return NETVM_ONLOAD_WOULD_BLOCK;
  case Session::Recv::Error:
    break;
  }
  bool bad = error.rfind("no socket", 0) == 0 || error.rfind("a null", 0) == 0;
  return stack->fail(bad ? NETVM_ONLOAD_INVALID : NETVM_ONLOAD_FAILED, error);
}

int netvm_onload_send(netvm_onload_stack *stack, int socket, uint32_t ip,
                      uint16_t port, const void *data, size_t length) {
  if (!stack)
    return NETVM_ONLOAD_INVALID;
  std::string error;
  if (!stack->session->send(socket, ip, port,
                            static_cast<const uint8_t *>(data), length, error))
    return stack->fail(NETVM_ONLOAD_INVALID, error);
  return NETVM_ONLOAD_OK;
}

int netvm_onload_flush(netvm_onload_stack *stack) {
  if (!stack)
    return NETVM_ONLOAD_INVALID;
  std::string error;
  if (!stack->session->flush(error))
    return stack->fail(NETVM_ONLOAD_FAILED, error);
  return NETVM_ONLOAD_OK;
}

int netvm_onload_compute(netvm_onload_stack *stack, uint64_t cycles) {
  if (!stack)
    return NETVM_ONLOAD_INVALID;
  std::string error;
  if (!stack->session->compute(cycles, error))
    return stack->fail(NETVM_ONLOAD_FAILED, error);
  return NETVM_ONLOAD_OK;
}

int netvm_onload_now(const netvm_onload_stack *stack, uint64_t *cycle) {
  if (!stack || !cycle)
    return NETVM_ONLOAD_INVALID;
  *cycle = stack->session->now();
  return NETVM_ONLOAD_OK;
}

int netvm_onload_transmitted_at(const netvm_onload_stack *stack, size_t index,
                                uint64_t *cycle) {
  if (!stack || !cycle)
    return NETVM_ONLOAD_INVALID;
  const std::vector<uint64_t> &at = stack->session->transmittedAt();
  if (index >= at.size())
    return NETVM_ONLOAD_INVALID;
  *cycle = at[index];
  return NETVM_ONLOAD_OK;
}

int netvm_onload_np_count(const netvm_onload_stack *stack, int socket,
                          uint64_t *count) {
  uint32_t n = 0;
  if (!stack || !count || !stack->session->controlBlockCount(socket, n))
    return NETVM_ONLOAD_INVALID;
  *count = n;
  return NETVM_ONLOAD_OK;
}

int netvm_onload_transmitted_count(netvm_onload_stack *stack, size_t *count) {
  if (!stack)
    return NETVM_ONLOAD_INVALID;
  if (!count)
    return stack->fail(NETVM_ONLOAD_INVALID, "no place for the count");
  int status = netvm_onload_flush(stack);
  *count = stack->session->transmitted().size();
  return status;
}

int netvm_onload_transmitted(const netvm_onload_stack *stack, size_t index,
                             const uint8_t **bytes, size_t *length) {
  if (!stack || !bytes || !length)
    return NETVM_ONLOAD_INVALID;
  const auto &frames = stack->session->transmitted();
  if (index >= frames.size())
    return NETVM_ONLOAD_INVALID;
  *bytes = frames[index].data();
  *length = frames[index].size();
  return NETVM_ONLOAD_OK;
}

int netvm_onload_stats_get(netvm_onload_stack *stack, netvm_onload_stats *out) {
  if (!stack)
    return NETVM_ONLOAD_INVALID;
  if (!out)
    return stack->fail(NETVM_ONLOAD_INVALID, "no place for the statistics");
  int status = netvm_onload_flush(stack);
  SessionStats s = stack->session->stats();
  *out = netvm_onload_stats{};
  out->host_cycles = s.host.busyCycles;
  out->interrupts = s.host.interrupts;
  out->syscalls = s.host.syscalls;
  out->wakeups = s.host.wakeups;
  out->polls = s.host.polls;
  out->copied_bytes = s.host.copiedBytes;
  out->checksummed_bytes = s.host.checksummedBytes;
  out->pio_read_bytes = s.host.pioReadBytes;
  out->protocol_runs = s.host.protocolRuns;
  out->mappings = s.host.mappings;
  out->mapping_hits = s.host.mappingHits;
  out->fed = s.fed;
  out->received = s.received;
  out->received_bytes = s.receivedBytes;
  out->truncated = s.truncated;
  out->would_block = s.wouldBlock;
  out->queued = s.queued;
  out->sent = s.sent;
  out->sent_bytes = s.sentBytes;
  out->transmitted = s.transmitted;
  out->transmit_mismatches = s.transmitMismatches;
  out->drop_fabric = s.drops.fabric;
  out->drop_me_not_udp = s.drops.meNotUdp;
  out->drop_me_fragment = s.drops.meFragment;
  out->drop_me_checksum = s.drops.meChecksum;
  out->drop_me_no_socket = s.drops.meNoSocket;
  out->drop_me_malformed = s.drops.meMalformed;
  out->drop_host_not_udp = s.drops.hostNotUdp;
  out->drop_host_fragment = s.drops.hostFragment;
  out->drop_host_checksum = s.drops.hostChecksum;
  out->drop_host_no_socket = s.drops.hostNoSocket;
  out->drop_host_malformed = s.drops.hostMalformed;
  out->dma_transfers = s.dmaTransfers;
  out->dma_bytes = s.dmaBytes;
  out->tail_updates = s.tailUpdates;
  out->head_updates = s.headUpdates;
  out->runs = s.runs;
  out->cycles = s.cycles;
  out->clock_mhz = s.clockMHz;
  out->receive_latency_cycles = s.receiveLatencyCycles;
  out->send_latency_cycles = s.sendLatencyCycles;
  out->compute_cycles = s.computeCycles;
  return status;
}
