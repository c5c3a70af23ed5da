//===- AssemblerFuzzTest.cpp - Mutated NetIL never crashes the assembler
//-----===//
//
// Feeds the assembler thousands of deterministic mutations (truncations,
// deleted, duplicated and swapped lines, replaced tokens, random and
// non-ASCII bytes) of the bundled NetIL programs and of the test suite's
// programs. Every mutant must either be rejected with diagnostics or yield
// a NetPE that verifies and that the interpreter runs to a defined end on a
// few packets. A crash fails the whole test binary, which is the point.
//
//===----------------------------------------------------------------------===//

#include "netvm/Driver/Driver.h"
#include "netvm/Frontend/NetIL.h"
#include "netvm/Interpreter/Interpreter.h"

#include "NetVM/NetVMOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "gtest/gtest.h"

#include <cstdio>
#include <string>
#include <vector>

using namespace netvm;

namespace {

class Rng {
public:
  explicit Rng(uint64_t seed) : state(seed * 0x9E3779B97F4A7C15ull + 7) {}
  uint64_t next() {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1Dull;
  }
  size_t below(size_t n) { return n ? next() % n : 0; }

private:
  uint64_t state;
};

/// NetIL programs to mutate: the examples and the test suite's inputs.
std::vector<std::string> loadCorpus() {
  std::vector<std::string> corpus;
  for (const char *dir :
       {"examples/netil", "test/Frontend/NetIL", "test/Interpreter"}) {
    llvm::SmallString<256> root(NETVM_SOURCE_DIR);
    llvm::sys::path::append(root, dir);
    std::error_code ec;
    for (llvm::sys::fs::recursive_directory_iterator it(root, ec), end;
         it != end && !ec; it.increment(ec)) {
      llvm::StringRef path = it->path();
      if (!path.ends_with(".netil"))
        continue;
      if (auto buffer = llvm::MemoryBuffer::getFile(path))
        corpus.push_back((*buffer)->getBuffer().str());
    }
  }
  return corpus;
}

const char *const kTokens[] = {
    "push",       "pop",        "add",        "jcmp.eq",   "jump",
    "switch",     "ret",        "pkt.send",   "upload.16", "pstore.32",
    "locload",    "locstore",   "segment",    "ends",      ".push",
    ".init",      ".ports",     ".data",      ".locals",   "0",
    "0xffffffff", "4294967296", "-1",         "1.2.3.4",   "aa:bb:cc:dd",
    ":",          ",",          "(",          ")",         "label:",
    "default:",   "equ",        "\"str",      "\"\\x4",    "copro.init",
    "mod",        "hash",       "popi 255",   "switch 2:", "9: label",
    "in",         "out",        "push_input", "db",        ".maxstacksize 1"};

std::string mutate(const std::string &text, Rng &rng) {
  std::string s = text;
  unsigned rounds = 1 + rng.below(3);
  for (unsigned r = 0; r < rounds; ++r) {
    llvm::SmallVector<llvm::StringRef> lines;
    llvm::StringRef(s).split(lines, '\n');
    std::vector<std::string> ls(lines.begin(), lines.end());
    switch (rng.below(8)) {
    case 0: // truncate
      s.resize(rng.below(s.size() + 1));
      continue;
    case 1: // delete a line
      if (!ls.empty())
        ls.erase(ls.begin() + rng.below(ls.size()));
      break;
    case 2: // duplicate a line
      if (!ls.empty()) {
        size_t i = rng.below(ls.size());
        ls.insert(ls.begin() + rng.below(ls.size()), ls[i]);
      }
      break;
    case 3: // swap two lines
      if (ls.size() > 1)
        std::swap(ls[rng.below(ls.size())], ls[rng.below(ls.size())]);
      break;
    case 4: { // replace a word with a token
      size_t at = rng.below(s.size() + 1);
      size_t end = s.find_first_of(" \t\n", at);
      if (end == std::string::npos)
        end = s.size();
      s.replace(at, end - at, kTokens[rng.below(std::size(kTokens))]);
      continue;
    }
    case 5: // insert a token
      s.insert(rng.below(s.size() + 1),
               std::string(" ") + kTokens[rng.below(std::size(kTokens))] + " ");
      continue;
    case 6: // random bytes, including NUL and non-ASCII
      for (unsigned k = 0, n = 1 + rng.below(4); k < n; ++k)
        s.insert(s.begin() + rng.below(s.size() + 1),
                 static_cast<char>(rng.below(256)));
      continue;
    case 7: // flip a byte
      if (!s.empty())
        s[rng.below(s.size())] ^= static_cast<char>(1 + rng.below(255));
      continue;
    }
    s = llvm::join(ls, "\n");
  }
  return s;
}

} // namespace

TEST(AssemblerFuzz, MutantsNeverCrash) {
  std::vector<std::string> corpus = loadCorpus();
  ASSERT_GE(corpus.size(), 2u) << "no NetIL corpus under " << NETVM_SOURCE_DIR;

  mlir::DialectRegistry registry;
  driver::registerDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  unsigned diagnostics = 0;
  context.getDiagEngine().registerHandler(
      [&](mlir::Diagnostic &) { ++diagnostics; });

  Rng rng(2026);
  unsigned accepted = 0, rejected = 0;
  const unsigned kMutants = 4000;
  for (unsigned i = 0; i < kMutants; ++i) {
    std::string source = mutate(corpus[rng.below(corpus.size())], rng);
    llvm::SourceMgr sourceMgr;
    unsigned id =
        sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(
                                         source, "mutant" + std::to_string(i)),
                                     llvm::SMLoc());
    mlir::OpBuilder builder(&context);
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::ModuleOp::create(builder.getUnknownLoc());
    builder.setInsertionPointToEnd(module->getBody());
    auto app = ApplicationOp::create(builder, builder.getUnknownLoc(), "fuzz");
    unsigned before = diagnostics;
    PEOp pe = netil::assemble(sourceMgr, id, app, "pe");
    if (!pe) {
      ++rejected;
      EXPECT_GT(diagnostics, before)
          << "mutant " << i << " was rejected without a diagnostic:\n"
          << source;
      continue;
    }
    ++accepted;
    ASSERT_TRUE(mlir::succeeded(mlir::verify(pe)))
        << "mutant " << i << " assembled into invalid IR:\n"
        << source;
    // Instantiate it and run its init handler (packets are the business of
    // the next test, which goes through the driver's wiring).
    interp::Options options;
    options.watchdogBudget = 5000;
    if (auto vm = interp::Interpreter::create(app, options))
      vm->initialize();
  }
  std::printf("fuzz: %u mutants accepted, %u rejected\n", accepted, rejected);
  // The mutations must exercise both outcomes.
  EXPECT_GT(accepted, kMutants / 20);
  EXPECT_GT(rejected, kMutants / 4);
}

TEST(AssemblerFuzz, MutantApplicationsRun) {
  // Whole applications through the driver, with packets of every size.
  std::vector<std::string> corpus = loadCorpus();
  mlir::DialectRegistry registry;
  driver::registerDialects(registry);
  mlir::MLIRContext context(registry);
  context.getDiagEngine().registerHandler([](mlir::Diagnostic &) {});
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("netvm-fuzz", dir));

  Rng rng(7);
  unsigned ran = 0;
  for (unsigned i = 0; i < 400; ++i) {
    llvm::SmallString<128> path(dir);
    llvm::sys::path::append(path, "m" + std::to_string(i) + ".netil");
    {
      std::error_code ec;
      llvm::raw_fd_ostream os(path, ec);
      ASSERT_FALSE(ec);
      os << mutate(corpus[rng.below(corpus.size())], rng);
    }
    llvm::SourceMgr sourceMgr;
    auto module =
        driver::loadApplication(context, sourceMgr, {std::string(path)});
    if (!module || mlir::failed(driver::optimize(*module, i % 3)))
      continue;
    interp::Options options;
    options.watchdogBudget = 5000;
    auto vm =
        interp::Interpreter::create(driver::getApplication(*module), options);
    if (!vm)
      continue;
    vm->initialize();
    for (size_t source = 0; source < vm->sourceNames().size(); ++source)
      for (size_t len : {0, 1, 13, 14, 34, 60, 1514}) {
        interp::Packet packet;
        for (size_t b = 0; b < len; ++b)
          packet.bytes.push_back(static_cast<uint8_t>(rng.next()));
        vm->push(source, packet);
      }
    ++ran;
  }
  llvm::sys::fs::remove_directories(dir);
  std::printf("fuzz: %u mutant applications ran\n", ran);
  EXPECT_GT(ran, 20u);
}
