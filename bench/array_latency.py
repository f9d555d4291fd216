#!/usr/bin/env python3
"""A 1,000-member array's answer against one held job's, for one or more gpuqd binaries, each on
a fresh gpuqd and state file (the side-by-side script's local-executor config), the binaries
alternated round by round (bench/HISTORY.md: an array's job made once).

Per run: one array first (it faults in the memory its jobs take), then ROUNDS_PER_RUN times
`gpuq submit -q q --gpus 1 --hold --array 0-999 -- true` and the same without --array, each
cancelled after; prints the medians of the `gpuq submit` processes' wall times and their
difference. Usage:
  bench/array_latency.py [--build build] [--runs 3] [--submits 11] [GPUQD ...]
GPUQD: gpuqd binaries to compare (default: the build's own).
"""
import argparse
import os
import shutil
import signal
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import side_by_side as sbs  # noqa: E402


def one(gpuqd, gpuq, submits):
    work = tempfile.mkdtemp(prefix="array_latency.")
    env, proc = sbs.start_gpuqd(os.path.join(work, "gpuq"), None, gpuqd=gpuqd, gpuq=gpuq)
    try:
        tmp = os.path.join(work, "tmp")
        os.makedirs(tmp)
        array = [gpuq, "submit", "-q", "q", "--gpus", "1", "--hold", "--array", "0-999", "--", "true"]
        single = [gpuq, "submit", "-q", "q", "--gpus", "1", "--hold", "--", "true"]
        walls = {"array": [], "single": []}
        for i in range(submits + 1):
            for name, argv in (("array", array), ("single", single)):
                wall, _, out = sbs.spawn_timed(argv, env, os.path.join(tmp, "out"))
                if i > 0:
                    walls[name].append(wall)
                sbs.spawn_timed([gpuq, "cancel", out.split()[0].split("/")[1]], env)  # array/j5 submitted: ...
        return statistics.median(walls["array"]), statistics.median(walls["single"])
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--submits", type=int, default=11)
    ap.add_argument("gpuqd", nargs="*")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    gpuq = os.path.join(build, "cli", "gpuq")
    binaries = [os.path.abspath(g) for g in args.gpuqd] or [os.path.join(build, "daemon", "gpuqd")]
    for _ in range(args.runs):
        for g in binaries:
            a, s = one(g, gpuq, args.submits)
            print(f"{g}: array {a:.1f} ms, one held job {s:.1f} ms, difference {a - s:.1f} ms", flush=True)


if __name__ == "__main__":
    main()
