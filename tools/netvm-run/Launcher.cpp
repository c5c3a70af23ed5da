//===- Launcher.cpp - netvm-run without LLVM when the run is cached -------===//
//
// `netvm-run` is this small program: it links the C runtime, packet I/O
// and the native engine, but no LLVM or MLIR library, whose loading alone
// costs about 40 ms. For a command line it knows (a tcpdump expression
// over a pcap file, written with -w or summarized with -q, or NetIL or
// .mlir application files over a pcap file; see parseCommandLine) it
// looks what the user typed (and the files' contents) up in the front cache
// (netvm/cache/RunCache.h): on a hit it loads the shared object the entry
// holds and runs it itself, printing what netvm-run-full prints. Every
// other command line, and a miss, runs netvm-run-full (the compiler and
// every engine, from this file's directory) with the same arguments; on a
// miss it passes the key in $NETVM_RUN_CACHE_KEY, and netvm-run-full
// stores the entry after compiling. docs/native.md has the design.
//
//===----------------------------------------------------------------------===//

#include "netvm/Runtime/Engine.h"
#include "netvm/cache/RunCache.h"
#include "netvm/io/PacketIO.h"
#include "netvm/runtime.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <map>
#include <string>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <vector>
#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#endif

using namespace netvm;

namespace {

/// A command line the launcher runs itself.
struct FastRun {
  std::string expression;         // --pcap-filter
  std::vector<std::string> words; // an expression's words, or files
  bool viaOption = false;
  /// The words are application files (NetIL, or one .mlir), not a tcpdump
  /// expression.
  bool files = false;
  /// The files' contents, in order.
  std::vector<std::string> contents;
  std::string input, output; // -r, -w
  unsigned threads = 1;      // -j
  uint64_t count = 0;        // -c: matches of a filter, packets read else
  char optLevel = '2';       // -O
};

bool isNumber(const char *text, size_t maxDigits) {
  size_t n = std::strlen(text);
  if (n == 0 || n > maxDigits || text[0] < '1' || text[0] > '9')
    return false;
  for (size_t i = 0; i < n; ++i)
    if (text[i] < '0' || text[i] > '9')
      return false;
  return true;
}

bool endsWith(const std::string &s, const char *suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

/// Whether the launcher runs `argv` itself, and what it says. Anything it
/// does not know exactly as netvm-run-full would read it goes there: other
/// options, repeated ones, '%s' patterns, '-' for standard input or output,
/// .nvapp descriptions (they name other files), per-packet listings (a
/// filter without -w or -q prints a decoded line per match).
bool parseCommandLine(int argc, char **argv, FastRun &run) {
  bool haveInput = false, haveOutput = false, haveThreads = false,
       haveCount = false, haveOpt = false, quiet = false;
  // "-r FILE" or "-rFILE": the value, or null.
  auto value = [&](int &i, const char *flag) -> const char * {
    size_t n = std::strlen(flag);
    if (std::strncmp(argv[i], flag, n))
      return nullptr;
    if (argv[i][n])
      return argv[i][n] == '=' ? nullptr : argv[i] + n;
    // A value that looks like an option: netvm-run-full decides.
    return i + 1 < argc && argv[i + 1][0] != '-' ? argv[++i] : nullptr;
  };
  for (int i = 1; i < argc; ++i) {
    const char *arg = argv[i];
    std::string a = arg;
    if (a.empty())
      return false;
    if (a[0] != '-') {
      run.words.push_back(a);
      continue;
    }
    if (a == "-n" || a == "-nn" || a == "-p" || a == "-U")
      continue;
    if (a == "-q") {
      if (quiet)
        return false;
      quiet = true;
      continue;
    }
    if (a.compare(0, 14, "--pcap-filter=") == 0 || a == "--pcap-filter") {
      if (run.viaOption)
        return false;
      if (a == "--pcap-filter") {
        if (i + 1 >= argc || argv[i + 1][0] == '-')
          return false;
        run.expression = argv[++i];
      } else {
        run.expression = a.substr(14);
      }
      run.viaOption = true;
      continue;
    }
    const char *v = nullptr;
    if (a.compare(0, 2, "-r") == 0) {
      if (haveInput || !(v = value(i, "-r")))
        return false;
      run.input = v;
      haveInput = true;
    } else if (a.compare(0, 2, "-w") == 0) {
      if (haveOutput || !(v = value(i, "-w")))
        return false;
      run.output = v;
      haveOutput = true;
    } else if (a.compare(0, 2, "-j") == 0) {
      if (haveThreads || !(v = value(i, "-j")) || !isNumber(v, 2))
        return false;
      run.threads = unsigned(std::atoi(v));
      haveThreads = true;
    } else if (a.compare(0, 2, "-c") == 0) {
      if (haveCount || !(v = value(i, "-c")) || !isNumber(v, 18))
        return false;
      run.count = std::strtoull(v, nullptr, 10);
      haveCount = true;
    } else if (a.size() == 3 && a.compare(0, 2, "-O") == 0 && a[2] >= '0' &&
               a[2] <= '3') {
      if (haveOpt)
        return false;
      run.optLevel = a[2];
      haveOpt = true;
    } else {
      return false;
    }
  }
  if (!haveInput || run.input.empty() || run.input == "-" ||
      run.input.find("%s") != std::string::npos)
    return false;
  if (haveOutput && (run.output.empty() || run.output == "-"))
    return false;
  if (run.viaOption == !run.words.empty())
    return false; // none, or both (netvm-run-full says what is wrong)
  const std::string &first = run.viaOption ? run.expression : run.words[0];
  run.files =
      !run.viaOption && (endsWith(first, ".netil") ||
                         endsWith(first, ".nvapp") || endsWith(first, ".mlir"));
  if (!run.files)
    return haveOutput || quiet; // else a decoded line per matching packet
  // NetIL files (a chain), or one .mlir file; an .nvapp names other files.
  bool netil = endsWith(first, ".netil");
  if (!netil && !(endsWith(first, ".mlir") && run.words.size() == 1))
    return false;
  for (const std::string &file : run.words) {
    if (netil && !endsWith(file, ".netil"))
      return false;
    std::string text;
    if (!cache::readFile(file, 64 << 20, text)) // the compiler's limit
      return false;                             // netvm-run-full says why
    run.contents.push_back(std::move(text));
  }
  return true;
}

/// This program's directory, from /proc/self/exe.
std::string selfDirectory(std::string &self) {
  char buffer[4096];
  ssize_t n = readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (n <= 0)
    return "";
  self.assign(buffer, size_t(n));
  size_t slash = self.find_last_of('/');
  return slash == std::string::npos ? "." : self.substr(0, slash);
}

/// "path size mtime" of a file, or "" if it cannot be read.
std::string identity(const std::string &path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    return "";
  return path + " " + std::to_string(st.st_size) + " " +
         std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

/// What the JIT's code depends on of this CPU: its identification and
/// feature words.
std::string cpuIdentity() {
  std::string id;
#if defined(__x86_64__)
  unsigned leaves[] = {0, 1, 7, 0x80000001};
  for (unsigned leaf : leaves) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    __cpuid_count(leaf, 0, a, b, c, d);
    if (leaf == 1)
      b &= 0x00ffffff; // the APIC id differs between cores
    id += " " + std::to_string(a) + "," + std::to_string(b) + "," +
          std::to_string(c) + "," + std::to_string(d);
  }
#elif defined(__aarch64__)
  id += " " + std::to_string(getauxval(AT_HWCAP)) + "," +
        std::to_string(getauxval(AT_HWCAP2));
  if (const char *platform =
          reinterpret_cast<const char *>(getauxval(AT_PLATFORM)))
    id += std::string(" ") + platform;
#endif
  return id;
}

/// The front cache's key: what the user typed that decides the code, and
/// what decides how it was compiled (the binaries, the runtime's ABI, the
/// CPU), and the trace's link type and byte order, which a tcpdump
/// expression is compiled for. The rest of the trace, -w, -j, -c and -q
/// change how it runs, not the code.
cache::Digest frontKey(const FastRun &run, const std::string &self,
                       const std::string &full,
                       const rt::PacketReader &reader) {
  cache::Sha256 hash;
  auto field = [&](const std::string &text) {
    std::string size = std::to_string(text.size()) + ":";
    hash.update(size);
    hash.update(text);
  };
  field("netvm-run front cache 1");
  field("abi " + std::to_string(NETVM_ABI_VERSION));
  field(identity(self));
  field(identity(full));
  field("cpu" + cpuIdentity());
  field(std::string("opt ") + run.optLevel);
  field("link " + std::to_string(reader.linkType()) +
        (reader.swapped() ? " swapped" : ""));
  field(run.viaOption ? "pcap-filter" : run.files ? "files" : "words");
  if (run.viaOption)
    field(run.expression);
  // Files by name as typed (their names are the NetPEs' and the
  // locations') and contents.
  for (const std::string &word : run.words)
    field(word);
  for (const std::string &text : run.contents)
    field(text);
  return hash.finish();
}

double millisSince(const timespec &start) {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (now.tv_sec - start.tv_sec) * 1e3 +
         (now.tv_nsec - start.tv_nsec) / 1e6;
}

/// $NETVM_RUN_TIMES set: the launcher's phases on standard error, and,
/// with $NETVM_RUN_T0 (CLOCK_MONOTONIC nanoseconds before the exec), the
/// time from there to the first output and to the end.
struct Timer {
  bool on = std::getenv("NETVM_RUN_TIMES") != nullptr;
  timespec start;
  long long t0 = -1;
  double mainSinceExec = -1;
  std::string phases;
  Timer() {
    clock_gettime(CLOCK_MONOTONIC, &start);
    if (const char *t = std::getenv("NETVM_RUN_T0")) {
      t0 = std::atoll(t);
      mainSinceExec = sinceExec();
    }
  }
  void mark(const char *phase) {
    if (!on)
      return;
    char text[64];
    std::snprintf(text, sizeof text, "%s%s %.3f", phases.empty() ? "" : ", ",
                  phase, millisSince(start));
    phases += text;
  }
  double sinceExec() const {
    if (t0 < 0)
      return -1;
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec * 1000000000LL + now.tv_nsec - t0) / 1e6;
  }
};

int fail(const std::string &message) {
  std::fprintf(stderr, "netvm-run: %s\n", message.c_str());
  return 1;
}

/// Runs the cached application `app` as netvm-run-full would run `run`:
/// the same engine, stream and writer, and the same report.
int runCached(const FastRun &run, const netvm_app_desc *app,
              rt::PacketReader &reader_, Timer &timer) {
  rt::EngineOptions options;
  options.threads = run.threads;
  std::string error;
  std::unique_ptr<rt::Engine> engine = rt::Engine::native(app, options, error);
  if (!engine)
    return fail(error);
  if (!engine->note().empty())
    std::fprintf(stderr, "netvm-run: note: %s\n", engine->note().c_str());
  rt::PacketReader *reader = &reader_;
  // The key holds the trace's link type: an expression's code was
  // compiled for it (applications of another link type are not served
  // here, see main).
  engine->linkType = reader->linkType();
  if (!rt::checkLinkType(*reader, error, engine->linkType))
    return fail(run.input + ": " + error);
  if (engine->sourceNames().empty())
    return fail("the application has no source to push packets into");
  llvm::ArrayRef<std::string> sinks = engine->sinkNames();
  // -w: one file, or one per sink with '%s' replaced by its name.
  std::vector<std::unique_ptr<rt::PcapWriter>> writers;
  if (!run.output.empty()) {
    bool perSink = run.output.find("%s") != std::string::npos;
    if (!perSink && sinks.size() != 1)
      return fail("-w '" + run.output +
                  "' has no '%s' but the application has " +
                  std::to_string(sinks.size()) +
                  " sinks; use a pattern such as 'out-%s.pcap'");
    writers.resize(sinks.size());
    for (size_t i = 0; i < sinks.size(); ++i) {
      std::string path = run.output;
      for (size_t at; perSink && (at = path.find("%s")) != std::string::npos;)
        path.replace(at, 2, sinks[i]);
      writers[i] = rt::PcapWriter::create(path, reader->linkType(), error,
                                          reader->snapLength());
      if (!writers[i])
        return fail(error);
    }
  }
  rt::PacketResult init = engine->initialize();
  if (!engine->failure().empty())
    return fail(engine->failure());
  llvm::ArrayRef<std::string> pes = engine->peNames();
  for (const rt::ExceptionReport &e : init.exceptions)
    std::fprintf(stderr,
                 "netvm-run: warning: init handler of @%s raised %s "
                 "at %s%s%s\n",
                 e.pe >= 0 && size_t(e.pe) < pes.size() ? pes[e.pe].c_str()
                                                        : "",
                 e.kindName(), e.location.c_str(), e.detail.empty() ? "" : ": ",
                 e.detail.c_str());
  timer.mark("ready");

  double firstOutput = -1;
  rt::StreamOptions streamOptions;
  // -c counts what a filter accepts, as tcpdump's does; for an
  // application, packets read.
  if (run.files)
    streamOptions.maxPackets = run.count;
  else
    streamOptions.maxMatches = run.count;
  auto onOutput = [&](unsigned sink, const rt::PacketView &packet) {
    if (timer.on && firstOutput < 0)
      firstOutput = timer.sinceExec();
    if (sink < writers.size() && writers[sink])
      writers[sink]->write(packet);
  };
  rt::OutputFn outputFn = onOutput;
  if (!writers.empty())
    streamOptions.onOutput = &outputFn;
  rt::StreamStats stats;
  bool inputOk = engine->runStream(0, *reader, streamOptions, nullptr,
                                   rt::ResultDetail::Full, stats, error);
  timer.mark("run");
  if (!inputOk && error.compare(0, run.input.size() + 1, run.input + ":"))
    error = run.input + ": " + error;
  if (!engine->failure().empty())
    return fail(engine->failure());

  // The summary, as netvm-run-full's Report::summary prints it; for a
  // tcpdump expression, packets too short for it count as dropped.
  rt::Counters c = engine->counters();
  uint64_t tooShort = run.files ? 0 : c.exceptions[NETVM_EXC_PACKET_BOUNDS];
  c.exceptions[NETVM_EXC_PACKET_BOUNDS] -= tooShort;
  c.dropped += tooShort;
  std::map<std::string, uint64_t> exceptions;
  for (uint32_t k = 0; k < NETVM_EXC_KINDS; ++k)
    if (c.exceptions[k])
      exceptions[netvm_exception_name(k)] = c.exceptions[k];
  FILE *os = stdout;
  const std::string &source = engine->sourceNames()[0];
  std::fprintf(os, "packets: %llu (into source %s)\n",
               (unsigned long long)stats.packets, source.c_str());
  for (size_t i = 0; i < sinks.size(); ++i) {
    rt::SinkCounters s = engine->sinkCounters(unsigned(i));
    std::fprintf(os, "sink %-16s %10llu packets %12llu bytes\n",
                 sinks[i].c_str(), (unsigned long long)s.packets,
                 (unsigned long long)s.bytes);
  }
  std::fprintf(os, "dropped %23llu", (unsigned long long)c.dropped);
  if (tooShort)
    std::fprintf(os, " (%llu too short for the expression)",
                 (unsigned long long)tooShort);
  std::fprintf(os, "\n");
  if (c.unconnected)
    std::fprintf(os, "unconnected %19llu\n", (unsigned long long)c.unconnected);
  std::fprintf(os, "exceptions %20llu",
               (unsigned long long)c.totalExceptions());
  if (!exceptions.empty()) {
    const char *separator = " (";
    for (auto &[kind, count] : exceptions) {
      std::fprintf(os, "%s%s %llu", separator, kind.c_str(),
                   (unsigned long long)count);
      separator = ", ";
    }
    std::fprintf(os, ")");
  }
  std::fprintf(os, "\n");
  for (size_t i = 0; i < pes.size(); ++i) {
    rt::PECounters p = engine->peCounters(unsigned(i));
    if (pes.size() == 1 && tooShort) {
      p.exceptions -= std::min(p.exceptions, tooShort);
      p.dropped += tooShort;
    }
    std::fprintf(os,
                 "pe %-18s %10llu runs %8llu sent %8llu dropped %8llu "
                 "exceptions\n",
                 pes[i].c_str(), (unsigned long long)p.runs,
                 (unsigned long long)p.sent, (unsigned long long)p.dropped,
                 (unsigned long long)p.exceptions);
  }
  int status = 0;
  if (!inputOk) {
    std::fflush(stdout);
    status = fail(error);
  }
  if (timer.on) {
    std::fprintf(stderr, "netvm-run: launcher: %s ms from main",
                 timer.phases.c_str());
    if (timer.t0 >= 0)
      std::fprintf(stderr,
                   "; from exec: main %.3f ms, first output %.3f ms, end "
                   "%.3f ms",
                   timer.mainSinceExec, firstOutput, timer.sinceExec());
    std::fprintf(stderr, "\n");
  }
  return status;
}

} // namespace

int main(int argc, char **argv) {
  Timer timer;
  std::string self;
  std::string dir = selfDirectory(self);
  std::string full = (dir.empty() ? std::string(".") : dir) + "/netvm-run-full";
  FastRun run;
  std::string cacheDir;
  if (parseCommandLine(argc, argv, run))
    cacheDir = cache::directory();
  // The trace opens first: its link type is part of the key. Anything
  // unusual (no trace, an application file on a trace that is not
  // Ethernet, which netvm-run-full refuses or reads as the file declares)
  // goes to netvm-run-full.
  std::string error;
  std::unique_ptr<rt::PacketReader> reader;
  if (!cacheDir.empty() && !self.empty()) {
    reader = rt::PacketReader::open(run.input, /*hex=*/false, error);
    if (!reader || (run.files && reader->linkType() != 1))
      cacheDir.clear();
  }
  if (!cacheDir.empty() && !self.empty()) {
    cache::Digest key = frontKey(run, self, full, *reader);
    std::string path = cache::entryPath(cacheDir, key);
    std::string symbol;
    timer.mark("key");
    if (cache::checkEntry(path, key, symbol)) {
      timer.mark("checked");
      void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      const netvm_app_desc *app = handle ? static_cast<const netvm_app_desc *>(
                                               dlsym(handle, symbol.c_str()))
                                         : nullptr;
      timer.mark("loaded");
      if (app) {
        int status = runCached(run, app, *reader, timer);
        // Standard output that could not be written is an error, and the
        // results are not complete.
        if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
          std::fprintf(stderr, "netvm-run: cannot write standard output: %s\n",
                       std::strerror(errno));
          return status ? status : 1;
        }
        return status;
      }
      // An entry that checks but does not load (made by another linker or
      // for another system): compiled again and replaced below.
      if (handle)
        dlclose(handle);
    }
    setenv("NETVM_RUN_CACHE_KEY", cache::toHex(key.data(), key.size()).c_str(),
           1);
  }
  execv(full.c_str(), argv);
  std::fprintf(stderr, "netvm-run: cannot run %s: %s\n", full.c_str(),
               std::strerror(errno));
  return 1;
}
