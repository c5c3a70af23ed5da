//===- bridge-bench.cpp - The learning bridge: JIT against C on rte_hash --===//
//
// netvm-bridge-bench measures, side by side in one process:
//  - ns per frame of examples/bridge/bridge.netil compiled by the JIT at -O2
//    (one netvm_instance_push_batch of one frame per frame, as frames
//    arrive on their ports) against the same bridge hand-written in C on
//    DPDK's rte_hash (bridge.c, called per frame);
//  - ns per lookup of the lookup coprocessor (through its register
//    protocol, as generated code drives it: R0 written in place, add_data
//    twice, read_value, R1 and R0 read in place) against
//    rte_hash_lookup_data, in an inner loop over two-word keys, three hits
//    in four.
// The traffic is generated here: hosts on four ports, mostly unicast among
// them, broadcasts and unknown destinations, a host moving now and then.
// Before timing, both bridges run the trace once and must agree on every
// frame (sink, bytes, order) and on their counters; the benchmark stops if
// they do not. Each figure is the median of the timed passes; a warm-up
// pass comes first, and the peers' passes alternate. A NetPE that only
// forwards shows the runtime's own cost per frame. Without DPDK (pkg-config
// finds no libdpdk) the C peers are "not measured".
//
//===----------------------------------------------------------------------===//

#include "BenchJit.h"
#include "netvm/Driver/Driver.h"
#include "netvm/Target/Native.h"
#include "netvm/coprocessor.h"
#include "netvm/runtime.h"

#ifdef NETVM_BENCH_HAVE_DPDK
#include "bridge.h"
#endif

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

namespace cl = llvm::cl;
using namespace mlir;
using namespace netvm;

static cl::opt<std::string> bridgeFile(cl::Positional, cl::Required,
                                       cl::desc("<bridge.netil>"));
static cl::opt<unsigned> frameCount("frames", cl::init(262144),
                                    cl::desc("Frames in the trace"));
static cl::opt<unsigned> hostCount("hosts", cl::init(4096),
                                   cl::desc("Hosts behind the four ports"));
static cl::opt<bool> bridgeOnly("bridge-only",
                                cl::desc("Measure the bridges only (not the "
                                         "lookup loops), e.g. to profile"));
static cl::opt<unsigned> repeats("repeats", cl::init(7),
                                 cl::desc("Timed passes (the median is "
                                          "reported)"));

namespace {
using Clock = std::chrono::steady_clock;

struct Frame {
  uint32_t port, now, offset, length;
};

struct Trace {
  std::vector<uint8_t> bytes;
  std::vector<Frame> frames;
};

/// A locally administered unicast address for host `h`.
void putMac(uint8_t *at, uint32_t h) {
  at[0] = 0x02;
  at[1] = 0;
  at[2] = h >> 24;
  at[3] = h >> 16;
  at[4] = h >> 8;
  at[5] = h;
}

Trace makeTrace(unsigned count, unsigned hosts) {
  std::mt19937 rng(17);
  std::vector<uint32_t> where(hosts + 1);
  for (uint32_t h = 1; h <= hosts; ++h)
    where[h] = rng() % 4;
  Trace t;
  t.bytes.resize(size_t(count) * 64);
  for (unsigned k = 0; k < count; ++k) {
    if (k && k % 4096 == 0) { // a host moves
      uint32_t h = 1 + rng() % hosts;
      where[h] = (where[h] + 1 + rng() % 3) % 4;
    }
    uint8_t *f = &t.bytes[size_t(k) * 64];
    uint32_t src = 1 + rng() % hosts, kind = rng() % 100;
    if (kind < 5)
      std::memset(f, 0xff, 6); // broadcast
    else if (kind < 10)
      putMac(f, 0x100000 + rng() % 64); // never a source
    else
      putMac(f, 1 + rng() % hosts);
    putMac(f + 6, src);
    f[12] = 0x08;
    f[13] = 0x00;
    for (unsigned i = 14; i < 64; ++i)
      f[i] = uint8_t(k + i);
    t.frames.push_back({where[src], k / 1000, uint32_t(k * 64), 64});
  }
  return t;
}

/// What left, in order: sink and a hash of the frame.
struct Sink {
  std::vector<std::pair<uint32_t, uint64_t>> seen;
  uint64_t count = 0;
  bool record = false;
  void add(uint32_t sink, const uint8_t *data, uint32_t length) {
    ++count;
    if (!record)
      return;
    uint64_t h = 1469598103934665603ull;
    for (uint32_t i = 0; i < length; ++i)
      h = (h ^ data[i]) * 1099511628211ull;
    seen.push_back({sink, h});
  }
};

void onJitOutput(void *user, uint32_t sink, const netvm_exbuf *xb) {
  static_cast<Sink *>(user)->add(sink, xb->packet, xb->length);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// ns per item of each pass (one pass over `items` items), median of the
/// timed passes after a warm-up of each. The passes alternate, so that a
/// change of the machine's load (it is shared) touches every peer alike.
std::vector<double> nsPerItem(size_t items,
                              std::vector<std::function<void()>> passes) {
  std::vector<std::vector<double>> ns(passes.size());
  for (auto &pass : passes)
    pass();
  for (unsigned r = 0; r < std::max(1u, unsigned(repeats)); ++r)
    for (size_t i = 0; i < passes.size(); ++i) {
      auto start = Clock::now();
      passes[i]();
      ns[i].push_back(
          std::chrono::duration<double, std::nano>(Clock::now() - start)
              .count() /
          items);
    }
  std::vector<double> medians;
  for (auto &v : ns)
    medians.push_back(median(v));
  return medians;
}

const netvm_app_desc *compile(MLIRContext &context, const std::string &file) {
  native::CodegenOptions codegen;
  codegen.optLevel = 2;
  codegen.lowering.countHandlerRuns = false;
  return bench::jitFiles(context, {file}, 2, codegen, "netvm-bridge-bench");
}

netvm_instance *makeInstance(const netvm_app_desc *app, Sink &sink) {
  char error[256];
  netvm_instance *vm = netvm_instance_create(app, error, sizeof error);
  if (!vm) {
    llvm::errs() << "netvm-bridge-bench: " << error << "\n";
    return nullptr;
  }
  netvm_instance_set_output(vm, onJitOutput, &sink);
  netvm_instance_init(vm);
  return vm;
}

/// One frame at a time through the runtime's fastest per-packet entry (a
/// batch of one: the frame is borrowed, not copied), each on its port.
void runJit(netvm_instance *vm, Trace &t) {
  for (const Frame &f : t.frames) {
    netvm_packet p{};
    p.data = &t.bytes[f.offset];
    p.length = p.wire_length = f.length;
    p.seconds = f.now;
    netvm_instance_push_batch(vm, f.port, &p, 1);
  }
}

/// The JIT bridge's counters from its data memory (big-endian words at 4).
std::vector<uint32_t> jitCounters(netvm_instance *vm) {
  uint32_t size = 0;
  uint8_t *data = netvm_instance_data(vm, 0, &size);
  std::vector<uint32_t> out;
  for (uint32_t at = 4; at + 4 <= size; at += 4)
    out.push_back(uint32_t(data[at]) << 24 | uint32_t(data[at + 1]) << 16 |
                  uint32_t(data[at + 2]) << 8 | data[at + 3]);
  return out;
}

/// The lookup coprocessor through its register protocol, as generated code
/// drives it (registers in place, netvm_copro_head; a call per operation):
/// the sum of the values found.
uint64_t coproLookupLoop(netvm_copro *c, const std::vector<uint32_t> &keys) {
  uint32_t *r = reinterpret_cast<netvm_copro_head *>(c)->registers;
  uint64_t sum = 0;
  for (size_t i = 0; i + 1 < keys.size(); i += 2) {
    r[0] = keys[i];
    netvm_copro_invoke(c, 1);
    r[0] = keys[i + 1];
    netvm_copro_invoke(c, 1);
    netvm_copro_invoke(c, 3);
    if (r[1])
      sum += r[0];
  }
  return sum;
}

#ifdef NETVM_BENCH_HAVE_DPDK
void onCOutput(void *user, uint32_t sink, const uint8_t *frame,
               uint32_t length) {
  static_cast<Sink *>(user)->add(sink, frame, length);
}
#endif

std::string ratio(double a, double b) {
  return b > 0 ? llvm::formatv("{0:f2}", a / b).str() : "-";
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::ParseCommandLineOptions(
      argc, argv,
      "netvm-bridge-bench - the learning bridge (JIT) against a hand-written "
      "C bridge on DPDK's rte_hash; the lookup coprocessor against "
      "rte_hash\n");
  DialectRegistry registry;
  driver::registerDialects(registry);
  MLIRContext context(registry);
  const netvm_app_desc *app = compile(context, bridgeFile);
  if (!app)
    return 1;
  // The floor: a NetPE with the bridge's ports that sends every frame out
  // of out0, which is what the runtime costs per frame with one output.
  llvm::SmallString<128> floorFile;
  int fd;
  if (llvm::sys::fs::createTemporaryFile("bridge-floor", "netil", fd,
                                         floorFile))
    return 1;
  {
    llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
    out << "segment .ports\n  push_input in0, in1, in2, in3\n"
           "  push_output out0, out1, out2, out3, ctl\nends\n"
           "segment .push\n  pop\n  pkt.send out0\nends\n";
  }
  const netvm_app_desc *floorApp = compile(context, floorFile.str().str());
  llvm::sys::fs::remove(floorFile);
  if (!floorApp)
    return 1;
  Trace trace = makeTrace(frameCount, hostCount);
  llvm::raw_ostream &os = llvm::outs();

  // Agreement first: one pass of each on a fresh bridge.
  Sink jitSeen;
  jitSeen.record = true;
  netvm_instance *check = makeInstance(app, jitSeen);
  if (!check)
    return 1;
  runJit(check, trace);
  std::vector<uint32_t> jitCount = jitCounters(check);
  netvm_instance_destroy(check);

  Sink sink;
  netvm_instance *vm = makeInstance(app, sink);
  netvm_instance *floorVm = makeInstance(floorApp, sink);
  if (!vm || !floorVm)
    return 1;
  std::vector<std::function<void()>> passes = {[&] { runJit(vm, trace); },
                                               [&] { runJit(floorVm, trace); }};
  std::string cNote = "not measured (pkg-config finds no libdpdk)";
#ifdef NETVM_BENCH_HAVE_DPDK
  c_bridge *timed = nullptr;
  if (!c_bridge_dpdk_init())
    cNote = "not measured (DPDK's EAL did not initialise)";
  else {
    Sink cSeen;
    cSeen.record = true;
    c_bridge *b = c_bridge_create(NETVM_LOOKUP_CAPACITY, onCOutput, &cSeen);
    for (const Frame &f : trace.frames)
      c_bridge_push(b, f.port, &trace.bytes[f.offset], f.length, f.now);
    uint32_t c[5];
    c_bridge_counters(b, c);
    c_bridge_destroy(b);
    if (cSeen.seen != jitSeen.seen ||
        std::vector<uint32_t>(c, c + 5) != jitCount) {
      llvm::errs() << "netvm-bridge-bench: the JIT bridge and the C bridge "
                      "disagree ("
                   << jitSeen.seen.size() << " and " << cSeen.seen.size()
                   << " frames out); nothing measured\n";
      return 1;
    }
    timed = c_bridge_create(NETVM_LOOKUP_CAPACITY, onCOutput, &sink);
    passes.push_back([&] {
      for (const Frame &f : trace.frames)
        c_bridge_push(timed, f.port, &trace.bytes[f.offset], f.length, f.now);
    });
    cNote.clear();
  }
#endif
  std::vector<double> ns = nsPerItem(trace.frames.size(), passes);
  double jitNs = ns[0], floorNs = ns[1], cNs = cNote.empty() ? ns[2] : 0;
#ifdef NETVM_BENCH_HAVE_DPDK
  if (timed)
    c_bridge_destroy(timed);
#endif
  netvm_instance_destroy(vm);
  netvm_instance_destroy(floorVm);

  os << llvm::formatv("### Learning bridge ({0} frames, {1} hosts on 4 ports, "
                      "median of {2} passes)\n\n",
                      trace.frames.size(), unsigned(hostCount),
                      unsigned(repeats));
  os << "| peer | ns/frame | / C on rte_hash |\n|---|---|---|\n";
  os << llvm::formatv("| JIT bridge.netil -O2 | {0:f1} | {1} |\n", jitNs,
                      cNote.empty() ? ratio(jitNs, cNs) : "-");
  if (cNote.empty())
    os << llvm::formatv("| C bridge on rte_hash | {0:f1} | 1.00 |\n", cNs);
  else
    os << "| C bridge on rte_hash | " << cNote << " | |\n";
  os << llvm::formatv("| JIT floor: a NetPE that sends every frame out of "
                      "out0 | {0:f1} | {1} |\n",
                      floorNs, cNote.empty() ? ratio(floorNs, cNs) : "-");
  if (cNote.empty())
    os << llvm::formatv("\nBoth bridges agree on all {0} frames out and on "
                        "their counters (filtered {1}, flooded {2}).\n\n",
                        jitSeen.seen.size(), jitCount[0], jitCount[1]);
  else
    os << "\nNo C bridge to check the JIT bridge against.\n\n";

  if (bridgeOnly)
    return 0;
  // The lookup coprocessor against rte_hash.
  os << "### Lookup: the coprocessor against rte_hash (two-word keys, 3 "
        "lookups in 4 hit)\n\n";
  os << "| entries | coprocessor ns/lookup | rte_hash ns/lookup | ratio |\n"
        "|---|---|---|---|\n";
  for (uint32_t entries : {1024u, 16384u}) {
    std::mt19937 rng(entries);
    std::vector<uint32_t> stored, probes;
    for (uint32_t i = 0; i < entries; ++i) {
      stored.push_back(0x0200u | (rng() & 0xffff));
      stored.push_back(rng());
    }
    for (uint32_t i = 0; i < 1u << 20; ++i) {
      uint32_t k = rng() % entries;
      bool miss = rng() % 4 == 0;
      probes.push_back(stored[2 * k]);
      probes.push_back(stored[2 * k + 1] ^ (miss ? 0x80000000u : 0));
    }
    netvm_copro *c = netvm_copro_create("lookup");
    for (uint32_t i = 0; i < entries; ++i) {
      netvm_copro_write(c, 0, stored[2 * i]);
      netvm_copro_invoke(c, 1);
      netvm_copro_write(c, 0, stored[2 * i + 1]);
      netvm_copro_invoke(c, 1);
      netvm_copro_write(c, 0, i + 1);
      netvm_copro_invoke(c, 2);
    }
    uint64_t coproSum = 0, hashSum = 0;
    std::vector<std::function<void()>> loops = {
        [&] { coproSum = coproLookupLoop(c, probes); }};
#ifdef NETVM_BENCH_HAVE_DPDK
    c_hash *h = nullptr;
    if (cNote.empty()) {
      h = c_hash_create(entries);
      for (uint32_t i = 0; i < entries; ++i)
        c_hash_add(h, &stored[2 * i], i + 1);
      loops.push_back([&] {
        hashSum = c_hash_lookup_loop(h, probes.data(), probes.size() / 2);
      });
    }
#endif
    std::vector<double> lookupNs = nsPerItem(probes.size() / 2, loops);
    netvm_copro_destroy(c);
#ifdef NETVM_BENCH_HAVE_DPDK
    c_hash_destroy(h);
#endif
    if (lookupNs.size() > 1 && hashSum != coproSum) {
      llvm::errs() << "netvm-bridge-bench: the lookup coprocessor and "
                      "rte_hash found different values\n";
      return 1;
    }
    os << llvm::formatv(
        "| {0} | {1:f1} | {2} | {3} |\n", entries, lookupNs[0],
        lookupNs.size() > 1 ? llvm::formatv("{0:f1}", lookupNs[1]).str()
                            : std::string("not measured"),
        lookupNs.size() > 1 ? ratio(lookupNs[0], lookupNs[1]) : "-");
  }
  return 0;
}
