//===- Emulator.h - The IXP-like network processor emulator -----*- C++ -*-===//
//
// A cycle-approximate, deterministic emulator of an IXP2400-class network
// processor: microengines with hardware contexts, local memory, CAM, CRC,
// next-neighbour registers; scratch (with atomics and rings), SRAM and DRAM
// reached by asynchronous commands that complete into transfer registers
// and raise signals; a hash unit; and a media switch fabric that receives
// packets into DRAM buffers and transmits them. Packets come from a
// PacketInput and leave through a PacketOutput (the tools adapt pcap
// files). The same image, configuration and input always give the same
// statistics. docs/me-isa.md describes the machine and the timing model.
//
//===----------------------------------------------------------------------===//

#ifndef NETVM_EMU_EMULATOR_H
#define NETVM_EMU_EMULATOR_H

#include "netvm/emu/Image.h"
#include "netvm/emu/Machine.h"
#include "netvm/emu/host.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace netvm::me {

/// A packet offered to the receive side.
struct InputPacket {
  std::vector<uint8_t> bytes;
  uint32_t wireLength = 0; // >= bytes.size(); 0 means bytes.size()
  /// The arrival time (a capture's timestamp): words 4 and 5 of the
  /// receive descriptor.
  uint32_t seconds = 0, microseconds = 0;
  /// The receive port the descriptor reports (and the statistics count)
  /// when not negative, instead of the port whose input gave the packet:
  /// a host that keeps packets of several ports in one order feeds them
  /// all through one input.
  int port = -1;
};

class PacketInput {
public:
  virtual ~PacketInput();
  /// The next packet, or false at the end of the input. `packet` comes
  /// empty, but may hold the buffer of an earlier packet (the emulator
  /// recycles them): assign or swap into packet.bytes, do not append.
  virtual bool next(InputPacket &packet) = 0;
  /// Asked when next() returned false: true if the input is live (a wire
  /// more packets may come on later, such as a socket session's), so that
  /// the port is not over, only empty for now; receives wait, and the
  /// emulator asks again when a paused run resumes (Emulator::pause).
  /// Lossless input only (no line rate). False by default: the end.
  virtual bool live() const;
};

/// A packet that left the media switch fabric (msf[tx]).
struct Transmission {
  /// The packet's bytes, in emulated DRAM: valid during the call only.
  const uint8_t *bytes = nullptr;
  size_t length = 0;        // descriptor word 0
  uint32_t wireLength = 0;  // descriptor word 1 (at least `length`)
  unsigned port = 0;        // descriptor word 2
  uint64_t cycle = 0;       // the ME cycle it left
  uint32_t dramAddress = 0; // where the packet was read from
  /// Descriptor word 3 (a transmit with count 4): a tag the program gives
  /// the packet, such as the receive descriptor's packet number. 0 and
  /// hasTag false with a shorter descriptor.
  uint32_t tag = 0;
  bool hasTag = false;
};

/// Where transmitted packets go. The emulator calls transmit(const
/// Transmission &); its default implementation calls the five-argument
/// form, so an output may override either. Inside either call,
/// Emulator::readMemory sees memory as of the transmit's cycle: every
/// effect of earlier cycles, and of that cycle's events ordered before it,
/// is applied, none later (memory changes only as the event queue is
/// applied, in (cycle, issue order)); it does not change the emulator.
class PacketOutput {
public:
  virtual ~PacketOutput();
  /// A packet left: what the emulator calls.
  virtual void transmit(const Transmission &t);
  /// A packet left transmit port `port` at ME cycle `cycle`; does nothing
  /// unless overridden.
  virtual void transmit(const uint8_t *bytes, size_t length,
                        uint32_t wireLength, unsigned port, uint64_t cycle);
};

/// Why an ME was idle (no context ready): what the context that ran next
/// had waited for.
enum StallReason : uint8_t {
  StallScratch,
  StallSram,
  StallDram,
  StallHash,
  StallRx,
  StallTx,
  StallSignal, // signals from other contexts or MEs
  StallDone,   // after its last instruction: finished or waiting forever
  StallCount
};
const char *stallReasonName(StallReason reason);

struct ThreadStats {
  bool enabled = false;
  uint64_t instructions = 0;
  uint64_t execCycles = 0;  // running (issue costs and penalties)
  uint64_t readyCycles = 0; // ready, while another context ran
  uint64_t waitCycles = 0;  // waiting for signals
  uint64_t swaps = 0;
};

struct MEStats {
  bool loaded = false;
  uint64_t instructions = 0;
  uint64_t busyCycles = 0;          // a context was running
  uint64_t branchPenaltyCycles = 0; // part of busy
  uint64_t swapCycles = 0;          // part of busy
  uint64_t idleCycles[StallCount] = {};
  uint64_t contextSwaps = 0;
  std::vector<ThreadStats> threads;
  /// With MachineConfig::profile: per instruction (PC), the issue cycles
  /// it took, taken-branch penalties included (empty otherwise).
  std::vector<uint64_t> pcCycles;
};

struct MemoryStats {
  uint64_t reads = 0, writes = 0, atomics = 0;
  uint64_t bytesRead = 0, bytesWritten = 0;
  // The controller (scratch ring puts and gets included).
  uint64_t commands = 0;
  uint64_t busyCycles = 0;  // serving a command
  uint64_t queueCycles = 0; // commands waiting for the controller, summed
  uint32_t maxQueue = 0;    // commands ahead of an arriving one, at most
  /// The media switch fabric's packet transfers through this controller
  /// (DRAM: receive writes, transmit reads; part of `commands`).
  uint64_t dmaCommands = 0, dmaBytes = 0;
};

struct RingStats {
  bool configured = false;
  uint32_t sizeWords = 0;
  uint64_t puts = 0, gets = 0, emptyGets = 0, overflows = 0;
  uint32_t maxOccupancy = 0, finalOccupancy = 0;
};

/// The host interface (runtime/include/netvm/emu/host.h).
struct HostStats {
  uint64_t calls = 0;      // of the host function
  uint64_t crossings = 0;  // ring operations
  uint64_t words = 0;      // moved across
  uint64_t busyCycles = 0; // the host's clock spent on crossings
  uint64_t puts = 0, gets = 0, failedPuts = 0, failedGets = 0;
  uint64_t overflows = 0; // puts that landed on a full ring
  /// Reads and writes of scratch, SRAM and DRAM (netvm_emu_host_read and
  /// _write), refused ones, and the bytes moved.
  uint64_t memoryReads = 0, memoryWrites = 0, failedMemory = 0;
  uint64_t memoryBytes = 0;
};

/// The media switch fabric's traffic on one port.
struct PortStats {
  uint64_t offered = 0, received = 0, dropped = 0, truncated = 0, sent = 0;
  uint64_t bytesReceived = 0, bytesSent = 0; // wire lengths
};

/// Receive and transmit ports of the media switch fabric.
constexpr unsigned maxPorts = 16;

struct Fault {
  unsigned me = 0, ctx = 0;
  uint32_t pc = 0;
  uint64_t word = 0;
  std::string instruction;
  std::string reason;
  uint64_t cycle = 0;
};

struct Stats {
  uint64_t cycles = 0;
  double clockMHz = 0;
  std::string stopReason;
  std::vector<MEStats> mes;
  /// Memories, with their controllers' figures summed over channels.
  MemoryStats scratch, sram, dram;
  /// SRAM per channel (MachineConfig::sramChannels).
  std::vector<MemoryStats> sramChannels;
  uint64_t hashOps = 0;
  RingStats rings[16];
  uint64_t packetsOffered = 0;   // packets that reached the MSF
  uint64_t packetsReceived = 0;  // handed to the MEs
  uint64_t packetsDropped = 0;   // no free RBUF element
  uint64_t packetsTruncated = 0; // longer than maxPacketBytes
  uint64_t packetsSent = 0;
  uint64_t bytesReceived = 0, bytesSent = 0; // wire lengths
  /// Per port, up to the highest port with an input or a transmit.
  std::vector<PortStats> ports;
  bool hostAttached = false;
  HostStats host;
  std::vector<Fault> faults;

  double seconds() const { return cycles / (clockMHz * 1e6); }
};

class Emulator {
public:
  explicit Emulator(const MachineConfig &config);
  ~Emulator();
  Emulator(const Emulator &) = delete;
  Emulator &operator=(const Emulator &) = delete;

  /// Loads an image: checks it against the configuration (MEs, control
  /// store, memory sizes), initialises memories and rings and resets the
  /// enabled contexts to PC 0. Instructions that do not decode are kept
  /// and fault when executed.
  bool load(const Image &image, std::string &error);
  /// The packets received on port 0 (0 to maxPorts - 1 with the second
  /// form). Ports with input take turns filling the receive buffers
  /// (lossless), or each delivers at the line rate (MachineConfig); the
  /// descriptor of a received packet names its port.
  void setInput(PacketInput *input);
  void setInput(unsigned port, PacketInput *input);
  void setOutput(PacketOutput *output);

  /// Runs until the machine is quiescent (every context finished or
  /// waiting for a signal nothing will raise), every ME stopped, or the
  /// cycle limit. `progress`, if given, is called every `progressCycles`.
  void run(void (*progress)(uint64_t cycle, void *user) = nullptr,
           void *user = nullptr, uint64_t progressCycles = 0);
  /// Ask a running machine to stop at the end of its current quantum (its
  /// stop reason is then "interrupted"): safe from a signal handler or
  /// another thread.
  void requestStop();
  /// From a host, input or output callback: the running machine stops at
  /// the end of the current quantum with the stop reason "paused", its
  /// whole state kept (contexts, memories, rings, commands and events in
  /// flight, the host's next call); the next run() resumes it from that
  /// cycle, after reading live inputs again (PacketInput::live). The
  /// statistics of a paused machine are current but for the idle and
  /// stall attribution, which a run that ends computes; `cycles` is the
  /// cycle it paused at. Memory may be written (writeMemory) while paused.
  void pause();
  /// The cycle the machine paused at (0 before the first run).
  uint64_t cycle() const;

  /// Attaches host-side code: `fn` runs first at cycle `firstCycle`, then
  /// whenever it asks (runtime/include/netvm/emu/host.h). Before run().
  void attachHost(netvm_emu_host_fn fn, void *user, uint64_t firstCycle = 0);

  const Stats &stats() const;
  /// The registers of every enabled context of every loaded ME, as text.
  std::string dumpRegisters() const;
  /// Reads emulated memory; false if the range is outside it. May be
  /// called from PacketOutput::transmit (memory as of that cycle).
  bool readMemory(Memory memory, uint32_t address, uint32_t length,
                  std::vector<uint8_t> &bytes) const;
  /// Writes emulated memory, at once and at no emulated cost (the host
  /// interface models costed writes): after load(), which initialises
  /// memory from the image, and before or between run() calls. False with
  /// a message in `error` if the range is outside the memory, no image is
  /// loaded, or the emulator is running (from an input, output, host or
  /// progress callback).
  bool writeMemory(Memory memory, uint32_t address, const uint8_t *bytes,
                   uint32_t length, std::string &error);

  class Impl;

private:
  std::unique_ptr<Impl> impl;
};

} // namespace netvm::me

#endif // NETVM_EMU_EMULATOR_H
