//===- PcapFilter.h - tcpdump expressions to the netvm dialect ---*- C++
//-*-===//
//
// The pcap-filter front end: compiles an expression in tcpdump's language
// (man pcap-filter) for a link type (Ethernet, Linux cooked v1 and v2, raw
// IP, BSD and OpenBSD loopback) into a netvm application with one
// NetPE, `filter`, one source, `in`, and one sink, `match`: a packet the
// expression accepts leaves through `match`, the others are dropped. The
// semantics are libpcap's, checked against libpcap by the test suite
// (test/PcapFilter), including what a packet too short for a field does:
// like libpcap's bpf_filter, the whole expression then rejects the packet.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_FRONTEND_PCAPFILTER_H
#define NETVM_FRONTEND_PCAPFILTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace llvm {
class SourceMgr;
}

namespace netvm::pcapfilter {

struct CompileOptions {
  /// Name of the application.
  std::string appName = "filter";
  /// The netmask of the capture's network, for `ip broadcast` (libpcap's
  /// pcap_compile argument); without one, `ip broadcast` is an error.
  std::optional<uint32_t> netmask;
  /// The link type of the packets (libpcap's DLT_ value, as pcap_datalink
  /// gives it: DLT_RAW is 12 whatever the file says), and whether the
  /// savefile's byte order is the opposite of this machine's (libpcap's
  /// pcap_is_swapped; it changes the loopback family DLT_NULL compares).
  /// The application records a link type other than Ethernet (its
  /// `link_type`).
  int linkType = 1;
  bool swapped = false;
};

/// Whether compile() takes `linkType`.
bool isSupportedLinkType(int linkType);

/// Compile the expression in buffer `bufferId` of `sourceMgr`, whose
/// identifier names it (a file name, or "<expression>" for an expression
/// given on a command line). Errors go to the context's diagnostic
/// handlers, each at the FileLineColLoc (buffer identifier, 1-based line
/// and column) of its place in the buffer; then the result is null.
mlir::OwningOpRef<mlir::ModuleOp> compile(mlir::MLIRContext &context,
                                          llvm::SourceMgr &sourceMgr,
                                          unsigned bufferId,
                                          const CompileOptions &options);

} // namespace netvm::pcapfilter

#endif // NETVM_FRONTEND_PCAPFILTER_H
