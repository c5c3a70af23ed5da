//===- NetPFL.h - NetPFL filters to the netvm dialect ------------*- C++ -*-===//
//
// The NetPFL front end (docs/netpfl.md): compiles a filter such as
// `tcp.dport == 80 and ip.src == 10.1.1.1`, `ip in ip`, or
// `udp extractfields(ip.src, udp.dport)` into a netvm application with one
// NetPE, `filter`, one source, `in`, and one sink: `match`, or `portN` after
// `returnpacket on port N`. The code that finds the headers is generated
// from a NetPDL protocol database (ProtoDB.h): it parses the packet from
// `startproto` along the database's encapsulation rules, visiting only the
// protocols that can lead to one the filter names.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_FRONTEND_NETPFL_H
#define NETVM_FRONTEND_NETPFL_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace netvm::protodb {
class Database;
}

namespace netvm::netpfl {

struct CompileOptions {
  /// Name of the application.
  std::string appName = "filter";
  /// The file the filter came from; empty for a filter given on the
  /// command line. With a file, errors start with file:line:col.
  std::string fileName;
};

/// The most headers one packet's parse visits; deeper headers are not
/// looked at (so malicious stacks cannot make the filter loop for long).
constexpr unsigned kMaxHeaders = 64;

/// Bytes of info memory per field of `extractfields`: the field's offset
/// in the packet (16 bits), then its length (16 bits; 0 when the packet
/// has no such field), in network byte order.
constexpr unsigned kExtractedFieldSize = 4;

/// Compile `filter` against the protocol database `db`. On error, returns
/// null and sets `error` to a message followed by the filter with a caret
/// under the position.
mlir::OwningOpRef<mlir::ModuleOp> compile(mlir::MLIRContext &context,
                                          llvm::StringRef filter,
                                          const protodb::Database &db,
                                          const CompileOptions &options,
                                          std::string &error);

} // namespace netvm::netpfl

#endif // NETVM_FRONTEND_NETPFL_H
