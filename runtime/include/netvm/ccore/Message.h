//===- Message.h - C-CORE message formats, messages and channels -*- C++
//-*-===//
//
// The data plane of the C-CORE layer (docs/ccore.md): message formats read
// from a small schema language (formats with an id and a size, fields with
// a type, an offset and a size), messages encoded and decoded by a format,
// channels keyed by (source, destination, port, format id) as in the
// C-CORE paper, and the classifier that sorts arriving messages by their
// stream id into one queue per format. Every message starts with an 8-byte
// header: stream id (32 bits), format id (16 bits) and message length (16
// bits), all big-endian like every field. Plain C++17: no LLVM, no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_CCORE_MESSAGE_H
#define NETVM_CCORE_MESSAGE_H

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace netvm::ccore {

/// Bytes of the header every message starts with.
constexpr uint32_t headerBytes = 8;
/// Where the header's words are.
constexpr uint32_t streamOffset = 0, formatOffset = 4, lengthOffset = 6;

enum class FieldType : uint8_t { U8, U16, U32, Bytes };

/// "u8", "u16", "u32" or "bytes".
const char *fieldTypeName(FieldType type);

struct Field {
  std::string name;
  FieldType type = FieldType::U32;
  uint32_t offset = 0, size = 0;
  /// Where the field was declared (the schema file's line and column).
  unsigned line = 0, column = 0;

  bool isInteger() const { return type != FieldType::Bytes; }
};

struct Format {
  std::string name;
  uint16_t id = 0;
  /// Bytes of a message of this format, header included.
  uint32_t size = 0;
  std::vector<Field> fields;
  unsigned line = 0, column = 0;

  const Field *field(const std::string &name) const;
};

struct Schema {
  std::vector<Format> formats;

  const Format *format(const std::string &name) const;
  const Format *formatById(uint16_t id) const;
};

/// Parses schema text; `file` names it in errors. On failure returns
/// nothing and sets `error` to every problem found, one per line, as
/// "file:line:col: error: message".
std::optional<Schema> parseSchema(const std::string &text,
                                  const std::string &file, std::string &error);
/// Reads and parses a schema file.
std::optional<Schema> loadSchema(const std::string &path, std::string &error);

/// The value of one field: `number` for integer fields, `bytes` for byte
/// fields.
struct Value {
  uint32_t number = 0;
  std::vector<uint8_t> bytes;
};
using Values = std::map<std::string, Value>;

/// A message of `format` on stream `stream`: the header, then each field
/// of `values` at its offset (fields not given are zero). False with
/// `error` if a value names no field of the format, does not fit its field
/// (an integer too large, bytes longer than the field).
bool encode(const Format &format, uint32_t stream, const Values &values,
            std::vector<uint8_t> &message, std::string &error);

/// The header of a message, if it is at least headerBytes long.
struct Header {
  uint32_t stream = 0;
  uint16_t format = 0, length = 0;
};
std::optional<Header> readHeader(const uint8_t *bytes, size_t length);

/// Every field of a message of `format`. False with `error` if the message
/// is shorter than the format, or its header names another format.
bool decode(const Format &format, const uint8_t *bytes, size_t length,
            Values &values, std::string &error);

/// A reproducible stream of messages of one format, for tests, demos and
/// benchmarks: every integer field drawn from its range (the whole type
/// unless `ranges` says), bytes fields random, streams taken in turn.
struct GenerateOptions {
  uint64_t count = 1000, seed = 1;
  std::vector<uint32_t> streams = {1};
  std::map<std::string, std::pair<uint32_t, uint32_t>> ranges;
  /// Percentage of malformed messages: truncated, or of another format id.
  unsigned malformedPercent = 0;
};
std::vector<std::vector<uint8_t>>
generateMessages(const Format &format, const GenerateOptions &options);

/// A channel of the C-CORE paper: (source, destination, port, format id).
struct ChannelKey {
  std::string source, destination;
  uint16_t port = 0;
  uint16_t format = 0;

  bool operator<(const ChannelKey &other) const {
    return std::tie(source, destination, port, format) <
           std::tie(other.source, other.destination, other.port, other.format);
  }
  bool operator==(const ChannelKey &other) const {
    return !(*this < other) && !(other < *this);
  }
};

/// Sorts messages into one queue per format by their stream id. A stream
/// is opened on a channel, whose format its messages must carry. Nothing
/// is lost silently: a message of an unknown stream, of another format than
/// its channel's, or shorter than its format is counted as rejected with
/// the reason.
class Classifier {
public:
  explicit Classifier(const Schema &schema);

  /// Opens a channel (idempotent); false with `error` if the key's format
  /// is not in the schema.
  bool openChannel(const ChannelKey &key, std::string &error);
  /// Binds `stream` to an open channel; false with `error` if the channel
  /// is not open or the stream is bound to another channel.
  bool openStream(uint32_t stream, const ChannelKey &key, std::string &error);

  enum class Verdict : uint8_t {
    Queued,
    Short,         // shorter than the header or the format
    UnknownStream, // no channel has the stream
    WrongFormat,   // the header's format is not the channel's
  };
  static const char *verdictName(Verdict verdict);

  Verdict classify(const uint8_t *bytes, size_t length);

  /// The queue of a format (null if the schema has no such format).
  std::deque<std::vector<uint8_t>> *queue(uint16_t format);

  struct Counters {
    uint64_t queued = 0, rejected[4] = {};
  };
  const Counters &counters() const { return tally; }
  /// Messages queued per channel.
  uint64_t channelCount(const ChannelKey &key) const;

private:
  const Schema &schema;
  std::map<ChannelKey, uint64_t> channels;
  std::map<uint32_t, ChannelKey> streams;
  std::map<uint16_t, std::deque<std::vector<uint8_t>>> queues;
  Counters tally;
};

/// Reliable UDP (docs/ccore.md, "Reliable UDP"): a message travels as
/// fragments of at most `payload` bytes, each behind a 16-byte header, all
/// big-endian: stream id (the message's), the message's sequence number
/// (the sender numbers what it sends from 0), the fragment's index and the
/// fragment count (16 bits each), the payload's length and the message's (16
/// bits each).
constexpr uint32_t rudpHeaderBytes = 16;
/// At most this many fragments a message (the reassembler's bit mask).
constexpr uint32_t rudpMaxFragments = 32;

struct FragmentOptions {
  /// Payload bytes of a fragment (the last one may carry fewer).
  uint32_t payload = 256;
  /// Percentage of fragments the network loses (dropped after
  /// fragmenting, from `seed`), to exercise loss reporting.
  unsigned lossPercent = 0;
  uint64_t seed = 1;
  /// The first message's sequence number.
  uint32_t firstSequence = 0;
};

/// Fragment `index` of `message` (sequence number `sequence`, fragments of
/// `payload` bytes), written into `fragment`. The message fits (checked by
/// the caller: at least a header, at most rudpMaxFragments fragments).
void makeFragment(const std::vector<uint8_t> &message, uint32_t sequence,
                  uint32_t index, uint32_t payload,
                  std::vector<uint8_t> &fragment);
/// Fragments of a message of `length` bytes.
inline uint32_t fragmentCount(size_t length, uint32_t payload) {
  return payload ? uint32_t((length + payload - 1) / payload) : 0;
}

/// The return path of reliable UDP with retransmission (docs/ccore.md,
/// "Retransmission"): the receiver's control messages are 8 bytes, a kind
/// and a sequence number (big-endian words). ACK n: every message before n
/// was delivered; NACK n: a later message's fragment came while n was
/// expected, resend from n. An idle gap of the sender is a fragment header
/// with fragment count 0 (its wire length is the gap).
constexpr uint32_t rudpAck = 1, rudpNack = 2, rudpControlBytes = 8;

/// The fragments of `messages` in order (message k has sequence number
/// firstSequence + k), less the lost ones. False with `error` if a
/// message is shorter than a C-CORE header or needs more than
/// rudpMaxFragments fragments, or the payload size is 0.
bool fragmentMessages(const std::vector<std::vector<uint8_t>> &messages,
                      const FragmentOptions &options,
                      std::vector<std::vector<uint8_t>> &fragments,
                      std::string &error);

} // namespace netvm::ccore

#endif // NETVM_CCORE_MESSAGE_H
