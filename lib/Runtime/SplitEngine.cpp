//===- SplitEngine.cpp - Two engines joined where connections were cut ----===//
//
// The composite engine of netvm/Runtime/Split.h. Packets go into the head;
// each output of the head towards the tail is pushed into the tail at once,
// with its bytes, lengths, time stamp and info memory, and the tail's
// result takes its place in the packet's result, so a packet's outputs
// come in the order the interpreter's depth-first walk gives them. The two
// parts share no state (planSplit refuses shared memory on both sides), so
// running the head over a whole batch before the tail sees its packets
// changes nothing the application can observe.
//
//===----------------------------------------------------------------------===//

#include "netvm/Runtime/Split.h"

namespace netvm::rt {
namespace {

class SplitEngine final : public Engine {
public:
  SplitEngine(std::unique_ptr<Engine> head, std::unique_ptr<Engine> tail,
              SplitRoutes routes)
      : head(std::move(head)), tail(std::move(tail)), routes(std::move(routes)),
        tally(this->routes.sinks.size()) {
    for (unsigned pe = 0; pe < this->routes.peHomes.size(); ++pe) {
      auto [inTail, index] = this->routes.peHomes[pe];
      std::vector<unsigned> &map = inTail ? tailPes : headPes;
      if (map.size() <= index)
        map.resize(index + 1);
      map[index] = pe;
    }
  }

  const char *kind() const override { return "split"; }
  std::string failure() const override {
    if (!broken.empty())
      return broken;
    std::string f = head->failure();
    if (f.empty() && tail)
      f = tail->failure();
    return f;
  }
  const me::Stats *emulatorStats() const override {
    return head->emulatorStats();
  }

  PacketResult initialize() override {
    PacketResult result = head->initialize();
    remapExceptions(result, headPes);
    if (tail) {
      PacketResult more = tail->initialize();
      remapTail(more);
      append(result, std::move(more));
    }
    tally.add(result, /*pushed=*/false);
    return result;
  }

  PacketResult push(unsigned source, const TracePacket &packet) override {
    PacketResult result = join(head->push(source, packet));
    tally.add(result, /*pushed=*/true);
    return result;
  }

  void run(unsigned source, llvm::MutableArrayRef<netvm_packet> packets,
           const ResultFn *onResult, ResultDetail detail) override {
    // The head's outputs towards the tail need their bytes and info.
    auto each = [&](size_t index, const PacketResult &fromHead) {
      PacketResult result = join(fromHead);
      tally.add(result, /*pushed=*/true);
      if (!onResult)
        return;
      if (detail == ResultDetail::Verdicts)
        for (Output &out : result.outputs) {
          out.bytes.clear();
          out.info.clear();
        }
      (*onResult)(index, result);
    };
    ResultFn fn = each;
    if (mixedSources.size() == packets.size()) {
      std::vector<unsigned> sources;
      sources.swap(mixedSources);
      head->runMixed(sources, packets, &fn, ResultDetail::Full);
    } else {
      head->run(source, packets, &fn, ResultDetail::Full);
    }
  }

  /// Chunks of several sources go to the head whole (runMixed runs them as
  /// the head can).
  bool runsMixedSources() const override { return true; }

  PacketResult pull(unsigned sink) override {
    (void)sink;
    broken = "the split engine runs push connections only (no pulls)";
    return {};
  }
  void setSourcePuller(
      std::function<std::optional<TracePacket>(unsigned)> fn) override {
    head->setSourcePuller(std::move(fn));
  }

  llvm::ArrayRef<std::string> sourceNames() const override {
    return routes.sources;
  }
  llvm::ArrayRef<std::string> sinkNames() const override {
    return routes.sinks;
  }
  llvm::ArrayRef<std::string> peNames() const override { return routes.pes; }

  llvm::MutableArrayRef<uint8_t> dataMemory(unsigned pe) override {
    Engine *home = homeOf(pe);
    return home ? home->dataMemory(routes.peHomes[pe].second)
                : llvm::MutableArrayRef<uint8_t>();
  }
  llvm::MutableArrayRef<uint8_t> sharedMemory() override {
    llvm::MutableArrayRef<uint8_t> shared = head->sharedMemory();
    return shared.empty() && tail ? tail->sharedMemory() : shared;
  }
  netvm_copro *coprocessor(unsigned pe, llvm::StringRef name) override {
    Engine *home = homeOf(pe);
    return home ? home->coprocessor(routes.peHomes[pe].second, name) : nullptr;
  }

  std::optional<std::vector<netvm_lookup_entry>>
  lookupEntries(unsigned pe) override {
    Engine *home = homeOf(pe);
    return home ? home->lookupEntries(routes.peHomes[pe].second) : std::nullopt;
  }
  std::optional<bool> lookupDelete(unsigned pe,
                                   llvm::ArrayRef<uint32_t> key) override {
    Engine *home = homeOf(pe);
    return home ? home->lookupDelete(routes.peHomes[pe].second, key)
                : std::nullopt;
  }
  std::optional<uint32_t> lookupAge(unsigned pe, uint32_t now,
                                    uint32_t maxAge) override {
    Engine *home = homeOf(pe);
    return home ? home->lookupAge(routes.peHomes[pe].second, now, maxAge)
                : std::nullopt;
  }

  Counters counters() const override { return tally.counters(); }
  PECounters peCounters(unsigned pe) const override {
    if (pe >= routes.peHomes.size())
      return {};
    auto [inTail, index] = routes.peHomes[pe];
    return (inTail ? *tail : *head).peCounters(index);
  }
  SinkCounters sinkCounters(unsigned sink) const override {
    return tally.sink(sink);
  }

private:
  Engine *homeOf(unsigned pe) {
    if (pe >= routes.peHomes.size())
      return nullptr;
    return routes.peHomes[pe].first ? tail.get() : head.get();
  }

  std::unique_ptr<Engine> head, tail;
  SplitRoutes routes;
  /// Index in a part -> index in the whole application.
  std::vector<unsigned> headPes, tailPes;
  Tally tally;
  std::string broken;

  static void remapExceptions(PacketResult &result,
                              const std::vector<unsigned> &pes) {
    for (ExceptionReport &e : result.exceptions)
      if (e.pe >= 0 && unsigned(e.pe) < pes.size())
        e.pe = static_cast<int>(pes[e.pe]);
  }
  void remapTail(PacketResult &result) {
    remapExceptions(result, tailPes);
    for (Output &out : result.outputs)
      out.sink = routes.tailSinks[out.sink];
  }
  static void append(PacketResult &into, PacketResult &&more) {
    for (Output &out : more.outputs)
      into.outputs.push_back(std::move(out));
    for (ExceptionReport &e : more.exceptions)
      into.exceptions.push_back(std::move(e));
    into.drops += more.drops;
    into.unconnected += more.unconnected;
  }

  /// The whole application's result of a packet whose head result is
  /// `fromHead`: outputs towards the tail replaced by what the tail did.
  PacketResult join(const PacketResult &fromHead) {
    PacketResult result;
    result.exceptions = fromHead.exceptions;
    remapExceptions(result, headPes);
    result.drops = fromHead.drops;
    result.unconnected = fromHead.unconnected;
    for (const Output &out : fromHead.outputs) {
      SplitRoutes::Route route = routes.headSinks[out.sink];
      if (!route.toTail) {
        result.outputs.push_back(out);
        result.outputs.back().sink = route.index;
        continue;
      }
      TracePacket packet;
      packet.bytes = out.bytes;
      packet.wireLength = out.wireLength;
      packet.seconds = out.seconds;
      packet.microseconds = out.microseconds;
      std::optional<PacketResult> more =
          tail->pushWithInfo(route.index, packet, out.info);
      if (!more) {
        broken = std::string("the ") + tail->kind() +
                 " engine cannot take packets with their info memory";
        continue;
      }
      remapTail(*more);
      append(result, std::move(*more));
    }
    return result;
  }
};

} // namespace

std::unique_ptr<Engine> splitEngine(std::unique_ptr<Engine> head,
                                    std::unique_ptr<Engine> tail,
                                    SplitRoutes routes, std::string &error) {
  auto fail = [&](const std::string &why) -> std::unique_ptr<Engine> {
    error = "split engine: " + why;
    return nullptr;
  };
  if (!head)
    return fail("no head engine");
  if (routes.headSinks.size() != head->sinkNames().size())
    return fail("the routes do not name every sink of the head");
  if (routes.sources.size() != head->sourceNames().size())
    return fail("the whole application's sources are not the head's");
  for (const SplitRoutes::Route &r : routes.headSinks) {
    if (r.toTail && (!tail || r.index >= tail->sourceNames().size()))
      return fail("a sink of the head leads to no source of the tail");
    if (!r.toTail && r.index >= routes.sinks.size())
      return fail("a sink of the head leads to no sink");
  }
  if (tail && routes.tailSinks.size() != tail->sinkNames().size())
    return fail("the routes do not name every sink of the tail");
  for (unsigned s : routes.tailSinks)
    if (s >= routes.sinks.size())
      return fail("a sink of the tail leads to no sink");
  if (routes.peHomes.size() != routes.pes.size())
    return fail("the routes do not place every NetPE");
  for (auto [inTail, index] : routes.peHomes)
    if (index >=
        (inTail ? (tail ? tail->peNames().size() : 0) : head->peNames().size()))
      return fail("a NetPE is placed in a part that does not have it");
  return std::make_unique<SplitEngine>(std::move(head), std::move(tail),
                                       std::move(routes));
}

} // namespace netvm::rt
