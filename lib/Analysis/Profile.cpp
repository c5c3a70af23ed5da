//===- Profile.cpp - Profiling an application for the cost model ----------===//

#include "netvm/Analysis/Profile.h"

#include "netvm/Analysis/FlowKey.h"

#include "netvm/Driver/Driver.h"
#include "netvm/Interpreter/Interpreter.h"
#include "netvm/Runtime/Engine.h"
#include "netvm/Target/ME/CodeGen.h"
#include "netvm/Target/Native.h"
#include "netvm/emu/Emulator.h"
#include "netvm/io/PacketIO.h"

#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <chrono>
#include <map>

namespace netvm::analysis {

namespace {

bool readTrace(const ProfileOptions &options,
               std::vector<rt::TracePacket> &packets, std::string &error) {
  auto reader = rt::PacketReader::open(options.trace, /*hex=*/false, error);
  if (!reader)
    return false;
  if (!rt::checkLinkType(*reader, error))
    return false;
  rt::TracePacket p;
  while ((!options.maxPackets || packets.size() < options.maxPackets) &&
         reader->next(p, error))
    packets.push_back(p);
  if (!error.empty())
    return false;
  if (packets.empty()) {
    error = "'" + options.trace + "' holds no packets to profile with";
    return false;
  }
  return true;
}

netvm_packet toPacket(const rt::TracePacket &p, std::vector<uint8_t> &bytes) {
  netvm_packet np = {};
  np.data = bytes.data();
  np.length = uint32_t(bytes.size());
  np.wire_length = p.wireLength;
  np.seconds = p.seconds;
  np.microseconds = p.microseconds;
  return np;
}

/// The index of the NetPE a code label belongs to ("pe<k>_..." labels are
/// the handlers of NetPE k; docs/me-backend.md), or -1.
int peOfLabel(llvm::StringRef name) {
  if (!name.consume_front("pe"))
    return -1;
  unsigned k;
  size_t digits = name.find('_');
  if (digits == llvm::StringRef::npos ||
      name.substr(0, digits).getAsInteger(10, k))
    return -1;
  return int(k);
}

/// The emulator's issue cycles by NetPE, and the receive and transmit MEs'
/// cycles on the path of a packet.
bool measureME(mlir::ModuleOp module, const ProfileOptions &options,
               std::vector<rt::TracePacket> &packets, Profile &profile,
               std::string &error) {
  me::CodeGenOptions codegen;
  codegen.machine.maxPacketBytes = me::compiledMaxPacketBytes;
  codegen.defaultInfoSize = options.defaultInfoSize;
  me::CompiledApp compiled;
  if (mlir::failed(me::compileApplication(module, codegen, compiled))) {
    error = "the ME back end cannot compile the application";
    return false;
  }
  me::MachineConfig machine = codegen.machine;
  machine.profile = true;
  rt::EngineOptions engineOptions;
  engineOptions.defaultInfoSize = options.defaultInfoSize;
  auto engine = rt::Engine::emulator(compiled, engineOptions, machine, error);
  if (!engine)
    return false;
  engine->initialize();
  std::vector<netvm_packet> batch;
  for (rt::TracePacket &p : packets) {
    batch.push_back(toPacket(p, p.bytes));
  }
  engine->run(0, batch);
  if (!engine->failure().empty()) {
    error = engine->failure();
    return false;
  }
  const me::Stats *stats = engine->emulatorStats();
  profile.measuredTimePerPacket =
      double(stats->cycles) / double(packets.size());
  profile.measuredDramBusy =
      double(stats->dram.busyCycles) / double(packets.size());
  size_t numPEs = compiled.layout.pes.size();
  profile.measuredCost.assign(numPEs, 0);
  for (const me::MEReport &r : compiled.report) {
    if (r.me >= stats->mes.size())
      continue;
    const me::MEStats &ms = stats->mes[r.me];
    // The code block this ME runs, and its labels in order.
    std::vector<std::pair<uint32_t, int>> labels;
    for (size_t b = 0; b < compiled.image.code.size(); ++b)
      if ((compiled.image.code[b].meMask >> r.me) & 1)
        for (const me::Symbol &s : compiled.image.symbols)
          if (s.kind == me::SymbolKind::Code && s.block == b)
            labels.push_back({s.value, peOfLabel(s.name)});
    std::sort(labels.begin(), labels.end());
    int owner = -1;
    size_t next = 0;
    for (size_t pc = 0; pc < ms.pcCycles.size(); ++pc) {
      while (next < labels.size() && labels[next].first <= pc)
        owner = labels[next++].second;
      double cycles = double(ms.pcCycles[pc]);
      if (owner >= 0 && size_t(owner) < numPEs)
        profile.measuredCost[owner] += cycles;
    }
  }
  profile.measuredOn = "the ME emulator";
  return true;
}

/// One thread's time per packet for the JIT-compiled application, split
/// among the NetPEs like the model's estimates.
bool measureNative(mlir::ModuleOp module, const ProfileOptions &options,
                   std::vector<rt::TracePacket> &packets, Profile &profile,
                   std::string &error) {
  CostModel estimate = buildCostModel(driver::getApplication(module),
                                      CostTarget::Native, &profile);
  mlir::OwningOpRef<mlir::ModuleOp> clone(module.clone());
  native::CodegenOptions codegen;
  codegen.optLevel = options.optLevel;
  codegen.lowering.defaultInfoSize = options.defaultInfoSize;
  auto compiled = native::jitCompile(*clone, codegen);
  if (!compiled) {
    error = llvm::toString(compiled.takeError());
    return false;
  }
  rt::EngineOptions engineOptions;
  engineOptions.defaultInfoSize = options.defaultInfoSize;
  auto engine = rt::Engine::native(*compiled, engineOptions, error);
  if (!engine)
    return false;
  engine->initialize();
  // Copies of the packets for each pass (handlers may change them), timed
  // until at least 0.2 s have run; the fastest pass counts.
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<netvm_packet> batch(packets.size());
  double best = 0;
  double elapsed = 0;
  for (int pass = 0; pass < 50 && (pass < 3 || elapsed < 0.2); ++pass) {
    bytes.clear();
    for (size_t i = 0; i < packets.size(); ++i) {
      bytes.push_back(packets[i].bytes);
      batch[i] = toPacket(packets[i], bytes.back());
    }
    auto start = std::chrono::steady_clock::now();
    engine->run(0, batch);
    double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    elapsed += s;
    best = pass == 0 ? s : std::min(best, s);
  }
  // The measured time is split among the runner's per-packet overhead and
  // the NetPEs in the proportions of the estimates.
  double perPacket = best * 1e9 / double(packets.size());
  double estimated = estimate.packetOverhead;
  for (const PECost &c : estimate.pes)
    estimated += c.cost;
  size_t n = estimate.pes.size();
  profile.measuredCost.assign(n, 0);
  for (size_t i = 0; i < n; ++i)
    profile.measuredCost[i] = (estimated > 0 ? estimate.pes[i].cost / estimated
                                             : 1.0 / double(n + 1)) *
                              perPacket * double(packets.size());
  profile.measuredTimePerPacket = perPacket;
  profile.measuredOn = "this host (JIT, one thread)";
  return true;
}

/// The packets of the trace in each bucket of every flow-keyed NetPE: a
/// copy of the application whose NetPE runs its key function counting
/// buckets in its data memory instead of its push handler
/// (buildFlowKeyHandler with `histogram`), on the interpreter.
void countBuckets(mlir::ModuleOp module, const ProfileOptions &options,
                  const std::vector<rt::TracePacket> &packets,
                  Profile &profile) {
  ApplicationOp app = driver::getApplication(module);
  std::vector<PEOp> pes;
  for (PEOp pe : app.getBodyBlock()->getOps<PEOp>())
    pes.push_back(pe);
  profile.bucketCounts.assign(pes.size(), {});
  profile.keyFaults.assign(pes.size(), 0);
  for (size_t i = 0; i < pes.size(); ++i) {
    FlowKeyProof proof = proveFlowKey(pes[i]);
    if (!proof.proved || proof.buckets == 0 || proof.buckets > 65536)
      continue;
    mlir::OwningOpRef<mlir::ModuleOp> clone(module.clone());
    ApplicationOp copy = driver::getApplication(*clone);
    PEOp pe;
    size_t k = 0;
    for (PEOp p : copy.getBodyBlock()->getOps<PEOp>())
      if (k++ == i)
        pe = p;
    FlowKeyProof again = proveFlowKey(pe);
    if (!again.proved)
      continue;
    HandlerOp counter = buildFlowKeyHandler(pe, again, /*histogram=*/true);
    for (HandlerOp h :
         llvm::make_early_inc_range(pe.getBodyBlock()->getOps<HandlerOp>()))
      if (h != counter && h.getKind() == HandlerKind::Push)
        h.erase();
    counter->removeAttr(kFlowKeyAttr);
    pe.setDatamemSize(
        std::max<uint64_t>(pe.getDatamemSize(), 4 * again.buckets));
    interp::Options io;
    io.defaultInfoSize = options.defaultInfoSize;
    auto interpreter = interp::Interpreter::create(copy, io);
    if (!interpreter)
      continue;
    interpreter->initialize();
    // What the init handler or the initialised data left is not a count.
    for (uint8_t &byte : interpreter->mutableDataMemory(i))
      byte = 0;
    for (const rt::TracePacket &p : packets)
      interpreter->push(0, p);
    llvm::ArrayRef<uint8_t> mem = interpreter->dataMemory(i);
    std::vector<uint64_t> counts(again.buckets, 0);
    for (size_t b = 0; b < counts.size() && 4 * b + 3 < mem.size(); ++b)
      counts[b] = uint32_t(mem[4 * b]) << 24 | uint32_t(mem[4 * b + 1]) << 16 |
                  uint32_t(mem[4 * b + 2]) << 8 | mem[4 * b + 3];
    // The packets whose key would fault go to the first replica.
    uint64_t counted = 0;
    for (uint64_t c : counts)
      counted += c;
    profile.keyFaults[i] =
        i < profile.peRuns.size() && profile.peRuns[i] > counted
            ? profile.peRuns[i] - counted
            : 0;
    profile.bucketCounts[i] = std::move(counts);
  }
}

} // namespace

bool collectProfile(mlir::ModuleOp module, const ProfileOptions &options,
                    Profile &profile, std::string &error) {
  std::vector<rt::TracePacket> packets;
  if (!readTrace(options, packets, error))
    return false;
  ApplicationOp app = driver::getApplication(module);
  interp::Options io;
  io.defaultInfoSize = options.defaultInfoSize;
  auto interpreter = interp::Interpreter::create(app, io);
  if (!interpreter) {
    error = "the interpreter cannot run the application";
    return false;
  }
  interpreter->initialize();
  profile = Profile();
  interpreter->setBlockCounts(&profile.blockCounts);
  for (const rt::TracePacket &p : packets) {
    profile.outputs += interpreter->push(0, p).outputs.size();
    profile.bytes += p.bytes.size();
  }
  interpreter->setBlockCounts(nullptr);
  profile.packets = packets.size();
  for (size_t i = 0; i < interpreter->peNames().size(); ++i)
    profile.peRuns.push_back(interpreter->counters(i).runs);
  countBuckets(module, options, packets, profile);
  if (!options.measure)
    return true;
  return options.target == CostTarget::ME
             ? measureME(module, options, packets, profile, error)
             : measureNative(module, options, packets, profile, error);
}

} // namespace netvm::analysis
