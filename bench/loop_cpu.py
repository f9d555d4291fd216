#!/usr/bin/env python3
"""Where the CPU of the side-by-side run's throughput measure goes, by part.

On a fresh gpuqd (local executor, 8 virtual GPUs; bench/side_by_side.py's config), 4 threads
each run `gpuq submit -q q --gpus 1 -- true` SUBMITS times in a row while the jobs run, as
side_by_side.py's "submit throughput, 4 loops" does. Prints submits/s and, per submit, the CPU
milliseconds of:
  clients     the gpuq processes (their rusage from wait4)
  gpuqd       gpuqd's own threads (utime + stime in /proc/PID/stat)
  shims+jobs  what gpuqd reaped meanwhile: each pod's gpuq-shim and, reaped by it, its job
              (cutime + cstime; a job still running at the end counts in the next run only)
  python      this script's own threads (posix_spawn, wait4)
  machine     every CPU's busy and idle time (/proc/stat)

Several builds can be compared, alternated, by naming their binaries:
  bench/loop_cpu.py --build build --runs 3
  bench/loop_cpu.py --runs 3 --gpuq A/gpuq B/gpuq --shim A/gpuq-shim B/gpuq-shim
(the Nth --gpuq goes with the Nth --shim and --gpuqd; a missing one is --build's).
"""
import argparse
import os
import resource
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import side_by_side as sbs  # noqa: E402

HZ = os.sysconf("SC_CLK_TCK")


def own_and_reaped_ms(pid):
    """(utime + stime, cutime + cstime) of pid, in ms."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    ut, st, cut, cst = (int(fields[i]) * 1000 / HZ for i in (11, 12, 13, 14))
    return ut + st, cut + cst


def machine_ms():
    """(busy, idle) ms of all CPUs together."""
    v = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return (sum(v) - v[3] - v[4]) * 1000 / HZ, v[3] * 1000 / HZ


def one_run(gpuq, shim, gpuqd, submits, tmp):
    work = tempfile.mkdtemp(dir=tmp)
    env, proc = sbs.start_gpuqd(work, None, gpuqd=gpuqd, gpuq=gpuq, shim=shim)
    try:
        time.sleep(0.5)
        argv = [os.path.abspath(gpuq), "submit", "-q", "q", "--gpus", "1", "--", "true"]
        clients = []
        own0, reaped0 = own_and_reaped_ms(proc.pid)
        busy0, idle0 = machine_ms()
        me0 = resource.getrusage(resource.RUSAGE_SELF)
        seconds = sbs.submit_loops(sbs.Side("gpuq", env), argv, [submits] * 4, cpu=clients)
        own1, reaped1 = own_and_reaped_ms(proc.pid)
        busy1, idle1 = machine_ms()
        me1 = resource.getrusage(resource.RUSAGE_SELF)
        n = 4 * submits
        py = (me1.ru_utime + me1.ru_stime - me0.ru_utime - me0.ru_stime) * 1000
        return (n / seconds, sum(clients) / n, (own1 - own0) / n, (reaped1 - reaped0) / n, py / n,
                (busy1 - busy0) / n, (idle1 - idle0) / n)
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="the build whose binaries are the default")
    ap.add_argument("--gpuq", nargs="*", default=[], help="gpuq binaries to compare")
    ap.add_argument("--shim", nargs="*", default=[], help="gpuq-shim binaries, one per --gpuq")
    ap.add_argument("--gpuqd", nargs="*", default=[], help="gpuqd binaries, one per --gpuq")
    ap.add_argument("--runs", type=int, default=1, help="runs of each, alternated")
    ap.add_argument("--submits", type=int, default=100, help="submits per loop (4 loops)")
    args = ap.parse_args()
    n = max(len(args.gpuq), len(args.shim), len(args.gpuqd), 1)

    def pick(xs, i, default):
        return xs[i] if i < len(xs) else os.path.join(args.build, default)

    sides = [(pick(args.gpuq, i, "cli/gpuq"), pick(args.shim, i, "daemon/gpuq-shim"),
              pick(args.gpuqd, i, "daemon/gpuqd")) for i in range(n)]
    print(f"loop_cpu: {os.cpu_count()} CPUs; 4 loops x {args.submits} submits; CPU ms per submit")
    print(f"{'gpuq':28} {'submits/s':>9} {'clients':>8} {'gpuqd':>6} {'shims+jobs':>10} {'python':>6} "
          f"{'busy':>6} {'idle':>5}")
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):
            for gpuq, shim, gpuqd in sides:
                r = one_run(gpuq, shim, gpuqd, args.submits, tmp)
                print(f"{gpuq[-28:]:28} {r[0]:9.1f} {r[1]:8.2f} {r[2]:6.2f} {r[3]:10.2f} {r[4]:6.2f} {r[5]:6.2f} "
                      f"{r[6]:5.2f}", flush=True)


if __name__ == "__main__":
    main()
