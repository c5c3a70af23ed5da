//===- NetVMToLLVM.cpp - Lowering netvm to the LLVM dialect
//-------------------===//
//
// Three steps (see NetVMToLLVM.h):
//  1. prepareNativeLowering: one LLVM function per handler (the handler body
//     moves in, its entry block gaining the context and exchange-buffer
//     arguments), one entry function per source, one pull function per sink,
//     the init function, initialised-data globals and runtime declarations;
//  2. conversion patterns for the netvm operations (plus the upstream arith,
//     cf and math patterns);
//  3. the application descriptor global.
//
// The generated code follows runtime/include/netvm/abi.h; the byte offsets
// below mirror its static assertions.
//
//===----------------------------------------------------------------------===//

#include "netvm/Conversion/NetVMToLLVM.h"

#include "NetVM/NetVMOps.h"
#include "netvm/Analysis/FlowKey.h"
#include "netvm/abi.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <map>

using namespace mlir;
using namespace netvm;

//===----------------------------------------------------------------------===//
// State shared by the three steps
//===----------------------------------------------------------------------===//

namespace {
/// Where a push connection leads.
struct Dest {
  enum Kind { PE, Sink } kind;
  unsigned index; // NetPE or sink
  unsigned port;  // input port of the NetPE
};
/// Where a pull connection comes from.
struct Upstream {
  enum Kind { PE, Source } kind;
  unsigned index;
  unsigned port; // pull_output port of the NetPE
};
struct Site {
  unsigned pe;
  HandlerKind handler;
  std::string location;
};
} // namespace

struct netvm::NativeLoweringState {
  NativeLoweringOptions options;
  std::string appName, prefix;
  SmallVector<PEOp> pes;
  SmallVector<std::string> peNames, sourceNames, sinkNames;
  /// Ports and coprocessors of each NetPE by name.
  std::vector<llvm::StringMap<unsigned>> ports;
  std::vector<std::vector<std::string>> coprocessors;
  std::vector<uint32_t> dataSizes, initdataSizes;
  std::vector<std::string> initdataGlobals; // empty: no initialised data
  uint32_t infoSize = 0, sharedSize = 0;
  std::map<std::pair<unsigned, unsigned>, SmallVector<Dest>> pushRoutes;
  std::vector<SmallVector<Dest>> sourceRoutes;
  std::map<std::pair<unsigned, unsigned>, Upstream> pullRoutes;
  std::vector<std::optional<Upstream>> sinkUpstreams;
  /// Handler functions by NetPE and kind.
  std::vector<std::array<LLVM::LLVMFuncOp, 3>> handlers;
  SmallVector<LLVM::LLVMFuncOp> sourceFuncs, sinkPullFuncs, batchFuncs;
  LLVM::LLVMFuncOp initFunc;
  /// Inline-able emission and drop: count in the context, call the runtime
  /// only when it listens or the buffer is a clone.
  LLVM::LLVMFuncOp emitFunc, dropFunc, countFunc;
  SmallVector<LLVM::LLVMFuncOp> routeFuncs;
  /// What the batch loops must set up for every packet.
  bool usesTimestamps = false, hasWatchdog = false, usesWireLength = false;
  /// NETVM_PE_* flags of each NetPE.
  std::vector<uint32_t> peFlags;
  /// Per NetPE: its flow key function (analysis::buildFlowKeyHandler), or
  /// null; empty when no NetPE has one.
  std::vector<LLVM::LLVMFuncOp> keyHandlers;
  std::vector<Site> sites;
  /// Handler functions that may run without a current exchange buffer.
  DenseSet<Operation *> mayLackExbuf;

  unsigned addSite(unsigned pe, HandlerKind kind, Location loc) {
    std::string where;
    llvm::raw_string_ostream os(where);
    if (auto file = dyn_cast<FileLineColLoc>(loc))
      os << file.getFilename().getValue() << ":" << file.getLine() << ":"
         << file.getColumn();
    else
      loc.print(os);
    sites.push_back({pe, kind, where});
    return sites.size() - 1;
  }
};

//===----------------------------------------------------------------------===//
// Building LLVM dialect code
//===----------------------------------------------------------------------===//

namespace {
/// Small helpers over an OpBuilder for the code the lowering emits.
class Emitter {
public:
  Emitter(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  Type i1() { return b.getI1Type(); }
  Type i8() { return b.getI8Type(); }
  Type i32() { return b.getI32Type(); }
  Type i64() { return b.getI64Type(); }
  Type ptr() { return LLVM::LLVMPointerType::get(b.getContext()); }

  Value c32(uint64_t v) {
    return LLVM::ConstantOp::create(
        b, loc, i32(), static_cast<int64_t>(static_cast<uint32_t>(v)));
  }
  Value c64(int64_t v) { return LLVM::ConstantOp::create(b, loc, i64(), v); }
  Value cInt(Type t, int64_t v) {
    return LLVM::ConstantOp::create(b, loc, t, v);
  }

  /// `base + offset` bytes.
  Value gep(Value base, Value offset) {
    return LLVM::GEPOp::create(b, loc, ptr(), i8(), base,
                               ArrayRef<LLVM::GEPArg>{offset});
  }
  Value gep(Value base, int64_t offset) {
    if (offset == 0)
      return base;
    return LLVM::GEPOp::create(
        b, loc, ptr(), i8(), base,
        ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(offset)});
  }
  Value load(Type t, Value base, int64_t offset = 0, unsigned align = 0) {
    return LLVM::LoadOp::create(b, loc, t, gep(base, offset), align);
  }
  void store(Value v, Value base, int64_t offset = 0, unsigned align = 0) {
    LLVM::StoreOp::create(b, loc, v, gep(base, offset), align);
  }
  Value zext(Value v, Type t) {
    return v.getType() == t ? v : LLVM::ZExtOp::create(b, loc, t, v);
  }
  Value trunc(Value v, Type t) {
    return v.getType() == t ? v : LLVM::TruncOp::create(b, loc, t, v);
  }
  Value icmp(LLVM::ICmpPredicate p, Value l, Value r) {
    return LLVM::ICmpOp::create(b, loc, p, l, r);
  }
  Value add(Value l, Value r) { return LLVM::AddOp::create(b, loc, l, r); }
  Value sub(Value l, Value r) { return LLVM::SubOp::create(b, loc, l, r); }
  Value and_(Value l, Value r) { return LLVM::AndOp::create(b, loc, l, r); }
  Value or_(Value l, Value r) { return LLVM::OrOp::create(b, loc, l, r); }
  Value xor_(Value l, Value r) { return LLVM::XOrOp::create(b, loc, l, r); }
  Value shl(Value l, Value r) { return LLVM::ShlOp::create(b, loc, l, r); }
  Value lshr(Value l, Value r) { return LLVM::LShrOp::create(b, loc, l, r); }
  Value select(Value c, Value t, Value f) {
    return LLVM::SelectOp::create(b, loc, c, t, f);
  }
  Value call(LLVM::LLVMFuncOp f, ValueRange args) {
    auto op = LLVM::CallOp::create(b, loc, f, args);
    return op.getNumResults() ? op.getResult() : Value();
  }

  OpBuilder &b;
  Location loc;
};

/// Set by netvm-version-packet-checks on packet loads of the fast version.
constexpr llvm::StringLiteral kMinPacketLengthAttr = "netvm.min_packet_length";

/// Branch weights: exceptions and runtime calls are the cold paths.
constexpr std::pair<uint32_t, uint32_t> kLikely{2000, 1}, kUnlikely{1, 2000};

/// The runtime functions generated code calls, declared on demand.
LLVM::LLVMFuncOp runtimeFunc(ModuleOp module, StringRef name, Type result,
                             ArrayRef<Type> args) {
  if (auto f = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
    return f;
  OpBuilder b(module.getContext());
  b.setInsertionPointToStart(module.getBody());
  auto type = LLVM::LLVMFunctionType::get(result, args);
  return LLVM::LLVMFuncOp::create(b, module.getLoc(), name, type);
}

struct Runtime {
  explicit Runtime(ModuleOp module) : module(module) {
    MLIRContext *ctx = module.getContext();
    ptr = LLVM::LLVMPointerType::get(ctx);
    i32 = IntegerType::get(ctx, 32);
    i64 = IntegerType::get(ctx, 64);
    voidTy = LLVM::LLVMVoidType::get(ctx);
  }
  LLVM::LLVMFuncOp get(StringRef name) {
    struct Sig {
      const char *name;
      int result;       // 0 void, 1 i32, 2 ptr
      const char *args; // p = ptr, i = i32, l = i64
    };
    static const Sig sigs[] = {
        {"netvm_rt_emit", 0, "pip"},        {"netvm_rt_forward", 0, "piip"},
        {"netvm_rt_drop", 0, "pip"},        {"netvm_rt_discard", 0, "pip"},
        {"netvm_rt_unconnected", 0, "pip"}, {"netvm_rt_exception", 0, "piip"},
        {"netvm_rt_clone", 2, "pp"},        {"netvm_rt_exbuf_create", 1, "ppi"},
        {"netvm_rt_pull_source", 0, "pip"}, {"netvm_rt_hash", 1, "pi"},
        {"netvm_rt_checksum", 1, "pi"},     {"netvm_rt_crc", 1, "ipi"},
        {"netvm_rt_crc_word", 1, "ii"},     {"netvm_rt_pscan", 1, "piiii"},
        {"netvm_rt_memcmp", 1, "ppi"},      {"netvm_copro_init", 1, "pplp"},
        {"netvm_copro_read", 1, "pip"},     {"netvm_copro_write", 1, "pii"},
        {"netvm_copro_invoke", 1, "pi"},    {"netvm_copro_attach", 0, "ppi"},
    };
    for (const Sig &s : sigs) {
      if (name != s.name)
        continue;
      SmallVector<Type> args;
      for (const char *a = s.args; *a; ++a)
        args.push_back(*a == 'p' ? ptr : *a == 'i' ? i32 : i64);
      Type result = s.result == 0 ? voidTy : s.result == 1 ? i32 : ptr;
      return runtimeFunc(module, name, result, args);
    }
    llvm_unreachable("unknown runtime function");
  }
  ModuleOp module;
  Type ptr, i32, i64, voidTy;
};

/// The handler function an operation is in, and what it knows.
struct FuncInfo {
  LLVM::LLVMFuncOp func;
  Value ctx, xb;
  unsigned pe;
  HandlerKind kind;
};

FuncInfo funcInfo(Operation *op) {
  FuncInfo info;
  info.func = op->getParentOfType<LLVM::LLVMFuncOp>();
  Block &entry = info.func.getBody().front();
  info.ctx = entry.getArgument(0);
  info.xb = entry.getArgument(1);
  info.pe = cast<IntegerAttr>(info.func->getAttr("netvm.pe")).getInt();
  info.kind = static_cast<HandlerKind>(
      cast<IntegerAttr>(info.func->getAttr("netvm.handler")).getInt());
  return info;
}

/// Address of NetPE `pe`'s state.
Value peState(Emitter &e, Value ctx, unsigned pe) {
  Value pes = e.load(e.ptr(), ctx, offsetof(netvm_ctx, pes));
  return e.gep(pes, static_cast<int64_t>(pe * sizeof(netvm_pe_state)));
}

/// Increment a 64-bit counter at `base + offset`.
void bump(Emitter &e, Value base, int64_t offset) {
  Value v = e.load(e.i64(), base, offset);
  e.store(e.add(v, e.c64(1)), base, offset);
}

/// Deliver `xb` to every destination: clones for all but the last. Returns
/// the verdict (abi.h) of the last delivery, the one of `xb` itself; the
/// clones' fates are counted by the runtime.
Value emitDeliver(OpBuilder &b, Location loc, NativeLoweringState &state,
                  Runtime &rt, Value ctx, Value xb, ArrayRef<Dest> dests,
                  std::optional<unsigned> fromPE) {
  Emitter e(b, loc);
  if (dests.empty()) {
    e.call(rt.get("netvm_rt_unconnected"),
           {ctx, e.c32(fromPE ? *fromPE : ~0u), xb});
    return e.c32(NETVM_VERDICT_NONE);
  }
  Value verdict;
  for (size_t i = 0; i < dests.size(); ++i) {
    Value buffer = xb;
    if (i + 1 < dests.size())
      buffer = e.call(rt.get("netvm_rt_clone"), {ctx, xb});
    const Dest &d = dests[i];
    if (d.kind == Dest::Sink) {
      verdict = e.call(state.emitFunc, {ctx, e.c32(d.index), buffer});
    } else if (state.options.forwardLinks) {
      e.call(rt.get("netvm_rt_forward"),
             {ctx, e.c32(d.index), e.c32(d.port), buffer});
      verdict = e.c32(NETVM_VERDICT_NONE);
    } else {
      auto call = LLVM::CallOp::create(
          b, loc,
          state.handlers[d.index][static_cast<unsigned>(HandlerKind::Push)],
          ValueRange{ctx, buffer, e.c32(d.port)});
      // From a source entry: inline the first NetPE, so that the batch
      // loop holds the application.
      if (!fromPE)
        call.setAlwaysInline(true);
      verdict = call.getResult();
    }
  }
  return verdict;
}

/// Make `xb` "no current exchange buffer": the NONE flag, empty memories,
/// no timestamp.
void emitClearExbuf(Emitter &e, Value xb) {
  Value flags = e.load(e.i32(), xb, offsetof(netvm_exbuf, flags));
  e.store(e.or_(flags, e.c32(NETVM_XB_NONE)), xb, offsetof(netvm_exbuf, flags));
  e.store(e.c32(0), xb, offsetof(netvm_exbuf, length));
  e.store(e.c32(0), xb, offsetof(netvm_exbuf, wire_length));
  e.store(e.c32(0), xb, offsetof(netvm_exbuf, info_length));
  e.store(e.c32(0), xb, offsetof(netvm_exbuf, seconds));
  e.store(e.c32(0), xb, offsetof(netvm_exbuf, microseconds));
}

/// Fill `xb` from `upstream` (a pull connection).
void emitPull(OpBuilder &b, Location loc, NativeLoweringState &state,
              Runtime &rt, Value ctx, Value xb,
              const std::optional<Upstream> &upstream) {
  Emitter e(b, loc);
  if (upstream && upstream->kind == Upstream::Source) {
    e.call(rt.get("netvm_rt_pull_source"), {ctx, e.c32(upstream->index), xb});
    return;
  }
  emitClearExbuf(e, xb);
  if (upstream) // a pull handler's verdict is always NONE
    e.call(state.handlers[upstream->index]
                         [static_cast<unsigned>(HandlerKind::Pull)],
           {ctx, xb, e.c32(upstream->port)});
}

/// Mark the pointer arguments of `func` noalias: the context, exchange
/// buffers and packet arrays the runtime passes never overlap.
void setNoAlias(LLVM::LLVMFuncOp func) {
  ArrayRef<Type> params = func.getFunctionType().getParams();
  for (unsigned i = 0; i < params.size(); ++i)
    if (isa<LLVM::LLVMPointerType>(params[i]))
      func.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(),
                      UnitAttr::get(func.getContext()));
}

/// Build `__netvm.<app>.emit` (drop = false) or `.drop`: (ctx, index, xb)
/// -> verdict. When nobody listens (no NETVM_XB_LISTENED) and `xb` is not a
/// clone, they only return the verdict (the packet left through sink
/// `index`, NetPE `index` dropped it) for the caller to count; otherwise
/// they call the runtime, which delivers and counts, and return NONE.
LLVM::LLVMFuncOp buildExitHelper(OpBuilder &b, Location loc,
                                 NativeLoweringState &state, Runtime &rt,
                                 bool drop) {
  MLIRContext *ctx = b.getContext();
  Type ptr = LLVM::LLVMPointerType::get(ctx), i32 = b.getI32Type();
  auto type = LLVM::LLVMFunctionType::get(i32, {ptr, i32, ptr});
  auto func =
      LLVM::LLVMFuncOp::create(b, loc, state.prefix + (drop ? "drop" : "emit"),
                               type, LLVM::Linkage::Internal);
  func.setAlwaysInline(true);
  setNoAlias(func);
  OpBuilder::InsertionGuard guard(b);
  Block *entry = func.addEntryBlock(b);
  Value c = entry->getArgument(0), index = entry->getArgument(1),
        xb = entry->getArgument(2);
  Block *slow = b.createBlock(&func.getBody(), func.getBody().end());
  Block *fast = b.createBlock(&func.getBody(), func.getBody().end());
  b.setInsertionPointToEnd(entry);
  Emitter e(b, loc);
  Value flags = e.load(e.i32(), xb, offsetof(netvm_exbuf, flags));
  Value any = e.and_(flags, e.c32(NETVM_XB_CLONE | NETVM_XB_LISTENED));
  LLVM::CondBrOp::create(b, loc, e.icmp(LLVM::ICmpPredicate::ne, any, e.c32(0)),
                         slow, ValueRange(), fast, ValueRange(), kUnlikely);
  b.setInsertionPointToEnd(slow);
  e.call(rt.get(drop ? "netvm_rt_drop" : "netvm_rt_emit"), {c, index, xb});
  LLVM::ReturnOp::create(b, loc, ValueRange{e.c32(NETVM_VERDICT_NONE)});
  b.setInsertionPointToEnd(fast);
  Value verdict = drop ? e.or_(index, e.c32(NETVM_VERDICT_DROP))
                       : e.add(index, e.c32(NETVM_VERDICT_SINK));
  LLVM::ReturnOp::create(b, loc, ValueRange{verdict});
  return func;
}

/// Build `__netvm.<app>.count`: (ctx, verdict, xb), counting a verdict in
/// the context's counters.
LLVM::LLVMFuncOp buildCountHelper(OpBuilder &b, Location loc,
                                  NativeLoweringState &state) {
  MLIRContext *ctx = b.getContext();
  Type ptr = LLVM::LLVMPointerType::get(ctx), i32 = b.getI32Type();
  auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                          {ptr, i32, ptr});
  auto func = LLVM::LLVMFuncOp::create(b, loc, state.prefix + "count", type,
                                       LLVM::Linkage::Internal);
  func.setAlwaysInline(true);
  setNoAlias(func);
  OpBuilder::InsertionGuard guard(b);
  Block *entry = func.addEntryBlock(b);
  Value c = entry->getArgument(0), v = entry->getArgument(1),
        xb = entry->getArgument(2);
  Region &body = func.getBody();
  Block *notNone = b.createBlock(&body, body.end());
  Block *dropped = b.createBlock(&body, body.end());
  Block *sent = b.createBlock(&body, body.end());
  Block *done = b.createBlock(&body, body.end());
  Emitter e(b, loc);
  b.setInsertionPointToEnd(entry);
  LLVM::CondBrOp::create(
      b, loc, e.icmp(LLVM::ICmpPredicate::eq, v, e.c32(NETVM_VERDICT_NONE)),
      done, notNone);
  b.setInsertionPointToEnd(notNone);
  LLVM::CondBrOp::create(b, loc,
                         e.icmp(LLVM::ICmpPredicate::ne,
                                e.and_(v, e.c32(NETVM_VERDICT_DROP)), e.c32(0)),
                         dropped, sent);
  b.setInsertionPointToEnd(dropped);
  {
    Value pe = e.zext(e.and_(v, e.c32(~NETVM_VERDICT_DROP)), e.i64());
    Value drops = e.load(e.ptr(), c, offsetof(netvm_ctx, pe_drops));
    bump(e, e.gep(drops, LLVM::MulOp::create(b, loc, pe, e.c64(8))), 0);
    LLVM::BrOp::create(b, loc, ValueRange(), done);
  }
  b.setInsertionPointToEnd(sent);
  {
    Value sink = e.zext(e.sub(v, e.c32(NETVM_VERDICT_SINK)), e.i64());
    Value stats = e.load(e.ptr(), c, offsetof(netvm_ctx, sink_stats));
    Value at = e.gep(stats, LLVM::MulOp::create(b, loc, sink, e.c64(16)));
    bump(e, at, 0);
    Value bytes = e.load(e.i64(), at, 8);
    Value length = e.load(e.i32(), xb, offsetof(netvm_exbuf, length));
    e.store(e.add(bytes, e.zext(length, e.i64())), at, 8);
    LLVM::BrOp::create(b, loc, ValueRange(), done);
  }
  b.setInsertionPointToEnd(done);
  LLVM::ReturnOp::create(b, loc, ValueRange());
  return func;
}

/// Build the batch entry of source `source` (netvm_batch_fn): loops that
/// point the scratch buffer at each packet in turn and run the source's
/// route on it, with the application inlined. When nobody listens
/// (ctx->hooks is 0) the fast loop keeps the counts in registers and sets
/// only the fields the application can observe; otherwise every packet goes
/// through the source entry, fully set up.
LLVM::LLVMFuncOp buildBatchEntry(OpBuilder &b, Location loc,
                                 NativeLoweringState &state, unsigned source,
                                 bool clearInfo, bool resetExbuf) {
  MLIRContext *ctx = b.getContext();
  Type ptr = LLVM::LLVMPointerType::get(ctx), i64 = b.getI64Type();
  auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                          {ptr, ptr, ptr, i64});
  auto func = LLVM::LLVMFuncOp::create(
      b, loc, state.prefix + "batch." + state.sourceNames[source], type,
      LLVM::Linkage::Internal);
  setNoAlias(func);
  // Its loops are the lowering's, not the application's
  // (native::isSmallModule).
  func.setPassthroughAttr(
      b.getArrayAttr({b.getStringAttr(kBatchEntryAttribute)}));
  // The fast or the slow loop, in a function of its own if asked (the JIT
  // may then compile it on first use, the slow loop with the per-call
  // entries it calls): the batch entry calls it once per batch.
  auto loopFunc = [&](llvm::StringRef kind, const char *attribute) {
    auto loop = LLVM::LLVMFuncOp::create(
        b, loc, state.prefix + kind.str() + "." + state.sourceNames[source],
        type, LLVM::Linkage::Internal);
    setNoAlias(loop);
    loop.setPassthroughAttr(b.getArrayAttr(
        {b.getStringAttr(kBatchEntryAttribute), b.getStringAttr(attribute)}));
    return loop;
  };
  LLVM::LLVMFuncOp fastFunc, slowFunc;
  if (state.options.separateFastLoops)
    fastFunc = loopFunc("fast", kFastLoopAttribute);
  else if (state.options.separateSlowLoops)
    slowFunc = loopFunc("slow", kSlowLoopAttribute);
  OpBuilder::InsertionGuard guard(b);
  Block *entry = func.addEntryBlock(b);
  Value c = entry->getArgument(0), xb = entry->getArgument(1),
        packets = entry->getArgument(2), count = entry->getArgument(3);
  Region &region = func.getBody();
  Emitter e(b, loc);

  // Counters kept in registers: packets and bytes per sink, drops per
  // NetPE (or, past a handful, counted in memory as usual).
  unsigned sinks = state.sinkNames.size(), pes = state.peNames.size();
  bool inRegisters = 2 * sinks + pes <= 16;
  unsigned numAcc = inRegisters ? 2 * sinks + pes : 0;
  SmallVector<Type> headerTypes(1 + numAcc, i64);
  SmallVector<Location> headerLocs(1 + numAcc, loc);

  // With a separate fast loop, its blocks and arguments are those of
  // fastFunc, and the batch entry's fastCall calls it.
  Region &fastRegion = fastFunc ? fastFunc.getBody() : region;
  Block *fastPre = fastFunc ? fastFunc.addEntryBlock(b)
                            : b.createBlock(&region, region.end());
  Block *fastHeader =
      b.createBlock(&fastRegion, fastRegion.end(), headerTypes, headerLocs);
  Block *fastBody = b.createBlock(&fastRegion, fastRegion.end());
  Block *fastExit = b.createBlock(&fastRegion, fastRegion.end());
  Block *fastCall = fastFunc ? b.createBlock(&region, region.end()) : fastPre;
  // With a separate slow loop, likewise.
  Region &slowRegion = slowFunc ? slowFunc.getBody() : region;
  Block *slowPre = slowFunc ? slowFunc.addEntryBlock(b) : nullptr;
  Block *slowHeader =
      b.createBlock(&slowRegion, slowRegion.end(), {i64}, {loc});
  Block *slowBody = b.createBlock(&slowRegion, slowRegion.end());
  Block *slowCall = slowFunc ? b.createBlock(&region, region.end()) : nullptr;
  Block *exit = b.createBlock(&region, region.end());
  Block *slowExit =
      slowFunc ? b.createBlock(&slowRegion, slowRegion.end()) : exit;

  b.setInsertionPointToEnd(entry);
  Value first = e.load(e.i64(), xb, offsetof(netvm_exbuf, sequence));
  Value hooks = e.load(e.i32(), c, offsetof(netvm_ctx, hooks));
  if (slowFunc)
    LLVM::CondBrOp::create(
        b, loc, e.icmp(LLVM::ICmpPredicate::ne, hooks, e.c32(0)), slowCall,
        ValueRange(), fastCall, ValueRange(), kUnlikely);
  else
    LLVM::CondBrOp::create(
        b, loc, e.icmp(LLVM::ICmpPredicate::ne, hooks, e.c32(0)), slowHeader,
        ValueRange{e.c64(0)}, fastCall, ValueRange(), kUnlikely);
  if (slowFunc) {
    b.setInsertionPointToEnd(slowCall);
    LLVM::CallOp::create(b, loc, slowFunc, ValueRange{c, xb, packets, count});
    LLVM::BrOp::create(b, loc, ValueRange(), exit);
  }
  if (fastFunc) {
    b.setInsertionPointToEnd(fastCall);
    LLVM::CallOp::create(b, loc, fastFunc, ValueRange{c, xb, packets, count});
    LLVM::BrOp::create(b, loc, ValueRange(), exit);
  }
  // In the fast loop: the function's arguments.
  Value batchCtx = c, batchXb = xb, batchPackets = packets;
  if (fastFunc) {
    c = fastPre->getArgument(0);
    xb = fastPre->getArgument(1);
    packets = fastPre->getArgument(2);
    count = fastPre->getArgument(3);
  }
  // The fast loop works on a copy of the buffer on its own stack: its
  // address costs no register.
  if (fastFunc)
    b.setInsertionPointToEnd(fastPre);
  else
    b.setInsertionPoint(entry->getTerminator());
  Value local = LLVM::AllocaOp::create(
      b, loc, ptr, LLVM::LLVMArrayType::get(e.i8(), sizeof(netvm_exbuf)),
      e.c32(1), alignof(netvm_exbuf));

  auto packetAt = [&](Value i) {
    return e.gep(packets,
                 LLVM::MulOp::create(b, loc, i, e.c64(sizeof(netvm_packet))));
  };
  auto setup = [&](Value xb, Value p, Value i, bool full) {
    e.store(e.load(e.ptr(), p, offsetof(netvm_packet, data)), xb,
            offsetof(netvm_exbuf, packet));
    Value length = e.load(e.i32(), p, offsetof(netvm_packet, length));
    e.store(length, xb, offsetof(netvm_exbuf, length));
    if (full || state.usesWireLength) {
      Value wire = e.load(e.i32(), p, offsetof(netvm_packet, wire_length));
      Value given = e.icmp(LLVM::ICmpPredicate::ne, wire, e.c32(0));
      e.store(e.select(given, wire, length), xb,
              offsetof(netvm_exbuf, wire_length));
    }
    // The flags every packet: LLVM then sees them as constants where the
    // packet leaves, and in the fast loop the emission and drop paths fold
    // into a verdict.
    e.store(
        e.c32(full ? NETVM_XB_BORROWED | NETVM_XB_LISTENED : NETVM_XB_BORROWED),
        xb, offsetof(netvm_exbuf, flags));
    if (full || resetExbuf)
      e.store(e.c32(state.infoSize), xb, offsetof(netvm_exbuf, info_length));
    // Capacity and sequence number matter only to the runtime's listeners
    // (events, clones delivered to them): the fast loop, which runs only
    // when nobody listens, leaves them as they were.
    if (full) {
      e.store(length, xb, offsetof(netvm_exbuf, capacity));
      e.store(e.add(first, i), xb, offsetof(netvm_exbuf, sequence));
    }
    if (full || state.usesTimestamps) {
      e.store(e.load(e.i32(), p, offsetof(netvm_packet, seconds)), xb,
              offsetof(netvm_exbuf, seconds));
      e.store(e.load(e.i32(), p, offsetof(netvm_packet, microseconds)), xb,
              offsetof(netvm_exbuf, microseconds));
    }
    if (clearInfo && state.infoSize)
      LLVM::MemsetOp::create(b, loc,
                             e.load(e.ptr(), xb, offsetof(netvm_exbuf, info)),
                             e.cInt(e.i8(), 0), e.c64(state.infoSize),
                             /*isVolatile=*/false);
    if (full || state.hasWatchdog)
      e.store(e.load(e.i64(), c, offsetof(netvm_ctx, budget_reset)), c,
              offsetof(netvm_ctx, budget));
  };

  // Fast loop.
  b.setInsertionPointToEnd(fastPre);
  LLVM::MemcpyOp::create(b, loc, local, xb, e.c64(sizeof(netvm_exbuf)),
                         /*isVolatile=*/false);
  e.store(e.c32(NETVM_XB_BORROWED), local, offsetof(netvm_exbuf, flags));
  e.store(e.c32(state.infoSize), local, offsetof(netvm_exbuf, info_length));
  SmallVector<Value> init(1 + numAcc, e.c64(0));
  LLVM::BrOp::create(b, loc, init, fastHeader);

  b.setInsertionPointToEnd(fastHeader);
  Value i = fastHeader->getArgument(0);
  LLVM::CondBrOp::create(b, loc, e.icmp(LLVM::ICmpPredicate::ult, i, count),
                         fastBody, fastExit);

  b.setInsertionPointToEnd(fastBody);
  setup(local, packetAt(i), i, /*full=*/false);
  Value v = e.call(state.routeFuncs[source], {c, local});

  SmallVector<Value> next{e.add(i, e.c64(1))};
  if (inRegisters) {
    Value length =
        sinks ? e.zext(e.load(e.i32(), local, offsetof(netvm_exbuf, length)),
                       e.i64())
              : Value();
    for (unsigned k = 0; k < sinks; ++k) {
      Value hit =
          e.icmp(LLVM::ICmpPredicate::eq, v, e.c32(NETVM_VERDICT_SINK + k));
      next.push_back(
          e.add(fastHeader->getArgument(1 + 2 * k), e.zext(hit, e.i64())));
      next.push_back(e.add(fastHeader->getArgument(2 + 2 * k),
                           e.select(hit, length, e.c64(0))));
    }
    for (unsigned k = 0; k < pes; ++k) {
      Value hit =
          e.icmp(LLVM::ICmpPredicate::eq, v, e.c32(NETVM_VERDICT_DROP | k));
      next.push_back(e.add(fastHeader->getArgument(1 + 2 * sinks + k),
                           e.zext(hit, e.i64())));
    }
  } else {
    e.call(state.countFunc, {c, v, local});
  }
  LLVM::BrOp::create(b, loc, next, fastHeader);

  b.setInsertionPointToEnd(fastExit);
  if (inRegisters) {
    Value stats = e.load(e.ptr(), c, offsetof(netvm_ctx, sink_stats));
    for (unsigned k = 0; k < 2 * sinks; ++k) {
      Value old = e.load(e.i64(), stats, 8 * k);
      e.store(e.add(old, fastHeader->getArgument(1 + k)), stats, 8 * k);
    }
    Value drops = e.load(e.ptr(), c, offsetof(netvm_ctx, pe_drops));
    for (unsigned k = 0; k < pes; ++k) {
      Value old = e.load(e.i64(), drops, 8 * k);
      e.store(e.add(old, fastHeader->getArgument(1 + 2 * sinks + k)), drops,
              8 * k);
    }
  }
  if (fastFunc)
    LLVM::ReturnOp::create(b, loc, ValueRange());
  else
    LLVM::BrOp::create(b, loc, ValueRange(), exit);

  // Slow loop: the source entry on a fully set-up buffer.
  c = batchCtx;
  xb = batchXb;
  packets = batchPackets;
  count = entry->getArgument(3);
  if (slowFunc) {
    c = slowPre->getArgument(0);
    xb = slowPre->getArgument(1);
    packets = slowPre->getArgument(2);
    count = slowPre->getArgument(3);
    b.setInsertionPointToEnd(slowPre);
    first = e.load(e.i64(), xb, offsetof(netvm_exbuf, sequence));
    LLVM::BrOp::create(b, loc, ValueRange{e.c64(0)}, slowHeader);
    b.setInsertionPointToEnd(slowExit);
    LLVM::ReturnOp::create(b, loc, ValueRange());
  }
  b.setInsertionPointToEnd(slowHeader);
  Value j = slowHeader->getArgument(0);
  LLVM::CondBrOp::create(b, loc, e.icmp(LLVM::ICmpPredicate::ult, j, count),
                         slowBody, slowExit);
  b.setInsertionPointToEnd(slowBody);
  setup(xb, packetAt(j), j, /*full=*/true);
  auto call = LLVM::CallOp::create(b, loc, state.sourceFuncs[source],
                                   ValueRange{c, xb});
  call.setNoInline(true);
  LLVM::BrOp::create(b, loc, ValueRange{e.add(j, e.c64(1))}, slowHeader);

  b.setInsertionPointToEnd(exit);
  LLVM::ReturnOp::create(b, loc, ValueRange());
  return func;
}

/// NETVM_PE_* flags of a NetPE: what its push and pull handlers touch.
uint32_t computePEFlags(PEOp pe) {
  uint32_t flags = 0;
  for (PortOp port : pe.getPorts())
    if (port.getKind() == PortKind::PullInput ||
        port.getKind() == PortKind::PullOutput)
      flags |= NETVM_PE_PULL;
  auto writeTo = [&](MemSpace space) {
    if (space == MemSpace::Data)
      flags |= NETVM_PE_WRITES_DATA;
    else if (space == MemSpace::Shared)
      flags |= NETVM_PE_WRITES_SHARED;
    else if (space == MemSpace::Info)
      flags |= NETVM_PE_WRITES_INFO;
  };
  auto readFrom = [&](MemSpace space) {
    if (space == MemSpace::Shared)
      flags |= NETVM_PE_READS_SHARED;
  };
  for (HandlerOp handler : pe.getBodyBlock()->getOps<HandlerOp>()) {
    if (handler.getKind() == HandlerKind::Init)
      continue;
    handler.walk([&](Operation *op) {
      if (auto store = dyn_cast<StoreOp>(op))
        writeTo(store.getSpace());
      else if (auto add = dyn_cast<AtomicAddOp>(op))
        writeTo(add.getSpace());
      else if (auto load = dyn_cast<LoadOp>(op))
        readFrom(load.getSpace());
      else if (auto copy = dyn_cast<CopyOp>(op)) {
        readFrom(copy.getSrcSpace());
        writeTo(copy.getDstSpace());
      } else if (isa<InfoClearOp>(op))
        flags |= NETVM_PE_WRITES_INFO;
      else if (isa<RandomOp>(op))
        flags |= NETVM_PE_RANDOM;
      else if (isa<CoproInitOp, CoproReadOp, CoproWriteOp, CoproInvokeOp,
                   CoproExbufOp>(op))
        flags |= NETVM_PE_COPROCESSORS;
    });
  }
  return flags;
}

} // namespace

std::string netvm::defaultDescriptorSymbol(StringRef appName) {
  std::string name = "netvm_app_";
  for (char c : appName)
    name += llvm::isAlnum(c) ? c : '_';
  return name;
}

//===----------------------------------------------------------------------===//
// Step 1: structure
//===----------------------------------------------------------------------===//

FailureOr<std::unique_ptr<NativeLoweringState>>
netvm::prepareNativeLowering(ModuleOp module,
                             const NativeLoweringOptions &options) {
  MLIRContext *ctx = module.getContext();
  ctx->loadDialect<LLVM::LLVMDialect>();
  auto apps = llvm::to_vector(module.getBody()->getOps<ApplicationOp>());
  if (apps.size() != 1)
    return module.emitError("native code generation needs exactly one "
                            "netvm.application in the module");
  ApplicationOp app = apps.front();

  auto state = std::make_unique<NativeLoweringState>();
  state->options = options;
  state->infoSize = options.defaultInfoSize;
  state->appName = app.getSymName().str();
  state->prefix = "__netvm." + state->appName + ".";
  if (state->options.descriptorSymbol.empty())
    state->options.descriptorSymbol = defaultDescriptorSymbol(state->appName);

  // Index the application.
  DenseMap<Operation *, unsigned> peIndex, sourceIndex, sinkIndex;
  for (Operation &op : *app.getBodyBlock()) {
    if (auto pe = dyn_cast<PEOp>(op)) {
      peIndex[pe] = state->pes.size();
      state->pes.push_back(pe);
      state->peNames.push_back(pe.getSymName().str());
      auto &ports = state->ports.emplace_back();
      for (PortOp port : pe.getPorts())
        ports[port.getSymName()] = pe.getPortNumber(port);
      auto &copros = state->coprocessors.emplace_back();
      for (Attribute name : pe.getCoprocessors())
        copros.push_back(cast<StringAttr>(name).getValue().str());
      state->dataSizes.push_back(pe.getDatamemSize());
      state->peFlags.push_back(computePEFlags(pe));
      state->infoSize = std::max<uint32_t>(state->infoSize, pe.getInfoSize());
      state->sharedSize =
          std::max<uint32_t>(state->sharedSize, pe.getSharedmemSize());
    } else if (auto source = dyn_cast<SourceOp>(op)) {
      sourceIndex[source] = state->sourceNames.size();
      state->sourceNames.push_back(source.getSymName().str());
    } else if (auto sink = dyn_cast<SinkOp>(op)) {
      sinkIndex[sink] = state->sinkNames.size();
      state->sinkNames.push_back(sink.getSymName().str());
    }
  }
  state->sourceRoutes.resize(state->sourceNames.size());
  state->sinkUpstreams.resize(state->sinkNames.size());
  for (ConnectOp conn : app.getBodyBlock()->getOps<ConnectOp>()) {
    auto resolve =
        [&](SymbolRefAttr ref) -> std::tuple<Operation *, unsigned, PortOp> {
      Operation *root = app.lookupSymbol(ref.getRootReference());
      if (auto pe = dyn_cast<PEOp>(root)) {
        PortOp port = pe.lookupPort(ref.getLeafReference());
        return {root, peIndex[pe], port};
      }
      return {root, isa<SourceOp>(root) ? sourceIndex[root] : sinkIndex[root],
              PortOp()};
    };
    auto [fromOp, fromIdx, fromPort] = resolve(conn.getFrom());
    auto [toOp, toIdx, toPort] = resolve(conn.getTo());
    bool pull = (fromPort && fromPort.getKind() == PortKind::PullOutput) ||
                (toPort && toPort.getKind() == PortKind::PullInput);
    if (pull) {
      Upstream up = fromPort
                        ? Upstream{Upstream::PE, fromIdx,
                                   cast<PEOp>(fromOp).getPortNumber(fromPort)}
                        : Upstream{Upstream::Source, fromIdx, 0};
      if (toPort)
        state->pullRoutes[{toIdx, cast<PEOp>(toOp).getPortNumber(toPort)}] = up;
      else if (!state->sinkUpstreams[toIdx])
        state->sinkUpstreams[toIdx] = up;
      continue;
    }
    Dest dest =
        toPort ? Dest{Dest::PE, toIdx, cast<PEOp>(toOp).getPortNumber(toPort)}
               : Dest{Dest::Sink, toIdx, 0};
    if (fromPort)
      state->pushRoutes[{fromIdx, cast<PEOp>(fromOp).getPortNumber(fromPort)}]
          .push_back(dest);
    else
      state->sourceRoutes[fromIdx].push_back(dest);
  }

  // Every access must have been checked explicitly.
  WalkResult unchecked = app.walk([&](Operation *op) {
    if (isa<LoadOp, StoreOp, CopyOp, AtomicAddOp, ChecksumOp, PacketCrcOp,
            FieldCmpOp, PacketScanOp>(op) &&
        !op->hasAttr("in_bounds")) {
      op->emitOpError("has no bounds check; run netvm-insert-bounds-checks "
                      "before generating native code");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (unchecked.wasInterrupted())
    return failure();

  // Flow keys (docs/partitioning.md, "Flow-keyed replicas"): NetPEs whose
  // data memory is partitioned by a key computed from the packet get a key
  // handler, which the runtime's dealer calls to choose a replica.
  if (options.forwardLinks)
    for (PEOp pe : state->pes) {
      analysis::FlowKeyProof proof = analysis::proveFlowKey(pe);
      if (proof.proved)
        analysis::buildFlowKeyHandler(pe, proof);
    }

  OpBuilder b(ctx);
  Location loc = app.getLoc();
  Type ptr = LLVM::LLVMPointerType::get(ctx), i32 = b.getI32Type();
  auto voidTy = LLVM::LLVMVoidType::get(ctx);
  auto handlerType = LLVM::LLVMFunctionType::get(i32, {ptr, ptr, i32});
  auto routeType = LLVM::LLVMFunctionType::get(i32, {ptr, ptr});
  auto entryType = LLVM::LLVMFunctionType::get(voidTy, {ptr, ptr});
  auto initType = LLVM::LLVMFunctionType::get(voidTy, {ptr});
  b.setInsertionPoint(app);

  // Initialised data: one constant global per NetPE.
  for (auto [index, pe] : llvm::enumerate(state->pes)) {
    std::optional<ArrayRef<int8_t>> data = pe.getInitdata();
    state->initdataSizes.push_back(data ? data->size() : 0);
    if (!data || data->empty()) {
      state->initdataGlobals.emplace_back();
      continue;
    }
    std::string name = state->prefix + state->peNames[index] + ".initdata";
    auto type = LLVM::LLVMArrayType::get(b.getI8Type(), data->size());
    StringRef bytes(reinterpret_cast<const char *>(data->data()), data->size());
    LLVM::GlobalOp::create(b, pe.getLoc(), type, /*isConstant=*/true,
                           LLVM::Linkage::Internal, name,
                           b.getStringAttr(bytes));
    state->initdataGlobals.push_back(name);
  }

  // Handler functions, created first so that they can call each other.
  state->handlers.resize(state->pes.size());
  for (auto [index, pe] : llvm::enumerate(state->pes)) {
    for (HandlerOp handler : pe.getBodyBlock()->getOps<HandlerOp>()) {
      bool key = handler->hasAttr(analysis::kFlowKeyAttr);
      std::string name =
          state->prefix + state->peNames[index] + "." +
          (key ? "key" : stringifyHandlerKind(handler.getKind()).str());
      auto func = LLVM::LLVMFuncOp::create(
          b, handler.getLoc(), name, handlerType, LLVM::Linkage::Internal);
      setNoAlias(func);
      func->setAttr("netvm.pe", b.getI32IntegerAttr(index));
      func->setAttr("netvm.handler",
                    b.getI32IntegerAttr(static_cast<int>(handler.getKind())));
      if (key) {
        state->keyHandlers.resize(state->pes.size());
        state->keyHandlers[index] = func;
        continue;
      }
      state->handlers[index][static_cast<unsigned>(handler.getKind())] = func;
      bool lacks = handler.getKind() == HandlerKind::Pull;
      handler.walk(
          [&](Operation *op) { lacks |= isa<ExbufDeleteOp, ReceiveOp>(op); });
      if (lacks)
        state->mayLackExbuf.insert(func);
    }
  }
  Runtime rt(module);
  state->emitFunc = buildExitHelper(b, loc, *state, rt, /*drop=*/false);
  state->dropFunc = buildExitHelper(b, loc, *state, rt, /*drop=*/true);
  state->countFunc = buildCountHelper(b, loc, *state);
  app.walk([&](Operation *op) {
    state->usesTimestamps |= isa<TimestampOp>(op);
    state->usesWireLength |= isa<WireLengthOp>(op);
    state->hasWatchdog |= isa<WatchdogOp>(op);
  });
  for (auto [index, pe] : llvm::enumerate(state->pes)) {
    for (HandlerOp handler :
         llvm::make_early_inc_range(pe.getBodyBlock()->getOps<HandlerOp>())) {
      LLVM::LLVMFuncOp func =
          handler->hasAttr(analysis::kFlowKeyAttr)
              ? state->keyHandlers[index]
              : state
                    ->handlers[index][static_cast<unsigned>(handler.getKind())];
      func.getBody().takeBody(handler.getBody());
      Block &entry = func.getBody().front();
      // (port) or () becomes (ctx, xb, port).
      entry.insertArgument(0u, ptr, handler.getLoc());
      entry.insertArgument(1u, ptr, handler.getLoc());
      if (entry.getNumArguments() == 2)
        entry.addArgument(i32, handler.getLoc());
      if (options.countHandlerRuns &&
          !handler->hasAttr(analysis::kFlowKeyAttr)) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(&entry);
        Emitter e(b, handler.getLoc());
        bump(e, peState(e, entry.getArgument(0), index),
             offsetof(netvm_pe_state, runs));
      }
    }
  }

  // Sources: a route (deliver, return the verdict), inlined into the entry
  // function (which counts the verdict) and into the batch loop.
  for (auto [index, name] : llvm::enumerate(state->sourceNames)) {
    auto route =
        LLVM::LLVMFuncOp::create(b, loc, state->prefix + "route." + name,
                                 routeType, LLVM::Linkage::Internal);
    route.setAlwaysInline(true);
    setNoAlias(route);
    {
      Block *entry = route.addEntryBlock(b);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(entry);
      Value verdict = emitDeliver(b, loc, *state, rt, entry->getArgument(0),
                                  entry->getArgument(1),
                                  state->sourceRoutes[index], std::nullopt);
      LLVM::ReturnOp::create(b, loc, ValueRange{verdict});
    }
    state->routeFuncs.push_back(route);
    auto func =
        LLVM::LLVMFuncOp::create(b, loc, state->prefix + "source." + name,
                                 entryType, LLVM::Linkage::Internal);
    setNoAlias(func);
    func.setPassthroughAttr(
        b.getArrayAttr({b.getStringAttr(kSourceEntryAttribute)}));
    Block *entry = func.addEntryBlock(b);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(entry);
    Emitter e(b, loc);
    Value c = entry->getArgument(0), xb = entry->getArgument(1);
    e.call(state->countFunc, {c, e.call(route, {c, xb}), xb});
    LLVM::ReturnOp::create(b, loc, ValueRange());
    state->sourceFuncs.push_back(func);
  }
  bool clearInfo = llvm::any_of(
      state->peFlags, [](uint32_t f) { return f & NETVM_PE_WRITES_INFO; });
  bool resetExbuf = !state->mayLackExbuf.empty();
  for (unsigned index = 0; index < state->sourceNames.size(); ++index)
    state->batchFuncs.push_back(
        buildBatchEntry(b, loc, *state, index, clearInfo, resetExbuf));
  // Pull functions of the sinks fed by pull connections.
  for (auto [index, name] : llvm::enumerate(state->sinkNames)) {
    if (!state->sinkUpstreams[index]) {
      state->sinkPullFuncs.push_back({});
      continue;
    }
    auto func = LLVM::LLVMFuncOp::create(b, loc, state->prefix + "pull." + name,
                                         entryType, LLVM::Linkage::Internal);
    Block *entry = func.addEntryBlock(b);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(entry);
    Emitter e(b, loc);
    Value ctxArg = entry->getArgument(0), xb = entry->getArgument(1);
    emitPull(b, loc, *state, rt, ctxArg, xb, state->sinkUpstreams[index]);
    // Emit what came back, if anything.
    Value flags = e.load(e.i32(), xb, offsetof(netvm_exbuf, flags));
    Value none = e.icmp(LLVM::ICmpPredicate::ne,
                        e.and_(flags, e.c32(NETVM_XB_NONE)), e.c32(0));
    Block *emit = b.createBlock(&func.getBody());
    Block *done = b.createBlock(&func.getBody());
    b.setInsertionPointToEnd(entry);
    LLVM::CondBrOp::create(b, loc, none, done, emit);
    b.setInsertionPointToStart(emit);
    Value verdict = e.call(state->emitFunc, {ctxArg, e.c32(index), xb});
    e.call(state->countFunc, {ctxArg, verdict, xb});
    LLVM::BrOp::create(b, loc, ValueRange(), done);
    b.setInsertionPointToStart(done);
    LLVM::ReturnOp::create(b, loc, ValueRange());
    state->sinkPullFuncs.push_back(func);
  }
  // The init function: every init handler, in NetPE order.
  {
    state->initFunc = LLVM::LLVMFuncOp::create(
        b, loc, state->prefix + "init", initType, LLVM::Linkage::Internal);
    Block *entry = state->initFunc.addEntryBlock(b);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(entry);
    Emitter e(b, loc);
    Value null = LLVM::ZeroOp::create(b, loc, ptr);
    for (auto &funcs : state->handlers)
      if (LLVM::LLVMFuncOp init =
              funcs[static_cast<unsigned>(HandlerKind::Init)])
        e.call(init, {entry->getArgument(0), null, e.c32(0)});
    LLVM::ReturnOp::create(b, loc, ValueRange());
  }
  app.erase();
  return state;
}

//===----------------------------------------------------------------------===//
// Step 2: patterns
//===----------------------------------------------------------------------===//

namespace {

/// Common base: access to the lowering state and helpers shared by all
/// netvm operation patterns.
template <typename OpTy> class Lowering : public OpConversionPattern<OpTy> {
public:
  Lowering(LLVMTypeConverter &converter, NativeLoweringState &state)
      : OpConversionPattern<OpTy>(converter, &converter.getContext()),
        state(state) {}

protected:
  NativeLoweringState &state;

  /// Split the block before `op` and branch to a failure block (which
  /// reports exception `kind` and returns) unless `ok` holds. The rewriter
  /// is left at `op`, at the start of the continuation.
  void guard(ConversionPatternRewriter &rw, Operation *op, Value ok,
             ExceptionKind kind, const FuncInfo &fi) const {
    Location loc = op->getLoc();
    unsigned site = state.addSite(fi.pe, fi.kind, loc);
    Block *before = op->getBlock();
    Block *cont = rw.splitBlock(before, op->getIterator());
    Block *fail = rw.createBlock(cont);
    {
      Emitter e(rw, loc);
      Runtime rt(op->getParentOfType<ModuleOp>());
      e.call(rt.get("netvm_rt_exception"),
             {fi.ctx, e.c32(static_cast<uint32_t>(kind)), e.c32(site), fi.xb});
      LLVM::ReturnOp::create(rw, loc, ValueRange{e.c32(NETVM_VERDICT_NONE)});
    }
    rw.setInsertionPointToEnd(before);
    LLVM::CondBrOp::create(rw, loc, ok, cont, ValueRange(), fail, ValueRange(),
                           kLikely);
    rw.setInsertionPoint(op);
  }

  /// Base address and size of a memory space.
  Value base(Emitter &e, MemSpace space, const FuncInfo &fi) const {
    switch (space) {
    case MemSpace::Packet:
      return e.load(e.ptr(), fi.xb, offsetof(netvm_exbuf, packet));
    case MemSpace::Info:
      return e.load(e.ptr(), fi.xb, offsetof(netvm_exbuf, info));
    case MemSpace::Data:
      return e.load(e.ptr(), peState(e, fi.ctx, fi.pe),
                    offsetof(netvm_pe_state, data));
    case MemSpace::Shared:
      return e.load(e.ptr(), fi.ctx, offsetof(netvm_ctx, shared));
    case MemSpace::InitData: {
      const std::string &name = state.initdataGlobals[fi.pe];
      if (name.empty()) // no initialised data: never dereferenced
        return LLVM::ZeroOp::create(e.b, e.loc, e.ptr());
      return LLVM::AddressOfOp::create(e.b, e.loc, e.ptr(), name);
    }
    }
    llvm_unreachable("unknown memory space");
  }
  Value size(Emitter &e, MemSpace space, const FuncInfo &fi) const {
    switch (space) {
    case MemSpace::Packet:
      return e.load(e.i32(), fi.xb, offsetof(netvm_exbuf, length));
    case MemSpace::Info:
      return e.load(e.i32(), fi.xb, offsetof(netvm_exbuf, info_length));
    case MemSpace::Data:
      return e.c32(state.dataSizes[fi.pe]);
    case MemSpace::Shared:
      return e.c32(state.sharedSize);
    case MemSpace::InitData:
      return e.c32(state.initdataSizes[fi.pe]);
    }
    llvm_unreachable("unknown memory space");
  }
  /// The coprocessor handle of `name` in the current NetPE.
  Value coprocessor(Emitter &e, StringRef name, const FuncInfo &fi) const {
    auto &names = state.coprocessors[fi.pe];
    unsigned index = llvm::find(names, name) - names.begin();
    Value table = e.load(e.ptr(), peState(e, fi.ctx, fi.pe),
                         offsetof(netvm_pe_state, coprocessors));
    return e.load(e.ptr(), table, index * sizeof(void *));
  }
  /// The address of register `reg` of coprocessor `name` if it has one
  /// (netvm_copro_head in netvm/coprocessor.h), else null: generated code
  /// reads and writes registers in place, and calls the runtime only to
  /// raise the exception of a register that does not exist.
  Value coproRegister(Emitter &e, StringRef name, uint32_t reg,
                      const FuncInfo &fi) const {
    uint32_t count = llvm::StringSwitch<uint32_t>(name)
                         .Case("lookup", NETVM_LOOKUP_REGISTERS)
                         .Case("associative", NETVM_ASSOCIATIVE_REGISTERS)
                         .Case("regexp", NETVM_REGEXP_REGISTERS)
                         .Case("stringmatching", NETVM_STRINGMATCHING_REGISTERS)
                         .Default(0);
    if (reg >= count)
      return nullptr;
    return e.gep(coprocessor(e, name, fi),
                 offsetof(netvm_copro_head, registers) + 4 * int64_t(reg));
  }
  /// Guard on a coprocessor call's result (non-zero = success); `op` is
  /// the netvm operation being lowered, before which the call was emitted.
  void guardCopro(ConversionPatternRewriter &rw, Operation *op, Value status,
                  const FuncInfo &fi) const {
    Emitter e(rw, op->getLoc());
    Value ok = e.icmp(LLVM::ICmpPredicate::ne, status, e.c32(0));
    guard(rw, op, ok, ExceptionKind::Coprocessor, fi);
  }
  Runtime runtime(Operation *op) const {
    return Runtime(op->getParentOfType<ModuleOp>());
  }
  /// A NetIL send with no current exchange buffer raises no_exbuf; only
  /// handlers that can lose it pay for the test.
  void guardExbuf(ConversionPatternRewriter &rw, Operation *op,
                  const FuncInfo &fi) const {
    if (!state.mayLackExbuf.contains(fi.func))
      return;
    Emitter e(rw, op->getLoc());
    Value flags = e.load(e.i32(), fi.xb, offsetof(netvm_exbuf, flags));
    Value ok = e.icmp(LLVM::ICmpPredicate::eq,
                      e.and_(flags, e.c32(NETVM_XB_NONE)), e.c32(0));
    guard(rw, op, ok, ExceptionKind::NoExchangeBuffer, fi);
  }
};

#define NETVM_LOWERING(OpTy)                                                   \
  struct OpTy##Lowering : public Lowering<OpTy> {                              \
    using Lowering<OpTy>::Lowering;                                            \
    LogicalResult                                                              \
    matchAndRewrite(OpTy op, OpAdaptor adaptor,                                \
                    ConversionPatternRewriter &rw) const override;             \
  };                                                                           \
  LogicalResult OpTy##Lowering::matchAndRewrite(                               \
      OpTy op, OpAdaptor adaptor, ConversionPatternRewriter &rw) const

//--- Terminators -----------------------------------------------------------//

NETVM_LOWERING(SendOp) {
  FuncInfo fi = funcInfo(op);
  guardExbuf(rw, op, fi);
  Emitter e(rw, op.getLoc());
  if (state.options.countHandlerRuns)
    bump(e, peState(e, fi.ctx, fi.pe), offsetof(netvm_pe_state, sent));
  unsigned port = state.ports[fi.pe].lookup(op.getPort());
  Runtime rt = runtime(op);
  auto it = state.pushRoutes.find({fi.pe, port});
  Value verdict = emitDeliver(
      rw, op.getLoc(), state, rt, fi.ctx, fi.xb,
      it == state.pushRoutes.end() ? ArrayRef<Dest>() : it->second, fi.pe);
  rw.replaceOpWithNewOp<LLVM::ReturnOp>(op, ValueRange{verdict});
  return success();
}

NETVM_LOWERING(SendDupOp) {
  FuncInfo fi = funcInfo(op);
  guardExbuf(rw, op, fi);
  Emitter e(rw, op.getLoc());
  if (state.options.countHandlerRuns)
    bump(e, peState(e, fi.ctx, fi.pe), offsetof(netvm_pe_state, sent));
  unsigned port = state.ports[fi.pe].lookup(op.getPort());
  Runtime rt = runtime(op);
  Value copy = e.call(rt.get("netvm_rt_clone"), {fi.ctx, fi.xb});
  auto it = state.pushRoutes.find({fi.pe, port});
  emitDeliver(rw, op.getLoc(), state, rt, fi.ctx, copy,
              it == state.pushRoutes.end() ? ArrayRef<Dest>() : it->second,
              fi.pe);
  rw.eraseOp(op);
  return success();
}

NETVM_LOWERING(DropOp) {
  FuncInfo fi = funcInfo(op);
  Emitter e(rw, op.getLoc());
  Value verdict = e.call(state.dropFunc, {fi.ctx, e.c32(fi.pe), fi.xb});
  rw.replaceOpWithNewOp<LLVM::ReturnOp>(op, ValueRange{verdict});
  return success();
}

NETVM_LOWERING(RetOp) {
  Emitter e(rw, op.getLoc());
  rw.replaceOpWithNewOp<LLVM::ReturnOp>(op,
                                        ValueRange{e.c32(NETVM_VERDICT_NONE)});
  return success();
}

NETVM_LOWERING(TrapOp) {
  FuncInfo fi = funcInfo(op);
  Emitter e(rw, op.getLoc());
  unsigned site = state.addSite(fi.pe, fi.kind, op.getLoc());
  e.call(
      runtime(op).get("netvm_rt_exception"),
      {fi.ctx, e.c32(static_cast<uint32_t>(op.getKind())), e.c32(site), fi.xb});
  rw.replaceOpWithNewOp<LLVM::ReturnOp>(op,
                                        ValueRange{e.c32(NETVM_VERDICT_NONE)});
  return success();
}

//--- Checks ----------------------------------------------------------------//

NETVM_LOWERING(CheckOp) {
  FuncInfo fi = funcInfo(op);
  guard(rw, op, adaptor.getCondition(), op.getKind(), fi);
  rw.eraseOp(op);
  return success();
}

NETVM_LOWERING(CheckBoundsOp) {
  FuncInfo fi = funcInfo(op);
  Emitter e(rw, op.getLoc());
  Value end = e.zext(adaptor.getOffset(), e.i64());
  Value extent = adaptor.getLength() ? e.zext(adaptor.getLength(), e.i64())
                                     : e.c64(op.getExtent());
  end = e.add(end, extent);
  Value ok = e.icmp(LLVM::ICmpPredicate::ule, end,
                    e.zext(size(e, op.getSpace(), fi), e.i64()));
  guard(rw, op, ok, boundsExceptionFor(op.getSpace()), fi);
  rw.eraseOp(op);
  return success();
}

NETVM_LOWERING(WatchdogOp) {
  FuncInfo fi = funcInfo(op);
  Emitter e(rw, op.getLoc());
  Value left = e.load(e.i64(), fi.ctx, offsetof(netvm_ctx, budget));
  Value ok = e.icmp(LLVM::ICmpPredicate::sgt, left, e.c64(0));
  e.store(e.sub(left, e.c64(1)), fi.ctx, offsetof(netvm_ctx, budget));
  guard(rw, op, ok, ExceptionKind::Watchdog, fi);
  rw.eraseOp(op);
  return success();
}

//--- Memory ----------------------------------------------------------------//

/// Byte-swap a value read from or written to big-endian memory.
Value toHostOrder(Emitter &e, Value v) {
  if (v.getType().getIntOrFloatBitWidth() == 8)
    return v;
  return LLVM::ByteSwapOp::create(e.b, e.loc, v);
}

NETVM_LOWERING(LoadOp) {
  FuncInfo fi = funcInfo(op);
  Emitter e(rw, op.getLoc());
  Value basePtr = base(e, op.getSpace(), fi);
  // Where netvm-version-packet-checks promises a packet length, the packet
  // pointer is dereferenceable that far: LLVM may then load packet fields
  // speculatively and turn tests into selects.
  if (auto known = op->getAttrOfType<IntegerAttr>(kMinPacketLengthAttr))
    if (auto load = basePtr.getDefiningOp<LLVM::LoadOp>())
      load.setDereferenceableAttr(LLVM::DereferenceableAttr::get(
          rw.getContext(), known.getInt(), /*mayBeNull=*/false));
  Value addr = e.gep(basePtr, e.zext(adaptor.getOffset(), e.i64()));
  Value v = LLVM::LoadOp::create(rw, op.getLoc(), op.getType(), addr, 1);
  // Hosts are little-endian (x86-64, AArch64): a little_endian load is the
  // bytes as they are.
  rw.replaceOp(op, op.getLittleEndian() ? v : toHostOrder(e, v));
  return success();
}

NETVM_LOWERING(StoreOp) {
  FuncInfo fi = funcInfo(op);
  Emitter e(rw, op.getLoc());
  Value addr =
      e.gep(base(e, op.getSpace(), fi), e.zext(adaptor.getOffset(), e.i64()));
  LLVM::StoreOp::create(rw, op.getLoc(), toHostOrder(e, adaptor.getValue()),
                        addr, 1);
  rw.eraseOp(op);
  return success();
}

// Each native instance has its own data and shared memory (replicas of a
// NetPE that writes them are refused), so no other thread adds to the word:
// a load, an add and a store.
NETVM_LOWERING(AtomicAddOp) {
  FuncInfo fi = funcInfo(op);
  Emitter e(rw, op.getLoc());
  Value addr =
      e.gep(base(e, op.getSpace(), fi), e.zext(adaptor.getOffset(), e.i64()));
  Value old =
      toHostOrder(e, LLVM::LoadOp::create(rw, op.getLoc(), e.i32(), addr, 1));
  Value sum = LLVM::AddOp::create(rw, op.getLoc(), old, adaptor.getValue());
  LLVM::StoreOp::create(rw, op.getLoc(), toHostOrder(e, sum), addr, 1);
  rw.eraseOp(op);
  return success();
}

NETVM_LOWERING(CopyOp) {
  FuncInfo fi = funcInfo(op);
  Emitter e(rw, op.getLoc());
  Value src =
      e.gep(base(e, op.getSrcSpace(), fi), e.zext(adaptor.getSrc(), e.i64()));
  Value dst =
      e.gep(base(e, op.getDstSpace(), fi), e.zext(adaptor.getDst(), e.i64()));
  LLVM::MemmoveOp::create(rw, op.getLoc(), dst, src,
                          e.zext(adaptor.getLength(), e.i64()), false);
  rw.eraseOp(op);
  return success();
}

NETVM_LOWERING(PacketLengthOp) {
  FuncInfo fi = funcInfo(op);
  Emitter e(rw, op.getLoc());
  rw.replaceOp(op, e.load(e.i32(), fi.xb, offsetof(netvm_exbuf, length)));
  return success();
}

NETVM_LOWERING(WireLengthOp) {
  FuncInfo fi = funcInfo(op);
  Emitter e(rw, op.getLoc());
  rw.replaceOp(op, e.load(e.i32(), fi.xb, offsetof(netvm_exbuf, wire_length)));
  return success();
}

NETVM_LOWERING(InfoLengthOp) {
  FuncInfo fi = funcInfo(op);
  Emitter e(rw, op.getLoc());
  rw.replaceOp(op, e.load(e.i32(), fi.xb, offsetof(netvm_exbuf, info_length)));
  return success();
}

NETVM_LOWERING(InfoClearOp) {
  FuncInfo fi = funcInfo(op);
  Emitter e(rw, op.getLoc());
  Value info = base(e, MemSpace::Info, fi);
  Value length = e.zext(size(e, MemSpace::Info, fi), e.i64());
  LLVM::MemsetOp::create(rw, op.getLoc(), info, e.cInt(e.i8(), 0), length,
                         false);
  rw.eraseOp(op);
  return success();
}

NETVM_LOWERING(TimestampOp) {
  FuncInfo fi = funcInfo(op);
  Emitter e(rw, op.getLoc());
  rw.replaceOp(op, e.load(e.i32(), fi.xb,
                          op.getUnit() == TimeUnit::Seconds
                              ? offsetof(netvm_exbuf, seconds)
                              : offsetof(netvm_exbuf, microseconds)));
  return success();
}

NETVM_LOWERING(RandomOp) {
  FuncInfo fi = funcInfo(op);
  Emitter e(rw, op.getLoc());
  Value pe = peState(e, fi.ctx, fi.pe);
  Value x = e.load(e.i32(), pe, offsetof(netvm_pe_state, random));
  // xorshift32, as netvm_next_random.
  x = e.xor_(x, e.shl(x, e.c32(13)));
  x = e.xor_(x, e.lshr(x, e.c32(17)));
  x = e.xor_(x, e.shl(x, e.c32(5)));
  e.store(x, pe, offsetof(netvm_pe_state, random));
  rw.replaceOp(op, x);
  return success();
}

//--- Computation -----------------------------------------------------------//

NETVM_LOWERING(ByteSwapOp) {
  rw.replaceOpWithNewOp<LLVM::ByteSwapOp>(op, adaptor.getInput());
  return success();
}

NETVM_LOWERING(FindBitOp) {
  Emitter e(rw, op.getLoc());
  Value clz = LLVM::CountLeadingZerosOp::create(rw, op.getLoc(), e.i32(),
                                                adaptor.getInput(), false);
  rw.replaceOp(op, e.sub(e.c32(31), clz)); // ctlz(0) = 32 gives 0xFFFFFFFF
  return success();
}

NETVM_LOWERING(BitOp) {
  Emitter e(rw, op.getLoc());
  Value x = adaptor.getInput(), index = adaptor.getIndex();
  Value mask = e.shl(e.c32(1), e.and_(index, e.c32(31)));
  Value r;
  switch (op.getKind()) {
  case BitOpKind::Set:
    r = e.or_(x, mask);
    break;
  case BitOpKind::Clear:
    r = e.and_(x, e.xor_(mask, e.c32(~0u)));
    break;
  case BitOpKind::Flip:
    r = e.xor_(x, mask);
    break;
  case BitOpKind::Test:
  case BitOpKind::TestNot: {
    Value set = e.icmp(LLVM::ICmpPredicate::ne, e.and_(x, mask), e.c32(0));
    bool wantSet = op.getKind() == BitOpKind::Test;
    r = e.select(set, e.c32(wantSet ? 1 : 0), e.c32(wantSet ? 0 : 1));
    break;
  }
  }
  Value inRange = e.icmp(LLVM::ICmpPredicate::ult, index, e.c32(32));
  rw.replaceOp(op, e.select(inRange, r, x));
  return success();
}

NETVM_LOWERING(HashOp) {
  Emitter e(rw, op.getLoc());
  unsigned n = adaptor.getInputs().size();
  // The words go to a stack array in the order of the operands.
  Value slot;
  {
    FuncInfo fi = funcInfo(op);
    OpBuilder::InsertionGuard g(rw);
    rw.setInsertionPointToStart(&fi.func.getBody().front());
    slot = LLVM::AllocaOp::create(rw, op.getLoc(), e.ptr(), e.i32(),
                                  Emitter(rw, op.getLoc()).c32(n), 4);
  }
  for (auto [i, v] : llvm::enumerate(adaptor.getInputs()))
    e.store(v, slot, 4 * i, 4);
  rw.replaceOp(op, e.call(runtime(op).get("netvm_rt_hash"), {slot, e.c32(n)}));
  return success();
}

NETVM_LOWERING(ChecksumOp) {
  FuncInfo fi = funcInfo(op);
  Emitter e(rw, op.getLoc());
  Value start = e.gep(base(e, MemSpace::Packet, fi),
                      e.zext(adaptor.getOffset(), e.i64()));
  rw.replaceOp(op, e.call(runtime(op).get("netvm_rt_checksum"),
                          {start, adaptor.getLength()}));
  return success();
}

/// Ones' complement addition of two 16-bit quantities, folded.
Value onesComplementAdd(Emitter &e, Value a, Value b) {
  Value mask = e.c32(0xffff);
  Value s = e.add(e.and_(a, mask), e.and_(b, mask));
  // Two folds: the sum of two 16-bit values is at most 0x1FFFE.
  s = e.add(e.and_(s, mask), e.lshr(s, e.c32(16)));
  return e.add(e.and_(s, mask), e.lshr(s, e.c32(16)));
}

NETVM_LOWERING(ChecksumAddOp) {
  Emitter e(rw, op.getLoc());
  rw.replaceOp(op, onesComplementAdd(e, adaptor.getSum(), adaptor.getValue()));
  return success();
}

NETVM_LOWERING(ChecksumSubOp) {
  Emitter e(rw, op.getLoc());
  Value notValue = e.xor_(adaptor.getValue(), e.c32(~0u));
  rw.replaceOp(op, onesComplementAdd(e, adaptor.getSum(), notValue));
  return success();
}

NETVM_LOWERING(CrcOp) {
  Emitter e(rw, op.getLoc());
  rw.replaceOp(op, e.call(runtime(op).get("netvm_rt_crc_word"),
                          {e.c32(static_cast<uint32_t>(op.getKind())),
                           adaptor.getInput()}));
  return success();
}

NETVM_LOWERING(PacketCrcOp) {
  FuncInfo fi = funcInfo(op);
  Emitter e(rw, op.getLoc());
  Value start = e.gep(base(e, MemSpace::Packet, fi),
                      e.zext(adaptor.getOffset(), e.i64()));
  rw.replaceOp(op, e.call(runtime(op).get("netvm_rt_crc"),
                          {e.c32(static_cast<uint32_t>(op.getKind())), start,
                           adaptor.getLength()}));
  return success();
}

NETVM_LOWERING(FieldCmpOp) {
  FuncInfo fi = funcInfo(op);
  Emitter e(rw, op.getLoc());
  Value packet = base(e, MemSpace::Packet, fi);
  Value lhs = e.gep(packet, e.zext(adaptor.getLhs(), e.i64()));
  Value rhs = e.gep(packet, e.zext(adaptor.getRhs(), e.i64()));
  Value c = e.call(runtime(op).get("netvm_rt_memcmp"),
                   {lhs, rhs, adaptor.getLength()});
  LLVM::ICmpPredicate p = LLVM::ICmpPredicate::eq;
  switch (op.getKind()) {
  case FieldCmpKind::Eq:
    p = LLVM::ICmpPredicate::eq;
    break;
  case FieldCmpKind::Ne:
    p = LLVM::ICmpPredicate::ne;
    break;
  case FieldCmpKind::Lt:
    p = LLVM::ICmpPredicate::slt;
    break;
  case FieldCmpKind::Gt:
    p = LLVM::ICmpPredicate::sgt;
    break;
  }
  rw.replaceOp(op, e.icmp(p, c, e.c32(0)));
  return success();
}

NETVM_LOWERING(PacketScanOp) {
  FuncInfo fi = funcInfo(op);
  Emitter e(rw, op.getLoc());
  unsigned width = op.getValue().getType().getIntOrFloatBitWidth() / 8;
  rw.replaceOp(op, e.call(runtime(op).get("netvm_rt_pscan"),
                          {base(e, MemSpace::Packet, fi),
                           size(e, MemSpace::Packet, fi), adaptor.getOffset(),
                           e.zext(adaptor.getValue(), e.i32()), e.c32(width)}));
  return success();
}

//--- Exchange buffers ------------------------------------------------------//

NETVM_LOWERING(ReceiveOp) {
  FuncInfo fi = funcInfo(op);
  unsigned port = state.ports[fi.pe].lookup(op.getPort());
  auto it = state.pullRoutes.find({fi.pe, port});
  std::optional<Upstream> upstream;
  if (it != state.pullRoutes.end())
    upstream = it->second;
  Runtime rt = runtime(op);
  Emitter e(rw, op.getLoc());
  e.call(rt.get("netvm_rt_discard"), {fi.ctx, e.c32(fi.pe), fi.xb});
  emitPull(rw, op.getLoc(), state, rt, fi.ctx, fi.xb, upstream);
  rw.eraseOp(op);
  return success();
}

NETVM_LOWERING(ExbufCreateOp) {
  FuncInfo fi = funcInfo(op);
  Emitter e(rw, op.getLoc());
  Value status = e.call(runtime(op).get("netvm_rt_exbuf_create"),
                        {fi.ctx, fi.xb, adaptor.getSize()});
  // Too large a buffer (or no memory for it): packet_bounds.
  Value ok = e.icmp(LLVM::ICmpPredicate::ne, status, e.c32(0));
  guard(rw, op, ok, ExceptionKind::PacketBounds, fi);
  rw.eraseOp(op);
  return success();
}

NETVM_LOWERING(ExbufDeleteOp) {
  FuncInfo fi = funcInfo(op);
  Emitter e(rw, op.getLoc());
  e.call(runtime(op).get("netvm_rt_discard"), {fi.ctx, e.c32(fi.pe), fi.xb});
  emitClearExbuf(e, fi.xb);
  rw.eraseOp(op);
  return success();
}

//--- Coprocessors ----------------------------------------------------------//

/// A stack slot for one i32 out-parameter, in the entry block.
Value outSlot(ConversionPatternRewriter &rw, Location loc, FuncInfo fi) {
  OpBuilder::InsertionGuard g(rw);
  rw.setInsertionPointToStart(&fi.func.getBody().front());
  Emitter e(rw, loc);
  return LLVM::AllocaOp::create(rw, loc, e.ptr(), e.i32(), e.c32(1), 4);
}

NETVM_LOWERING(CoproInitOp) {
  FuncInfo fi = funcInfo(op);
  Emitter e(rw, op.getLoc());
  Value slot = outSlot(rw, op.getLoc(), fi);
  uint32_t offset = op.getOffset();
  uint32_t size = state.initdataSizes[fi.pe];
  Value data = base(e, MemSpace::InitData, fi);
  if (offset > size) {
    // Beyond the initialised data: always the initdata_bounds exception.
    guard(rw, op, e.cInt(e.i1(), 0), ExceptionKind::InitDataBounds, fi);
    rw.replaceOp(op, Emitter(rw, op.getLoc()).c32(0));
    return success();
  }
  Value status = e.call(runtime(op).get("netvm_copro_init"),
                        {coprocessor(e, op.getCopro(), fi),
                         e.gep(data, static_cast<int64_t>(offset)),
                         e.c64(size - offset), slot});
  guardCopro(rw, op, status, fi);
  rw.replaceOp(op, Emitter(rw, op.getLoc()).load(e.i32(), slot, 0, 4));
  return success();
}

NETVM_LOWERING(CoproReadOp) {
  FuncInfo fi = funcInfo(op);
  Emitter e(rw, op.getLoc());
  if (Value reg = coproRegister(e, op.getCopro(), op.getReg(), fi)) {
    rw.replaceOp(op, e.load(e.i32(), reg, 0, 4));
    return success();
  }
  Value slot = outSlot(rw, op.getLoc(), fi);
  Value status =
      e.call(runtime(op).get("netvm_copro_read"),
             {coprocessor(e, op.getCopro(), fi), e.c32(op.getReg()), slot});
  guardCopro(rw, op, status, fi);
  rw.replaceOp(op, Emitter(rw, op.getLoc()).load(e.i32(), slot, 0, 4));
  return success();
}

NETVM_LOWERING(CoproWriteOp) {
  FuncInfo fi = funcInfo(op);
  Emitter e(rw, op.getLoc());
  if (Value reg = coproRegister(e, op.getCopro(), op.getReg(), fi)) {
    e.store(adaptor.getValue(), reg, 0, 4);
    rw.eraseOp(op);
    return success();
  }
  Value status = e.call(runtime(op).get("netvm_copro_write"),
                        {coprocessor(e, op.getCopro(), fi), e.c32(op.getReg()),
                         adaptor.getValue()});
  guardCopro(rw, op, status, fi);
  rw.eraseOp(op);
  return success();
}

NETVM_LOWERING(CoproInvokeOp) {
  FuncInfo fi = funcInfo(op);
  Emitter e(rw, op.getLoc());
  if (op.getCopro() == "lookup" && op.getOpcode() == 1) {
    // add_data in place: the pending key lives in the spare registers of
    // the instance's head (netvm/coprocessor.h); a 17th word raises.
    Value regs = e.gep(coprocessor(e, op.getCopro(), fi),
                       offsetof(netvm_copro_head, registers));
    Value length = e.load(e.i32(), regs, 4 * NETVM_LOOKUP_PENDING_LENGTH, 4);
    guard(rw, op,
          e.icmp(LLVM::ICmpPredicate::ult, length,
                 e.c32(NETVM_COPRO_MAX_REGISTERS - NETVM_LOOKUP_PENDING_KEY)),
          ExceptionKind::Coprocessor, fi);
    Emitter in(rw, op.getLoc());
    Value word = in.load(in.i32(), regs, 0, 4); // R0
    Value at =
        in.shl(in.add(length, in.c32(NETVM_LOOKUP_PENDING_KEY)), in.c32(2));
    in.store(word, in.gep(regs, in.zext(at, in.i64())), 0, 4);
    in.store(in.add(length, in.c32(1)), regs, 4 * NETVM_LOOKUP_PENDING_LENGTH,
             4);
    rw.eraseOp(op);
    return success();
  }
  Value status =
      e.call(runtime(op).get("netvm_copro_invoke"),
             {coprocessor(e, op.getCopro(), fi), e.c32(op.getOpcode())});
  guardCopro(rw, op, status, fi);
  rw.eraseOp(op);
  return success();
}

NETVM_LOWERING(CoproExbufOp) {
  FuncInfo fi = funcInfo(op);
  guardExbuf(rw, op, fi);
  Emitter e(rw, op.getLoc());
  e.call(runtime(op).get("netvm_copro_attach"),
         {coprocessor(e, op.getCopro(), fi), base(e, MemSpace::Packet, fi),
          size(e, MemSpace::Packet, fi)});
  rw.eraseOp(op);
  return success();
}

#undef NETVM_LOWERING

} // namespace

void netvm::populateNetVMToLLVMConversionPatterns(LLVMTypeConverter &converter,
                                                  RewritePatternSet &patterns,
                                                  NativeLoweringState &state) {
  patterns
      .add<SendOpLowering, SendDupOpLowering, DropOpLowering, RetOpLowering,
           TrapOpLowering, CheckOpLowering, CheckBoundsOpLowering,
           WatchdogOpLowering, LoadOpLowering, StoreOpLowering, CopyOpLowering,
           AtomicAddOpLowering, PacketLengthOpLowering, WireLengthOpLowering,
           InfoLengthOpLowering, InfoClearOpLowering, TimestampOpLowering,
           RandomOpLowering, ByteSwapOpLowering, FindBitOpLowering,
           BitOpLowering, HashOpLowering, ChecksumOpLowering,
           ChecksumAddOpLowering, ChecksumSubOpLowering, CrcOpLowering,
           PacketCrcOpLowering, FieldCmpOpLowering, PacketScanOpLowering,
           ReceiveOpLowering, ExbufCreateOpLowering, ExbufDeleteOpLowering,
           CoproInitOpLowering, CoproReadOpLowering, CoproWriteOpLowering,
           CoproInvokeOpLowering, CoproExbufOpLowering>(converter, state);
}

//===----------------------------------------------------------------------===//
// Step 3: the descriptor
//===----------------------------------------------------------------------===//

namespace {
/// Builds constant globals for the descriptor.
class GlobalBuilder {
public:
  GlobalBuilder(ModuleOp module, StringRef prefix)
      : module(module), b(module.getContext()), prefix(prefix.str()),
        loc(module.getLoc()) {
    b.setInsertionPointToEnd(module.getBody());
    ptr = LLVM::LLVMPointerType::get(module.getContext());
  }

  /// A NUL-terminated string; returns its symbol.
  std::string string(StringRef value) {
    auto it = strings.find(value);
    if (it != strings.end())
      return it->second;
    std::string name = prefix + "str." + std::to_string(strings.size());
    std::string bytes = value.str();
    bytes.push_back('\0');
    auto type = LLVM::LLVMArrayType::get(b.getI8Type(), bytes.size());
    LLVM::GlobalOp::create(b, loc, type, true, LLVM::Linkage::Internal, name,
                           b.getStringAttr(bytes));
    strings[value] = name;
    return name;
  }

  /// A constant global of `type` whose initializer `fill` builds.
  std::string global(StringRef name, Type type,
                     function_ref<Value(OpBuilder &)> fill,
                     LLVM::Linkage linkage = LLVM::Linkage::Internal) {
    auto g =
        LLVM::GlobalOp::create(b, loc, type, true, linkage, name, Attribute());
    Block *init = b.createBlock(&g.getInitializerRegion());
    OpBuilder inner = OpBuilder::atBlockEnd(init);
    Value v = fill(inner);
    LLVM::ReturnOp::create(inner, loc, v);
    b.setInsertionPointToEnd(module.getBody());
    return name.str();
  }

  /// An array of pointers to `symbols` (null for empty names).
  std::string pointerArray(StringRef name, ArrayRef<std::string> symbols) {
    auto type =
        LLVM::LLVMArrayType::get(ptr, std::max<size_t>(symbols.size(), 1));
    return global(name, type, [&](OpBuilder &ib) -> Value {
      Value array = LLVM::UndefOp::create(ib, loc, type);
      for (auto [i, symbol] : llvm::enumerate(symbols)) {
        Value element =
            symbol.empty()
                ? LLVM::ZeroOp::create(ib, loc, ptr).getResult()
                : LLVM::AddressOfOp::create(ib, loc, ptr, symbol).getResult();
        array = LLVM::InsertValueOp::create(ib, loc, array, element,
                                            ArrayRef<int64_t>{int64_t(i)});
      }
      if (symbols.empty())
        array = LLVM::InsertValueOp::create(ib, loc, array,
                                            LLVM::ZeroOp::create(ib, loc, ptr),
                                            ArrayRef<int64_t>{0});
      return array;
    });
  }

  ModuleOp module;
  OpBuilder b;
  std::string prefix;
  Location loc;
  Type ptr;
  llvm::StringMap<std::string> strings;
};
} // namespace

LogicalResult netvm::finishNativeLowering(ModuleOp module,
                                          NativeLoweringState &state) {
  GlobalBuilder g(module, state.prefix);
  MLIRContext *ctx = module.getContext();
  Type i32 = IntegerType::get(ctx, 32), ptr = g.ptr;
  Location loc = g.loc;
  auto insert = [&](OpBuilder &ib, Value agg, Value v, int64_t i) {
    return LLVM::InsertValueOp::create(ib, loc, agg, v, ArrayRef<int64_t>{i})
        .getResult();
  };
  auto c32 = [&](OpBuilder &ib, uint64_t v) -> Value {
    return LLVM::ConstantOp::create(
        ib, loc, i32, static_cast<int64_t>(static_cast<uint32_t>(v)));
  };
  auto addr = [&](OpBuilder &ib, StringRef symbol) -> Value {
    if (symbol.empty())
      return LLVM::ZeroOp::create(ib, loc, ptr);
    return LLVM::AddressOfOp::create(ib, loc, ptr, symbol);
  };

  // netvm_pe_desc[]: {name, data_size, initdata_size, initdata,
  //                   num_coprocessors, flags, coprocessors}
  auto peDescType = LLVM::LLVMStructType::getLiteral(
      ctx, {ptr, i32, i32, ptr, i32, i32, ptr});
  SmallVector<std::string> peNameSyms, coproArrays;
  for (auto [i, name] : llvm::enumerate(state.peNames)) {
    peNameSyms.push_back(g.string(name));
    SmallVector<std::string> coproNames;
    for (const std::string &c : state.coprocessors[i])
      coproNames.push_back(g.string(c));
    coproArrays.push_back(g.pointerArray(
        state.prefix + "copros." + std::to_string(i), coproNames));
  }
  auto peArrayType = LLVM::LLVMArrayType::get(
      peDescType, std::max<size_t>(state.peNames.size(), 1));
  std::string peArray =
      g.global(state.prefix + "pes", peArrayType, [&](OpBuilder &ib) -> Value {
        Value array = LLVM::UndefOp::create(ib, loc, peArrayType);
        for (size_t i = 0; i < state.peNames.size(); ++i) {
          Value d = LLVM::UndefOp::create(ib, loc, peDescType);
          d = insert(ib, d, addr(ib, peNameSyms[i]), 0);
          d = insert(ib, d, c32(ib, state.dataSizes[i]), 1);
          d = insert(ib, d, c32(ib, state.initdataSizes[i]), 2);
          d = insert(ib, d, addr(ib, state.initdataGlobals[i]), 3);
          d = insert(ib, d, c32(ib, state.coprocessors[i].size()), 4);
          d = insert(ib, d, c32(ib, state.peFlags[i]), 5);
          d = insert(ib, d, addr(ib, coproArrays[i]), 6);
          array = insert(ib, array, d, i);
        }
        return array;
      });

  // Sources, sinks and their functions.
  SmallVector<std::string> sourceNameSyms, sinkNameSyms, sourceFuncs, sinkFuncs;
  for (const std::string &name : state.sourceNames)
    sourceNameSyms.push_back(g.string(name));
  for (const std::string &name : state.sinkNames)
    sinkNameSyms.push_back(g.string(name));
  for (LLVM::LLVMFuncOp f : state.sourceFuncs)
    sourceFuncs.push_back(f.getSymName().str());
  for (LLVM::LLVMFuncOp f : state.sinkPullFuncs)
    sinkFuncs.push_back(f ? f.getSymName().str() : std::string());
  std::string sourceNamesArr =
      g.pointerArray(state.prefix + "source_names", sourceNameSyms);
  std::string sinkNamesArr =
      g.pointerArray(state.prefix + "sink_names", sinkNameSyms);
  std::string sourcesArr =
      g.pointerArray(state.prefix + "sources", sourceFuncs);
  std::string sinkPullsArr =
      g.pointerArray(state.prefix + "sink_pulls", sinkFuncs);
  SmallVector<std::string> batchFuncs, pushHandlers;
  for (LLVM::LLVMFuncOp f : state.batchFuncs)
    batchFuncs.push_back(f.getSymName().str());
  std::string batchesArr = g.pointerArray(state.prefix + "batches", batchFuncs);
  std::string pePushArr;
  if (state.options.forwardLinks) {
    for (auto &funcs : state.handlers) {
      LLVM::LLVMFuncOp push = funcs[static_cast<unsigned>(HandlerKind::Push)];
      pushHandlers.push_back(push ? push.getSymName().str() : std::string());
    }
    pePushArr = g.pointerArray(state.prefix + "pe_push", pushHandlers);
  }
  // Per NetPE: its flow key function, or null; no array when none has one.
  std::string peKeyArr;
  if (state.options.forwardLinks && !state.keyHandlers.empty()) {
    SmallVector<std::string> keys;
    for (size_t i = 0; i < state.peNames.size(); ++i)
      keys.push_back(i < state.keyHandlers.size() && state.keyHandlers[i]
                         ? state.keyHandlers[i].getSymName().str()
                         : std::string());
    peKeyArr = g.pointerArray(state.prefix + "pe_key", keys);
  }
  // A topological order of the NetPEs along push connections (Kahn's
  // algorithm, declaration order among ready NetPEs): the runtime cuts it
  // into pipeline stages.
  std::string peOrderArr;
  if (state.options.forwardLinks) {
    size_t n = state.peNames.size();
    std::vector<unsigned> indegree(n, 0), order;
    for (auto &[from, dests] : state.pushRoutes)
      for (const Dest &d : dests)
        if (d.kind == Dest::PE)
          ++indegree[d.index];
    std::vector<bool> placed(n, false);
    while (order.size() < n) {
      size_t next = n;
      for (size_t i = 0; i < n && next == n; ++i)
        if (!placed[i] && indegree[i] == 0)
          next = i;
      if (next == n) // a cycle: the verifier rejects these; keep going
        for (size_t i = 0; i < n && next == n; ++i)
          if (!placed[i])
            next = i;
      placed[next] = true;
      order.push_back(next);
      for (auto &[from, dests] : state.pushRoutes)
        if (from.first == next)
          for (const Dest &d : dests)
            if (d.kind == Dest::PE && indegree[d.index])
              --indegree[d.index];
    }
    auto type = LLVM::LLVMArrayType::get(i32, std::max<size_t>(n, 1));
    peOrderArr =
        g.global(state.prefix + "pe_order", type, [&](OpBuilder &ib) -> Value {
          Value array = LLVM::UndefOp::create(ib, loc, type);
          for (size_t i = 0; i < std::max<size_t>(n, 1); ++i)
            array = insert(ib, array, c32(ib, i < n ? order[i] : 0), i);
          return array;
        });
  }

  // Exception sites: {pe, handler, location}.
  auto siteType = LLVM::LLVMStructType::getLiteral(ctx, {i32, i32, ptr});
  SmallVector<std::string> siteLocs;
  for (const Site &s : state.sites)
    siteLocs.push_back(g.string(s.location));
  auto siteArrayType = LLVM::LLVMArrayType::get(
      siteType, std::max<size_t>(state.sites.size(), 1));
  std::string sitesArr = g.global(
      state.prefix + "sites", siteArrayType, [&](OpBuilder &ib) -> Value {
        Value array = LLVM::UndefOp::create(ib, loc, siteArrayType);
        for (auto [i, s] : llvm::enumerate(state.sites)) {
          Value d = LLVM::UndefOp::create(ib, loc, siteType);
          d = insert(ib, d, c32(ib, s.pe), 0);
          d = insert(ib, d, c32(ib, static_cast<uint32_t>(s.handler)), 1);
          d = insert(ib, d, addr(ib, siteLocs[i]), 2);
          array = insert(ib, array, d, i);
        }
        return array;
      });

  // netvm_app_desc: {abi_version, num_pes, name, pes, num_sources,
  //   num_sinks, source_names, sink_names, sources, sink_pulls, init,
  //   info_size, shared_size, num_sites, flags, sites, batches, pe_push,
  //   pe_order, pe_key}
  auto descType = LLVM::LLVMStructType::getLiteral(
      ctx, {i32, i32, ptr, ptr, i32, i32, ptr, ptr, ptr, ptr,
            ptr, i32, i32, i32, i32, ptr, ptr, ptr, ptr, ptr});
  std::string appNameSym = g.string(state.appName);
  g.global(
      state.options.descriptorSymbol, descType,
      [&](OpBuilder &ib) -> Value {
        Value d = LLVM::UndefOp::create(ib, loc, descType);
        d = insert(ib, d, c32(ib, NETVM_ABI_VERSION), 0);
        d = insert(ib, d, c32(ib, state.peNames.size()), 1);
        d = insert(ib, d, addr(ib, appNameSym), 2);
        d = insert(ib, d, addr(ib, peArray), 3);
        d = insert(ib, d, c32(ib, state.sourceNames.size()), 4);
        d = insert(ib, d, c32(ib, state.sinkNames.size()), 5);
        d = insert(ib, d, addr(ib, sourceNamesArr), 6);
        d = insert(ib, d, addr(ib, sinkNamesArr), 7);
        d = insert(ib, d, addr(ib, sourcesArr), 8);
        d = insert(ib, d, addr(ib, sinkPullsArr), 9);
        d = insert(ib, d, addr(ib, state.initFunc.getSymName()), 10);
        d = insert(ib, d, c32(ib, state.infoSize), 11);
        d = insert(ib, d, c32(ib, state.sharedSize), 12);
        d = insert(ib, d, c32(ib, state.sites.size()), 13);
        d = insert(ib, d,
                   c32(ib, state.options.forwardLinks
                               ? NETVM_APP_FORWARDED_LINKS
                               : 0u),
                   14);
        d = insert(ib, d, addr(ib, sitesArr), 15);
        d = insert(ib, d, addr(ib, batchesArr), 16);
        d = insert(ib, d, addr(ib, pePushArr), 17);
        d = insert(ib, d, addr(ib, peOrderArr), 18);
        d = insert(ib, d, addr(ib, peKeyArr), 19);
        return d;
      },
      LLVM::Linkage::External);

  // The handler attributes have served their purpose.
  module.walk([](LLVM::LLVMFuncOp f) {
    f->removeAttr("netvm.pe");
    f->removeAttr("netvm.handler");
  });
  return success();
}

LogicalResult netvm::lowerToLLVMDialect(ModuleOp module,
                                        const NativeLoweringOptions &options) {
  // Blocks no path reaches (a NetIL label only a never-taken switch case
  // names, at -O0) would escape the conversion, which visits reachable
  // blocks only; they cannot run, so they go.
  IRRewriter rewriter(module.getContext());
  module.walk([&](HandlerOp handler) {
    (void)eraseUnreachableBlocks(rewriter, handler->getRegions());
  });
  FailureOr<std::unique_ptr<NativeLoweringState>> state =
      prepareNativeLowering(module, options);
  if (failed(state))
    return failure();

  MLIRContext *ctx = module.getContext();
  LLVMTypeConverter converter(ctx);
  RewritePatternSet patterns(ctx);
  populateNetVMToLLVMConversionPatterns(converter, patterns, **state);
  arith::populateArithToLLVMConversionPatterns(converter, patterns);
  cf::populateControlFlowToLLVMConversionPatterns(converter, patterns);
  populateMathToLLVMConversionPatterns(converter, patterns);
  LLVMConversionTarget target(*ctx);
  target.addLegalOp<ModuleOp>();
  if (failed(applyFullConversion(module, target, std::move(patterns))))
    return failure();
  return finishNativeLowering(module, **state);
}
