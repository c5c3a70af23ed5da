//===- NativeEngine.cpp - Native code as an engine
//--------------------------===//
//
// Native code (a JIT-compiled or linked netvm_app_desc) runs on one runner
// of the C runtime (runtime.h): one thread, replicas on N threads, or a
// pipeline of NetPE stages. Batches go through the runner; with a result
// callback its events (outputs, exceptions, end of packet, in arrival
// order whatever the threads) become one PacketResult per packet, without
// one only the runtime's counters move. Single packets (push, pull) go
// straight to the first replica's instance with its output and exception
// hooks set for the call, except in a pipeline, whose NetPEs live on
// different threads: there a push is a batch of one.
//
//===----------------------------------------------------------------------===//

#include "netvm/Runtime/Engine.h"
#include "netvm/runtime.h"

#include <cstring>

using namespace netvm;
using namespace netvm::rt;

namespace {
class NativeEngine final : public Engine {
public:
  NativeEngine(const netvm_app_desc *app, netvm_runner *runner, bool pipeline)
      : runner(runner), pipeline(pipeline) {
    for (uint32_t i = 0; i < app->num_sources; ++i)
      sources.push_back(app->source_names[i]);
    for (uint32_t i = 0; i < app->num_sinks; ++i)
      sinks.push_back(app->sink_names[i]);
    for (uint32_t i = 0; i < app->num_pes; ++i)
      pes.push_back(app->pes[i].name);
  }
  ~NativeEngine() override { netvm_runner_destroy(runner); }

  const char *kind() const override { return "native"; }
  const netvm_runner *nativeRunner() const override { return runner; }
  unsigned threads() const override { return netvm_runner_threads(runner); }
  std::string note() const override { return netvm_runner_note(runner); }

  PacketResult initialize() override {
    PacketResult result;
    Collector collector{*this, result, ResultDetail::Full, nullptr, 0};
    netvm_runner_set_events(runner, &Collector::onEvent, &collector);
    netvm_runner_init(runner);
    netvm_runner_set_events(runner, nullptr, nullptr);
    return result;
  }

  PacketResult push(unsigned source, const TracePacket &packet) override {
    if (pipeline) {
      PacketBatch one;
      one.add(packet);
      PacketResult result;
      auto keep = [&](size_t, const PacketResult &r) { result = r; };
      ResultFn fn = keep;
      run(source, {one.packets(), one.size()}, &fn, ResultDetail::Full);
      return result;
    }
    netvm_packet p = copyOf(packet);
    return withHooks([&](netvm_instance *vm) {
      netvm_instance_push_batch(vm, source, &p, 1);
    });
  }

  std::optional<PacketResult>
  pushWithInfo(unsigned source, const TracePacket &packet,
               llvm::ArrayRef<uint8_t> info) override {
    if (pipeline)
      return std::nullopt;
    netvm_packet p = copyOf(packet);
    return withHooks([&](netvm_instance *vm) {
      netvm_instance_push_info(vm, source, &p, info.data(),
                               static_cast<uint32_t>(info.size()));
    });
  }

  /// The packet in `scratch`: the runtime may change it in place.
  netvm_packet copyOf(const TracePacket &packet) {
    scratch.assign(packet.bytes.begin(), packet.bytes.end());
    netvm_packet p{};
    p.data = scratch.data();
    p.length = static_cast<uint32_t>(scratch.size());
    p.seconds = packet.seconds;
    p.microseconds = packet.microseconds;
    p.wire_length = packet.wireLength;
    return p;
  }

  PacketResult pull(unsigned sink) override {
    return withHooks([&](netvm_instance *vm) {
      netvm_instance_set_source(vm, &NativeEngine::onPull, this);
      netvm_instance_pull(vm, sink);
      netvm_instance_set_source(vm, nullptr, nullptr);
    });
  }

  void setSourcePuller(
      std::function<std::optional<TracePacket>(unsigned)> fn) override {
    puller = std::move(fn);
  }

  void run(unsigned source, llvm::MutableArrayRef<netvm_packet> packets,
           const ResultFn *onResult, ResultDetail detail) override {
    if (packets.empty())
      return;
    uint64_t base = sequence;
    sequence += packets.size();
    if (!onResult) {
      netvm_runner_run(runner, source, packets.data(), packets.size());
      return;
    }
    PacketResult current;
    Collector collector{*this, current, detail, onResult, base};
    netvm_runner_set_events(runner, &Collector::onEvent, &collector);
    netvm_runner_run(runner, source, packets.data(), packets.size());
    netvm_runner_set_events(runner, nullptr, nullptr);
  }

  void runOutputs(unsigned source, llvm::MutableArrayRef<netvm_packet> packets,
                  const OutputFn &onOutput) override {
    if (packets.empty())
      return;
    sequence += packets.size();
    netvm_runner_set_output_events(runner, &NativeEngine::onOutputEvent,
                                   const_cast<OutputFn *>(&onOutput));
    netvm_runner_run(runner, source, packets.data(), packets.size());
    netvm_runner_set_events(runner, nullptr, nullptr);
  }

  llvm::ArrayRef<std::string> sourceNames() const override { return sources; }
  llvm::ArrayRef<std::string> sinkNames() const override { return sinks; }
  llvm::ArrayRef<std::string> peNames() const override { return pes; }

  llvm::MutableArrayRef<uint8_t> dataMemory(unsigned pe) override {
    uint32_t size = 0;
    uint8_t *data = netvm_instance_data(first(), pe, &size);
    return {data, size};
  }
  llvm::MutableArrayRef<uint8_t> sharedMemory() override {
    uint32_t size = 0;
    uint8_t *data = netvm_instance_shared(first(), &size);
    return {data, size};
  }
  netvm_copro *coprocessor(unsigned pe, llvm::StringRef name) override {
    return netvm_instance_coprocessor(first(), pe, name.str().c_str());
  }

  Counters counters() const override {
    netvm_counters c;
    netvm_runner_counters(runner, &c);
    Counters out;
    out.packets = c.packets;
    out.dropped = c.dropped;
    out.unconnected = c.unconnected;
    std::memcpy(out.exceptions, c.exceptions, sizeof out.exceptions);
    return out;
  }
  PECounters peCounters(unsigned pe) const override {
    netvm_pe_counters c;
    netvm_runner_pe_counters(runner, pe, &c);
    return {c.runs, c.sent, c.dropped, c.exceptions};
  }
  SinkCounters sinkCounters(unsigned sink) const override {
    SinkCounters c;
    netvm_runner_sink_counters(runner, sink, &c.packets, &c.bytes);
    return c;
  }

private:
  netvm_instance *first() { return netvm_runner_instance(runner, 0); }

  static Output output(uint32_t sink, const netvm_exbuf *xb,
                       ResultDetail detail) {
    Output out;
    out.sink = sink;
    out.length = xb->length;
    out.wireLength = xb->wire_length;
    if (detail == ResultDetail::Full) {
      out.bytes.assign(xb->packet, xb->packet + xb->length);
      if (xb->info)
        out.info.assign(xb->info, xb->info + xb->info_length);
    }
    out.seconds = xb->seconds;
    out.microseconds = xb->microseconds;
    return out;
  }
  ExceptionReport exception(uint32_t kind, const netvm_site *site) const {
    ExceptionReport report;
    report.kind = kind;
    if (site) {
      report.pe = site->pe < pes.size() ? static_cast<int>(site->pe) : -1;
      report.handler = site->handler;
      report.location = site->location ? site->location : "";
    }
    return report;
  }

  /// Runner events into one result per packet.
  struct Collector {
    NativeEngine &engine;
    PacketResult &current;
    ResultDetail detail;
    const ResultFn *deliver;
    uint64_t base;

    static void onEvent(void *user, const netvm_event *ev) {
      auto *self = static_cast<Collector *>(user);
      PacketResult &r = self->current;
      switch (ev->type) {
      case NETVM_EVENT_OUTPUT:
        r.outputs.push_back(output(ev->index, ev->xb, self->detail));
        break;
      case NETVM_EVENT_EXCEPTION:
        r.exceptions.push_back(self->engine.exception(ev->index, ev->site));
        break;
      default:
        if (ev->sequence == NETVM_SEQUENCE_INIT)
          break;
        r.drops = ev->drops;
        r.unconnected = ev->unconnected;
        if (self->deliver)
          (*self->deliver)(ev->sequence - self->base, r);
        r.clear();
        break;
      }
    }
  };

  /// Run `fn` on the first replica with the output and exception hooks
  /// recording into one result (only for the call: listening costs
  /// generated code a call per packet).
  template <typename Fn> PacketResult withHooks(Fn fn) {
    netvm_instance *vm = first();
    PacketResult result;
    current = &result;
    netvm_counters before, after;
    netvm_instance_counters(vm, &before);
    netvm_instance_set_output(vm, &NativeEngine::onOutput, this);
    netvm_instance_set_exception_hook(vm, &NativeEngine::onException, this);
    fn(vm);
    netvm_instance_set_output(vm, nullptr, nullptr);
    netvm_instance_set_exception_hook(vm, nullptr, nullptr);
    netvm_instance_counters(vm, &after);
    result.drops = after.dropped - before.dropped;
    result.unconnected = after.unconnected - before.unconnected;
    current = nullptr;
    return result;
  }
  static void onOutput(void *user, uint32_t sink, const netvm_exbuf *xb) {
    auto *self = static_cast<NativeEngine *>(user);
    self->current->outputs.push_back(output(sink, xb, ResultDetail::Full));
  }
  static void onException(void *user, uint32_t kind, const netvm_site *site) {
    auto *self = static_cast<NativeEngine *>(user);
    self->current->exceptions.push_back(self->exception(kind, site));
  }
  static void onOutputEvent(void *user, const netvm_event *ev) {
    if (ev->type != NETVM_EVENT_OUTPUT)
      return;
    const netvm_exbuf *xb = ev->xb;
    PacketView packet;
    packet.data = xb->packet;
    packet.length = xb->length;
    packet.wireLength = xb->wire_length;
    packet.seconds = xb->seconds;
    packet.microseconds = xb->microseconds;
    (*static_cast<const OutputFn *>(user))(ev->index, packet);
  }
  static int onPull(void *user, uint32_t source, netvm_exbuf *xb) {
    auto *self = static_cast<NativeEngine *>(user);
    if (!self->puller)
      return 0;
    std::optional<TracePacket> p = self->puller(source);
    if (!p)
      return 0;
    return netvm_exbuf_assign(self->first(), xb, p->bytes.data(),
                              p->bytes.size(), p->seconds, p->microseconds);
  }

  netvm_runner *runner;
  bool pipeline;
  std::vector<std::string> sources, sinks, pes;
  std::vector<uint8_t> scratch;
  PacketResult *current = nullptr;
  uint64_t sequence = 0; // packets given to the runner so far
  std::function<std::optional<TracePacket>(unsigned)> puller;
};
} // namespace

std::unique_ptr<Engine> Engine::native(const netvm_app_desc *app,
                                       const EngineOptions &options,
                                       std::string &error) {
  if (options.threads == 0) {
    error = "an engine needs at least one thread";
    return nullptr;
  }
  netvm_runner_options ro{};
  ro.mode = options.pipeline ? NETVM_RUN_PIPELINE : NETVM_RUN_TO_COMPLETION;
  ro.threads = options.threads;
  ro.batch = options.runnerBatch;
  ro.watchdog = options.watchdogBudget;
  ro.size = sizeof ro;
  char message[512] = {0};
  std::vector<uint32_t> stageOf(app->num_pes + 1), replicas(app->num_pes + 1);
  if (!options.stages.empty()) {
    uint32_t stages = 0;
    if (!netvm_parse_stages(app, options.stages.c_str(), stageOf.data(),
                            replicas.data(), &stages, message,
                            sizeof message)) {
      error = message;
      return nullptr;
    }
    ro.stage_of_pe = stageOf.data();
    ro.replicas_of_stage = replicas.data();
  }
  netvm_dynamic_policy policy{};
  if (options.dynamic) {
    if (!netvm_parse_dynamic_policy(options.dynamicPolicy.c_str(), &policy,
                                    message, sizeof message)) {
      error = message;
      return nullptr;
    }
    ro.dynamic = &policy;
  }
  netvm_runner *runner = netvm_runner_create(app, &ro, message, sizeof message);
  if (!runner) {
    error = message;
    return nullptr;
  }
  return std::make_unique<NativeEngine>(app, runner, options.pipeline);
}
