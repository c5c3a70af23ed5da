//===- MEDialectTest.cpp - The me dialect against the instruction table ---===//
//
// The me dialect and the instruction table (MEInstrs.def) describe the same
// machine: every row of the table is written by an operation of the
// dialect (medialect::rowClaims) or left to the packet path on purpose
// (medialect::rowExclusions), every claim names a row and an operation
// that exist, and every operation either claims rows or is one of the
// structural and pseudo operations listed here. Adding an instruction to
// the table or an operation to the dialect without the other fails here.
//
// The round trip and the verifier diagnostics of test/Dialect/ME (which
// netvm-opt runs as lit tests) are checked here too, with the dialect
// loaded in a context of its own, so a failure names the chunk.
//
//===----------------------------------------------------------------------===//

#include "ME/MEDialect.h"
#include "ME/MEOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <string>
#include <vector>

using namespace mlir;
using namespace netvm;
namespace med = netvm::medialect;

namespace {

/// Operations that write no row of the table themselves: the function, the
/// values the packet path provides, and the pseudo-instructions the emitter
/// expands into several rows (or into the packet path's code).
const char *const structuralOps[] = {
    "me.func",        "me.arg",      "me.hdr",      "me.setcc",
    "me.select",      "me.pkt_read", "me.switch",   "me.send",
    "me.drop",        "me.raise",    "me.watchdog", "me.send_copy",
    "me.state_token", "me.pkt_fill", "me.pkt_next"};

std::vector<const me::InstrInfo *> tableRows() {
  size_t count = 0;
  const me::InstrInfo *table = me::instrTable(count);
  std::vector<const me::InstrInfo *> rows;
  for (size_t i = 0; i < count; ++i)
    rows.push_back(&table[i]);
  return rows;
}

std::string rowName(const me::InstrInfo &row) {
  std::string name = row.mnemonic;
  if (*row.sub)
    name += std::string("[") + row.sub + "]";
  return name;
}

bool claims(const med::RowClaim &claim, const me::InstrInfo &row) {
  return llvm::StringRef(claim.mnemonic) == row.mnemonic &&
         (llvm::StringRef(claim.sub) == "*" ||
          llvm::StringRef(claim.sub) == row.sub);
}

bool excluded(const me::InstrInfo &row) {
  return llvm::any_of(med::rowExclusions(), [&](const med::RowExclusion &e) {
    return llvm::StringRef(e.mnemonic) == row.mnemonic;
  });
}

class MEDialectTest : public ::testing::Test {
protected:
  MEDialectTest() { context.loadDialect<med::MEDialect>(); }

  /// The operations the dialect registers, by name.
  llvm::StringSet<> dialectOps() {
    llvm::StringSet<> names;
    for (RegisteredOperationName name : context.getRegisteredOperations())
      if (name.getDialectNamespace() == "me")
        names.insert(name.getStringRef());
    return names;
  }

  static std::string readSource(const std::string &relative) {
    std::string path = std::string(NETVM_SOURCE_DIR) + "/" + relative;
    auto buffer = llvm::MemoryBuffer::getFile(path);
    if (!buffer) {
      ADD_FAILURE() << "cannot read " << path;
      return "";
    }
    return (*buffer)->getBuffer().str();
  }

  MLIRContext context;
};

// (a) Every row of the table is claimed by an operation or excluded with a
// reason, never both.
TEST_F(MEDialectTest, EveryRowIsClaimedOrExcluded) {
  for (const me::InstrInfo *row : tableRows()) {
    bool claimed = llvm::any_of(med::rowClaims(), [&](const med::RowClaim &c) {
      return claims(c, *row);
    });
    bool isExcluded = excluded(*row);
    EXPECT_TRUE(claimed || isExcluded)
        << rowName(*row)
        << " has no operation in the me dialect (add one to MEOps.td and a "
           "claim to rowClaims(), or an exclusion with its reason)";
    EXPECT_FALSE(claimed && isExcluded)
        << rowName(*row) << " is both claimed and excluded";
  }
}

TEST_F(MEDialectTest, ExclusionsHaveReasonsAndRows) {
  for (const med::RowExclusion &e : med::rowExclusions()) {
    EXPECT_NE(med::lookupRow(e.mnemonic, ""), nullptr)
        << "exclusion of '" << e.mnemonic << "', not a row of the table";
    EXPECT_NE(llvm::StringRef(e.reason), "") << e.mnemonic;
  }
}

// (b) Every claim names a row of the table and a registered operation of
// the me dialect.
TEST_F(MEDialectTest, ClaimsNameRowsAndOperations) {
  std::vector<const me::InstrInfo *> rows = tableRows();
  for (const med::RowClaim &claim : med::rowClaims()) {
    std::string what = std::string(claim.operation) + " -> " + claim.mnemonic +
                       " '" + claim.sub + "'";
    if (llvm::StringRef(claim.sub) == "*") {
      EXPECT_TRUE(llvm::any_of(rows,
                               [&](const me::InstrInfo *row) {
                                 return llvm::StringRef(claim.mnemonic) ==
                                        row->mnemonic;
                               }))
          << what << ": the table has no row of this mnemonic";
    } else {
      EXPECT_NE(med::lookupRow(claim.mnemonic, claim.sub), nullptr)
          << what << ": not a row of the table";
    }
    EXPECT_TRUE(
        RegisteredOperationName::lookup(claim.operation, &context).has_value())
        << what << ": not an operation of the me dialect";
  }
}

// (c) Every operation of the dialect claims a row or is structural; the
// structural list names operations that exist and claim nothing.
TEST_F(MEDialectTest, EveryOperationClaimsRowsOrIsStructural) {
  llvm::StringSet<> structural;
  for (const char *name : structuralOps)
    structural.insert(name);
  llvm::StringSet<> claimed;
  for (const med::RowClaim &claim : med::rowClaims())
    claimed.insert(claim.operation);

  llvm::StringSet<> ops = dialectOps();
  EXPECT_FALSE(ops.empty());
  for (const auto &entry : ops) {
    llvm::StringRef name = entry.getKey();
    EXPECT_TRUE(claimed.contains(name) || structural.contains(name))
        << name.str()
        << " claims no row of the instruction table and is not listed as "
           "structural in MEDialectTest";
    EXPECT_FALSE(claimed.contains(name) && structural.contains(name))
        << name.str() << " claims rows but is listed as structural";
  }
  for (const char *name : structuralOps)
    EXPECT_TRUE(RegisteredOperationName::lookup(name, &context).has_value())
        << name << " is listed as structural but is not an operation";
}

TEST_F(MEDialectTest, ConditionsInvertToConditions) {
  for (const me::InstrInfo *row : tableRows()) {
    if (row->format != me::Format::Branch ||
        llvm::StringRef(row->mnemonic) == "br")
      continue;
    llvm::StringRef inverse = med::invertCondition(row->mnemonic);
    EXPECT_NE(inverse, "") << row->mnemonic << " has no inverse";
    EXPECT_NE(med::lookupRow(inverse, ""), nullptr) << inverse.str();
    EXPECT_EQ(med::invertCondition(inverse), row->mnemonic);
  }
}

// test/Dialect/ME/roundtrip.mlir: parse, print, parse again gives the same
// text, in the custom and in the generic form; every operation of the
// dialect appears in it.
TEST_F(MEDialectTest, RoundTrip) {
  std::string source = readSource("test/Dialect/ME/roundtrip.mlir");
  ASSERT_FALSE(source.empty());
  ParserConfig config(&context);
  OwningOpRef<ModuleOp> first =
      parseSourceString<ModuleOp>(source, config, "roundtrip.mlir");
  ASSERT_TRUE(first) << "roundtrip.mlir does not parse";

  llvm::StringSet<> seen;
  first->walk(
      [&](Operation *op) { seen.insert(op->getName().getStringRef()); });
  for (const auto &entry : dialectOps())
    EXPECT_TRUE(seen.contains(entry.getKey()))
        << entry.getKey().str() << " is missing from roundtrip.mlir";

  for (bool generic : {false, true}) {
    OpPrintingFlags flags;
    if (generic)
      flags.printGenericOpForm();
    std::string printed;
    llvm::raw_string_ostream os(printed);
    first->print(os, flags);
    OwningOpRef<ModuleOp> second =
        parseSourceString<ModuleOp>(printed, config, "printed.mlir");
    ASSERT_TRUE(second) << "the printed form does not parse:\n" << printed;
    std::string firstText, secondText;
    llvm::raw_string_ostream a(firstText), b(secondText);
    first->print(a);
    second->print(b);
    EXPECT_EQ(firstText, secondText) << (generic ? "generic" : "custom");
  }
}

// Known problems of the dialect, disabled until they are fixed (run them
// with --gtest_also_run_disabled_tests).
//
// The unary ALU operations print as `me.alu "b" %x`, which the parser
// reads as the optional `a` operand and then wants the `,` before `b`: the
// printed form of every handler with a move or a shift does not parse
// (netc --target=me -emit=me output included).
TEST_F(MEDialectTest, DISABLED_UnaryAluRoundTrip) {
  const char *source = R"mlir(
    me.func @p.push attributes {handler = "push", pe = "p"} {
      %h = me.hdr 3
      %e = me.alu "b" %h {shift = ">>", amount = 16 : i32}
      %n = me.alu "~b" %e
      me.drop
    }
  )mlir";
  ParserConfig config(&context);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(source, config, "unary.mlir");
  EXPECT_TRUE(module);
}

// A shift by a register amount (alu_shf with an indirect shift) needs `a`
// and ALU operation b or ~b: netvm-to-me writes one for every shift by a
// non-constant amount, so the verifier must accept it.
TEST_F(MEDialectTest, IndirectShiftVerifies) {
  OpBuilder b(&context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(b.getUnknownLoc());
  b.setInsertionPointToEnd(module->getBody());
  auto func =
      med::FuncOp::create(b, b.getUnknownLoc(), b.getStringAttr("p.push"),
                          b.getStringAttr("p"), b.getStringAttr("push"));
  b.createBlock(&func.getBody());
  Value x = med::ArgOp::create(b, b.getUnknownLoc(), b.getI32Type(), "length");
  Value n = med::ArgOp::create(b, b.getUnknownLoc(), b.getI32Type(), "port");
  med::AluOp::create(b, b.getUnknownLoc(), b.getI32Type(), b.getStringAttr("b"),
                     n, x, b.getStringAttr("<<indirect"), IntegerAttr());
  med::DropOp::create(b, b.getUnknownLoc());
  context.printOpOnDiagnostic(false);
  EXPECT_TRUE(succeeded(verify(*module)));
}

// test/Dialect/ME/invalid.mlir, chunk by chunk, with -verify-diagnostics'
// handler: each chunk reports exactly the errors it expects.
TEST_F(MEDialectTest, VerifierDiagnostics) {
  std::string source = readSource("test/Dialect/ME/invalid.mlir");
  ASSERT_FALSE(source.empty());
  std::vector<std::string> chunks;
  llvm::StringRef rest(source);
  const llvm::StringRef marker = "// -----";
  while (true) {
    size_t at = rest.find(marker);
    chunks.push_back(rest.substr(0, at).str());
    if (at == llvm::StringRef::npos)
      break;
    rest = rest.substr(at + marker.size());
  }
  EXPECT_GE(chunks.size(), 20u);
  for (auto [i, chunk] : llvm::enumerate(chunks)) {
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(chunk, "invalid.mlir chunk " +
                                                        std::to_string(i)),
        llvm::SMLoc());
    MLIRContext chunkContext;
    chunkContext.loadDialect<med::MEDialect>();
    chunkContext.printOpOnDiagnostic(false);
    SourceMgrDiagnosticVerifierHandler handler(sourceMgr, &chunkContext);
    ParserConfig config(&chunkContext);
    OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, config);
    EXPECT_FALSE(module) << "chunk " << i << " verifies:\n" << chunk;
    EXPECT_TRUE(succeeded(handler.verify()))
        << "chunk " << i << " does not report what it expects:\n"
        << chunk;
  }
}

} // namespace
