//===- CCore.cpp - The C-CORE layer's bindings (nanobind) -----------------===//
//
// What netvm/ccore.py builds on (docs/ccore.md, docs/python.md): schemas
// and generated message streams, channels and the classifier, chains of an
// ME stage (a query or a multicast) and a host stage run on the emulator
// with hot-swaps and reconfigurations, the resource report, and placement.
// Compiling holds the GIL (MLIR contexts); a chain's run releases it.
//
//===----------------------------------------------------------------------===//

#include "netvm/CCore/Chain.h"
#include "netvm/CCore/Query.h"
#include "netvm/CCore/Transport.h"
#include "netvm/ccore/Message.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <stdexcept>

namespace nb = nanobind;
using namespace nb::literals;
namespace cc = netvm::ccore;

namespace {

using Messages = std::vector<std::vector<uint8_t>>;

/// A parsed schema, shared by the channels and chains made from it (their
/// queries point into it).
struct PySchema {
  std::shared_ptr<cc::Schema> schema;

  const cc::Format &format(const std::string &name) const {
    const cc::Format *f = schema->format(name);
    if (!f)
      throw std::invalid_argument("the schema has no format '" + name + "'");
    return *f;
  }
};

PySchema parseSchema(const std::string &text, const std::string &file) {
  std::string error;
  std::optional<cc::Schema> schema = cc::parseSchema(text, file, error);
  if (!schema)
    throw std::invalid_argument(error);
  return PySchema{std::make_shared<cc::Schema>(std::move(*schema))};
}

Messages toMessages(const std::vector<nb::bytes> &in) {
  Messages out;
  out.reserve(in.size());
  for (const nb::bytes &b : in) {
    const auto *p = static_cast<const uint8_t *>(b.data());
    out.emplace_back(p, p + b.size());
  }
  return out;
}

std::vector<nb::bytes> toBytes(const Messages &in) {
  std::vector<nb::bytes> out;
  out.reserve(in.size());
  for (const std::vector<uint8_t> &m : in)
    out.emplace_back(reinterpret_cast<const char *>(m.data()), m.size());
  return out;
}

struct PyChannels {
  std::shared_ptr<cc::Schema> schema;
  cc::Classifier classifier;
  explicit PyChannels(const PySchema &s)
      : schema(s.schema), classifier(*s.schema) {}
};

/// The handlers of a chain's first stage: one query, or a multicast.
struct Stage {
  cc::HandlerApp app, next;
  std::vector<cc::Query> queries;
};

void buildStage(const PySchema &s, const std::optional<std::string> &query,
                const std::vector<std::pair<uint32_t, std::string>> &subs,
                const std::map<std::string, uint32_t> &params, bool specialize,
                Stage &stage) {
  if (query.has_value() == !subs.empty())
    throw std::invalid_argument("give a query or subscribers (one of them)");
  std::string error;
  for (int form = 0; form < 2; ++form) {
    cc::HandlerOptions options;
    options.specialize = form ? !specialize : specialize;
    options.parameters = params;
    options.name = "me_stage";
    cc::HandlerApp &app = form ? stage.next : stage.app;
    std::vector<cc::Subscriber> list;
    for (const auto &[stream, text] : subs)
      list.push_back({text, stream});
    std::vector<cc::Query> queries;
    // 'Q1 | Q2 | ...': a pipeline of handlers, one ME stage each.
    std::vector<std::string> texts;
    if (query)
      texts = cc::splitQueries(*query);
    if (texts.size() > 1
            ? !cc::emitPipeline(*s.schema, texts, options, true, app, queries,
                                error)
            : !cc::emitHandlerApp(*s.schema, query ? &*query : nullptr, list,
                                  options, app, queries, error))
      throw std::invalid_argument(error);
    if (form == 0)
      stage.queries = std::move(queries);
  }
}

class PyChain {
public:
  PyChain(const PySchema &s, std::optional<std::string> query,
          std::vector<std::pair<uint32_t, std::string>> subscribers,
          std::optional<std::string> hostQuery,
          std::map<std::string, uint32_t> params, bool specialize,
          double rateGbps, uint32_t rudp, bool retransmit)
      : schema(s.schema), specialize(specialize), query(query), params(params),
        rudp(rudp), retransmit(retransmit) {
    for (const auto &[stream, text] : subscribers)
      this->subscribers.push_back({text, stream});
    if (rateGbps < 0)
      throw std::invalid_argument("rate_gbps must not be negative");
    machine.lineRateGbps = rateGbps;
    buildStage(s, query, subscribers, params, specialize, stage);
    std::string error;
    if (retransmit && !rudp)
      throw std::invalid_argument("retransmit needs rudp (the payload)");
    if (rudp && (stage.queries.front().join ||
                 !cc::addReassembler(stage.app, *stage.queries.front().format,
                                     rudp, error, retransmit)))
      throw std::invalid_argument(
          error.empty() ? "rudp carries one format; a join reads two" : error);
    if (!cc::compileForME(stage.app, machine, meStage, error))
      throw std::invalid_argument(error);
    if (hostQuery) {
      std::optional<cc::Query> q =
          cc::parseQuery(*hostQuery, "<host-query>", *s.schema, error);
      cc::HandlerOptions options;
      options.specialize = true;
      options.name = "host_stage";
      std::string netil;
      if (!q || !cc::emitNetIL(*q, options, netil, error))
        throw std::invalid_argument(error);
      host = cc::compileForHost(netil, "host_stage", error);
      if (!host)
        throw std::invalid_argument(error);
      host->initialize();
    }
  }

  nb::dict run(const std::vector<nb::bytes> &messages,
               const std::optional<std::string> &swap, uint64_t swapAt,
               bool swapSame,
               const std::vector<std::tuple<std::string, uint32_t, uint64_t>>
                   &reconfigure,
               bool autoSpecialize, double stableMicros,
               uint64_t stableMessages) {
    cc::ChainControl control;
    if (rudp)
      throw std::invalid_argument("a chain behind reliable UDP runs with "
                                  "run_reliable");
    if (autoSpecialize) {
      if (specialize || swap)
        throw std::invalid_argument(
            "auto_specialize starts from the generic form and makes its own "
            "swaps: not with specialize or swap");
      if (stableMicros < 0)
        throw std::invalid_argument("stable_us must not be negative");
      cc::AutoSpecialize &a = control.autoSpecialize;
      a.enabled = true;
      a.stableCycles = uint64_t(stableMicros * machine.clockMHz);
      a.stableMessages = stableMessages;
      a.parameters = params;
      cc::HandlerOptions options;
      options.name = "me_stage";
      a.specialize =
          cc::specializerFor(*schema, query, subscribers, options, machine);
    }
    control.swap.atCycle = swapAt;
    if (swap) {
      if (*swap == "spare")
        control.swap.mode = cc::SwapRequest::Mode::Spare;
      else if (*swap == "in-place")
        control.swap.mode = cc::SwapRequest::Mode::InPlace;
      else
        throw std::invalid_argument("swap='" + *swap +
                                    "': expected 'spare' or 'in-place'");
      std::string error;
      next = std::make_unique<netvm::me::CompiledApp>();
      if (!cc::compileForME(swapSame ? stage.app : stage.next, machine, *next,
                            error))
        throw std::invalid_argument(error);
      control.swap.next = next.get();
    }
    for (const auto &[name, value, cycle] : reconfigure) {
      if (specialize)
        throw std::invalid_argument(
            "reconfiguring needs the generic form (a specialized handler "
            "has its parameters in its code)");
      std::string error;
      if (!cc::parameterChanges(stage.queries, name, value, cycle,
                                control.params, error))
        throw std::invalid_argument("the ME stage has no parameter $" + name);
    }
    return execute(control, toMessages(messages));
  }

  /// Reliable UDP with retransmission (docs/ccore.md, "Retransmission"),
  /// or loss reporting over fragments the network lost `loss` percent of.
  nb::dict runReliable(const std::vector<nb::bytes> &messages, uint32_t window,
                       double timeoutMicros, unsigned loss, unsigned reorder,
                       unsigned controlLoss, uint64_t seed,
                       const std::vector<uint64_t> &drop) {
    if (!rudp)
      throw std::invalid_argument("the chain has no reliable UDP (rudp=0)");
    if (loss > 100 || reorder > 100 || controlLoss > 100)
      throw std::invalid_argument(
          "loss, reorder and control_loss are percentages (0-100)");
    cc::ChainControl control;
    if (!retransmit) {
      if (reorder || controlLoss || !drop.empty())
        throw std::invalid_argument("reorder, control_loss and drop need "
                                    "retransmit");
      cc::FragmentOptions options;
      options.payload = rudp;
      options.lossPercent = loss;
      options.seed = seed;
      std::string error;
      Messages fragments;
      if (!cc::fragmentMessages(toMessages(messages), options, fragments,
                                error))
        throw std::invalid_argument(error);
      return execute(control, fragments);
    }
    if (!window || timeoutMicros <= 0)
      throw std::invalid_argument("window and timeout_us must be positive");
    cc::ReliableOptions &r = control.reliable;
    r = cc::reliableOptions(rudp, window, timeoutMicros, machine.clockMHz);
    r.lossPercent = loss;
    r.reorderPercent = reorder;
    r.controlLossPercent = controlLoss;
    r.seed = seed;
    r.dropFirst = drop;
    return execute(control, toMessages(messages));
  }

private:
  nb::dict execute(cc::ChainControl &control, const Messages &in) {
    cc::ChainRun result;
    std::string error;
    bool ok;
    {
      nb::gil_scoped_release release;
      ok = cc::runChain(meStage, host.get(), in, machine, control, result,
                        error);
    }
    if (!ok)
      throw std::runtime_error(error);
    nb::dict d;
    d["outputs"] = toBytes(result.outputs);
    d["from_mes"] = toBytes(result.fromMEs);
    d["from_mes_cycles"] = result.fromMEsCycles;
    d["from_mes_tags"] = result.fromMEsTags;
    d["me_runs"] = result.meRuns;
    d["me_sent"] = result.meSent;
    d["me_dropped"] = result.meDropped;
    d["host_dropped"] = result.hostDropped;
    d["cycles"] = result.cycles;
    d["micros"] = result.micros;
    d["receive_drops"] = result.stats.packetsDropped;
    nb::list stages;
    for (const cc::StageRun &st : result.stages) {
      nb::dict w;
      w["pes"] = st.pes;
      w["me"] = st.me;
      w["messages"] = st.messages;
      w["runs"] = st.runs;
      w["sent"] = st.sent;
      w["dropped"] = st.dropped;
      w["busy_cycles"] = st.busyCycles;
      w["cycles_per_message"] = st.cyclesPerMessage();
      w["utilization"] = st.utilization;
      stages.append(w);
    }
    d["stages"] = stages;
    d["mean_latency_us"] = result.latencyMessages ? result.meanLatencyCycles /
                                                        result.stats.clockMHz
                                                  : 0.0;
    if (control.swap.mode != cc::SwapRequest::Mode::None) {
      const cc::SwapReport &r = result.swap;
      nb::dict s;
      s["done"] = r.done;
      s["old_me"] = r.oldME;
      s["new_me"] = r.newME;
      s["old_messages"] = r.oldMessages;
      s["downtime_cycles"] = r.downtimeCycles();
      d["swap"] = s;
    }
    nb::list changes;
    for (size_t i = 0; i < control.params.size(); ++i) {
      const cc::ParamReport &r = result.params[i];
      nb::dict c;
      c["name"] = control.params[i].name;
      c["value"] = control.params[i].value;
      c["done"] = r.done;
      c["messages_before"] = r.messagesBefore;
      c["downtime_cycles"] = r.downtimeCycles();
      changes.append(c);
    }
    d["reconfigurations"] = changes;
    nb::list autoSwaps;
    for (const cc::AutoSwapReport &a : result.autoSwaps) {
      nb::dict w;
      w["to_specialized"] = a.toSpecialized;
      w["old_me"] = a.swap.oldME;
      w["new_me"] = a.swap.newME;
      w["start_cycle"] = a.swap.startCycle;
      w["messages_before"] = a.messagesBefore;
      w["downtime_cycles"] = a.swap.downtimeCycles();
      w["compile_ms"] = a.compileMilliseconds;
      w["parameters"] = a.parameters;
      autoSwaps.append(w);
    }
    d["auto_swaps"] = autoSwaps;
    d["report"] =
        cc::toJSON(cc::resourceReport(result, meStage, control, machine));
    if (rudp && !result.dataMemory.empty()) {
      cc::RudpCounters c = cc::rudpCounters(result.dataMemory.back());
      nb::dict r;
      r["delivered"] = c.messagesDelivered;
      r["lost"] = c.messagesLost;
      r["rejected"] = c.fragmentsRejected;
      r["nacks_sent"] = c.nacksSent;
      r["acks_sent"] = c.acksSent;
      if (control.reliable.enabled) {
        const cc::ReliableReport &s = result.reliable;
        r["fragments_sent"] = s.fragmentsSent;
        r["fragments_resent"] = s.fragmentsResent;
        r["fragments_lost"] = s.fragmentsLost;
        r["fragments_reordered"] = s.fragmentsReordered;
        r["messages_resent"] = s.messagesResent;
        r["timeouts"] = s.timeouts;
        r["go_backs"] = s.goBacks;
        r["acks_received"] = s.acksReceived;
        r["nacks_received"] = s.nacksReceived;
        r["control_lost"] = s.controlLost;
        r["idle_gaps"] = s.idleGaps;
        r["acknowledged"] = s.acknowledged;
        r["done_cycle"] = s.doneCycle;
        r["control_messages"] = result.controlMessages;
      }
      d["rudp"] = r;
    }
    return d;
  }

private:
  std::shared_ptr<cc::Schema> schema;
  bool specialize;
  std::optional<std::string> query;
  std::vector<cc::Subscriber> subscribers;
  std::map<std::string, uint32_t> params;
  netvm::me::MachineConfig machine;
  Stage stage;
  netvm::me::CompiledApp meStage;
  std::unique_ptr<netvm::me::CompiledApp> next;
  std::unique_ptr<netvm::rt::Engine> host;
  uint32_t rudp = 0;
  bool retransmit = false;
};

nb::dict place(const PySchema &s, const std::optional<std::string> &query,
               const std::vector<std::pair<uint32_t, std::string>> &subs,
               const std::map<std::string, uint32_t> &params, double rateGbps,
               unsigned busyMEs, bool keepSpare) {
  Stage stage;
  buildStage(s, query, subs, params, /*specialize=*/true, stage);
  cc::PlacementRequest request;
  request.rateGbps = rateGbps;
  request.messageBytes = stage.queries.front().format->size;
  request.busyMEs = busyMEs;
  request.keepSpare = keepSpare;
  netvm::me::MachineConfig machine;
  cc::Placement p = cc::placeChain(stage.app, request, machine);
  nb::dict d;
  d["where"] = cc::whereName(p.where);
  d["reason"] = p.reason;
  d["me_cycles"] = p.meCycles;
  d["host_ns"] = p.hostNanoseconds;
  d["budget_cycles"] = p.budgetCycles;
  d["budget_ns"] = p.budgetNanoseconds;
  d["code_words"] = p.codeWords;
  return d;
}

/// The resource manager's table of running chains (docs/ccore.md).
struct PyManager {
  PyManager(unsigned hostThreads, bool keepSpare)
      : manager(netvm::me::MachineConfig(), hostThreads, keepSpare) {}
  cc::ResourceManager manager;

  nb::dict add(const PySchema &s, const std::string &name,
               const std::optional<std::string> &query,
               const std::vector<std::pair<uint32_t, std::string>> &subs,
               const std::map<std::string, uint32_t> &params, double rateGbps,
               const std::string &side) {
    cc::ChainDemand demand;
    if (side == "me")
      demand.side = cc::ChainDemand::Side::ME;
    else if (side == "host")
      demand.side = cc::ChainDemand::Side::Host;
    else if (side != "auto")
      throw std::invalid_argument("side '" + side +
                                  "': expected 'auto', 'me' or 'host'");
    Stage stage;
    buildStage(s, query, subs, params, /*specialize=*/true, stage);
    demand.rateGbps = rateGbps;
    demand.messageBytes = stage.queries.front().format->size;
    unsigned id = 0;
    cc::Placement p =
        manager.add(name, stage.app, demand, &id, query ? *query : "multicast");
    nb::dict d;
    d["where"] = cc::whereName(p.where);
    d["reason"] = p.reason;
    d["id"] = p.where == cc::Placement::Where::Refused ? 0 : id;
    return d;
  }

  std::vector<nb::dict> table() const {
    std::vector<nb::dict> rows;
    for (const cc::RunningChain &c : manager.chains()) {
      nb::dict d;
      d["id"] = c.id;
      d["name"] = c.name;
      d["description"] = c.description;
      d["stages"] = c.stages;
      d["where"] = cc::whereName(c.where);
      d["mes"] = c.mes;
      d["host_threads"] = c.hostThreads;
      d["code_words"] = c.codeWords;
      d["me_words"] = c.meWords;
      d["rate_gbps"] = c.rateGbps;
      d["estimate"] = c.estimate;
      d["budget"] = c.budget;
      d["load"] = c.load;
      rows.push_back(d);
    }
    return rows;
  }
};

} // namespace

namespace netvm::python {

void bindCCore(nb::module_ &m) {
  nb::class_<PySchema>(m, "CCoreSchema", "A C-CORE message schema.")
      .def(nb::new_(&parseSchema), "text"_a, "file"_a = "<schema>")
      .def_prop_ro("formats",
                   [](const PySchema &s) {
                     std::vector<std::string> names;
                     for (const cc::Format &f : s.schema->formats)
                       names.push_back(f.name);
                     return names;
                   })
      .def(
          "generate",
          [](const PySchema &s, const std::string &format, uint64_t count,
             uint64_t seed, std::vector<uint32_t> streams,
             std::map<std::string, std::pair<uint32_t, uint32_t>> ranges,
             unsigned malformed) {
            const cc::Format &f = s.format(format);
            cc::GenerateOptions o;
            o.count = count;
            o.seed = seed;
            if (!streams.empty())
              o.streams = streams;
            for (const auto &[field, range] : ranges) {
              const cc::Field *fd = f.field(field);
              if (!fd || !fd->isInteger() || range.first > range.second)
                throw std::invalid_argument(
                    "range of '" + field +
                    "': an integer field of the format, lo <= hi");
            }
            o.ranges = ranges;
            o.malformedPercent = malformed;
            return toBytes(cc::generateMessages(f, o));
          },
          "format"_a, "count"_a, "seed"_a, "streams"_a, "ranges"_a,
          "malformed"_a);

  nb::class_<PyChannels>(m, "CCoreChannels",
                         "Channels and the classifier of a schema.")
      .def(nb::init<const PySchema &>(), "schema"_a)
      .def(
          "open",
          [](PyChannels &c, uint32_t stream, const std::string &source,
             const std::string &destination, uint16_t port,
             const std::string &format) {
            const cc::Format *f = c.schema->format(format);
            if (!f)
              throw std::invalid_argument("the schema has no format '" +
                                          format + "'");
            cc::ChannelKey key{source, destination, port, f->id};
            std::string error;
            if (!c.classifier.openChannel(key, error) ||
                !c.classifier.openStream(stream, key, error))
              throw std::invalid_argument(error);
          },
          "stream"_a, "source"_a, "destination"_a, "port"_a, "format"_a)
      .def(
          "classify",
          [](PyChannels &c, nb::bytes message) {
            return std::string(
                cc::Classifier::verdictName(c.classifier.classify(
                    static_cast<const uint8_t *>(message.data()),
                    message.size())));
          },
          "message"_a)
      .def(
          "take",
          [](PyChannels &c, const std::string &format) {
            const cc::Format *f = c.schema->format(format);
            if (!f)
              throw std::invalid_argument("the schema has no format '" +
                                          format + "'");
            Messages out;
            if (auto *q = c.classifier.queue(f->id)) {
              out.assign(q->begin(), q->end());
              q->clear();
            }
            return toBytes(out);
          },
          "format"_a)
      .def("counters", [](const PyChannels &c) {
        const cc::Classifier::Counters &k = c.classifier.counters();
        std::map<std::string, uint64_t> d;
        d["queued"] = k.queued;
        for (unsigned v = 1; v < 4; ++v)
          d[cc::Classifier::verdictName(cc::Classifier::Verdict(v))] =
              k.rejected[v];
        return d;
      });

  nb::class_<PyChain>(m, "CCoreChain",
                      "A chain: an ME stage (a query or a multicast) and an "
                      "optional host stage.")
      .def(nb::init<const PySchema &, std::optional<std::string>,
                    std::vector<std::pair<uint32_t, std::string>>,
                    std::optional<std::string>, std::map<std::string, uint32_t>,
                    bool, double, uint32_t, bool>(),
           "schema"_a, "query"_a, "subscribers"_a, "host_query"_a, "params"_a,
           "specialize"_a, "rate_gbps"_a, "rudp"_a, "retransmit"_a)
      .def("run", &PyChain::run, "messages"_a, "swap"_a, "swap_at"_a,
           "swap_same"_a, "reconfigure"_a, "auto_specialize"_a, "stable_us"_a,
           "stable_messages"_a)
      .def("run_reliable", &PyChain::runReliable, "messages"_a, "window"_a,
           "timeout_us"_a, "loss"_a, "reorder"_a, "control_loss"_a, "seed"_a,
           "drop"_a);

  nb::class_<PyManager>(m, "CCoreResourceManager",
                        "The resource manager's table of running chains.")
      .def(nb::init<unsigned, bool>(), "host_threads"_a, "keep_spare"_a)
      .def("add", &PyManager::add, "schema"_a, "name"_a, "query"_a,
           "subscribers"_a, "params"_a, "rate_gbps"_a, "side"_a)
      .def(
          "remove",
          [](PyManager &m, const std::string &name) {
            return m.manager.remove(name);
          },
          "name"_a)
      .def("table", &PyManager::table)
      .def_prop_ro("free_mes",
                   [](const PyManager &m) { return m.manager.freeMEs(); })
      .def_prop_ro("spare_me",
                   [](const PyManager &m) { return m.manager.spareME(); })
      .def_prop_ro(
          "free_host_threads",
          [](const PyManager &m) { return m.manager.freeHostThreads(); })
      .def("text", [](const PyManager &m) { return m.manager.text(); });

  m.def("ccore_place", &place, "schema"_a, "query"_a, "subscribers"_a,
        "params"_a, "rate_gbps"_a, "busy_mes"_a, "keep_spare"_a);
}

} // namespace netvm::python
