"""Run a command, send it SIGINT after half a second, and print its exit
status, then its standard output and error, each line prefixed, for
FileCheck.

Usage: interrupt.py COMMAND [ARGS...]
"""
import signal
import subprocess
import sys
import time

proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
time.sleep(0.5)
proc.send_signal(signal.SIGINT)
out, err = proc.communicate(timeout=60)
print("status", proc.returncode)
for line in out.splitlines():
    print("stdout:", line)
for line in err.splitlines():
    print("stderr:", line)
