//===- NetVMToME.cpp - Instruction selection for the microengines ---------===//
//
// Lowers one netvm handler (after the optimizer) to a me.func. The walk
// keeps the handler's block structure: every block gets a counterpart with
// i32 arguments, and each operation is lowered by the pattern for its kind
// into me operations at the end of the current block. Values narrower than
// 32 bits live zero-extended in a register. Conditions (i1) are not
// materialised where a branch uses them: `cf.cond_br` on a comparison
// becomes one compare-and-branch, and on `and`/`or` of comparisons a short
// circuit of them; only an i1 that flows into arithmetic becomes 0/1.
//
//===----------------------------------------------------------------------===//

#include "netvm/Conversion/NetVMToME.h"

#include "ME/MEOps.h"
#include "NetVM/NetVMOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/RegionGraphTraits.h"
#include "llvm/ADT/PostOrderIterator.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace netvm;
namespace med = netvm::medialect;
// The lookup table's format (AppLayout.h).
using netvm::me::meLookupCapacity;
using netvm::me::meLookupSlotBytes;
using netvm::me::meLookupSlots;
using netvm::me::meLookupSlotsOffset;
using netvm::me::meSlotKey;
using netvm::me::meSlotStamp;
using netvm::me::meSlotValue;

namespace {

unsigned widthOf(Type type) {
  return isa<IntegerType>(type) ? type.getIntOrFloatBitWidth() : 32;
}

/// The end of the packet words a load of `size` bytes at `offset` reads.
uint64_t wordsEnd(uint64_t offset, unsigned size) {
  return 4 * ((offset + size - 1) / 4 + 1);
}

/// A constant operand, if the value is one.
std::optional<uint32_t> constantOf(Value value) {
  IntegerAttr attr;
  if (value && matchPattern(value, m_Constant(&attr)))
    return static_cast<uint32_t>(attr.getValue().getZExtValue());
  return std::nullopt;
}

class HandlerLowering {
public:
  HandlerLowering(HandlerOp handler, OpBuilder &builder,
                  const MELoweringOptions &options,
                  std::vector<std::string> &locations, MEHandlerInfo &info)
      : handler(handler), pe(handler.getPE()), b(builder), options(options),
        locations(locations), info(info) {}

  FailureOr<med::FuncOp> run();

private:
  // Values.
  Value get(Value value);
  Value constant(uint32_t value, Location loc) {
    return med::ConstOp::create(b, loc, b.getI32Type(),
                                b.getI32IntegerAttr(value));
  }
  Value alu(Location loc, StringRef op, Value a, Value v) {
    return med::AluOp::create(b, loc, b.getI32Type(), b.getStringAttr(op), a, v,
                              StringAttr(), IntegerAttr());
  }
  Value shifted(Location loc, StringRef op, Value a, Value v, StringRef shift,
                unsigned amount) {
    return med::AluOp::create(b, loc, b.getI32Type(), b.getStringAttr(op), a, v,
                              b.getStringAttr(shift),
                              amount ? b.getI32IntegerAttr(amount)
                                     : IntegerAttr());
  }
  Value fieldClear(Location loc, unsigned mask, Value v, unsigned right) {
    return med::LdFieldOp::create(
        b, loc, b.getI32Type(), b.getI32IntegerAttr(mask), Value(), v,
        right ? b.getStringAttr(">>") : StringAttr(),
        right ? b.getI32IntegerAttr(right) : IntegerAttr());
  }
  /// Keeps the low `bits` bits of a value (one ld_field_w_clr for 8 and
  /// 16 bits).
  Value truncate(Location loc, Value v, unsigned bits) {
    if (bits >= 32)
      return v;
    if (bits == 16)
      return fieldClear(loc, 0x3, v, 0);
    if (bits == 8)
      return fieldClear(loc, 0x1, v, 0);
    return alu(loc, "and", v, constant((1u << bits) - 1, loc));
  }
  Value signExtend(Location loc, Value v, unsigned bits) {
    if (bits >= 32)
      return v;
    Value up = shifted(loc, "b", Value(), v, "<<", 32 - bits);
    return shifted(loc, "b", Value(), up, ">>asr", 32 - bits);
  }
  /// The branch of a comparison and its operands, sign-extended when the
  /// comparison is signed and narrower than 32 bits.
  std::tuple<StringRef, Value, Value> compareOperands(arith::CmpIOp cmp);
  /// A condition as 0/1 in a register.
  Value materialize(Value cond);

  // Memory.
  LogicalResult lowerLoad(LoadOp op);
  LogicalResult lowerStore(StoreOp op);
  LogicalResult lowerAtomicAdd(AtomicAddOp op);
  /// SRAM memories: their base address and size, or failure.
  FailureOr<std::pair<uint32_t, uint32_t>> sramSpace(Operation *op,
                                                     MemSpace space);
  Value sramLoad(Location loc, uint32_t base, Value offset, unsigned size);
  Value headerLoad(Location loc, uint32_t offset, unsigned size);
  /// Bytes n .. n + size - 1 of the 8 bytes w0:w1 (w1 may be absent when
  /// they lie in w0), zero-extended.
  Value extractBytes(Location loc, Value w0, Value w1, unsigned n,
                     unsigned size);
  /// Merges the `size` low bytes of `value` into the words `window` at byte
  /// position `at` (0-3 of the first word, most significant first).
  void mergeBytes(Location loc, SmallVectorImpl<Value> &window, unsigned at,
                  Value value, unsigned size);
  LogicalResult lowerInfoLoad(LoadOp op);
  // Bytes at computed offsets, in any memory (netvm.copy and stores at
  // computed offsets): the byte zero-extended, and its store.
  FailureOr<Value> loadByte(Operation *op, MemSpace space, Value offset);
  LogicalResult storeByte(Operation *op, MemSpace space, Value offset,
                          Value byte);
  /// `byte` (low 8 bits) merged into `word` at byte address `at`'s place.
  Value mergeByte(Location loc, Value word, Value at, Value byte);
  /// Runs `body` with local memory window 1 at info byte `offset` rounded
  /// down to a word (*l$index1[0] is that word), then puts it back.
  template <typename Body>
  void atInfoWord(Location loc, Value offset, Body body);
  LogicalResult lowerCopy(CopyOp op);
  /// Stores `size` bytes of `value` at a computed offset, byte by byte.
  LogicalResult storeBytes(Operation *op, MemSpace space, Value offset,
                           Value value, unsigned size);
  LogicalResult lowerInfoStore(StoreOp op);
  LogicalResult lowerCheckBounds(CheckBoundsOp op);
  /// The DRAM addresses of packet[offset, offset + length), after raising
  /// packet_bounds unless the range is in the packet (or `inBounds`).
  std::pair<Value, Value> packetSpan(Location loc, Value offset, Value length,
                                     bool inBounds);
  /// The same for any memory (its size and bounds exception).
  LogicalResult rangeCheck(Operation *op, MemSpace space, Value offset,
                           Value extent);
  LogicalResult rangeCheck(Operation *op, MemSpace space, Value offset,
                           Value extent, Location loc);
  LogicalResult lowerChecksum(ChecksumOp op);
  void continueWordLoop(Location loc, Value next, Value end,
                        ValueRange loopArgs, Block *loop, ValueRange exitArgs,
                        Block *exit);
  /// Unsigned n / d and n % d by restoring division, a loop of 32 steps
  /// (the MEs have no divider).
  std::pair<Value, Value> divide(Location loc, Value n, Value d);
  LogicalResult lowerDivision(Operation *op);
  LogicalResult lowerHash(HashOp op);
  LogicalResult lowerPacketStore(StoreOp op);
  LogicalResult lowerFieldCmp(FieldCmpOp op);
  LogicalResult lowerPacketScan(PacketScanOp op);
  /// pscan of one byte: a word at a time.
  void lowerByteScan(PacketScanOp op, Value start, Value needle, Value buffer,
                     Value length);
  LogicalResult lowerExbufCreate(ExbufCreateOp op);
  /// Before an access to data or shared memory: the ordered section.
  void enterState(Location loc, MemSpace space) {
    if (space == MemSpace::Data || space == MemSpace::Shared)
      med::StateTokenOp::create(b, loc);
  }
  /// The handler replaces its packet (exbuf_create): lengths read before
  /// are copied out of the packet path's registers.
  bool replacesPacket = false;
  /// Ends the current block with a raise of `kind` at `loc` (an access
  /// that the bounds check before it always stops) and goes on lowering in
  /// an unreachable block.
  void raiseHere(Location loc, ExceptionKind kind) {
    med::BrOp::create(b, loc, ValueRange(), raiseBlock(loc, kind));
    b.setInsertionPointToEnd(newBlock());
  }
  LogicalResult lowerPacketCrc(PacketCrcOp op);
  LogicalResult lowerBit(BitOp op);
  LogicalResult lowerFindBit(FindBitOp op);
  Value highestBit(Location loc, Value x);
  LogicalResult lowerRandom(RandomOp op);
  Value select(Location loc, StringRef cond, Value a, Value v, Value t,
               Value f) {
    return med::SelectOp::create(b, loc, b.getI32Type(), cond, "-", a, v, t, f);
  }
  /// The two bytes of a 16-bit value swapped.
  Value swap16(Location loc, Value x) {
    return alu(loc, "or", shifted(loc, "b", Value(), x, ">>", 8),
               shifted(loc, "b", Value(), fieldClear(loc, 0x1, x, 0), "<<", 8));
  }

  // Control flow.
  Block *blockFor(Block *netvmBlock) { return blocks.lookup(netvmBlock); }
  SmallVector<Value> mapped(ValueRange values) {
    SmallVector<Value> out;
    for (Value v : values)
      out.push_back(get(v));
    return out;
  }
  /// Branches on a netvm i1 condition: a compare-and-branch, or a short
  /// circuit of them.
  void branchOn(Location loc, Value cond, Block *t, ArrayRef<Value> targs,
                Block *f, ArrayRef<Value> fargs);
  /// A new block after the current one, for short circuits and checks.
  Block *newBlock() {
    Region &region = *b.getInsertionBlock()->getParent();
    return b.createBlock(&region, region.end());
  }
  /// A block that raises exception `kind` at `loc` (one per kind and
  /// location).
  Block *raiseBlock(Location loc, ExceptionKind kind);

  // Coprocessors (the lookup coprocessor only). Its registers R0 and R1
  // and the pending key are SSA values while the handler runs: the
  // handler must write a register before it reads it and leave no key
  // pending (then nothing carries from one packet to the next, and a
  // context's copy is the NetPE's). Blocks take the live ones as extra
  // arguments after their own.
  // The exchange buffers a point may see, as a set: the packet that
  // arrived, none (after exbuf.delete, and in .init), one made by
  // exbuf.create (no arrival time). Where none is possible but not sure,
  // the code tests for it: exbuf.delete sets the wire length to ~0.
  enum Exbuf : unsigned { Arrived = 1, None = 2, Created = 4 };
  struct FlowPoint {
    bool reachable = false;
    unsigned pending = 0; // words of the pending key
    unsigned defined = 0; // bit r: register r written
    unsigned exbuf = Arrived;
    bool operator==(const FlowPoint &o) const {
      return reachable == o.reachable && pending == o.pending &&
             defined == o.defined && exbuf == o.exbuf;
    }
  };
  unsigned exbuf = Arrived; // at the operation being lowered
  /// Raises `kind` when there is no exchange buffer (only where there may
  /// be none).
  void raiseIfNone(Location loc, ExceptionKind kind) {
    if (exbuf & None)
      branchIfNone(loc, raiseBlock(loc, kind));
  }
  /// Branches to `dest` when there is no exchange buffer (only where there
  /// may be none; with none for sure, always).
  void branchIfNone(Location loc, Block *dest) {
    if (!(exbuf & None))
      return;
    if (exbuf == None) {
      med::BrOp::create(b, loc, ValueRange(), dest);
      b.setInsertionPointToEnd(newBlock());
      return;
    }
    Block *current = b.getInsertionBlock();
    Block *next = newBlock();
    b.setInsertionPointToEnd(current);
    Value wire = med::ArgOp::create(b, loc, b.getI32Type(), "wire");
    med::CmpBrOp::create(b, loc, "beq", "+", wire, constant(1, loc),
                         ValueRange(), ValueRange(), dest, next);
    b.setInsertionPointToEnd(next);
  }
  LogicalResult lowerExbufDelete(ExbufDeleteOp op);
  /// The NetPE's drop counter + 1 (an SRAM increment).
  void countDrop(Location loc) {
    if (options.dropCounter && handler.getKind() == HandlerKind::Push)
      med::MemOp::create(b, loc, TypeRange(), "sram", "incr",
                         constant(options.dropCounter, loc), constant(0, loc),
                         ValueRange(), 1);
  }
  /// The state at each block's entry (lookup registers and pending key,
  /// exchange buffers); refuses what the MEs cannot keep.
  LogicalResult analyzeFlow();
  /// Runs the block's coprocessor and exchange-buffer operations from
  /// `point`; with `check`, refuses reads of registers not written.
  LogicalResult transferFlow(Block *block, FlowPoint &point, bool check);
  /// The branch operands of an edge to `dest`: its own, then the live
  /// coprocessor values.
  SmallVector<Value> edge(Block *dest, ValueRange operands);
  LogicalResult lowerCoproInvoke(CoproInvokeOp op);
  /// Probes the lookup table for `key`: the blocks reached on a hit and on
  /// an empty slot, and the slot's offset and value there.
  struct Probe {
    Block *hit, *miss;
    Value offset, value, stamp;
  };
  /// The key's hash before it is folded to a slot (meLookupHash).
  Value lookupHash(Location loc, ArrayRef<Value> key);
  /// Ends the current block with a branch into the probe loop from the
  /// key's slot (`hash`: lookupHash).
  Probe enterProbe(Location loc, ArrayRef<Value> key, Value hash);
  /// The cache of lookup slots on the ME (docs/me-backend.md): the CAM's
  /// tag is the key's hash with the top bit set (never the 0 of a cleared
  /// entry), its state the NetPE's cache number; the entry's local memory
  /// holds a copy of the slot. Only while the NetPE's lookups are cached
  /// and the key fits an entry.
  bool cached(unsigned words) const {
    return options.lookupCache && words <= meLookupCacheKeyWords;
  }
  Value cacheTag(Location loc, Value hash) {
    return alu(loc, "or", hash, constant(0x80000000u, loc));
  }
  /// The local-memory address of the entry in a cam_lookup result (hit or
  /// miss: the entry is in bits 6:3).
  Value cacheEntry(Location loc, Value found) {
    return shifted(loc, "+", constant(meLookupCacheBase, loc),
                   alu(loc, "and", found, constant(0x78, loc)), "<<", 2);
  }
  /// Runs `body` with local memory window 1 at `address` (window 1 holds
  /// info memory otherwise).
  template <typename Body>
  void atCacheEntry(Location loc, Value address, Body body) {
    Value base =
        med::CsrReadOp::create(b, loc, b.getI32Type(), "active_lm_addr_1");
    med::CsrWriteOp::create(b, loc, "active_lm_addr_1", address);
    body();
    med::CsrWriteOp::create(b, loc, "active_lm_addr_1", base);
  }
  /// A look in the cache: `hit` when an entry of this NetPE holds the key
  /// (its slot's offset, value and stamp, and the entry's address), `miss`
  /// otherwise. Nothing between the cam_lookup and the end of `hit` swaps
  /// the context out, so the entry cannot change under it.
  struct Cached {
    Block *hit, *miss;
    Value offset, value, stamp, address;
  };
  Cached enterCache(Location loc, ArrayRef<Value> key, Value tag);
  /// Puts the key's slot into the cache: the entry that holds the tag, or
  /// the least recently used one. Issues no memory command, so it is one
  /// step for the other contexts.
  void fillCache(Location loc, Value tag, ArrayRef<Value> key, Value offset,
                 Value value, Value stamp);
  Value lookupSlots(Location loc) {
    return constant(options.lookupBase + meLookupSlotsOffset, loc);
  }
  // R2 is the stamp add_value stores with an entry for the host's
  // ageing; nothing reads it back on the MEs, so the table keeps none.
  enum : unsigned {
    coproR0 = 0,
    coproR1 = 1,
    coproR2 = 2,
    coproRegs = 3,
    coproKey = 3
  };
  /// Words of a slot per SRAM command (the transfer registers hold 15).
  static constexpr unsigned lookupChunk = 12;
  DenseMap<Block *, FlowPoint> flowEntry;
  SmallVector<Value> copro; // R0, R1, then the pending key's words
  /// The handler changes the table: its operations take the state token.
  bool tableWrites = false;

  LogicalResult lowerOp(Operation *op);
  LogicalResult refuse(Operation *op, const Twine &why) {
    return op->emitError("the microengine back end cannot compile ")
           << why << " (NetPE '" << pe.getSymName()
           << "'; docs/me-backend.md lists what it refuses)";
  }
  /// Info memory past the first meInfoWindowBytes is not kept on the MEs:
  /// the back end proves that no access reaches it (constant offsets below
  /// the window), so it stays zeros as on the other engines.
  LogicalResult refuseInfoBeyondWindow(Operation *op, unsigned end) {
    return refuse(op, Twine("info memory up to byte ") + Twine(end) +
                          " (the MEs keep the first " +
                          Twine(meInfoWindowBytes) +
                          " bytes of info memory in local memory; bytes "
                          "past them must be provably unused)");
  }
  /// Whether a computed offset into info memory may reach past the window.
  bool infoOverWindow() const { return options.infoSize > meInfoWindowBytes; }

  HandlerOp handler;
  PEOp pe;
  OpBuilder &b;
  const MELoweringOptions &options;
  std::vector<std::string> &locations;
  MEHandlerInfo &info;

  med::FuncOp func;
  IRMapping values;
  DenseMap<Block *, Block *> blocks;
  std::map<std::pair<unsigned, std::string>, Block *> raises;
  bool prefetch = false;
};

Value HandlerLowering::get(Value value) {
  // Already lowered (the helpers that take either).
  if (value && value.getParentRegion() == &func.getBody())
    return value;
  // Constants are rematerialised where they are used: the emitter folds
  // small ones into immediates, so a register only holds one for as long
  // as the instruction that needs it.
  if (auto c = constantOf(value)) {
    unsigned bits = widthOf(value.getType());
    uint32_t v = bits >= 32 ? *c : (*c & ((1u << bits) - 1));
    return constant(v, value.getLoc());
  }
  if (Value v = values.lookupOrNull(value))
    return v;
  // A condition used as a value.
  if (value.getType().isInteger(1))
    return materialize(value);
  return {};
}

static std::pair<StringRef, bool> conditionFor(arith::CmpIPredicate p) {
  // The branch taken after alu[--, a, -, b] when the predicate holds; the
  // flag says whether the operands are signed.
  switch (p) {
  case arith::CmpIPredicate::eq:
    return {"beq", false};
  case arith::CmpIPredicate::ne:
    return {"bne", false};
  case arith::CmpIPredicate::ult:
    return {"bcs", false};
  case arith::CmpIPredicate::uge:
    return {"bcc", false};
  case arith::CmpIPredicate::ugt:
    return {"bhi", false};
  case arith::CmpIPredicate::ule:
    return {"bls", false};
  case arith::CmpIPredicate::slt:
    return {"blt", true};
  case arith::CmpIPredicate::sge:
    return {"bge", true};
  case arith::CmpIPredicate::sgt:
    return {"bgt", true};
  case arith::CmpIPredicate::sle:
    return {"ble", true};
  }
  return {"beq", false};
}

std::tuple<StringRef, Value, Value>
HandlerLowering::compareOperands(arith::CmpIOp cmp) {
  auto [branch, isSigned] = conditionFor(cmp.getPredicate());
  Value a = get(cmp.getLhs()), v = get(cmp.getRhs());
  unsigned bits = widthOf(cmp.getLhs().getType());
  if (isSigned && bits < 32) {
    a = signExtend(cmp.getLoc(), a, bits);
    v = signExtend(cmp.getLoc(), v, bits);
  }
  return {branch, a, v};
}

Value HandlerLowering::materialize(Value cond) {
  Location loc = cond.getLoc();
  if (auto c = constantOf(cond))
    return constant(*c & 1, loc);
  Operation *def = cond.getDefiningOp();
  if (auto cmp = dyn_cast_or_null<arith::CmpIOp>(def)) {
    auto [branch, a, v] = compareOperands(cmp);
    return med::SetCCOp::create(b, loc, b.getI32Type(), b.getStringAttr(branch),
                                b.getStringAttr("-"), a, v);
  }
  if (def && isa<arith::AndIOp, arith::OrIOp, arith::XOrIOp>(def)) {
    StringRef op = isa<arith::AndIOp>(def)  ? "and"
                   : isa<arith::OrIOp>(def) ? "or"
                                            : "xor";
    Value a = get(def->getOperand(0)), v = get(def->getOperand(1));
    return alu(loc, op, a, v);
  }
  if (Value v = values.lookupOrNull(cond))
    return v;
  return {};
}

void HandlerLowering::branchOn(Location loc, Value cond, Block *t,
                               ArrayRef<Value> targs, Block *f,
                               ArrayRef<Value> fargs) {
  Operation *def = cond.getDefiningOp();
  if (auto c = constantOf(cond)) {
    if (*c & 1)
      med::BrOp::create(b, loc, targs, t);
    else
      med::BrOp::create(b, loc, fargs, f);
    return;
  }
  if (auto cmp = dyn_cast_or_null<arith::CmpIOp>(def)) {
    auto [branch, a, v] = compareOperands(cmp);
    med::CmpBrOp::create(b, loc, b.getStringAttr(branch), b.getStringAttr("-"),
                         a, v, targs, fargs, t, f);
    return;
  }
  if (def && def->getNumOperands() == 2 &&
      isa<arith::AndIOp, arith::OrIOp>(def)) {
    // Short circuit: and = (x ? y : false), or = (x ? true : y).
    Block *current = b.getInsertionBlock();
    Block *second = newBlock();
    b.setInsertionPointToEnd(current);
    if (isa<arith::AndIOp>(def))
      branchOn(loc, def->getOperand(0), second, {}, f, fargs);
    else
      branchOn(loc, def->getOperand(0), t, targs, second, {});
    b.setInsertionPointToEnd(second);
    branchOn(loc, def->getOperand(1), t, targs, f, fargs);
    return;
  }
  if (auto x = dyn_cast_or_null<arith::XOrIOp>(def)) {
    if (auto c = constantOf(x.getRhs()); c && (*c & 1))
      return branchOn(loc, x.getLhs(), f, fargs, t, targs);
    if (auto c = constantOf(x.getLhs()); c && (*c & 1))
      return branchOn(loc, x.getRhs(), f, fargs, t, targs);
  }
  Value v = get(cond);
  med::CmpBrOp::create(b, loc, b.getStringAttr("bne"), b.getStringAttr("-"), v,
                       constant(0, loc), targs, fargs, t, f);
}

Block *HandlerLowering::raiseBlock(Location loc, ExceptionKind kind) {
  std::string where = locationString(loc);
  auto key = std::make_pair(static_cast<unsigned>(kind), where);
  if (auto it = raises.find(key); it != raises.end())
    return it->second;
  OpBuilder::InsertionGuard guard(b);
  Region &region = func.getBody();
  Block *block = b.createBlock(&region, region.end());
  unsigned index = locations.size();
  locations.push_back(where);
  med::RaiseOp::create(b, loc, static_cast<uint32_t>(kind), index);
  raises[key] = block;
  return block;
}

Value HandlerLowering::headerLoad(Location loc, uint32_t offset,
                                  unsigned size) {
  unsigned word = offset / 4, byte = offset % 4;
  auto hdr = [&](unsigned i) {
    return med::HeaderOp::create(b, loc, b.getI32Type(),
                                 b.getI32IntegerAttr(i));
  };
  if (size == 4) {
    if (byte == 0)
      return hdr(word);
    return med::ByteAlignOp::create(b, loc, b.getI32Type(), hdr(word),
                                    hdr(word + 1), b.getI32IntegerAttr(byte));
  }
  if (byte + size > 4) {
    // A half word across two words: align, then take the top half.
    Value aligned =
        med::ByteAlignOp::create(b, loc, b.getI32Type(), hdr(word),
                                 hdr(word + 1), b.getI32IntegerAttr(byte));
    return shifted(loc, "b", Value(), aligned, ">>", 16);
  }
  // Bytes byte .. byte + size - 1 of the word, most significant first.
  unsigned right = 8 * (4 - byte - size);
  if (byte == 0)
    return shifted(loc, "b", Value(), hdr(word), ">>", 32 - 8 * size);
  return fieldClear(loc, size == 2 ? 0x3 : 0x1, hdr(word), right);
}

LogicalResult HandlerLowering::lowerLoad(LoadOp op) {
  Location loc = op.getLoc();
  unsigned size = widthOf(op.getType()) / 8;
  if (op.getLittleEndian())
    return refuse(op, "a little-endian load (the ME pipeline does not swap "
                      "byte order)");
  if (op.getSpace() == MemSpace::Info)
    return lowerInfoLoad(op);
  if (op.getSpace() != MemSpace::Packet) {
    auto space = sramSpace(op, op.getSpace());
    if (failed(space))
      return failure();
    enterState(loc, op.getSpace());
    values.map(op.getResult(),
               sramLoad(loc, space->first, op.getOffset(), size));
    return success();
  }
  auto offset = constantOf(op.getOffset());
  if (prefetch && offset && wordsEnd(*offset, size) <= info.headerBytes) {
    values.map(op.getResult(), headerLoad(loc, *offset, size));
    return success();
  }
  Value buffer = med::ArgOp::create(b, loc, b.getI32Type(), "buffer");
  Value address = alu(loc, "+", buffer, get(op.getOffset()));
  values.map(op.getResult(),
             med::PacketReadOp::create(b, loc, b.getI32Type(), address,
                                       b.getI32IntegerAttr(size),
                                       b.getBoolAttr(false)));
  return success();
}

FailureOr<std::pair<uint32_t, uint32_t>>
HandlerLowering::sramSpace(Operation *op, MemSpace space) {
  switch (space) {
  case MemSpace::Data:
    return std::make_pair(options.dataBase, pe.getDatamemSize());
  case MemSpace::Shared:
    return std::make_pair(options.sharedBase, pe.getSharedmemSize());
  case MemSpace::InitData:
    return std::make_pair(
        options.initDataBase,
        static_cast<uint32_t>(pe.getInitdata() ? pe.getInitdata()->size() : 0));
  default:
    break;
  }
  return refuse(op,
                Twine("an access to ") + stringifyMemSpace(space) + " memory");
}

Value HandlerLowering::sramLoad(Location loc, uint32_t base, Value offset,
                                unsigned size) {
  // SRAM is read in words: the two words from the address rounded down to
  // 4, then the bytes at the address's low bits.
  auto c = constantOf(offset);
  Value zero = constant(0, loc);
  if (c) {
    uint32_t address = base + *c;
    uint32_t aligned = address & ~3u;
    unsigned n = address & 3;
    unsigned words = n + size > 4 ? 2 : 1;
    auto read = med::MemOp::create(
        b, loc, SmallVector<Type>(words, b.getI32Type()), "sram", "read",
        constant(aligned, loc), zero, ValueRange(), words);
    return extractBytes(loc, read.getResult(0),
                        words == 2 ? read.getResult(1) : Value(), n, size);
  }
  Value address = alu(loc, "+", get(offset), constant(base, loc));
  if (size == 4 && isMultipleOf4(offset) && base % 4 == 0)
    return med::MemOp::create(b, loc, TypeRange{b.getI32Type()}, "sram", "read",
                              address, zero, ValueRange(), 1)
        .getResult(0);
  Value aligned = alu(loc, "and~", address, constant(3, loc));
  auto read =
      med::MemOp::create(b, loc, SmallVector<Type>(2, b.getI32Type()), "sram",
                         "read", aligned, zero, ValueRange(), 2);
  Value low = alu(loc, "and", address, constant(3, loc));
  med::CsrWriteOp::create(b, loc, "byte_index", low);
  Value word =
      med::ByteAlignOp::create(b, loc, b.getI32Type(), read.getResult(0),
                               read.getResult(1), b.getI32IntegerAttr(4));
  if (size < 4)
    word = shifted(loc, "b", Value(), word, ">>", 32 - 8 * size);
  return word;
}

Value HandlerLowering::extractBytes(Location loc, Value w0, Value w1,
                                    unsigned n, unsigned size) {
  if (n + size > 4) {
    Value word = med::ByteAlignOp::create(b, loc, b.getI32Type(), w0, w1,
                                          b.getI32IntegerAttr(n));
    return size < 4 ? shifted(loc, "b", Value(), word, ">>", 32 - 8 * size)
                    : word;
  }
  if (size == 4)
    return w0;
  if (n == 0)
    return shifted(loc, "b", Value(), w0, ">>", 32 - 8 * size);
  return fieldClear(loc, size == 2 ? 0x3 : 0x1, w0, 8 * (4 - n - size));
}

void HandlerLowering::mergeBytes(Location loc, SmallVectorImpl<Value> &window,
                                 unsigned at, Value value, unsigned size) {
  for (unsigned i = 0; i < size; ++i) {
    // Byte i of the value (most significant first) goes to byte position
    // p of the window.
    unsigned p = at + i;
    unsigned word = p / 4, byteInWord = p % 4; // 0 = most significant
    unsigned fromBit = 8 * (size - 1 - i);     // the byte in the value
    unsigned toBit = 8 * (3 - byteInWord);
    // Rotate the value so that its byte lands at toBit, then ld_field it.
    unsigned rot = (fromBit - toBit + 32) % 32; // right rotation
    window[word] = med::LdFieldOp::create(
        b, loc, b.getI32Type(), b.getI32IntegerAttr(1u << (3 - byteInWord)),
        window[word], value, rot ? b.getStringAttr(">>rot") : StringAttr(),
        rot ? b.getI32IntegerAttr(rot) : IntegerAttr());
  }
}

LogicalResult HandlerLowering::lowerInfoLoad(LoadOp op) {
  // Info memory is in local memory window 1: words read like registers.
  Location loc = op.getLoc();
  unsigned size = widthOf(op.getType()) / 8;
  auto c = constantOf(op.getOffset());
  if (!c) {
    // Byte by byte through the moved window.
    info.usesInfo = true;
    Value offset = get(op.getOffset()), result;
    for (unsigned i = 0; i < size; ++i) {
      Value at = i ? alu(loc, "+", offset, constant(i, loc)) : offset;
      FailureOr<Value> byte = loadByte(op, MemSpace::Info, at);
      if (failed(byte))
        return failure();
      result =
          i ? alu(loc, "or", shifted(loc, "b", Value(), result, "<<", 8), *byte)
            : *byte;
    }
    values.map(op.getResult(), result);
    return success();
  }
  info.usesInfo = true;
  raiseIfNone(loc, ExceptionKind::InfoBounds);
  if (*c + size > options.infoSize) {
    // Its bounds check raises first (sizes over 64 bytes are refused for
    // the whole application).
    raiseHere(op.getLoc(), ExceptionKind::InfoBounds);
    values.map(op.getResult(), constant(0, loc));
    return success();
  }
  if (*c + size > meInfoWindowBytes)
    return refuseInfoBeyondWindow(op, *c + size);
  unsigned word = *c / 4, n = *c % 4;
  auto lm = [&](unsigned w) {
    return med::LocalReadOp::create(b, loc, b.getI32Type(), 1, w);
  };
  Value w0 = lm(word);
  Value w1 = n + size > 4 ? lm(word + 1) : Value();
  values.map(op.getResult(), extractBytes(loc, w0, w1, n, size));
  return success();
}

LogicalResult HandlerLowering::lowerInfoStore(StoreOp op) {
  Location loc = op.getLoc();
  unsigned size = widthOf(op.getValue().getType()) / 8;
  auto c = constantOf(op.getOffset());
  if (!c)
    return storeBytes(op, MemSpace::Info, get(op.getOffset()),
                      get(op.getValue()), size);
  info.usesInfo = true;
  raiseIfNone(loc, ExceptionKind::InfoBounds);
  if (*c + size > options.infoSize) {
    raiseHere(op.getLoc(), ExceptionKind::InfoBounds);
    return success();
  }
  if (*c + size > meInfoWindowBytes)
    return refuseInfoBeyondWindow(op, *c + size);
  Value value = get(op.getValue());
  unsigned word = *c / 4, n = *c % 4;
  unsigned words = n + size > 4 ? 2 : 1;
  if (size == 4 && n == 0) {
    med::LocalWriteOp::create(b, loc, 1, word, value);
    return success();
  }
  SmallVector<Value> window;
  for (unsigned i = 0; i < words; ++i)
    window.push_back(
        med::LocalReadOp::create(b, loc, b.getI32Type(), 1, word + i));
  mergeBytes(loc, window, n, value, size);
  for (unsigned i = 0; i < words; ++i)
    med::LocalWriteOp::create(b, loc, 1, word + i, window[i]);
  return success();
}

Value HandlerLowering::mergeByte(Location loc, Value word, Value at,
                                 Value byte) {
  // The byte's shift in its (big-endian) word: 24 - 8 * (at & 3).
  Value sh = shifted(
      loc, "b", Value(),
      alu(loc, "xor", alu(loc, "and", at, constant(3, loc)), constant(3, loc)),
      "<<", 3);
  Value mask = shifted(loc, "b", sh, constant(0xff, loc), "<<indirect", 0);
  return alu(
      loc, "or", alu(loc, "and~", word, mask),
      shifted(loc, "b", sh, fieldClear(loc, 0x1, byte, 0), "<<indirect", 0));
}

template <typename Body>
void HandlerLowering::atInfoWord(Location loc, Value offset, Body body) {
  info.usesInfo = true;
  Value base =
      med::CsrReadOp::create(b, loc, b.getI32Type(), "active_lm_addr_1");
  med::CsrWriteOp::create(
      b, loc, "active_lm_addr_1",
      alu(loc, "+", base, alu(loc, "and~", offset, constant(3, loc))));
  body();
  med::CsrWriteOp::create(b, loc, "active_lm_addr_1", base);
}

FailureOr<Value> HandlerLowering::loadByte(Operation *op, MemSpace space,
                                           Value offset) {
  Location loc = op->getLoc();
  Type i32 = b.getI32Type();
  switch (space) {
  case MemSpace::Packet: {
    Value buffer = med::ArgOp::create(b, loc, i32, "buffer");
    return Value(med::PacketReadOp::create(
        b, loc, i32, alu(loc, "+", buffer, offset), b.getI32IntegerAttr(1),
        b.getBoolAttr(false)));
  }
  case MemSpace::Info: {
    if (infoOverWindow()) // a computed offset may reach past the window
      return refuseInfoBeyondWindow(op, options.infoSize);
    Value word;
    atInfoWord(loc, offset,
               [&] { word = med::LocalReadOp::create(b, loc, i32, 1, 0); });
    Value sh =
        shifted(loc, "b", Value(),
                alu(loc, "xor", alu(loc, "and", offset, constant(3, loc)),
                    constant(3, loc)),
                "<<", 3);
    return fieldClear(loc, 0x1, shifted(loc, "b", sh, word, ">>indirect", 0),
                      0);
  }
  default: {
    auto where = sramSpace(op, space);
    if (failed(where))
      return failure();
    enterState(loc, space);
    return sramLoad(loc, where->first, offset, 1);
  }
  }
}

LogicalResult HandlerLowering::storeByte(Operation *op, MemSpace space,
                                         Value offset, Value byte) {
  Location loc = op->getLoc();
  Type i32 = b.getI32Type();
  Value zero = constant(0, loc);
  switch (space) {
  case MemSpace::Packet: {
    // The quadword that holds the byte, read, merged and written back.
    Value buffer = med::ArgOp::create(b, loc, i32, "buffer");
    Value at = alu(loc, "+", buffer, offset);
    Value q = alu(loc, "and~", at, constant(7, loc));
    auto read = med::MemOp::create(b, loc, SmallVector<Type>(2, i32), "dram",
                                   "read", q, zero, ValueRange(), 1);
    Value high = alu(loc, "and", at, constant(4, loc));
    Value word =
        select(loc, "beq", high, zero, read.getResult(0), read.getResult(1));
    Value merged = mergeByte(loc, word, at, byte);
    Value w0 = select(loc, "beq", high, zero, merged, read.getResult(0));
    Value w1 = select(loc, "beq", high, zero, read.getResult(1), merged);
    med::MemOp::create(b, loc, TypeRange(), "dram", "write", q, zero,
                       ValueRange{w0, w1}, 1);
    return success();
  }
  case MemSpace::Info:
    if (infoOverWindow())
      return refuseInfoBeyondWindow(op, options.infoSize);
    atInfoWord(loc, offset, [&] {
      Value word = med::LocalReadOp::create(b, loc, i32, 1, 0);
      med::LocalWriteOp::create(b, loc, 1, 0,
                                mergeByte(loc, word, offset, byte));
    });
    return success();
  case MemSpace::InitData:
    return refuse(op, "a store to initdata memory");
  default: {
    auto where = sramSpace(op, space);
    if (failed(where))
      return failure();
    info.writesState = true;
    enterState(loc, space);
    Value at = alu(loc, "+", offset, constant(where->first, loc));
    Value aligned = alu(loc, "and~", at, constant(3, loc));
    auto read = med::MemOp::create(b, loc, TypeRange{i32}, "sram", "read",
                                   aligned, zero, ValueRange(), 1);
    med::MemOp::create(b, loc, TypeRange(), "sram", "write", aligned, zero,
                       ValueRange{mergeByte(loc, read.getResult(0), at, byte)},
                       1);
    return success();
  }
  }
}

LogicalResult HandlerLowering::storeBytes(Operation *op, MemSpace space,
                                          Value offset, Value value,
                                          unsigned size) {
  Location loc = op->getLoc();
  for (unsigned i = 0; i < size; ++i) {
    Value at = i ? alu(loc, "+", offset, constant(i, loc)) : offset;
    unsigned from = 8 * (size - 1 - i);
    Value byte = from ? shifted(loc, "b", Value(), value, ">>", from) : value;
    if (failed(storeByte(op, space, at, byte)))
      return failure();
  }
  return success();
}

LogicalResult HandlerLowering::lowerCopy(CopyOp op) {
  // Byte by byte (the memories differ: NetIL copies between two). Both
  // ranges are checked first, the source before the destination.
  Location loc = op.getLoc();
  Type i32 = b.getI32Type();
  Value length = get(op.getLength());
  if (!op.getInBounds()) {
    if (failed(rangeCheck(op, op.getSrcSpace(), get(op.getSrc()), length)) ||
        failed(rangeCheck(op, op.getDstSpace(), get(op.getDst()),
                          get(op.getLength()))))
      return failure();
  }
  Value src = get(op.getSrc()), dst = get(op.getDst());
  Region &region = func.getBody();
  Block *entry = b.getInsertionBlock();
  Block *loop = b.createBlock(&region, region.end(), {i32}, {loc});
  Block *body = b.createBlock(&region, region.end());
  Block *done = b.createBlock(&region, region.end());
  b.setInsertionPointToEnd(entry);
  med::BrOp::create(b, loc, ValueRange{constant(0, loc)}, loop);
  b.setInsertionPointToEnd(loop);
  Value i = loop->getArgument(0);
  med::CmpBrOp::create(b, loc, b.getStringAttr("bcc"), b.getStringAttr("-"), i,
                       get(op.getLength()), ValueRange(), ValueRange(), done,
                       body);
  b.setInsertionPointToEnd(body);
  FailureOr<Value> byte = loadByte(op, op.getSrcSpace(), alu(loc, "+", src, i));
  if (failed(byte) ||
      failed(storeByte(op, op.getDstSpace(), alu(loc, "+", dst, i), *byte)))
    return failure();
  med::BrOp::create(b, loc, ValueRange{alu(loc, "+", i, constant(1, loc))},
                    loop);
  b.setInsertionPointToEnd(done);
  return success();
}

LogicalResult HandlerLowering::lowerStore(StoreOp op) {
  Location loc = op.getLoc();
  unsigned size = widthOf(op.getValue().getType()) / 8;
  if (op.getSpace() == MemSpace::Info)
    return lowerInfoStore(op);
  if (op.getSpace() == MemSpace::Packet)
    return lowerPacketStore(op);
  if (op.getSpace() == MemSpace::InitData)
    return refuse(op, Twine("a store to ") + stringifyMemSpace(op.getSpace()) +
                          " memory");
  auto space = sramSpace(op, op.getSpace());
  if (failed(space))
    return failure();
  info.writesState = true;
  auto c = constantOf(op.getOffset());
  if (c)
    enterState(loc, op.getSpace());
  if (!c && size == 4 && isMultipleOf4(op.getOffset()) &&
      space->first % 4 == 0) {
    // A whole word (a counter indexed by a hash, say): one write.
    enterState(loc, op.getSpace());
    med::MemOp::create(
        b, loc, TypeRange(), "sram", "write",
        alu(loc, "+", get(op.getOffset()), constant(space->first, loc)),
        constant(0, loc), ValueRange{get(op.getValue())}, 1);
    return success();
  }
  if (!c)
    return storeBytes(op, op.getSpace(), get(op.getOffset()),
                      get(op.getValue()), size);
  uint32_t address = space->first + *c;
  Value zero = constant(0, loc);
  Value value = get(op.getValue());
  if (size == 4 && (address & 3) == 0) {
    med::MemOp::create(b, loc, TypeRange(), "sram", "write",
                       constant(address, loc), zero, ValueRange{value}, 1);
    return success();
  }
  // Read-modify-write of the words the bytes fall in, byte by byte with
  // ld_field (the handler holds the state token, so no other context
  // writes in between).
  uint32_t aligned = address & ~3u;
  unsigned words = (address & 3) + size > 4 ? 2 : 1;
  auto read = med::MemOp::create(
      b, loc, SmallVector<Type>(words, b.getI32Type()), "sram", "read",
      constant(aligned, loc), zero, ValueRange(), words);
  SmallVector<Value> merged(read.getResults().begin(), read.getResults().end());
  mergeBytes(loc, merged, address & 3, value, size);
  med::MemOp::create(b, loc, TypeRange(), "sram", "write",
                     constant(aligned, loc), zero, merged, words);
  return success();
}

LogicalResult HandlerLowering::lowerAtomicAdd(AtomicAddOp op) {
  // One sram[add] on the aligned word (netvm-recognize-atomics proves the
  // alignment): no packet order, so no state token.
  Location loc = op.getLoc();
  auto space = sramSpace(op, op.getSpace());
  if (failed(space))
    return failure();
  Value offset = get(op.getOffset());
  if (!op.getInBounds() &&
      failed(rangeCheck(op, op.getSpace(), offset, constant(4, loc))))
    return failure();
  Value address;
  if (auto c = constantOf(op.getOffset()))
    address = constant(space->first + *c, loc);
  else
    address = alu(loc, "+", offset, constant(space->first, loc));
  med::MemOp::create(b, loc, TypeRange(), "sram", "add", address,
                     constant(0, loc), ValueRange{get(op.getValue())}, 1);
  return success();
}

LogicalResult HandlerLowering::lowerCheckBounds(CheckBoundsOp op) {
  Value extent =
      op.getLength()
          ? get(op.getLength())
          : constant(static_cast<uint32_t>(op.getExtent()), op.getLoc());
  return rangeCheck(op, op.getSpace(), get(op.getOffset()), extent);
}

std::pair<Value, Value> HandlerLowering::packetSpan(Location loc, Value offset,
                                                    Value length,
                                                    bool inBounds) {
  if (!inBounds)
    (void)rangeCheck(nullptr, MemSpace::Packet, offset, length, loc);
  Value buffer = med::ArgOp::create(b, loc, b.getI32Type(), "buffer");
  Value start = alu(loc, "+", buffer, offset);
  return {start, alu(loc, "+", start, length)};
}

LogicalResult HandlerLowering::rangeCheck(Operation *op, MemSpace space,
                                          Value offset, Value extent) {
  return rangeCheck(op, space, offset, extent, op->getLoc());
}

LogicalResult HandlerLowering::rangeCheck(Operation *op, MemSpace space,
                                          Value offset, Value extent,
                                          Location loc) {
  ExceptionKind kind = ExceptionKind::PacketBounds;
  Value length;
  switch (space) {
  case MemSpace::Packet:
    length = med::ArgOp::create(b, loc, b.getI32Type(), "length");
    break;
  case MemSpace::Info:
    kind = ExceptionKind::InfoBounds;
    raiseIfNone(loc, kind);
    length = constant(options.infoSize, loc);
    break;
  default: {
    auto where = sramSpace(op, space);
    if (failed(where))
      return failure();
    kind = space == MemSpace::Data     ? ExceptionKind::DataBounds
           : space == MemSpace::Shared ? ExceptionKind::SharedBounds
                                       : ExceptionKind::InitDataBounds;
    length = constant(where->second, loc);
  }
  }
  Block *raise = raiseBlock(loc, kind);
  Block *current = b.getInsertionBlock();
  auto c = constantOf(offset), n = constantOf(extent);
  if (c && n) {
    // length < offset + extent: one compare (or always out of range).
    uint64_t end = uint64_t(*c) + *n;
    Block *next = newBlock();
    b.setInsertionPointToEnd(current);
    if (end > 0xffffffffull)
      med::BrOp::create(b, loc, ValueRange(), raise);
    else
      med::CmpBrOp::create(b, loc, b.getStringAttr("bcs"), b.getStringAttr("-"),
                           length, constant(static_cast<uint32_t>(end), loc),
                           ValueRange(), ValueRange(), raise, next);
    b.setInsertionPointToEnd(next);
    return success();
  }
  // offset + extent must not carry, and must not exceed the length.
  Block *compare = newBlock();
  b.setInsertionPointToEnd(current);
  med::CmpBrOp::create(b, loc, b.getStringAttr("bcs"), b.getStringAttr("+"),
                       offset, extent, ValueRange(), ValueRange(), raise,
                       compare);
  b.setInsertionPointToEnd(compare);
  Value end = alu(loc, "+", offset, extent);
  Block *after = newBlock();
  b.setInsertionPointToEnd(compare);
  med::CmpBrOp::create(b, loc, b.getStringAttr("bcs"), b.getStringAttr("-"),
                       length, end, ValueRange(), ValueRange(), raise, after);
  b.setInsertionPointToEnd(after);
  return success();
}

/// Ends a loop body over packet words that pkt_fill reads 16 bytes at a
/// time and pkt_next takes in turn: back to `loop` with `loopArgs` while
/// the word at `next` is in the 16 bytes read; otherwise to `exit` with
/// `exitArgs` when `next` has reached `end`, else a pkt_fill of the next 16
/// bytes and back to `loop`.
void HandlerLowering::continueWordLoop(Location loc, Value next, Value end,
                                       ValueRange loopArgs, Block *loop,
                                       ValueRange exitArgs, Block *exit) {
  Block *body = b.getInsertionBlock();
  Region &region = func.getBody();
  Block *more = b.createBlock(&region, std::next(Region::iterator(body)));
  Block *refill = b.createBlock(&region, std::next(Region::iterator(more)));
  b.setInsertionPointToEnd(body);
  med::CmpBrOp::create(b, loc, b.getStringAttr("bne"), b.getStringAttr("and"),
                       next, constant(15, loc), loopArgs, ValueRange(), loop,
                       more);
  b.setInsertionPointToEnd(more);
  med::CmpBrOp::create(b, loc, b.getStringAttr("bcc"), b.getStringAttr("-"),
                       next, end, exitArgs, ValueRange(), exit, refill);
  b.setInsertionPointToEnd(refill);
  med::PacketFillOp::create(b, loc, next);
  med::BrOp::create(b, loc, loopArgs, loop);
}

LogicalResult HandlerLowering::lowerChecksum(ChecksumOp op) {
  // A loop over the packet words that hold the range, bytes outside the
  // range masked off. The words come 16 bytes to a DRAM read (pkt_fill
  // reads the 16 aligned bytes holding a word, pkt_next takes them in
  // turn): a 20-byte IPv4 header costs 2 or 3 round trips, not 5 or 6.
  // The 16-bit halves are added into a 32-bit sum (no carry is lost: 16384
  // words of a 64 KB packet add at most 2^31), folded at the end. Summed in
  // packet alignment, a range that starts at an odd offset gives the byte swap
  // of its sum (RFC 1071, "byte order independence"): swapped back.
  Location loc = op.getLoc();
  Type i32 = b.getI32Type();
  auto [start, end] = packetSpan(loc, get(op.getOffset()), get(op.getLength()),
                                 op.getInBounds());
  Value ones = constant(0xffffffff, loc);
  // The bytes of the first word before the range, and of the last after.
  Value headBits = shifted(loc, "b", Value(),
                           alu(loc, "and", start, constant(3, loc)), "<<", 3);
  Value headMask = shifted(loc, "b", headBits, ones, ">>indirect", 0);
  Value tailBits = shifted(loc, "b", Value(),
                           alu(loc, "and", end, constant(3, loc)), "<<", 3);
  Value tailKeep = shifted(loc, "b", tailBits, ones, ">>indirect", 0);
  Value tailMask =
      med::SelectOp::create(b, loc, i32, "beq", "-", tailBits, constant(0, loc),
                            ones, alu(loc, "~b", Value(), tailKeep));
  Value first = alu(loc, "and~", start, constant(3, loc));
  Block *entry = b.getInsertionBlock();
  Region &region = func.getBody();
  Block *loop = b.createBlock(&region, region.end(), {i32, i32}, {loc, loc});
  Block *body = b.createBlock(&region, region.end());
  Block *done = b.createBlock(&region, region.end(), {i32}, {loc});
  b.setInsertionPointToEnd(entry);
  med::PacketFillOp::create(b, loc, first);
  med::BrOp::create(b, loc, ValueRange{first, constant(0, loc)}, loop);
  // loop(cur, sum): done when cur >= end.
  b.setInsertionPointToEnd(loop);
  Value cur = loop->getArgument(0), sum = loop->getArgument(1);
  med::CmpBrOp::create(b, loc, b.getStringAttr("bcc"), b.getStringAttr("-"),
                       cur, end, ValueRange{sum}, ValueRange(), done, body);
  b.setInsertionPointToEnd(body);
  Value word = med::PacketNextOp::create(b, loc, i32);
  word = med::SelectOp::create(b, loc, i32, "beq", "-", cur, first,
                               alu(loc, "and", word, headMask), word);
  Value next = alu(loc, "+", cur, constant(4, loc));
  word = med::SelectOp::create(b, loc, i32, "bhi", "-", next, end,
                               alu(loc, "and", word, tailMask), word);
  Value halves = alu(loc, "+", shifted(loc, "b", Value(), word, ">>", 16),
                     fieldClear(loc, 0x3, word, 0));
  Value added = alu(loc, "+", sum, halves);
  continueWordLoop(loc, next, end, ValueRange{next, added}, loop,
                   ValueRange{added}, done);
  b.setInsertionPointToEnd(done);
  Value total = done->getArgument(0);
  for (int i = 0; i < 2; ++i)
    total = alu(loc, "+", shifted(loc, "b", Value(), total, ">>", 16),
                fieldClear(loc, 0x3, total, 0));
  Value swapped =
      alu(loc, "or", shifted(loc, "b", Value(), total, ">>", 8),
          shifted(loc, "b", Value(), fieldClear(loc, 0x1, total, 0), "<<", 8));
  values.map(op.getResult(),
             med::SelectOp::create(b, loc, i32, "bne", "-",
                                   alu(loc, "and", start, constant(1, loc)),
                                   constant(0, loc), swapped, total));
  return success();
}

std::pair<Value, Value> HandlerLowering::divide(Location loc, Value n,
                                                Value d) {
  Type i32 = b.getI32Type();
  Block *entry = b.getInsertionBlock();
  Region &region = func.getBody();
  // step(count, quotient, remainder, bits of n still to bring down).
  Block *step = b.createBlock(&region, region.end(), {i32, i32, i32, i32},
                              {loc, loc, loc, loc});
  Block *done = b.createBlock(&region, region.end(), {i32, i32}, {loc, loc});
  b.setInsertionPointToEnd(entry);
  Value zero = constant(0, loc);
  med::BrOp::create(b, loc, ValueRange{constant(32, loc), zero, zero, n}, step);
  b.setInsertionPointToEnd(step);
  Value count = step->getArgument(0), q = step->getArgument(1),
        r = step->getArgument(2), m = step->getArgument(3);
  Value r2 = alu(loc, "or", shifted(loc, "b", Value(), r, "<<", 1),
                 shifted(loc, "b", Value(), m, ">>", 31));
  Value q2 = shifted(loc, "b", Value(), q, "<<", 1);
  // r2 >= d: subtract, and a 1 in the quotient.
  Value r3 = med::SelectOp::create(b, loc, i32, "bcc", "-", r2, d,
                                   alu(loc, "-", r2, d), r2);
  Value q3 = med::SelectOp::create(b, loc, i32, "bcc", "-", r2, d,
                                   alu(loc, "or", q2, constant(1, loc)), q2);
  Value m2 = shifted(loc, "b", Value(), m, "<<", 1);
  Value left = alu(loc, "-", count, constant(1, loc));
  med::CmpBrOp::create(b, loc, b.getStringAttr("bne"), b.getStringAttr("-"),
                       left, constant(0, loc), ValueRange{left, q3, r3, m2},
                       ValueRange{q3, r3}, step, done);
  b.setInsertionPointToEnd(done);
  return {done->getArgument(0), done->getArgument(1)};
}

LogicalResult HandlerLowering::lowerDivision(Operation *op) {
  Location loc = op->getLoc();
  unsigned bits = widthOf(op->getResult(0).getType());
  bool isSigned = isa<arith::DivSIOp, arith::RemSIOp>(op);
  bool wantRem = isa<arith::RemUIOp, arith::RemSIOp>(op);
  Value n = get(op->getOperand(0)), d = get(op->getOperand(1));
  if (!isSigned) {
    auto [q, r] = divide(loc, n, d);
    values.map(op->getResult(0), wantRem ? r : q);
    return success();
  }
  // Signed: divide the magnitudes; the quotient is negative when the signs
  // differ, the remainder takes the sign of n (C's truncation).
  n = signExtend(loc, n, bits);
  d = signExtend(loc, d, bits);
  Value zero = constant(0, loc);
  Value an = med::SelectOp::create(b, loc, b.getI32Type(), "blt", "-", n, zero,
                                   alu(loc, "b-a", n, zero), n);
  Value ad = med::SelectOp::create(b, loc, b.getI32Type(), "blt", "-", d, zero,
                                   alu(loc, "b-a", d, zero), d);
  Value sn = n, sd = d;
  auto [q, r] = divide(loc, an, ad);
  Value result;
  if (wantRem) {
    result = med::SelectOp::create(b, loc, b.getI32Type(), "blt", "-", sn, zero,
                                   alu(loc, "b-a", r, zero), r);
  } else {
    Value signs = alu(loc, "xor", sn, sd);
    result = med::SelectOp::create(b, loc, b.getI32Type(), "blt", "-", signs,
                                   zero, alu(loc, "b-a", q, zero), q);
  }
  values.map(op->getResult(0), truncate(loc, result, bits));
  return success();
}

LogicalResult HandlerLowering::lowerPacketStore(StoreOp op) {
  // Read-modify-write of the DRAM quadwords that hold the bytes (DRAM is
  // written in whole quadwords). The handler does not prefetch the header
  // (it writes the packet), so no copy in transfer registers goes stale.
  Location loc = op.getLoc();
  Type i32 = b.getI32Type();
  unsigned size = widthOf(op.getValue().getType()) / 8;
  Value buffer = med::ArgOp::create(b, loc, i32, "buffer");
  Value value = get(op.getValue());
  Value zero = constant(0, loc);
  if (auto c = constantOf(op.getOffset())) {
    // Buffers are 8-byte aligned: the bytes' places are known.
    unsigned n = *c & 7;
    unsigned quads = n + size > 8 ? 2 : 1;
    Value q = alu(loc, "+", buffer, constant(*c & ~7u, loc));
    auto read =
        med::MemOp::create(b, loc, SmallVector<Type>(2 * quads, i32), "dram",
                           "read", q, zero, ValueRange(), quads);
    SmallVector<Value> window(read.getResults().begin(),
                              read.getResults().end());
    mergeBytes(loc, window, n, value, size);
    med::MemOp::create(b, loc, TypeRange(), "dram", "write", q, zero, window,
                       quads);
    return success();
  }
  // A computed offset: byte by byte, each in its quadword.
  return storeBytes(op, MemSpace::Packet, get(op.getOffset()), value, size);
}

LogicalResult HandlerLowering::lowerExbufCreate(ExbufCreateOp op) {
  // The buffer stays; its first `size` bytes become zeros (64 bytes a DRAM
  // write), the lengths `size`, the info memory zeros.
  Location loc = op.getLoc();
  Type i32 = b.getI32Type();
  Value size = get(op.getSize());
  uint32_t limit = std::min<uint32_t>(options.bufferBytes, 65536);
  Block *raise = raiseBlock(loc, ExceptionKind::PacketBounds);
  Block *current = b.getInsertionBlock();
  Region &region = func.getBody();
  Block *loop = b.createBlock(&region, region.end(), {i32}, {loc});
  Block *body = b.createBlock(&region, region.end());
  Block *done = b.createBlock(&region, region.end());
  b.setInsertionPointToEnd(current);
  Block *ok = newBlock();
  b.setInsertionPointToEnd(current);
  med::CmpBrOp::create(b, loc, b.getStringAttr("bhi"), b.getStringAttr("-"),
                       size, constant(limit, loc), ValueRange(), ValueRange(),
                       raise, ok);
  b.setInsertionPointToEnd(ok);
  med::BrOp::create(b, loc, ValueRange{constant(0, loc)}, loop);
  b.setInsertionPointToEnd(loop);
  Value at = loop->getArgument(0);
  med::CmpBrOp::create(b, loc, b.getStringAttr("bcc"), b.getStringAttr("-"), at,
                       size, ValueRange(), ValueRange(), done, body);
  b.setInsertionPointToEnd(body);
  Value buffer = med::ArgOp::create(b, loc, i32, "buffer");
  SmallVector<Value> zeros(16, constant(0, loc));
  med::MemOp::create(b, loc, TypeRange(), "dram", "write",
                     alu(loc, "+", buffer, at), constant(0, loc), zeros, 8);
  med::BrOp::create(b, loc, ValueRange{alu(loc, "+", at, constant(64, loc))},
                    loop);
  b.setInsertionPointToEnd(done);
  med::ArgSetOp::create(b, loc, "length", size);
  med::ArgSetOp::create(b, loc, "wire", size);
  exbuf = Created;
  info.usesInfo = true;
  for (unsigned w = 0;
       w < (std::min(options.infoSize, meInfoWindowBytes) + 3) / 4; ++w)
    med::LocalWriteOp::create(b, loc, 1, w, constant(0, loc));
  return success();
}

LogicalResult HandlerLowering::lowerExbufDelete(ExbufDeleteOp op) {
  // The packet is dropped (a drop event in the log, as the tag's other
  // outcomes) but its buffer stays with the context for an exbuf.create
  // or until the handler ends; without it the packet and its info memory
  // are empty.
  Location loc = op.getLoc();
  if (exbuf == None)
    return success();
  Type i32 = b.getI32Type();
  Block *start = b.getInsertionBlock();
  Block *after = newBlock();
  b.setInsertionPointToEnd(start);
  branchIfNone(loc, after);
  auto count = med::MemOp::create(
      b, loc, TypeRange{i32}, "sram", "test_and_add", constant(0, loc),
      constant(options.eventCount, loc), ValueRange{constant(1, loc)}, 1);
  Value n = count.getResult(0);
  Block *current = b.getInsertionBlock();
  Block *room = newBlock();
  Block *done = newBlock();
  b.setInsertionPointToEnd(current);
  med::CmpBrOp::create(b, loc, "bcc", "-", n,
                       constant(options.eventCapacity, loc), ValueRange(),
                       ValueRange(), done, room);
  b.setInsertionPointToEnd(room);
  Value entry = alu(loc, "+", shifted(loc, "b", Value(), n, "<<", 4),
                    constant(options.eventLog, loc));
  Value tag = med::ArgOp::create(b, loc, i32, "tag");
  med::MemOp::create(
      b, loc, TypeRange(), "sram", "write", entry, constant(0, loc),
      ValueRange{tag, constant(options.dropEvent, loc),
                 constant(options.peIndex, loc), constant(0, loc)},
      4);
  med::BrOp::create(b, loc, ValueRange(), done);
  b.setInsertionPointToEnd(done);
  countDrop(loc);
  med::BrOp::create(b, loc, ValueRange(), after);
  b.setInsertionPointToEnd(after);
  med::ArgSetOp::create(b, loc, "length", constant(0, loc));
  med::ArgSetOp::create(b, loc, "wire", constant(0xffffffff, loc));
  exbuf = None;
  return success();
}

void HandlerLowering::lowerByteScan(PacketScanOp op, Value start, Value needle,
                                    Value buffer, Value length) {
  // A word at a time: read the aligned word that holds `at`, test all its
  // bytes at once for the needle ((x - 0x01010101) & ~x & 0x80808080 of x
  // = word ^ needle in every byte: non-zero iff some byte matches, with
  // no match missed), and look at the bytes one by one only in a word
  // that may hold it (or runs past the packet).
  Location loc = op.getLoc();
  Type i32 = b.getI32Type();
  Region &region = func.getBody();
  Block *entry = b.getInsertionBlock();
  Value pair =
      alu(loc, "or", needle, shifted(loc, "b", Value(), needle, "<<", 8));
  Value spread =
      alu(loc, "or", pair, shifted(loc, "b", Value(), pair, "<<", 16));
  Block *words = b.createBlock(&region, region.end(), {i32}, {loc});
  Block *read = b.createBlock(&region, region.end());
  Block *bytes = b.createBlock(&region, region.end(), {i32}, {loc});
  Block *inside = b.createBlock(&region, region.end());
  Block *step = b.createBlock(&region, region.end());
  Block *done = b.createBlock(&region, region.end(), {i32}, {loc});
  b.setInsertionPointToEnd(entry);
  med::BrOp::create(b, loc, ValueRange{start}, words);
  // words(at): at < length, else not found.
  b.setInsertionPointToEnd(words);
  Value at = words->getArgument(0);
  med::CmpBrOp::create(b, loc, "bcc", "-", at, length,
                       ValueRange{constant(0xffffffff, loc)}, ValueRange(),
                       done, read);
  b.setInsertionPointToEnd(read);
  Value aligned = alu(loc, "and~", at, constant(3, loc));
  Value word =
      med::PacketReadOp::create(b, loc, i32, alu(loc, "+", buffer, aligned),
                                b.getI32IntegerAttr(4), b.getBoolAttr(false));
  Value x = alu(loc, "xor", word, spread);
  Value hit =
      alu(loc, "and",
          alu(loc, "and~", alu(loc, "-", x, constant(0x01010101, loc)), x),
          constant(0x80808080, loc));
  med::CmpBrOp::create(
      b, loc, "bne", "-", hit, constant(0, loc), ValueRange{at},
      ValueRange{alu(loc, "+", aligned, constant(4, loc))}, bytes, words);
  // bytes(a): the bytes of `word` from a, while in the packet.
  b.setInsertionPointToEnd(bytes);
  Value a = bytes->getArgument(0);
  med::CmpBrOp::create(b, loc, "bcc", "-", a, length,
                       ValueRange{constant(0xffffffff, loc)}, ValueRange(),
                       done, inside);
  b.setInsertionPointToEnd(inside);
  Value shift = shifted(
      loc, "b", Value(),
      alu(loc, "xor", alu(loc, "and", a, constant(3, loc)), constant(3, loc)),
      "<<", 3);
  Value byte =
      fieldClear(loc, 0x1, shifted(loc, "b", shift, word, ">>indirect", 0), 0);
  med::CmpBrOp::create(b, loc, "beq", "-", byte, needle, ValueRange{a},
                       ValueRange(), done, step);
  b.setInsertionPointToEnd(step);
  Value following = alu(loc, "+", a, constant(1, loc));
  med::CmpBrOp::create(b, loc, "beq", "-",
                       alu(loc, "and", following, constant(3, loc)),
                       constant(0, loc), ValueRange{following},
                       ValueRange{following}, words, bytes);
  b.setInsertionPointToEnd(done);
  values.map(op.getResult(), done->getArgument(0));
}

LogicalResult HandlerLowering::lowerPacketScan(PacketScanOp op) {
  // A loop over the offsets from `offset` while `width` bytes fit in the
  // packet, reading them with pkt_read (width 1, 2 or 4).
  Location loc = op.getLoc();
  Type i32 = b.getI32Type();
  unsigned width = widthOf(op.getValue().getType()) / 8;
  Value start = get(op.getOffset());
  if (!op.getInBounds())
    (void)rangeCheck(op, MemSpace::Packet, start, constant(1, loc));
  Value needle = get(op.getValue());
  Value buffer = med::ArgOp::create(b, loc, i32, "buffer");
  Value length = med::ArgOp::create(b, loc, i32, "length");
  Region &region = func.getBody();
  Block *entry = b.getInsertionBlock();
  if (width == 1)
    return lowerByteScan(op, start, needle, buffer, length), success();
  Block *loop = b.createBlock(&region, region.end(), {i32}, {loc});
  Block *fits = b.createBlock(&region, region.end());
  Block *body = b.createBlock(&region, region.end());
  Block *next = b.createBlock(&region, region.end());
  Block *done = b.createBlock(&region, region.end(), {i32}, {loc});
  b.setInsertionPointToEnd(entry);
  med::BrOp::create(b, loc, ValueRange{start}, loop);
  // loop(at): at + width <= length, without overflow.
  b.setInsertionPointToEnd(loop);
  Value at = loop->getArgument(0);
  med::CmpBrOp::create(b, loc, b.getStringAttr("bcs"), b.getStringAttr("+"), at,
                       constant(width, loc),
                       ValueRange{constant(0xffffffff, loc)}, ValueRange(),
                       done, fits);
  b.setInsertionPointToEnd(fits);
  Value end = alu(loc, "+", at, constant(width, loc));
  med::CmpBrOp::create(b, loc, b.getStringAttr("bhi"), b.getStringAttr("-"),
                       end, length, ValueRange{constant(0xffffffff, loc)},
                       ValueRange(), done, body);
  b.setInsertionPointToEnd(body);
  Value v = med::PacketReadOp::create(b, loc, i32, alu(loc, "+", buffer, at),
                                      b.getI32IntegerAttr(width),
                                      b.getBoolAttr(false));
  med::CmpBrOp::create(b, loc, b.getStringAttr("beq"), b.getStringAttr("-"), v,
                       needle, ValueRange{at}, ValueRange(), done, next);
  b.setInsertionPointToEnd(next);
  med::BrOp::create(b, loc, ValueRange{alu(loc, "+", at, constant(1, loc))},
                    loop);
  b.setInsertionPointToEnd(done);
  values.map(op.getResult(), done->getArgument(0));
  return success();
}

LogicalResult HandlerLowering::lowerFieldCmp(FieldCmpOp op) {
  // memcmp byte by byte: the loop ends at the first difference with 1
  // (lhs below) or 2 (lhs above), or at the end with 0.
  Location loc = op.getLoc();
  Type i32 = b.getI32Type();
  Value length = get(op.getLength());
  if (!op.getInBounds()) {
    (void)rangeCheck(op, MemSpace::Packet, get(op.getLhs()), length);
    (void)rangeCheck(op, MemSpace::Packet, get(op.getRhs()),
                     get(op.getLength()));
  }
  Value buffer = med::ArgOp::create(b, loc, i32, "buffer");
  Value lhs = alu(loc, "+", buffer, get(op.getLhs()));
  Value rhs = alu(loc, "+", buffer, get(op.getRhs()));
  Region &region = func.getBody();
  Block *entry = b.getInsertionBlock();
  Block *loop = b.createBlock(&region, region.end(), {i32}, {loc});
  Block *body = b.createBlock(&region, region.end());
  Block *same = b.createBlock(&region, region.end());
  Block *done = b.createBlock(&region, region.end(), {i32}, {loc});
  b.setInsertionPointToEnd(entry);
  med::BrOp::create(b, loc, ValueRange{constant(0, loc)}, loop);
  b.setInsertionPointToEnd(loop);
  Value i = loop->getArgument(0);
  med::CmpBrOp::create(b, loc, b.getStringAttr("bcc"), b.getStringAttr("-"), i,
                       get(op.getLength()), ValueRange{constant(0, loc)},
                       ValueRange(), done, body);
  b.setInsertionPointToEnd(body);
  auto byteAt = [&](Value base) {
    return med::PacketReadOp::create(b, loc, i32, alu(loc, "+", base, i),
                                     b.getI32IntegerAttr(1),
                                     b.getBoolAttr(false));
  };
  Value x = byteAt(lhs), y = byteAt(rhs);
  Value order = select(loc, "bcs", x, y, constant(1, loc), constant(2, loc));
  med::CmpBrOp::create(b, loc, b.getStringAttr("bne"), b.getStringAttr("-"), x,
                       y, ValueRange{order}, ValueRange(), done, same);
  b.setInsertionPointToEnd(same);
  med::BrOp::create(b, loc, ValueRange{alu(loc, "+", i, constant(1, loc))},
                    loop);
  b.setInsertionPointToEnd(done);
  Value diff = done->getArgument(0);
  StringRef cond;
  uint32_t against = 0;
  switch (op.getKind()) {
  case FieldCmpKind::Eq:
    cond = "beq";
    break;
  case FieldCmpKind::Ne:
    cond = "bne";
    break;
  case FieldCmpKind::Lt:
    cond = "beq";
    against = 1;
    break;
  case FieldCmpKind::Gt:
    cond = "beq";
    against = 2;
    break;
  }
  values.map(op.getResult(),
             med::SetCCOp::create(b, loc, i32, b.getStringAttr(cond),
                                  b.getStringAttr("-"), diff,
                                  constant(against, loc)));
  return success();
}

LogicalResult HandlerLowering::lowerHash(HashOp op) {
  // SuperFastHash (runtime/include/netvm/semantics.h) over the words'
  // bytes in network order: each word is two little-endian 16-bit reads.
  Location loc = op.getLoc();
  unsigned n = std::min<unsigned>(op.getInputs().size(), 256);
  if (n == 0) {
    values.map(op.getResult(), constant(0, loc));
    return success();
  }
  Value hash = constant(4 * n, loc);
  auto shl = [&](Value x, unsigned k) {
    return shifted(loc, "b", Value(), x, "<<", k);
  };
  auto shr = [&](Value x, unsigned k) {
    return shifted(loc, "b", Value(), x, ">>", k);
  };
  for (unsigned i = 0; i < n; ++i) {
    Value w = get(op.getInputs()[i]);
    hash = alu(loc, "+", hash, swap16(loc, shr(w, 16)));
    Value tmp =
        alu(loc, "xor", shl(swap16(loc, fieldClear(loc, 0x3, w, 0)), 11), hash);
    hash = alu(loc, "xor", shl(hash, 16), tmp);
    hash = alu(loc, "+", hash, shr(hash, 11));
  }
  hash = alu(loc, "xor", hash, shl(hash, 3));
  hash = alu(loc, "+", hash, shr(hash, 5));
  hash = alu(loc, "xor", hash, shl(hash, 2));
  hash = alu(loc, "+", hash, shr(hash, 15));
  hash = alu(loc, "xor", hash, shl(hash, 10));
  values.map(op.getResult(), hash);
  return success();
}

LogicalResult HandlerLowering::lowerPacketCrc(PacketCrcOp op) {
  // Whole words through the CRC unit (crc_be folds a word most
  // significant byte first into the context's remainder), the last 1-3
  // bytes bit by bit in the ALU. From a word-aligned start the words come
  // 16 bytes to a DRAM read (pkt_fill, pkt_next, as the checksum's);
  // otherwise one read a word (pkt_read aligns them).
  Location loc = op.getLoc();
  Type i32 = b.getI32Type();
  bool crc32 = op.getKind() == CrcKind::Crc32;
  uint32_t poly = crc32 ? 0xEDB88320u : 0x82F63B78u;
  StringRef unit = crc32 ? "crc_32" : "crc_32c";
  Value length = get(op.getLength());
  auto [start, end] =
      packetSpan(loc, get(op.getOffset()), length, op.getInBounds());
  Value wordsEnd =
      alu(loc, "+", start, alu(loc, "and~", length, constant(3, loc)));
  med::CsrWriteOp::create(b, loc, "crc_remainder", constant(0xffffffff, loc));
  Region &region = func.getBody();
  Block *entry = b.getInsertionBlock();
  Block *fastEntry = b.createBlock(&region, region.end());
  Block *fastLoop = b.createBlock(&region, region.end(), {i32}, {loc});
  Block *fastBody = b.createBlock(&region, region.end());
  Block *wordLoop = b.createBlock(&region, region.end(), {i32}, {loc});
  Block *wordBody = b.createBlock(&region, region.end());
  Block *tail = b.createBlock(&region, region.end());
  Block *byteLoop =
      b.createBlock(&region, region.end(), {i32, i32}, {loc, loc});
  Block *byteBody = b.createBlock(&region, region.end());
  Block *done = b.createBlock(&region, region.end(), {i32}, {loc});
  b.setInsertionPointToEnd(entry);
  med::CmpBrOp::create(b, loc, b.getStringAttr("beq"), b.getStringAttr("and"),
                       start, constant(3, loc), ValueRange(), ValueRange{start},
                       fastEntry, wordLoop);
  // Aligned: fast(p), done with the words when p >= wordsEnd.
  b.setInsertionPointToEnd(fastEntry);
  med::PacketFillOp::create(b, loc, start);
  med::BrOp::create(b, loc, ValueRange{start}, fastLoop);
  b.setInsertionPointToEnd(fastLoop);
  Value f = fastLoop->getArgument(0);
  med::CmpBrOp::create(b, loc, b.getStringAttr("bcc"), b.getStringAttr("-"), f,
                       wordsEnd, ValueRange(), ValueRange(), tail, fastBody);
  b.setInsertionPointToEnd(fastBody);
  med::CrcOp::create(b, loc, i32, unit, true,
                     med::PacketNextOp::create(b, loc, i32));
  Value fNext = alu(loc, "+", f, constant(4, loc));
  continueWordLoop(loc, fNext, wordsEnd, ValueRange{fNext}, fastLoop,
                   ValueRange(), tail);
  // Unaligned: a read a word.
  b.setInsertionPointToEnd(wordLoop);
  Value p = wordLoop->getArgument(0);
  med::CmpBrOp::create(b, loc, b.getStringAttr("bcc"), b.getStringAttr("-"), p,
                       wordsEnd, ValueRange(), ValueRange(), tail, wordBody);
  b.setInsertionPointToEnd(wordBody);
  Value word = med::PacketReadOp::create(b, loc, i32, p, b.getI32IntegerAttr(4),
                                         b.getBoolAttr(false));
  med::CrcOp::create(b, loc, i32, unit, true, word);
  med::BrOp::create(b, loc, ValueRange{alu(loc, "+", p, constant(4, loc))},
                    wordLoop);
  b.setInsertionPointToEnd(tail);
  Value remainder = med::CsrReadOp::create(b, loc, i32, "crc_remainder");
  med::BrOp::create(b, loc, ValueRange{wordsEnd, remainder}, byteLoop);
  b.setInsertionPointToEnd(byteLoop);
  Value q = byteLoop->getArgument(0), crc = byteLoop->getArgument(1);
  med::CmpBrOp::create(b, loc, b.getStringAttr("bcc"), b.getStringAttr("-"), q,
                       end, ValueRange{crc}, ValueRange(), done, byteBody);
  b.setInsertionPointToEnd(byteBody);
  Value byte = med::PacketReadOp::create(b, loc, i32, q, b.getI32IntegerAttr(1),
                                         b.getBoolAttr(false));
  Value c = alu(loc, "xor", crc, byte);
  for (int bit = 0; bit < 8; ++bit) {
    // c = c >> 1 ^ (poly if the low bit was set)
    Value low = alu(loc, "and", c, constant(1, loc));
    Value shiftedC = shifted(loc, "b", Value(), c, ">>", 1);
    c = select(loc, "bne", low, constant(0, loc),
               alu(loc, "xor", shiftedC, constant(poly, loc)), shiftedC);
  }
  med::BrOp::create(b, loc, ValueRange{alu(loc, "+", q, constant(1, loc)), c},
                    byteLoop);
  b.setInsertionPointToEnd(done);
  values.map(op.getResult(), alu(loc, "~b", Value(), done->getArgument(0)));
  return success();
}

LogicalResult HandlerLowering::lowerBit(BitOp op) {
  Location loc = op.getLoc();
  Value x = get(op.getInput()), index = get(op.getIndex());
  Value r;
  switch (op.getKind()) {
  case BitOpKind::Test:
  case BitOpKind::TestNot: {
    Value bit = alu(loc, "and", shifted(loc, "b", index, x, ">>indirect", 0),
                    constant(1, loc));
    r = op.getKind() == BitOpKind::Test
            ? bit
            : alu(loc, "xor", bit, constant(1, loc));
    break;
  }
  default: {
    Value mask = shifted(loc, "b", index, constant(1, loc), "<<indirect", 0);
    StringRef aluOp = op.getKind() == BitOpKind::Set     ? "or"
                      : op.getKind() == BitOpKind::Clear ? "and~"
                                                         : "xor";
    r = alu(loc, aluOp, x, mask);
    break;
  }
  }
  // An index of 32 or more leaves the word as it is.
  values.map(op.getResult(),
             select(loc, "bcc", index, constant(32, loc), x, r));
  return success();
}

Value HandlerLowering::highestBit(Location loc, Value x) {
  // Binary search for the highest set bit: 5 steps of compare-and-select
  // (0 for x = 0).
  Value n = x, pos = constant(0, loc);
  for (unsigned k : {16u, 8u, 4u, 2u, 1u}) {
    Value limit = constant(1u << k, loc);
    Value up = shifted(loc, "b", Value(), n, ">>", k);
    pos =
        select(loc, "bcc", n, limit, alu(loc, "+", pos, constant(k, loc)), pos);
    n = select(loc, "bcc", n, limit, up, n);
  }
  return pos;
}

LogicalResult HandlerLowering::lowerFindBit(FindBitOp op) {
  Location loc = op.getLoc();
  Value x = get(op.getInput());
  values.map(op.getResult(),
             select(loc, "beq", x, constant(0, loc), constant(0xffffffff, loc),
                    highestBit(loc, x)));
  return success();
}

LogicalResult HandlerLowering::lowerRandom(RandomOp op) {
  // The NetPE's xorshift32 state is an SRAM word, updated under the state
  // token so that packets draw their numbers in order.
  Location loc = op.getLoc();
  info.writesState = true;
  info.usesRandom = true;
  med::StateTokenOp::create(b, loc);
  Value zero = constant(0, loc);
  auto read = med::MemOp::create(b, loc, TypeRange{b.getI32Type()}, "sram",
                                 "read", constant(options.randomState, loc),
                                 zero, ValueRange(), 1);
  Value x = read.getResult(0);
  x = alu(loc, "xor", x, shifted(loc, "b", Value(), x, "<<", 13));
  x = alu(loc, "xor", x, shifted(loc, "b", Value(), x, ">>", 17));
  x = alu(loc, "xor", x, shifted(loc, "b", Value(), x, "<<", 5));
  med::MemOp::create(b, loc, TypeRange(), "sram", "write",
                     constant(options.randomState, loc), constant(0, loc),
                     ValueRange{x}, 1);
  values.map(op.getResult(), x);
  return success();
}

//===----------------------------------------------------------------------===//
// The lookup coprocessor
//===----------------------------------------------------------------------===//

LogicalResult HandlerLowering::transferFlow(Block *block, FlowPoint &point,
                                            bool check) {
  auto needs = [&](Operation *op, unsigned reg) -> LogicalResult {
    if (!check || (point.defined & (1u << reg)))
      return success();
    return refuse(op, Twine("a read of lookup register R") + Twine(reg) +
                          " that this handler has not written (the "
                          "registers do not carry from packet to packet)");
  };
  for (Operation &op : *block) {
    if (!point.reachable)
      return success();
    if (isa<ExbufDeleteOp>(op))
      point.exbuf = None;
    else if (isa<ExbufCreateOp>(op))
      point.exbuf = Created;
    if (auto out = dyn_cast<CoproWriteOp>(op)) {
      if (out.getReg() >= coproRegs)
        point.reachable = false; // raises
      else
        point.defined |= 1u << out.getReg();
    } else if (auto in = dyn_cast<CoproReadOp>(op)) {
      if (in.getReg() >= coproRegs)
        point.reachable = false;
      else if (failed(needs(&op, in.getReg())))
        return failure();
    } else if (auto invoke = dyn_cast<CoproInvokeOp>(op)) {
      switch (invoke.getOpcode()) {
      case 0:
      case 4:
        point.pending = 0;
        break;
      case 1: // raises with 16 words pending
        if (point.pending == 16)
          point.reachable = false;
        else if (failed(needs(&op, coproR0)))
          return failure();
        else
          ++point.pending;
        break;
      case 2: // raises without a key
      case 5:
        if (point.pending == 0)
          point.reachable = false;
        else if (failed(needs(&op, coproR0)))
          return failure();
        if (invoke.getOpcode() == 5) // R1: stored or not
          point.defined |= 1u << coproR1;
        point.pending = 0;
        break;
      case 3:
        if (point.pending == 0 && failed(needs(&op, coproR0)))
          return failure();
        point.defined |= 1u << coproR1;
        point.pending = 0;
        break;
      default:
        point.reachable = false;
        break;
      }
    } else if (op.hasTrait<OpTrait::IsTerminator>() &&
               op.getNumSuccessors() == 0 && !isa<TrapOp>(op) &&
               point.pending && check) {
      return refuse(&op, "a handler that ends with a lookup key pending (the "
                         "key would carry to the next packet)");
    }
  }
  return success();
}

LogicalResult HandlerLowering::analyzeFlow() {
  bool any = false;
  handler.walk([&](Operation *op) {
    if (isa<CoproWriteOp, CoproReadOp, CoproInvokeOp, ExbufDeleteOp,
            ExbufCreateOp>(op))
      any = true;
    if (auto invoke = dyn_cast<CoproInvokeOp>(op))
      tableWrites |= handler.getKind() == HandlerKind::Push &&
                     (invoke.getOpcode() == 0 || invoke.getOpcode() == 2 ||
                      invoke.getOpcode() == 5);
  });
  // With the cache, a push handler that only reads the table still takes
  // the state token when another push handler of the NetPE writes it: a
  // fill from a probe that swapped out must not overwrite a newer copy.
  if (options.lookupCache && handler.getKind() == HandlerKind::Push)
    for (HandlerOp other : pe.getBodyBlock()->getOps<HandlerOp>())
      if (other.getKind() == HandlerKind::Push)
        other.walk([&](CoproInvokeOp invoke) {
          tableWrites |= invoke.getOpcode() == 0 || invoke.getOpcode() == 2 ||
                         invoke.getOpcode() == 5;
        });
  if (!any)
    return success();
  // A forward analysis to a fixed point; then once more to check reads.
  Region &body = handler.getBody();
  FlowPoint start;
  start.reachable = true;
  start.exbuf = handler.getKind() == HandlerKind::Push ? Arrived : None;
  flowEntry[&body.front()] = start;
  SmallVector<Block *> work{&body.front()};
  DenseSet<Block *> queued{&body.front()};
  while (!work.empty()) {
    Block *block = work.pop_back_val();
    queued.erase(block);
    FlowPoint point = flowEntry[block];
    (void)transferFlow(block, point, /*check=*/false);
    if (!point.reachable)
      continue;
    for (Block *succ : block->getSuccessors()) {
      auto [it, inserted] = flowEntry.try_emplace(succ, point);
      FlowPoint &at = it->second;
      if (!inserted) {
        FlowPoint merged = at;
        if (!merged.reachable) {
          merged = point;
        } else {
          if (merged.pending != point.pending)
            return refuse(&succ->front(),
                          "paths that meet here with lookup keys of "
                          "different lengths pending");
          merged.defined &= point.defined;
          merged.exbuf |= point.exbuf;
        }
        if (merged == at)
          continue;
        at = merged;
      }
      if (queued.insert(succ).second)
        work.push_back(succ);
    }
  }
  for (auto &[block, point] : flowEntry) {
    FlowPoint p = point;
    if (failed(transferFlow(block, p, /*check=*/true)))
      return failure();
  }
  return success();
}

SmallVector<Value> HandlerLowering::edge(Block *dest, ValueRange operands) {
  SmallVector<Value> args = mapped(operands);
  auto it = flowEntry.find(dest);
  if (it == flowEntry.end())
    return args;
  for (unsigned r = 0; r < coproRegs; ++r)
    if (it->second.defined & (1u << r))
      args.push_back(copro[r] ? copro[r] : constant(0, dest->front().getLoc()));
  for (unsigned i = 0; i < it->second.pending; ++i)
    args.push_back(copro[coproKey + i] ? copro[coproKey + i]
                                       : constant(0, dest->front().getLoc()));
  return args;
}

Value HandlerLowering::lookupHash(Location loc, ArrayRef<Value> key) {
  // Rotate and xor, then the high bits folded into the low ones
  // (meLookupHash without its mask).
  Value h = key[0];
  for (unsigned i = 1; i < key.size(); ++i)
    h = alu(loc, "xor", shifted(loc, "b", Value(), h, ">>rot", 27), key[i]);
  h = alu(loc, "xor", h, shifted(loc, "b", Value(), h, ">>", 15));
  return alu(loc, "xor", h, shifted(loc, "b", Value(), h, ">>", 7));
}

HandlerLowering::Cached
HandlerLowering::enterCache(Location loc, ArrayRef<Value> key, Value tag) {
  Type i32 = b.getI32Type();
  unsigned n = key.size();
  Region &region = func.getBody();
  Value found = med::CamLookupOp::create(b, loc, i32, tag);
  Block *caller = b.getInsertionBlock();
  Cached c;
  c.miss = b.createBlock(&region, region.end());
  c.hit = b.createBlock(&region, region.end());
  Block *valid = b.createBlock(&region, region.end());
  // A hit on an entry of this NetPE: state << 8 | 0x80.
  b.setInsertionPointToEnd(caller);
  med::CmpBrOp::create(b, loc, "bne", "-",
                       alu(loc, "and", found, constant(0xf80, loc)),
                       constant(options.lookupCache << 8 | 0x80, loc),
                       ValueRange(), ValueRange(), c.miss, valid);
  b.setInsertionPointToEnd(valid);
  c.address = cacheEntry(loc, found);
  SmallVector<Value> words;
  atCacheEntry(loc, c.address, [&] {
    for (unsigned w = 0; w < 3 + n; ++w)
      words.push_back(med::LocalReadOp::create(b, loc, i32, 1, w));
  });
  c.offset = alu(loc, "and", words[0], constant(0xffffff, loc));
  c.value = words[1];
  c.stamp = words[2];
  // The key's length, then its words (another key of the same hash).
  Block *compare = valid;
  for (unsigned w = 0; w <= n; ++w) {
    Block *same = w == n ? c.hit : b.createBlock(&region, region.end());
    b.setInsertionPointToEnd(compare);
    Value got =
        w == 0 ? shifted(loc, "b", Value(), words[0], ">>", 24) : words[2 + w];
    med::CmpBrOp::create(b, loc, "bne", "-", got,
                         w == 0 ? constant(n, loc) : key[w - 1], ValueRange(),
                         ValueRange(), c.miss, same);
    compare = same;
  }
  b.setInsertionPointToEnd(c.hit);
  return c;
}

void HandlerLowering::fillCache(Location loc, Value tag, ArrayRef<Value> key,
                                Value offset, Value value, Value stamp) {
  Type i32 = b.getI32Type();
  unsigned n = key.size();
  // Looked up again: another context may have put the tag in meanwhile,
  // and a tag must stay in one entry.
  Value found = med::CamLookupOp::create(b, loc, i32, tag);
  Value head = alu(loc, "or", offset, constant(n << 24, loc));
  atCacheEntry(loc, cacheEntry(loc, found), [&] {
    med::LocalWriteOp::create(b, loc, 1, 0, head);
    med::LocalWriteOp::create(b, loc, 1, 1, value);
    med::LocalWriteOp::create(b, loc, 1, 2, stamp);
    for (unsigned w = 0; w < n; ++w)
      med::LocalWriteOp::create(b, loc, 1, 3 + w, key[w]);
  });
  med::CamWriteOp::create(b, loc, shifted(loc, "b", Value(), found, ">>", 3),
                          tag, b.getI32IntegerAttr(options.lookupCache));
}

HandlerLowering::Probe
HandlerLowering::enterProbe(Location loc, ArrayRef<Value> key, Value h) {
  // The slot: the hash of the key words folded to a slot, probed linearly
  // until the key or an empty slot. The table is never full (at most half
  // its slots hold entries).
  Type i32 = b.getI32Type();
  unsigned n = key.size();
  Value index = alu(loc, "and", h, constant(meLookupSlots - 1, loc));
  // index * 76 = index * 64 + index * 8 + index * 4.
  static_assert(meLookupSlotBytes == 76, "the slot offset below");
  Value offset =
      shifted(loc, "+",
              shifted(loc, "+", shifted(loc, "b", Value(), index, "<<", 6),
                      index, "<<", 3),
              index, "<<", 2);
  Block *caller = b.getInsertionBlock();
  Region &region = func.getBody();
  Block *loop = b.createBlock(&region, region.end(), {i32}, {loc});
  Block *check = b.createBlock(&region, region.end());
  Block *next = b.createBlock(&region, region.end());
  Probe probe;
  probe.hit = b.createBlock(&region, region.end());
  probe.miss = b.createBlock(&region, region.end());
  b.setInsertionPointToEnd(caller);
  med::BrOp::create(b, loc, ValueRange{offset}, loop);

  // loop(at): the slot's length, value, stamp and key words, compared a
  // chunk at a time.
  b.setInsertionPointToEnd(loop);
  Value at = loop->getArgument(0);
  probe.offset = at;
  Block *compare = loop;
  unsigned words = meSlotKey + n;
  for (unsigned from = 0; from < words; from += lookupChunk) {
    unsigned count = std::min(words - from, lookupChunk);
    b.setInsertionPointToEnd(compare);
    auto read = med::MemOp::create(
        b, loc, SmallVector<Type>(count, i32), "sram", "read", lookupSlots(loc),
        from ? alu(loc, "+", at, constant(4 * from, loc)) : at, ValueRange(),
        count);
    for (unsigned w = from; w < from + count; ++w) {
      Value got = read.getResult(w - from);
      if (w == meSlotValue) {
        probe.value = got;
        continue;
      }
      if (w == meSlotStamp) {
        probe.stamp = got;
        continue;
      }
      bool last = w + 1 == words;
      Block *same = last ? probe.hit : b.createBlock(&region, region.end());
      b.setInsertionPointToEnd(compare);
      if (w == 0) // an empty slot ends the probe
        med::CmpBrOp::create(b, loc, "beq", "-", got, constant(0, loc),
                             ValueRange(), ValueRange(), probe.miss, check);
      if (w == 0)
        b.setInsertionPointToEnd(check);
      med::CmpBrOp::create(b, loc, "bne", "-", got,
                           w == 0 ? constant(n, loc) : key[w - meSlotKey],
                           ValueRange(), ValueRange(), next, same);
      compare = same;
    }
  }
  // The next slot, round to the first after the last.
  b.setInsertionPointToEnd(next);
  Value after = alu(loc, "+", at, constant(meLookupSlotBytes, loc));
  Value wrapped = select(loc, "beq", after,
                         constant(meLookupSlots * meLookupSlotBytes, loc),
                         constant(0, loc), after);
  med::BrOp::create(b, loc, ValueRange{wrapped}, loop);
  return probe;
}

LogicalResult HandlerLowering::lowerCoproInvoke(CoproInvokeOp op) {
  Location loc = op.getLoc();
  Type i32 = b.getI32Type();
  unsigned pending = 0;
  while (pending < 16 && copro[coproKey + pending])
    ++pending;
  auto clearKey = [&] {
    for (unsigned i = 0; i < 16; ++i)
      copro[coproKey + i] = Value();
  };
  Region &region = func.getBody();
  Value count = constant(options.lookupBase, loc);
  switch (op.getOpcode()) {
  case 0: {
    // Empty the table: the slots' lengths to 0, unless it is empty.
    if (tableWrites) {
      info.writesState = true;
      med::StateTokenOp::create(b, loc);
    }
    clearKey();
    // The cache forgets every slot (other NetPEs' too: they fill again).
    if (options.lookupCache)
      med::CamClearOp::create(b, loc);
    auto read = med::MemOp::create(b, loc, TypeRange{i32}, "sram", "read",
                                   count, constant(0, loc), ValueRange(), 1);
    Block *loop = b.createBlock(&region, region.end(), {i32}, {loc});
    Block *cleared = b.createBlock(&region, region.end());
    Block *done = b.createBlock(&region, region.end());
    b.setInsertionPointToEnd(read->getBlock());
    med::CmpBrOp::create(b, loc, "beq", "-", read.getResult(0),
                         constant(0, loc), ValueRange(),
                         ValueRange{constant(0, loc)}, done, loop);
    b.setInsertionPointToEnd(loop);
    Value at = loop->getArgument(0);
    med::MemOp::create(b, loc, TypeRange(), "sram", "write", lookupSlots(loc),
                       at, ValueRange{constant(0, loc)}, 1);
    Value after = alu(loc, "+", at, constant(meLookupSlotBytes, loc));
    med::CmpBrOp::create(b, loc, "bne", "-", after,
                         constant(meLookupSlots * meLookupSlotBytes, loc),
                         ValueRange{after}, ValueRange(), loop, cleared);
    b.setInsertionPointToEnd(cleared);
    med::MemOp::create(b, loc, TypeRange(), "sram", "write", count,
                       constant(0, loc), ValueRange{constant(0, loc)}, 1);
    med::BrOp::create(b, loc, ValueRange(), done);
    b.setInsertionPointToEnd(done);
    return success();
  }
  case 1:
    if (pending == 16) {
      raiseHere(loc, ExceptionKind::Coprocessor);
      return success();
    }
    copro[coproKey + pending] = copro[coproR0];
    return success();
  case 2:
  case 5: {
    // try_add_value (5): a new key that does not fit stores nothing and
    // sets R1 = 0 instead of raising; R1 = 1 when stored.
    bool tries = op.getOpcode() == 5;
    if (pending == 0) {
      raiseHere(loc, ExceptionKind::Coprocessor);
      return success();
    }
    if (tableWrites) {
      info.writesState = true;
      med::StateTokenOp::create(b, loc);
    }
    SmallVector<Value> key(copro.begin() + coproKey,
                           copro.begin() + coproKey + pending);
    Value value = copro[coproR0];
    // The stamp: R2 as this handler wrote it (0 if it did not; the host
    // engines keep R2 from an earlier packet, docs/me-backend.md).
    Value stamp = copro[coproR2] ? copro[coproR2] : constant(0, loc);
    clearKey();
    Value hash = lookupHash(loc, key);
    bool cache = cached(pending);
    Value tag = cache ? cacheTag(loc, hash) : Value();
    Block *here = b.getInsertionBlock();
    Block *done = b.createBlock(&region, region.end(), {i32}, {loc});
    b.setInsertionPointToEnd(here);
    Probe probe;
    if (cache) {
      // In the cache: nothing to do when the value and stamp are the
      // same; otherwise the copy, then the slot (write-through), the copy
      // first so that no other context sees the entry between.
      Cached c = enterCache(loc, key, tag);
      Block *update = b.createBlock(&region, region.end());
      Block *sameValue = b.createBlock(&region, region.end());
      b.setInsertionPointToEnd(c.hit);
      med::CmpBrOp::create(b, loc, "bne", "-", value, c.value, ValueRange(),
                           ValueRange(), update, sameValue);
      b.setInsertionPointToEnd(sameValue);
      med::CmpBrOp::create(b, loc, "bne", "-", stamp, c.stamp, ValueRange(),
                           ValueRange{constant(1, loc)}, update, done);
      b.setInsertionPointToEnd(update);
      atCacheEntry(loc, c.address, [&] {
        med::LocalWriteOp::create(b, loc, 1, 1, value);
        med::LocalWriteOp::create(b, loc, 1, 2, stamp);
      });
      med::MemOp::create(
          b, loc, TypeRange(), "sram", "write", lookupSlots(loc),
          alu(loc, "+", c.offset, constant(4 * meSlotValue, loc)),
          ValueRange{value, stamp}, 2);
      med::BrOp::create(b, loc, ValueRange{constant(1, loc)}, done);
      b.setInsertionPointToEnd(c.miss);
    }
    probe = enterProbe(loc, key, hash);
    // The key is there: a new value and stamp.
    b.setInsertionPointToEnd(probe.hit);
    med::MemOp::create(
        b, loc, TypeRange(), "sram", "write", lookupSlots(loc),
        alu(loc, "+", probe.offset, constant(4 * meSlotValue, loc)),
        ValueRange{value, stamp}, 2);
    if (cache)
      fillCache(loc, tag, key, probe.offset, value, stamp);
    med::BrOp::create(b, loc, ValueRange{constant(1, loc)}, done);
    // A new entry, if the table has room.
    b.setInsertionPointToEnd(probe.miss);
    auto entries = med::MemOp::create(b, loc, TypeRange{i32}, "sram", "read",
                                      count, constant(0, loc), ValueRange(), 1);
    Block *room = b.createBlock(&region, region.end());
    b.setInsertionPointToEnd(probe.miss);
    if (tries)
      med::CmpBrOp::create(b, loc, "bcc", "-", entries.getResult(0),
                           constant(meLookupCapacity, loc),
                           ValueRange{constant(0, loc)}, ValueRange(), done,
                           room);
    else
      med::CmpBrOp::create(b, loc, "bcc", "-", entries.getResult(0),
                           constant(meLookupCapacity, loc), ValueRange(),
                           ValueRange(),
                           raiseBlock(loc, ExceptionKind::Coprocessor), room);
    b.setInsertionPointToEnd(room);
    SmallVector<Value> slot{constant(pending, loc), value, stamp};
    slot.append(key.begin(), key.end());
    for (unsigned from = 0; from < slot.size(); from += lookupChunk) {
      unsigned count = std::min<unsigned>(slot.size() - from, lookupChunk);
      med::MemOp::create(
          b, loc, TypeRange(), "sram", "write", lookupSlots(loc),
          from ? alu(loc, "+", probe.offset, constant(4 * from, loc))
               : probe.offset,
          ArrayRef<Value>(slot).slice(from, count), count);
    }
    med::MemOp::create(
        b, loc, TypeRange(), "sram", "write", count, constant(0, loc),
        ValueRange{alu(loc, "+", entries.getResult(0), constant(1, loc))}, 1);
    if (cache)
      fillCache(loc, tag, key, probe.offset, value, stamp);
    med::BrOp::create(b, loc, ValueRange{constant(1, loc)}, done);
    b.setInsertionPointToEnd(done);
    if (tries)
      copro[coproR1] = done->getArgument(0);
    return success();
  }
  case 3: {
    if (tableWrites) {
      info.writesState = true;
      med::StateTokenOp::create(b, loc);
    }
    SmallVector<Value> key;
    if (pending)
      key.assign(copro.begin() + coproKey, copro.begin() + coproKey + pending);
    else
      key.push_back(copro[coproR0]);
    Value r0 = copro[coproR0] ? copro[coproR0] : constant(0, loc);
    clearKey();
    Value hash = lookupHash(loc, key);
    bool cache = cached(key.size());
    Value tag = cache ? cacheTag(loc, hash) : Value();
    Block *here = b.getInsertionBlock();
    Block *done = b.createBlock(&region, region.end(), {i32, i32}, {loc, loc});
    b.setInsertionPointToEnd(here);
    if (cache) {
      Cached c = enterCache(loc, key, tag);
      b.setInsertionPointToEnd(c.hit);
      med::BrOp::create(b, loc, ValueRange{c.value, constant(1, loc)}, done);
      b.setInsertionPointToEnd(c.miss);
    }
    Probe probe = enterProbe(loc, key, hash);
    b.setInsertionPointToEnd(probe.hit);
    if (cache)
      fillCache(loc, tag, key, probe.offset, probe.value, probe.stamp);
    med::BrOp::create(b, loc, ValueRange{probe.value, constant(1, loc)}, done);
    b.setInsertionPointToEnd(probe.miss);
    med::BrOp::create(b, loc, ValueRange{r0, constant(0, loc)}, done);
    b.setInsertionPointToEnd(done);
    copro[coproR0] = done->getArgument(0);
    copro[coproR1] = done->getArgument(1);
    return success();
  }
  case 4:
    clearKey();
    return success();
  default:
    raiseHere(loc, ExceptionKind::Coprocessor);
    return success();
  }
}

LogicalResult HandlerLowering::lowerOp(Operation *op) {
  Location loc = op->getLoc();
  auto binary = [&](StringRef aluOp) {
    Value r = alu(loc, aluOp, get(op->getOperand(0)), get(op->getOperand(1)));
    unsigned bits = widthOf(op->getResult(0).getType());
    if (aluOp == "+" || aluOp == "-" || aluOp == "*")
      r = truncate(loc, r, bits);
    values.map(op->getResult(0), r);
    return success();
  };
  auto shift = [&](StringRef direct, StringRef indirect) -> LogicalResult {
    // Narrow values live zero-extended: a right shift works on them as
    // they are (sign-extended first when arithmetic), a left shift is
    // truncated after. Shifts by the width or more are poison in arith.
    unsigned bits = widthOf(op->getResult(0).getType());
    Value x = get(op->getOperand(0));
    if (bits < 32 && direct == ">>asr")
      x = signExtend(loc, x, bits);
    Value r;
    if (auto n = constantOf(op->getOperand(1))) {
      if (*n == 0) {
        values.map(op->getResult(0), get(op->getOperand(0)));
        return success();
      }
      if (*n >= bits)
        return refuse(op, "a shift by the value's width or more");
      r = shifted(loc, "b", Value(), x, direct, *n);
    } else {
      // The amount is the low 5 bits of a.
      r = shifted(loc, "b", get(op->getOperand(1)), x, indirect, 0);
    }
    if (bits < 32 && direct != ">>")
      r = truncate(loc, r, bits);
    values.map(op->getResult(0), r);
    return success();
  };
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](arith::ConstantOp) { return success(); })
      .Case([&](arith::AddIOp) { return binary("+"); })
      .Case([&](arith::SubIOp) { return binary("-"); })
      .Case([&](arith::MulIOp) { return binary("*"); })
      .Case([&](arith::AndIOp o) {
        if (o.getType().isInteger(1))
          return success(); // a condition, lowered where it is used
        return binary("and");
      })
      .Case([&](arith::OrIOp o) {
        if (o.getType().isInteger(1))
          return success();
        return binary("or");
      })
      .Case([&](arith::XOrIOp o) {
        if (o.getType().isInteger(1))
          return success();
        return binary("xor");
      })
      .Case([&](arith::ShLIOp) { return shift("<<", "<<indirect"); })
      .Case([&](arith::ShRUIOp) { return shift(">>", ">>indirect"); })
      .Case([&](arith::ShRSIOp) { return shift(">>asr", ">>asr indirect"); })
      .Case([&](arith::CmpIOp) { return success(); })
      .Case([&](arith::ExtUIOp o) {
        values.map(o.getResult(), get(o.getIn()));
        return success();
      })
      .Case([&](arith::ExtSIOp o) {
        values.map(o.getResult(), signExtend(loc, get(o.getIn()),
                                             widthOf(o.getIn().getType())));
        return success();
      })
      .Case([&](arith::TruncIOp o) {
        unsigned bits = widthOf(o.getType());
        if (bits == 1) {
          Value low = alu(loc, "and", get(o.getIn()), constant(1, loc));
          values.map(o.getResult(), low);
          return success();
        }
        values.map(o.getResult(), truncate(loc, get(o.getIn()), bits));
        return success();
      })
      .Case([&](arith::SelectOp o) {
        Value t = get(o.getTrueValue()), f = get(o.getFalseValue());
        Value c = o.getCondition();
        if (auto cmp = c.getDefiningOp<arith::CmpIOp>()) {
          auto [branch, a, v] = compareOperands(cmp);
          values.map(o.getResult(),
                     med::SelectOp::create(b, loc, b.getI32Type(), branch, "-",
                                           a, v, t, f));
          return success();
        }
        Value m = get(c);
        values.map(o.getResult(),
                   med::SelectOp::create(b, loc, b.getI32Type(), "bne", "-", m,
                                         constant(0, loc), t, f));
        return success();
      })
      .Case<arith::MinUIOp, arith::MaxUIOp, arith::MinSIOp, arith::MaxSIOp>(
          [&](Operation *o) {
            // a op b ? a : b, compared at the operands' width.
            bool isSigned = isa<arith::MinSIOp, arith::MaxSIOp>(o);
            bool isMin = isa<arith::MinUIOp, arith::MinSIOp>(o);
            unsigned bits = widthOf(o->getResult(0).getType());
            Value x = get(o->getOperand(0)), y = get(o->getOperand(1));
            Value cx = x, cy = y;
            if (isSigned && bits < 32) {
              cx = signExtend(loc, x, bits);
              cy = signExtend(loc, y, bits);
            }
            StringRef cond =
                isMin ? (isSigned ? "blt" : "bcs") : (isSigned ? "bgt" : "bhi");
            values.map(o->getResult(0),
                       med::SelectOp::create(b, loc, b.getI32Type(), cond, "-",
                                             cx, cy, x, y));
            return success();
          })
      .Case<PacketLengthOp, WireLengthOp>([&](Operation *o) {
        Value v = med::ArgOp::create(
            b, loc, b.getI32Type(), isa<PacketLengthOp>(o) ? "length" : "wire");
        // A copy when the handler may replace the packet later.
        if (replacesPacket)
          v = med::CopyOp::create(b, loc, b.getI32Type(), v);
        values.map(o->getResult(0), v);
        return success();
      })
      .Case([&](ByteSwapOp o) {
        // Rotate by 8, then put bytes 3 and 1 back: x>>>8 has bytes
        // (d a b c) of (a b c d); ld_field of bytes 2 and 0 from x<<<8
        // = (b c d a) gives (d c b a).
        Value x = get(o.getInput());
        Value r = shifted(loc, "b", Value(), x, ">>rot", 8);
        Value l = med::LdFieldOp::create(
            b, loc, b.getI32Type(), b.getI32IntegerAttr(0x5), r, x,
            b.getStringAttr(">>rot"), b.getI32IntegerAttr(24));
        values.map(o.getResult(), l);
        return success();
      })
      .Case([&](LoadOp o) { return lowerLoad(o); })
      .Case([&](StoreOp o) { return lowerStore(o); })
      .Case([&](AtomicAddOp o) { return lowerAtomicAdd(o); })
      .Case([&](CheckBoundsOp o) { return lowerCheckBounds(o); })
      .Case([&](ChecksumOp o) { return lowerChecksum(o); })
      .Case([&](HashOp o) { return lowerHash(o); })
      .Case([&](FieldCmpOp o) { return lowerFieldCmp(o); })
      .Case([&](CopyOp o) { return lowerCopy(o); })
      .Case([&](PacketScanOp o) { return lowerPacketScan(o); })
      .Case([&](ExbufCreateOp o) { return lowerExbufCreate(o); })
      .Case([&](ExbufDeleteOp o) { return lowerExbufDelete(o); })
      .Case([&](math::CountLeadingZerosOp o) -> LogicalResult {
        unsigned bits = widthOf(o.getType());
        Value x = get(o.getOperand());
        // Leading zeros of the value at its width: (bits - 1) - highest
        // set bit, or bits for 0.
        Value count =
            alu(loc, "b-a", highestBit(loc, x), constant(bits - 1, loc));
        values.map(o.getResult(), select(loc, "beq", x, constant(0, loc),
                                         constant(bits, loc), count));
        return success();
      })
      .Case([&](CrcOp o) {
        // One word through the CRC unit from a fresh remainder.
        med::CsrWriteOp::create(b, loc, "crc_remainder",
                                constant(0xffffffff, loc));
        med::CrcOp::create(b, loc, b.getI32Type(),
                           o.getKind() == CrcKind::Crc32 ? "crc_32" : "crc_32c",
                           true, get(o.getInput()));
        Value r =
            med::CsrReadOp::create(b, loc, b.getI32Type(), "crc_remainder");
        values.map(o.getResult(), alu(loc, "~b", Value(), r));
        return success();
      })
      .Case([&](InfoClearOp o) -> LogicalResult {
        if (exbuf == None)
          return success(); // (clearing it when there may be none is harmless)
        info.usesInfo = true;
        for (unsigned w = 0;
             w < (std::min(options.infoSize, meInfoWindowBytes) + 3) / 4; ++w)
          med::LocalWriteOp::create(b, loc, 1, w, constant(0, loc));
        return success();
      })
      .Case<ChecksumAddOp, ChecksumSubOp>([&](Operation *o) {
        // 16-bit halves added, one end-around carry (the sum of two 16-bit
        // values folds once).
        Value v = get(o->getOperand(1));
        if (isa<ChecksumSubOp>(o))
          v = alu(loc, "~b", Value(), v);
        Value sum =
            alu(loc, "+", fieldClear(loc, 0x3, get(o->getOperand(0)), 0),
                fieldClear(loc, 0x3, v, 0));
        values.map(o->getResult(0),
                   alu(loc, "+", shifted(loc, "b", Value(), sum, ">>", 16),
                       fieldClear(loc, 0x3, sum, 0)));
        return success();
      })
      .Case([&](PacketCrcOp o) { return lowerPacketCrc(o); })
      .Case([&](BitOp o) { return lowerBit(o); })
      .Case([&](FindBitOp o) { return lowerFindBit(o); })
      .Case([&](RandomOp o) { return lowerRandom(o); })
      .Case([&](CoproWriteOp o) {
        if (o.getReg() >= coproRegs)
          raiseHere(loc, ExceptionKind::Coprocessor);
        else
          copro[o.getReg()] = get(o.getValue());
        return success();
      })
      .Case([&](CoproReadOp o) {
        if (o.getReg() >= coproRegs) {
          raiseHere(loc, ExceptionKind::Coprocessor);
          values.map(o.getResult(), constant(0, loc));
          return success();
        }
        Value v = copro[o.getReg()];
        values.map(o.getResult(), v ? v : constant(0, loc));
        return success();
      })
      .Case([&](CoproInitOp o) {
        // The lookup coprocessor takes any data: status 0.
        values.map(o.getResult(), constant(0, loc));
        return success();
      })
      .Case([&](CoproExbufOp) {
        raiseIfNone(loc, ExceptionKind::NoExchangeBuffer);
        return success();
      })
      .Case([&](CoproInvokeOp o) { return lowerCoproInvoke(o); })
      .Case([&](TimestampOp o) -> LogicalResult {
        // The packet path keeps the arrival time in local memory; a made
        // exchange buffer, or none, has 0.
        if (!(exbuf & Arrived)) {
          values.map(o.getResult(), constant(0, loc));
          return success();
        }
        if (exbuf != Arrived)
          return refuse(o, "a timestamp where paths with and without "
                           "exbuf.delete or exbuf.create meet");
        if (options.timestampWord < 0)
          return refuse(o, "a timestamp without the packet path's time");
        unsigned word = static_cast<unsigned>(options.timestampWord) +
                        (o.getUnit() == TimeUnit::Microseconds ? 1 : 0);
        values.map(o.getResult(),
                   med::LocalReadOp::create(b, loc, b.getI32Type(), 0, word));
        return success();
      })
      .Case<arith::DivUIOp, arith::RemUIOp, arith::DivSIOp, arith::RemSIOp>(
          [&](Operation *o) { return lowerDivision(o); })
      .Case([&](CheckOp o) {
        Block *raise = raiseBlock(loc, o.getKind());
        Block *current = b.getInsertionBlock();
        Block *next = newBlock();
        b.setInsertionPointToEnd(current);
        branchOn(loc, o.getCondition(), next, {}, raise, {});
        b.setInsertionPointToEnd(next);
        return success();
      })
      .Case([&](WatchdogOp o) {
        info.usesWatchdog = true;
        Block *raise = raiseBlock(loc, ExceptionKind::Watchdog);
        Block *current = b.getInsertionBlock();
        Block *next = newBlock();
        b.setInsertionPointToEnd(current);
        med::WatchdogOp::create(b, loc, next, raise);
        b.setInsertionPointToEnd(next);
        return success();
      })
      .Case([&](SendOp o) -> LogicalResult {
        PortOp port = pe.lookupPort(o.getPort());
        if (!port)
          return refuse(o, "a send to an unknown port");
        raiseIfNone(loc, ExceptionKind::NoExchangeBuffer);
        med::SendOp::create(b, loc, pe.getPortNumber(port));
        return success();
      })
      .Case([&](SendDupOp o) -> LogicalResult {
        PortOp port = pe.lookupPort(o.getPort());
        if (!port)
          return refuse(o, "a send to an unknown port");
        raiseIfNone(loc, ExceptionKind::NoExchangeBuffer);
        info.sendsCopies = true;
        med::SendCopyOp::create(b, loc, pe.getPortNumber(port));
        return success();
      })
      .Case<DropOp, RetOp>([&](Operation *o) {
        // pkt.drop counts for the NetPE (ret does not, as on every engine).
        // With exbuf.delete in the handler every drop is logged (ret
        // counts one with or without an exchange buffer).
        med::DropOp::create(b, loc, info.logsDrops, isa<DropOp>(o));
        return success();
      })
      .Case([&](TrapOp o) {
        unsigned index = locations.size();
        locations.push_back(locationString(loc));
        med::RaiseOp::create(b, loc, static_cast<uint32_t>(o.getKind()), index);
        return success();
      })
      .Case([&](cf::BranchOp o) {
        med::BrOp::create(b, loc, edge(o.getDest(), o.getDestOperands()),
                          blockFor(o.getDest()));
        return success();
      })
      .Case([&](cf::CondBranchOp o) {
        SmallVector<Value> t = edge(o.getTrueDest(), o.getTrueDestOperands());
        SmallVector<Value> f = edge(o.getFalseDest(), o.getFalseDestOperands());
        branchOn(loc, o.getCondition(), blockFor(o.getTrueDest()), t,
                 blockFor(o.getFalseDest()), f);
        return success();
      })
      .Case([&](cf::SwitchOp o) -> LogicalResult {
        Value flag = get(o.getFlag());
        SmallVector<int32_t> cases;
        if (auto values = o.getCaseValues())
          for (const APInt &v : values->getValues<APInt>())
            cases.push_back(static_cast<int32_t>(v.getZExtValue()));
        // Successors with operands go through a block that passes them.
        auto target = [&](Block *dest, ValueRange operands) -> Block * {
          Block *mappedDest = blockFor(dest);
          SmallVector<Value> args = edge(dest, operands);
          if (args.empty())
            return mappedDest;
          OpBuilder::InsertionGuard guard(b);
          Block *pass = b.createBlock(&func.getBody(), func.getBody().end());
          med::BrOp::create(b, loc, args, mappedDest);
          return pass;
        };
        SmallVector<Block *> dests;
        dests.push_back(
            target(o.getDefaultDestination(), o.getDefaultOperands()));
        for (unsigned i = 0; i < cases.size(); ++i)
          dests.push_back(
              target(o.getCaseDestinations()[i], o.getCaseOperands(i)));
        med::SwitchOp::create(b, loc, flag, b.getDenseI32ArrayAttr(cases),
                              dests);
        return success();
      })
      .Default([&](Operation *op) {
        return refuse(op, Twine("'") + op->getName().getStringRef() + "'");
      });
}

FailureOr<med::FuncOp> HandlerLowering::run() {
  Location loc = handler.getLoc();
  std::string name =
      (pe.getSymName() + "." + stringifyHandlerKind(handler.getKind())).str();
  func = med::FuncOp::create(
      b, loc, b.getStringAttr(name), b.getStringAttr(pe.getSymName()),
      b.getStringAttr(stringifyHandlerKind(handler.getKind())));
  Region &body = handler.getBody();
  // The caller's insertion point (after the new function) is kept.
  OpBuilder::InsertionGuard guard(b);

  // The header prefetch: the bytes below maxHeaderBytes that constant-offset
  // packet loads read, unless the handler writes the packet (the copy in
  // the transfer registers would go stale).
  bool writesPacket = false;
  unsigned header = 0;
  handler.walk([&](Operation *op) {
    if (auto store = dyn_cast<StoreOp>(op))
      writesPacket |= store.getSpace() == MemSpace::Packet;
    if (isa<CopyOp>(op))
      writesPacket = true;
    if (isa<ExbufCreateOp>(op))
      writesPacket = replacesPacket = true;
    if (auto load = dyn_cast<LoadOp>(op)) {
      if (load.getSpace() != MemSpace::Packet)
        return;
      auto offset = constantOf(load.getOffset());
      unsigned size = widthOf(load.getType()) / 8;
      // The words the load reads: through the one holding its last byte.
      if (offset && wordsEnd(*offset, size) <= options.maxHeaderBytes)
        header = std::max<unsigned>(header, wordsEnd(*offset, size));
    }
  });
  if (handler.getKind() == HandlerKind::Push && !writesPacket && header) {
    prefetch = true;
    // Whole words, in whole quadwords; an unaligned word at the end reads
    // the word after it.
    info.headerBytes =
        std::min<unsigned>((header + 7) & ~7u, options.maxHeaderBytes & ~7u);
  }

  if (failed(analyzeFlow()))
    return failure();
  handler.walk([&](ExbufDeleteOp) {
    info.logsDrops = handler.getKind() == HandlerKind::Push;
  });
  // Blocks in reverse post-order, so that every value is lowered before
  // its uses (unreachable blocks are left out).
  SmallVector<Block *> order;
  for (Block *block : llvm::ReversePostOrderTraversal<Region *>(&body))
    order.push_back(block);
  for (Block *block : order) {
    Block *mine = b.createBlock(&func.getBody(), func.getBody().end());
    blocks[block] = mine;
    if (block->isEntryBlock())
      continue;
    for (BlockArgument arg : block->getArguments())
      values.map(arg, mine->addArgument(b.getI32Type(), arg.getLoc()));
    // The live coprocessor values (edge() passes them).
    FlowPoint at = flowEntry.lookup(block);
    for (unsigned r = 0; r < coproRegs; ++r)
      if (at.defined & (1u << r))
        mine->addArgument(b.getI32Type(), loc);
    for (unsigned i = 0; i < at.pending; ++i)
      mine->addArgument(b.getI32Type(), loc);
  }
  // The port argument.
  b.setInsertionPointToStart(blockFor(&body.front()));
  if (Value port = handler.getPortArgument())
    values.map(port, med::ArgOp::create(b, loc, b.getI32Type(), "port"));

  for (Block *block : order) {
    Block *mine = blockFor(block);
    b.setInsertionPointToEnd(mine);
    copro.assign(coproKey + 16, Value());
    exbuf = handler.getKind() == HandlerKind::Push ? Arrived : None;
    if (auto it = flowEntry.find(block); it != flowEntry.end())
      exbuf = it->second.exbuf;
    if (!block->isEntryBlock()) {
      FlowPoint at = flowEntry.lookup(block);
      unsigned next = block->getNumArguments();
      for (unsigned r = 0; r < coproRegs; ++r)
        if (at.defined & (1u << r))
          copro[r] = mine->getArgument(next++);
      for (unsigned i = 0; i < at.pending; ++i)
        copro[coproKey + i] = mine->getArgument(next++);
    }
    for (Operation &op : *block)
      if (failed(lowerOp(&op)))
        return failure();
  }
  func->setAttr("header_bytes", b.getI32IntegerAttr(info.headerBytes));
  return func;
}

} // namespace

FailureOr<med::FuncOp> netvm::lowerHandlerToME(
    HandlerOp handler, OpBuilder &builder, const MELoweringOptions &options,
    std::vector<std::string> &locations, MEHandlerInfo &info) {
  return HandlerLowering(handler, builder, options, locations, info).run();
}
