#!/usr/bin/env python3
"""Each `gpuq` call alone, the quick gpuq against gpuq-full, alternated.

On a fresh gpuqd (bench/side_by_side.py's: local executor, 8 virtual GPUs, queue q), runs each
call N times through each program, one after the other, and prints the medians of wall time and
of the process's CPU (rusage from wait4), round after round:
  bench/cli_calls.py --build build [--rounds 3] [-n 200]
The calls: --version; a held submit; ls (of the held jobs submitted so far); show; queues; and
`watch --help`, which the quick gpuq hands to gpuq-full (what that hand-over costs).
"""
import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import side_by_side as sbs  # noqa: E402

CALLS = [["--version"], ["submit", "-q", "q", "--gpus", "1", "--hold", "--", "true"], ["ls"], ["show", "j1"],
         ["queues"], ["watch", "--help"]]


def medians(argv, env, n):
    """(wall ms, CPU ms) medians of n runs of argv (side_by_side.spawn_timed)."""
    runs = [sbs.spawn_timed(argv, env)[:2] for _ in range(n)]
    walls = sorted(w for w, _ in runs)
    cpus = sorted(c for _, c in runs)
    return walls[n // 2], cpus[n // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-n", type=int, default=200)
    args = ap.parse_args()
    quick = os.path.abspath(os.path.join(args.build, "cli/gpuq"))
    full = os.path.abspath(os.path.join(args.build, "cli/gpuq-full"))
    work = tempfile.mkdtemp(prefix="cli_calls.")
    env, proc = sbs.start_gpuqd(work, args.build)
    try:
        time.sleep(0.5)
        print(f"cli_calls: {os.cpu_count()} CPUs; medians of {args.n} runs: wall ms / CPU ms")
        print(f"{'':7} {'call':42} {'gpuq-full':>15} {'gpuq':>15}")
        for r in range(args.rounds):
            for call in CALLS:
                cells = []
                for program in (full, quick):
                    wall, cpu = medians([program] + call, env, args.n)
                    cells.append(f"{wall:6.2f} / {cpu:5.2f}")
                print(f"round {r} {' '.join(call)[:42]:42} {cells[0]:>15} {cells[1]:>15}", flush=True)
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
