//===- ProtoDB.h - NetPDL protocol database --------------------*- C++ -*-===//
//
// A protocol database in NetPDL, the XML protocol description language of
// NetBee: each protocol describes the layout of its header (<format>) and
// what follows it (<encapsulation>). netvm loads the subset that real
// protocols need (docs/protodb.md): fixed, bit, variable and padding
// fields, inline and included blocks, if/switch/loop with loopctrl, and
// expressions over fields, $packet slices and the standard variables. The
// NetPFL front end generates parsing code from it; no protocol layout lives
// in the compiler.
//
// netvm ships its own database (lib/ProtoDB/netvm.netpdl.xml, built into
// the library); tools take another one with --protodb FILE. Every error in
// a database names the file, line and column.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_PROTODB_PROTODB_H
#define NETVM_PROTODB_PROTODB_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace netvm::protodb {

struct SourceLoc {
  std::string file;
  unsigned line = 0, column = 0;
  /// "file:line:col".
  std::string str() const;
};

/// An expression of NetPDL's expression language.
struct Expr {
  enum Kind {
    Number,        // value
    Field,         // buf2int(name): a field of the header, <= 4 bytes
    PacketSlice,   // buf2int($packet[lhs:size])
    CurrentOffset, // $currentoffset
    ProtoOffset,   // $currentprotooffset
    PacketLength,  // $packetlength, $framelength
    Unary,         // op lhs
    Binary,        // lhs op rhs
  };
  enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    BitAnd,
    BitOr,
    BitNot,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    Not,
  };
  Kind kind = Number;
  Op op = Add;
  uint32_t value = 0; // Number; PacketSlice: the size (1, 2 or 4)
  std::string name;   // Field
  std::unique_ptr<Expr> lhs, rhs;
  SourceLoc loc;
};

/// One element of a <format>, <block> or <encapsulation> sequence.
struct Node {
  enum Kind {
    FixedField,    // size bytes; children: bit sub-fields of those bytes
    BitField,      // mask over size bytes; advances when `last`
    VariableField, // expr bytes
    PaddingField,  // to the next multiple of `size` from the header start
    Block,         // inline group of children (name)
    IncludeBlock,  // the block `name` of this protocol's <format>
    If,            // expr ? children : otherwise
    Switch,        // expr against cases, else otherwise when hasDefault
    Loop,          // loopKind, expr, children
    LoopCtrl,      // isBreak ? break : continue
    NextProto,     // target
  };
  enum LoopKind { SizeLoop, TimesLoop, WhileLoop, DoWhileLoop };
  struct Case {
    uint32_t low = 0, high = 0;
    std::vector<Node> body;
  };

  Kind kind = FixedField;
  std::string name, longName;
  uint32_t size = 0;
  uint32_t mask = 0;
  bool last = false; // BitField: the offset advances after this one
  std::unique_ptr<Expr> expr;
  std::vector<Node> children;
  std::vector<Node> otherwise;
  std::vector<Case> cases;
  bool hasDefault = false;
  LoopKind loopKind = SizeLoop;
  bool isBreak = false;
  const struct Protocol *target = nullptr;
  SourceLoc loc;

  bool isField() const { return kind <= PaddingField; }
};

/// What a filter may name in a protocol: one entry per distinct field
/// name (the first declaration in decoding order).
struct FieldInfo {
  std::string name, longName;
  Node::Kind kind = Node::FixedField;
  uint32_t size = 0; // bytes; 0 when variable
  uint32_t mask = 0; // bit fields
};

struct Protocol {
  std::string name, longName;
  /// netvm extension: equal layers make a header `tunneled` in NetPFL.
  int layer = 0;
  unsigned index = 0; // position in the database
  std::vector<Node> format;
  llvm::StringMap<Node> blocks;
  std::vector<Node> encapsulation;
  std::vector<FieldInfo> fields;
  /// Protocols named by a <nextproto> of the encapsulation.
  std::vector<const Protocol *> successors;
  SourceLoc loc;

  const FieldInfo *field(llvm::StringRef name) const;
};

/// Why a database was refused: where (line and column 0 when the file
/// could not be read) and what.
struct LoadError {
  SourceLoc loc;
  std::string message;
};

class Database {
public:
  /// Parse a NetPDL document (`bufferName` names it in errors), or read and
  /// parse a file; on error return null and set `error`.
  static std::unique_ptr<Database>
  parse(llvm::StringRef text, llvm::StringRef bufferName, LoadError &error);
  static std::unique_ptr<Database> load(llvm::StringRef path, LoadError &error);
  /// netvm's own database, built into the library.
  static const Database &builtin();
  /// The text of the built-in database.
  static llvm::StringRef builtinText();

  const Protocol *lookup(llvm::StringRef name) const;
  /// The protocol parsing starts from (`startproto`).
  const Protocol &start() const { return *start_; }
  llvm::ArrayRef<std::unique_ptr<Protocol>> protocols() const {
    return protocols_;
  }
  /// Up to three known names closest to `name` (edit distance), best
  /// first, for "did you mean" messages.
  static std::vector<std::string>
  nearest(llvm::StringRef name, llvm::ArrayRef<std::string> candidates);
  std::vector<std::string> protocolNames() const;

private:
  friend class Loader;
  std::vector<std::unique_ptr<Protocol>> protocols_;
  llvm::StringMap<Protocol *> byName_;
  const Protocol *start_ = nullptr;
};

/// "did you mean 'a', 'b' or 'c'?" (empty when there is nothing close).
std::string didYouMean(llvm::ArrayRef<std::string> names);

/// Where one field of a decoded header is in the packet.
struct DecodedField {
  std::string name;
  uint32_t offset = 0, size = 0; // bytes
  uint32_t mask = 0;             // bit fields: the bits of the size bytes
  /// The value of a field of 1 to 4 bytes (a bit field's bits shifted
  /// down), as buf2int reads it; nothing for other sizes.
  std::optional<uint32_t> value(llvm::ArrayRef<uint8_t> packet) const;
};

/// One header of a decoded packet.
struct DecodedHeader {
  const Protocol *protocol = nullptr;
  uint32_t offset = 0, length = 0;
  /// Every field decoded, in order (a field decoded twice, such as an
  /// option in a loop, appears each time).
  std::vector<DecodedField> fields;
  /// The header ends beyond the captured bytes (or a database expression
  /// could not be evaluated): the fields decoded so far are here, no
  /// header follows.
  bool truncated = false;

  /// The last field decoded with this name, or null.
  const DecodedField *field(llvm::StringRef name) const;
  std::optional<uint32_t> value(llvm::StringRef name,
                                llvm::ArrayRef<uint8_t> packet) const;
};

/// Decode the headers of `packet` (its captured bytes) from `db`'s
/// startproto on, as the code NetPFL generates parses them
/// (docs/protodb.md): never past the captured bytes, every loop moving
/// forward, at most 64 headers.
std::vector<DecodedHeader> decode(const Database &db,
                                  llvm::ArrayRef<uint8_t> packet);
/// The same from protocol `first`'s header at `offset` on (a packet whose
/// link layer is not the database's: a Linux cooked capture, raw IP).
std::vector<DecodedHeader> decode(const Database &db,
                                  llvm::ArrayRef<uint8_t> packet,
                                  const Protocol &first, uint32_t offset);

} // namespace netvm::protodb

#endif // NETVM_PROTODB_PROTODB_H
