"""Runs a command, sends it SIGINT (or SIGTERM) once its metrics log holds N lines, waits for
it, and prints "exit=<code>".

usage: interrupt.py LOG N SIGNAL -- COMMAND...     (SIGNAL: INT or TERM)
"""
import os
import signal
import subprocess
import sys
import time

log, n, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
assert sys.argv[4] == "--"
proc = subprocess.Popen(sys.argv[5:])
deadline = time.time() + 300
while time.time() < deadline and proc.poll() is None:
    if os.path.exists(log) and sum(1 for _ in open(log)) >= n:
        break
    time.sleep(0.05)
if proc.poll() is None:
    proc.send_signal(signal.SIGINT if name == "INT" else signal.SIGTERM)
print(f"exit={proc.wait()}", flush=True)
