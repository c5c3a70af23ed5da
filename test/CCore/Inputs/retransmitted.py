#!/usr/bin/env python3
"""Checks a chain run behind reliable UDP with retransmission:
retransmitted.py IN OUT LOG PAYLOAD [OFFSET LIMIT]. IN holds the messages
the sender sent; OUT must be exactly them (or, with OFFSET and LIMIT, the
ones whose u32 at OFFSET is above LIMIT), in order, byte for byte. The
counts of LOG must agree with each other: every fragment went out at least
once (sent less resent is the stream's fragments), the receiver delivered
every message once, the return path carried its NACKs and ACKs."""
import re
import sys

from pcapfile import messages

inputs, outputs = messages(sys.argv[1]), messages(sys.argv[2])
log, payload = open(sys.argv[3]).read(), int(sys.argv[4])
expected = inputs
if len(sys.argv) > 6:
    offset, limit = int(sys.argv[5]), int(sys.argv[6])
    expected = [m for m in inputs
                if int.from_bytes(m[offset:offset + 4], "big") > limit]
print(f"out {len(outputs)} expected {len(expected)} "
      f"{'same' if outputs == expected else 'DIFFERENT'}")


def numbers(pattern):
    match = re.search(pattern, log)
    if not match:
        sys.exit(f"not in the log: {pattern}")
    return [int(g) for g in match.groups()]


sent, resent, lost, reordered = numbers(
    r"(\d+) fragments sent \((\d+) resent, (\d+) lost, (\d+) reordered\)")
delivered, rejected, nacks, acks = numbers(
    r"(\d+) messages delivered in order, (\d+) fragments rejected "
    r"\(duplicate, late or out of order\), (\d+) NACKs, (\d+) ACKs sent")
control, control_lost, nacks_in, acks_in = numbers(
    r"(\d+) control messages, (\d+) lost, (\d+) NACKs and (\d+) ACKs "
    r"received")
fragments = sum(-(-len(m) // payload) for m in inputs)
print("fragments", "ok" if sent - resent == fragments else
      f"WRONG: {sent} - {resent} != {fragments}")
print("delivered", "ok" if delivered == len(inputs) else "WRONG")
print("return path", "ok" if control == nacks + acks and
      nacks_in + acks_in + control_lost <= control and acks >= delivered
      else "WRONG")
print(f"losses {'some' if lost else 'none'}, "
      f"reordered {'some' if reordered else 'none'}, "
      f"NACKs {'some' if nacks else 'none'}")
