//===- NetPFL.h - NetPFL filters to the netvm dialect ------------*- C++
//-*-===//
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

#include <string>

namespace llvm {
class SourceMgr;
}

namespace netvm::protodb {
class Database;
}

namespace netvm::netpfl {

struct CompileOptions {
  /// Name of the application.
  std::string appName = "filter";
  /// The NetPDL protocol database the filter names protocols of; null for
  /// netvm's own (protodb::Database::builtin()).
  const protodb::Database *database = nullptr;
};

/// The most headers one packet's parse visits; deeper headers are not
/// looked at (so malicious stacks cannot make the filter loop for long).
constexpr unsigned kMaxHeaders = 64;

/// Bytes of info memory per field of `extractfields`: the field's offset
/// in the packet (16 bits), then its length (16 bits; 0 when the packet
/// has no such field), in network byte order.
constexpr unsigned kExtractedFieldSize = 4;

/// Compile the filter in buffer `bufferId` of `sourceMgr` (whose
/// identifier names it: a file name, or "<expression>" for a filter given
/// on a command line) against `options.database`. Errors go to the
/// context's diagnostic handlers, each at the FileLineColLoc (buffer
/// identifier, 1-based line and column) of its place in the buffer, with
/// notes where there is more to say (such as the database element an
/// error comes from); then the result is null.
mlir::OwningOpRef<mlir::ModuleOp> compile(mlir::MLIRContext &context,
                                          llvm::SourceMgr &sourceMgr,
                                          unsigned bufferId,
                                          const CompileOptions &options);

} // namespace netvm::netpfl

#endif // NETVM_FRONTEND_NETPFL_H
