#!/usr/bin/env python3
"""What cgroups cost a job's start, and whether they hold a busy job to its CPU request.

The local executor (binder/local/CGROUPS.md) makes each pod's cgroups, sets their limits and has
the job join them; this measures that against the same gpuqd with local.cgroups off, alternated.
Needs root (cgroups) and a built tree.

  start   N jobs `date +%s%N` (1 GPU, 500m CPU, 256Mi) submitted one after another with `gpuq
          submit --wait`: ms from the submit (before the client starts) to the job's first
          instruction (the time it prints; median), gpuqd's CPU ms per job (/proc/PID/stat) and
          the shims' and jobs' (what gpuqd reaped: cutime + cstime).
  cpu     a busy loop asking for --cpu C runs SECONDS; the CPU it got over wall time, from
          /proc/PID/stat (the same reading with and without cgroups).

  bench/cgroup_bench.py --build build --jobs 100 --rounds 3 --versions off,v1,v2
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loop_cpu  # noqa: E402
import side_by_side as sbs  # noqa: E402

cpu_ms = loop_cpu.own_and_reaped_ms  # (own, reaped children's) CPU ms of a pid


def start_gpuqd(work, build, mode):
    """gpuqd in work with cgroups `mode` (off, v1, v2): (env, process)."""
    cg = "  cgroups: off\n" if mode == "off" else \
        f"  cgroups: required\n  cgroupVersion: {mode}\n  cgroupRoot: gpuq-bench-{os.getpid()}-{os.path.basename(work)}\n"
    return sbs.start_gpuqd(work, build, local_extra=cg,
                           resources="{gpu: {nominal: 8}, cpu: {nominal: 1000}, memory: {nominal: 1Ti}}")


def start_round(build, mode, jobs, tmp):
    """(ms from the submit to the job's first instruction, gpuqd CPU ms per job, shim+job CPU ms per job)."""
    work = tempfile.mkdtemp(dir=tmp)
    env, proc = start_gpuqd(work, build, mode)
    gpuq = os.path.join(build, "cli", "gpuq")
    try:
        # The job is `date`: it prints the moment it runs, nanoseconds since the epoch.
        argv = [gpuq, "submit", "-q", "q", "--gpus", "1", "--cpu", "500m", "--memory", "256Mi", "--wait", "--",
                "/bin/date", "+%s%N"]
        subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # warm
        own0, reaped0 = cpu_ms(proc.pid)
        latency = []
        for _ in range(jobs):
            t = time.time_ns()
            out = subprocess.run(argv, env=env, check=True, capture_output=True, text=True)
            job = (out.stdout + out.stderr).split()[0].split("/")[-1]
            ran = int(open(os.path.join(work, "logs", job, "pod-0.log")).read().split()[0])
            latency.append((ran - t) / 1e6)
        own1, reaped1 = cpu_ms(proc.pid)
        return statistics.median(latency), (own1 - own0) / jobs, (reaped1 - reaped0) / jobs
    finally:
        proc.terminate()
        proc.wait()


def cpu_round(build, mode, cpu, seconds, tmp):
    work = tempfile.mkdtemp(dir=tmp)
    env, proc = start_gpuqd(work, build, mode)
    gpuq = os.path.join(build, "cli", "gpuq")
    pidfile = os.path.join(work, "busy.pid")
    try:
        subprocess.run([gpuq, "submit", "-q", "q", "--gpus", "1", "--cpu", cpu, "--", "sh", "-c",
                        f"echo $$ > {pidfile}; exec python3 -c 'while True: pass'"],
                       env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sbs.wait_until("the busy job", lambda: os.path.exists(pidfile) and open(pidfile).read().strip() != "")
        pid = int(open(pidfile).read())
        time.sleep(0.5)
        a, _ = cpu_ms(pid)
        t0 = time.monotonic()
        time.sleep(seconds)
        b, _ = cpu_ms(pid)
        return (b - a) / ((time.monotonic() - t0) * 1000)
    finally:
        if os.path.exists(pidfile):
            try:
                os.kill(int(open(pidfile).read()), 9)  # its shim then ends too
            except (ProcessLookupError, ValueError):
                pass
        time.sleep(0.5)
        proc.terminate()
        proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--jobs", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--versions", default="off,v1,v2", help="comma-separated: off, v1, v2")
    ap.add_argument("--cpu", default="500m,250m", help="the busy loop's requests, comma-separated")
    ap.add_argument("--seconds", type=float, default=5)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("cgroup_bench: needs root (cgroups)")
    modes = args.versions.split(",")
    build = os.path.abspath(args.build)
    with tempfile.TemporaryDirectory() as tmp:
        start = {m: [] for m in modes}
        for r in range(args.rounds):
            for m in modes:
                start[m].append(start_round(build, m, args.jobs, tmp))
        print(f"job start, {args.jobs} jobs `date` one after another (gpuq submit --wait), median of {args.rounds} "
              f"rounds alternated:")
        print(f"  {'cgroups':<8} {'submit to start ms':>18} {'gpuqd CPU ms/job':>17} {'shim+job CPU ms/job':>20}   rounds")
        for m in modes:
            w = [x[0] for x in start[m]]
            g = [x[1] for x in start[m]]
            s = [x[2] for x in start[m]]
            rounds = " / ".join(f"{x[0]:.2f}" for x in start[m])
            print(f"  {m:<8} {statistics.median(w):>18.2f} {statistics.median(g):>17.2f} {statistics.median(s):>20.2f}"
                  f"   submit to start {rounds}")
        print(f"\nbusy loop, CPU used over {args.seconds:g} s of wall time (1.0: a whole CPU):")
        for c in args.cpu.split(","):
            cells = []
            for m in modes:
                cells.append(f"{m} {cpu_round(build, m, c, args.seconds, tmp):.3f}")
            print(f"  --cpu {c:<6} " + "   ".join(cells))


if __name__ == "__main__":
    main()
