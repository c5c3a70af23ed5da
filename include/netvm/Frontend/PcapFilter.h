//===- PcapFilter.h - tcpdump expressions to the netvm dialect ---*- C++ -*-===//
//
// The pcap-filter front end: compiles an expression in tcpdump's language
// (man pcap-filter) for Ethernet links into a netvm application with one
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
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace netvm::pcapfilter {

struct CompileOptions {
  /// Name of the application.
  std::string appName = "filter";
  /// Where the expression came from, for locations ("<expression>" or a
  /// file name).
  std::string sourceName = "<expression>";
  /// The netmask of the capture's network, for `ip broadcast` (libpcap's
  /// pcap_compile argument); without one, `ip broadcast` is an error.
  std::optional<uint32_t> netmask;
};

/// Compile `expression`. On error, returns null and sets `error` to a
/// message naming the position, followed by the expression with a caret
/// under it.
mlir::OwningOpRef<mlir::ModuleOp> compile(mlir::MLIRContext &context,
                                          llvm::StringRef expression,
                                          const CompileOptions &options,
                                          std::string &error);

} // namespace netvm::pcapfilter

#endif // NETVM_FRONTEND_PCAPFILTER_H
