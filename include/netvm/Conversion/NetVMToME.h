//===- NetVMToME.h - Instruction selection for the microengines -*- C++ -*-===//
//
// netvm (+ arith, cf) -> me: each handler of an optimized application
// becomes a me.func of virtual-register instructions. The lowering of each
// operation is a pattern of its own (lib/Conversion/NetVMToME); the
// driver walks a handler's blocks in order and applies them.
// docs/me-backend.md lists what each construct becomes and what is
// refused.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_CONVERSION_NETVMTOME_H
#define NETVM_CONVERSION_NETVMTOME_H

#include "netvm/Target/ME/AppLayout.h"

#include "mlir/IR/Builders.h"
#include "mlir/Support/LogicalResult.h"

#include <cstdint>
#include <string>
#include <vector>

namespace netvm {
class HandlerOp;
namespace medialect {
class FuncOp;
} // namespace medialect

struct MELoweringOptions {
  /// Bytes of the packet prefetched into DRAM transfer registers at
  /// arrival, at most (a multiple of 8, at most 64).
  unsigned maxHeaderBytes = 64;
  /// SRAM byte addresses of the NetPE's data memory, the application's
  /// shared memory and the NetPE's initialised data (docs/me-backend.md,
  /// "Memory map"); their sizes come from the NetPE.
  uint32_t dataBase = 0, sharedBase = 0, initDataBase = 0;
  /// Bytes of info memory (the application's, for bounds checks). The
  /// first meInfoWindowBytes of them are kept in local memory window 1
  /// while the packet is on the ME; an access that may reach past them is
  /// refused, so the rest is provably zeros.
  unsigned infoSize = 64;
  /// Bytes of a packet buffer (a new exchange buffer larger than this
  /// raises packet_bounds, as one over 64 KB does on every engine).
  uint32_t bufferBytes = 65536;
  /// SRAM byte address of the NetPE's random-number state (a word).
  uint32_t randomState = 0;
  /// SRAM byte address of the NetPE's lookup table (meLookupTableBytes;
  /// 0 when the NetPE does not use the lookup coprocessor).
  uint32_t lookupBase = 0;
  /// The NetPE's number (1-15, the CAM state of its entries) in the ME's
  /// cache of lookup slots (the CAM and local memory from
  /// meLookupCacheBase; docs/me-backend.md); 0: its lookups are not cached.
  unsigned lookupCache = 0;
  /// The event log (SRAM addresses of its count and entries, its capacity)
  /// and the NetPE's index in it: exbuf.delete logs a drop.
  uint32_t eventCount = 0, eventLog = 0, eventCapacity = 0, dropEvent = 0;
  unsigned peIndex = 0;
  /// SRAM address of the NetPE's drop counter (0: none), which pkt.drop
  /// and exbuf.delete increment.
  uint32_t dropCounter = 0;
  /// Local memory window 0 word that holds the packet's arrival seconds
  /// (microseconds in the next word); -1 if no handler reads them.
  int timestampWord = -1;
};

/// Bytes of info memory the MEs keep (local memory window 1 on the ME, the
/// DRAM before the buffer between MEs and to the host).
constexpr unsigned meInfoWindowBytes = 64;

/// The cache of lookup slots: 16 entries of local memory (one per CAM
/// entry) of 8 words from this byte address: [slot offset | key length <<
/// 24, value, stamp, key words...], for keys of up to 5 words.
constexpr unsigned meLookupCacheBase = 2048;
constexpr unsigned meLookupCacheEntryWords = 8;
constexpr unsigned meLookupCacheKeyWords = meLookupCacheEntryWords - 3;
constexpr unsigned meLookupCacheEnd =
    meLookupCacheBase + 16 * meLookupCacheEntryWords * 4;

/// What the lowering of one handler found out, for the packet path.
struct MEHandlerInfo {
  /// Bytes of the header the packet path must prefetch (0: none).
  unsigned headerBytes = 0;
  /// The handler uses the watchdog counter.
  bool usesWatchdog = false;
  /// The handler writes data or shared memory: its contexts must take
  /// packets through it in order (the packet path's state token).
  bool writesState = false;
  /// The handler reads or writes info memory.
  bool usesInfo = false;
  /// The handler draws random numbers (the NetPE's state word).
  bool usesRandom = false;
  /// The handler sends copies of the packet (pkt.senddup).
  bool sendsCopies = false;
  /// The handler logs its drops as events (it deletes its exchange buffer,
  /// which logs a drop, so the host cannot infer the others).
  bool logsDrops = false;
};

/// Lowers one handler into a new me.func built at `builder`'s insertion
/// point. `locations` is the application's table of exception locations
/// ("file:line:col"), extended with this handler's. Refusals are reported
/// on the operation that cannot be lowered, naming the NetPE.
mlir::FailureOr<medialect::FuncOp>
lowerHandlerToME(HandlerOp handler, mlir::OpBuilder &builder,
                 const MELoweringOptions &options,
                 std::vector<std::string> &locations, MEHandlerInfo &info);

} // namespace netvm

#endif // NETVM_CONVERSION_NETVMTOME_H
