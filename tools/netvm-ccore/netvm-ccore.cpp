//===- netvm-ccore.cpp - The C-CORE layer from the command line -----------===//
//
// A thin tool over the C-CORE libraries (docs/ccore.md):
//   netvm-ccore compile  a query over a schema to a NetIL handler
//   netvm-ccore gen      a reproducible stream of messages, as a pcap file
//   netvm-ccore decode   the messages of a pcap file, field by field
//
//===----------------------------------------------------------------------===//

#include "netvm/CCore/Query.h"
#include "netvm/ccore/Message.h"
#include "netvm/io/PacketIO.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>

namespace cl = llvm::cl;
using namespace netvm::ccore;

static cl::OptionCategory category("netvm-ccore options");
static cl::SubCommand compileCmd("compile",
                                 "Compile a query to a NetIL handler");
static cl::SubCommand genCmd("gen", "Write a stream of messages (pcap)");
static cl::SubCommand decodeCmd("decode", "Print the messages of a pcap file");

static cl::opt<std::string> schemaPath("schema", cl::desc("The schema file"),
                                       cl::value_desc("file.ccs"), cl::Required,
                                       cl::sub(compileCmd), cl::sub(genCmd),
                                       cl::sub(decodeCmd), cl::cat(category));
static cl::opt<std::string>
    output("o", cl::desc("Output file (compile: default standard output)"),
           cl::value_desc("file"), cl::sub(compileCmd), cl::sub(genCmd),
           cl::cat(category));

// compile
static cl::opt<std::string> queryText("query", cl::desc("The query text"),
                                      cl::sub(compileCmd), cl::cat(category));
static cl::opt<std::string> queryFile("query-file",
                                      cl::desc("A file holding the query"),
                                      cl::value_desc("file"),
                                      cl::sub(compileCmd), cl::cat(category));
static cl::opt<bool> specialize(
    "specialize",
    cl::desc("Fold the format and the parameters into the code as constants "
             "(default: read them from data memory)"),
    cl::sub(compileCmd), cl::cat(category));
static cl::list<std::string>
    params("param", cl::desc("A parameter's value, name=value (repeatable)"),
           cl::value_desc("name=value"), cl::sub(compileCmd),
           cl::cat(category));
static cl::opt<unsigned>
    projectId("project-id",
              cl::desc("Format id of a projection's output (default: the "
                       "input's id | 0x8000)"),
              cl::init(0), cl::sub(compileCmd), cl::cat(category));
static cl::opt<std::string> peName("name", cl::desc("The NetPE's name"),
                                   cl::init("handler"), cl::sub(compileCmd),
                                   cl::cat(category));

// gen
static cl::opt<std::string> formatName("format", cl::desc("The format"),
                                       cl::sub(genCmd), cl::sub(decodeCmd),
                                       cl::cat(category));
static cl::opt<uint64_t> count("n", cl::desc("Messages (default 1000)"),
                               cl::init(1000), cl::sub(genCmd),
                               cl::cat(category));
static cl::opt<uint64_t> seed("seed", cl::desc("Random seed (default 1)"),
                              cl::init(1), cl::sub(genCmd), cl::cat(category));
static cl::list<unsigned>
    streams("stream",
            cl::desc("Stream ids, taken in turn (repeatable; default 1)"),
            cl::sub(genCmd), cl::cat(category));
static cl::list<std::string>
    ranges("range",
           cl::desc("Values of an integer field drawn from [lo, hi] "
                    "(repeatable; default: the whole type)"),
           cl::value_desc("field=lo:hi"), cl::sub(genCmd), cl::cat(category));
static cl::opt<unsigned>
    malformed("malformed",
              cl::desc("Percentage of malformed messages: truncated, or "
                       "of another format id (default 0)"),
              cl::init(0), cl::sub(genCmd), cl::cat(category));

// decode
static cl::opt<std::string> inputPcap(cl::Positional, cl::desc("<in.pcap>"),
                                      cl::sub(decodeCmd), cl::cat(category));

static int fail(const std::string &message) {
  llvm::errs() << "netvm-ccore: " << message;
  if (message.empty() || message.back() != '\n')
    llvm::errs() << "\n";
  return 1;
}

static bool readFile(const std::string &path, std::string &text) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream s;
  s << in.rdbuf();
  text = s.str();
  return true;
}

static bool parseNumber(llvm::StringRef text, uint32_t &value) {
  unsigned long long v;
  if (text.getAsInteger(0, v) || v > 0xFFFFFFFFull)
    return false;
  value = static_cast<uint32_t>(v);
  return true;
}

static int compileMain(const Schema &schema) {
  if (queryText.empty() == queryFile.empty())
    return fail("give the query with --query or --query-file (one of them)");
  std::string text = queryText, name = "<query>";
  if (!queryFile.empty()) {
    name = queryFile;
    if (!readFile(queryFile, text))
      return fail("cannot read " + queryFile);
  }
  std::string error;
  std::optional<Query> query = parseQuery(text, name, schema, error);
  if (!query)
    return fail(error);
  HandlerOptions options;
  options.specialize = specialize;
  options.name = peName;
  if (projectId > 0xFFFF)
    return fail("--project-id must be below 65536");
  options.projectId = static_cast<uint16_t>(projectId);
  for (const std::string &p : params) {
    auto [key, value] = llvm::StringRef(p).split('=');
    uint32_t v;
    if (key.empty() || !parseNumber(value, v))
      return fail("--param " + p + ": expected name=value (a 32-bit number)");
    options.parameters[key.str()] = v;
  }
  std::string netil;
  if (!emitNetIL(*query, options, netil, error))
    return fail(error);
  if (output.empty() || output == "-") {
    llvm::outs() << netil;
    return 0;
  }
  std::error_code ec;
  llvm::raw_fd_ostream out(output, ec);
  if (ec)
    return fail("cannot write " + output + ": " + ec.message());
  out << netil;
  return 0;
}

static int genMain(const Schema &schema) {
  const Format *format = schema.format(formatName);
  if (!format)
    return fail("the schema has no format '" + formatName + "' (--format)");
  std::map<std::string, std::pair<uint32_t, uint32_t>> bounds;
  for (const std::string &r : ranges) {
    auto [field, span] = llvm::StringRef(r).split('=');
    auto [lo, hi] = span.split(':');
    std::pair<uint32_t, uint32_t> b;
    const Field *f = format->field(field.str());
    if (!f || !f->isInteger() || !parseNumber(lo, b.first) ||
        !parseNumber(hi, b.second) || b.first > b.second)
      return fail("--range " + r +
                  ": expected field=lo:hi for an integer field, lo <= hi");
    bounds[field.str()] = b;
  }
  if (output.empty())
    return fail("gen needs -o FILE");
  std::string error;
  std::unique_ptr<netvm::rt::PcapWriter> writer =
      netvm::rt::PcapWriter::create(output, /*DLT_EN10MB=*/1, error);
  if (!writer)
    return fail(error);
  std::vector<unsigned> ids(streams.begin(), streams.end());
  if (ids.empty())
    ids.push_back(1);
  // mt19937_64 is specified to the bit: the same seed gives the same bytes.
  std::mt19937_64 random(seed);
  for (uint64_t i = 0; i < count; ++i) {
    Values values;
    for (const Field &f : format->fields) {
      Value &v = values[f.name];
      if (!f.isInteger()) {
        for (uint32_t b = 0; b < f.size; ++b)
          v.bytes.push_back(uint8_t(random()));
        continue;
      }
      uint64_t r = random();
      auto b = bounds.find(f.name);
      if (b != bounds.end())
        v.number =
            b->second.first +
            uint32_t(r % (uint64_t(b->second.second) - b->second.first + 1));
      else
        v.number = uint32_t(r) &
                   (f.size == 4 ? 0xFFFFFFFFu : (1u << (8 * f.size)) - 1);
    }
    netvm::rt::TracePacket packet;
    if (!encode(*format, ids[i % ids.size()], values, packet.bytes, error))
      return fail(error);
    if (malformed && random() % 100 < malformed) {
      if (random() % 2)
        packet.bytes.resize(random() % packet.bytes.size());
      else
        packet.bytes[formatOffset + 1] ^= 0x40;
    }
    packet.wireLength = static_cast<uint32_t>(packet.bytes.size());
    packet.seconds = static_cast<uint32_t>(i / 1000);
    packet.microseconds = static_cast<uint32_t>(i % 1000) * 1000;
    writer->write(packet);
  }
  if (!writer->flush(error))
    return fail(error);
  return 0;
}

static int decodeMain(const Schema &schema) {
  std::string error;
  std::unique_ptr<netvm::rt::PacketReader> reader =
      netvm::rt::PacketReader::open(inputPcap, /*hex=*/false, error);
  if (!reader)
    return fail(error);
  netvm::rt::TracePacket packet;
  uint64_t number = 0;
  while (reader->next(packet, error)) {
    ++number;
    netvm::rt::PacketView view;
    view.data = packet.bytes.data();
    view.length = static_cast<uint32_t>(packet.bytes.size());
    llvm::outs() << number << ":";
    std::optional<Header> header = readHeader(view.data, view.length);
    const Format *format = header ? schema.formatById(header->format) : nullptr;
    if (!formatName.empty() && format && format->name != formatName)
      format = nullptr;
    Values values;
    if (!format || !decode(*format, view.data, view.length, values, error)) {
      llvm::outs() << " " << view.length << " bytes, not a message of "
                   << (formatName.empty() ? std::string("the schema")
                                          : "format '" + formatName + "'")
                   << "\n";
      continue;
    }
    llvm::outs() << " stream " << header->stream << " " << format->name;
    for (const Field &f : format->fields) {
      llvm::outs() << " " << f.name << "=";
      const Value &v = values[f.name];
      if (f.isInteger()) {
        llvm::outs() << v.number;
        continue;
      }
      for (uint8_t b : v.bytes)
        llvm::outs() << llvm::format_hex_no_prefix(b, 2);
    }
    llvm::outs() << "\n";
  }
  if (!error.empty())
    return fail(error);
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "netvm-ccore: C-CORE message handlers (docs/ccore.md)\n\n"
      "  netvm-ccore compile --schema S.ccs --query 'from F select ...' "
      "[--specialize] [--param p=v]...\n"
      "  netvm-ccore gen --schema S.ccs --format F -n N -o out.pcap\n"
      "  netvm-ccore decode --schema S.ccs in.pcap\n");
  if (!compileCmd && !genCmd && !decodeCmd)
    return fail("give a subcommand: compile, gen or decode (see --help)");
  std::string error;
  std::optional<Schema> schema = loadSchema(schemaPath, error);
  if (!schema)
    return fail(error);
  if (compileCmd)
    return compileMain(*schema);
  if (genCmd)
    return genMain(*schema);
  return decodeMain(*schema);
}
