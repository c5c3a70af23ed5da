//===- Engine.cpp - Running applications, whatever the engine -----------------===//
//
// The interpreter engine adapts netvm::interp::Interpreter; the native engine
// wraps a netvm_instance of the C runtime and collects what its callbacks
// report for the current packet.
//
//===----------------------------------------------------------------------===//

#include "netvm/Runtime/Engine.h"
#include "netvm/Interpreter/Interpreter.h"
#include "netvm/runtime.h"

#include "NetVM/NetVMOps.h"

#include "llvm/Support/raw_ostream.h"

using namespace netvm;
using namespace netvm::rt;

Engine::~Engine() = default;

static std::string locationString(mlir::Location loc) {
  if (auto file = dyn_cast<mlir::FileLineColLoc>(loc))
    return (file.getFilename().getValue() + ":" + llvm::Twine(file.getLine()) +
            ":" + llvm::Twine(file.getColumn()))
        .str();
  std::string s;
  llvm::raw_string_ostream os(s);
  loc.print(os);
  return s;
}

//===----------------------------------------------------------------------===//
// Interpreter
//===----------------------------------------------------------------------===//

namespace {
class InterpreterEngine final : public Engine {
public:
  explicit InterpreterEngine(std::unique_ptr<interp::Interpreter> vm)
      : vm(std::move(vm)) {}

  std::vector<ExceptionReport> initialize() override {
    return convert(vm->initialize());
  }
  PacketResult push(unsigned source, const TracePacket &packet) override {
    return convert(vm->push(source,
                            interp::Packet{packet.bytes, packet.seconds,
                                           packet.microseconds,
                                           packet.wireLength}));
  }
  PacketResult pull(unsigned sink) override { return convert(vm->pull(sink)); }
  void setSourcePuller(
      std::function<std::optional<TracePacket>(unsigned)> fn) override {
    vm->setSourcePuller([fn](unsigned source) -> std::optional<interp::Packet> {
      std::optional<TracePacket> p = fn(source);
      if (!p)
        return std::nullopt;
      return interp::Packet{std::move(p->bytes), p->seconds, p->microseconds,
                            p->wireLength};
    });
  }
  llvm::ArrayRef<std::string> sourceNames() const override {
    return vm->sourceNames();
  }
  llvm::ArrayRef<std::string> sinkNames() const override {
    return vm->sinkNames();
  }
  llvm::ArrayRef<std::string> peNames() const override {
    return vm->peNames();
  }
  llvm::ArrayRef<uint8_t> dataMemory(unsigned pe) const override {
    return vm->dataMemory(pe);
  }
  llvm::MutableArrayRef<uint8_t> mutableDataMemory(unsigned pe) override {
    return vm->mutableDataMemory(pe);
  }
  llvm::ArrayRef<uint8_t> sharedMemory() const override {
    return vm->sharedMemory();
  }
  PECounters counters(unsigned pe) const override {
    const interp::PECounters &c = vm->counters(pe);
    return {c.invocations, c.sent, c.dropped, c.exceptions};
  }

private:
  static ExceptionReport convert(const interp::Exception &e) {
    return {stringifyExceptionKind(e.kind).str(), e.pe,
            stringifyHandlerKind(e.handler).str(), locationString(e.loc),
            e.detail};
  }
  static std::vector<ExceptionReport>
  convert(const std::vector<interp::Exception> &es) {
    std::vector<ExceptionReport> out;
    for (const interp::Exception &e : es)
      out.push_back(convert(e));
    return out;
  }
  static PacketResult convert(interp::Result r) {
    PacketResult out;
    for (interp::Output &o : r.outputs)
      out.outputs.push_back({o.sink, std::move(o.bytes), std::move(o.info),
                             o.seconds, o.microseconds});
    for (const interp::Exception &e : r.exceptions)
      out.exceptions.push_back(convert(e));
    out.drops = r.drops;
    out.unconnected = r.unconnected;
    return out;
  }

  std::unique_ptr<interp::Interpreter> vm;
};
} // namespace

std::unique_ptr<Engine> Engine::interpreter(ApplicationOp app,
                                            const EngineOptions &options,
                                            std::string &error) {
  interp::Options opts;
  opts.watchdogBudget = options.watchdogBudget;
  opts.defaultInfoSize = options.defaultInfoSize;
  std::unique_ptr<interp::Interpreter> vm = interp::Interpreter::create(app, opts);
  if (!vm) {
    error = "the interpreter cannot run this application (see the "
            "diagnostics above)";
    return nullptr;
  }
  return std::make_unique<InterpreterEngine>(std::move(vm));
}

//===----------------------------------------------------------------------===//
// Native code
//===----------------------------------------------------------------------===//

namespace {
class NativeEngine final : public Engine {
public:
  NativeEngine(netvm_instance *vm, const netvm_app_desc *app)
      : vm(vm), app(app) {
    for (uint32_t i = 0; i < app->num_sources; ++i)
      sources.push_back(app->source_names[i]);
    for (uint32_t i = 0; i < app->num_sinks; ++i)
      sinks.push_back(app->sink_names[i]);
    for (uint32_t i = 0; i < app->num_pes; ++i)
      pes.push_back(app->pes[i].name);
    netvm_instance_set_output(vm, &NativeEngine::onOutput, this);
    netvm_instance_set_exception_hook(vm, &NativeEngine::onException, this);
    netvm_instance_set_source(vm, &NativeEngine::onPull, this);
  }
  ~NativeEngine() override { netvm_instance_destroy(vm); }

  std::vector<ExceptionReport> initialize() override {
    current = PacketResult();
    netvm_instance_init(vm);
    return std::move(current.exceptions);
  }
  PacketResult push(unsigned source, const TracePacket &packet) override {
    current = PacketResult();
    netvm_counters before;
    netvm_instance_counters(vm, &before);
    netvm_instance_push(vm, source, packet.bytes.data(), packet.bytes.size(),
                        packet.seconds, packet.microseconds);
    finish(before);
    return std::move(current);
  }
  PacketResult pull(unsigned sink) override {
    current = PacketResult();
    netvm_counters before;
    netvm_instance_counters(vm, &before);
    netvm_instance_pull(vm, sink);
    finish(before);
    return std::move(current);
  }
  void setSourcePuller(
      std::function<std::optional<TracePacket>(unsigned)> fn) override {
    puller = std::move(fn);
  }
  llvm::ArrayRef<std::string> sourceNames() const override { return sources; }
  llvm::ArrayRef<std::string> sinkNames() const override { return sinks; }
  llvm::ArrayRef<std::string> peNames() const override { return pes; }
  llvm::ArrayRef<uint8_t> dataMemory(unsigned pe) const override {
    uint32_t size = 0;
    uint8_t *data = netvm_instance_data(vm, pe, &size);
    return {data, size};
  }
  llvm::MutableArrayRef<uint8_t> mutableDataMemory(unsigned pe) override {
    uint32_t size = 0;
    uint8_t *data = netvm_instance_data(vm, pe, &size);
    return {data, size};
  }
  llvm::ArrayRef<uint8_t> sharedMemory() const override {
    uint32_t size = 0;
    uint8_t *data = netvm_instance_shared(vm, &size);
    return {data, size};
  }
  PECounters counters(unsigned pe) const override {
    netvm_pe_counters c;
    netvm_instance_pe_counters(vm, pe, &c);
    return {c.runs, c.sent, c.dropped, c.exceptions};
  }

private:
  void finish(const netvm_counters &before) {
    netvm_counters after;
    netvm_instance_counters(vm, &after);
    current.drops = after.dropped - before.dropped;
    current.unconnected = after.unconnected - before.unconnected;
  }
  static void onOutput(void *user, uint32_t sink, const netvm_exbuf *xb) {
    auto *self = static_cast<NativeEngine *>(user);
    Output out;
    out.sink = sink;
    out.bytes.assign(xb->packet, xb->packet + xb->length);
    if (xb->info)
      out.info.assign(xb->info, xb->info + xb->info_length);
    out.seconds = xb->seconds;
    out.microseconds = xb->microseconds;
    self->current.outputs.push_back(std::move(out));
  }
  static void onException(void *user, uint32_t kind, const netvm_site *site) {
    auto *self = static_cast<NativeEngine *>(user);
    ExceptionReport report;
    report.kind = netvm_exception_name(kind);
    if (site) {
      report.pe = site->pe < self->pes.size() ? self->pes[site->pe] : "";
      static const char *const kinds[] = {"init", "push", "pull"};
      report.handler = site->handler < 3 ? kinds[site->handler] : "";
      report.location = site->location;
    }
    self->current.exceptions.push_back(std::move(report));
  }
  static int onPull(void *user, uint32_t source, netvm_exbuf *xb) {
    auto *self = static_cast<NativeEngine *>(user);
    if (!self->puller)
      return 0;
    std::optional<TracePacket> p = self->puller(source);
    if (!p)
      return 0;
    return netvm_exbuf_assign(self->vm, xb, p->bytes.data(), p->bytes.size(),
                              p->seconds, p->microseconds);
  }

  netvm_instance *vm;
  const netvm_app_desc *app;
  std::vector<std::string> sources, sinks, pes;
  PacketResult current;
  std::function<std::optional<TracePacket>(unsigned)> puller;
};
} // namespace

std::unique_ptr<Engine> Engine::native(const netvm_app_desc *app,
                                       const EngineOptions &options,
                                       std::string &error) {
  char message[256] = {0};
  netvm_instance *vm = netvm_instance_create(app, message, sizeof(message));
  if (!vm) {
    error = message;
    return nullptr;
  }
  netvm_instance_set_watchdog(vm, options.watchdogBudget);
  return std::make_unique<NativeEngine>(vm, app);
}
