//===- netvm-onload.cpp - Run the onload layer's receive path ------------===//
//
// Generates UDP traffic, assembles the ME program of a design
// (runtime/onload), runs it on the emulator with the host/NP interface and
// the host stack, and prints what was delivered, dropped and what it cost
// (docs/onload.md). bench/onload.py drives it.
//
//===----------------------------------------------------------------------===//

#include "netvm/Target/ME/Assembler.h"
#include "netvm/onload/Onload.h"
#include "netvm/onload/Tcp.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;
using namespace netvm;

static cl::OptionCategory category("netvm-onload options");
static cl::opt<std::string>
    designName("design",
               cl::desc("emu-nic, softnic, onloader or raw (default "
                        "onloader)"),
               cl::init("onloader"), cl::cat(category));
static cl::opt<std::string>
    direction("direction", cl::desc("rx (receive, the default) or tx (send)"),
              cl::init("rx"), cl::cat(category));
static cl::opt<unsigned>
    payload("payload", cl::desc("UDP payload bytes (4-1472), TCP (4-1460)"),
            cl::init(64), cl::cat(category));
static cl::opt<unsigned> count("count", cl::desc("Datagrams (default 2000)"),
                               cl::init(2000), cl::cat(category));
static cl::opt<unsigned> ports("ports",
                               cl::desc("Bound sockets, ports 9000.. "
                                        "(default 1)"),
                               cl::init(1), cl::cat(category));
static cl::opt<unsigned> badEvery("bad-every",
                                  cl::desc("Receive: every Nth datagram has a "
                                           "bad UDP checksum"),
                                  cl::init(0), cl::cat(category));
static cl::opt<unsigned>
    fragmentEvery("fragment-every",
                  cl::desc("Receive: every Nth datagram is an "
                           "IP fragment"),
                  cl::init(0), cl::cat(category));
static cl::opt<unsigned>
    unboundEvery("unbound-every",
                 cl::desc("Receive: every Nth datagram goes to "
                          "a port nobody bound"),
                 cl::init(0), cl::cat(category));
static cl::opt<double>
    lineRate("line-rate",
             cl::desc("Receive: offered load in Gbit/s (default "
                      "0: lossless, as fast as taken)"),
             cl::init(0), cl::cat(category));
static cl::opt<bool> noPipelined("no-pipelined-dma",
                                 cl::desc("One DMA descriptor at a time"),
                                 cl::cat(category));
static cl::opt<bool>
    noAdaptive("no-adaptive-updates",
               cl::desc("A TAIL (receive) or HEAD (send) update "
                        "after every change"),
               cl::cat(category));
static cl::opt<bool> noCombining("no-combining", cl::desc("A DMA per message"),
                                 cl::cat(category));
static cl::opt<std::string> notify(
    "notify",
    cl::desc("Receive: polling, interrupts or adaptive (default adaptive)"),
    cl::init("adaptive"), cl::cat(category));
static cl::opt<bool> noMappingCache("no-mapping-cache",
                                    cl::desc("Onloader: map the user buffer "
                                             "on every recv or send"),
                                    cl::cat(category));
static cl::opt<unsigned> rxMEs("rx-mes", cl::desc("Receiving MEs (default 2)"),
                               cl::init(2), cl::cat(category));
static cl::opt<unsigned> txMEs("tx-mes",
                               cl::desc("Transmitting MEs (default 2)"),
                               cl::init(2), cl::cat(category));
static cl::opt<unsigned> buffers("buffers",
                                 cl::desc("DRAM receive buffers (default 128) "
                                          "or transmit buffers (48)"),
                                 cl::init(128), cl::cat(category));
static cl::opt<double> dmaReadMBps(
    "dma-read-mbps",
    cl::desc("DMA read bandwidth from host memory in MB/s (default 85, "
             "seed 002's chipset)"),
    cl::init(85), cl::cat(category));
static cl::opt<std::string>
    writeImage("write-image",
               cl::desc("Write the design's assembled ME image to this file "
                        "(for the C socket API, netvm/onload/socket.h) and "
                        "exit"),
               cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string>
    protocol("protocol",
             cl::desc("udp (the three designs, the default) or tcp (the "
                      "onloader's TCP data path of established connections: "
                      "receive, or send with --direction=tx)"),
             cl::init("udp"), cl::cat(category));
static cl::opt<unsigned>
    flows("flows",
          cl::desc("TCP: connections (default 4); --count is segments per "
                   "connection (send: --count * --payload bytes each, "
                   "--payload is the MSS)"),
          cl::init(4), cl::cat(category));
static cl::opt<double>
    loss("loss",
         cl::desc("TCP: probability a segment is lost (receive: and "
                  "retransmitted 3-12 frames later; send: on the wire, "
                  "either way, and the host recovers)"),
         cl::init(0), cl::cat(category));
static cl::opt<double>
    reorder("reorder",
            cl::desc("TCP: probability a segment swaps places with the next "
                     "frame (send: is held back 3 --delay more)"),
            cl::init(0), cl::cat(category));
static cl::opt<unsigned>
    sendBytes("send-bytes",
              cl::desc("TCP send: bytes per send() call (default 8 MSS)"),
              cl::init(0), cl::cat(category));
static cl::opt<unsigned>
    window("window",
           cl::desc("TCP send: bytes unacknowledged at most (default 16 "
                    "MSS)"),
           cl::init(0), cl::cat(category));
static cl::opt<unsigned>
    delay("delay",
          cl::desc("TCP send: one-way wire delay in ME cycles "
                   "(default 2000)"),
          cl::init(2000), cl::cat(category));
static cl::opt<unsigned>
    rto("rto",
        cl::desc("TCP send: retransmission timeout in ME cycles "
                 "(default 200000)"),
        cl::init(200000), cl::cat(category));
static cl::opt<unsigned>
    peerBytes("peer-bytes",
              cl::desc("TCP send: the peer sends this many bytes per "
                       "connection too (data both ways; its data segments "
                       "are never lost)"),
              cl::init(0), cl::cat(category));
static cl::opt<bool>
    noFastRetransmit("no-fast-retransmit",
                     cl::desc("TCP send: recover by the timer only"),
                     cl::cat(category));
static cl::opt<double> duplicate("duplicate",
                                 cl::desc("TCP: probability a segment is "
                                          "sent twice"),
                                 cl::init(0), cl::cat(category));
static cl::opt<unsigned> seed("seed", cl::desc("TCP: traffic seed (default 1)"),
                              cl::init(1), cl::cat(category));
static cl::opt<bool>
    hostPath("host-path",
             cl::desc("TCP: the MEs only move frames; the host does the "
                      "whole receive (send: builds every segment and parses "
                      "every ACK)"),
             cl::cat(category));
static cl::opt<bool> printProgram("print-program",
                                  cl::desc("Print the design's ME assembly "
                                           "and exit"),
                                  cl::cat(category));

/// Assembles an onload ME program, printing the assembler's errors.
static bool assembleProgram(const std::string &source,
                            const onload::OnloadConfig &config,
                            me::Image &image) {
  me::AssemblerOptions options;
  options.machine = config.machine;
  std::vector<std::string> errors;
  if (me::assemble(source, "<onload>", options, image, errors))
    return true;
  for (const std::string &e : errors)
    llvm::errs() << e << "\n";
  return false;
}

/// --protocol=tcp: the TCP slice, checked against the reference receiver.
static int runTcp(const onload::OnloadConfig &config) {
  std::string source = onload::tcpMeProgram(config, !hostPath);
  if (printProgram) {
    llvm::outs() << source;
    return 0;
  }
  me::Image image;
  if (!assembleProgram(source, config, image))
    return 1;
  onload::TcpTrafficOptions o;
  o.flows = flows;
  o.segments = count;
  o.payloadBytes = payload;
  o.loss = loss;
  o.reorder = reorder;
  o.duplicate = duplicate;
  o.badEvery = badEvery;
  o.seed = seed;
  onload::TcpTraffic traffic = onload::makeTcpTraffic(o);
  onload::TcpResult r;
  std::string error;
  if (!onload::runTcpReceive(config, image, traffic, !hostPath, r, error)) {
    llvm::errs() << "netvm-onload: " << error << "\n";
    return 1;
  }
  onload::TcpReference ref = onload::referenceReceive(traffic);
  uint64_t bytes = 0, streamsEqual = 0, acksEqual = 0, acksChecked = 0,
           acksMissing = 0;
  for (size_t c = 0; c < traffic.connections.size(); ++c) {
    bytes += r.connections[c].delivered.size();
    streamsEqual += r.connections[c].delivered == ref.delivered[c];
  }
  for (size_t i = 0; i < traffic.frames.size(); ++i) {
    if (ref.ack[i] < 0)
      continue;
    int64_t got = r.meAck[i] >= 0 ? r.meAck[i] : r.hostAck[i];
    ++acksChecked;
    acksMissing += got < 0;
    acksEqual += got == ref.ack[i];
  }
  uint64_t resumed = 0;
  for (const onload::TcpConnectionResult &c : r.connections)
    resumed += c.fastAfterDivert;
  uint64_t segments = r.fastSegments + r.divertedSegments + r.hostSegments;
  llvm::json::Array faults;
  for (const std::string &f : r.faults)
    faults.push_back(f);
  llvm::json::Object out{
      {"protocol", "tcp"},
      {"path", hostPath ? "host" : "me"},
      {"payload", payload.getValue()},
      {"connections", uint64_t(traffic.connections.size())},
      {"frames", uint64_t(traffic.frames.size())},
      {"delivered_bytes", bytes},
      {"streams_equal_reference", streamsEqual},
      {"acks_checked", acksChecked},
      {"acks_equal_reference", acksEqual},
      {"acks_missing", acksMissing},
      {"me_segments", r.fastSegments},
      {"me_acks_sent", r.acksSent},
      {"bad_acks", r.badAcks},
      {"diverted_segments", r.divertedSegments},
      {"host_segments", r.hostSegments},
      {"fast_after_divert", resumed},
      {"me_checksum_drops", r.meChecksumDrops},
      {"host_checksum_drops", r.hostChecksumDrops},
      {"no_connection", r.noConnection},
      {"not_tcp", r.notTcp},
      {"inconsistent", r.inconsistent},
      {"host_busy_cycles", r.hostBusyCycles},
      {"host_cycles_per_segment",
       segments ? double(r.hostBusyCycles) / double(segments) : 0.0},
      {"cycles", r.cycles},
      {"clock_mhz", r.clockMHz},
      {"segments_per_second", r.segmentsPerSecond()},
      {"faults", std::move(faults)}};
  llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(out)))
               << "\n";
  bool ok = r.faults.empty() && streamsEqual == traffic.connections.size() &&
            acksEqual == acksChecked && !r.badAcks && !r.inconsistent;
  return ok ? 0 : 1;
}

/// --protocol=tcp --direction=tx: the send path to the reference peer.
static int runTcpSend(const onload::OnloadConfig &config) {
  std::string source = onload::tcpMeProgram(config, !hostPath, true);
  if (printProgram) {
    llvm::outs() << source;
    return 0;
  }
  me::Image image;
  if (!assembleProgram(source, config, image))
    return 1;
  onload::TcpSendOptions o;
  o.flows = flows;
  o.mss = payload;
  o.bytes = count * payload;
  o.sendBytes = sendBytes ? sendBytes : 8 * payload;
  o.window = window ? window : 16 * payload;
  o.loss = loss;
  o.reorder = reorder;
  o.seed = seed;
  o.delay = delay;
  o.rto = rto;
  o.fastRetransmit = !noFastRetransmit;
  o.peerBytes = peerBytes;
  onload::TcpSendResult r;
  std::string error;
  if (!onload::runTcpSend(config, image, o, !hostPath, r, error)) {
    llvm::errs() << "netvm-onload: " << error << "\n";
    return 1;
  }
  uint64_t equal = 0, acked = 0, advanced = 0, duplicates = 0, old = 0,
           ackedBytes = 0, socketsEqual = 0;
  for (const onload::TcpSendConnection &c : r.connections) {
    equal += c.received == c.sent;
    socketsEqual += c.socketReceived == c.peerSent;
    uint32_t end = c.connection.sndNxt + uint32_t(c.sent.size());
    acked += c.sndUna == end && c.peerAck == end;
    advanced += c.meAcksAdvanced;
    duplicates += c.meAcksDuplicate;
    old += c.meAcksOld;
    ackedBytes += c.meAckedBytes;
  }
  llvm::json::Array faults;
  for (const std::string &f : r.faults)
    faults.push_back(f);
  llvm::json::Object out{{"protocol", "tcp"},
                         {"direction", "tx"},
                         {"path", hostPath ? "host" : "me"},
                         {"mss", payload.getValue()},
                         {"connections", uint64_t(r.connections.size())},
                         {"sent_bytes", r.payloadBytes},
                         {"send_calls", r.sendCalls},
                         {"streams_equal_sent", equal},
                         {"peer_segments", r.peerSegments},
                         {"sockets_equal_peer_sent", socketsEqual},
                         {"me_ack_frames", r.meAckFrames},
                         {"me_ack_frames_lost", r.meAckFramesLost},
                         {"connections_acked", acked},
                         {"me_segments", r.meSegments},
                         {"host_segments", r.hostSegments},
                         {"retransmitted_segments", r.retransmittedSegments},
                         {"timeouts", r.timeouts},
                         {"fast_retransmits", r.fastRetransmits},
                         {"bad_frames", r.badFrames},
                         {"data_lost", r.dataLost},
                         {"data_reordered", r.dataReordered},
                         {"peer_acks", r.peerAcks},
                         {"acks_lost", r.acksLost},
                         {"acks_reordered", r.acksReordered},
                         {"acks_in_flight", r.acksInFlight},
                         {"ack_entries", r.ackEntries},
                         {"host_ack_frames", r.hostAckFrames},
                         {"me_acks_advanced", advanced},
                         {"me_acks_duplicate", duplicates},
                         {"me_acks_old", old},
                         {"me_acked_bytes", ackedBytes},
                         {"inconsistent", r.inconsistent},
                         {"host_busy_cycles", r.hostBusyCycles},
                         {"host_cycles_per_segment", r.hostCyclesPerSegment()},
                         {"cycles", r.cycles},
                         {"clock_mhz", r.clockMHz},
                         {"segments_per_second", r.segmentsPerSecond()},
                         {"mbit_per_second", r.mbitPerSecond()},
                         {"faults", std::move(faults)}};
  llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(out)))
               << "\n";
  bool ok = r.faults.empty() && equal == r.connections.size() &&
            socketsEqual == r.connections.size() &&
            acked == r.connections.size() && !r.badFrames && !r.inconsistent;
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "netvm-onload - UDP receive or send over the host/NP interface, three "
      "ways\n\n"
      "  netvm-onload --design=softnic --payload=1472 --count=5000\n"
      "  netvm-onload --direction=tx --design=onloader --payload=64\n"
      "  netvm-onload --protocol=tcp --flows=8 --count=100 --loss=0.02\n"
      "  netvm-onload --protocol=tcp --direction=tx --payload=1460 "
      "--loss=0.01\n\n"
      "Prints one JSON object: delivered datagrams and bytes, drops by "
      "place,\nhost cycles by kind, DMA and ring figures, per-stage "
      "latency (TCP: the\nbytes and ACKs checked against the reference "
      "receiver; exit status 1 on a\nmismatch). TCP send: the MEs build "
      "the segments and take the ACKs, the\nhost retransmits (timer, "
      "three duplicate ACKs); the peer is the reference\nreceiver behind "
      "a seeded lossy wire, its byte stream checked against what\nwas "
      "sent.\n");
  onload::OnloadConfig config;
  if (!onload::parseDesign(designName, config.design)) {
    llvm::errs() << "netvm-onload: unknown design '" << designName
                 << "' (emu-nic, softnic, onloader or raw)\n";
    return 1;
  }
  if (notify == "polling")
    config.features.notify = hostif::Notify::Polling;
  else if (notify == "interrupts")
    config.features.notify = hostif::Notify::Interrupts;
  else if (notify != "adaptive") {
    llvm::errs() << "netvm-onload: unknown --notify '" << notify
                 << "' (polling, interrupts or adaptive)\n";
    return 1;
  }
  if (direction != "rx" && direction != "tx") {
    llvm::errs() << "netvm-onload: unknown --direction '" << direction
                 << "' (rx or tx)\n";
    return 1;
  }
  if (direction == "tx" && config.design == onload::Design::Raw) {
    llvm::errs() << "netvm-onload: the raw design only receives\n";
    return 1;
  }
  if (payload < 4 || payload > 1472) {
    llvm::errs() << "netvm-onload: --payload must be 4 to 1472 bytes\n";
    return 1;
  }
  if (rxMEs < 1 || txMEs < 1 || rxMEs + txMEs > 8 || ports < 1 || ports > 64) {
    llvm::errs() << "netvm-onload: --rx-mes and --tx-mes must be at least 1 "
                    "and 8 together, --ports 1-64\n";
    return 1;
  }
  if (dmaReadMBps < 1 || dmaReadMBps > 10000) {
    llvm::errs() << "netvm-onload: --dma-read-mbps must be 1 to 10000\n";
    return 1;
  }
  // A probability of 1 would lose (or reorder) every frame: the run could
  // never end.
  for (double p : {double(loss), double(reorder), double(duplicate)})
    if (!(p >= 0 && p < 1)) {
      llvm::errs() << "netvm-onload: --loss, --reorder and --duplicate are "
                      "probabilities, at least 0 and below 1\n";
      return 1;
    }
  config.dma.readCyclesPerByte = config.machine.clockMHz / dmaReadMBps;
  config.features.pipelinedDma = !noPipelined;
  config.features.adaptiveUpdates = !noAdaptive;
  config.features.combining = !noCombining;
  config.cacheMappings = !noMappingCache;
  config.rxMEs = rxMEs;
  config.txMEs = txMEs;
  if (direction == "tx")
    config.txBuffers = buffers.getNumOccurrences() ? buffers : 48;
  else
    config.buffers = buffers;
  if (protocol == "tcp" && direction == "tx") {
    if (flows < 1 || flows > onload::maxTcpConnections || payload > 1460 ||
        lineRate != 0) {
      llvm::errs() << "netvm-onload: --protocol=tcp --direction=tx sends on "
                      "1-"
                   << onload::maxTcpConnections
                   << " --flows with an MSS (--payload) of 4-1460 bytes, no "
                      "--line-rate\n";
      return 1;
    }
    if (uint64_t(count) * payload > (1u << 30) ||
        (window && sendBytes > window) ||
        (window && !sendBytes && 8 * payload > window)) {
      llvm::errs() << "netvm-onload: --send-bytes must not exceed --window, "
                      "and --count * --payload 1 GiB\n";
      return 1;
    }
    return runTcpSend(config);
  }
  config.lineRateGbps = lineRate;
  if (protocol == "tcp") {
    if (lineRate != 0 || flows < 1 || flows > onload::maxTcpConnections ||
        payload > 1460) {
      llvm::errs() << "netvm-onload: --protocol=tcp receives on "
                      "lossless input (no --line-rate), 1-"
                   << onload::maxTcpConnections
                   << " --flows, a --payload of 4-1460 bytes\n";
      return 1;
    }
    return runTcp(config);
  }
  if (protocol != "udp") {
    llvm::errs() << "netvm-onload: unknown --protocol '" << protocol
                 << "' (udp or tcp)\n";
    return 1;
  }

  std::string source = onload::meProgram(config);
  if (printProgram) {
    llvm::outs() << source;
    return 0;
  }
  me::Image image;
  if (!assembleProgram(source, config, image))
    return 1;
  if (!writeImage.empty()) {
    std::string error;
    if (!me::writeImageFile(writeImage, image, error)) {
      llvm::errs() << "netvm-onload: " << error << "\n";
      return 1;
    }
    return 0;
  }
  bool send = direction == "tx";
  onload::Traffic traffic =
      send ? onload::makeSendTraffic(count, payload, ports)
           : onload::makeTraffic(count, payload, ports, badEvery, fragmentEvery,
                                 unboundEvery);
  onload::OnloadResult r;
  std::string error;
  if (!(send ? onload::runTransmit(config, image, traffic, r, error)
             : onload::runReceive(config, image, traffic, r, error))) {
    llvm::errs() << "netvm-onload: " << error << "\n";
    return 1;
  }
  llvm::json::Object drops{{"fabric", r.drops.fabric},
                           {"me_not_udp", r.drops.meNotUdp},
                           {"me_fragment", r.drops.meFragment},
                           {"me_checksum", r.drops.meChecksum},
                           {"me_no_socket", r.drops.meNoSocket},
                           {"me_malformed", r.drops.meMalformed},
                           {"host_not_udp", r.drops.hostNotUdp},
                           {"host_fragment", r.drops.hostFragment},
                           {"host_checksum", r.drops.hostChecksum},
                           {"host_no_socket", r.drops.hostNoSocket},
                           {"host_malformed", r.drops.hostMalformed},
                           {"total", r.drops.total()}};
  llvm::json::Object host{{"busy_cycles", r.host.busyCycles},
                          {"cycles_per_datagram", r.hostCyclesPerDatagram()},
                          {"interrupts", r.host.interrupts},
                          {"syscalls", r.host.syscalls},
                          {"wakeups", r.host.wakeups},
                          {"polls", r.host.polls},
                          {"copied_bytes", r.host.copiedBytes},
                          {"checksummed_bytes", r.host.checksummedBytes},
                          {"pio_read_bytes", r.host.pioReadBytes},
                          {"protocol_runs", r.host.protocolRuns},
                          {"mappings", r.host.mappings},
                          {"mapping_hits", r.host.mappingHits}};
  llvm::json::Array stages;
  for (const onload::Stage &s : r.stages)
    stages.push_back(llvm::json::Object{{"stage", s.name},
                                        {"cycles", s.cycles},
                                        {"us", s.cycles / r.clockMHz}});
  llvm::json::Array faults;
  for (const std::string &f : r.faults)
    faults.push_back(f);
  llvm::json::Object out{
      {"design", onload::designName(config.design)},
      {"direction", direction.getValue()},
      {"payload", payload.getValue()},
      {"offered", r.offered},
      {"delivered", r.delivered},
      {"delivered_bytes", r.deliveredBytes},
      {"corrupted", r.corrupted},
      {"duplicates", r.duplicates},
      {"missing", r.missing},
      {"drops", std::move(drops)},
      {"host", std::move(host)},
      {"dma_transfers", r.dmaTransfers},
      {"dma_bytes", r.dmaBytes},
      {"tail_updates", r.tailUpdates},
      {"head_updates", r.headUpdates},
      {"combined_messages", r.combinedMessages},
      {"cycles", r.cycles},
      {"clock_mhz", r.clockMHz},
      {"datagrams_per_second", r.datagramsPerSecond()},
      {"mbit_per_second", r.datagramsPerSecond() * payload * 8 / 1e6},
      {"stages", std::move(stages)},
      {"faults", std::move(faults)}};
  llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(out)))
               << "\n";
  return r.faults.empty() ? 0 : 1;
}
