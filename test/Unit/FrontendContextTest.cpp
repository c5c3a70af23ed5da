//===- FrontendContextTest.cpp - Front ends load the dialects they build --===//
//
// The front ends' entry points take any MLIRContext, not only the driver's
// (which loads netvm's dialects first): each must load the dialects whose
// operations it builds (netvm's, which depends on the others). Found by
// netvm-nvapp-fuzzer, which called application::parseDescription on a context
// with the dialects registered but not loaded: ApplicationOp::create then made
// an unregistered operation, and the parser used a null ApplicationOp.
//
//===----------------------------------------------------------------------===//

#include "netvm/Frontend/Application.h"

#include "NetVM/NetVMOps.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "gtest/gtest.h"

using namespace netvm;

static const char *kForward = "segment .ports\n  push_input in\n"
                              "  push_output out\nends\n"
                              "segment .push\n  pop\n  push 1\n  push 2\n"
                              "  add\n  pop\n  pkt.send out\nends\n";

static unsigned addBuffer(llvm::SourceMgr &sourceMgr, const char *text,
                          const char *name) {
  return sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBuffer(text, name), llvm::SMLoc());
}

TEST(FrontendContext, DescriptionOnAFreshContext) {
  mlir::MLIRContext context;
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  unsigned app = addBuffer(sourceMgr,
                           "application fresh\nsource wire\nsink out\n"
                           "pe fwd = \"fwd.netil\"\n"
                           "wire -> fwd.in\nfwd.out -> out\n",
                           "fresh.nvapp");
  auto load = [&](llvm::StringRef path,
                  mlir::Location) -> std::optional<unsigned> {
    EXPECT_EQ(path, "fwd.netil");
    return addBuffer(sourceMgr, kForward, "fwd.netil");
  };
  mlir::OwningOpRef<mlir::ModuleOp> module =
      application::parseDescription(context, sourceMgr, app, "", load);
  ASSERT_TRUE(module);
  auto apps = module->getBody()->getOps<ApplicationOp>();
  ASSERT_FALSE(apps.empty());
  ApplicationOp application = *apps.begin();
  EXPECT_EQ(application.getSymName(), "fresh");
  EXPECT_TRUE(application.lookupPE("fwd"));
}

TEST(FrontendContext, EmptyDescriptionOnAFreshContext) {
  mlir::MLIRContext context;
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  unsigned app = addBuffer(sourceMgr, "", "empty.nvapp");
  auto load = [](llvm::StringRef, mlir::Location) -> std::optional<unsigned> {
    ADD_FAILURE() << "an empty description names no file";
    return std::nullopt;
  };
  mlir::OwningOpRef<mlir::ModuleOp> module =
      application::parseDescription(context, sourceMgr, app, "", load);
  ASSERT_TRUE(module);
  EXPECT_EQ(llvm::range_size(module->getBody()->getOps<ApplicationOp>()), 1u);
}
