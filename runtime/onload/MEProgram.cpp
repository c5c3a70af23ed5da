//===- MEProgram.cpp - The microengine side of the three designs ---------===//
//
// Hand-written ME assembly, composed per design: every context of the
// receiving MEs takes a DRAM buffer from FREE_RING, receives a frame into
// it, does its design's part of the stack and puts a five-word entry
// [buffer, length, info, rx stamp, done stamp] on TO_HOST for the
// interface's NP side. softnic and onloader check the IPv4/UDP headers and
// verify the UDP checksum (pseudo-header included) over the frame in DRAM;
// onloader also looks up the destination port's control block in SRAM.
// Refused frames go back to FREE_RING and are counted in scratch.
// docs/onload.md ("The ME side") describes the layout.
//
//===----------------------------------------------------------------------===//

#include "Layout.h"
#include "netvm/onload/Onload.h"

#include <sstream>

namespace netvm::onload {

// The header checks and the checksum loop. Registers (per context): a0
// buffer, a1 captured length, a2 sum, a3 word, a4 address, a5 bytes left,
// a6 scratch, a7 info; b0 0xffff, b1 scratch, b2 words left in the chunk,
// b3 UDP length, b4 the IP header checksum (summed by the loop, taken
// back), b5 destination port.
static const char *checkBlock = R"(
    dram[read, $$0, a0, 0, 6], ctx_swap[s3]
    alu_shf[a6, --, b, $$3, >>8]
    immed[b1, 0x080045]
    alu[--, a6, -, b1]
    bne[not_udp]
    br!=byte[$$5, 0, 17, not_udp]
    alu_shf[a6, --, b, $$5, >>16]
    immed[b1, 0x3fff]
    alu[--, a6, and, b1]
    bne[fragment]
    immed[b0, 0xffff]
    alu[b3, $$9, and, b0]
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
    alu[a4, a0, +, 24]
    alu[a5, b3, +, 10]
    alu[a2, b3, +, 17]
chunk:
    dram[read, $$0, a4, 0, 8], ctx_swap[s3]
    local_csr_wr[t_index, 0]
    immed[b2, 16]
word:
    alu[a3, --, b, *$$index++]
    alu[a5, a5, -, 4]
    bmi[last]
    alu_shf[b1, --, b, a3, >>16]
    alu[a2, a2, +, b1]
    alu[b1, a3, and, b0]
    alu[a2, a2, +, b1]
    alu[--, a5, -, 0]
    beq[fold]
    alu[b2, b2, -, 1]
    bne[word]
    alu[a4, a4, +, 64]
    br[chunk]
last:
    alu[a6, a5, b-a, 0]
    alu_shf[a6, --, b, a6, <<3]
    immed[b1, 0xffffffff]
    alu_shf[b1, a6, b, b1, <<indirect]
    alu[a3, a3, and, b1]
    alu_shf[b1, --, b, a3, >>16]
    alu[a2, a2, +, b1]
    alu[b1, a3, and, b0]
    alu[a2, a2, +, b1]
fold:
    alu[a2, a2, -, b4]
    alu_shf[b1, --, b, a2, >>16]
    alu[a6, a2, and, b0]
    alu[a2, a6, +, b1]
    alu_shf[b1, --, b, a2, >>16]
    alu[a6, a2, and, b0]
    alu[a2, a6, +, b1]
    alu[--, a2, -, b0]
    bne[bad_csum]
csum_ok:
)";

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
  os << R"(
rx_loop:
    scratch[get, $0, FREE_RING, 0, 1], ctx_swap[s1]
    alu[a0, --, b, $0]
    beq[rx_loop]
    msf[rx, $0, a0, 0, 4], ctx_swap[s2]
    br_bset[$2, 0, rx_end]
    alu[a1, --, b, $0]
    local_csr_rd[b6, timestamp_low]
    immed[a7, 0]
)";
  bool onloader = design == Design::Onloader;
  if (design == Design::SoftNic || onloader) {
    os << checkBlock;
    if (onloader)
      os << lookupBlock;
    else
      os << "    immed[a7, 1]\n";
  }
  os << R"(
to_host:
    alu[$0, --, b, a0]
    alu[$1, --, b, a1]
    alu[$2, --, b, a7]
    alu[$3, --, b, b6]
    local_csr_rd[b1, timestamp_low]
    alu[$4, --, b, b1]
    scratch[put, $0, TO_HOST, 0, 5], ctx_swap[s1]
    br[rx_loop]
)";
  // A frame the MEs refuse: count it, give the buffer back.
  auto refuse = [&](const char *label, unsigned counter) {
    os << label << ":\n    scratch[incr, --, STATS, " << counter
       << "]\n    br[give_back]\n";
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
  os << R"(
give_back:
    alu[$0, --, b, a0]
    scratch[put, $0, FREE_RING, 0, 1], ctx_swap[s1]
    br[rx_loop]
rx_end:
    immed[$0, 0xffffffff]
    immed[$1, 0]
    immed[$2, 0]
    immed[$3, 0]
    immed[$4, 0]
    scratch[put, $0, TO_HOST, 0, 5], ctx_swap[s1]
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
     << ".ring TO_HOST, " << toHostAddress << ", " << toHostWords << "\n";
  os << "\n.me 0";
  if (config.rxMEs > 1)
    os << "-" << config.rxMEs - 1;
  os << "\n.ctx_enable 0xff\n";
  rxLoop(os, config.design);
  return os.str();
}

} // namespace netvm::onload
