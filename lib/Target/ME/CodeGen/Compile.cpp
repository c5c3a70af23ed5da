//===- Compile.cpp - A NetVM application as an ME image -------------------===//
//
// The driver of the back end and the packet path around the handlers. The
// layout is the one of the hand-written filter pipelines
// (examples/me/pipeline-rx-tx.inc), so compiled and hand-written programs
// are measured in the same pipeline:
//
//   ME 0, receive (8 contexts): free buffer -> msf[rx] -> work ring, in
//        packet order (two tokens pass from context to context);
//   ME 1, the NetPEs (8 contexts): take work in order, prefetch the
//        header, run the handlers to completion (a send to a NetPE on this
//        ME is a branch to its entry), put what goes to a sink on the
//        transmit ring in order, free what is dropped;
//   ME 2, transmit (1 context): msf[tx] with the packet's tag and port,
//        then free the buffer.
//
// docs/me-backend.md has the memory map and what is refused.
//
//===----------------------------------------------------------------------===//

#include "netvm/Target/ME/CodeGen.h"

#include "CodeGenInternal.h"

#include "ME/MEOps.h"
#include "NetVM/NetVMOps.h"
#include "netvm/Conversion/NetVMToME.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

#include <sstream>

using namespace mlir;
using namespace netvm;
using namespace netvm::me;
namespace med = netvm::medialect;

namespace {

// The memory map (docs/me-backend.md, "Memory map").
constexpr unsigned freeRing = 0, txRing = 1, workRing = 2;
constexpr uint32_t freeRingBase = 0x0, txRingBase = 0x800,
                   workRingBase = 0x1000;
constexpr unsigned entryWords = 5; // buffer, length, wire, status, tag
constexpr unsigned buffers = 64;
constexpr uint32_t bufferBase = 0x10000, bufferBytes = 2048;
constexpr uint32_t watchdogAddress = 0x0, eventCountAddress = 0x4,
                   eventLogAddress = 0x100, eventCapacity = 16384;
/// Data memories, initialised data and shared memory, in SRAM from here.
constexpr uint32_t sramDataBase = 0x80000;
constexpr unsigned handlerME = 1, rxME = 0, txME = 2;

std::string hex(uint32_t v) {
  std::ostringstream os;
  os << "0x" << std::hex << v;
  return os.str();
}

struct LineBuilder {
  CodeSection &section;
  void operator()(const std::string &text, const std::string &comment = "") {
    Line line = asmLine(text, comment);
    line.labels = std::move(section.pendingLabels);
    section.pendingLabels.clear();
    section.lines.push_back(std::move(line));
  }
  void label(const std::string &name) { section.pendingLabels.push_back(name); }
  /// Puts the entry in $0.. on a ring in packet order: wait for the put
  /// token (s2), issue the put, pass the token to the next context, then
  /// wait for the put (signal `done`).
  void orderedPut(unsigned ring, const std::string &done,
                  const std::string &comment = "") {
    (*this)("ctx_arb[s2]", comment);
    (*this)("scratch[put, $0, " + std::to_string(ring) + ", 0, " +
            std::to_string(entryWords) + "], sig_done[" + done + "]");
    (*this)("local_csr_wr[same_me_signal, " + hex(0x80 | (2 << 3)) + "]");
    (*this)("ctx_arb[" + done + "]");
  }
};

/// ME 0: receive into free buffers, hand [buffer, length, wire, status,
/// tag] to the work ring in packet order.
void receiveStage(Program &program) {
  CodeSection section;
  section.meMask = 1u << rxME;
  section.title = "ME 0: receive";
  LineBuilder a{section};
  a("br!=ctx[0, @rx_loop]");
  a("immed[a1, " + hex(bufferBase) + "]", "context 0 fills the free ring");
  a("immed[b1, " + std::to_string(bufferBytes) + "]");
  a("immed[a2, " + std::to_string(buffers / 16) + "]");
  a.label("fill");
  a("local_csr_wr[t_index, 0]");
  a("immed[b2, 16]");
  a.label("fill_word");
  a("alu[*$index++, --, b, a1]");
  a("alu[a1, a1, +, b1]");
  a("alu[b2, b2, -, 1]");
  a("bne[@fill_word]");
  a("scratch[put, $0, " + std::to_string(freeRing) + ", 0, 16], ctx_swap[s3]");
  a("alu[a2, a2, -, 1]");
  a("bne[@fill]");
  a("local_csr_wr[same_me_signal, " + hex(1 << 3) + "]");
  a("local_csr_wr[same_me_signal, " + hex(2 << 3) + "]");
  a.label("rx_loop");
  a("scratch[get, $0, " + std::to_string(freeRing) + ", 0, 1], ctx_swap[s3]");
  a("alu[a0, --, b, $0]");
  a("beq[@rx_loop]", "no free buffer yet");
  a("ctx_arb[s1]", "receive token");
  a("msf[rx, $0, a0, 0, 4], sig_done[s3]");
  a("local_csr_wr[same_me_signal, " + hex(0x80 | (1 << 3)) + "]");
  a("ctx_arb[s3]");
  a("br_bset[$2, 0, @rx_end]", "end of input");
  a("alu[$0, --, b, a0]");
  a("alu[$1, --, b, $0]", "length");
  a("alu[$2, --, b, $1]", "wire length");
  a("alu[$3, --, b, $2]", "status");
  a("alu[$4, --, b, $3]", "the packet's number: its tag");
  a.orderedPut(workRing, "s3", "put token");
  a("br[@rx_loop]");
  a.label("rx_end");
  a("immed[$0, 0xffffffff]", "end marker");
  a("immed[$1, 0]");
  a("immed[$2, 0]");
  a("immed[$3, 1]");
  a("immed[$4, 0]");
  a.orderedPut(workRing, "s3");
  a("ctx_arb[kill]");
  program.code.push_back(std::move(section));
}

/// ME 2: transmit in ring order with the tag, then free the buffer.
void transmitStage(Program &program) {
  CodeSection section;
  section.meMask = 1u << txME;
  section.ctxEnable = 1;
  section.title = "ME 2: transmit";
  LineBuilder a{section};
  a("immed[b5, 0]", "end markers seen");
  a.label("tx_loop");
  a("scratch[get, $0, " + std::to_string(txRing) + ", 0, " +
    std::to_string(entryWords) + "], ctx_swap[s1]");
  a("alu[a0, --, b, $0]");
  a("beq[@tx_loop]", "nothing to send yet");
  a("alu[--, a0, +, 1]");
  a("beq[@tx_marker]");
  a("alu[$0, --, b, $1]", "length");
  a("alu[$1, --, b, $2]", "wire length");
  a("alu[$2, --, b, $3]", "transmit port: the sink");
  a("alu[$3, --, b, $4]", "tag");
  a("msf[tx, $0, a0, 0, 4], ctx_swap[s2]");
  a("alu[$0, --, b, a0]");
  a("scratch[put, $0, " + std::to_string(freeRing) + ", 0, 1], sig_done[s3]");
  a("ctx_arb[s3]");
  a("br[@tx_loop]");
  a.label("tx_marker");
  a("alu[b5, b5, +, 1]");
  a("alu[--, b5, -, 8]");
  a("bne[@tx_loop]");
  a("ctx_arb[kill]");
  program.code.push_back(std::move(section));
}

struct PEInfo {
  PEOp pe;
  unsigned index = 0;
  med::FuncOp push, init;
  MEHandlerInfo pushInfo, initInfo;
};

} // namespace

LogicalResult netvm::me::compileApplication(ModuleOp module,
                                            const CodeGenOptions &options,
                                            CompiledApp &result,
                                            OwningOpRef<ModuleOp> *meIR) {
  ApplicationOp app;
  module.walk([&](ApplicationOp a) { app = a; });
  if (!app)
    return module.emitError("no netvm.application to compile");
  MLIRContext *ctx = module.getContext();
  ctx->getOrLoadDialect<med::MEDialect>();
  result = CompiledApp();
  AppLayout &layout = result.layout;

  // Sources, sinks, NetPEs.
  std::vector<SourceOp> sources;
  std::vector<SinkOp> sinks;
  std::vector<PEInfo> pes;
  for (Operation &op : *app.getBodyBlock()) {
    if (auto s = dyn_cast<SourceOp>(op))
      sources.push_back(s);
    else if (auto s = dyn_cast<SinkOp>(op))
      sinks.push_back(s);
    else if (auto pe = dyn_cast<PEOp>(op)) {
      PEInfo info;
      info.pe = pe;
      info.index = pes.size();
      pes.push_back(info);
    }
  }
  for (SourceOp s : sources)
    layout.sources.push_back(s.getSymName().str());
  for (SinkOp s : sinks)
    layout.sinks.push_back(s.getSymName().str());
  if (sources.size() > 16 || sinks.size() > 16)
    return app.emitError("the microengine back end runs at most 16 sources "
                         "and 16 sinks (the media switch fabric's ports); "
                         "this application has ")
           << sources.size() << " and " << sinks.size();
  if (sources.size() > 1)
    return app.emitError("the microengine back end does not yet run "
                         "applications with several sources");

  // Where each connection goes: (from) -> list of (to).
  struct Endpoint {
    PEOp pe;
    unsigned port = 0;
    int sink = -1;
  };
  std::map<std::pair<std::string, unsigned>, std::vector<Endpoint>> outputs;
  std::vector<Endpoint> fromSource;
  for (ConnectOp connect : app.getBodyBlock()->getOps<ConnectOp>()) {
    SymbolRefAttr from = connect.getFrom(), to = connect.getTo();
    Endpoint dest;
    if (to.getNestedReferences().empty()) {
      for (auto [i, s] : llvm::enumerate(sinks))
        if (s.getSymName() == to.getRootReference())
          dest.sink = static_cast<int>(i);
    } else {
      dest.pe = app.lookupPE(to.getRootReference());
      if (!dest.pe)
        return connect.emitError("unknown NetPE");
      PortOp port = dest.pe.lookupPort(to.getLeafReference());
      if (!port || port.getKind() != PortKind::PushInput)
        return connect.emitError(
            "the microengine back end runs push connections only");
      dest.port = dest.pe.getPortNumber(port);
    }
    if (from.getNestedReferences().empty()) {
      fromSource.push_back(dest);
    } else {
      PEOp pe = app.lookupPE(from.getRootReference());
      PortOp port = pe ? pe.lookupPort(from.getLeafReference()) : PortOp();
      if (!port || port.getKind() != PortKind::PushOutput)
        return connect.emitError(
            "the microengine back end runs push connections only");
      outputs[{pe.getSymName().str(), pe.getPortNumber(port)}].push_back(dest);
    }
  }
  if (fromSource.size() != 1)
    return app.emitError("the microengine back end does not yet copy a "
                         "packet to several destinations (a source with ")
           << fromSource.size() << " connections)";
  for (auto &[from, dests] : outputs)
    if (dests.size() > 1)
      return app.emitError("the microengine back end does not yet copy a "
                           "packet to several destinations (port '")
             << from.second << "' of NetPE '" << from.first << "')";

  // Instruction selection, into a module of me.funcs kept with the input.
  OpBuilder builder(ctx);
  OwningOpRef<ModuleOp> meModule = ModuleOp::create(app.getLoc());
  builder.setInsertionPointToEnd(meModule->getBody());
  MELoweringOptions lowering;
  lowering.maxHeaderBytes = pktReadXfer * 4;
  uint32_t sramNext = sramDataBase;
  std::vector<DataInit> initData;
  for (PEInfo &info : pes) {
    PEOp pe = info.pe;
    if (!pe.getCoprocessors().empty())
      return pe.emitError("the microengine back end does not yet run "
                          "coprocessors (NetPE '")
             << pe.getSymName() << "')";
    // SRAM: the NetPE's data memory and initialised data.
    auto place = [&](uint32_t size) {
      uint32_t at = sramNext;
      sramNext = (sramNext + size + 7) & ~7u;
      return at;
    };
    lowering.dataBase = place(pe.getDatamemSize());
    layout.dataMemory.push_back(
        {Memory::Sram, lowering.dataBase, pe.getDatamemSize()});
    if (pe.getDatamemSize())
      layout.persistent.push_back(layout.dataMemory.back());
    if (auto init = pe.getInitdata()) {
      lowering.initDataBase = place(init->size());
      DataInit data;
      data.memory = Memory::Sram;
      data.address = lowering.initDataBase;
      for (int8_t byte : *init)
        data.bytes.push_back(static_cast<uint8_t>(byte));
      if (!data.bytes.empty())
        initData.push_back(std::move(data));
    }
    if (pe.getSharedmemSize()) {
      if (!layout.sharedMemory.size) {
        layout.sharedMemory = {Memory::Sram, place(pe.getSharedmemSize()),
                               pe.getSharedmemSize()};
        layout.persistent.push_back(layout.sharedMemory);
      }
      lowering.sharedBase = layout.sharedMemory.address;
    }
    for (HandlerOp handler : pe.getBodyBlock()->getOps<HandlerOp>()) {
      if (handler.getKind() == HandlerKind::Pull)
        return handler.emitError("the microengine back end does not run pull "
                                 "handlers (NetPE '")
               << pe.getSymName() << "')";
      MEHandlerInfo &hinfo = handler.getKind() == HandlerKind::Push
                                 ? info.pushInfo
                                 : info.initInfo;
      FailureOr<med::FuncOp> func =
          lowerHandlerToME(handler, builder, lowering, layout.locations, hinfo);
      if (failed(func))
        return failure();
      (handler.getKind() == HandlerKind::Push ? info.push : info.init) = *func;
    }
  }
  if (failed(verify(*meModule)))
    return failure();

  Program program;
  program.header = {"generated by netc --target=me from application '" +
                        app.getSymName().str() + "'",
                    "ME 0 receives, ME 1 runs the NetPEs, ME 2 transmits "
                    "(docs/me-backend.md)"};
  program.rings = {RingConfig{freeRing, freeRingBase, 128},
                   RingConfig{txRing, txRingBase, 512},
                   RingConfig{workRing, workRingBase, 512}};
  // SRAM: the watchdog budget word, the event count and the event log.
  DataInit budget;
  budget.memory = Memory::Sram;
  budget.address = watchdogAddress;
  uint32_t defaultBudget = layout.defaultWatchdog;
  budget.bytes = {uint8_t(defaultBudget >> 24), uint8_t(defaultBudget >> 16),
                  uint8_t(defaultBudget >> 8), uint8_t(defaultBudget)};
  program.data.push_back(budget);
  for (DataInit &init : initData)
    program.data.push_back(std::move(init));
  layout.watchdogAddress = watchdogAddress;
  layout.eventCount = eventCountAddress;
  layout.eventLog = eventLogAddress;
  layout.eventCapacity = eventCapacity;
  for (PEInfo &info : pes)
    layout.pes.push_back(info.pe.getSymName().str());
  layout.infoSize = std::max<unsigned>(options.defaultInfoSize, 64);

  receiveStage(program);

  // ME 1: the NetPEs.
  CodeSection section;
  section.meMask = 1u << handlerME;
  section.title = "ME 1: the NetPEs of '" + app.getSymName().str() + "'";
  LineBuilder a{section};
  bool watchdog = false, stateful = false;
  for (PEInfo &info : pes) {
    watchdog |= info.pushInfo.usesWatchdog || info.initInfo.usesWatchdog;
    stateful |= info.pushInfo.writesState;
  }
  // With state written by the handlers, packets go through them in order:
  // a third token (s7) passes from context to context, as the work token.
  auto passState = [&] {
    if (stateful)
      a("local_csr_wr[same_me_signal, " + hex(0x80 | (7 << 3)) + "]",
        "state token");
  };
  if (watchdog) {
    // Each context's local memory: 64 words at context x 256 bytes; word
    // 15 keeps the watchdog budget, words 0-14 are spill slots.
    a("local_csr_rd[a15, active_ctx_sts]");
    a("alu[a15, a15, and, 7]");
    a("alu_shf[a15, --, b, a15, <<8]");
    a("local_csr_wr[active_lm_addr_0, a15]");
    a("immed[a3, " + hex(watchdogAddress) + "]");
    a("sram[read, $0, a3, 0, 1], ctx_swap[s4]", "the watchdog budget");
    a("alu[*l$index0[15], --, b, $0]");
  } else {
    // Removed again below when no handler spills.
    a("local_csr_rd[a15, active_ctx_sts]");
    a("alu[a15, a15, and, 7]");
    a("alu_shf[a15, --, b, a15, <<8]");
    a("local_csr_wr[active_lm_addr_0, a15]", "spill slots");
  }
  a("br!=ctx[0, @work_loop]");
  // Init handlers run once, in context 0, before the first packet.
  std::vector<std::pair<PEInfo *, std::string>> inits;
  for (PEInfo &info : pes)
    if (info.init)
      inits.push_back({&info, "init_" + std::to_string(info.index)});
  if (!inits.empty())
    a("immed[b0, 0]", "no exchange buffer: empty packet");
  for (size_t i = 0; i < inits.size(); ++i) {
    if (watchdog)
      a("alu[a2, --, b, *l$index0[15]]");
    a("br[@" + inits[i].second + "]");
    a.label(inits[i].second + "_done");
  }
  a.label("start_tokens");
  a("local_csr_wr[same_me_signal, " + hex(1 << 3) + "]");
  a("local_csr_wr[same_me_signal, " + hex(2 << 3) + "]");
  if (stateful)
    a("local_csr_wr[same_me_signal, " + hex(7 << 3) + "]");
  a.label("work_loop");
  a("ctx_arb[s1]", "work token");
  a.label("get_work");
  a("scratch[get, $0, " + std::to_string(workRing) + ", 0, " +
    std::to_string(entryWords) + "], ctx_swap[s4]");
  a("alu[a0, --, b, $0]");
  a("beq[@get_work]", "nothing queued yet");
  a("local_csr_wr[same_me_signal, " + hex(0x80 | (1 << 3)) + "]");
  a("alu[b0, --, b, $1]");
  a("alu[a1, --, b, $2]");
  a("br_bset[$3, 0, @work_end]");
  a("alu[b2, --, b, $4]", "tag");
  if (stateful)
    a("ctx_arb[s7]", "state token: the handlers in packet order");
  if (watchdog)
    a("alu[a2, --, b, *l$index0[15]]", "the packet's loop budget");
  // The source's destination.
  Endpoint first = fromSource.front();
  auto entryOf = [&](PEOp pe) {
    for (PEInfo &info : pes)
      if (info.pe == pe)
        return "pe" + std::to_string(info.index) + "_entry";
    return std::string();
  };
  auto gotoEndpoint = [&](const Endpoint &dest) {
    if (dest.sink >= 0) {
      a("immed[b1, " + std::to_string(dest.sink) + "]");
      a("br[@to_sink]");
      return;
    }
    a("immed[b1, " + std::to_string(dest.port) + "]", "input port");
    a("br[@" + entryOf(dest.pe) + "]");
  };
  gotoEndpoint(first);

  // Each NetPE: its entry (header prefetch) and its handler.
  std::vector<MEReport> reports;
  MEReport handlerReport;
  handlerReport.me = handlerME;
  handlerReport.controlStore = options.machine.controlStore;
  std::string roles;
  for (PEInfo &info : pes) {
    roles += (roles.empty() ? "" : ", ") + info.pe.getSymName().str();
    auto emitFunc = [&](med::FuncOp func, const MEHandlerInfo &hinfo,
                        const std::string &entry,
                        ExitLabels exits) -> LogicalResult {
      AllocationOptions alloc;
      alloc.firstFreeDramXfer = hinfo.headerBytes / 4;
      Allocation allocation;
      if (failed(allocateRegisters(func, alloc, allocation)))
        return failure();
      // Record the allocation in the IR (-emit=me shows it).
      for (auto &[value, reg] : allocation.registers)
        if (Operation *def = value.getDefiningOp())
          def->setAttr("reg", StringAttr::get(ctx, reg.name()));
      EmitStats stats;
      if (failed(emitHandler(func, allocation, exits, entry, section, stats)))
        return failure();
      handlerReport.spills += allocation.spills;
      handlerReport.bankMoves += stats.bankMoves;
      return success();
    };
    ExitLabels exits;
    exits.pe = info.index;
    std::string tag = "pe" + std::to_string(info.index);
    exits.send = [&, tag](unsigned port) {
      return tag + "_out" + std::to_string(port);
    };
    if (info.push) {
      a.label(tag + "_entry");
      if (unsigned bytes = info.pushInfo.headerBytes)
        a("dram[read, $$0, a0, 0, " + std::to_string(bytes / 8) +
              "], ctx_swap[s4]",
          "the header: bytes 0-" + std::to_string(bytes - 1));
      exits.drop = "drop";
      exits.raise = "raise";
      if (failed(emitFunc(info.push, info.pushInfo, tag + "_push", exits)))
        return failure();
    }
    if (info.init) {
      std::string name = "init_" + std::to_string(info.index);
      exits.drop = name + "_done";
      exits.raise = name + "_raise";
      if (failed(emitFunc(info.init, info.initInfo, name, exits)))
        return failure();
    }
    // The NetPE's output ports.
    for (PortOp port : info.pe.getBodyBlock()->getOps<PortOp>()) {
      if (port.getKind() != PortKind::PushOutput)
        continue;
      unsigned number = info.pe.getPortNumber(port);
      a.label(tag + "_out" + std::to_string(number));
      auto it = outputs.find({info.pe.getSymName().str(), number});
      if (it == outputs.end()) {
        a("immed[a15, " + hex(info.index | (3u << 16)) + "]",
          "unconnected port " + port.getSymName().str());
        a("immed[b15, 0]");
        a("br[@unconnected]");
        continue;
      }
      gotoEndpoint(it->second.front());
    }
    if (info.init) {
      // An exception in init: log it, go on with the next init.
      std::string name = "init_" + std::to_string(info.index);
      a.label(name + "_raise");
      a("immed[b2, 0xffffffff]", "no packet");
      a("immed[a4, 1]", "EventKind::Exception");
      a("br[@log_event]");
      (void)name;
    }
  }
  handlerReport.role = roles.empty() ? "no NetPE" : roles;

  // Leaving: to a sink (b1 = the sink), dropped, or an exception logged.
  a.label("to_sink");
  a("alu[$0, --, b, a0]");
  a("alu[$1, --, b, b0]");
  a("alu[$2, --, b, a1]");
  a("alu[$3, --, b, b1]", "the sink: its transmit port");
  a("alu[$4, --, b, b2]", "tag");
  a.orderedPut(txRing, "s5", "transmit token");
  passState();
  a("br[@work_loop]");
  a.label("unconnected");
  a("immed[a4, 3]", "EventKind::Unconnected");
  a("br[@log_event]");
  a.label("raise");
  a("immed[a4, 1]", "EventKind::Exception");
  // log_event: [tag b2, kind a4, pe | kind << 16 in a15, location b15].
  a.label("log_event");
  a("immed[$0, 1]");
  a("immed[a3, " + hex(eventCountAddress) + "]");
  a("sram[test_and_add, $0, a3, 0, 1], ctx_swap[s6]", "count the event");
  a("immed[b3, " + std::to_string(eventCapacity) + "]");
  a("alu[--, $0, -, b3]");
  a("bcc[@event_done]", "the log is full: the count says so");
  a("alu_shf[a3, --, b, $0, <<4]", "4 words an event");
  a("immed[b3, " + hex(eventLogAddress) + "]");
  a("alu[a3, a3, +, b3]");
  a("alu[$0, --, b, b2]");
  a("alu[$1, --, b, a4]");
  a("alu[$2, --, b, a15]");
  a("alu[$3, --, b, b15]");
  a("sram[write, $0, a3, 0, 4], ctx_swap[s6]");
  a.label("event_done");
  a("alu[--, b2, +, 1]");
  a("bne[@drop]");
  // An event of an init handler: back to the next one.
  for (auto &[info, name] : inits) {
    a("alu[b3, a15, and, 0xffff]", "the NetPE of the event");
    a("alu[--, b3, -, " + std::to_string(info->index) + "]");
    a("beq[@" + name + "_done]");
  }
  a("br[@start_tokens]");
  a.label("drop");
  a("alu[$0, --, b, a0]");
  a("scratch[put, $0, " + std::to_string(freeRing) + ", 0, 1], sig_done[s5]");
  a("ctx_arb[s2]", "keep the transmit token moving");
  a("local_csr_wr[same_me_signal, " + hex(0x80 | (2 << 3)) + "]");
  a("ctx_arb[s5]");
  passState();
  a("br[@work_loop]");
  a.label("work_end");
  a("immed[$0, 0xffffffff]", "end marker");
  a.orderedPut(txRing, "s5");
  a("ctx_arb[kill]");
  if (!watchdog && handlerReport.spills == 0)
    section.lines.erase(section.lines.begin(), section.lines.begin() + 4);
  handlerReport.instructions = section.lines.size();
  program.code.push_back(std::move(section));

  transmitStage(program);

  // Resources.
  for (const CodeSection &s : program.code)
    if (s.lines.size() > options.machine.controlStore)
      return app.emitError("the ME code does not fit: ")
             << s.title << " needs " << s.lines.size()
             << " instructions, the control store holds "
             << options.machine.controlStore << " (over by "
             << s.lines.size() - options.machine.controlStore << ")";
  MEReport rx, tx;
  rx.me = rxME;
  rx.role = "receive";
  rx.instructions = program.code[0].lines.size();
  tx.me = txME;
  tx.role = "transmit";
  tx.instructions = program.code[2].lines.size();
  rx.controlStore = tx.controlStore = options.machine.controlStore;
  result.report = {rx, handlerReport, tx};

  std::string error;
  if (!program.encode(result.image, error))
    return app.emitError("internal error in the ME back end: ") << error;
  result.assembly = program.print();
  if (meIR)
    *meIR = std::move(meModule);
  return success();
}
