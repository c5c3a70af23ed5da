//===- Interpreter.cpp - The reference interpreter of netvm
//-------------------===//
//
// Walks the IR of handlers directly: every SSA value gets a slot in a
// per-invocation array, operations are dispatched by kind, branches copy
// their operands into the successor's block arguments. Exchange buffers are
// owned objects moved along the NetPE graph; a fan-out clones them.
//
//===----------------------------------------------------------------------===//

#include "netvm/Interpreter/Interpreter.h"

#include "NetVM/NetVMOps.h"
#include "NetVM/Semantics.h"
#include "netvm/coprocessor.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace netvm;
using namespace netvm::interp;

namespace {

/// An exchange buffer. After exbuf.delete, or a pkt.receive that got
/// nothing, there is no current exchange buffer: `none` is set and the
/// packet and info memories are empty, so accesses raise bounds exceptions
/// (the same cheap check native code does) and sending raises no_exbuf.
struct ExBuf {
  std::vector<uint8_t> packet, info;
  uint32_t seconds = 0, microseconds = 0;
  uint32_t wireLength = 0; // length on the wire (>= packet.size())
  bool none = false;
  void clear() {
    packet.clear();
    info.clear();
    seconds = microseconds = wireLength = 0;
    none = true;
  }
};
using ExBufPtr = std::unique_ptr<ExBuf>;

/// One end of a connection.
struct Endpoint {
  enum Kind { Source, Sink, Port } kind;
  unsigned index; // source/sink number, or NetPE number
  unsigned port;  // port number, for Port
};

/// The largest packet an exchange buffer may hold (as the native runtime).
constexpr uint64_t kMaxPacketSize = 65536;

/// Slot numbering of the SSA values of one handler.
struct HandlerCode {
  DenseMap<Value, unsigned> slots;
  unsigned numSlots = 0;
};

/// Owns a coprocessor instance of the C runtime.
struct CoproDeleter {
  void operator()(netvm_copro *c) const { netvm_copro_destroy(c); }
};
using CoproPtr = std::unique_ptr<netvm_copro, CoproDeleter>;

struct PEState {
  PEState() = default;
  PEState(PEState &&) = default;
  PEState(const PEState &) = delete;

  PEOp op;
  std::string name;
  std::vector<uint8_t> data, initdata;
  std::vector<CoproPtr> coprocessors;
  SmallVector<PortOp, 4> ports;
  HandlerOp handlers[3];
  uint32_t random = sem::kRandomSeed;
  PECounters counters;
};

/// How a handler invocation ended.
struct HandlerExit {
  enum Kind { Send, Drop, Ret, Raised } kind;
  unsigned port = 0; // Send
};

} // namespace

struct Interpreter::Impl {
  Options options;
  ApplicationOp app;
  std::vector<PEState> pes;
  std::vector<std::string> peNames, sourceNames, sinkNames;
  std::vector<uint8_t> shared;
  uint32_t infoSize = 0;
  DenseMap<Operation *, HandlerCode> code;
  /// Push destinations of sources and NetPE output ports, in connection
  /// order.
  std::vector<std::vector<Endpoint>> sourceDests;
  std::map<std::pair<unsigned, unsigned>, std::vector<Endpoint>> portDests;
  /// Upstream of pull input ports and of sinks fed by pull connections.
  std::map<std::pair<unsigned, unsigned>, Endpoint> pullUpstream;
  std::vector<std::optional<Endpoint>> sinkPullUpstream;
  std::function<std::optional<Packet>(unsigned)> sourcePuller;

  /// Loop iterations (netvm.watchdog) the current packet may still run, and
  /// a safety net on operations for IR that has no watchdogs.
  uint64_t budgetLeft = 0;
  uint64_t opsLeft = 0;
  uint64_t totalOps = 0;
  /// Executions of each block (a profile), when asked for.
  llvm::DenseMap<mlir::Block *, uint64_t> *blockCounts = nullptr;
  void resetBudget() {
    budgetLeft = options.watchdogBudget;
    opsLeft = options.watchdogBudget * 256 + (1u << 20);
  }

  // Delivery along the graph.
  void deliver(unsigned pe, unsigned port, ExBufPtr xb, Result &result);
  void enter(const Endpoint &dest, ExBufPtr xb, Result &result);
  ExBufPtr pullFrom(const Endpoint &upstream, Result &result);
  HandlerExit run(unsigned pe, HandlerOp handler, ExBufPtr &xb,
                  uint32_t portArg, Result &result);
  const HandlerCode &codeFor(HandlerOp handler);
  ExBufPtr makeExBuf(const Packet &packet, llvm::ArrayRef<uint8_t> info = {}) {
    auto xb = std::make_unique<ExBuf>();
    xb->packet = packet.bytes;
    xb->wireLength = std::max<uint32_t>(packet.wireLength, xb->packet.size());
    xb->info.assign(infoSize, 0);
    std::copy_n(info.begin(), std::min<size_t>(info.size(), infoSize),
                xb->info.begin());
    xb->seconds = packet.seconds;
    xb->microseconds = packet.microseconds;
    return xb;
  }
};

Interpreter::Interpreter(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
Interpreter::~Interpreter() = default;

std::unique_ptr<Interpreter> Interpreter::create(ApplicationOp app,
                                                 const Options &options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->app = app;
  impl->infoSize = options.defaultInfoSize;
  uint32_t sharedSize = 0;
  DenseMap<Operation *, unsigned> peIndex, sourceIndex, sinkIndex;

  for (Operation &op : *app.getBodyBlock()) {
    if (auto source = dyn_cast<SourceOp>(op)) {
      sourceIndex[source] = impl->sourceNames.size();
      impl->sourceNames.push_back(source.getSymName().str());
    } else if (auto sink = dyn_cast<SinkOp>(op)) {
      sinkIndex[sink] = impl->sinkNames.size();
      impl->sinkNames.push_back(sink.getSymName().str());
    } else if (auto pe = dyn_cast<PEOp>(op)) {
      peIndex[pe] = impl->pes.size();
      PEState state;
      state.op = pe;
      state.name = pe.getSymName().str();
      state.data.assign(pe.getDatamemSize(), 0);
      if (auto init = pe.getInitdata())
        state.initdata.assign(init->begin(), init->end());
      state.ports = pe.getPorts();
      for (HandlerOp h : pe.getBodyBlock()->getOps<HandlerOp>())
        state.handlers[static_cast<unsigned>(h.getKind())] = h;
      for (Attribute attr : pe.getCoprocessors()) {
        StringRef name = cast<StringAttr>(attr).getValue();
        CoproPtr copro(netvm_copro_create(name.str().c_str()));
        if (!copro) {
          std::string available;
          for (const char *const *n = netvm_copro_names(); *n; ++n)
            available += (available.empty() ? "" : ", ") + std::string(*n);
          pe.emitError("NetPE @")
              << pe.getSymName() << " uses coprocessor '" << name
              << "', which netvm does not provide (available: " << available
              << ")";
          return nullptr;
        }
        state.coprocessors.push_back(std::move(copro));
      }
      impl->infoSize = std::max<uint32_t>(impl->infoSize, pe.getInfoSize());
      sharedSize = std::max<uint32_t>(sharedSize, pe.getSharedmemSize());
      impl->peNames.push_back(state.name);
      impl->pes.push_back(std::move(state));
      WalkResult walk = pe.walk([&](Operation *inner) {
        if (isa<PEOp, PortOp, HandlerOp>(inner) || isExecutableOp(inner))
          return WalkResult::advance();
        inner->emitError("the reference interpreter cannot execute '")
            << inner->getName() << "'";
        return WalkResult::interrupt();
      });
      if (walk.wasInterrupted())
        return nullptr;
    }
  }
  impl->shared.assign(sharedSize, 0);
  impl->sourceDests.resize(impl->sourceNames.size());
  impl->sinkPullUpstream.resize(impl->sinkNames.size());

  auto resolve = [&](SymbolRefAttr ref) -> Endpoint {
    Operation *root = app.lookupSymbol(ref.getRootReference());
    if (auto pe = dyn_cast<PEOp>(root)) {
      PortOp port = pe.lookupPort(ref.getLeafReference());
      return {Endpoint::Port, peIndex[pe], pe.getPortNumber(port)};
    }
    if (isa<SourceOp>(root))
      return {Endpoint::Source, sourceIndex[root], 0};
    return {Endpoint::Sink, sinkIndex[root], 0};
  };
  for (ConnectOp conn : app.getBodyBlock()->getOps<ConnectOp>()) {
    Endpoint from = resolve(conn.getFrom()), to = resolve(conn.getTo());
    bool pull = false;
    if (from.kind == Endpoint::Port)
      pull = impl->pes[from.index].ports[from.port].getKind() ==
             PortKind::PullOutput;
    if (to.kind == Endpoint::Port)
      pull =
          impl->pes[to.index].ports[to.port].getKind() == PortKind::PullInput;
    if (pull) {
      if (to.kind == Endpoint::Port)
        impl->pullUpstream[{to.index, to.port}] = from;
      else if (!impl->sinkPullUpstream[to.index])
        impl->sinkPullUpstream[to.index] = from;
      continue;
    }
    if (from.kind == Endpoint::Source)
      impl->sourceDests[from.index].push_back(to);
    else
      impl->portDests[{from.index, from.port}].push_back(to);
  }
  return std::unique_ptr<Interpreter>(new Interpreter(std::move(impl)));
}

const HandlerCode &Interpreter::Impl::codeFor(HandlerOp handler) {
  auto it = code.find(handler);
  if (it != code.end())
    return it->second;
  HandlerCode &c = code[handler];
  for (Block &block : handler.getBody()) {
    for (BlockArgument arg : block.getArguments())
      c.slots[arg] = c.numSlots++;
    for (Operation &op : block)
      for (Value result : op.getResults())
        c.slots[result] = c.numSlots++;
  }
  return c;
}

//===----------------------------------------------------------------------===//
// Graph traversal
//===----------------------------------------------------------------------===//

void Interpreter::Impl::deliver(unsigned pe, unsigned port, ExBufPtr xb,
                                Result &result) {
  auto it = portDests.find({pe, port});
  if (it == portDests.end() || it->second.empty()) {
    ++result.unconnected;
    return;
  }
  const std::vector<Endpoint> &dests = it->second;
  for (size_t i = 0; i < dests.size(); ++i) {
    // Each destination gets its own copy; the last one gets the original.
    ExBufPtr buf =
        i + 1 == dests.size() ? std::move(xb) : std::make_unique<ExBuf>(*xb);
    enter(dests[i], std::move(buf), result);
  }
}

void Interpreter::Impl::enter(const Endpoint &dest, ExBufPtr xb,
                              Result &result) {
  if (dest.kind == Endpoint::Sink) {
    Output out;
    out.sink = dest.index;
    out.length = static_cast<uint32_t>(xb->packet.size());
    out.wireLength = xb->wireLength;
    out.bytes = std::move(xb->packet);
    out.info = std::move(xb->info);
    out.seconds = xb->seconds;
    out.microseconds = xb->microseconds;
    result.outputs.push_back(std::move(out));
    return;
  }
  PEState &pe = pes[dest.index];
  HandlerOp handler = pe.handlers[static_cast<unsigned>(HandlerKind::Push)];
  HandlerExit exit = run(dest.index, handler, xb, dest.port, result);
  switch (exit.kind) {
  case HandlerExit::Send:
    deliver(dest.index, exit.port, std::move(xb), result);
    break;
  case HandlerExit::Drop:
  case HandlerExit::Ret:
    ++result.drops;
    break;
  case HandlerExit::Raised:
    break;
  }
}

ExBufPtr Interpreter::Impl::pullFrom(const Endpoint &upstream, Result &result) {
  if (upstream.kind == Endpoint::Source) {
    if (!sourcePuller)
      return nullptr;
    std::optional<Packet> packet = sourcePuller(upstream.index);
    return packet ? makeExBuf(*packet) : nullptr;
  }
  PEState &pe = pes[upstream.index];
  HandlerOp handler = pe.handlers[static_cast<unsigned>(HandlerKind::Pull)];
  ExBufPtr xb = std::make_unique<ExBuf>();
  xb->clear();
  HandlerExit exit = run(upstream.index, handler, xb, upstream.port, result);
  switch (exit.kind) {
  case HandlerExit::Ret:
    return xb->none ? nullptr : std::move(xb);
  case HandlerExit::Send:
    deliver(upstream.index, exit.port, std::move(xb), result);
    return nullptr;
  case HandlerExit::Drop:
  case HandlerExit::Raised:
    return nullptr;
  }
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Handler execution
//===----------------------------------------------------------------------===//

static uint64_t maskTo(uint64_t v, unsigned bits) {
  return bits >= 64 ? v : v & ((uint64_t(1) << bits) - 1);
}
static int64_t signExtend(uint64_t v, unsigned bits) {
  if (bits >= 64)
    return static_cast<int64_t>(v);
  uint64_t sign = uint64_t(1) << (bits - 1);
  v = maskTo(v, bits);
  return static_cast<int64_t>((v ^ sign) - sign);
}
static unsigned bitsOf(Type t) { return t.getIntOrFloatBitWidth(); }

HandlerExit Interpreter::Impl::run(unsigned peIdx, HandlerOp handler,
                                   ExBufPtr &xb, uint32_t portArg,
                                   Result &result) {
  PEState &pe = pes[peIdx];
  ++pe.counters.runs;
  const HandlerCode &hc = codeFor(handler);
  std::vector<uint64_t> vals(hc.numSlots, 0);
  auto get = [&](Value v) { return vals[hc.slots.lookup(v)]; };
  auto set = [&](Value v, uint64_t x) {
    vals[hc.slots.lookup(v)] = maskTo(x, bitsOf(v.getType()));
  };
  if (Value port = handler.getPortArgument())
    set(port, portArg);

  std::optional<HandlerExit> exit;
  auto raise = [&](Operation *op, ExceptionKind kind, std::string detail) {
    result.exceptions.push_back(
        {static_cast<uint32_t>(kind), static_cast<int>(peIdx),
         static_cast<uint32_t>(handler.getKind()), locationString(op->getLoc()),
         std::move(detail)});
    ++pe.counters.exceptions;
    for (CoproPtr &copro : pe.coprocessors)
      netvm_copro_abandon(copro.get());
    exit = HandlerExit{HandlerExit::Raised};
  };
  // Bounds-checked access to a memory space; null after raising.
  auto memory = [&](Operation *op, MemSpace space, uint64_t offset,
                    uint64_t length) -> uint8_t * {
    std::vector<uint8_t> *mem = nullptr;
    switch (space) {
    case MemSpace::Packet:
    case MemSpace::Info:
      mem = space == MemSpace::Packet ? &xb->packet : &xb->info;
      break;
    case MemSpace::Data:
      mem = &pe.data;
      break;
    case MemSpace::Shared:
      mem = &shared;
      break;
    case MemSpace::InitData:
      mem = &pe.initdata;
      break;
    }
    if (offset + length > mem->size()) {
      std::string detail;
      llvm::raw_string_ostream os(detail);
      os << stringifyMemSpace(space) << " access to bytes [" << offset << ", "
         << offset + length << ") but the " << stringifyMemSpace(space)
         << " memory holds " << mem->size() << " bytes";
      raise(op, boundsExceptionFor(space), detail);
      return nullptr;
    }
    // A zero-length access at the very end is valid; never dereference.
    return mem->data() + offset;
  };
  auto coprocessor = [&](Operation *op, StringRef name) -> netvm_copro * {
    int index = pe.op.getCoprocessorIndex(name);
    return pe.coprocessors[index].get();
  };
  auto coproFailed = [&](Operation *op, netvm_copro *c) {
    raise(op, ExceptionKind::Coprocessor,
          std::string(netvm_copro_name(c)) + ": " + netvm_copro_error(c));
  };

  // Counts a live exchange buffer thrown away (exbuf.delete, or replaced by
  // pkt.receive) as a drop.
  auto discard = [&]() {
    if (xb->none)
      return;
    ++pe.counters.dropped;
    ++result.drops;
  };

  Block *block = &handler.getBody().front();
  Block::iterator ip = block->begin();
  if (blockCounts)
    ++(*blockCounts)[block];
  // Jump to `dest`, assigning its arguments from `operands` (all read
  // before any is written).
  auto branch = [&](Block *dest, OperandRange operands) {
    SmallVector<uint64_t, 8> incoming;
    for (Value v : operands)
      incoming.push_back(get(v));
    for (auto [arg, v] : llvm::zip(dest->getArguments(), incoming))
      set(arg, v);
    block = dest;
    ip = block->begin();
    if (blockCounts)
      ++(*blockCounts)[block];
  };

  while (!exit) {
    Operation *op = &*ip++;
    ++totalOps;
    if (opsLeft == 0) {
      raise(op, ExceptionKind::Watchdog,
            "the packet exceeded the interpreter's operation limit (the IR "
            "has no netvm.watchdog to count loop iterations)");
      break;
    }
    --opsLeft;

    llvm::TypeSwitch<Operation *>(op)
        // Constants and integer arithmetic.
        .Case([&](arith::ConstantOp c) {
          set(c, cast<IntegerAttr>(c.getValue()).getValue().getZExtValue());
        })
        .Case(
            [&](arith::AddIOp o) { set(o, get(o.getLhs()) + get(o.getRhs())); })
        .Case(
            [&](arith::SubIOp o) { set(o, get(o.getLhs()) - get(o.getRhs())); })
        .Case(
            [&](arith::MulIOp o) { set(o, get(o.getLhs()) * get(o.getRhs())); })
        .Case([&](arith::DivUIOp o) {
          uint64_t d = get(o.getRhs());
          set(o, d ? get(o.getLhs()) / d : 0);
        })
        .Case([&](arith::RemUIOp o) {
          uint64_t d = get(o.getRhs());
          set(o, d ? get(o.getLhs()) % d : 0);
        })
        .Case([&](arith::DivSIOp o) {
          unsigned w = bitsOf(o.getType());
          int64_t a = signExtend(get(o.getLhs()), w),
                  d = signExtend(get(o.getRhs()), w);
          set(o, d == 0 || (d == -1 && a == INT64_MIN) ? 0 : a / d);
        })
        .Case([&](arith::RemSIOp o) {
          unsigned w = bitsOf(o.getType());
          int64_t a = signExtend(get(o.getLhs()), w),
                  d = signExtend(get(o.getRhs()), w);
          set(o, d == 0 || d == -1 ? 0 : a % d);
        })
        .Case(
            [&](arith::AndIOp o) { set(o, get(o.getLhs()) & get(o.getRhs())); })
        .Case(
            [&](arith::OrIOp o) { set(o, get(o.getLhs()) | get(o.getRhs())); })
        .Case(
            [&](arith::XOrIOp o) { set(o, get(o.getLhs()) ^ get(o.getRhs())); })
        .Case([&](arith::ShLIOp o) {
          uint64_t n = get(o.getRhs());
          set(o, n >= bitsOf(o.getType()) ? 0 : get(o.getLhs()) << n);
        })
        .Case([&](arith::ShRUIOp o) {
          uint64_t n = get(o.getRhs());
          set(o, n >= bitsOf(o.getType()) ? 0 : get(o.getLhs()) >> n);
        })
        .Case([&](arith::ShRSIOp o) {
          unsigned w = bitsOf(o.getType());
          uint64_t n = std::min<uint64_t>(get(o.getRhs()), w - 1);
          set(o, static_cast<uint64_t>(signExtend(get(o.getLhs()), w) >> n));
        })
        .Case([&](arith::MaxUIOp o) {
          set(o, std::max(get(o.getLhs()), get(o.getRhs())));
        })
        .Case([&](arith::MinUIOp o) {
          set(o, std::min(get(o.getLhs()), get(o.getRhs())));
        })
        .Case([&](arith::MaxSIOp o) {
          unsigned w = bitsOf(o.getType());
          set(o,
              static_cast<uint64_t>(std::max(signExtend(get(o.getLhs()), w),
                                             signExtend(get(o.getRhs()), w))));
        })
        .Case([&](arith::MinSIOp o) {
          unsigned w = bitsOf(o.getType());
          set(o,
              static_cast<uint64_t>(std::min(signExtend(get(o.getLhs()), w),
                                             signExtend(get(o.getRhs()), w))));
        })
        .Case([&](arith::CmpIOp o) {
          unsigned w = bitsOf(o.getLhs().getType());
          uint64_t a = get(o.getLhs()), b = get(o.getRhs());
          int64_t sa = signExtend(a, w), sb = signExtend(b, w);
          bool r = false;
          switch (o.getPredicate()) {
          case arith::CmpIPredicate::eq:
            r = a == b;
            break;
          case arith::CmpIPredicate::ne:
            r = a != b;
            break;
          case arith::CmpIPredicate::ult:
            r = a < b;
            break;
          case arith::CmpIPredicate::ule:
            r = a <= b;
            break;
          case arith::CmpIPredicate::ugt:
            r = a > b;
            break;
          case arith::CmpIPredicate::uge:
            r = a >= b;
            break;
          case arith::CmpIPredicate::slt:
            r = sa < sb;
            break;
          case arith::CmpIPredicate::sle:
            r = sa <= sb;
            break;
          case arith::CmpIPredicate::sgt:
            r = sa > sb;
            break;
          case arith::CmpIPredicate::sge:
            r = sa >= sb;
            break;
          }
          set(o, r);
        })
        .Case([&](arith::SelectOp o) {
          set(o, get(o.getCondition()) ? get(o.getTrueValue())
                                       : get(o.getFalseValue()));
        })
        .Case([&](arith::ExtUIOp o) { set(o, get(o.getIn())); })
        .Case([&](arith::ExtSIOp o) {
          set(o, static_cast<uint64_t>(
                     signExtend(get(o.getIn()), bitsOf(o.getIn().getType()))));
        })
        .Case([&](arith::TruncIOp o) { set(o, get(o.getIn())); })
        .Case([&](math::CountLeadingZerosOp o) {
          unsigned w = bitsOf(o.getType());
          uint64_t v = get(o.getOperand());
          unsigned n = 0;
          for (int bit = w - 1; bit >= 0 && !((v >> bit) & 1); --bit)
            ++n;
          set(o, n);
        })
        // Control flow.
        .Case([&](cf::BranchOp o) { branch(o.getDest(), o.getDestOperands()); })
        .Case([&](cf::CondBranchOp o) {
          if (get(o.getCondition()))
            branch(o.getTrueDest(), o.getTrueDestOperands());
          else
            branch(o.getFalseDest(), o.getFalseDestOperands());
        })
        .Case([&](cf::SwitchOp o) {
          uint64_t v = get(o.getFlag());
          if (auto values = o.getCaseValues()) {
            unsigned i = 0;
            for (APInt c : values->getValues<APInt>()) {
              if (maskTo(c.getZExtValue(), c.getBitWidth()) == v) {
                branch(o.getCaseDestinations()[i], o.getCaseOperands(i));
                return;
              }
              ++i;
            }
          }
          branch(o.getDefaultDestination(), o.getDefaultOperands());
        })
        .Case([&](WatchdogOp o) {
          if (budgetLeft == 0)
            return raise(o, ExceptionKind::Watchdog,
                         "the packet used up its watchdog budget of " +
                             std::to_string(options.watchdogBudget) +
                             " loop iterations");
          --budgetLeft;
        })
        .Case([&](SendOp o) {
          if (xb->none) {
            raise(o, ExceptionKind::NoExchangeBuffer,
                  "pkt.send without a current exchange buffer");
            return;
          }
          ++pe.counters.sent;
          exit =
              HandlerExit{HandlerExit::Send,
                          pe.op.getPortNumber(pe.op.lookupPort(o.getPort()))};
        })
        .Case([&](DropOp) {
          ++pe.counters.dropped;
          exit = HandlerExit{HandlerExit::Drop};
        })
        .Case([&](RetOp) { exit = HandlerExit{HandlerExit::Ret}; })
        .Case([&](TrapOp o) { raise(o, o.getKind(), ""); })
        .Case([&](CheckBoundsOp o) {
          uint64_t extent = o.getLength() ? get(o.getLength()) : o.getExtent();
          memory(o, o.getSpace(), get(o.getOffset()), extent);
        })
        .Case([&](CheckOp o) {
          if (!get(o.getCondition()))
            raise(o, o.getKind(), "check failed");
        })
        // Memory.
        .Case([&](LoadOp o) {
          unsigned bytes = bitsOf(o.getType()) / 8;
          uint8_t *p = memory(o, o.getSpace(), get(o.getOffset()), bytes);
          if (!p)
            return;
          uint64_t v = 0;
          bool little = o.getLittleEndian();
          for (unsigned i = 0; i < bytes; ++i)
            v = (v << 8) | p[little ? bytes - 1 - i : i];
          set(o, v);
        })
        .Case([&](StoreOp o) {
          unsigned bytes = bitsOf(o.getValue().getType()) / 8;
          uint8_t *p = memory(o, o.getSpace(), get(o.getOffset()), bytes);
          if (!p)
            return;
          uint64_t v = get(o.getValue());
          for (unsigned i = 0; i < bytes; ++i)
            p[i] = static_cast<uint8_t>(v >> (8 * (bytes - 1 - i)));
        })
        .Case([&](AtomicAddOp o) {
          uint8_t *p = memory(o, o.getSpace(), get(o.getOffset()), 4);
          if (!p)
            return;
          uint32_t v = uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 |
                       uint32_t(p[2]) << 8 | p[3];
          v += static_cast<uint32_t>(get(o.getValue()));
          for (unsigned i = 0; i < 4; ++i)
            p[i] = static_cast<uint8_t>(v >> (8 * (3 - i)));
        })
        .Case([&](CopyOp o) {
          uint64_t len = get(o.getLength());
          uint8_t *src = memory(o, o.getSrcSpace(), get(o.getSrc()), len);
          if (!src)
            return;
          uint8_t *dst = memory(o, o.getDstSpace(), get(o.getDst()), len);
          if (!dst)
            return;
          std::memmove(dst, src, len);
        })
        .Case([&](PacketLengthOp o) { set(o, xb->packet.size()); })
        .Case([&](WireLengthOp o) { set(o, xb->wireLength); })
        .Case([&](InfoLengthOp o) { set(o, xb->info.size()); })
        .Case([&](InfoClearOp o) {
          std::fill(xb->info.begin(), xb->info.end(), 0);
        })
        .Case([&](TimestampOp o) {
          set(o, o.getUnit() == TimeUnit::Seconds ? xb->seconds
                                                  : xb->microseconds);
        })
        .Case([&](RandomOp o) { set(o, sem::nextRandom(pe.random)); })
        // Computation.
        .Case([&](ByteSwapOp o) { set(o, sem::byteSwap(get(o.getInput()))); })
        .Case([&](FindBitOp o) { set(o, sem::findBit(get(o.getInput()))); })
        .Case([&](BitOp o) {
          set(o, sem::bitOp(o.getKind(), get(o.getInput()), get(o.getIndex())));
        })
        .Case([&](HashOp o) {
          SmallVector<uint32_t> words;
          for (Value v : o.getInputs())
            words.push_back(get(v));
          set(o, sem::hashWords(words));
        })
        .Case([&](ChecksumOp o) {
          uint64_t len = get(o.getLength());
          uint8_t *p = memory(o, MemSpace::Packet, get(o.getOffset()), len);
          if (p)
            set(o, sem::checksum(p, len));
        })
        .Case([&](ChecksumAddOp o) {
          set(o, sem::checksumAdd(get(o.getSum()), get(o.getValue())));
        })
        .Case([&](ChecksumSubOp o) {
          set(o, sem::checksumSub(get(o.getSum()), get(o.getValue())));
        })
        .Case([&](CrcOp o) {
          set(o, sem::crcWord(o.getKind(), get(o.getInput())));
        })
        .Case([&](PacketCrcOp o) {
          uint64_t len = get(o.getLength());
          uint8_t *p = memory(o, MemSpace::Packet, get(o.getOffset()), len);
          if (p)
            set(o, sem::crc(o.getKind(), p, len));
        })
        .Case([&](FieldCmpOp o) {
          uint64_t len = get(o.getLength());
          uint8_t *a = memory(o, MemSpace::Packet, get(o.getLhs()), len);
          if (!a)
            return;
          uint8_t *b = memory(o, MemSpace::Packet, get(o.getRhs()), len);
          if (!b)
            return;
          int c = len ? std::memcmp(a, b, len) : 0;
          bool r = false;
          switch (o.getKind()) {
          case FieldCmpKind::Eq:
            r = c == 0;
            break;
          case FieldCmpKind::Ne:
            r = c != 0;
            break;
          case FieldCmpKind::Lt:
            r = c < 0;
            break;
          case FieldCmpKind::Gt:
            r = c > 0;
            break;
          }
          set(o, r);
        })
        .Case([&](PacketScanOp o) {
          uint64_t start = get(o.getOffset());
          // The start must lie inside the packet (NetBee checks one byte).
          if (!memory(o, MemSpace::Packet, start, 1))
            return;
          unsigned width = bitsOf(o.getValue().getType()) / 8;
          uint64_t needle = get(o.getValue());
          const std::vector<uint8_t> &pkt = xb->packet;
          uint64_t found = 0xFFFFFFFFu;
          for (uint64_t at = start; at + width <= pkt.size(); ++at) {
            uint64_t v = 0;
            for (unsigned i = 0; i < width; ++i)
              v = (v << 8) | pkt[at + i];
            if (v == needle) {
              found = at;
              break;
            }
          }
          set(o, found);
        })
        // Exchange buffers and ports.
        .Case([&](SendDupOp o) {
          if (xb->none)
            return raise(o, ExceptionKind::NoExchangeBuffer,
                         "pkt.senddup without a current exchange buffer");
          ++pe.counters.sent;
          deliver(peIdx, pe.op.getPortNumber(pe.op.lookupPort(o.getPort())),
                  std::make_unique<ExBuf>(*xb), result);
        })
        .Case([&](ReceiveOp o) {
          discard();
          unsigned port = pe.op.getPortNumber(pe.op.lookupPort(o.getPort()));
          auto it = pullUpstream.find({peIdx, port});
          ExBufPtr pulled =
              it == pullUpstream.end() ? nullptr : pullFrom(it->second, result);
          if (pulled)
            xb = std::move(pulled);
          else
            xb->clear();
        })
        .Case([&](ExbufCreateOp o) {
          uint64_t size = get(o.getSize());
          if (size > kMaxPacketSize)
            return raise(o, ExceptionKind::PacketBounds,
                         "exbuf.create of " + std::to_string(size) +
                             " bytes exceeds the " +
                             std::to_string(kMaxPacketSize) +
                             "-byte limit of an exchange buffer");
          xb->packet.assign(size, 0);
          xb->wireLength = static_cast<uint32_t>(size);
          xb->info.assign(infoSize, 0);
          xb->seconds = xb->microseconds = 0;
          xb->none = false;
        })
        .Case([&](ExbufDeleteOp) {
          discard();
          xb->clear();
        })
        // Coprocessors.
        .Case([&](CoproInitOp o) {
          netvm_copro *c = coprocessor(o, o.getCopro());
          uint32_t offset = o.getOffset();
          if (offset > pe.initdata.size())
            return raise(o, ExceptionKind::InitDataBounds,
                         "copro.init offset beyond the initialised data");
          uint32_t status = 0;
          if (!netvm_copro_init(c, pe.initdata.data() + offset,
                                pe.initdata.size() - offset, &status))
            return coproFailed(o, c);
          set(o, status);
        })
        .Case([&](CoproReadOp o) {
          netvm_copro *c = coprocessor(o, o.getCopro());
          uint32_t v = 0;
          if (!netvm_copro_read(c, o.getReg(), &v))
            return coproFailed(o, c);
          set(o, v);
        })
        .Case([&](CoproWriteOp o) {
          netvm_copro *c = coprocessor(o, o.getCopro());
          if (!netvm_copro_write(c, o.getReg(), get(o.getValue())))
            coproFailed(o, c);
        })
        .Case([&](CoproInvokeOp o) {
          netvm_copro *c = coprocessor(o, o.getCopro());
          if (!netvm_copro_invoke(c, o.getOpcode()))
            coproFailed(o, c);
        })
        .Case([&](CoproExbufOp o) {
          netvm_copro *c = coprocessor(o, o.getCopro());
          if (xb->none)
            return raise(o, ExceptionKind::NoExchangeBuffer,
                         "copro.exbuf without a current exchange buffer");
          netvm_copro_attach(c, xb->packet.data(), xb->packet.size());
        })
        .Default([&](Operation *other) {
          // create() admits only supported operations.
          llvm_unreachable("unsupported operation reached the interpreter");
        });
  }
  return *exit;
}

//===----------------------------------------------------------------------===//
// Public interface
//===----------------------------------------------------------------------===//

std::vector<Exception> Interpreter::initialize() {
  Result result;
  for (unsigned i = 0; i < impl->pes.size(); ++i) {
    HandlerOp init =
        impl->pes[i].handlers[static_cast<unsigned>(HandlerKind::Init)];
    if (!init)
      continue;
    impl->resetBudget();
    auto none = std::make_unique<ExBuf>();
    none->clear();
    impl->run(i, init, none, 0, result);
  }
  return std::move(result.exceptions);
}

Result Interpreter::push(unsigned source, const Packet &packet,
                         llvm::ArrayRef<uint8_t> info) {
  Result result;
  impl->resetBudget();
  const std::vector<Endpoint> &dests = impl->sourceDests[source];
  if (dests.empty()) {
    ++result.unconnected;
    return result;
  }
  for (size_t i = 0; i < dests.size(); ++i)
    impl->enter(dests[i], impl->makeExBuf(packet, info), result);
  return result;
}

Result Interpreter::pull(unsigned sink) {
  Result result;
  impl->resetBudget();
  const std::optional<Endpoint> &upstream = impl->sinkPullUpstream[sink];
  if (!upstream)
    return result;
  if (ExBufPtr xb = impl->pullFrom(*upstream, result))
    impl->enter({Endpoint::Sink, sink, 0}, std::move(xb), result);
  return result;
}

void Interpreter::setSourcePuller(
    std::function<std::optional<Packet>(unsigned)> fn) {
  impl->sourcePuller = std::move(fn);
}

llvm::ArrayRef<std::string> Interpreter::sourceNames() const {
  return impl->sourceNames;
}
llvm::ArrayRef<std::string> Interpreter::sinkNames() const {
  return impl->sinkNames;
}
llvm::ArrayRef<std::string> Interpreter::peNames() const {
  return impl->peNames;
}
llvm::ArrayRef<uint8_t> Interpreter::dataMemory(unsigned pe) const {
  return impl->pes[pe].data;
}
llvm::MutableArrayRef<uint8_t> Interpreter::mutableDataMemory(unsigned pe) {
  return impl->pes[pe].data;
}
netvm_copro *Interpreter::coprocessor(unsigned pe, llvm::StringRef name) {
  if (pe >= impl->pes.size())
    return nullptr;
  for (const CoproPtr &c : impl->pes[pe].coprocessors)
    if (name == netvm_copro_name(c.get()))
      return c.get();
  return nullptr;
}
llvm::ArrayRef<uint8_t> Interpreter::sharedMemory() const {
  return impl->shared;
}
llvm::MutableArrayRef<uint8_t> Interpreter::mutableSharedMemory() {
  return impl->shared;
}
const PECounters &Interpreter::counters(unsigned pe) const {
  return impl->pes[pe].counters;
}
uint64_t Interpreter::operationsExecuted() const { return impl->totalOps; }
void Interpreter::setBlockCounts(
    llvm::DenseMap<mlir::Block *, uint64_t> *counts) {
  impl->blockCounts = counts;
}
