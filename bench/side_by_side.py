#!/usr/bin/env python3
"""gpuq next to Slurm, timed in one run on this machine (issue [7/7]; BENCHMARKS.md).

Starts Slurm 22.05 from Debian's packages (slurmctld and slurmd here: one node, 16 CPUs and
8 GPUs as GRES backed by plain files, select/cons_tres, no accounting; munged if none runs)
and a fresh gpuqd with the local executor (8 virtual GPUs, one queue), then times whole
processes of each side, alternating the order within each pair:

  start-up     gpuq --version                       sbatch --version
  submit       gpuq submit --gpus 1 -- true         sbatch --gres=gpu:1 --wrap true
  throughput   4 parallel loops of SUBMITS submits each, the jobs running meanwhile: submits
               per second, and the end-to-end time until the last job has ended (RUNS runs)
  array        gpuq submit --array 0-999 --hold     sbatch --array=0-999 --hold
  held         4 parallel loops submitting 1,000 held jobs (the submit path alone, nothing runs)
  list         gpuq ls                              squeue   (those 1,000 held jobs in the queue)
  sweep        gpuq submit --array 0-99999 --hold   sbatch --array=0-99999 --hold (MaxArraySize
               100001; MaxJobCount 400000: Slurm counts an array's tasks, ended ones for
               MinJobAge), each daemon's memory (RSS) before and after it, then gpuq ls |
               squeue of it, and cancelling it whole (--sweep SIZE, 0 to skip; 3 alternating
               rounds; --sweep-only for it alone)

and prints medians (wall and CPU of the child, from wait4) and the ratios gpuq/Slurm.
Needs root (slurmd, munged). Usage:
  bench/side_by_side.py [--build build] [--pairs 50] [--runs 3] [--submits 100]
"""
import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

DEVNULL = os.open(os.devnull, os.O_RDWR)


class Side:
    """One scheduler's commands, with the environment its clients need."""

    def __init__(self, name, env):
        self.name = name
        self.env = env


def spawn_timed(argv, env, out_path=None):
    """Runs argv to the end; returns (wall ms, child CPU ms, stdout text or None). Raises on a
    non-zero exit, with its stderr."""
    err = tempfile.TemporaryFile()
    out = open(out_path, "w+b") if out_path else None
    actions = [(os.POSIX_SPAWN_DUP2, out.fileno() if out else DEVNULL, 1),
               (os.POSIX_SPAWN_DUP2, err.fileno(), 2),
               (os.POSIX_SPAWN_DUP2, DEVNULL, 0)]
    start = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
    _, status, usage = os.wait4(pid, 0)
    wall = (time.perf_counter() - start) * 1000
    if status != 0:
        err.seek(0)
        raise RuntimeError(f"{' '.join(argv)}: exit {status >> 8}: {err.read().decode()[-2000:]}")
    text = None
    if out:
        out.seek(0)
        text = out.read().decode()
        out.close()
    return wall, (usage.ru_utime + usage.ru_stime) * 1000, text


def pairs(n, a, b, tmp):
    """Times a and b (each (side, argv)) n times, alternating which goes first."""
    res = {a[0].name: ([], []), b[0].name: ([], [])}
    for i in range(n):
        for side, argv in ((a, b) if i % 2 == 0 else (b, a)):
            wall, cpu, _ = spawn_timed(argv, side.env, os.path.join(tmp, "out"))
            res[side.name][0].append(wall)
            res[side.name][1].append(cpu)
    return res


def which(name):
    path = shutil.which(name)
    if not path:
        sys.exit(f"side_by_side.py: {name} not found (apt-get install slurmctld slurmd slurm-client munge)")
    return path


def wait_until(what, check, timeout=60.0, every=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(every)
    sys.exit(f"side_by_side.py: {what} did not happen within {timeout:.0f} s")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_slurm(work, max_array=1000):
    host = socket.gethostname().split(".")[0]
    for d in ("state", "spool"):
        os.makedirs(os.path.join(work, d), exist_ok=True)
    for i in range(8):
        open(os.path.join(work, f"gpu{i}"), "w").close()
    conf = os.path.join(work, "slurm.conf")
    with open(conf, "w") as f:
        f.write(f"""ClusterName=bench
SlurmctldHost={host}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
SlurmdParameters=config_overrides
StateSaveLocation={work}/state
SlurmdSpoolDir={work}/spool
SlurmctldPidFile={work}/slurmctld.pid
SlurmdPidFile={work}/slurmd.pid
SlurmctldLogFile={work}/slurmctld.log
SlurmdLogFile={work}/slurmd.log
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
ReturnToService=2
NodeName={host} CPUs=16 RealMemory=4000 Gres=gpu:8 State=UNKNOWN
PartitionName=gpu Nodes={host} Default=YES MaxTime=INFINITE State=UP
MaxArraySize={max_array + 1}
MaxJobCount={max(10000, 4 * max_array)}
""")
    with open(os.path.join(work, "gres.conf"), "w") as f:
        f.write(f"NodeName={host} Name=gpu File={work}/gpu[0-7]\n")
    env = dict(os.environ, SLURM_CONF=conf)
    if subprocess.run(["munge", "-n"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
        os.makedirs("/run/munge", exist_ok=True)
        shutil.chown("/run/munge", "munge", "munge")
        subprocess.run(["runuser", "-u", "munge", "--", which("munged")], check=True)
        wait_until("munged", lambda: subprocess.run(["munge", "-n"], stdout=subprocess.DEVNULL,
                                                    stderr=subprocess.DEVNULL).returncode == 0)
    procs = [subprocess.Popen([which("slurmctld"), "-D", "-i", "-f", conf], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
             subprocess.Popen([which("slurmd"), "-D", "-f", conf], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]

    def idle():
        r = subprocess.run(["sinfo", "-h", "-o", "%t"], env=env, capture_output=True, text=True)
        return r.returncode == 0 and r.stdout.strip() == "idle"

    wait_until("Slurm's node going idle", idle)
    return env, procs


def start_gpuqd(work, build, gpuqd=None, gpuq=None, shim=None, local_extra="",
                resources="{gpu: {nominal: 8}}"):
    """A fresh gpuqd in work (local executor, 8 virtual GPUs, queue q): (the env its clients need,
    its process). gpuqd, gpuq and shim name other binaries than build's (gpuqd otherwise runs the
    gpuq-shim beside its own real path, a link followed); local_extra: more lines of `local:`
    (indented); resources: the queue's nominal quota."""
    os.makedirs(work, exist_ok=True)
    gpuqd = gpuqd or os.path.join(build, "daemon", "gpuqd")
    gpuq = gpuq or os.path.join(build, "cli", "gpuq")
    shim_line = f"\n  shim: {os.path.abspath(shim)}" if shim else ""
    conf = os.path.join(work, "gpuqd.yaml")
    with open(conf, "w") as f:
        f.write(f"""grpc: 127.0.0.1:0
http: 127.0.0.1:0
stateFile: {work}/gpuqd.db
binder: local
local:
  nvidiaSmi: {work}/no-nvidia-smi
  gpus: 8
  logDir: {work}/logs
  runDir: {work}/run{shim_line}
{local_extra}queues:
  - name: q
    quotas: [{{flavor: default, resources: {resources}}}]
""")
    proc = subprocess.Popen([gpuqd, "--config", conf],
                            stdout=open(os.path.join(work, "gpuqd.log"), "w"), stderr=subprocess.STDOUT)
    env = dict(os.environ, GPUQ_SERVER=f"unix:{work}/gpuqd.sock")
    wait_until("gpuqd answering", lambda: subprocess.run([gpuq, "queues"], env=env, stdout=subprocess.DEVNULL,
                                                         stderr=subprocess.DEVNULL).returncode == 0)
    return env, proc


def med(xs):
    return statistics.median(xs)


def row(label, unit, slurm, gpuq, higher_better=False):
    ratio = gpuq / slurm if slurm else float("nan")
    better = "higher is better" if higher_better else "lower is better"
    print(f"  {label:<44} {slurm:>10.1f} {gpuq:>10.1f} {unit:<10} {ratio:>6.2f}x  ({better})", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--pairs", type=int, default=50)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--submits", type=int, default=100, help="submits per loop (4 loops)")
    ap.add_argument("--listed", type=int, default=1000, help="held jobs in the queue for list")
    ap.add_argument("--sweep", type=int, default=100000, help="members of the held sweep (0: skip)")
    ap.add_argument("--sweep-only", action="store_true", help="the sweep alone")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("side_by_side.py: run it as root (slurmd and munged)")
    build = os.path.abspath(args.build)
    gpuq = os.path.join(build, "cli", "gpuq")
    sbatch, squeue, scancel = which("sbatch"), which("squeue"), which("scancel")
    work = tempfile.mkdtemp(prefix="side_by_side.")
    procs = []
    try:
        senv, sprocs = start_slurm(os.path.join(work, "slurm"), max(1000, args.sweep))
        procs += sprocs
        genv, gproc = start_gpuqd(os.path.join(work, "gpuq"), build)
        procs.append(gproc)
        S, G = Side("slurm", senv), Side("gpuq", genv)
        tmp = os.path.join(work, "tmp")
        os.makedirs(tmp)
        print(f"side_by_side: {os.cpu_count()} CPUs; medians of {args.pairs} pairs (wall ms, CPU ms of the child)")
        print(f"  {'':<44} {'Slurm':>10} {'gpuq':>10} {'':<10} {'gpuq/Slurm':>7}")

        if not args.sweep_only:
            sections(args, S, G, gpuq, sbatch, squeue, scancel, tmp)
        if args.sweep > 0:
            sweep(args.sweep, S, G, sprocs[0].pid, gproc.pid, sbatch, squeue, scancel, gpuq, tmp)
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)


def sections(args, S, G, gpuq, sbatch, squeue, scancel, tmp):
    """Every comparison but the sweep."""
    r = pairs(args.pairs, (G, [gpuq, "--version"]), (S, [sbatch, "--version"]), tmp)
    row("start-up (--version), wall", "ms", med(r["slurm"][0]), med(r["gpuq"][0]))
    row("start-up (--version), CPU", "ms", med(r["slurm"][1]), med(r["gpuq"][1]))

    gsub = [gpuq, "submit", "-q", "q", "--gpus", "1", "--", "true"]
    ssub = [sbatch, "--gres=gpu:1", "-o", "/dev/null", "--wrap", "true"]
    r = pairs(args.pairs, (G, gsub), (S, ssub), tmp)
    row("submit one 1-GPU job, wall", "ms", med(r["slurm"][0]), med(r["gpuq"][0]))
    row("submit one 1-GPU job, CPU", "ms", med(r["slurm"][1]), med(r["gpuq"][1]))
    drain(S, G, squeue, gpuq, tmp)

    rates, e2e = {"slurm": [], "gpuq": []}, {"slurm": [], "gpuq": []}
    for run in range(args.runs):
        for side, argv in ((G, gsub), (S, ssub)) if run % 2 == 0 else ((S, ssub), (G, gsub)):
            rate, total = throughput(side, argv, args.submits, squeue, gpuq, tmp)
            rates[side.name].append(rate)
            e2e[side.name].append(total)
    n = 4 * args.submits
    print(f"  {n} one-GPU `true` jobs from 4 parallel submit loops, {args.runs} runs:")
    print(f"    submits/s   Slurm {fmt(rates['slurm'])}   gpuq {fmt(rates['gpuq'])}")
    print(f"    end-to-end  Slurm {fmt(e2e['slurm'])} s   gpuq {fmt(e2e['gpuq'])} s")
    row("submit throughput, 4 loops", "submits/s", med(rates["slurm"]), med(rates["gpuq"]), True)
    row(f"{n} jobs end to end", "s", med(e2e["slurm"]), med(e2e["gpuq"]))

    arr = {"slurm": [], "gpuq": []}
    garr = [gpuq, "submit", "-q", "q", "--gpus", "1", "--hold", "--array", "0-999", "--", "true"]
    sarr = [sbatch, "--gres=gpu:1", "-o", "/dev/null", "--hold", "--array=0-999", "--wrap", "true"]
    for i in range(5):
        for side, argv in ((G, garr), (S, sarr)) if i % 2 == 0 else ((S, sarr), (G, garr)):
            wall, _, out = spawn_timed(argv, side.env, os.path.join(tmp, "out"))
            arr[side.name].append(wall)
            if side is S:
                spawn_timed([scancel, out.split()[-1]], S.env)
            else:
                spawn_timed([gpuq, "cancel", out.split()[0].split("/")[1]], G.env)  # array/j5 submitted: ...
    row("array of 1,000 (--array 0-999 --hold)", "ms", med(arr["slurm"]), med(arr["gpuq"]))
    drain(S, G, squeue, gpuq, tmp)

    held = {"gpuq": fill(G, gsub[:6] + ["--hold"] + gsub[6:], args.listed),
            "slurm": fill(S, ssub[:1] + ["--hold"] + ssub[1:], args.listed)}
    row(f"held submits/s, 4 loops ({args.listed} jobs, none running)", "submits/s",
        held["slurm"], held["gpuq"], True)
    r = pairs(args.pairs, (G, [gpuq, "ls"]), (S, [squeue]), tmp)
    lines = {side.name: spawn_timed(argv, side.env, os.path.join(tmp, "out"))[2].count("\n")
             for side, argv in ((G, [gpuq, "ls"]), (S, [squeue]))}
    row(f"list {args.listed} jobs (squeue | gpuq ls), wall", "ms", med(r["slurm"][0]), med(r["gpuq"][0]))
    row(f"list {args.listed} jobs, CPU", "ms", med(r["slurm"][1]), med(r["gpuq"][1]))
    print(f"  (lines printed: squeue {lines['slurm']}, gpuq ls {lines['gpuq']})")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def sweep(n, S, G, slurmctld, gpuqd, sbatch, squeue, scancel, gpuq, tmp):
    """A held array of n members on each side, 3 rounds in alternating order: its submit, the
    daemon's memory it added (RSS after, settled, less before), listing it, cancelling it."""
    # The queues empty first (the list section left its held jobs on both sides).
    spawn_timed([scancel, "--user=root"], S.env)
    ids = spawn_timed([gpuq, "ls", "-r", "-o", "wide"], G.env, os.path.join(tmp, "out"))[2].split("\n")[1:]
    ids = [line.split()[0] for line in ids if line.strip()]
    for k in range(0, len(ids), 200):
        spawn_timed([gpuq, "cancel"] + ids[k:k + 200], G.env)
    drain(S, G, squeue, gpuq, tmp)
    last = f"0-{n - 1}"
    garr = [gpuq, "submit", "-q", "q", "--gpus", "1", "--hold", "--array", last, "--", "true"]
    sarr = [sbatch, "--gres=gpu:1", "-o", "/dev/null", "--hold", f"--array={last}", "--wrap", "true"]
    res = {k: {"slurm": [], "gpuq": []} for k in ("submit", "rss", "list", "cancel")}
    for i in range(3):
        for side, argv in ((G, garr), (S, sarr)) if i % 2 == 0 else ((S, sarr), (G, garr)):
            pid = slurmctld if side is S else gpuqd
            time.sleep(1)
            before = rss_kib(pid)
            wall, _, out = spawn_timed(argv, side.env, os.path.join(tmp, "out"))
            res["submit"][side.name].append(wall)
            time.sleep(2)  # the daemon's writes and caches settle
            res["rss"][side.name].append((rss_kib(pid) - before) / 1024)
            ls = [gpuq, "ls"] if side is G else [squeue]
            res["list"][side.name].append(spawn_timed(ls, side.env, os.path.join(tmp, "out"))[0])
            job = out.split()[-1] if side is S else out.split()[0].split("/")[1]
            cancel = [scancel, job] if side is S else [gpuq, "cancel", job]
            res["cancel"][side.name].append(spawn_timed(cancel, side.env)[0])
            drain(S, G, squeue, gpuq, tmp)
    print(f"  a held sweep of {n:,} members (--array {last} --hold), 3 rounds:")
    row("  submit it, wall", "ms", med(res["submit"]["slurm"]), med(res["submit"]["gpuq"]))
    row("  the daemon's memory it adds (RSS)", "MiB", med(res["rss"]["slurm"]), med(res["rss"]["gpuq"]))
    row("  list the queue (squeue | gpuq ls), wall", "ms", med(res["list"]["slurm"]), med(res["list"]["gpuq"]))
    row("  cancel it whole, wall", "ms", med(res["cancel"]["slurm"]), med(res["cancel"]["gpuq"]))


def fmt(xs):
    return " / ".join(f"{x:.1f}" for x in xs)


def unfinished(side, squeue, gpuq, tmp):
    if side.name == "slurm":
        out = spawn_timed([squeue, "-h", "-o", "%i"], side.env, os.path.join(tmp, "poll"))[2]
        return len(out.split())
    out = spawn_timed([gpuq, "ls", "--limit", "1"], side.env, os.path.join(tmp, "poll"))[2]
    return 0 if out.startswith("No ") else 1


def drain(S, G, squeue, gpuq, tmp):
    for side in (S, G):
        wait_until(f"{side.name}'s jobs ending", lambda: unfinished(side, squeue, gpuq, tmp) == 0, 600)


def submit_loops(side, argv, counts, cpu=None):
    """One thread per entry of counts, each submitting that many jobs in a row; returns the
    seconds until the last submit ended. With a list as cpu, each call's CPU ms is appended."""
    errors = []

    def loop(k):
        try:
            for _ in range(k):
                _, ms, _ = spawn_timed(argv, side.env)
                if cpu is not None:
                    cpu.append(ms)
        except RuntimeError as e:
            errors.append(e)

    threads = [threading.Thread(target=loop, args=(k,)) for k in counts]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - start


def throughput(side, argv, per_loop, squeue, gpuq, tmp):
    """4 loops submitting per_loop jobs each: (submits/s until the last submit ended, seconds from
    the first submit until the last job ended)."""
    start = time.perf_counter()
    submitted = submit_loops(side, argv, [per_loop] * 4)
    while unfinished(side, squeue, gpuq, tmp):
        time.sleep(0.05)
    return 4 * per_loop / submitted, time.perf_counter() - start


def fill(side, argv, n):
    """n held jobs from 4 parallel loops; returns submits per second."""
    return n / submit_loops(side, argv, [n // 4 + (1 if i < n % 4 else 0) for i in range(4)])


if __name__ == "__main__":
    main()
