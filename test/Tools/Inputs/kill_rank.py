"""Runs an mpirun COMMAND, kills one rank's process with SIGKILL (or sends it SIGNAL: INT or
TERM) once the metrics log holds N lines (the first steps ran), and reports how the job ended:
the launcher's output, then "exit=<code>" and "ended within <LIMIT> s: yes|no" (seconds from
the signal to mpirun's exit).
The rank's process is the launcher's descendant whose environment holds
OMPI_COMM_WORLD_RANK=<RANK> (Open MPI). A job still running LIMIT * 2 s after the kill is
killed and reported as "ended within <LIMIT> s: no".

usage: kill_rank.py LOG N RANK LIMIT [SIGNAL] -- COMMAND...
"""
import os
import signal
import subprocess
import sys
import time

dash = sys.argv.index("--")
log, n, rank, limit = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
sig = {"INT": signal.SIGINT, "TERM": signal.SIGTERM}[sys.argv[5]] if dash == 6 else signal.SIGKILL
proc = subprocess.Popen(sys.argv[dash + 1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                        start_new_session=True)


def children(pid):
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid:
                    out.append(int(entry))
            except OSError:
                pass
    return out


def find_rank(root):
    todo = [root]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
            if f"OMPI_COMM_WORLD_RANK={rank}".encode() in env:
                return pid
        except OSError:
            pass
        todo.extend(children(pid))
    return None


deadline = time.time() + 120
victim = None
while time.time() < deadline and proc.poll() is None:
    if os.path.exists(log) and sum(1 for _ in open(log)) >= n:
        victim = find_rank(proc.pid)
        if victim:
            break
    time.sleep(0.05)
if victim is None:
    print(f"kill_rank: no rank {rank} process found (job exit {proc.poll()})")
    os.killpg(proc.pid, signal.SIGKILL)
    sys.exit(1)
os.kill(victim, sig)
killed = time.time()
try:
    output, _ = proc.communicate(timeout=2 * limit)
except subprocess.TimeoutExpired:
    os.killpg(proc.pid, signal.SIGKILL)
    output, _ = proc.communicate()
seconds = time.time() - killed
sys.stdout.write(output.decode(errors="replace"))
print(f"exit={proc.returncode}")
print(f"ended within {limit:g} s: {'yes' if seconds <= limit else 'no'} ({seconds:.1f} s)")
