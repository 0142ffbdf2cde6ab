"""Interrupts rp-run training runs at random moments and checks that each one stops cleanly.

usage: interrupt_stress.py --rp-run BIN --data FILE --work DIR --trials N [--seed S]
                           [--steps K] PLAN[@GPUS] [PLAN[@GPUS] ...]

(PLAN@GPUS runs PLAN with --gpus GPUS.)

For each trial it picks a plan, a checkpoint interval (every step, every 3 steps, or only at
the end and at the interrupt), a signal (SIGINT or SIGTERM) and a moment, uniformly from the
start of the process (loading) to the end of an uninterrupted run of the same plan, and
sometimes a second signal right after the first. Then:

  - the run must end within a timeout (a hang fails the trial);
  - one signal: exit 0 (it finished first), 130 (SIGINT) or 143 (SIGTERM); two signals: also
    the signal's code straight away;
  - no temporary file (`*.tmp.*`) and no tensor file that checkpoint.json does not name may be
    left in the checkpoint directory;
  - resuming the checkpoint it left (or starting over when it left none) to K steps in total
    must give model and optimizer files identical, byte for byte, to the uninterrupted run's.

Prints one line per trial and a summary; exit status 1 when any trial failed.
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

TIMEOUT_S = 120  # an interrupted run that takes longer than this is a hang


def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          timeout=TIMEOUT_S)


def train_cmd(args, plan, save, steps, resume=False, save_every=0):
    path, _, gpus = plan.partition("@")
    cmd = [args.rp_run, path, "--data", args.data, "--steps", str(steps), "--save", save,
           "--no-progress"] + (["--gpus", gpus] if gpus else [])
    # Checkpoints every step, every few steps, or only when the run ends or is interrupted
    # (then segments span several steps, and a job's weights are prefetched across them).
    cmd += ["--save-every", str(save_every)] if save_every else []
    return cmd + (["--resume", save] if resume else [])


def checkpoint_step(save):
    try:
        with open(os.path.join(save, "checkpoint.json")) as f:
            return json.load(f)["step"]
    except FileNotFoundError:
        return 0


def same_files(a, b, step):
    for name in (f"model-step{step}.safetensors", f"optimizer-step{step}.safetensors"):
        with open(os.path.join(a, name), "rb") as fa, open(os.path.join(b, name), "rb") as fb:
            if fa.read() != fb.read():
                return f"{name} differs from the uninterrupted run's"
    return None


def trial(args, rng, plan, reference, seconds, index):
    save = os.path.join(args.work, f"trial{index}")
    shutil.rmtree(save, ignore_errors=True)
    sig = rng.choice([signal.SIGINT, signal.SIGTERM])
    delay = rng.uniform(0, seconds)
    twice = rng.random() < 0.2
    save_every = rng.choice([0, 0, 1, 3])
    proc = subprocess.Popen(train_cmd(args, plan, save, args.steps, save_every=save_every),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    proc.send_signal(sig)
    if twice:
        time.sleep(rng.uniform(0, 0.05))
        proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return f"hang: no exit {TIMEOUT_S} s after {sig.name} at {delay:.3f} s"
    code = proc.returncode
    allowed = {0, 128 + sig, -sig}  # finished first / stopped cleanly / killed by the 2nd
    if code not in allowed:
        return f"exit {code} after {sig.name} at {delay:.3f} s: {err.strip()[-300:]}"
    if os.path.isdir(save):
        temps = [n for n in os.listdir(save) if ".tmp." in n]
        if temps:
            return f"temporary files left after {sig.name}: {temps}"
        # No tensor file of a newer generation than the one checkpoint.json names (a save that
        # a second signal cut short removes what it had written; older files are the previous
        # checkpoint's, which the next save removes).
        named, committed = set(), -1
        if os.path.exists(os.path.join(save, "checkpoint.json")):
            with open(os.path.join(save, "checkpoint.json")) as f:
                manifest = json.load(f)
            named, committed = {manifest["model"], manifest["optimizer"]}, manifest["step"]
        stray = [n for n in os.listdir(save) if n.endswith(".safetensors") and n not in named
                 and int(re.search(r"step(\d+)", n).group(1)) >= committed]
        if stray:
            return f"files of an uncommitted checkpoint left after {sig.name}: {stray}"
    done = checkpoint_step(save)
    if done < args.steps:
        resumed = run(train_cmd(args, plan, save, args.steps, resume=done > 0))
        if resumed.returncode != 0:
            return f"resume from step {done} failed: {resumed.stderr.strip()[-300:]}"
    diff = same_files(save, reference, args.steps)
    if diff:
        return f"stopped at step {done} ({sig.name} at {delay:.3f} s): {diff}"
    shutil.rmtree(save, ignore_errors=True)
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rp-run", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--trials", type=int, default=50)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("plans", nargs="+")
    args = p.parse_args()
    rng = random.Random(args.seed)
    os.makedirs(args.work, exist_ok=True)
    references, seconds = {}, {}
    for i, plan in enumerate(args.plans):
        ref = os.path.join(args.work, f"reference{i}")
        shutil.rmtree(ref, ignore_errors=True)
        start = time.time()
        r = run(train_cmd(args, plan, ref, args.steps))
        if r.returncode != 0:
            sys.exit(f"interrupt_stress: the uninterrupted run of {plan} failed: {r.stderr}")
        references[plan], seconds[plan] = ref, time.time() - start
    failures = 0
    for index in range(args.trials):
        plan = args.plans[index % len(args.plans)]
        problem = trial(args, rng, plan, references[plan], seconds[plan], index)
        print(f"trial {index} {os.path.basename(plan)}: {problem or 'ok'}", flush=True)
        failures += problem is not None
    print(f"interrupt_stress: {args.trials - failures} of {args.trials} trials passed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
