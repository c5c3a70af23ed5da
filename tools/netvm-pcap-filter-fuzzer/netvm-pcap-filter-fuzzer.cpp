//===- netvm-pcap-filter-fuzzer.cpp - Fuzz the tcpdump-expression front end
//===//
//
// The first byte of the input chooses what pcap_compile takes from the
// capture, the rest is the expression, compiled as netvm-run compiles
// `netvm-run -r f.pcap EXPRESSION` (driver::load of a filter) and then
// optimized at -O2. The first byte: bits 0-3 pick the link type from
// kLinkTypes (the ones the front end takes and a few it must refuse),
// bit 4 a byte-swapped savefile, bit 5 a netmask (for `ip broadcast`).
//
//===----------------------------------------------------------------------===//

#include "netvm/Driver/Driver.h"
#include "netvm/Fuzzing/Fuzzing.h"

using namespace netvm;

/// DLT_ values: EN10MB, LINUX_SLL, LINUX_SLL2, RAW (12, 14 and the
/// LINKTYPE 101), NULL, LOOP; then some the front end refuses: IEEE802_11,
/// PPP, FDDI, a number no link type has, a negative one.
static constexpr int kLinkTypes[16] = {1, 113, 276, 12, 14, 101,  0,  108,
                                       1, 113, 105, 9,  10, 4242, -1, 1};

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  fuzzing::Session session;
  driver::Input input;
  input.kind = driver::Input::Kind::Filter;
  input.language = driver::FilterLanguage::PcapFilter;
  input.linkType = kLinkTypes[data[0] & 15];
  input.linkSwapped = data[0] & 16;
  if (data[0] & 32)
    input.netmask = 0xffffff00;
  input.filter = fuzzing::asText(data + 1, size - 1).str();
  session.compile(input);
  return 0;
}
