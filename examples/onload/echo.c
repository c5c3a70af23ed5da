/* echo.c - a UDP echo server in C over the onload layer's socket API
 * (runtime/include/netvm/onload/socket.h, docs/onload.md "Socket API").
 *
 *   netvm-onload --design=softnic --write-image=softnic.img
 *   cc -std=c99 -Iruntime/include examples/onload/echo.c \
 *      build/runtime/onload/libNetVMOnload.a \
 *      build/runtime/hostif/libNetVMHostIf.a \
 *      build/runtime/emu/libNetVMEmu.a \
 *      build/runtime/io/libNetVMPacketIO.a -lpcap -lstdc++ -lm -o echo
 *   ./echo softnic softnic.img in.pcap 7
 *
 * Feeds the frames of the pcap file to a stack of the design, answers
 * every datagram for the port to its sender, prints every frame that left
 * as hexadecimal (one a line) and, on standard error, what the host did and
 * the session's emulated clock and latencies.
 */

#include "netvm/onload/socket.h"

#include <stdio.h>
#include <stdlib.h>

static int fail(netvm_onload_stack *stack, const char *what) {
  fprintf(stderr, "echo: %s: %s\n", what, netvm_onload_error(stack));
  netvm_onload_close(stack);
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: echo DESIGN IMAGE IN.pcap [PORT]\n");
    return 2;
  }
  FILE *f = fopen(argv[2], "rb");
  if (!f) {
    fprintf(stderr, "echo: cannot open %s\n", argv[2]);
    return 1;
  }
  static unsigned char image[1 << 20];
  size_t size = fread(image, 1, sizeof image, f);
  fclose(f);

  netvm_onload_options options;
  netvm_onload_options_init(&options);
  options.design = argv[1];
  netvm_onload_stack *stack = NULL;
  char error[256];
  if (netvm_onload_open(&options, image, size, &stack, error, sizeof error) !=
      NETVM_ONLOAD_OK) {
    fprintf(stderr, "echo: %s\n", error);
    return 1;
  }
  int sock;
  if (netvm_onload_bind(stack, argc > 4 ? (unsigned)atoi(argv[4]) : 7u,
                        &sock) != NETVM_ONLOAD_OK)
    return fail(stack, "bind");
  if (netvm_onload_feed_pcap(stack, argv[3]) != NETVM_ONLOAD_OK)
    return fail(stack, "feed");

  unsigned char buffer[1472];
  size_t length;
  netvm_onload_address from;
  unsigned echoed = 0;
  int status;
  while ((status = netvm_onload_recv(stack, sock, buffer, sizeof buffer,
                                     &length, &from)) == NETVM_ONLOAD_OK) {
    size_t n = length < sizeof buffer ? length : sizeof buffer;
    if (netvm_onload_send(stack, sock, from.ip, from.port, buffer, n) !=
        NETVM_ONLOAD_OK)
      return fail(stack, "send");
    ++echoed;
  }
  if (status != NETVM_ONLOAD_WOULD_BLOCK)
    return fail(stack, "recv");

  size_t count;
  if (netvm_onload_transmitted_count(stack, &count) != NETVM_ONLOAD_OK)
    return fail(stack, "transmit");
  for (size_t i = 0; i < count; ++i) {
    const uint8_t *bytes;
    size_t n;
    netvm_onload_transmitted(stack, i, &bytes, &n);
    for (size_t k = 0; k < n; ++k)
      printf("%02x", bytes[k]);
    printf("\n");
  }
  netvm_onload_stats stats;
  if (netvm_onload_stats_get(stack, &stats) != NETVM_ONLOAD_OK)
    return fail(stack, "stats");
  fprintf(stderr,
          "%s: echoed %u datagrams, %zu frames left; %llu system calls, "
          "%llu refused at the MEs, %llu at the host\n",
          argv[1], echoed, count, (unsigned long long)stats.syscalls,
          (unsigned long long)(stats.drop_me_checksum +
                               stats.drop_me_no_socket + stats.drop_me_not_udp),
          (unsigned long long)(stats.drop_host_checksum +
                               stats.drop_host_no_socket +
                               stats.drop_host_not_udp));
  /* One machine ran the whole session: its clock, and the means of a
   * datagram's way from the wire to recv's return and of a reply's from
   * send to the wire, in emulated cycles. */
  fprintf(stderr,
          "%s: clock %llu cycles; receive latency %llu, send latency %llu "
          "cycles a datagram\n",
          argv[1], (unsigned long long)stats.cycles,
          (unsigned long long)(stats.received ? stats.receive_latency_cycles /
                                                    stats.received
                                              : 0),
          (unsigned long long)(stats.transmitted ? stats.send_latency_cycles /
                                                       stats.transmitted
                                                 : 0));
  netvm_onload_close(stack);
  return 0;
}
