//===- MEDialect.cpp - The me dialect -------------------------------------===//

#include "ME/MEDialect.h"
#include "ME/MEOps.h"

using namespace mlir;
using namespace netvm::medialect;

#include "ME/MEDialect.cpp.inc"

void MEDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ME/MEOps.cpp.inc"
      >();
}
