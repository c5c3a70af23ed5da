//===- MEProgram.cpp - The microengine side of the three designs ---------===//
//
// Hand-written ME assembly, composed per design: every context of the
// receiving MEs takes a DRAM buffer from FREE_RING, receives a frame into
// it, does its design's part of the stack and puts a six-word entry
// [buffer, length, info, rx stamp, done stamp, packet number] on TO_HOST
// for the interface's NP side. softnic and onloader check the IPv4/UDP headers
// and verify the UDP checksum (pseudo-header included) over the frame in DRAM;
// onloader also looks up the destination port's control block in SRAM.
// Refused frames are counted in scratch and handed over as refused, so
// that the NP side can keep the input's order (it gives their buffers
// back to FREE_RING).
// docs/onload.md ("The ME side") describes the layout.
//
//===----------------------------------------------------------------------===//

#include "Layout.h"
#include "netvm/onload/Onload.h"

#include <sstream>

namespace netvm::onload {

// Registers (per context): a0 buffer, a1 frame length, a2 sum, a3 word,
// a4 address, a5 bytes left, a6 scratch, a7 info; b0 0xffff, b1 scratch,
// b2 words left in the chunk, b3 UDP length, b4 what the sum takes back,
// b5 destination port, b6 rx stamp, b7 the packet's number in the input.
//
const char *const rxLoopHead = R"(
rx_loop:
    scratch[get, $0, FREE_RING, 0, 1], ctx_swap[s1]
    alu[a0, --, b, $0]
    beq[rx_loop]
    msf[rx, $0, a0, 0, 4], ctx_swap[s2]
    br_bset[$2, 0, rx_end]
    alu[a1, --, b, $0]
    alu[b7, --, b, $3]
    local_csr_rd[b6, timestamp_low]
)";

const char *const toHostPut = R"(    alu[$0, --, b, a0]
    alu[$1, --, b, a1]
    alu[$2, --, b, a7]
    alu[$3, --, b, b6]
    local_csr_rd[b1, timestamp_low]
    alu[$4, --, b, b1]
    alu[$5, --, b, b7]
    scratch[put, $0, TO_HOST, 0, 6], ctx_swap[s1]
)";

const char *const rxEndToHost = R"(rx_end:
    immed[$0, 0xffffffff]
    immed[$1, 0]
    immed[$2, 0]
    immed[$3, 0]
    immed[$4, 0]
    immed[$5, 0]
    scratch[put, $0, TO_HOST, 0, 6], ctx_swap[s1]
    ctx_arb[kill]
)";

void ipv4Checks(std::ostream &os, unsigned protocol, const char *other,
                const char *fragment) {
  os << R"(
    dram[read, $$0, a0, 0, 6], ctx_swap[s3]
    alu_shf[a6, --, b, $$3, >>8]
    immed[b1, 0x080045]
    alu[--, a6, -, b1]
    bne[)"
     << other << "]\n    br!=byte[$$5, 0, " << protocol << ", " << other << R"(]
    alu_shf[a6, --, b, $$5, >>16]
    immed[b1, 0x3fff]
    alu[--, a6, and, b1]
    bne[)"
     << fragment << "]\n    immed[b0, 0xffff]\n";
}

// The receive checks: IPv4 without options, UDP, not a fragment, a UDP
// length that fits the frame; a zero checksum field means none.
static const char *rxChecks = R"(    alu[b3, $$9, and, b0]
    alu_shf[b5, --, b, $$9, >>16]
    alu_shf[b4, --, b, $$6, >>16]
    alu[--, b3, -, 8]
    bcs[malformed]
    alu[b1, b3, +, 34]
    alu[--, a1, -, b1]
    bcs[malformed]
    alu_shf[a6, --, b, $$10, >>16]
    alu[--, a6, -, 0]
    beq[csum_ok]
)";

/// The UDP checksum's sum: the 16-bit halves of the 32-bit words from byte
/// 24 of the frame at a0 to the end of the datagram (34 + b3), 64 bytes a
/// DRAM read, the last partial word masked; minus b4 (the IP header
/// checksum at 24-25, and on transmit the checksum field), plus protocol
/// and UDP length (the rest of the pseudo-header); folded into a2. TCP
/// (protocol 6) passes the TCP length in b3. Labels
/// get `prefix` (labels are global to the image).
void sumLoop(std::ostream &os, const std::string &p, unsigned protocol) {
  os << "    alu[a4, a0, +, 24]\n"
        "    alu[a5, b3, +, 10]\n"
        "    alu[a2, b3, +, "
     << protocol << "]\n"
     << p << "chunk:\n"
     << "    dram[read, $$0, a4, 0, 8], ctx_swap[s3]\n"
        "    local_csr_wr[t_index, 0]\n"
        "    immed[b2, 16]\n"
     << p << "word:\n"
     << "    alu[a3, --, b, *$$index++]\n"
        "    alu[a5, a5, -, 4]\n"
        "    bmi["
     << p << "last]\n"
     << "    alu_shf[b1, --, b, a3, >>16]\n"
        "    alu[a2, a2, +, b1]\n"
        "    alu[b1, a3, and, b0]\n"
        "    alu[a2, a2, +, b1]\n"
        "    alu[--, a5, -, 0]\n"
        "    beq["
     << p << "fold]\n"
     << "    alu[b2, b2, -, 1]\n"
        "    bne["
     << p << "word]\n"
     << "    alu[a4, a4, +, 64]\n"
        "    br["
     << p << "chunk]\n"
     << p << "last:\n"
     << "    alu[a6, a5, b-a, 0]\n"
        "    alu_shf[a6, --, b, a6, <<3]\n"
        "    immed[b1, 0xffffffff]\n"
        "    alu_shf[b1, a6, b, b1, <<indirect]\n"
        "    alu[a3, a3, and, b1]\n"
        "    alu_shf[b1, --, b, a3, >>16]\n"
        "    alu[a2, a2, +, b1]\n"
        "    alu[b1, a3, and, b0]\n"
        "    alu[a2, a2, +, b1]\n"
     << p << "fold:\n"
     << "    alu[a2, a2, -, b4]\n"
        "    alu_shf[b1, --, b, a2, >>16]\n"
        "    alu[a6, a2, and, b0]\n"
        "    alu[a2, a6, +, b1]\n"
        "    alu_shf[b1, --, b, a2, >>16]\n"
        "    alu[a6, a2, and, b0]\n"
        "    alu[a2, a6, +, b1]\n";
}

// onloader: PORT_TABLE[port] holds the control block's SRAM address (0: no
// socket); the block's word 0 is the socket, word 1 counts its datagrams.
static const char *lookupBlock = R"(
    alu_shf[a6, --, b, b5, <<2]
    immed[b1, PORT_TABLE]
    sram[read, $0, a6, b1, 1], ctx_swap[s4]
    alu[a6, --, b, $0]
    beq[no_socket]
    sram[read, $0, a6, 0, 1], ctx_swap[s4]
    alu[a7, --, b, $0]
    sram[incr, --, a6, 4]
)";

static void rxLoop(std::ostream &os, Design design) {
  os << rxLoopHead << "    immed[a7, 0]\n";
  bool onloader = design == Design::Onloader;
  if (design == Design::SoftNic || onloader) {
    ipv4Checks(os, 17, "not_udp", "fragment");
    os << rxChecks;
    sumLoop(os, "rx_");
    os << "    alu[--, a2, -, b0]\n    bne[bad_csum]\ncsum_ok:\n";
    if (onloader)
      os << lookupBlock;
    else
      os << "    immed[a7, 1]\n";
  }
  os << "\nto_host:\n" << toHostPut << "    br[rx_loop]\n";
  // A frame the MEs refuse: count it, hand it over as refused.
  auto refuse = [&](const char *label, unsigned counter) {
    os << label << ":\n    scratch[incr, --, STATS, " << counter
       << "]\n    immed[a7, " << refusedInfo << "]\n    br[to_host]\n";
  };
  if (design == Design::SoftNic) {
    // softnic hands what it cannot verify to the host's stack.
    os << "not_udp:\nfragment:\nmalformed:\n    immed[a7, 0]\n"
          "    br[to_host]\n";
    refuse("bad_csum", statChecksum);
  } else if (onloader) {
    refuse("not_udp", statNotUdp);
    refuse("fragment", statFragment);
    refuse("bad_csum", statChecksum);
    refuse("no_socket", statNoSocket);
    refuse("malformed", statMalformed);
  }
  os << "\n" << rxEndToHost;
}

// Transmit: entries [buffer, frame length, flags, control block] from
// FROM_HOST; flag 2: build the headers from the socket's template (control
// block + 16: 42 bytes with zero lengths and the IP checksum of a zero
// total length), patching the lengths and the IP checksum; flag 1: fill
// the UDP checksum (the frame's field is taken back, so it may hold
// anything). Then transmit, and give the buffer back on TX_DONE.
const char *const txLoopHead = R"(
tx_loop:
    scratch[get, $0, FROM_HOST, 0, 4], ctx_swap[s1]
    alu[a0, --, b, $0]
    beq[tx_loop]
    alu[--, a0, +, 1]
    beq[tx_end]
    alu[a1, --, b, $1]
    alu[a7, --, b, $2]
    alu[b6, --, b, $3]
)";

void checksumAdd(std::ostream &os, const char *value) {
  os << "    alu[a3, a3, xor, b0]\n    alu[a3, a3, +, " << value
     << "]\n    alu_shf[b1, --, b, a3, >>16]\n    alu[a3, a3, and, b0]\n"
        "    alu[a3, a3, +, b1]\n    alu[a3, a3, xor, b0]\n";
}

static void txLoop(std::ostream &os) {
  os << txLoopHead << R"(    br_bclr[a7, 1, tx_sum]
    sram[read, $0, b6, 16, 12], ctx_swap[s4]
    immed[b0, 0xffff]
    alu[b3, a1, -, 14]
    alu_shf[b1, --, b, b3, <<16]
    alu[$$4, b1, or, $4]
    alu_shf[a3, --, b, $6, >>16]
)";
  checksumAdd(os, "b3");
  os << R"(    alu_shf[b1, --, b, a3, <<16]
    alu[a6, $6, and, b0]
    alu[$$6, a6, or, b1]
    alu[a6, a1, -, 34]
    alu[$$9, a6, or, $9]
    alu[$$0, --, b, $0]
    alu[$$1, --, b, $1]
    alu[$$2, --, b, $2]
    alu[$$3, --, b, $3]
    alu[$$5, --, b, $5]
    alu[$$7, --, b, $7]
    alu[$$8, --, b, $8]
    dram[write, $$0, a0, 0, 5], ctx_swap[s3]
    sram[incr, --, b6, 8]
tx_sum:
    br_bclr[a7, 0, tx_send]
    dram[read, $$0, a0, 0, 6], ctx_swap[s3]
    immed[b0, 0xffff]
    alu[b3, $$9, and, b0]
    alu_shf[b4, --, b, $$6, >>16]
    alu_shf[a6, --, b, $$10, >>16]
    alu[b4, b4, +, a6]
)";
  sumLoop(os, "tx_");
  os << R"(
    alu[a2, a2, xor, b0]
    alu[--, a2, -, 0]
    bne[tx_nonzero]
    alu[a2, --, b, b0]
tx_nonzero:
    dram[read, $$0, a0, 40, 1], ctx_swap[s3]
    alu_shf[b1, --, b, a2, <<16]
    alu[a6, $$0, and, b0]
    alu[$$0, a6, or, b1]
    alu[$$1, --, b, $$1]
    dram[write, $$0, a0, 40, 1], ctx_swap[s3]
tx_send:
    alu[$0, --, b, a1]
    alu[$1, --, b, a1]
    immed[$2, 0]
    msf[tx, $0, a0, 0, 3], ctx_swap[s2]
    alu[$0, --, b, a0]
    scratch[put, $0, TX_DONE, 0, 1], ctx_swap[s1]
    br[tx_loop]
tx_end:
    ctx_arb[kill]
)";
}

std::string meProgram(const OnloadConfig &config) {
  std::ostringstream os;
  os << "; onload receive path, design " << designName(config.design)
     << " (generated by runtime/onload/MEProgram.cpp)\n"
     << ".equ FREE_RING, " << freeRing << "\n"
     << ".equ TO_HOST, " << toHostRing << "\n"
     << ".equ STATS, " << statsAddress << "\n"
     << ".equ PORT_TABLE, " << portTable << "\n"
     << ".ring FREE_RING, " << freeRingAddress << ", " << freeRingWords << "\n"
     << ".ring TO_HOST, " << toHostAddress << ", " << toHostWords << "\n"
     << ".equ FROM_HOST, " << fromHostRing << "\n"
     << ".equ TX_DONE, " << txDoneRing << "\n"
     << ".ring FROM_HOST, " << fromHostAddress << ", " << fromHostWords << "\n"
     << ".ring TX_DONE, " << txDoneAddress << ", " << txDoneWords << "\n";
  os << "\n.me 0";
  if (config.rxMEs > 1)
    os << "-" << config.rxMEs - 1;
  os << "\n.ctx_enable 0xff\n";
  rxLoop(os, config.design);
  os << "\n.me " << config.rxMEs;
  if (config.txMEs > 1)
    os << "-" << config.rxMEs + config.txMEs - 1;
  os << "\n.ctx_enable 0xff\n";
  txLoop(os);
  return os.str();
}

} // namespace netvm::onload
