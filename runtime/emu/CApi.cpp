//===- CApi.cpp - Embedding the ME emulator from C ------------------------===//
//
// The C API of runtime/include/netvm/emu/emu.h over netvm::me::Emulator. Every
// entry point checks its arguments and the order of calls, reports
// failures through netvm_emu_error, and catches every C++ exception
// before it reaches the C caller.
//
//===----------------------------------------------------------------------===//

#include "netvm/emu/Emulator.h"
#include "netvm/emu/Options.h"
#include "netvm/emu/StatsJson.h"
#include "netvm/emu/emu.h"

#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <new>
#include <optional>

using namespace netvm::me;

namespace {
/// The receive side: queued packets first, then the input function's.
class CInput final : public PacketInput {
public:
  bool next(InputPacket &packet) override {
    if (!queue.empty()) {
      packet = std::move(queue.front());
      queue.pop_front();
      return true;
    }
    if (!fn || ended)
      return false;
    const uint8_t *bytes = nullptr;
    size_t length = 0;
    uint32_t wireLength = 0;
    int got = fn(user, &bytes, &length, &wireLength);
    if (got == 1 && (bytes || length == 0)) {
      packet.bytes.assign(bytes, bytes + length);
      packet.wireLength = wireLength;
      return true;
    }
    ended = true;
    if (got != 0)
      failed = got == 1 ? "the input function returned a packet without bytes"
                        : "the input function failed (returned " +
                              std::to_string(got) + ")";
    return false;
  }

  std::deque<InputPacket> queue;
  netvm_emu_input_fn fn = nullptr;
  void *user = nullptr;
  bool ended = false;
  std::string failed;
};

class COutput final : public PacketOutput {
public:
  void transmit(const uint8_t *bytes, size_t length, uint32_t wireLength,
                unsigned port, uint64_t cycle) override {
    if (fn)
      fn(user, bytes, length, wireLength, port, cycle);
  }
  netvm_emu_output_fn fn = nullptr;
  void *user = nullptr;
};
} // namespace

struct netvm_emu {
  MachineConfig config;
  std::optional<Emulator> emulator; // once an image is loaded
  bool ran = false;
  CInput inputs[maxPorts];
  COutput output;
  netvm_emu_host_fn hostFn = nullptr;
  void *hostUser = nullptr;
  uint64_t hostFirstCycle = 0;
  std::vector<std::string> faults; // as text, made after the run
  std::string error;
};

static_assert(NETVM_EMU_PORTS == maxPorts, "emu.h's ports are the MSF's");
static_assert(NETVM_EMU_SCRATCH == unsigned(Memory::Scratch) &&
                  NETVM_EMU_SRAM == unsigned(Memory::Sram) &&
                  NETVM_EMU_DRAM == unsigned(Memory::Dram),
              "host.h numbers the memories as the image format does");

static const char nullEmulator[] = "the emulator is NULL";

/// Sets the message of an exception; if even that cannot allocate, says
/// "out of memory", which fits in any std::string without allocating.
static void exceptionError(netvm_emu *emu, const char *what) noexcept {
  try {
    emu->error = what;
  } catch (...) {
    emu->error = "out of memory";
  }
}

/// Runs `body` (returning 0 or -1) with the error cleared, turning
/// exceptions into an error.
template <typename Body> static int guarded(netvm_emu *emu, Body body) {
  if (!emu)
    return -1;
  try {
    emu->error.clear();
    return body();
  } catch (const std::bad_alloc &) {
    exceptionError(emu, "out of memory");
  } catch (const std::exception &e) {
    exceptionError(emu, e.what());
  } catch (...) {
    exceptionError(emu, "internal error (an unknown exception)");
  }
  return -1;
}

static int fail(netvm_emu *emu, std::string message) {
  emu->error = std::move(message);
  return -1;
}

/// A string the caller frees with netvm_emu_free, or null.
static char *copyOut(const std::string &text) {
  char *copy = static_cast<char *>(std::malloc(text.size() + 1));
  if (copy)
    std::memcpy(copy, text.c_str(), text.size() + 1);
  return copy;
}

/// Fails unless the emulator may still be given inputs and host code.
static bool beforeRun(netvm_emu *emu, const char *what) {
  if (!emu->ran)
    return true;
  emu->error = std::string(what) + " after the run";
  return false;
}

static bool loaded(netvm_emu *emu, const char *what) {
  if (emu->emulator)
    return true;
  emu->error = std::string(what) + " before an image is loaded";
  return false;
}

netvm_emu *netvm_emu_create(void) {
  try {
    return new netvm_emu();
  } catch (...) {
    return nullptr;
  }
}

void netvm_emu_destroy(netvm_emu *emu) { delete emu; }

const char *netvm_emu_error(const netvm_emu *emu) {
  return emu ? emu->error.c_str() : nullEmulator;
}

void netvm_emu_free(void *memory) { std::free(memory); }

int netvm_emu_set_option(netvm_emu *emu, const char *name, const char *value) {
  return guarded(emu, [&] {
    if (!name || !value)
      return fail(emu, "netvm_emu_set_option: the option's name and value "
                       "must not be NULL");
    if (emu->emulator)
      return fail(emu, std::string("option '") + name +
                           "' set after the image was loaded (set options "
                           "first)");
    std::string error;
    if (!applyMachineOption(emu->config, name, value, error))
      return fail(emu, error);
    return 0;
  });
}

size_t netvm_emu_option_count(void) { return machineOptionCount(); }

const char *netvm_emu_option_name(size_t index) {
  return index < machineOptionCount() ? machineOption(index).name : nullptr;
}

const char *netvm_emu_option_value(size_t index) {
  return index < machineOptionCount() ? machineOption(index).value : nullptr;
}

const char *netvm_emu_option_help(size_t index) {
  return index < machineOptionCount() ? machineOption(index).help : nullptr;
}

static int loadBytes(netvm_emu *emu, const uint8_t *bytes, size_t size,
                     const std::string &origin) {
  if (emu->emulator)
    return fail(emu, "an image is already loaded (an emulator loads one)");
  std::string prefix = origin.empty() ? "" : origin + ": ";
  if (!looksLikeImage(bytes, size))
    return fail(emu, prefix + "not a microengine image (assemble programs "
                              "with netvm-me-as)");
  Image image;
  std::string error;
  if (!readImage(bytes, size, image, error))
    return fail(emu, prefix + error);
  emu->emulator.emplace(emu->config);
  if (!emu->emulator->load(image, error)) {
    emu->emulator.reset();
    return fail(emu, prefix + error);
  }
  return 0;
}

int netvm_emu_load_image(netvm_emu *emu, const void *bytes, size_t size) {
  return guarded(emu, [&] {
    if (!bytes)
      return fail(emu, "netvm_emu_load_image: the image bytes are NULL");
    return loadBytes(emu, static_cast<const uint8_t *>(bytes), size, "");
  });
}

int netvm_emu_load_file(netvm_emu *emu, const char *path) {
  return guarded(emu, [&] {
    if (!path)
      return fail(emu, "netvm_emu_load_file: the path is NULL");
    if (emu->emulator)
      return fail(emu, "an image is already loaded (an emulator loads one)");
    std::vector<uint8_t> bytes;
    std::string error;
    if (!readFileBytes(path, bytes, error))
      return fail(emu, error);
    return loadBytes(emu, bytes.data(), bytes.size(), path);
  });
}

static bool validPort(netvm_emu *emu, unsigned port) {
  if (port < maxPorts)
    return true;
  emu->error = "receive port " + std::to_string(port) + " does not exist (0-" +
               std::to_string(maxPorts - 1) + ")";
  return false;
}

int netvm_emu_queue_packet_on(netvm_emu *emu, unsigned port,
                              const uint8_t *bytes, size_t length,
                              uint32_t wire_length) {
  return guarded(emu, [&] {
    if (!bytes && length)
      return fail(emu, "netvm_emu_queue_packet: the packet bytes are NULL");
    if (!validPort(emu, port) || !beforeRun(emu, "a packet queued"))
      return -1;
    InputPacket packet;
    if (length)
      packet.bytes.assign(bytes, bytes + length);
    packet.wireLength = wire_length;
    emu->inputs[port].queue.push_back(std::move(packet));
    return 0;
  });
}

int netvm_emu_queue_packet(netvm_emu *emu, const uint8_t *bytes, size_t length,
                           uint32_t wire_length) {
  return netvm_emu_queue_packet_on(emu, 0, bytes, length, wire_length);
}

int netvm_emu_set_port_input(netvm_emu *emu, unsigned port,
                             netvm_emu_input_fn fn, void *user) {
  return guarded(emu, [&] {
    if (!validPort(emu, port) || !beforeRun(emu, "the input set"))
      return -1;
    emu->inputs[port].fn = fn;
    emu->inputs[port].user = user;
    return 0;
  });
}

int netvm_emu_set_input(netvm_emu *emu, netvm_emu_input_fn fn, void *user) {
  return netvm_emu_set_port_input(emu, 0, fn, user);
}

int netvm_emu_set_output(netvm_emu *emu, netvm_emu_output_fn fn, void *user) {
  return guarded(emu, [&] {
    if (!beforeRun(emu, "the output set"))
      return -1;
    emu->output.fn = fn;
    emu->output.user = user;
    return 0;
  });
}

int netvm_emu_attach_host(netvm_emu *emu, netvm_emu_host_fn fn, void *user,
                          uint64_t first_cycle) {
  return guarded(emu, [&] {
    if (!fn)
      return fail(emu, "netvm_emu_attach_host: the host function is NULL");
    if (!beforeRun(emu, "host code attached"))
      return -1;
    if (emu->hostFn)
      return fail(emu, "host code is already attached (one host function "
                       "per emulator)");
    emu->hostFn = fn;
    emu->hostUser = user;
    emu->hostFirstCycle = first_cycle;
    return 0;
  });
}

static std::string faultText(const Fault &f) {
  return "ME " + std::to_string(f.me) + " context " + std::to_string(f.ctx) +
         " pc " + std::to_string(f.pc) + " cycle " + std::to_string(f.cycle) +
         ": " + f.reason + "\n    " + f.instruction;
}

int netvm_emu_run(netvm_emu *emu, void (*progress)(uint64_t, void *),
                  void *user, uint64_t progress_cycles) {
  return guarded(emu, [&] {
    if (!loaded(emu, "netvm_emu_run called"))
      return -1;
    if (emu->ran)
      return fail(emu, "the emulator has already run (create another to run "
                       "again)");
    emu->ran = true;
    Emulator &emulator = *emu->emulator;
    // Only ports with input: the others stay without, as in netvm-emu.
    for (unsigned port = 0; port < maxPorts; ++port)
      if (emu->inputs[port].fn || !emu->inputs[port].queue.empty())
        emulator.setInput(port, &emu->inputs[port]);
    emulator.setOutput(&emu->output);
    if (emu->hostFn)
      emulator.attachHost(emu->hostFn, emu->hostUser, emu->hostFirstCycle);
    emulator.run(progress, user, progress ? progress_cycles : 0);
    for (const Fault &f : emulator.stats().faults)
      emu->faults.push_back(faultText(f));
    for (unsigned port = 0; port < maxPorts; ++port)
      if (!emu->inputs[port].failed.empty())
        return fail(emu, "receive port " + std::to_string(port) + ": " +
                             emu->inputs[port].failed);
    return 0;
  });
}

char *netvm_emu_stats_json(netvm_emu *emu) {
  char *json = nullptr;
  guarded(emu, [&] {
    if (!loaded(emu, "statistics asked for"))
      return -1;
    json = copyOut(statsToJson(emu->emulator->stats()));
    return json ? 0 : fail(emu, "out of memory");
  });
  return json;
}

/// A statistic, or 0 before loading.
template <uint64_t Stats::*Field>
static uint64_t statistic(const netvm_emu *emu) {
  return emu && emu->emulator ? emu->emulator->stats().*Field : 0;
}

uint64_t netvm_emu_cycles(const netvm_emu *emu) {
  return statistic<&Stats::cycles>(emu);
}
uint64_t netvm_emu_packets_offered(const netvm_emu *emu) {
  return statistic<&Stats::packetsOffered>(emu);
}
uint64_t netvm_emu_packets_received(const netvm_emu *emu) {
  return statistic<&Stats::packetsReceived>(emu);
}
uint64_t netvm_emu_packets_dropped(const netvm_emu *emu) {
  return statistic<&Stats::packetsDropped>(emu);
}
uint64_t netvm_emu_packets_sent(const netvm_emu *emu) {
  return statistic<&Stats::packetsSent>(emu);
}

const char *netvm_emu_stop_reason(const netvm_emu *emu) {
  return emu && emu->emulator ? emu->emulator->stats().stopReason.c_str() : "";
}

size_t netvm_emu_fault_count(const netvm_emu *emu) {
  return emu ? emu->faults.size() : 0;
}

const char *netvm_emu_fault(const netvm_emu *emu, size_t index) {
  return emu && index < emu->faults.size() ? emu->faults[index].c_str()
                                           : nullptr;
}

int netvm_emu_read_memory(netvm_emu *emu, unsigned memory, uint32_t address,
                          void *out, size_t length) {
  return guarded(emu, [&] {
    if (!out && length)
      return fail(emu, "netvm_emu_read_memory: the output buffer is NULL");
    if (memory > NETVM_EMU_DRAM)
      return fail(emu, "unknown memory " + std::to_string(memory) +
                           " (NETVM_EMU_SCRATCH, NETVM_EMU_SRAM or "
                           "NETVM_EMU_DRAM)");
    if (!loaded(emu, "memory read"))
      return -1;
    Memory which = Memory(memory);
    std::vector<uint8_t> bytes;
    if (length > UINT32_MAX ||
        !emu->emulator->readMemory(which, address, uint32_t(length), bytes))
      return fail(emu, std::to_string(length) + " bytes at " +
                           std::to_string(address) + " are outside " +
                           memoryName(which));
    if (length)
      std::memcpy(out, bytes.data(), length);
    return 0;
  });
}

char *netvm_emu_registers(netvm_emu *emu) {
  char *text = nullptr;
  guarded(emu, [&] {
    if (!loaded(emu, "registers asked for"))
      return -1;
    text = copyOut(emu->emulator->dumpRegisters());
    return text ? 0 : fail(emu, "out of memory");
  });
  return text;
}
