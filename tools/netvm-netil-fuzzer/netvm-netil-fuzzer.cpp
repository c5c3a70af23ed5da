//===- netvm-netil-fuzzer.cpp - Fuzz the NetIL assembler ------------------===//
//
// The input is one NetIL file, loaded as `netc prog.netil` loads it
// (driver::load: parse, static checks, stack code to SSA, wiring,
// verification), then optimized at -O2 when it assembles.
//
//===----------------------------------------------------------------------===//

#include "netvm/Driver/Driver.h"
#include "netvm/Fuzzing/Fuzzing.h"

using namespace netvm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzzing::Session session;
  driver::Input input;
  input.files = {"fuzz.netil"};
  input.buffers = {{"fuzz.netil", fuzzing::asText(data, size).str()}};
  session.compile(input);
  return 0;
}
