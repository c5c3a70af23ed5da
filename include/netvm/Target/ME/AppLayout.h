//===- AppLayout.h - A compiled ME application and its layout ---*- C++ -*-===//
//
// What the microengine back end (netvm/Target/ME/CodeGen.h) produces and a
// host needs to run it: the image, the ports of sources and sinks, where
// each NetPE's data memory lives, the event log that reports exceptions,
// and where info memory travels. Plain C++ (no MLIR), so that the run
// library's emulator engine and the Python module read it without the
// compiler. docs/me-backend.md describes the memory map.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_TARGET_ME_APPLAYOUT_H
#define NETVM_TARGET_ME_APPLAYOUT_H

#include "netvm/emu/Image.h"
#include "netvm/emu/Machine.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace netvm::me {

/// One pipeline stage on the MEs: the NetPEs it runs to completion (a send
/// between two of them is a branch, a send to a NetPE of a later stage puts
/// the packet on that stage's work ring) on `mes` microengines that run the
/// same code (replicas, among which packets are dealt).
struct StagePlacement {
  std::vector<std::string> pes;
  unsigned mes = 1;
};

/// Which MEs do what: the back end's input. The partitioner
/// (docs/partitioning.md, netc -emit=partition) computes one; netc
/// --me-placement gives one by hand. No stages: the default layout, every
/// NetPE in one stage on one ME.
struct Placement {
  unsigned receiveMEs = 1;
  std::vector<StagePlacement> stages;
  bool isDefault() const { return stages.empty() && receiveMEs == 1; }
};

/// The receive size (MachineConfig::maxPacketBytes) that netc, netvm-run
/// and Python give a compiled application's machine unless told otherwise:
/// every packet NetVM accepts fits its buffers whole, as the interpreter
/// sees it. (An IXP would chain 2 KB buffers; the back end does not.)
constexpr unsigned compiledMaxPacketBytes = 65536;

struct CodeGenOptions {
  /// The machine the image must fit (MEs, control store, memories).
  MachineConfig machine;
  Placement placement;
  /// Info memory size when no NetPE declares more (bytes, at least 64).
  unsigned defaultInfoSize = 64;
  /// Layouts of replicas (several MEs on the stage of every NetPE): the
  /// receive side reads the stage's replica word (AppLayout::Stage) at
  /// each round, so that a controller (netvm/emu/Allocation.h) may park
  /// and wake replicas, and the transmit ME follows the rounds through the
  /// order ring. Off (the default), replicas are dealt packets in a fixed
  /// turn that the transmit ME follows on its own, two instructions a
  /// packet cheaper, and the stage has no replica word.
  bool dynamicReplicas = false;
};

/// Event kinds of the event log (AppLayout::eventLog).
enum class EventKind : uint32_t {
  Exception = 1,   // word 2: NETVM_EXC_* kind; word 3: location index
  Drop = 2,        // a drop the host cannot infer (copies, exbuf.delete)
  Unconnected = 3, // a send on a port without connection
};

/// Everything a host needs to run a compiled application on the emulator.
struct AppLayout {
  /// Sources and sinks in declaration order. Source k is fed by receive
  /// port k, sink k is transmit port k (netvm-emu -r/-w order).
  std::vector<std::string> sources, sinks;
  /// NetPE names in declaration order (the `pe` of events).
  std::vector<std::string> pes;
  /// A NetPE's data memory, and the application's shared memory.
  struct Region {
    Memory memory = Memory::Sram;
    uint32_t address = 0, size = 0;
  };
  std::vector<Region> dataMemory; // indexed like `pes`
  Region sharedMemory;            // size 0: none
  /// Memory that must survive from one run of the image to the next (data
  /// and shared memory, coprocessor tables, the init-done flags): a host
  /// that runs the image in batches copies these regions forward.
  std::vector<Region> persistent;
  /// The event log: the number of events at `eventCount` (an SRAM word),
  /// then 4-word
  /// events at `eventLog`: [packet number, EventKind, pe | kind << 16,
  /// location index]. The packet number is the receive descriptor's word
  /// 3 (its number in the input, from 0); for Exception the kind is the
  /// NETVM_EXC_* value and the location indexes `locations`.
  uint32_t eventCount = 0, eventLog = 0, eventCapacity = 0;
  std::vector<std::string> locations; // "file:line:col" or ""
  /// Per-NetPE counters, 3 SRAM words each from here in `pes` order:
  /// handler runs, packets sent (pkt.send and pkt.senddup) and packets
  /// dropped (pkt.drop, exbuf.delete), as the other engines count them.
  /// 0: the image keeps none.
  uint32_t peCounters = 0;
  /// The watchdog budget (loop iterations per packet) is read from this
  /// SRAM word; a host writes it before the run (0: the image's default).
  uint32_t watchdogAddress = 0;
  uint32_t defaultWatchdog = 1u << 20;
  /// Info memory travels in DRAM just before the packet: a transmitted
  /// packet at DRAM address p has its info memory at p - infoOffset
  /// (infoSize bytes). When `infoUsed` is false no NetPE touches info
  /// memory and it is all zeros. Only its first `infoCarried` bytes (at
  /// most 64) travel there: the back end proves that no NetPE reaches
  /// past them, so the rest is zeros.
  uint32_t infoOffset = 0, infoSize = 0, infoCarried = 0;
  bool infoUsed = false;
  /// The stages of a layout of several MEs (empty: the default layout,
  /// every NetPE on ME 1). A stage's NetPEs (indexes into `pes`) run on
  /// its MEs, replicas among which the receive side deals packets: to
  /// the first `n` of them in turn, where n is read from the scratch word
  /// `replicaWord` (0, or more than `maxReplicas`: all). A host may write
  /// it at any time to park replicas (they finish what they were dealt)
  /// or wake them; packet order at the sinks holds either way. Only with
  /// CodeGenOptions::dynamicReplicas; otherwise 0 (a fixed turn).
  struct Stage {
    std::vector<unsigned> pes;
    std::vector<unsigned> mes;
    uint32_t replicaWord = 0;
    unsigned maxReplicas = 1;
    /// The scratch ring each replica takes its work from (in `mes`
    /// order), and the words of an entry: what a controller watches
    /// (netvm/emu/Allocation.h).
    std::vector<unsigned> workRings;
    unsigned workEntryWords = 0;
  };
  std::vector<Stage> stages;
  /// Where each NetPE's code is, to attribute a per-PC profile: the
  /// instructions [begin, end) of ME `me` belong to NetPE `pe` (an index
  /// into `pes`): its handlers, its header prefetch and its output ports.
  /// A NetPE on several MEs (replicas) has a range on each.
  struct CodeRange {
    unsigned pe = 0, me = 0;
    uint32_t begin = 0, end = 0;
  };
  std::vector<CodeRange> codeRanges;
  /// Per NetPE (indexed like `pes`): the SRAM address of its lookup table
  /// (meLookupTableBytes at it, in `persistent`), 0 when it has none.
  std::vector<uint32_t> lookupTables;
};

/// The lookup coprocessor on the MEs (docs/me-backend.md, "The lookup
/// coprocessor"): an SRAM table of meLookupSlots slots after a word that
/// counts the entries and 4 bytes of padding. A slot is the key's length
/// in words (0: empty), the value, the stamp (R2 at add_value), then up to
/// 16 key words; a key's slot is meLookupHash of its words, probed
/// linearly (round from the last slot to the first) until the key or an
/// empty slot. It holds at most meLookupCapacity entries, as the lookup
/// coprocessor does on every engine, so at least half the slots are empty
/// and every probe ends. The back end generates the probes; the emulator
/// engine's control plane (Engine::lookupEntries, ...) reads and changes
/// the table with the same hash.
constexpr uint32_t meLookupCapacity = 16384, meLookupSlots = 32768,
                   meLookupSlotBytes = 76, meLookupSlotsOffset = 8;
constexpr uint32_t meLookupTableBytes =
    meLookupSlotsOffset + meLookupSlots * meLookupSlotBytes;
/// Word offsets in a slot.
enum : uint32_t {
  meSlotLength = 0,
  meSlotValue = 1,
  meSlotStamp = 2,
  meSlotKey = 3
};

/// The slot a key hashes to: its words rotated and xored, the high bits
/// folded into the low ones.
inline uint32_t meLookupHash(const uint32_t *key, uint32_t words) {
  uint32_t h = key[0];
  for (uint32_t i = 1; i < words; ++i)
    h = ((h >> 27) | (h << 5)) ^ key[i];
  h ^= h >> 15;
  h ^= h >> 7;
  return h & (meLookupSlots - 1);
}

/// What each ME holds, for the resource report (netc --target=me -v).
struct MEReport {
  unsigned me = 0;
  std::string role; // "receive", "transmit", or the NetPEs it runs
  unsigned instructions = 0, controlStore = 0;
  unsigned gprsA = 0, gprsB = 0, transferRegisters = 0, signals = 0;
  unsigned localMemoryWords = 0;
  unsigned spills = 0, bankMoves = 0;
};

struct CompiledApp {
  Image image;
  AppLayout layout;
  /// The image as ME assembly: netvm-me-as assembles it to `image`.
  std::string assembly;
  std::vector<MEReport> report;
};

} // namespace netvm::me

#endif // NETVM_TARGET_ME_APPLAYOUT_H
