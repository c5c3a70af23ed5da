/*===- host.h - The host (XScale/PCI) side of the ME emulator ----*- C -*-===//
 *
 * Host-side code (the XScale's control plane, or a program across PCI)
 * reaches the emulated network processor through the scratch rings it
 * shares with the microengines, and reads and writes scratch, SRAM and
 * DRAM. A host function is attached to the
 * emulator (netvm::me::Emulator::attachHost); the emulator calls it at the
 * cycle it asked for, between quanta, with every earlier effect applied,
 * and it moves words with the functions below. Every call is a crossing
 * of the host interface and costs the host
 *
 *     crossing cycles + words x word cycles       (ME cycles)
 *
 * (MachineConfig::hostCrossingCycles, hostWordCycles; docs/me-isa.md, "The
 * host interface"): the host's clock, netvm_emu_host_now, advances by that
 * much, and the next call of the host function comes no earlier than where
 * its clock ended. A get or read sees the state when its crossing starts;
 * a put or write lands when its crossing ends. Host accesses do not queue
 * at the memory controllers (the crossing dominates). Deterministic: the same
 * image, input and host code give the same statistics.
 *
 *===----------------------------------------------------------------------===*/

#ifndef NETVM_EMU_HOST_H
#define NETVM_EMU_HOST_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct netvm_emu_host netvm_emu_host;

/* Called at the cycle it asked for; returns how many cycles after its
 * clock's end it wants to run again, or 0 to detach. */
typedef uint64_t (*netvm_emu_host_fn)(netvm_emu_host *host, void *user);

/* The host's clock, in ME cycles: the cycle of the call plus the costs of
 * the crossings made in it so far. */
uint64_t netvm_emu_host_now(const netvm_emu_host *host);

/* Words in a scratch ring (one crossing, no words), or -1 if the ring is
 * not configured. */
int netvm_emu_host_ring_count(netvm_emu_host *host, unsigned ring);

/* Packets waiting in the media switch fabric's receive buffers for a
 * receive (the RBUF elements' status, one crossing, no words). */
int netvm_emu_host_rx_backlog(netvm_emu_host *host);
/* Takes `count` (1-16) words from a ring: 0, or -1 (nothing taken, only
 * the crossing paid) if the ring holds fewer or is not configured. */
int netvm_emu_host_ring_get(netvm_emu_host *host, unsigned ring,
                            uint32_t *words, unsigned count);

/* Puts `count` (1-16) words on a ring: 0, or -1 (nothing put, only the
 * crossing paid) if the ring, with the host's puts still in flight, has no
 * room or is not configured. A put that finds the ring filled by the MEs
 * when it lands is dropped and counted as an overflow. */
int netvm_emu_host_ring_put(netvm_emu_host *host, unsigned ring,
                            const uint32_t *words, unsigned count);

/* The emulated memories, for netvm_emu_host_read and _write. */
enum netvm_emu_memory {
  NETVM_EMU_SCRATCH = 0,
  NETVM_EMU_SRAM = 1,
  NETVM_EMU_DRAM = 2
};

/* Reads `length` bytes of a memory at `address` into `bytes` (a DMA across
 * the host interface, as the MEs' commands see memory: words big-endian):
 * one crossing of ceil(length / 4) words, read when the crossing starts.
 * 0, or -1 (nothing read, only the crossing paid) if the range is not
 * inside the memory or `memory` is not one of netvm_emu_memory. */
int netvm_emu_host_read(netvm_emu_host *host, unsigned memory, uint32_t address,
                        void *bytes, uint32_t length);

/* Writes `length` bytes to a memory at `address`: one crossing of
 * ceil(length / 4) words; the bytes land when the crossing ends (an ME
 * reading before then sees the old contents). 0, or -1 (nothing written,
 * only the crossing paid) if the range is not inside the memory. */
int netvm_emu_host_write(netvm_emu_host *host, unsigned memory,
                         uint32_t address, const void *bytes, uint32_t length);

/* Changing a running machine's code (docs/me-isa.md, "Changing code
 * while the machine runs"): what a handler manager needs to hot-swap the
 * program of one ME. Each call is one crossing (a load also moves two words
 * per instruction) and takes effect at once, at the host's clock. */

/* Puts `count` instructions into the control store of ME `me`, which must
 * be stopped (netvm_emu_host_me_stop) or never loaded, with `contexts` (4
 * or 8) contexts of which those in the mask `ctxEnable` start; the ME
 * stays stopped until netvm_emu_host_me_start. 0, or -1 (nothing loaded)
 * if the ME is running, does not exist, or the code does not fit. */
int netvm_emu_host_me_load(netvm_emu_host *host, unsigned me,
                           const uint64_t *words, unsigned count,
                           unsigned contexts, uint32_t ctxEnable);

/* Stops ME `me`: its contexts end wherever they are. Its commands still in
 * flight land in memory and rings (its ring gets take nothing), never
 * again in its registers. 0, or -1 if the ME has no code. Stop an ME
 * between packets (a ring fence, then its ring counts) or its packets are
 * lost. */
int netvm_emu_host_me_stop(netvm_emu_host *host, unsigned me);

/* Starts a stopped ME afresh: registers, local memory, CAM and
 * next-neighbour state cleared, its enabled contexts ready at PC 0. 0, or
 * -1 if the ME has no code or is running. */
int netvm_emu_host_me_start(netvm_emu_host *host, unsigned me);

/* While `fenced` is nonzero, every get of ME `me` on ring `ring` finds the
 * ring empty (and takes nothing); other MEs and the host are not affected.
 * 0, or -1 if the ME or ring does not exist. */
int netvm_emu_host_ring_fence(netvm_emu_host *host, unsigned me, unsigned ring,
                              int fenced);

/* What one ME did on one ring since it last started: successful gets,
 * puts, gets refused (empty, fenced or stopped), and the cycles its first
 * and last successful gets completed. */
typedef struct netvm_emu_ring_ops {
  uint64_t gets, puts, refused;
  uint64_t firstGet, lastGet;
} netvm_emu_ring_ops;
int netvm_emu_host_me_ring_ops(netvm_emu_host *host, unsigned me, unsigned ring,
                               netvm_emu_ring_ops *ops);

#ifdef __cplusplus
}
#endif

#endif /* NETVM_EMU_HOST_H */
