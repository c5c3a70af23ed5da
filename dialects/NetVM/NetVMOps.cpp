//===- NetVMOps.cpp - Operations of the netvm dialect
//-----------------------===//
//
// Builders, the handler's custom syntax, verifiers (structure, connections,
// the acyclic NetPE graph, port and coprocessor references), memory effects
// and constant folders of the netvm operations.
//
//===----------------------------------------------------------------------===//

#include "NetVM/NetVMOps.h"
#include "NetVM/Semantics.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace netvm;

MLIR_DEFINE_EXPLICIT_TYPE_ID(netvm::PacketMemoryResource)
MLIR_DEFINE_EXPLICIT_TYPE_ID(netvm::InfoMemoryResource)
MLIR_DEFINE_EXPLICIT_TYPE_ID(netvm::DataMemoryResource)
MLIR_DEFINE_EXPLICIT_TYPE_ID(netvm::SharedMemoryResource)
MLIR_DEFINE_EXPLICIT_TYPE_ID(netvm::InitDataResource)
MLIR_DEFINE_EXPLICIT_TYPE_ID(netvm::ExceptionStateResource)
MLIR_DEFINE_EXPLICIT_TYPE_ID(netvm::CoprocessorResource)
MLIR_DEFINE_EXPLICIT_TYPE_ID(netvm::RandomStateResource)

SideEffects::Resource *netvm::getResource(MemSpace space) {
  switch (space) {
  case MemSpace::Packet:
    return PacketMemoryResource::get();
  case MemSpace::Info:
    return InfoMemoryResource::get();
  case MemSpace::Data:
    return DataMemoryResource::get();
  case MemSpace::Shared:
    return SharedMemoryResource::get();
  case MemSpace::InitData:
    return InitDataResource::get();
  }
  llvm_unreachable("unknown memory space");
}

/// The handler an operation is nested in, or null.
static HandlerOp getEnclosingHandler(Operation *op) {
  return op->getParentOfType<HandlerOp>();
}

/// Packet and info memory belong to the exchange buffer, which an init
/// handler does not have.
static LogicalResult verifyExchangeBufferSpace(Operation *op, MemSpace space) {
  if (space != MemSpace::Packet && space != MemSpace::Info)
    return success();
  HandlerOp handler = getEnclosingHandler(op);
  if (handler && handler.getKind() == HandlerKind::Init)
    return op->emitOpError("accesses ")
           << stringifyMemSpace(space)
           << " memory in an init handler, which has no exchange buffer";
  return success();
}

//===----------------------------------------------------------------------===//
// ApplicationOp
//===----------------------------------------------------------------------===//

void ApplicationOp::build(OpBuilder &builder, OperationState &state,
                          StringRef name) {
  state.addAttribute(mlir::SymbolTable::getSymbolAttrName(),
                     builder.getStringAttr(name));
  state.addRegion()->emplaceBlock();
}

PEOp ApplicationOp::lookupPE(StringRef name) {
  return dyn_cast_or_null<PEOp>(lookupSymbol(name));
}

namespace {
/// One end of a connection, resolved.
struct Endpoint {
  Operation *node = nullptr; // SourceOp, SinkOp or PEOp
  PortOp port;               // set for NetPE ports
};
} // namespace

/// Resolve `@source`, `@sink` or `@pe::@port` inside `app`.
static FailureOr<Endpoint> resolveEndpoint(ApplicationOp app, ConnectOp conn,
                                           SymbolRefAttr ref, bool isFrom) {
  Endpoint ep;
  Operation *root = SymbolTable::lookupSymbolIn(app, ref.getRootReference());
  if (!root)
    return conn.emitOpError("refers to unknown symbol ") << ref;
  ep.node = root;
  if (auto pe = dyn_cast<PEOp>(root)) {
    if (ref.getNestedReferences().size() != 1)
      return conn.emitOpError("must name a port of NetPE @")
             << pe.getSymName() << " as @" << pe.getSymName() << "::@port, not "
             << ref;
    ep.port = pe.lookupPort(ref.getLeafReference());
    if (!ep.port)
      return conn.emitOpError("refers to unknown port ") << ref;
    if (ep.port.isInput() == isFrom)
      return conn.emitOpError()
             << (isFrom ? "source" : "destination") << " " << ref << " is a "
             << stringifyPortKind(ep.port.getKind()) << " port; expected "
             << (isFrom ? "an output" : "an input") << " port";
    return ep;
  }
  if (!ref.getNestedReferences().empty())
    return conn.emitOpError("nested reference into non-NetPE symbol ") << ref;
  if (isFrom && !isa<SourceOp>(root))
    return conn.emitOpError("connection must start at a source or a NetPE "
                            "output port, not ")
           << ref;
  if (!isFrom && !isa<SinkOp>(root))
    return conn.emitOpError("connection must end at a sink or a NetPE input "
                            "port, not ")
           << ref;
  return ep;
}

LogicalResult ApplicationOp::verifyRegions() {
  // Resolve every connection and build the NetPE graph.
  llvm::MapVector<Operation *, llvm::SmallVector<Operation *>> successors;
  llvm::DenseMap<std::pair<Operation *, Operation *>, ConnectOp> edges;
  llvm::DenseMap<Operation *, ConnectOp> pullInputFeeds;
  for (Operation &op : *getBodyBlock()) {
    if (!isa<SourceOp, SinkOp, PEOp, ConnectOp>(op))
      return op.emitOpError("is not allowed in a netvm.application body");
    auto conn = dyn_cast<ConnectOp>(op);
    if (!conn)
      continue;
    FailureOr<Endpoint> from =
        resolveEndpoint(*this, conn, conn.getFrom(), /*isFrom=*/true);
    if (failed(from))
      return failure();
    FailureOr<Endpoint> to =
        resolveEndpoint(*this, conn, conn.getTo(), /*isFrom=*/false);
    if (failed(to))
      return failure();
    if (from->port && to->port && from->port.isPush() != to->port.isPush())
      return conn.emitOpError("connects a ")
             << stringifyPortKind(from->port.getKind()) << " port to a "
             << stringifyPortKind(to->port.getKind())
             << " port; push and pull ports cannot be joined";
    if (to->port && to->port.getKind() == PortKind::PullInput) {
      auto [it, inserted] = pullInputFeeds.try_emplace(to->port, conn);
      if (!inserted) {
        InFlightDiagnostic diag = conn.emitOpError("feeds pull input port ")
                                  << conn.getTo() << " a second time";
        diag.attachNote(it->second.getLoc()) << "first connection here";
        return diag;
      }
    }
    if (isa<PEOp>(from->node) && isa<PEOp>(to->node)) {
      successors[from->node].push_back(to->node);
      edges.try_emplace({from->node, to->node}, conn);
    }
  }

  // The NetPE graph must be acyclic: depth-first search with colours.
  enum class Colour { White, Grey, Black };
  llvm::DenseMap<Operation *, Colour> colour;
  llvm::SmallVector<Operation *> path;
  std::function<Operation *(Operation *)> visit =
      [&](Operation *node) -> Operation * {
    colour[node] = Colour::Grey;
    path.push_back(node);
    auto it = successors.find(node);
    if (it != successors.end()) {
      for (Operation *next : it->second) {
        Colour c = colour.lookup(next);
        if (c == Colour::Grey)
          return next;
        if (c == Colour::White)
          if (Operation *cycle = visit(next))
            return cycle;
      }
    }
    path.pop_back();
    colour[node] = Colour::Black;
    return nullptr;
  };
  for (PEOp pe : getBodyBlock()->getOps<PEOp>()) {
    if (colour.lookup(pe) != Colour::White)
      continue;
    if (Operation *start = visit(pe)) {
      std::string cycle;
      llvm::raw_string_ostream os(cycle);
      auto first = llvm::find(path, start);
      for (auto it = first; it != path.end(); ++it)
        os << "@" << cast<PEOp>(*it).getSymName() << " -> ";
      os << "@" << cast<PEOp>(start).getSymName();
      // Point at the connection that closes the cycle.
      ConnectOp closing = edges.lookup({path.back(), start});
      return closing.emitOpError("closes a cycle of NetPEs: ")
             << cycle << " (a NetVM application must be a DAG)";
    }
  }

  // All NetPEs that ask for shared memory must ask for the same size.
  PEOp sharedOwner;
  for (PEOp pe : getBodyBlock()->getOps<PEOp>()) {
    if (pe.getSharedmemSize() == 0)
      continue;
    if (sharedOwner &&
        sharedOwner.getSharedmemSize() != pe.getSharedmemSize()) {
      InFlightDiagnostic diag = pe.emitOpError("requests ")
                                << pe.getSharedmemSize()
                                << " bytes of shared memory, but @"
                                << sharedOwner.getSymName() << " requests "
                                << sharedOwner.getSharedmemSize();
      diag.attachNote(sharedOwner.getLoc()) << "first request here";
      return diag;
    }
    sharedOwner = pe;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// PEOp
//===----------------------------------------------------------------------===//

void PEOp::build(OpBuilder &builder, OperationState &state, StringRef name) {
  state.addAttribute(mlir::SymbolTable::getSymbolAttrName(),
                     builder.getStringAttr(name));
  state.addRegion()->emplaceBlock();
}

SmallVector<PortOp, 4> PEOp::getPorts() {
  return llvm::to_vector(getBodyBlock()->getOps<PortOp>());
}

HandlerOp PEOp::getHandler(HandlerKind kind) {
  for (HandlerOp handler : getBodyBlock()->getOps<HandlerOp>())
    if (handler.getKind() == kind)
      return handler;
  return {};
}

PortOp PEOp::lookupPort(StringRef name) {
  return dyn_cast_or_null<PortOp>(lookupSymbol(name));
}

unsigned PEOp::getPortNumber(PortOp port) {
  unsigned index = 0;
  for (PortOp p : getBodyBlock()->getOps<PortOp>()) {
    if (p == port)
      return index;
    ++index;
  }
  llvm_unreachable("port does not belong to this NetPE");
}

int PEOp::getCoprocessorIndex(StringRef name) {
  for (auto [index, attr] : llvm::enumerate(getCoprocessors()))
    if (cast<StringAttr>(attr).getValue() == name)
      return index;
  return -1;
}

LogicalResult PEOp::verifyRegions() {
  HandlerOp seen[3];
  bool hasPushInput = false, hasPullOutput = false;
  for (Operation &op : *getBodyBlock()) {
    if (auto port = dyn_cast<PortOp>(op)) {
      hasPushInput |= port.getKind() == PortKind::PushInput;
      hasPullOutput |= port.getKind() == PortKind::PullOutput;
      continue;
    }
    auto handler = dyn_cast<HandlerOp>(op);
    if (!handler)
      return op.emitOpError("is not allowed in a netvm.pe body");
    HandlerOp &slot = seen[static_cast<unsigned>(handler.getKind())];
    if (slot) {
      InFlightDiagnostic diag = handler.emitOpError("second ")
                                << stringifyHandlerKind(handler.getKind())
                                << " handler in NetPE @" << getSymName();
      diag.attachNote(slot.getLoc()) << "first one here";
      return diag;
    }
    slot = handler;
  }
  if (hasPushInput && !seen[static_cast<unsigned>(HandlerKind::Push)])
    return emitOpError("has push input ports but no push handler");
  if (hasPullOutput && !seen[static_cast<unsigned>(HandlerKind::Pull)])
    return emitOpError("has pull output ports but no pull handler");
  for (Attribute attr : getCoprocessors())
    if (cast<StringAttr>(attr).getValue().empty())
      return emitOpError("coprocessor names must not be empty");
  // Sizes as NetIL bounds them (a negative i32 would read as 4 GiB).
  auto size = [&](StringRef name, int64_t value) -> LogicalResult {
    if (value >= 0 && value <= kMaxMemorySize)
      return success();
    return emitOpError() << name << " must be 0-" << kMaxMemorySize
                         << " bytes, not " << value;
  };
  auto asSigned = [](uint32_t v) { return static_cast<int64_t>(int32_t(v)); };
  if (failed(size("datamem_size", asSigned(getDatamemSize()))) ||
      failed(size("info_size", asSigned(getInfoSize()))) ||
      failed(size("sharedmem_size", asSigned(getSharedmemSize()))))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// HandlerOp
//===----------------------------------------------------------------------===//

void HandlerOp::build(OpBuilder &builder, OperationState &state,
                      HandlerKind kind) {
  state.addAttribute(getKindAttrName(state.name),
                     HandlerKindAttr::get(builder.getContext(), kind));
  Region *body = state.addRegion();
  Block &entry = body->emplaceBlock();
  if (kind != HandlerKind::Init)
    entry.addArgument(builder.getI32Type(), state.location);
}

PEOp HandlerOp::getPE() { return cast<PEOp>((*this)->getParentOp()); }

void HandlerOp::print(OpAsmPrinter &p) {
  p << " " << stringifyHandlerKind(getKind());
  if (Value port = getPortArgument()) {
    p << "(";
    p.printOperand(port);
    p << ")";
  }
  p.printOptionalAttrDictWithKeyword((*this)->getAttrs(), {getKindAttrName()});
  p << " ";
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/true);
}

ParseResult HandlerOp::parse(OpAsmParser &parser, OperationState &result) {
  StringRef kindName;
  SMLoc kindLoc = parser.getCurrentLocation();
  if (parser.parseKeyword(&kindName))
    return failure();
  std::optional<HandlerKind> kind = symbolizeHandlerKind(kindName);
  if (!kind)
    return parser.emitError(kindLoc, "expected handler kind init, push or "
                                     "pull, got '")
           << kindName << "'";
  result.addAttribute(getKindAttrName(result.name),
                      HandlerKindAttr::get(parser.getContext(), *kind));

  SmallVector<OpAsmParser::Argument> args;
  if (succeeded(parser.parseOptionalLParen())) {
    OpAsmParser::Argument arg;
    if (parser.parseArgument(arg) || parser.parseRParen())
      return failure();
    arg.type = parser.getBuilder().getI32Type();
    args.push_back(arg);
  }
  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  Region *body = result.addRegion();
  SMLoc bodyLoc = parser.getCurrentLocation();
  if (parser.parseRegion(*body, args))
    return failure();
  if (body->empty())
    return parser.emitError(bodyLoc, "handler body must not be empty");
  return success();
}

void HandlerOp::getAsmBlockArgumentNames(Region &region,
                                         OpAsmSetValueNameFn setNameFn) {
  if (&region == &getBody() && !region.empty() && region.getNumArguments() == 1)
    setNameFn(region.getArgument(0), "port");
}

LogicalResult HandlerOp::verifyRegions() {
  Region &body = getBody();
  if (body.empty())
    return emitOpError("must have a body");
  unsigned expected = getKind() == HandlerKind::Init ? 0 : 1;
  if (body.getNumArguments() != expected)
    return emitOpError("a ")
           << stringifyHandlerKind(getKind()) << " handler takes " << expected
           << " argument(s), not " << body.getNumArguments();
  if (expected == 1 && !body.getArgument(0).getType().isInteger(32))
    return emitOpError("the port argument must be i32");
  return success();
}

//===----------------------------------------------------------------------===//
// Terminators and port users
//===----------------------------------------------------------------------===//

/// Check that `port` names a port of the enclosing NetPE of kind `kind`.
static LogicalResult verifyPortUse(Operation *op, FlatSymbolRefAttr port,
                                   PortKind kind,
                                   SymbolTableCollection &symbolTable) {
  auto pe = op->getParentOfType<PEOp>();
  if (!pe)
    return op->emitOpError("must be inside a netvm.pe");
  auto portOp = symbolTable.lookupSymbolIn<PortOp>(pe, port.getAttr());
  if (!portOp)
    return op->emitOpError("refers to unknown port ")
           << port << " of NetPE @" << pe.getSymName();
  if (portOp.getKind() != kind)
    return op->emitOpError("port ")
           << port << " is a " << stringifyPortKind(portOp.getKind())
           << " port; expected a " << stringifyPortKind(kind) << " port";
  return success();
}

LogicalResult SendOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyPortUse(*this, getPortAttr(), PortKind::PushOutput, symbolTable);
}

LogicalResult SendDupOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyPortUse(*this, getPortAttr(), PortKind::PushOutput, symbolTable);
}

LogicalResult ReceiveOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyPortUse(*this, getPortAttr(), PortKind::PullInput, symbolTable);
}

LogicalResult DropOp::verify() {
  HandlerOp handler = getEnclosingHandler(*this);
  if (handler.getKind() != HandlerKind::Push)
    return emitOpError("only ends push handlers; use netvm.ret in ")
           << stringifyHandlerKind(handler.getKind()) << " handlers";
  return success();
}

LogicalResult RetOp::verify() {
  HandlerOp handler = getEnclosingHandler(*this);
  if (handler.getKind() == HandlerKind::Push)
    return emitOpError("cannot end a push handler; use netvm.drop or "
                       "netvm.send");
  return success();
}

//===----------------------------------------------------------------------===//
// Memory operations
//===----------------------------------------------------------------------===//

LogicalResult LoadOp::verify() {
  return verifyExchangeBufferSpace(*this, getSpace());
}

void LoadOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  effects.emplace_back(MemoryEffects::Read::get(), getResource(getSpace()));
  if (!getInBounds())
    effects.emplace_back(MemoryEffects::Write::get(),
                         ExceptionStateResource::get());
}

LogicalResult StoreOp::verify() {
  if (getSpace() == MemSpace::InitData)
    return emitOpError("cannot store to initdata, which is read-only");
  return verifyExchangeBufferSpace(*this, getSpace());
}

void StoreOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  effects.emplace_back(MemoryEffects::Write::get(), getResource(getSpace()));
  if (!getInBounds())
    effects.emplace_back(MemoryEffects::Write::get(),
                         ExceptionStateResource::get());
}

LogicalResult AtomicAddOp::verify() {
  if (getSpace() != MemSpace::Data && getSpace() != MemSpace::Shared)
    return emitOpError("adds to data or shared memory only, not ")
           << stringifyMemSpace(getSpace());
  return success();
}

void AtomicAddOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  effects.emplace_back(MemoryEffects::Read::get(), getResource(getSpace()));
  effects.emplace_back(MemoryEffects::Write::get(), getResource(getSpace()));
  if (!getInBounds())
    effects.emplace_back(MemoryEffects::Write::get(),
                         ExceptionStateResource::get());
}

LogicalResult CopyOp::verify() {
  if (getDstSpace() == MemSpace::InitData)
    return emitOpError("cannot copy into initdata, which is read-only");
  if (failed(verifyExchangeBufferSpace(*this, getSrcSpace())))
    return failure();
  return verifyExchangeBufferSpace(*this, getDstSpace());
}

void CopyOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  effects.emplace_back(MemoryEffects::Read::get(), getResource(getSrcSpace()));
  effects.emplace_back(MemoryEffects::Write::get(), getResource(getDstSpace()));
  if (!getInBounds())
    effects.emplace_back(MemoryEffects::Write::get(),
                         ExceptionStateResource::get());
}

/// Reads of a range of the packet: the packet, plus the exception state
/// unless a dominating check proved the range in bounds.
static void packetRangeEffects(
    Operation *op, bool inBounds,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  effects.emplace_back(MemoryEffects::Read::get(), PacketMemoryResource::get());
  if (!inBounds)
    effects.emplace_back(MemoryEffects::Write::get(),
                         ExceptionStateResource::get());
}

void ChecksumOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  packetRangeEffects(*this, getInBounds(), effects);
}
void PacketCrcOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  packetRangeEffects(*this, getInBounds(), effects);
}
void FieldCmpOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  packetRangeEffects(*this, getInBounds(), effects);
}
void PacketScanOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  packetRangeEffects(*this, getInBounds(), effects);
}

void CheckBoundsOp::print(OpAsmPrinter &p) {
  p << " " << stringifyMemSpace(getSpace()) << "[";
  p.printOperand(getOffset());
  p << "], ";
  if (Value length = getLength())
    p.printOperand(length);
  else
    p << getExtent();
  p.printOptionalAttrDict((*this)->getAttrs(), {"space", "extent"});
}

ParseResult CheckBoundsOp::parse(OpAsmParser &parser, OperationState &result) {
  StringRef spaceName;
  SMLoc spaceLoc = parser.getCurrentLocation();
  OpAsmParser::UnresolvedOperand offset, length;
  if (parser.parseKeyword(&spaceName))
    return failure();
  std::optional<MemSpace> space = symbolizeMemSpace(spaceName);
  if (!space)
    return parser.emitError(spaceLoc, "unknown memory space '")
           << spaceName << "'";
  Type i32 = parser.getBuilder().getI32Type();
  if (parser.parseLSquare() || parser.parseOperand(offset) ||
      parser.parseRSquare() || parser.parseComma() ||
      parser.resolveOperand(offset, i32, result.operands))
    return failure();
  int64_t extent = 0;
  OptionalParseResult hasLength = parser.parseOptionalOperand(length);
  if (hasLength.has_value()) {
    if (failed(*hasLength) ||
        parser.resolveOperand(length, i32, result.operands))
      return failure();
  } else if (parser.parseInteger(extent)) {
    return failure();
  }
  result.addAttribute("space", MemSpaceAttr::get(parser.getContext(), *space));
  result.addAttribute("extent", parser.getBuilder().getI64IntegerAttr(extent));
  return parser.parseOptionalAttrDict(result.attributes);
}

void CheckBoundsOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  // Reads the size of the memory (the packet and info lengths change).
  effects.emplace_back(MemoryEffects::Read::get(), getResource(getSpace()));
  effects.emplace_back(MemoryEffects::Write::get(),
                       ExceptionStateResource::get());
}

LogicalResult CheckBoundsOp::verify() {
  if (getLength() && getExtent() != 0)
    return emitOpError("takes a length operand or a constant extent, not "
                       "both");
  if (getExtent() < 0)
    return emitOpError("extent must not be negative");
  return verifyExchangeBufferSpace(*this, getSpace());
}

//===----------------------------------------------------------------------===//
// Computation
//===----------------------------------------------------------------------===//

/// The constant integer value of an attribute folded operands, if any.
static std::optional<uint32_t> getConstant(Attribute attr) {
  if (auto intAttr = dyn_cast_or_null<IntegerAttr>(attr))
    return static_cast<uint32_t>(intAttr.getValue().getZExtValue());
  return std::nullopt;
}

static IntegerAttr makeI32(MLIRContext *ctx, uint32_t value) {
  return IntegerAttr::get(IntegerType::get(ctx, 32),
                          APInt(32, static_cast<uint64_t>(value)));
}

OpFoldResult ByteSwapOp::fold(FoldAdaptor adaptor) {
  // bswap(bswap(x)) == x
  if (auto inner = getInput().getDefiningOp<ByteSwapOp>())
    return inner.getInput();
  if (auto value = getConstant(adaptor.getInput()))
    return makeI32(getContext(), sem::byteSwap(*value));
  return {};
}

OpFoldResult FindBitOp::fold(FoldAdaptor adaptor) {
  if (auto value = getConstant(adaptor.getInput()))
    return makeI32(getContext(), sem::findBit(*value));
  return {};
}

OpFoldResult BitOp::fold(FoldAdaptor adaptor) {
  auto value = getConstant(adaptor.getInput());
  auto index = getConstant(adaptor.getIndex());
  if (value && index)
    return makeI32(getContext(), sem::bitOp(getKind(), *value, *index));
  return {};
}

LogicalResult HashOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  return success();
}

OpFoldResult HashOp::fold(FoldAdaptor adaptor) {
  SmallVector<uint32_t> words;
  for (Attribute attr : adaptor.getInputs()) {
    auto value = getConstant(attr);
    if (!value)
      return {};
    words.push_back(*value);
  }
  return makeI32(getContext(), sem::hashWords(words));
}

//===----------------------------------------------------------------------===//
// Coprocessors
//===----------------------------------------------------------------------===//

static LogicalResult verifyCoprocessor(Operation *op, StringRef name) {
  auto pe = op->getParentOfType<PEOp>();
  if (!pe)
    return op->emitOpError("must be inside a netvm.pe");
  if (pe.getCoprocessorIndex(name) < 0)
    return op->emitOpError("uses coprocessor '")
           << name << "', which NetPE @" << pe.getSymName()
           << " does not declare";
  return success();
}

LogicalResult CoproInitOp::verify() {
  return verifyCoprocessor(*this, getCopro());
}
LogicalResult CoproReadOp::verify() {
  return verifyCoprocessor(*this, getCopro());
}
LogicalResult CoproWriteOp::verify() {
  return verifyCoprocessor(*this, getCopro());
}
LogicalResult CoproInvokeOp::verify() {
  return verifyCoprocessor(*this, getCopro());
}
LogicalResult CoproExbufOp::verify() {
  return verifyCoprocessor(*this, getCopro());
}

#define GET_OP_CLASSES
#include "NetVM/NetVMOps.cpp.inc"

static bool multipleOf4(Value v, unsigned depth) {
  APInt c;
  if (matchPattern(v, m_ConstantInt(&c)))
    return c.getZExtValue() % 4 == 0;
  if (depth > 8)
    return false;
  Operation *def = v.getDefiningOp();
  if (!def)
    return false;
  if (auto shl = dyn_cast<arith::ShLIOp>(def))
    return matchPattern(shl.getRhs(), m_ConstantInt(&c)) &&
           c.getZExtValue() >= 2 && c.getZExtValue() < 32;
  if (auto mul = dyn_cast<arith::MulIOp>(def))
    return multipleOf4(mul.getLhs(), depth + 1) ||
           multipleOf4(mul.getRhs(), depth + 1);
  if (auto add = dyn_cast<arith::AddIOp>(def))
    return multipleOf4(add.getLhs(), depth + 1) &&
           multipleOf4(add.getRhs(), depth + 1);
  if (auto andi = dyn_cast<arith::AndIOp>(def))
    return (matchPattern(andi.getRhs(), m_ConstantInt(&c)) ||
            matchPattern(andi.getLhs(), m_ConstantInt(&c))) &&
           (c.getZExtValue() & 3) == 0;
  return false;
}

bool netvm::isMultipleOf4(Value v) { return multipleOf4(v, 0); }

bool netvm::isExecutableOp(Operation *op) {
  // Values are integers of at most 64 bits.
  auto integer = [](Type t) {
    auto i = dyn_cast<IntegerType>(t);
    return i && i.getWidth() <= 64;
  };
  if (!llvm::all_of(op->getOperandTypes(), integer) ||
      !llvm::all_of(op->getResultTypes(), integer))
    return false;
  return isa<
      // netvm
      SendOp, DropOp, RetOp, TrapOp, WatchdogOp, LoadOp, StoreOp, CopyOp,
      AtomicAddOp, PacketLengthOp, WireLengthOp, InfoLengthOp, InfoClearOp,
      TimestampOp, RandomOp, CheckOp, CheckBoundsOp, ByteSwapOp, FindBitOp,
      BitOp, HashOp, ChecksumOp, ChecksumAddOp, ChecksumSubOp, CrcOp,
      PacketCrcOp, FieldCmpOp, PacketScanOp, SendDupOp, ReceiveOp,
      ExbufCreateOp, ExbufDeleteOp, CoproInitOp, CoproReadOp, CoproWriteOp,
      CoproInvokeOp, CoproExbufOp,
      // arith, math
      arith::ConstantOp, arith::AddIOp, arith::SubIOp, arith::MulIOp,
      arith::DivUIOp, arith::DivSIOp, arith::RemUIOp, arith::RemSIOp,
      arith::AndIOp, arith::OrIOp, arith::XOrIOp, arith::ShLIOp, arith::ShRUIOp,
      arith::ShRSIOp, arith::CmpIOp, arith::SelectOp, arith::ExtUIOp,
      arith::ExtSIOp, arith::TruncIOp, arith::MaxUIOp, arith::MinUIOp,
      arith::MaxSIOp, arith::MinSIOp, math::CountLeadingZerosOp,
      // cf
      cf::BranchOp, cf::CondBranchOp, cf::SwitchOp>(op);
}

std::string netvm::locationString(Location loc) {
  if (auto file = loc->findInstanceOf<FileLineColLoc>())
    return (file.getFilename().getValue() + ":" + Twine(file.getLine()) + ":" +
            Twine(file.getColumn()))
        .str();
  std::string s;
  llvm::raw_string_ostream os(s);
  loc.print(os);
  return s;
}
