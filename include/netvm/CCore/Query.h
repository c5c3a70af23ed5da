//===- Query.h - C-CORE handlers from a query form --------------*- C++ -*-===//
//
// The handlers of the C-CORE layer (docs/ccore.md) written as queries over a
// message format of a schema (netvm/ccore/Message.h):
//
//   from flight select price > $limit and gate == 12 project flightno, price
//
// `select` keeps the messages its predicate holds for and drops the rest;
// `project` makes a smaller message of the chosen fields (a format derived
// from the input's); `from FORMAT` alone relays every message of the
// format. A query compiles to one NetPE in NetIL text, which the
// usual pipeline turns into JIT code or an ME image, in one of two forms:
//
//  - generic: the fields' offsets, the message size, the format id and the
//    `$` parameters are read from data memory at run time (written by the
//    .init handler, and rewritable in place by a control plane), as a
//    handler that interprets a format description does;
//  - specialized: all of them are constants, so the SSA optimizer folds
//    them into the loads and compares (specialization by recompilation).
//
// No MLIR here: the text goes to the driver like any NetIL file.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_CCORE_QUERY_H
#define NETVM_CCORE_QUERY_H

#include "netvm/ccore/Message.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace netvm::ccore {

/// A predicate of a select.
struct Predicate {
  enum class Kind : uint8_t { Compare, And, Or, Not } kind = Kind::Compare;
  enum class Op : uint8_t { Eq, Ne, Lt, Le, Gt, Ge } op = Op::Eq;
  /// Compare: the field, and the constant or (nonempty) parameter name.
  std::string field;
  uint32_t constant = 0;
  std::string parameter;
  /// And, Or: both; Not: lhs.
  std::unique_ptr<Predicate> lhs, rhs;
};

/// A join of two streams (formats) on a key within a window:
///   join LEFT, RIGHT on LEFT.f == RIGHT.g within N project LEFT.a, RIGHT.b
/// Each arriving message of either format is kept in its side's window (its
/// last N messages: the key and the projected fields) and paired with every
/// message of the other side's window whose key is equal, oldest first;
/// each pair becomes one output message.
struct Join {
  const Format *right = nullptr;
  const Field *leftKey = nullptr, *rightKey = nullptr;
  uint32_t window = 0;
  /// The projected fields in output order; `fromRight` says whose.
  struct Item {
    bool fromRight = false;
    const Field *field = nullptr;
  };
  std::vector<Item> fields;
};

/// The largest window of a join (messages kept per side).
constexpr uint32_t maxJoinWindow = 256;

struct Query {
  /// The input's format (a join's left format).
  const Format *format = nullptr;
  /// A join (null for select and project).
  std::unique_ptr<Join> join;
  std::unique_ptr<Predicate> select; // null: every message
  std::vector<std::string> project;  // empty: the whole message
  /// The `$` parameters, in order of first use.
  std::vector<std::string> parameters;
  /// The fields the handler reads, in order of first use.
  std::vector<const Field *> reads;
  /// The original text, for comments in the NetIL.
  std::string text;
};

/// Parses a query over `schema`; `file` names the text in errors, which are
/// "file:line:col: error: message" lines (every one found, in `error`).
std::optional<Query> parseQuery(const std::string &text,
                                const std::string &file, const Schema &schema,
                                std::string &error);

/// The format of a projection's output: the projected fields packed after
/// the header, in the query's order, with id `id`. A join's fields are
/// named "format.field".
Format projectedFormat(const Query &query, uint16_t id);

struct HandlerOptions {
  /// Constants (specialized) or data memory (generic).
  bool specialize = false;
  /// The value of each `$` parameter (a missing one is an error).
  std::map<std::string, uint32_t> parameters;
  /// The id of a projection's output format (0: the input's id | 0x8000;
  /// a join's: the left format's id | 0x4000).
  uint16_t projectId = 0;
  /// The NetPE's name.
  std::string name = "handler";
  /// The stream id the handler's output carries (0: the input's): a
  /// multicast subscriber's channel.
  uint32_t outStream = 0;
};

/// The NetIL text of the handler: one NetPE, push port `in`, push port
/// `out`; messages that do not pass (or are shorter than the format, or of
/// another format id) are dropped. False with `error` if a parameter has no
/// value or a projection is larger than maxProjectBytes.
bool emitNetIL(const Query &query, const HandlerOptions &options,
               std::string &netil, std::string &error);

/// A subscriber of a multicast: its own query (its handler) and the
/// stream id of its channel, which its copies carry.
struct Subscriber {
  std::string query;
  uint32_t stream = 0;
};

/// An application of several handlers: its .nvapp text and the NetIL
/// files it names (file name, text), all in memory.
struct HandlerApp {
  std::string name;
  std::string nvapp;
  std::vector<std::pair<std::string, std::string>> files;
  /// On the MEs: the NetPEs in pipeline order, one ME stage each (a
  /// pipeline of handlers, emitPipeline); empty: the default layout, every
  /// NetPE on one handler ME.
  std::vector<std::string> stages;
};

/// Application-level multicast: one handler NetPE per subscriber
/// (`options.name`_1, _2, ...), every one fed by the source `in` (fan-out:
/// each gets its own copy of every message, in subscriber order) and all
/// sending to the sink `out`. `queries` gets the parsed queries
/// (subscriber order); errors name the subscriber ("<subscriber 2>:1:6").
bool emitMulticast(const Schema &schema,
                   const std::vector<Subscriber> &subscribers,
                   const HandlerOptions &options, HandlerApp &app,
                   std::vector<Query> &queries, std::string &error);

/// The handlers of a chain's first stage in one of its forms: one query
/// (`query`, named "<query>" in errors; one NetPE `options.name`) or, if
/// `query` is null, a multicast of `subscribers`. `queries` gets the parsed
/// queries in NetPE order.
bool emitHandlerApp(const Schema &schema, const std::string *query,
                    const std::vector<Subscriber> &subscribers,
                    const HandlerOptions &options, HandlerApp &app,
                    std::vector<Query> &queries, std::string &error);

/// A chain of handlers in sequence (docs/ccore.md, "Pipelines of ME
/// stages"): NetPE `options.name`_1 takes the source `in`, each sends to
/// the next, the last to the sink `out`. Each query must read the format
/// the one before it sends (a select passes its input's, a project its
/// projected format, whose id must be a format of the schema to be read
/// on); joins are refused. With `pipeline` the app's `stages` put each
/// handler on its own ME stage; without, they run in sequence on one ME.
/// Errors name the handler ("<me-query 2>:1:6").
bool emitPipeline(const Schema &schema, const std::vector<std::string> &texts,
                  const HandlerOptions &options, bool pipeline, HandlerApp &app,
                  std::vector<Query> &queries, std::string &error);

/// The queries of 'Q1 | Q2 | ...' (a pipeline's text, as `netvm-ccore
/// place --add` and Python take it), each trimmed; one without '|'.
std::vector<std::string> splitQueries(const std::string &text);

/// Projected fields' bytes a handler may produce (they pass through the
/// stack, in registers on an ME).
constexpr uint32_t maxProjectBytes = 64;

/// Data memory of a generic handler: word i the offset of query.reads[i],
/// then the message size, the format id and the parameters in order. A
/// control plane rewrites a parameter in place at parameterAddress.
uint32_t parameterAddress(const Query &query, const std::string &parameter);
std::vector<uint8_t> genericDataMemory(const Query &query,
                                       const HandlerOptions &options);

} // namespace netvm::ccore

#endif // NETVM_CCORE_QUERY_H
