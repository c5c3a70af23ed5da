#!/usr/bin/env python3
"""Run netvm-run on a live interface while sending UDP datagrams to it.

Usage: live-capture.py IFACE -- NETVM-RUN ARGS...
Starts the command, sends a datagram to 127.0.0.1:9 every 20 ms until the
command exits (or 20 s pass), then prints its output and exits with its
status."""
import socket
import subprocess
import sys
import time

iface = sys.argv[1]
cmd = sys.argv[sys.argv.index("--") + 1:]
proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        text=True)
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
deadline = time.time() + 20
time.sleep(0.3)  # let the capture start
while proc.poll() is None and time.time() < deadline:
    sock.sendto(b"netvm live capture test", ("127.0.0.1", 9))
    time.sleep(0.02)
if proc.poll() is None:
    proc.kill()
out, err = proc.communicate()
sys.stdout.write(out)
sys.stderr.write(err)
sys.exit(proc.returncode)
