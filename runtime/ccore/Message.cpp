//===- Message.cpp - C-CORE schemas, messages and the classifier ----------===//
//
// The schema parser is a hand-written tokenizer and recursive descent over
// the grammar of docs/ccore.md; it keeps going after an error in a field so
// that one run reports every mistake of a file, each with its line and
// column.
//
//===----------------------------------------------------------------------===//

#include "netvm/ccore/Message.h"
#include "netvm/ccore/Lexer.h"

#include <algorithm>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

namespace netvm::ccore {

const char *fieldTypeName(FieldType type) {
  switch (type) {
  case FieldType::U8:
    return "u8";
  case FieldType::U16:
    return "u16";
  case FieldType::U32:
    return "u32";
  case FieldType::Bytes:
    return "bytes";
  }
  return "?";
}

const Field *Format::field(const std::string &fieldName) const {
  for (const Field &f : fields)
    if (f.name == fieldName)
      return &f;
  return nullptr;
}

const Format *Schema::format(const std::string &formatName) const {
  for (const Format &f : formats)
    if (f.name == formatName)
      return &f;
  return nullptr;
}

const Format *Schema::formatById(uint16_t id) const {
  for (const Format &f : formats)
    if (f.id == id)
      return &f;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Schema parser
//===----------------------------------------------------------------------===//

namespace {

class SchemaParser {
public:
  SchemaParser(const std::string &text, const std::string &file)
      : lexer(text), file(file) {
    advance();
  }

  std::optional<Schema> parse(std::string &error) {
    Schema schema;
    while (tok.kind != Token::End) {
      if (tok.is(Token::Word, "format")) {
        parseFormat(schema);
        continue;
      }
      fail(tok, "expected 'format', found " + describe(tok));
      // Resynchronise at the next format.
      while (tok.kind != Token::End && !tok.is(Token::Word, "format"))
        advance();
    }
    if (schema.formats.empty() && errors.empty())
      fail(tok, "the schema declares no format");
    if (!errors.empty()) {
      error = errors;
      return std::nullopt;
    }
    return schema;
  }

private:
  Lexer lexer;
  const std::string &file;
  Token tok;
  std::string errors;

  void fail(const Token &at, const std::string &message) {
    errors += errorAt(file, at, message);
  }

  static std::string describe(const Token &t) {
    switch (t.kind) {
    case Token::End:
      return "the end of the file";
    case Token::Number:
      return "number " + t.text;
    case Token::Parameter:
      return "'$" + t.text + "'";
    default:
      return "'" + t.text + "'";
    }
  }

  void advance() { tok = lexer.next(); }

  bool isPunct(const char *p) const { return tok.is(Token::Punct, p); }

  bool expectPunct(const char *p, const std::string &what) {
    if (isPunct(p)) {
      advance();
      return true;
    }
    fail(tok, "expected '" + std::string(p) + "' " + what + ", found " +
                  describe(tok));
    return false;
  }

  /// A number below `limit`; reports and returns nothing otherwise.
  std::optional<uint32_t> number(const std::string &what, uint64_t limit) {
    Token t = tok;
    if (t.kind != Token::Number) {
      fail(t, "expected " + what + ", found " + describe(t));
      return std::nullopt;
    }
    advance();
    if (t.bad || t.number >= limit) {
      fail(t, what + " " + t.text + " is out of range (at most " +
                  std::to_string(limit - 1) + ")");
      return std::nullopt;
    }
    return static_cast<uint32_t>(t.number);
  }

  void skipTo(const char *p) {
    while (tok.kind != Token::End && !isPunct(p) && !isPunct("}"))
      advance();
    if (isPunct(p))
      advance();
  }

  void parseFormat(Schema &schema) {
    Format format;
    format.line = tok.line;
    format.column = tok.column;
    advance(); // format
    Token nameTok = tok;
    if (tok.kind != Token::Word) {
      fail(tok, "expected a format name, found " + describe(tok));
    } else {
      format.name = tok.text;
      advance();
      if (schema.format(format.name))
        fail(nameTok, "format '" + format.name + "' is declared twice");
    }
    bool triedId = false;
    std::optional<uint32_t> size;
    Token sizeTok;
    // Attributes: id N (required), size N (optional), in any order.
    while (tok.kind == Token::Word &&
           (tok.text == "id" || tok.text == "size")) {
      bool isId = tok.text == "id";
      advance();
      Token at = tok;
      if (isId) {
        triedId = true;
        std::optional<uint32_t> id = number("a format id", 0x10000);
        if (!id)
          continue;
        if (*id == 0) {
          fail(at, "format id 0 is reserved");
          continue;
        }
        format.id = static_cast<uint16_t>(*id);
        if (const Format *other = schema.formatById(format.id))
          fail(at, "format id " + std::to_string(*id) + " is already '" +
                       other->name + "''s");
      } else {
        sizeTok = at;
        size = number("a message size", 0x10000);
      }
    }
    if (!triedId)
      fail(tok, "format '" + format.name + "' needs an 'id N'");
    if (!expectPunct("{", "to open the format's fields")) {
      skipTo("}");
      return;
    }
    uint32_t next = headerBytes;
    size_t errorsBefore = errors.size();
    while (tok.kind != Token::End && !isPunct("}"))
      parseField(format, next);
    if (!expectPunct("}", "to close format '" + format.name + "'"))
      return;
    // A format whose fields all failed already has its errors.
    if (format.fields.empty() && errors.size() == errorsBefore)
      fail(nameTok, "format '" + format.name + "' has no field");
    uint32_t end = headerBytes;
    for (const Field &f : format.fields)
      end = std::max(end, f.offset + f.size);
    if (size) {
      if (*size < end)
        fail(sizeTok, "size " + std::to_string(*size) + " of format '" +
                          format.name + "' is smaller than its fields (" +
                          std::to_string(end) + " bytes)");
      format.size = *size;
    } else {
      format.size = end;
    }
    schema.formats.push_back(std::move(format));
  }

  void parseField(Format &format, uint32_t &next) {
    Field field;
    field.line = tok.line;
    field.column = tok.column;
    if (tok.kind != Token::Word) {
      fail(tok, "expected a field type (u8, u16, u32, bytes), found " +
                    describe(tok));
      skipTo(";");
      return;
    }
    if (tok.text == "u8") {
      field.type = FieldType::U8;
      field.size = 1;
    } else if (tok.text == "u16") {
      field.type = FieldType::U16;
      field.size = 2;
    } else if (tok.text == "u32") {
      field.type = FieldType::U32;
      field.size = 4;
    } else if (tok.text == "bytes") {
      field.type = FieldType::Bytes;
    } else {
      fail(tok, "unknown field type '" + tok.text +
                    "' (expected u8, u16, u32 or bytes)");
      skipTo(";");
      return;
    }
    advance();
    Token nameTok = tok;
    if (tok.kind != Token::Word) {
      fail(tok, "expected a field name, found " + describe(tok));
      skipTo(";");
      return;
    }
    field.name = tok.text;
    advance();
    bool ok = true;
    if (field.type == FieldType::Bytes) {
      if (!expectPunct("[", "and the size of a bytes field")) {
        skipTo(";");
        return;
      }
      Token at = tok;
      std::optional<uint32_t> n = number("a field size", 0x10000);
      if (n && *n == 0) {
        fail(at, "bytes field '" + field.name + "' has size 0");
        n.reset();
      }
      ok = ok && n;
      field.size = n.value_or(1);
      if (!expectPunct("]", "after the size")) {
        skipTo(";");
        return;
      }
    }
    field.offset = next;
    Token offsetTok = nameTok;
    if (isPunct("@")) {
      advance();
      offsetTok = tok;
      std::optional<uint32_t> offset = number("a field offset", 0x10000);
      ok = ok && offset;
      field.offset = offset.value_or(next);
    }
    if (!expectPunct(";", "after field '" + field.name + "'")) {
      skipTo(";");
      return;
    }
    if (!ok)
      return;
    if (format.field(field.name)) {
      fail(nameTok, "field '" + field.name + "' is declared twice in format '" +
                        format.name + "'");
      return;
    }
    if (field.offset < headerBytes) {
      fail(offsetTok, "field '" + field.name + "' at offset " +
                          std::to_string(field.offset) +
                          " overlaps the message header (bytes 0-7)");
      return;
    }
    if (field.offset + field.size > 0xFFFF) {
      fail(offsetTok, "field '" + field.name + "' ends past byte 65535");
      return;
    }
    for (const Field &other : format.fields)
      if (field.offset < other.offset + other.size &&
          other.offset < field.offset + field.size) {
        fail(offsetTok,
             "field '" + field.name + "' overlaps field '" + other.name +
                 "' (bytes " + std::to_string(other.offset) + "-" +
                 std::to_string(other.offset + other.size - 1) + ")");
        return;
      }
    next = field.offset + field.size;
    format.fields.push_back(std::move(field));
  }
};

} // namespace

std::optional<Schema> parseSchema(const std::string &text,
                                  const std::string &file, std::string &error) {
  SchemaParser parser(text, file);
  return parser.parse(error);
}

std::optional<Schema> loadSchema(const std::string &path, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": error: cannot open the schema file\n";
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parseSchema(text.str(), path, error);
}

//===----------------------------------------------------------------------===//
// Messages
//===----------------------------------------------------------------------===//

static void put(std::vector<uint8_t> &bytes, uint32_t offset, uint32_t size,
                uint32_t value) {
  for (uint32_t i = 0; i < size; ++i)
    bytes[offset + i] = uint8_t(value >> (8 * (size - 1 - i)));
}

static uint32_t get(const uint8_t *bytes, uint32_t offset, uint32_t size) {
  uint32_t value = 0;
  for (uint32_t i = 0; i < size; ++i)
    value = (value << 8) | bytes[offset + i];
  return value;
}

bool encode(const Format &format, uint32_t stream, const Values &values,
            std::vector<uint8_t> &message, std::string &error) {
  message.assign(format.size, 0);
  put(message, streamOffset, 4, stream);
  put(message, formatOffset, 2, format.id);
  put(message, lengthOffset, 2, format.size);
  for (const auto &[name, value] : values) {
    const Field *field = format.field(name);
    if (!field) {
      error = "format '" + format.name + "' has no field '" + name + "'";
      return false;
    }
    if (field->isInteger()) {
      if (field->size < 4 && value.number >> (8 * field->size)) {
        error = "value " + std::to_string(value.number) + " does not fit " +
                fieldTypeName(field->type) + " field '" + name + "'";
        return false;
      }
      put(message, field->offset, field->size, value.number);
      continue;
    }
    if (value.bytes.size() > field->size) {
      error = std::to_string(value.bytes.size()) +
              " bytes do not fit bytes field '" + name + "' of " +
              std::to_string(field->size);
      return false;
    }
    std::copy(value.bytes.begin(), value.bytes.end(),
              message.begin() + field->offset);
  }
  return true;
}

std::optional<Header> readHeader(const uint8_t *bytes, size_t length) {
  if (length < headerBytes)
    return std::nullopt;
  Header h;
  h.stream = get(bytes, streamOffset, 4);
  h.format = static_cast<uint16_t>(get(bytes, formatOffset, 2));
  h.length = static_cast<uint16_t>(get(bytes, lengthOffset, 2));
  return h;
}

bool decode(const Format &format, const uint8_t *bytes, size_t length,
            Values &values, std::string &error) {
  std::optional<Header> header = readHeader(bytes, length);
  if (!header || length < format.size) {
    error = "a message of " + std::to_string(length) +
            " bytes is shorter than format '" + format.name + "' (" +
            std::to_string(format.size) + ")";
    return false;
  }
  if (header->format != format.id) {
    error = "the message is of format " + std::to_string(header->format) +
            ", not '" + format.name + "' (" + std::to_string(format.id) + ")";
    return false;
  }
  values.clear();
  for (const Field &field : format.fields) {
    Value &v = values[field.name];
    if (field.isInteger())
      v.number = get(bytes, field.offset, field.size);
    else
      v.bytes.assign(bytes + field.offset, bytes + field.offset + field.size);
  }
  return true;
}

std::vector<std::vector<uint8_t>>
generateMessages(const Format &format, const GenerateOptions &options) {
  // mt19937_64 is specified to the bit: the same seed gives the same bytes.
  std::mt19937_64 random(options.seed);
  std::vector<uint32_t> streams = options.streams;
  if (streams.empty())
    streams.push_back(1);
  std::vector<std::vector<uint8_t>> messages;
  for (uint64_t i = 0; i < options.count; ++i) {
    std::vector<uint8_t> m(format.size, 0);
    put(m, streamOffset, 4, streams[i % streams.size()]);
    put(m, formatOffset, 2, format.id);
    put(m, lengthOffset, 2, format.size);
    for (const Field &f : format.fields) {
      if (!f.isInteger()) {
        for (uint32_t b = 0; b < f.size; ++b)
          m[f.offset + b] = uint8_t(random());
        continue;
      }
      uint64_t r = random();
      uint32_t value;
      auto range = options.ranges.find(f.name);
      if (range != options.ranges.end())
        value =
            range->second.first + uint32_t(r % (uint64_t(range->second.second) -
                                                range->second.first + 1));
      else
        value = uint32_t(r) &
                (f.size == 4 ? 0xFFFFFFFFu : (1u << (8 * f.size)) - 1);
      put(m, f.offset, f.size, value);
    }
    if (options.malformedPercent && random() % 100 < options.malformedPercent) {
      if (random() % 2)
        m.resize(random() % m.size());
      else
        m[formatOffset + 1] ^= 0x40;
    }
    messages.push_back(std::move(m));
  }
  return messages;
}

//===----------------------------------------------------------------------===//
// Classifier
//===----------------------------------------------------------------------===//

Classifier::Classifier(const Schema &schema) : schema(schema) {
  for (const Format &f : schema.formats)
    queues[f.id];
}

bool Classifier::openChannel(const ChannelKey &key, std::string &error) {
  if (!schema.formatById(key.format)) {
    error = "channel " + key.source + " -> " + key.destination + " port " +
            std::to_string(key.port) + ": the schema has no format " +
            std::to_string(key.format);
    return false;
  }
  channels.emplace(key, 0);
  return true;
}

bool Classifier::openStream(uint32_t stream, const ChannelKey &key,
                            std::string &error) {
  if (!channels.count(key)) {
    error = "stream " + std::to_string(stream) + ": channel " + key.source +
            " -> " + key.destination + " is not open";
    return false;
  }
  auto [it, fresh] = streams.emplace(stream, key);
  if (!fresh && !(it->second == key)) {
    error = "stream " + std::to_string(stream) +
            " is already bound to another channel";
    return false;
  }
  return true;
}

const char *Classifier::verdictName(Verdict verdict) {
  switch (verdict) {
  case Verdict::Queued:
    return "queued";
  case Verdict::Short:
    return "short";
  case Verdict::UnknownStream:
    return "unknown-stream";
  case Verdict::WrongFormat:
    return "wrong-format";
  }
  return "?";
}

Classifier::Verdict Classifier::classify(const uint8_t *bytes, size_t length) {
  auto reject = [&](Verdict v) {
    ++tally.rejected[static_cast<unsigned>(v)];
    return v;
  };
  std::optional<Header> header = readHeader(bytes, length);
  if (!header)
    return reject(Verdict::Short);
  auto stream = streams.find(header->stream);
  if (stream == streams.end())
    return reject(Verdict::UnknownStream);
  if (stream->second.format != header->format)
    return reject(Verdict::WrongFormat);
  const Format *format = schema.formatById(header->format);
  if (length < format->size)
    return reject(Verdict::Short);
  queues[header->format].emplace_back(bytes, bytes + length);
  ++channels[stream->second];
  ++tally.queued;
  return Verdict::Queued;
}

std::deque<std::vector<uint8_t>> *Classifier::queue(uint16_t format) {
  auto it = queues.find(format);
  return it == queues.end() ? nullptr : &it->second;
}

uint64_t Classifier::channelCount(const ChannelKey &key) const {
  auto it = channels.find(key);
  return it == channels.end() ? 0 : it->second;
}

bool fragmentMessages(const std::vector<std::vector<uint8_t>> &messages,
                      const FragmentOptions &options,
                      std::vector<std::vector<uint8_t>> &fragments,
                      std::string &error) {
  if (options.payload == 0 || options.payload > 0xFFFF) {
    error = "the fragment payload must be 1-65535 bytes";
    return false;
  }
  std::mt19937_64 random(options.seed);
  for (size_t k = 0; k < messages.size(); ++k) {
    const std::vector<uint8_t> &m = messages[k];
    uint32_t count = fragmentCount(m.size(), options.payload);
    if (m.size() < headerBytes || m.size() > 0xFFFF ||
        count > rudpMaxFragments) {
      error = "message " + std::to_string(k) + " (" + std::to_string(m.size()) +
              " bytes) does not fit " + std::to_string(rudpMaxFragments) +
              " fragments of " + std::to_string(options.payload) + " bytes";
      return false;
    }
    for (uint32_t i = 0; i < count; ++i) {
      if (options.lossPercent && random() % 100 < options.lossPercent)
        continue;
      fragments.emplace_back();
      makeFragment(m, options.firstSequence + uint32_t(k), i, options.payload,
                   fragments.back());
    }
  }
  return true;
}

void makeFragment(const std::vector<uint8_t> &m, uint32_t sequence,
                  uint32_t index, uint32_t payload, std::vector<uint8_t> &f) {
  size_t from = size_t(index) * payload;
  size_t length = std::min<size_t>(payload, m.size() - from);
  auto put16 = [&](size_t at, uint32_t v) {
    f[at] = uint8_t(v >> 8);
    f[at + 1] = uint8_t(v);
  };
  f.assign(rudpHeaderBytes + length, 0);
  std::copy(m.begin(), m.begin() + 4, f.begin()); // the stream id
  for (int b = 0; b < 4; ++b)
    f[4 + b] = uint8_t(sequence >> (24 - 8 * b));
  put16(8, index);
  put16(10, fragmentCount(m.size(), payload));
  put16(12, uint32_t(length));
  put16(14, uint32_t(m.size()));
  std::copy(m.begin() + from, m.begin() + from + length,
            f.begin() + rudpHeaderBytes);
}

} // namespace netvm::ccore
