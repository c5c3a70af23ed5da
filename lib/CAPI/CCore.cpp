//===- CCore.cpp - The C-CORE layer's C API -------------------------------===//
//
// netvm-c/CCore.h over the C-CORE libraries (docs/ccore.md, "The C API"):
// opaque handles around the schema, the classifier and a chain (its
// compiled stages and the handler manager's actions), status codes and a
// per-thread message. The libraries are built without exceptions, so
// none can cross the API; failures come back as false and a message.
//
//===----------------------------------------------------------------------===//

#include "netvm-c/CCore.h"

#include "netvm/CCore/Chain.h"
#include "netvm/CCore/Query.h"
#include "netvm/ccore/Message.h"

#include "llvm/ADT/StringRef.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cc = netvm::ccore;

struct netvm_ccore_messages {
  std::vector<std::vector<uint8_t>> list;
};

struct netvm_ccore_schema {
  cc::Schema schema;
};

struct netvm_ccore_channels {
  const cc::Schema &schema;
  cc::Classifier classifier;
  explicit netvm_ccore_channels(const cc::Schema &schema)
      : schema(schema), classifier(schema) {}
};

struct netvm_ccore_chain {
  const cc::Schema *schema = nullptr;
  std::string meQuery;
  std::optional<std::string> hostQuery;
  std::map<std::string, uint32_t> params;
  bool specialize = false;
  netvm::me::MachineConfig machine;
  std::string placement = "me";
  unsigned busyMEs = 0;
  bool keepSpare = true;
  // Deployed:
  bool deployed = false, onHost = false;
  std::string reason;
  std::vector<cc::Query> queries;
  netvm::me::CompiledApp meStage;
  std::unique_ptr<netvm::me::CompiledApp> other;
  std::unique_ptr<netvm::rt::Engine> first, host;
  cc::ChainControl control;

  /// The handler manager's options of the first stage in one form.
  cc::HandlerOptions options(bool specialized) const {
    cc::HandlerOptions o;
    o.specialize = specialized;
    o.parameters = params;
    o.name = "me_stage";
    return o;
  }
};

struct netvm_ccore_run {
  cc::ChainRun run;
  netvm_ccore_messages outputs;
  std::string report;
  netvm_ccore_run_stats stats{};
};

namespace {

thread_local std::string lastError;

netvm_ccore_status fail(netvm_ccore_status status, std::string message) {
  while (!message.empty() && message.back() == '\n')
    message.pop_back();
  lastError = std::move(message);
  return status;
}

netvm_ccore_status invalid(const char *function, const char *what) {
  return fail(NETVM_CCORE_INVALID_ARGUMENT,
              std::string(function) + ": " + what);
}

/// Checks the pointers of a call; false after recording the failure.
#define NETVM_CCORE_REQUIRE(condition, what)                                   \
  do {                                                                         \
    if (!(condition))                                                          \
      return invalid(__func__, what);                                          \
  } while (false)

/// Parses "field=lo:hi,..." into generation ranges of `format`.
bool parseRanges(const cc::Format &format, llvm::StringRef text,
                 cc::GenerateOptions &options, std::string &error) {
  while (!text.empty()) {
    auto [item, rest] = text.split(',');
    text = rest;
    auto [field, span] = item.trim().split('=');
    auto [lo, hi] = span.split(':');
    uint32_t a = 0, b = 0;
    const cc::Field *f = format.field(field.str());
    if (!f || !f->isInteger() || lo.getAsInteger(0, a) ||
        hi.getAsInteger(0, b) || a > b) {
      error = "range '" + item.str() +
              "': expected field=lo:hi for an integer field, lo <= hi";
      return false;
    }
    options.ranges[field.str()] = {a, b};
  }
  return true;
}

} // namespace

extern "C" {

const char *netvm_ccore_last_error(void) { return lastError.c_str(); }

const char *netvm_ccore_status_name(netvm_ccore_status status) {
  switch (status) {
  case NETVM_CCORE_OK:
    return "ok";
  case NETVM_CCORE_INVALID_ARGUMENT:
    return "invalid argument";
  case NETVM_CCORE_PARSE_ERROR:
    return "parse error";
  case NETVM_CCORE_NOT_FOUND:
    return "not found";
  case NETVM_CCORE_COMPILE_ERROR:
    return "compile error";
  case NETVM_CCORE_REFUSED:
    return "refused";
  case NETVM_CCORE_RUN_ERROR:
    return "run error";
  }
  return "unknown status";
}

//===--- Messages ---------------------------------------------------------===//

netvm_ccore_status netvm_ccore_messages_create(netvm_ccore_messages **out) {
  NETVM_CCORE_REQUIRE(out, "out is NULL");
  *out = new netvm_ccore_messages();
  return NETVM_CCORE_OK;
}

void netvm_ccore_messages_free(netvm_ccore_messages *messages) {
  delete messages;
}

netvm_ccore_status netvm_ccore_messages_append(netvm_ccore_messages *messages,
                                               const void *bytes,
                                               size_t length) {
  NETVM_CCORE_REQUIRE(messages, "messages is NULL");
  NETVM_CCORE_REQUIRE(bytes || !length, "bytes is NULL");
  const auto *p = static_cast<const uint8_t *>(bytes);
  messages->list.emplace_back(p, p + length);
  return NETVM_CCORE_OK;
}

size_t netvm_ccore_messages_count(const netvm_ccore_messages *messages) {
  return messages ? messages->list.size() : 0;
}

netvm_ccore_status
netvm_ccore_messages_get(const netvm_ccore_messages *messages, size_t index,
                         const uint8_t **bytes, size_t *length) {
  NETVM_CCORE_REQUIRE(messages && bytes && length, "a NULL argument");
  if (index >= messages->list.size())
    return fail(NETVM_CCORE_NOT_FOUND,
                "netvm_ccore_messages_get: message " + std::to_string(index) +
                    " of " + std::to_string(messages->list.size()));
  *bytes = messages->list[index].data();
  *length = messages->list[index].size();
  return NETVM_CCORE_OK;
}

//===--- Schemas ----------------------------------------------------------===//

netvm_ccore_status netvm_ccore_schema_parse(const char *text, const char *file,
                                            netvm_ccore_schema **out) {
  NETVM_CCORE_REQUIRE(text && out, "text or out is NULL");
  *out = nullptr;
  std::string error;
  std::optional<cc::Schema> schema =
      cc::parseSchema(text, file ? file : "<schema>", error);
  if (!schema)
    return fail(NETVM_CCORE_PARSE_ERROR, error);
  *out = new netvm_ccore_schema{std::move(*schema)};
  return NETVM_CCORE_OK;
}

netvm_ccore_status netvm_ccore_schema_load(const char *path,
                                           netvm_ccore_schema **out) {
  NETVM_CCORE_REQUIRE(path && out, "path or out is NULL");
  *out = nullptr;
  std::string error;
  std::optional<cc::Schema> schema = cc::loadSchema(path, error);
  if (!schema)
    return fail(NETVM_CCORE_PARSE_ERROR, error);
  *out = new netvm_ccore_schema{std::move(*schema)};
  return NETVM_CCORE_OK;
}

void netvm_ccore_schema_free(netvm_ccore_schema *schema) { delete schema; }

netvm_ccore_status netvm_ccore_schema_generate(const netvm_ccore_schema *schema,
                                               const char *format,
                                               uint64_t count, uint64_t seed,
                                               const char *ranges,
                                               netvm_ccore_messages *out) {
  NETVM_CCORE_REQUIRE(schema && format && out, "a NULL argument");
  const cc::Format *f = schema->schema.format(format);
  if (!f)
    return fail(NETVM_CCORE_NOT_FOUND,
                "the schema has no format '" + std::string(format) + "'");
  cc::GenerateOptions options;
  options.count = count;
  options.seed = seed;
  std::string error;
  if (ranges && !parseRanges(*f, ranges, options, error))
    return fail(NETVM_CCORE_INVALID_ARGUMENT, error);
  for (std::vector<uint8_t> &m : cc::generateMessages(*f, options))
    out->list.push_back(std::move(m));
  return NETVM_CCORE_OK;
}

//===--- Channels ---------------------------------------------------------===//

netvm_ccore_status netvm_ccore_channels_create(const netvm_ccore_schema *schema,
                                               netvm_ccore_channels **out) {
  NETVM_CCORE_REQUIRE(schema && out, "schema or out is NULL");
  *out = new netvm_ccore_channels(schema->schema);
  return NETVM_CCORE_OK;
}

void netvm_ccore_channels_free(netvm_ccore_channels *channels) {
  delete channels;
}

netvm_ccore_status
netvm_ccore_channels_open(netvm_ccore_channels *channels, uint32_t stream,
                          const char *source, const char *destination,
                          uint16_t port, const char *format) {
  NETVM_CCORE_REQUIRE(channels && source && destination && format,
                      "a NULL argument");
  const cc::Format *f = channels->schema.format(format);
  if (!f)
    return fail(NETVM_CCORE_NOT_FOUND,
                "the schema has no format '" + std::string(format) + "'");
  cc::ChannelKey key{source, destination, port, f->id};
  std::string error;
  if (!channels->classifier.openChannel(key, error) ||
      !channels->classifier.openStream(stream, key, error))
    return fail(NETVM_CCORE_INVALID_ARGUMENT, error);
  return NETVM_CCORE_OK;
}

netvm_ccore_status netvm_ccore_channels_classify(netvm_ccore_channels *channels,
                                                 const void *bytes,
                                                 size_t length,
                                                 const char **verdict) {
  NETVM_CCORE_REQUIRE(channels && (bytes || !length) && verdict,
                      "a NULL argument");
  *verdict = cc::Classifier::verdictName(channels->classifier.classify(
      static_cast<const uint8_t *>(bytes), length));
  return NETVM_CCORE_OK;
}

netvm_ccore_status netvm_ccore_channels_take(netvm_ccore_channels *channels,
                                             const char *format,
                                             netvm_ccore_messages *out) {
  NETVM_CCORE_REQUIRE(channels && format && out, "a NULL argument");
  const cc::Format *f = channels->schema.format(format);
  auto *queue = f ? channels->classifier.queue(f->id) : nullptr;
  if (!queue)
    return fail(NETVM_CCORE_NOT_FOUND,
                "the schema has no format '" + std::string(format) + "'");
  for (std::vector<uint8_t> &m : *queue)
    out->list.push_back(std::move(m));
  queue->clear();
  return NETVM_CCORE_OK;
}

//===--- Chains -----------------------------------------------------------===//

netvm_ccore_status netvm_ccore_chain_create(const netvm_ccore_schema *schema,
                                            const char *me_query,
                                            netvm_ccore_chain **out) {
  NETVM_CCORE_REQUIRE(schema && me_query && out, "a NULL argument");
  auto *chain = new netvm_ccore_chain();
  chain->schema = &schema->schema;
  chain->meQuery = me_query;
  *out = chain;
  return NETVM_CCORE_OK;
}

void netvm_ccore_chain_free(netvm_ccore_chain *chain) { delete chain; }

/// A setting may change only before the chain is deployed.
#define NETVM_CCORE_REQUIRE_SETUP(chain)                                       \
  do {                                                                         \
    NETVM_CCORE_REQUIRE(chain, "chain is NULL");                               \
    NETVM_CCORE_REQUIRE(!(chain)->deployed, "the chain is already deployed");  \
  } while (false)

netvm_ccore_status netvm_ccore_chain_set_param(netvm_ccore_chain *chain,
                                               const char *name,
                                               uint32_t value) {
  NETVM_CCORE_REQUIRE_SETUP(chain);
  NETVM_CCORE_REQUIRE(name && *name, "name is NULL or empty");
  chain->params[name] = value;
  return NETVM_CCORE_OK;
}

netvm_ccore_status netvm_ccore_chain_set_host_query(netvm_ccore_chain *chain,
                                                    const char *query) {
  NETVM_CCORE_REQUIRE_SETUP(chain);
  chain->hostQuery =
      query ? std::optional<std::string>(query) : std::optional<std::string>();
  return NETVM_CCORE_OK;
}

netvm_ccore_status netvm_ccore_chain_set_specialized(netvm_ccore_chain *chain,
                                                     int specialized) {
  NETVM_CCORE_REQUIRE_SETUP(chain);
  chain->specialize = specialized != 0;
  return NETVM_CCORE_OK;
}

netvm_ccore_status netvm_ccore_chain_set_rate(netvm_ccore_chain *chain,
                                              double gbps) {
  NETVM_CCORE_REQUIRE_SETUP(chain);
  NETVM_CCORE_REQUIRE(gbps >= 0, "the rate must not be negative");
  chain->machine.lineRateGbps = gbps;
  return NETVM_CCORE_OK;
}

netvm_ccore_status netvm_ccore_chain_set_placement(netvm_ccore_chain *chain,
                                                   const char *placement,
                                                   unsigned busy_mes,
                                                   int keep_spare) {
  NETVM_CCORE_REQUIRE_SETUP(chain);
  llvm::StringRef p = placement ? placement : "";
  NETVM_CCORE_REQUIRE(p == "me" || p == "host" || p == "auto",
                      "the placement is \"me\", \"host\" or \"auto\"");
  chain->placement = p.str();
  chain->busyMEs = busy_mes;
  chain->keepSpare = keep_spare != 0;
  return NETVM_CCORE_OK;
}

netvm_ccore_status netvm_ccore_chain_deploy(netvm_ccore_chain *chain) {
  NETVM_CCORE_REQUIRE_SETUP(chain);
  std::string error;
  cc::HandlerApp app;
  if (!cc::emitHandlerApp(*chain->schema, &chain->meQuery, {},
                          chain->options(chain->specialize), app,
                          chain->queries, error))
    return fail(NETVM_CCORE_PARSE_ERROR, error);
  chain->onHost = chain->placement == "host";
  chain->reason = "asked for";
  if (chain->placement == "auto") {
    cc::PlacementRequest request;
    request.rateGbps = chain->machine.lineRateGbps;
    request.messageBytes = chain->queries.front().format->size;
    request.busyMEs = chain->busyMEs;
    request.keepSpare = chain->keepSpare;
    cc::Placement placed = cc::placeChain(app, request, chain->machine);
    if (placed.where == cc::Placement::Where::Refused)
      return fail(NETVM_CCORE_REFUSED,
                  "the chain is refused: " + placed.reason);
    chain->onHost = placed.where == cc::Placement::Where::Host;
    chain->reason = placed.reason;
  }
  if (chain->hostQuery) {
    cc::HandlerOptions options;
    options.specialize = true;
    options.name = "host_stage";
    std::vector<cc::Query> queries;
    cc::HandlerApp hostApp;
    if (!cc::emitHandlerApp(*chain->schema, &*chain->hostQuery, {}, options,
                            hostApp, queries, error))
      return fail(NETVM_CCORE_PARSE_ERROR, error);
    if (!(chain->host = cc::compileForHost(hostApp, error)))
      return fail(NETVM_CCORE_COMPILE_ERROR, error);
    chain->host->initialize();
  }
  if (chain->onHost) {
    if (!(chain->first = cc::compileForHost(app, error)))
      return fail(NETVM_CCORE_COMPILE_ERROR, error);
    chain->first->initialize();
  } else if (!cc::compileForME(app, chain->machine, chain->meStage, error)) {
    return fail(NETVM_CCORE_COMPILE_ERROR, error);
  }
  chain->deployed = true;
  return NETVM_CCORE_OK;
}

const char *netvm_ccore_chain_where(const netvm_ccore_chain *chain) {
  if (!chain || !chain->deployed)
    return "";
  return chain->onHost ? "host" : "me";
}

const char *netvm_ccore_chain_placement_reason(const netvm_ccore_chain *chain) {
  return chain && chain->deployed ? chain->reason.c_str() : "";
}

/// The handler manager's actions need a deployed chain on the MEs.
#define NETVM_CCORE_REQUIRE_ON_MES(chain)                                      \
  do {                                                                         \
    NETVM_CCORE_REQUIRE(chain, "chain is NULL");                               \
    NETVM_CCORE_REQUIRE((chain)->deployed, "the chain is not deployed");       \
    NETVM_CCORE_REQUIRE(!(chain)->onHost,                                      \
                        "the first stage runs on the host; swaps and "         \
                        "reconfigurations act on the MEs");                    \
  } while (false)

netvm_ccore_status netvm_ccore_chain_swap(netvm_ccore_chain *chain,
                                          const char *mode, uint64_t at_cycle) {
  NETVM_CCORE_REQUIRE_ON_MES(chain);
  llvm::StringRef m = mode ? mode : "";
  NETVM_CCORE_REQUIRE(m == "spare" || m == "in-place",
                      "the mode is \"spare\" or \"in-place\"");
  NETVM_CCORE_REQUIRE(!chain->control.autoSpecialize.enabled,
                      "automatic specialization makes its own swaps");
  cc::SwapRequest &swap = chain->control.swap;
  if (!chain->other) {
    std::string error;
    cc::HandlerApp app;
    std::vector<cc::Query> queries;
    auto other = std::make_unique<netvm::me::CompiledApp>();
    if (!cc::emitHandlerApp(*chain->schema, &chain->meQuery, {},
                            chain->options(!chain->specialize), app, queries,
                            error) ||
        !cc::compileForME(app, chain->machine, *other, error))
      return fail(NETVM_CCORE_COMPILE_ERROR, error);
    chain->other = std::move(other);
  }
  swap.mode = m == "spare" ? cc::SwapRequest::Mode::Spare
                           : cc::SwapRequest::Mode::InPlace;
  swap.atCycle = at_cycle;
  swap.next = chain->other.get();
  return NETVM_CCORE_OK;
}

netvm_ccore_status netvm_ccore_chain_reconfigure(netvm_ccore_chain *chain,
                                                 const char *name,
                                                 uint32_t value,
                                                 uint64_t at_cycle) {
  NETVM_CCORE_REQUIRE_ON_MES(chain);
  NETVM_CCORE_REQUIRE(name, "name is NULL");
  NETVM_CCORE_REQUIRE(!chain->specialize,
                      "a specialized handler has its parameters in its code "
                      "(reconfiguring needs the generic form)");
  std::string error;
  if (!cc::parameterChanges(chain->queries, name, value, at_cycle,
                            chain->control.params, error))
    return fail(NETVM_CCORE_NOT_FOUND, error);
  return NETVM_CCORE_OK;
}

netvm_ccore_status netvm_ccore_chain_auto_specialize(netvm_ccore_chain *chain,
                                                     double stable_us,
                                                     uint64_t stable_messages) {
  NETVM_CCORE_REQUIRE_ON_MES(chain);
  NETVM_CCORE_REQUIRE(stable_us >= 0, "stable_us must not be negative");
  NETVM_CCORE_REQUIRE(!chain->specialize && chain->control.swap.mode ==
                                                cc::SwapRequest::Mode::None,
                      "automatic specialization starts from the generic form "
                      "and makes its own swaps");
  cc::AutoSpecialize &a = chain->control.autoSpecialize;
  a.enabled = true;
  a.stableCycles = uint64_t(stable_us * chain->machine.clockMHz);
  a.stableMessages = stable_messages;
  a.parameters = chain->params;
  a.specialize = cc::specializerFor(*chain->schema, chain->meQuery, {},
                                    chain->options(false), chain->machine);
  return NETVM_CCORE_OK;
}

netvm_ccore_status netvm_ccore_chain_clear_control(netvm_ccore_chain *chain) {
  NETVM_CCORE_REQUIRE(chain, "chain is NULL");
  chain->control = cc::ChainControl();
  return NETVM_CCORE_OK;
}

netvm_ccore_status netvm_ccore_chain_run(netvm_ccore_chain *chain,
                                         const netvm_ccore_messages *messages,
                                         netvm_ccore_run **out) {
  NETVM_CCORE_REQUIRE(chain && messages && out, "a NULL argument");
  NETVM_CCORE_REQUIRE(chain->deployed, "the chain is not deployed");
  *out = nullptr;
  auto run = std::make_unique<netvm_ccore_run>();
  std::string error;
  cc::ResourceReport report;
  if (chain->onHost) {
    std::vector<netvm::rt::Engine *> stages = {chain->first.get()};
    if (chain->host)
      stages.push_back(chain->host.get());
    if (!cc::runHostChain(stages, messages->list, run->run, error))
      return fail(NETVM_CCORE_RUN_ERROR, error);
    report.messagesIn = messages->list.size();
    report.messagesOut = run->run.outputs.size();
    report.hostThreads.push_back({"chain", run->run.hostMessages,
                                  run->run.hostNanoseconds,
                                  run->run.hostCycles});
  } else {
    if (!cc::runChain(chain->meStage, chain->host.get(), messages->list,
                      chain->machine, chain->control, run->run, error))
      return fail(NETVM_CCORE_RUN_ERROR, error);
    report = cc::resourceReport(run->run, chain->meStage, chain->control,
                                chain->machine);
  }
  const cc::ChainRun &r = run->run;
  netvm_ccore_run_stats &s = run->stats;
  s.messages_in = messages->list.size();
  s.messages_out = r.outputs.size();
  s.receive_drops = r.stats.packetsDropped;
  s.me_runs = r.meRuns;
  s.me_sent = r.meSent;
  s.me_dropped = r.meDropped;
  s.host_dropped = r.hostDropped;
  s.cycles = r.cycles;
  s.micros = r.micros;
  s.swaps = report.swaps.size();
  s.last_downtime_cycles =
      report.swaps.empty() ? 0 : report.swaps.back().downtimeCycles;
  for (const cc::ParamReport &p : r.params)
    s.reconfigurations += p.done;
  run->report = cc::toJSON(report);
  run->outputs.list = r.outputs;
  *out = run.release();
  return NETVM_CCORE_OK;
}

void netvm_ccore_run_free(netvm_ccore_run *run) { delete run; }

netvm_ccore_status netvm_ccore_run_stats_get(const netvm_ccore_run *run,
                                             netvm_ccore_run_stats *stats) {
  NETVM_CCORE_REQUIRE(run && stats, "run or stats is NULL");
  *stats = run->stats;
  return NETVM_CCORE_OK;
}

netvm_ccore_status netvm_ccore_run_reconfiguration(const netvm_ccore_run *run,
                                                   size_t index,
                                                   uint64_t *messages_before) {
  NETVM_CCORE_REQUIRE(run && messages_before, "run or messages_before is NULL");
  const std::vector<cc::ParamReport> &params = run->run.params;
  if (index >= params.size() || !params[index].done)
    return fail(NETVM_CCORE_NOT_FOUND,
                "netvm_ccore_run_reconfiguration: no change " +
                    std::to_string(index) + " landed");
  *messages_before = params[index].messagesBefore;
  return NETVM_CCORE_OK;
}

const netvm_ccore_messages *
netvm_ccore_run_outputs(const netvm_ccore_run *run) {
  return run ? &run->outputs : nullptr;
}

const char *netvm_ccore_run_report(const netvm_ccore_run *run) {
  return run ? run->report.c_str() : "";
}

} // extern "C"
