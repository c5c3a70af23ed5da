//===- Module.cpp - The _netvm extension module (nanobind) ---------------===//
//
// Binds Application (compile, inspect, generate code) and Instance (run
// packets, control plane) for the pure-Python layer in netvm/__init__.py.
// Compiling holds the GIL (MLIR contexts and netvm's pass statistics are
// not shared across threads here); running batches and traces releases it.
// Every argument is checked here, so that a wrong type or index raises a
// Python exception instead of reaching the runtime.
//
//===----------------------------------------------------------------------===//

#include "Application.h"

#include "netvm/Runtime/Engine.h"
#include "netvm/Target/ME/Assembler.h"
#include "netvm/emu/Emulator.h"
#include "netvm/emu/StatsJson.h"
#include "netvm/io/PacketIO.h"
#include "netvm/runtime.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>

namespace nb = nanobind;
using namespace nb::literals;
using namespace netvm::python;
namespace rt = netvm::rt;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// A contiguous byte view of a Python object (bytes, bytearray, memoryview,
/// NumPy array, ...) for as long as it lives.
class ByteView {
public:
  ByteView(nb::handle obj, const char *what) {
    if (PyUnicode_Check(obj.ptr()) ||
        PyObject_GetBuffer(obj.ptr(), &view, PyBUF_SIMPLE) != 0) {
      PyErr_Clear();
      throw nb::type_error(
          (std::string(what) +
           " must be bytes, bytearray, memoryview or a contiguous uint8 "
           "array, not " +
           nb::type_name(obj.type()).c_str())
              .c_str());
    }
    held = true;
  }
  ~ByteView() {
    if (held)
      PyBuffer_Release(&view);
  }
  ByteView(const ByteView &) = delete;
  ByteView(ByteView &&other) noexcept : view(other.view), held(other.held) {
    other.held = false;
  }
  const uint8_t *data() const { return static_cast<const uint8_t *>(view.buf); }
  size_t size() const { return static_cast<size_t>(view.len); }

private:
  Py_buffer view{};
  bool held = false;
};

static uint32_t checkedLength(size_t size, const char *what) {
  if (size > std::numeric_limits<uint32_t>::max())
    throw nb::value_error(
        (std::string(what) + " is longer than 4294967295 bytes").c_str());
  return static_cast<uint32_t>(size);
}

static std::string joinNames(const std::vector<std::string> &names) {
  std::string out;
  for (const std::string &n : names)
    out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

/// Index of `which` (an int, or a name in `names`).
static uint32_t lookupIndex(nb::handle which,
                            const std::vector<std::string> &names,
                            const char *arg, const char *what,
                            const char *plural) {
  if (nb::isinstance<nb::str>(which)) {
    std::string name = nb::cast<std::string>(which);
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == name)
        return static_cast<uint32_t>(i);
    throw nb::value_error((std::string("the application has no ") + what +
                           " '" + name + "' (" + plural + ": " +
                           joinNames(names) + ")")
                              .c_str());
  }
  if (!PyIndex_Check(which.ptr()) || nb::isinstance<nb::bool_>(which))
    throw nb::type_error((std::string(arg) +
                          " must be an int or a name, "
                          "not " +
                          nb::type_name(which.type()).c_str())
                             .c_str());
  long long index = PyLong_AsLongLong(which.ptr());
  if (index == -1 && PyErr_Occurred())
    throw nb::python_error();
  if (index < 0 || static_cast<unsigned long long>(index) >= names.size())
    throw nb::index_error((std::string(arg) + " " + std::to_string(index) +
                           " is out of range: the application has " +
                           std::to_string(names.size()) + " " +
                           (names.size() == 1 ? what : plural) + " (" +
                           joinNames(names) + ")")
                              .c_str());
  return static_cast<uint32_t>(index);
}

template <typename T> static nb::object numpyArray(size_t n, T *&data) {
  data = new T[n ? n : 1];
  nb::capsule owner(data,
                    [](void *p) noexcept { delete[] static_cast<T *>(p); });
  return nb::cast(nb::ndarray<nb::numpy, T, nb::ndim<1>>(data, {n}, owner));
}

static nb::bytes toBytes(const std::vector<uint8_t> &v) {
  return nb::bytes(reinterpret_cast<const char *>(v.data()), v.size());
}

//===----------------------------------------------------------------------===//
// Results
//===----------------------------------------------------------------------===//

/// Names of an application's sources, sinks and NetPEs.
struct Names {
  std::string app;
  std::vector<std::string> sources, sinks, pes;
  Names(std::string app, const rt::Engine &engine)
      : app(std::move(app)), sources(engine.sourceNames().vec()),
        sinks(engine.sinkNames().vec()), pes(engine.peNames().vec()) {}
};
using NamesRef = std::shared_ptr<const Names>;

struct PyOutput {
  NamesRef names;
  rt::Output record;
  std::string sink() const {
    return record.sink < names->sinks.size() ? names->sinks[record.sink] : "";
  }
};

struct PyPacketException {
  std::string kind, pe, handler, location;
  uint32_t kindIndex = 0;
  PyPacketException(const Names &names, const rt::ExceptionReport &e)
      : kind(e.kindName()), kindIndex(e.kind) {
    if (e.pe >= 0 && static_cast<size_t>(e.pe) < names.pes.size()) {
      pe = names.pes[e.pe];
      handler = e.handlerName();
    }
    location = e.location;
  }
  std::string repr() const {
    std::string s = "PacketException(" + kind;
    if (!pe.empty())
      s += " in @" + pe + " (" + handler + ")";
    if (!location.empty())
      s += " at " + location;
    return s + ")";
  }
};

static nb::list exceptionList(const Names &names,
                              const std::vector<rt::ExceptionReport> &records) {
  nb::list out;
  for (const rt::ExceptionReport &e : records)
    out.append(nb::cast(PyPacketException(names, e)));
  return out;
}

struct PyResult {
  NamesRef names;
  rt::PacketResult record;

  const char *verdict() const {
    if (!record.exceptions.empty())
      return "exception";
    if (!record.outputs.empty())
      return "output";
    if (record.drops)
      return "drop";
    if (record.unconnected)
      return "unconnected";
    return "none";
  }
  std::string repr() const {
    std::string s = std::string("Result(") + verdict();
    for (const rt::Output &o : record.outputs)
      s += ", -> " + names->sinks[o.sink] + " (" +
           std::to_string(o.bytes.size()) + " bytes)";
    for (const rt::ExceptionReport &e : record.exceptions)
      s += std::string(", ") + e.kindName();
    return s + ")";
  }
};

struct PyBatchResult {
  NamesRef names;
  nb::object sink, outputs, exception;
  const int32_t *sinkData = nullptr;
  size_t count = 0;

  nb::dict counts() const {
    std::vector<uint64_t> n(names->sinks.size());
    for (size_t i = 0; i < count; ++i)
      if (sinkData[i] >= 0)
        ++n[sinkData[i]];
    nb::dict d;
    for (size_t s = 0; s < n.size(); ++s)
      d[nb::str(names->sinks[s].c_str())] = n[s];
    return d;
  }
};

//===----------------------------------------------------------------------===//
// Instances
//===----------------------------------------------------------------------===//

/// An application compiled for the microengines (or written by hand to
/// the same protocol), with the machine options it was compiled for.
struct PyMEProgram {
  std::shared_ptr<const netvm::me::CompiledApp> program;
  MachineOptions machine;
  std::string name;
};

/// An instance of an application: an engine of the run library
/// (lib/Runtime: native code, the interpreter or the ME emulator) on one
/// thread, used by one Python thread at a time (packets run with the GIL
/// released).
struct PyInstance {
  std::unique_ptr<rt::Engine> engine;
  NamesRef names;
  bool copyPackets;
  rt::PacketResult init; // what the init handlers did
  std::atomic<bool> busy{false};
  // Batches, kept between calls (no page faults on every batch).
  std::vector<uint8_t> arena;
  std::vector<netvm_packet> batch;
  /// What the engine runs from (the interpreter's IR), kept alive.
  nb::object owner;

  PyInstance(std::unique_ptr<rt::Engine> made, const std::string &name,
             bool copyPackets, nb::object owner = nb::object())
      : engine(std::move(made)), copyPackets(copyPackets),
        owner(std::move(owner)) {
    names = std::make_shared<Names>(name, *engine);
    init = engine->initialize();
    checkFailure();
  }
  PyInstance(const netvm_app_desc *desc, uint64_t watchdog, bool copyPackets,
             int linkType)
      : copyPackets(copyPackets) {
    rt::EngineOptions options;
    options.watchdogBudget = watchdog;
    std::string error;
    engine = rt::Engine::native(desc, options, error);
    if (!engine)
      throw std::runtime_error("cannot instantiate the application: " + error);
    engine->linkType = linkType;
    names = std::make_shared<Names>(desc->name ? desc->name : "", *engine);
    init = engine->initialize();
  }

  /// A failure of the engine (the emulated machine faulted) as a Python
  /// RuntimeError: results are missing, never silently.
  void checkFailure() const {
    std::string why = engine->failure();
    if (!why.empty())
      throw std::runtime_error("the " + std::string(engine->kind()) +
                               " engine failed: " + why);
  }

  /// Marks the instance busy for its lifetime: one thread at a time runs
  /// packets (the GIL is released meanwhile).
  class Busy {
  public:
    explicit Busy(PyInstance &i) : instance(i) {
      if (instance.busy.exchange(true))
        throw std::runtime_error("this Instance is running packets on "
                                 "another thread; use one Instance per "
                                 "thread");
    }
    ~Busy() { instance.busy.store(false); }

  private:
    PyInstance &instance;
  };

  uint32_t source(nb::handle port) const {
    if (names->sources.empty())
      throw nb::value_error("the application has no source to push packets "
                            "into");
    return lookupIndex(port, names->sources, "port", "source", "sources");
  }
  /// NetPE `which`'s lookup coprocessor (the control plane's view).
  /// `result` of a lookup control-plane call, or ValueError when the NetPE
  /// has no lookup table.
  template <typename T> T lookupResult(std::optional<T> result) {
    if (!result)
      throw nb::value_error("the NetPE does not use the lookup coprocessor");
    return std::move(*result);
  }
  uint32_t pe(nb::handle which) const {
    return lookupIndex(which, names->pes, "pe", "NetPE", "NetPEs");
  }

  PyResult run(nb::handle packet, nb::handle port,
               std::optional<uint64_t> wireLength, uint32_t seconds,
               uint32_t microseconds) {
    uint32_t src = source(port);
    ByteView bytes(packet, "packet");
    uint32_t length = checkedLength(bytes.size(), "packet");
    uint32_t wire = 0;
    if (wireLength) {
      if (*wireLength < length || *wireLength > 0xffffffffu)
        throw nb::value_error("wire_length must be at least the packet's "
                              "length and below 2**32");
      wire = static_cast<uint32_t>(*wireLength);
    }
    Busy busy(*this);
    rt::TracePacket p;
    p.bytes.assign(bytes.data(), bytes.data() + length);
    p.wireLength = wire;
    p.seconds = seconds;
    p.microseconds = microseconds;
    PyResult result{names, engine->push(src, p)};
    checkFailure();
    return result;
  }

  PyBatchResult runBatch(nb::handle packets, nb::handle offsets,
                         nb::handle port) {
    uint32_t src = source(port);
    Busy busy(*this);
    // A buffer's packets run in place when the application never writes
    // packet memory; other packets on copies, in an arena kept between
    // batches.
    std::vector<ByteView> views;
    std::vector<size_t> starts;
    batch.clear();
    arena.clear();
    if (offsets.is_none()) {
      if (PyUnicode_Check(packets.ptr()) || PyBytes_Check(packets.ptr()) ||
          PyByteArray_Check(packets.ptr()) ||
          PyMemoryView_Check(packets.ptr()) || !PySequence_Check(packets.ptr()))
        throw nb::type_error(
            ("run_batch takes a sequence of packets, or a buffer and "
             "offsets=, not " +
             std::string(nb::type_name(packets.type()).c_str()))
                .c_str());
      nb::object seq = nb::steal(
          PySequence_Fast(packets.ptr(), "run_batch takes a sequence"));
      if (!seq.is_valid())
        throw nb::python_error();
      Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
      PyObject **items = PySequence_Fast_ITEMS(seq.ptr());
      batch.resize(n);
      starts.resize(n);
      // Copied (one buffer view at a time is cheaper than holding a
      // million, and lets the list change once the GIL is released).
      for (Py_ssize_t i = 0; i < n; ++i) {
        ByteView b(items[i], "every packet");
        batch[i].length = checkedLength(b.size(), "a packet");
        starts[i] = arena.size();
        arena.insert(arena.end(), b.data(), b.data() + b.size());
      }
    } else {
      const ByteView &buffer = views.emplace_back(packets, "the packet buffer");
      nb::object array = nb::module_::import_("numpy").attr(
          "ascontiguousarray")(offsets, "dtype"_a = "int64");
      auto offs = nb::cast<nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig,
                                       nb::device::cpu>>(array);
      if (offs.shape(0) < 1)
        throw nb::value_error("offsets needs one entry more than there are "
                              "packets (the end of the last one)");
      size_t n = offs.shape(0) - 1;
      const int64_t *o = offs.data();
      if (o[0] < 0 || static_cast<uint64_t>(o[n]) > buffer.size())
        throw nb::value_error("offsets must lie within the packet buffer");
      for (size_t i = 0; i < n; ++i) {
        if (o[i + 1] < o[i])
          throw nb::value_error(("offsets must not decrease (offsets[" +
                                 std::to_string(i + 1) + "] < offsets[" +
                                 std::to_string(i) + "])")
                                    .c_str());
        checkedLength(o[i + 1] - o[i], "a packet");
      }
      batch.resize(n);
      nb::gil_scoped_release release;
      const uint8_t *base = buffer.data();
      if (copyPackets) {
        arena.assign(base + o[0], base + o[n]);
        base = arena.data() - o[0];
      }
      for (size_t i = 0; i < n; ++i) {
        batch[i].data = const_cast<uint8_t *>(base + o[i]);
        batch[i].length = static_cast<uint32_t>(o[i + 1] - o[i]);
      }
    }
    size_t n = batch.size();
    PyBatchResult result;
    result.names = names;
    result.count = n;
    int32_t *sink, *exception;
    uint32_t *outputs;
    result.sink = numpyArray(n, sink);
    result.outputs = numpyArray(n, outputs);
    result.exception = numpyArray(n, exception);
    result.sinkData = sink;
    {
      nb::gil_scoped_release release;
      if (offsets.is_none())
        for (size_t i = 0; i < n; ++i)
          batch[i].data = arena.data() + starts[i];
      for (size_t i = 0; i < n; ++i) {
        sink[i] = -1;
        outputs[i] = 0;
        exception[i] = -1;
      }
      auto record = [&](size_t i, const rt::PacketResult &r) {
        if (!r.outputs.empty())
          sink[i] = static_cast<int32_t>(r.outputs.front().sink);
        outputs[i] = static_cast<uint32_t>(r.outputs.size());
        if (!r.exceptions.empty())
          exception[i] = static_cast<int32_t>(r.exceptions.front().kind);
      };
      rt::ResultFn fn = record;
      engine->run(src, batch, &fn, rt::ResultDetail::Verdicts);
    }
    checkFailure();
    return result;
  }

  nb::dict runPcap(const std::filesystem::path &path, nb::handle port,
                   std::optional<uint64_t> limit) {
    uint32_t src = source(port);
    std::string error;
    if (!std::filesystem::exists(path)) {
      PyErr_SetString(PyExc_FileNotFoundError,
                      ("no such file: '" + path.string() + "'").c_str());
      throw nb::python_error();
    }
    std::unique_ptr<netvm::rt::PacketReader> reader =
        netvm::rt::PacketReader::open(path.string(), /*hex=*/false, error);
    if (!reader) {
      PyErr_SetString(PyExc_OSError, error.c_str());
      throw nb::python_error();
    }
    std::vector<uint64_t> before(names->sinks.size());
    for (uint32_t s = 0; s < before.size(); ++s)
      before[s] = engine->sinkCounters(s).packets;
    Busy busy(*this);
    bool ok = true;
    if (!limit || *limit > 0) { // a limit of 0 reads nothing
      nb::gil_scoped_release release;
      rt::StreamOptions options;
      options.maxPackets = limit.value_or(0);
      rt::StreamStats stats;
      ok = engine->runStream(src, *reader, options, nullptr,
                             rt::ResultDetail::Verdicts, stats, error);
    }
    if (!ok) {
      PyErr_SetString(PyExc_OSError, error.c_str());
      throw nb::python_error();
    }
    checkFailure();
    nb::dict counts;
    for (uint32_t s = 0; s < before.size(); ++s)
      counts[nb::str(names->sinks[s].c_str())] =
          engine->sinkCounters(s).packets - before[s];
    return counts;
  }

  /// Data memory of NetPE `which` (or shared memory) as a writable NumPy
  /// view that keeps the instance alive.
  nb::object memoryView(nb::handle self, uint8_t *data, uint32_t size) {
    return nb::cast(
        nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>>(data, {size}, self));
  }
  std::pair<uint8_t *, uint32_t> memory(nb::handle which) {
    if (which.is_none()) {
      llvm::MutableArrayRef<uint8_t> shared = engine->sharedMemory();
      return {shared.data(), static_cast<uint32_t>(shared.size())};
    }
    llvm::MutableArrayRef<uint8_t> data = engine->dataMemory(pe(which));
    return {data.data(), static_cast<uint32_t>(data.size())};
  }
  static void checkRange(uint64_t offset, uint64_t size, uint32_t memSize,
                         const char *what) {
    if (offset > memSize || size > memSize - offset)
      throw nb::index_error(
          (std::string(what) + " bytes " + std::to_string(offset) + ".." +
           std::to_string(offset + size) + " are outside its " +
           std::to_string(memSize) + " bytes")
              .c_str());
  }
  nb::bytes read(nb::handle which, uint64_t offset,
                 std::optional<uint64_t> size, const char *what) {
    auto [data, memSize] = memory(which);
    uint64_t n = size ? *size : (offset <= memSize ? memSize - offset : 0);
    checkRange(offset, n, memSize, what);
    return nb::bytes(reinterpret_cast<const char *>(data) + offset, n);
  }
  void write(nb::handle which, uint64_t offset, nb::handle bytes,
             const char *what) {
    auto [data, memSize] = memory(which);
    ByteView b(bytes, "data");
    checkRange(offset, b.size(), memSize, what);
    Busy busy(*this);
    if (b.size())
      std::memcpy(data + offset, b.data(), b.size());
  }

  nb::dict counters() const {
    rt::Counters c = engine->counters();
    nb::dict exceptions, sinks, pes;
    for (uint32_t k = 0; k < NETVM_EXC_KINDS; ++k)
      if (c.exceptions[k])
        exceptions[netvm_exception_name(k)] = c.exceptions[k];
    for (uint32_t s = 0; s < names->sinks.size(); ++s) {
      rt::SinkCounters sc = engine->sinkCounters(s);
      nb::dict d;
      d["packets"] = sc.packets;
      d["bytes"] = sc.bytes;
      sinks[nb::str(names->sinks[s].c_str())] = d;
    }
    for (uint32_t p = 0; p < names->pes.size(); ++p) {
      rt::PECounters pc = engine->peCounters(p);
      nb::dict d;
      d["runs"] = pc.runs;
      d["sent"] = pc.sent;
      d["dropped"] = pc.dropped;
      d["exceptions"] = pc.exceptions;
      pes[nb::str(names->pes[p].c_str())] = d;
    }
    nb::dict out;
    out["packets"] = c.packets;
    out["dropped"] = c.dropped;
    out["unconnected"] = c.unconnected;
    out["exceptions"] = exceptions;
    out["sinks"] = sinks;
    out["pes"] = pes;
    return out;
  }
};

//===----------------------------------------------------------------------===//
// Applications
//===----------------------------------------------------------------------===//

static Language parseLanguage(const std::string &lang) {
  if (lang == "netil")
    return Language::NetIL;
  if (lang == "nvapp")
    return Language::AppDescription;
  if (lang == "mlir")
    return Language::MLIR;
  if (lang == "netpfl")
    return Language::NetPFL;
  if (lang == "pcap-filter")
    return Language::PcapFilter;
  throw nb::value_error(("unknown language '" + lang +
                         "': use 'netil', 'nvapp', 'mlir', 'netpfl' or "
                         "'pcap-filter'")
                            .c_str());
}

static nb::tuple
compile(const std::string &lang,
        std::vector<std::pair<std::string, std::optional<std::string>>> inputs,
        std::map<std::string, std::string> files, unsigned optLevel,
        const std::string &protoDB, const std::string &name,
        const std::string &target, const MachineOptions &machine, int linkType,
        bool linkSwapped) {
  CompileRequest request;
  request.linkType = linkType;
  request.linkSwapped = linkSwapped;
  request.target = target;
  request.machine = machine;
  request.language = parseLanguage(lang);
  request.inputs = std::move(inputs);
  request.files = std::move(files);
  request.optLevel = optLevel;
  request.protoDB = protoDB;
  request.name = name;
  std::vector<Diagnostic> diagnostics;
  std::unique_ptr<Application> app = Application::compile(request, diagnostics);
  // For the microengines, refusals of the ME back end are compile errors.
  if (app && target == "me" && !app->meProgram(diagnostics))
    app.reset();
  nb::object result = app ? nb::cast(std::move(app)) : nb::none();
  return nb::make_tuple(result, diagnostics);
}

//===----------------------------------------------------------------------===//
// The microengines
//===----------------------------------------------------------------------===//

namespace me = netvm::me;

static nb::tuple regionTuple(const me::AppLayout::Region &r) {
  return nb::make_tuple(me::memoryName(r.memory), r.address, r.size);
}

static me::AppLayout::Region regionOf(nb::handle value, const char *what) {
  auto t = nb::cast<std::tuple<std::string, uint32_t, uint32_t>>(value);
  me::AppLayout::Region r;
  const std::string &memory = std::get<0>(t);
  if (memory == "scratch")
    r.memory = me::Memory::Scratch;
  else if (memory == "sram")
    r.memory = me::Memory::Sram;
  else if (memory == "dram")
    r.memory = me::Memory::Dram;
  else
    throw nb::value_error((std::string(what) + ": unknown memory '" + memory +
                           "' (use 'scratch', 'sram' or 'dram')")
                              .c_str());
  r.address = std::get<1>(t);
  r.size = std::get<2>(t);
  return r;
}

/// The layout as a dict (the keys of me_program's `layout`).
static nb::dict layoutDict(const me::AppLayout &l) {
  nb::dict d;
  d["sources"] = l.sources;
  d["sinks"] = l.sinks;
  d["pes"] = l.pes;
  nb::list data, persistent;
  for (const me::AppLayout::Region &r : l.dataMemory)
    data.append(regionTuple(r));
  for (const me::AppLayout::Region &r : l.persistent)
    persistent.append(regionTuple(r));
  d["data_memory"] = data;
  d["shared_memory"] = regionTuple(l.sharedMemory);
  d["persistent"] = persistent;
  d["event_count"] = l.eventCount;
  d["pe_counters"] = l.peCounters;
  d["event_log"] = l.eventLog;
  d["event_capacity"] = l.eventCapacity;
  d["locations"] = l.locations;
  d["watchdog_address"] = l.watchdogAddress;
  d["default_watchdog"] = l.defaultWatchdog;
  d["info_offset"] = l.infoOffset;
  d["info_size"] = l.infoSize;
  d["info_carried"] = l.infoCarried;
  d["lookup_tables"] = l.lookupTables;
  d["info_used"] = l.infoUsed;
  return d;
}

static me::AppLayout layoutOf(nb::dict d) {
  static const char *const known[] = {
      "sources",          "sinks",       "pes",         "data_memory",
      "shared_memory",    "persistent",  "event_count", "event_log",
      "event_capacity",   "pe_counters", "locations",   "watchdog_address",
      "default_watchdog", "info_offset", "info_size",   "info_used"};
  for (auto [key, value] : d) {
    std::string k = nb::cast<std::string>(nb::str(key));
    if (std::find(std::begin(known), std::end(known), k) == std::end(known))
      throw nb::value_error(("unknown layout key '" + k + "'").c_str());
  }
  me::AppLayout l;
  auto get = [&](const char *key, auto &field) {
    if (d.contains(key))
      field = nb::cast<std::remove_reference_t<decltype(field)>>(d[key]);
  };
  get("sources", l.sources);
  get("sinks", l.sinks);
  get("pes", l.pes);
  if (d.contains("data_memory"))
    for (nb::handle r : nb::iter(d["data_memory"]))
      l.dataMemory.push_back(regionOf(r, "data_memory"));
  if (d.contains("shared_memory"))
    l.sharedMemory = regionOf(d["shared_memory"], "shared_memory");
  if (d.contains("persistent"))
    for (nb::handle r : nb::iter(d["persistent"]))
      l.persistent.push_back(regionOf(r, "persistent"));
  get("event_count", l.eventCount);
  get("event_log", l.eventLog);
  get("event_capacity", l.eventCapacity);
  get("pe_counters", l.peCounters);
  get("locations", l.locations);
  get("watchdog_address", l.watchdogAddress);
  get("default_watchdog", l.defaultWatchdog);
  get("info_offset", l.infoOffset);
  get("info_size", l.infoSize);
  get("info_carried", l.infoCarried);
  get("lookup_tables", l.lookupTables);
  get("info_used", l.infoUsed);
  return l;
}

/// An ME program written by hand (assembly) with its layout.
static PyMEProgram meProgramOf(const std::string &assembly,
                               const std::string &fileName, nb::dict layout,
                               const MachineOptions &machine,
                               const std::string &name) {
  auto program = std::make_shared<me::CompiledApp>();
  program->layout = layoutOf(layout);
  me::AssemblerOptions options;
  options.machine = machineConfig(machine);
  std::vector<std::string> errors;
  if (!me::assemble(assembly, fileName, options, program->image, errors)) {
    std::string message;
    for (const std::string &e : errors)
      message += (message.empty() ? "" : "\n") + e;
    throw nb::value_error(message.c_str());
  }
  program->assembly = assembly;
  return {std::move(program), machine, name};
}

/// Raises netvm.CompileError with `diagnostics`.
[[noreturn]] static void
raiseCompileError(const std::vector<Diagnostic> &diagnostics) {
  nb::object type = nb::module_::import_("netvm").attr("CompileError");
  nb::object error = type(nb::cast(diagnostics));
  PyErr_SetObject(type.ptr(), error.ptr());
  throw nb::python_error();
}

static PyMEProgram meProgramOfApp(Application &app) {
  std::vector<Diagnostic> diagnostics;
  std::shared_ptr<const me::CompiledApp> program = app.meProgram(diagnostics);
  if (!program)
    raiseCompileError(diagnostics);
  return {std::move(program), app.machine(), app.name()};
}

/// Instance(app, engine, watchdog=, machine=): `app` is a netvm.Application
/// (or its _impl) or an MEProgram.
static PyInstance *newInstance(nb::handle app, const std::string &engine,
                               uint64_t watchdog, nb::handle machine) {
  MachineOptions extra;
  if (!machine.is_none())
    extra = nb::cast<MachineOptions>(
        nb::module_::import_("netvm").attr("_machine_options")(machine));
  std::string kind = engine == "interpreter" ? "interp"
                     : engine == "emulator"  ? "emu"
                                             : engine;
  if (kind != "native" && kind != "interp" && kind != "emu")
    throw nb::value_error(
        ("unknown engine '" + engine + "': use 'native', 'interp' or 'emu'")
            .c_str());
  if (!extra.empty() && kind != "emu")
    throw nb::value_error("machine options configure the ME emulator: use "
                          "them with engine='emu'");
  nb::object impl = nb::borrow(app);
  if (nb::hasattr(app, "_impl"))
    impl = app.attr("_impl");
  rt::EngineOptions options;
  options.watchdogBudget = watchdog;
  std::string error;
  PyMEProgram program;
  int links = 1; // an MEProgram reads Ethernet frames
  if (nb::isinstance<Application>(impl)) {
    Application &a = nb::cast<Application &>(impl);
    if (kind == "native")
      return new PyInstance(a.jit(), watchdog, a.writesPackets(), a.linkType());
    if (kind == "interp") {
      std::unique_ptr<rt::Engine> e = a.interpreter(options, error);
      if (!e)
        throw std::runtime_error("cannot instantiate the application: " +
                                 error);
      e->linkType = a.linkType();
      return new PyInstance(std::move(e), a.name(), false, impl);
    }
    program = meProgramOfApp(a);
    links = a.linkType();
  } else if (nb::isinstance<PyMEProgram>(impl)) {
    if (kind != "emu")
      throw nb::value_error("an MEProgram runs on engine 'emu' only");
    program = nb::cast<PyMEProgram &>(impl);
  } else {
    throw nb::type_error(("Instance() takes an Application or an "
                          "MEProgram, not " +
                          std::string(nb::type_name(app.type()).c_str()))
                             .c_str());
  }
  MachineOptions all = program.machine;
  all.insert(all.end(), extra.begin(), extra.end());
  me::MachineConfig config = machineConfig(all);
  std::unique_ptr<rt::Engine> e =
      rt::Engine::emulator(*program.program, options, config, error);
  if (!e)
    throw std::runtime_error("cannot instantiate the application on the ME "
                             "emulator: " +
                             error);
  e->linkType = links;
  return new PyInstance(std::move(e), program.name, false, impl);
}

static std::string diagnosticRepr(const Diagnostic &d) {
  std::string s = "Diagnostic(" + d.severity + ", ";
  if (!d.file.empty())
    s += d.file + ":" + std::to_string(d.line) + ":" +
         std::to_string(d.column) + ", ";
  return s + "'" + d.message + "')";
}

} // namespace

namespace netvm::python {
void bindEmulator(nb::module_ &m); // Emulator.cpp
void bindOnload(nb::module_ &m);   // Onload.cpp
#ifdef NETVM_HAVE_CCORE
void bindCCore(nb::module_ &m); // CCore.cpp
#endif
} // namespace netvm::python

NB_MODULE(_netvm, m) {
  m.doc() = "The native part of the netvm package (see netvm.__doc__).";
  netvm::python::bindEmulator(m);
  netvm::python::bindOnload(m);
#ifdef NETVM_HAVE_CCORE
  netvm::python::bindCCore(m);
#endif

  nb::class_<Diagnostic>(m, "Diagnostic",
                         "A compiler message and where it points.")
      .def_ro("severity", &Diagnostic::severity,
              "'error', 'warning', 'note' or 'remark'.")
      .def_ro("message", &Diagnostic::message, "The message alone.")
      .def_ro("file", &Diagnostic::file,
              "The file it points into ('' if none).")
      .def_ro("line", &Diagnostic::line, "1-based line (0 if none).")
      .def_ro("column", &Diagnostic::column, "1-based column (0 if none).")
      .def_ro("rendered", &Diagnostic::rendered,
              "The message as netc prints it, with the source line and a "
              "caret.")
      .def_ro("notes", &Diagnostic::notes, "Notes attached to it.")
      .def("__str__", [](const Diagnostic &d) { return d.rendered; })
      .def("__repr__", &diagnosticRepr);

  nb::class_<Application>(m, "Application",
                          "A compiled application (see netvm.Application).")
      .def_prop_ro("name", &Application::name)
      .def_prop_ro("sources", &Application::sources)
      .def_prop_ro("sinks", &Application::sinks)
      .def_prop_ro("pes", &Application::pes)
      .def_prop_ro("opt_level", &Application::optLevel)
      .def_prop_ro("writes_packets", &Application::writesPackets)
      .def_prop_ro(
          "pass_statistics",
          [](const Application &a) {
            std::vector<std::tuple<std::string, std::string, uint64_t>> out;
            for (const PassStatistic &s : a.passStatistics())
              out.emplace_back(s.pass, s.name, s.value);
            return out;
          })
      .def("mlir", &Application::mlir, "stage"_a)
      .def("llvm_ir", &Application::llvmIR, "target"_a, "cpu"_a)
      .def("asm", &Application::assembly, "target"_a, "cpu"_a)
      .def(
          "object_code",
          [](Application &a, const std::string &target, const std::string &cpu,
             const std::string &descriptor) {
            std::string code = a.object(target, cpu, descriptor);
            return nb::bytes(code.data(), code.size());
          },
          "target"_a, "cpu"_a, "descriptor"_a)
      .def(
          "jit",
          [](Application &a, uint64_t watchdog) {
            return new PyInstance(a.jit(), watchdog, a.writesPackets(),
                                  a.linkType());
          },
          "watchdog"_a, nb::rv_policy::take_ownership)
      .def_prop_ro("target", &Application::target)
      .def_prop_ro("machine", &Application::machine)
      .def("me_program", &meProgramOfApp,
           "The application compiled for the microengines (once); raises "
           "CompileError if the ME back end refuses it.");

  nb::class_<PyMEProgram>(
      m, "MEProgram",
      "An application compiled for the microengines: the emulator image, "
      "its assembly and the layout a host needs to run it.")
      .def_ro("name", &PyMEProgram::name)
      .def_prop_ro(
          "image",
          [](const PyMEProgram &p) {
            std::vector<uint8_t> bytes = me::writeImage(p.program->image);
            return toBytes(bytes);
          },
          "The image as netvm-me-as writes it (bytes).")
      .def_prop_ro(
          "assembly", [](const PyMEProgram &p) { return p.program->assembly; },
          "The image as ME assembly (netvm-me-as assembles it).")
      .def_prop_ro(
          "layout",
          [](const PyMEProgram &p) { return layoutDict(p.program->layout); },
          "Ports, memories, event log and info memory, as a dict.")
      .def_prop_ro(
          "report",
          [](const PyMEProgram &p) {
            nb::list out;
            for (const me::MEReport &r : p.program->report) {
              nb::dict d;
              d["me"] = r.me;
              d["role"] = r.role;
              d["instructions"] = r.instructions;
              d["control_store"] = r.controlStore;
              d["gprs_a"] = r.gprsA;
              d["gprs_b"] = r.gprsB;
              d["transfer_registers"] = r.transferRegisters;
              d["signals"] = r.signals;
              d["local_memory_words"] = r.localMemoryWords;
              d["spills"] = r.spills;
              d["bank_moves"] = r.bankMoves;
              out.append(d);
            }
            return out;
          },
          "What each ME holds (a list of dicts).")
      .def_ro("machine", &PyMEProgram::machine,
              "The machine options it was made for.")
      .def_prop_ro(
          "sources",
          [](const PyMEProgram &p) { return p.program->layout.sources; })
      .def_prop_ro("sinks",
                   [](const PyMEProgram &p) { return p.program->layout.sinks; })
      .def_prop_ro("pes",
                   [](const PyMEProgram &p) { return p.program->layout.pes; })
      .def("__repr__", [](const PyMEProgram &p) {
        return "MEProgram(" + p.name + ", " +
               std::to_string(p.program->image.code.size()) + " code blocks)";
      });

  nb::class_<PyOutput>(m, "Output",
                       "A packet that left the application through a sink "
                       "(an output port of the application).")
      .def_prop_ro("sink", &PyOutput::sink, "The sink's name.")
      .def_prop_ro(
          "sink_index", [](const PyOutput &o) { return o.record.sink; },
          "The sink's index in Instance.sinks.")
      .def_prop_ro(
          "data", [](const PyOutput &o) { return toBytes(o.record.bytes); },
          "The packet's bytes as it left.")
      .def_prop_ro(
          "info", [](const PyOutput &o) { return toBytes(o.record.info); },
          "Its info memory.")
      .def_prop_ro(
          "timestamp",
          [](const PyOutput &o) {
            return std::make_pair(o.record.seconds, o.record.microseconds);
          },
          "(seconds, microseconds) of the packet it came from.")
      .def("__repr__", [](const PyOutput &o) {
        return "Output(" + o.sink() + ", " +
               std::to_string(o.record.bytes.size()) + " bytes)";
      });

  nb::class_<PyPacketException>(
      m, "PacketException",
      "A NetVM exception raised while processing a packet (a record, not a "
      "Python exception).")
      .def_ro("kind", &PyPacketException::kind,
              "e.g. 'packet_bounds' (see netvm.EXCEPTION_KINDS).")
      .def_ro("kind_index", &PyPacketException::kindIndex,
              "Index of kind in netvm.EXCEPTION_KINDS.")
      .def_ro("pe", &PyPacketException::pe, "The NetPE that raised it.")
      .def_ro("handler", &PyPacketException::handler,
              "'init', 'push' or 'pull'.")
      .def_ro("location", &PyPacketException::location,
              "file:line:col of the NetIL instruction.")
      .def("__repr__", &PyPacketException::repr);

  nb::class_<PyResult>(m, "Result", "What happened to one packet.")
      .def_prop_ro(
          "outputs",
          [](const PyResult &r) {
            nb::list out;
            for (const rt::Output &o : r.record.outputs)
              out.append(nb::cast(PyOutput{r.names, o}));
            return out;
          },
          "The packets that left, in order (list of Output).")
      .def_prop_ro(
          "exceptions",
          [](const PyResult &r) {
            return exceptionList(*r.names, r.record.exceptions);
          },
          "The exceptions raised (list of PacketException).")
      .def_prop_ro(
          "dropped", [](const PyResult &r) { return r.record.drops; },
          "Exchange buffers dropped.")
      .def_prop_ro(
          "unconnected", [](const PyResult &r) { return r.record.unconnected; },
          "Packets sent to output ports with no connection.")
      .def_prop_ro("verdict", &PyResult::verdict,
                   "'output', 'exception', 'drop', 'unconnected' or 'none' "
                   "(an exception wins over outputs).")
      .def_prop_ro(
          "sink",
          [](const PyResult &r) -> std::optional<std::string> {
            if (r.record.outputs.empty())
              return std::nullopt;
            return r.names->sinks[r.record.outputs.front().sink];
          },
          "The sink of the first output, or None.")
      .def_prop_ro(
          "sink_index",
          [](const PyResult &r) -> int {
            return r.record.outputs.empty()
                       ? -1
                       : static_cast<int>(r.record.outputs.front().sink);
          },
          "Index of the first output's sink, or -1.")
      .def("__bool__",
           [](const PyResult &r) { return !r.record.outputs.empty(); })
      .def("__repr__", &PyResult::repr);

  nb::class_<PyBatchResult>(
      m, "BatchResult",
      "Per-packet results of Instance.run_batch, as NumPy arrays.")
      .def_ro("sink", &PyBatchResult::sink,
              "int32: index of the first sink each packet left through, "
              "or -1.")
      .def_ro("outputs", &PyBatchResult::outputs,
              "uint32: how many packets left for each (fan-out makes "
              "several).")
      .def_ro("exception", &PyBatchResult::exception,
              "int32: kind of the first exception (index in "
              "netvm.EXCEPTION_KINDS), or -1.")
      .def_prop_ro(
          "sinks", [](const PyBatchResult &r) { return r.names->sinks; },
          "The sink names the indices refer to.")
      .def("counts", &PyBatchResult::counts,
           "Packets per sink (by their first output), as a dict.")
      .def("__len__", [](const PyBatchResult &r) { return r.count; })
      .def("__repr__", [](const PyBatchResult &r) {
        return "BatchResult(" + std::to_string(r.count) + " packets)";
      });

  nb::class_<PyInstance>(
      m, "Instance",
      "A running instance of an application, with its own data memory and "
      "counters: native code (Application.jit()), the reference "
      "interpreter or the ME emulator (Instance(app, engine=...)). Use it "
      "from one thread at a time (one instance per thread).")
      .def(nb::new_(&newInstance), "app"_a, "engine"_a = "native",
           nb::kw_only(), "watchdog"_a = uint64_t(1) << 20,
           "machine"_a = nb::none(),
           "Instantiate `app` (an Application, or an MEProgram) on `engine`: "
           "'native' (the JIT, as Application.jit()), 'interp' (the "
           "reference interpreter) or 'emu' (compiled for the microengines "
           "and run on the ME emulator; `machine` adds emulator options). "
           "The init handlers run now.")
      .def_prop_ro(
          "engine", [](const PyInstance &i) { return i.engine->kind(); },
          "'native', 'interpreter' or 'emulator'.")
      .def(
          "emulator_stats",
          [](const PyInstance &i) -> nb::object {
            const me::Stats *stats = i.engine->emulatorStats();
            if (!stats)
              return nb::none();
            return nb::module_::import_("json").attr("loads")(
                me::statsToJson(*stats));
          },
          "The ME emulator's statistics summed over the runs so far (what "
          "netvm-emu --stats-json reports, as a dict), or None for other "
          "engines.")
      .def_prop_ro(
          "name", [](const PyInstance &i) { return i.names->app; },
          "The application's name.")
      .def_prop_ro(
          "sources", [](const PyInstance &i) { return i.names->sources; },
          "Source (input port) names; `port` arguments index them.")
      .def_prop_ro(
          "sinks", [](const PyInstance &i) { return i.names->sinks; },
          "Sink (output port) names.")
      .def_prop_ro(
          "pes", [](const PyInstance &i) { return i.names->pes; },
          "NetPE names; `pe` arguments index them.")
      .def_prop_ro(
          "init_exceptions",
          [](const PyInstance &i) {
            return exceptionList(*i.names, i.init.exceptions);
          },
          "Exceptions the init handlers raised.")
      .def("run", &PyInstance::run, "packet"_a.none(), "port"_a.none() = 0,
           nb::kw_only(), "wire_length"_a = nb::none(), "seconds"_a = 0,
           "microseconds"_a = 0,
           "Push one packet through source `port` (an index or a name) and "
           "return what happened to it (a Result). The packet is copied: "
           "the application never changes the caller's bytes.")
      .def("run_batch", &PyInstance::runBatch, "packets"_a.none(),
           "offsets"_a.none() = nb::none(), "port"_a.none() = 0,
           "Push many packets, in order, and return per-packet results as "
           "NumPy arrays (a BatchResult). `packets` is a sequence of "
           "bytes-like objects, or one buffer (e.g. a uint8 array) cut by "
           "`offsets`: n+1 increasing positions, packet i being "
           "buffer[offsets[i]:offsets[i+1]]. Releases the GIL while the "
           "packets run.")
      .def("run_pcap", &PyInstance::runPcap, "path"_a, "port"_a.none() = 0,
           "limit"_a = nb::none(),
           "Push every packet of a pcap file (at most `limit`) and return "
           "how many left through each sink, as a dict. Runs the "
           "application's batch entry without listening to outputs (the "
           "fastest way); releases the GIL. Other counters: counters().")
      .def(
          "data",
          [](nb::handle self, nb::handle pe) {
            PyInstance &i = nb::cast<PyInstance &>(self);
            auto [data, size] = i.memory(pe);
            return i.memoryView(self, data, size);
          },
          "pe"_a = 0,
          "Data memory of NetPE `pe` as a writable uint8 NumPy array (a "
          "view: writes change the instance).")
      .def(
          "shared",
          [](nb::handle self) {
            PyInstance &i = nb::cast<PyInstance &>(self);
            auto [data, size] = i.memory(nb::none());
            return i.memoryView(self, data, size);
          },
          "Shared memory as a writable uint8 NumPy array (a view).")
      .def(
          "read_data",
          [](PyInstance &i, uint64_t offset, std::optional<uint64_t> size,
             nb::handle pe) {
            if (pe.is_none())
              throw nb::type_error("pe must be an int or a name");
            return i.read(pe, offset, size, "data memory");
          },
          "offset"_a = 0, "size"_a = nb::none(), nb::kw_only(), "pe"_a = 0,
          "Copy `size` bytes (default: to the end) of NetPE `pe`'s data "
          "memory from `offset`.")
      .def(
          "write_data",
          [](PyInstance &i, uint64_t offset, nb::handle data, nb::handle pe) {
            if (pe.is_none())
              throw nb::type_error("pe must be an int or a name");
            i.write(pe, offset, data, "data memory");
          },
          "offset"_a, "data"_a, nb::kw_only(), "pe"_a = 0,
          "Write bytes into NetPE `pe`'s data memory at `offset`.")
      .def(
          "read_shared",
          [](PyInstance &i, uint64_t offset, std::optional<uint64_t> size) {
            return i.read(nb::none(), offset, size, "shared memory");
          },
          "offset"_a = 0, "size"_a = nb::none(), "Copy bytes of shared memory.")
      .def(
          "write_shared",
          [](PyInstance &i, uint64_t offset, nb::handle data) {
            i.write(nb::none(), offset, data, "shared memory");
          },
          "offset"_a, "data"_a, "Write bytes into shared memory.")
      .def(
          "lookup_entries",
          [](PyInstance &i, nb::handle pe) {
            nb::list entries;
            for (const netvm_lookup_entry &e :
                 i.lookupResult(i.engine->lookupEntries(i.pe(pe)))) {
              nb::list key;
              for (uint32_t w = 0; w < e.key_length; ++w)
                key.append(e.key[w]);
              entries.append(nb::make_tuple(nb::tuple(key), e.value, e.stamp));
            }
            return entries;
          },
          "pe"_a = 0,
          "The entries of NetPE `pe`'s lookup coprocessor as a list of "
          "(key, value, stamp) tuples, key a tuple of words, in the table's "
          "order (docs/netil.md, 7.2).")
      .def(
          "lookup_age",
          [](PyInstance &i, uint32_t now, uint32_t maxAge, nb::handle pe) {
            return i.lookupResult(i.engine->lookupAge(i.pe(pe), now, maxAge));
          },
          "now"_a, "max_age"_a, "pe"_a = 0,
          "Delete the lookup entries older than `max_age` at time `now` "
          "(now - stamp > max_age, 32-bit unsigned); the number deleted.")
      .def(
          "lookup_delete",
          [](PyInstance &i, std::vector<uint32_t> key, nb::handle pe) {
            if (key.empty() || key.size() > NETVM_LOOKUP_MAX_KEY)
              throw nb::value_error("a lookup key has 1 to 16 words");
            return i.lookupResult(i.engine->lookupDelete(i.pe(pe), key));
          },
          "key"_a, "pe"_a = 0,
          "Delete the lookup entry of `key` (a sequence of words); whether "
          "there was one.")
      .def("counters", &PyInstance::counters,
           "Counters since the instance was made, as a dict: packets, "
           "dropped, unconnected, exceptions {kind: n}, sinks {name: "
           "{packets, bytes}}, pes {name: {runs, sent, dropped, "
           "exceptions}}.")
      .def("__repr__", [](const PyInstance &i) {
        return "Instance(" + i.names->app + ")";
      });

  nb::list kinds;
  for (uint32_t k = 0; k < NETVM_EXC_KINDS; ++k)
    kinds.append(netvm_exception_name(k));
  m.attr("EXCEPTION_KINDS") = nb::tuple(kinds);
  m.def("compile", &compile, "lang"_a, "inputs"_a, "files"_a, "opt_level"_a,
        "protodb"_a, "name"_a, "target"_a, "machine"_a, "link_type"_a = 1,
        "link_swapped"_a = false,
        "Compile; returns (Application or None, diagnostics).");
  m.def("me_program", &meProgramOf, "assembly"_a, "file_name"_a, "layout"_a,
        "machine"_a, "name"_a,
        "An MEProgram from ME assembly and its layout (a dict).");
  m.attr("HAVE_ME_CODEGEN") = haveMECodeGen();
}
