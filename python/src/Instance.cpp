//===- Instance.cpp - Running compiled applications from Python ----------===//
//
// The runtime reports outputs and exceptions through callbacks; the mode
// says where they go: into the record of the current packet (run), into
// the caller's per-packet arrays (runBatch), or nowhere (runCounted, which
// also removes the output callback so that generated code returns verdicts
// and counts in registers, as netvm-run does).
//
//===----------------------------------------------------------------------===//

#include "Instance.h"

#include <cstring>
#include <stdexcept>

using namespace netvm::python;

Instance::Instance(const netvm_app_desc *app, uint64_t watchdog) : desc(app) {
  char error[512] = {0};
  vm = netvm_instance_create(app, error, sizeof error);
  if (!vm)
    throw std::runtime_error(std::string("cannot instantiate the "
                                         "application: ") +
                             error);
  netvm_instance_set_watchdog(vm, watchdog);
  netvm_instance_set_exception_hook(vm, &Instance::onException, this);
  setMode(Mode::Record);
  netvm_instance_init(vm);
  init = std::move(current);
  current = PacketRecord();
}

Instance::~Instance() { netvm_instance_destroy(vm); }

void Instance::setMode(Mode m) {
  if (m == mode)
    return;
  // Listening to outputs costs generated code a call per packet: only
  // when someone wants them.
  if (m == Mode::Count)
    netvm_instance_set_output(vm, nullptr, nullptr);
  else if (mode == Mode::Count)
    netvm_instance_set_output(vm, &Instance::onOutput, this);
  mode = m;
}

void Instance::onOutput(void *user, uint32_t sink, const netvm_exbuf *xb) {
  auto *self = static_cast<Instance *>(user);
  if (self->mode == Mode::Batch) {
    // The packet an output came from: its arrival number in the batch.
    uint64_t i = xb->sequence - self->batchStart;
    if (i >= self->batchCount)
      return;
    if (self->batch.sink[i] < 0)
      self->batch.sink[i] = static_cast<int32_t>(sink);
    ++self->batch.outputs[i];
    return;
  }
  if (self->mode != Mode::Record)
    return;
  OutputRecord out;
  out.sink = sink;
  out.bytes.assign(xb->packet, xb->packet + xb->length);
  if (xb->info)
    out.info.assign(xb->info, xb->info + xb->info_length);
  out.seconds = xb->seconds;
  out.microseconds = xb->microseconds;
  self->current.outputs.push_back(std::move(out));
}

void Instance::onException(void *user, uint32_t kind,
                           const netvm_site *site) {
  auto *self = static_cast<Instance *>(user);
  if (self->mode == Mode::Batch) {
    uint64_t i =
        netvm_instance_exception_sequence(self->vm) - self->batchStart;
    if (i >= self->batchCount)
      return;
    if (self->batch.exception[i] < 0)
      self->batch.exception[i] = static_cast<int32_t>(kind);
    return;
  }
  if (self->mode == Mode::Record)
    self->current.exceptions.push_back({kind, site});
}

PacketRecord Instance::run(uint32_t source, const uint8_t *data,
                           uint32_t length, uint32_t wireLength,
                           uint32_t seconds, uint32_t microseconds) {
  setMode(Mode::Record);
  scratch.assign(data, data + length);
  netvm_packet packet{};
  packet.data = scratch.data();
  packet.length = length;
  packet.seconds = seconds;
  packet.microseconds = microseconds;
  packet.wire_length = wireLength;
  netvm_counters before, after;
  netvm_instance_counters(vm, &before);
  netvm_instance_push_batch(vm, source, &packet, 1);
  netvm_instance_counters(vm, &after);
  current.dropped = after.dropped - before.dropped;
  current.unconnected = after.unconnected - before.unconnected;
  PacketRecord result = std::move(current);
  current = PacketRecord();
  return result;
}

void Instance::runBatch(uint32_t source, netvm_packet *packets, size_t count,
                        BatchArrays out) {
  setMode(Mode::Batch);
  batch = out;
  for (size_t i = 0; i < count; ++i) {
    out.sink[i] = -1;
    out.outputs[i] = 0;
    out.exception[i] = -1;
  }
  // One call for the whole batch: the callbacks tell the packets apart by
  // their arrival numbers.
  batchStart = netvm_instance_next_sequence(vm);
  batchCount = count;
  netvm_instance_push_batch(vm, source, packets, count);
  batch = BatchArrays{};
  batchCount = 0;
}

void Instance::runCounted(uint32_t source, netvm_packet *packets,
                          size_t count) {
  setMode(Mode::Count);
  netvm_instance_push_batch(vm, source, packets, count);
}

uint8_t *Instance::data(uint32_t pe, uint32_t &size) {
  return netvm_instance_data(vm, pe, &size);
}

uint8_t *Instance::shared(uint32_t &size) {
  return netvm_instance_shared(vm, &size);
}

netvm_counters Instance::counters() const {
  netvm_counters c;
  netvm_instance_counters(vm, &c);
  return c;
}

netvm_pe_counters Instance::peCounters(uint32_t pe) const {
  netvm_pe_counters c;
  netvm_instance_pe_counters(vm, pe, &c);
  return c;
}

void Instance::sinkCounters(uint32_t sink, uint64_t &packets,
                            uint64_t &bytes) const {
  netvm_instance_sink_counters(vm, sink, &packets, &bytes);
}

Instance::Busy::Busy(Instance &instance) : instance(instance) {
  if (instance.busy.exchange(true))
    throw std::runtime_error("this Instance is running packets on another "
                             "thread; use one Instance per thread");
}

Instance::Busy::~Busy() { instance.busy.store(false); }
