//===- netvm-netpfl-fuzzer.cpp - Fuzz the NetPFL front end ----------------===//
//
// The input is a NetPFL filter, compiled against netvm's own NetPDL
// database as `netc --pfl FILTER` compiles it (driver::load of a filter),
// then optimized at -O2.
//
//===----------------------------------------------------------------------===//

#include "netvm/Driver/Driver.h"
#include "netvm/Fuzzing/Fuzzing.h"

using namespace netvm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzzing::Session session;
  driver::Input input;
  input.kind = driver::Input::Kind::Filter;
  input.language = driver::FilterLanguage::NetPFL;
  input.filter = fuzzing::asText(data, size).str();
  session.compile(input);
  return 0;
}
