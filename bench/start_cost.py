#!/usr/bin/env python3
"""CPU and wall time per start of a program: the build's static gpuq, gpuq-full and gpuq-shim
against the Debian package's, linked against shared libraries (packaging/README.md).

    python3 bench/start_cost.py [--build build] [--runs 300] [--rounds 2] [--server unix:PATH]

Each program runs `--version` (gpuq-shim: with no arguments, its usage error) RUNS times in a
round, rounds alternating between the two builds; with --server, also `gpuq ls` against that
gpuqd. Prints the CPU (user + system of the children) and the wall time per run, each round on
its own line.
"""
import argparse
import os
import subprocess
import time


def per_run(args, runs):
    t0, w0 = os.times(), time.perf_counter()
    for _ in range(runs):
        subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t1, w1 = os.times(), time.perf_counter()
    cpu = (t1.children_user + t1.children_system - t0.children_user - t0.children_system) / runs
    return cpu * 1000, (w1 - w0) / runs * 1000


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default="build")
    p.add_argument("--runs", type=int, default=300)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--server", help="a running gpuqd (unix:PATH): also time `gpuq ls` against it")
    a = p.parse_args()
    programs = [
        ("gpuq", f"{a.build}/cli/gpuq", f"{a.build}/packaging/bin/gpuq", ["--version"]),
        ("gpuq-full", f"{a.build}/cli/gpuq-full", f"{a.build}/packaging/bin/gpuq-full", ["--version"]),
        ("gpuq-shim", f"{a.build}/daemon/gpuq-shim", f"{a.build}/packaging/bin/gpuq-shim", []),
    ]
    if a.server:
        programs.append(("gpuq ls", f"{a.build}/cli/gpuq", f"{a.build}/packaging/bin/gpuq", ["--server", a.server, "ls"]))
    print(f"{'PROGRAM':<10} {'ROUND':>5} {'STATIC CPU':>11} {'WALL':>8} {'SHARED CPU':>11} {'WALL':>8}  (ms per run)")
    for name, static, shared, args in programs:
        for path in (static, shared):
            if not os.access(path, os.X_OK):
                raise SystemExit(f"start_cost: {path} is not built (cmake --build {a.build})")
        for r in range(a.rounds):
            sc, sw = per_run([static] + args, a.runs)
            dc, dw = per_run([shared] + args, a.runs)
            print(f"{name:<10} {r + 1:>5} {sc:>11.2f} {sw:>8.2f} {dc:>11.2f} {dw:>8.2f}")


main()
