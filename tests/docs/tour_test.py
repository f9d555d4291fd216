#!/usr/bin/env python3
"""The README's five-minute tour is run as written, and prints what the README says it prints.

The tour's code blocks are transcripts: a line `$ COMMAND` and the lines after it, its output.
This test starts a fresh gpuqd on examples/standalone.yaml (8 virtual GPUs whatever the machine
has, ports chosen by the kernel, cgroups off: the tour shows none of it) in a scratch directory
that looks like the repository's (build/cli/gpuq, examples/), runs each command there with bash
in order, as a user would, and compares its output (stdout and stderr) with the README's:
- a line `...` stands for any number of lines (the README leaves them out);
- what changes from run to run is not compared: times (2026-11-30T08:38:28Z), ages and waits
  (2s, 0s/0s), GPU-hours and shares with two decimals (0.01), the caller's name (root);
- runs of spaces count as one (a column is as wide as its widest value);
- a command that only reads (ls, show, explain, queues, usage, logs) is asked again, for up to
  60 s, until it matches: the tour's jobs start, and are preempted, while it runs;
- `cat FILE` of a file that does not exist writes the README's lines to FILE first (the tour
  shows a file, then applies it);
- lines `$ alias ...` and `$ NAME=...` print nothing and hold for the commands after them;
- the commands are a second apart, as a person types them: it matters to the tour, where j4
  preempts the job of vision's admitted last (the engine's time is in seconds; two jobs
  admitted in the same second go by their order of submission instead).

At the end every job is cancelled and gpuqd stopped; a process left in the scratch directory
is a failure.

Usage: tour_test.py ROOT GPUQ GPUQD
"""
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT, GPUQ, GPUQD = (os.path.abspath(a) for a in sys.argv[1:4])
READ_ONLY = {"ls", "show", "explain", "queues", "usage", "logs"}
SETTLE_S = 60
PACE_S = 1.1


def tour_blocks(readme):
    """[(command, [expected lines])] of the tour section's transcripts, in order."""
    section = readme.split("\n## A five-minute tour\n", 1)[1].split("\n## ", 1)[0]
    steps = []
    for block in re.findall(r"^```\n(.*?)^```", section, re.S | re.M):
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            elif steps:
                steps[-1][1].append(line)
    return steps


VOLATILE = [
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\b"), "<time>"),
    (re.compile(r"\b\d+(\.\d+)?[smhd]\b"), "<age>"),
    (re.compile(r"\b\d+\.\d\d\b"), "<n.nn>"),
]


def norm(line, user):
    if user != "root":
        line = re.sub(r"\b%s\b" % re.escape(user), "root", line)
    for pattern, text in VOLATILE:
        line = pattern.sub(text, line)
    return " ".join(line.split())


def matches(expected, actual, user):
    """Whether actual's lines are expected's, `...` standing for any number of lines."""
    want = [norm(x, user) for x in expected]
    got = [norm(x, user) for x in actual]
    while want and want[-1] == "":
        want.pop()
    while got and got[-1] == "":
        got.pop()

    def at(i, j):
        if i == len(want):
            return j == len(got)
        if want[i] == "...":
            return any(at(i + 1, k) for k in range(j, len(got) + 1))
        return j < len(got) and want[i] == got[j] and at(i + 1, j + 1)

    return at(0, 0)


def first_difference(expected, actual, user):
    want = [norm(x, user) for x in expected if x.strip() != "..."]
    got = [norm(x, user) for x in actual]
    for w in want:
        if w not in got:
            return "expected a line: " + w
    return "lines in another order, or more of them"


def main():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        steps = tour_blocks(f.read())
    if len(steps) < 10:
        print(f"FAIL: the README's tour has {len(steps)} commands; did its heading change?")
        return 1
    user = pwd.getpwuid(os.getuid()).pw_name
    work = tempfile.mkdtemp(prefix="gpuq-tour-")
    os.makedirs(os.path.join(work, "build", "cli"))
    os.symlink(GPUQ, os.path.join(work, "build", "cli", "gpuq"))
    os.symlink(os.path.join(ROOT, "examples"), os.path.join(work, "examples"))
    with open(os.path.join(ROOT, "examples", "standalone.yaml"), encoding="utf-8") as f:
        config = f.read()
    edits = 0
    for key, value in [("grpc", "127.0.0.1:0"), ("http", "127.0.0.1:0"),
                       ("  nvidiaSmi", os.path.join(work, "no-nvidia-smi") + "\n  cgroups: 'off'")]:
        config, n = re.subn(r"^%s: .*$" % key, key + ": " + value, config, flags=re.M)
        edits += n
    if edits != 3:
        print("FAIL: examples/standalone.yaml changed its form; adapt the test's edits of it")
        return 1
    with open(os.path.join(work, "gpuqd.yaml"), "w", encoding="utf-8") as f:
        f.write(config)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUQ_")}
    log = open(os.path.join(work, "gpuqd.log"), "w")
    gpuqd = subprocess.Popen([GPUQD, "--config", "gpuqd.yaml"], cwd=work, env=env, stdout=log,
                             stderr=subprocess.STDOUT)
    failures = []
    submitted = []
    try:
        sock = os.path.join(work, "var", "gpuqd.sock")
        deadline = time.monotonic() + 60
        while not os.path.exists(sock) and gpuqd.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        if not os.path.exists(sock):
            print("FAIL: gpuqd did not start:\n" + open(os.path.join(work, "gpuqd.log")).read())
            return 1
        held = []  # alias and assignment lines: they hold for the commands after them
        for command, expected in steps:
            words = command.split()
            if not expected and (words[0] == "alias" or re.match(r"^[A-Za-z_]\w*=", command)):
                held.append(command)
                continue
            if words[0] == "cat" and len(words) == 2 and not os.path.exists(os.path.join(work, words[1])):
                with open(os.path.join(work, words[1]), "w", encoding="utf-8") as f:
                    f.write("\n".join(expected) + "\n")
            time.sleep(PACE_S)
            script = "shopt -s expand_aliases\n" + "\n".join(held) + "\n" + command + "\n"
            read_only = len(words) > 1 and words[0] == "gpuq" and words[1] in READ_ONLY
            deadline = time.monotonic() + (SETTLE_S if read_only else 0)
            while True:
                p = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True,
                                   text=True, timeout=120)
                actual = (p.stdout + p.stderr).splitlines()
                ok = matches(expected, actual, user)
                if ok or time.monotonic() >= deadline:
                    break
                time.sleep(0.5)
            submitted += re.findall(r"\bjob/(j\d+) submitted", p.stdout)
            if ok:
                print(f"ok: $ {command}")
            else:
                failures.append(command)
                print(f"FAIL: $ {command}\n  {first_difference(expected, actual, user)}\n"
                      "  the README says:\n    " + "\n    ".join(expected) +
                      "\n  it printed:\n    " + "\n    ".join(actual))
    finally:
        for job in submitted:
            subprocess.run([GPUQ, "--server", "unix:" + os.path.join(work, "var", "gpuqd.sock"),
                            "cancel", "--force", job], env=env, capture_output=True, timeout=60)
        gpuqd.send_signal(signal.SIGTERM)
        try:
            gpuqd.wait(timeout=60)
        except subprocess.TimeoutExpired:
            gpuqd.kill()
            failures.append("gpuqd did not stop within 60 s of SIGTERM")
        log.close()
        deadline = time.monotonic() + 30  # the shims kill their jobs' processes, then end
        while left_in(work) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = left_in(work)
        if left:
            failures.append(f"processes left in {work} after every job was cancelled: {left}")
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    if failures:
        print("gpuqd's log:\n" + open(os.path.join(work, "gpuqd.log")).read()[-4000:])
        print(f"FAILED: {len(failures)} failure(s) (scratch directory {work})")
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print(f"the README's tour: {len(steps)} commands, as written")
    return 0


def left_in(work):
    """Processes whose working directory is in `work` (the tour's jobs run there)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/cwd").startswith(work):
                    pids.append(int(entry))
            except OSError:
                pass
    return pids


if __name__ == "__main__":
    sys.exit(main())
