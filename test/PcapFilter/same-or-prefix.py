"""Compare netvm-run's packet lines with tcpdump's, line by line.

Usage: same-or-prefix.py NETVM TCPDUMP

Every netvm line must equal tcpdump's, or begin it (tcpdump goes on with
what netvm does not decode: application protocols, its validity checks).
Prints the counts; exits 1 on the first other line, showing both.
"""
import sys

netvm = open(sys.argv[1]).read().splitlines()
tcpdump = open(sys.argv[2]).read().splitlines()
if len(netvm) != len(tcpdump):
    sys.exit(f"{len(netvm)} netvm lines, {len(tcpdump)} tcpdump lines")
same = prefix = 0
for number, (ours, theirs) in enumerate(zip(netvm, tcpdump), 1):
    if ours == theirs:
        same += 1
    elif theirs.startswith(ours):
        prefix += 1
    else:
        sys.exit(f"line {number} differs:\n netvm:   {ours}\n tcpdump: {theirs}")
print(f"{len(netvm)} lines: {same} the same, {prefix} a prefix of tcpdump's")
