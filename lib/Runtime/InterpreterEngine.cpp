//===- InterpreterEngine.cpp - The reference interpreter as an engine -----===//
//
// The interpreter already reports in the run library's types; this engine
// adds the totals (a Tally) that the interpreter does not keep.
//
//===----------------------------------------------------------------------===//

#include "netvm/Interpreter/Interpreter.h"
#include "netvm/Runtime/Engine.h"

using namespace netvm;
using namespace netvm::rt;

namespace {
class InterpreterEngine final : public Engine {
public:
  explicit InterpreterEngine(std::unique_ptr<interp::Interpreter> vm)
      : vm(std::move(vm)), tally(this->vm->sinkNames().size()) {}

  const char *kind() const override { return "interpreter"; }

  PacketResult initialize() override {
    PacketResult result;
    result.exceptions = vm->initialize();
    tally.add(result, /*pushed=*/false);
    return result;
  }
  PacketResult push(unsigned source, const TracePacket &packet) override {
    PacketResult result = vm->push(source, packet);
    tally.add(result, /*pushed=*/true);
    return result;
  }
  std::optional<PacketResult>
  pushWithInfo(unsigned source, const TracePacket &packet,
               llvm::ArrayRef<uint8_t> info) override {
    PacketResult result = vm->push(source, packet, info);
    tally.add(result, /*pushed=*/true);
    return result;
  }
  PacketResult pull(unsigned sink) override {
    PacketResult result = vm->pull(sink);
    tally.add(result, /*pushed=*/false);
    return result;
  }
  void setSourcePuller(
      std::function<std::optional<TracePacket>(unsigned)> fn) override {
    vm->setSourcePuller(std::move(fn));
  }

  llvm::ArrayRef<std::string> sourceNames() const override {
    return vm->sourceNames();
  }
  llvm::ArrayRef<std::string> sinkNames() const override {
    return vm->sinkNames();
  }
  llvm::ArrayRef<std::string> peNames() const override { return vm->peNames(); }
  llvm::MutableArrayRef<uint8_t> dataMemory(unsigned pe) override {
    return vm->mutableDataMemory(pe);
  }
  llvm::MutableArrayRef<uint8_t> sharedMemory() override {
    return vm->mutableSharedMemory();
  }
  netvm_copro *coprocessor(unsigned pe, llvm::StringRef name) override {
    return vm->coprocessor(pe, name);
  }
  Counters counters() const override { return tally.counters(); }
  PECounters peCounters(unsigned pe) const override { return vm->counters(pe); }
  SinkCounters sinkCounters(unsigned sink) const override {
    return tally.sink(sink);
  }

private:
  std::unique_ptr<interp::Interpreter> vm;
  Tally tally;
};
} // namespace

std::unique_ptr<Engine> Engine::interpreter(ApplicationOp app,
                                            const EngineOptions &options,
                                            std::string &error) {
  interp::Options opts;
  opts.watchdogBudget = options.watchdogBudget;
  opts.defaultInfoSize = options.defaultInfoSize;
  std::unique_ptr<interp::Interpreter> vm =
      interp::Interpreter::create(app, opts);
  if (!vm) {
    error = "the interpreter cannot run this application (see the "
            "diagnostics above)";
    return nullptr;
  }
  return std::make_unique<InterpreterEngine>(std::move(vm));
}
