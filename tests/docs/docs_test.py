#!/usr/bin/env python3
"""The reference pages cannot drift from the code (docs/reference/).

What the programs accept is asked of the programs themselves, not read from their sources:
- configuration keys: gpuqd --check-config is given a config with an unknown key at each place,
  and its error ("local.zzq: unknown key; allowed here: node, flavor, ...") lists the keys
  allowed there; each key that is itself a map (or a list of maps) is probed in turn. Every key
  found must have its row in gpuqd.yaml.5.md (a table row whose first cell is the dotted path in
  backticks), and every row must name a key that exists. Each ```yaml block of that page must be
  a valid configuration.
- scenario and spec keys: the same with `gpuq sim scenario -`; each key must appear in backticks
  in scenarios.md.
- commands and flags: `gpuq-full WORDS --help` (the parser's own tree) lists each command's
  sub-commands (with their aliases) and flags; each command must have its heading
  "## gpuq <command>" in gpuq.1.md, naming its aliases, and each of its flags must appear in
  backticks in that section; the global flags anywhere on the page.
- gpuqd's flags (from --help) in gpuqd.8.md.
- every relative link between the project's Markdown pages leads to a file and heading that exist.

Usage: docs_test.py ROOT GPUQ_FULL GPUQD
"""
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT, GPUQ, GPUQD = sys.argv[1:4]
REF = os.path.join(ROOT, "docs", "reference")
BOGUS = "zzqUnknownKey"
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def read(name):
    with open(os.path.join(REF, name), encoding="utf-8") as f:
        return f.read()


# ---- probing a reader through its unknown-key error -------------------------------------------

def nest(path, leaf):
    """The value with `leaf` at `path` (["local", "reserve"], ["topology", "levels", "[]"])."""
    value = leaf
    for part in reversed(path):
        value = [value] if part == "[]" else {part: value}
    return value


def dotted(path):
    return ".".join(path).replace(".[]", "[]")


class Prober:
    def __init__(self, run, base_for):
        self.run = run            # text -> error text ("" when accepted)
        self.base_for = base_for  # path -> dict merged at the top (binder: local for local.*)
        self.keys = set()         # dotted paths of every key found
        self.maps = 0

    def error_at(self, path):
        doc = dict(self.base_for(path))
        top = nest(path, {BOGUS: 1})
        doc.update(top)
        return self.run(json.dumps(doc))

    def allowed_at(self, path):
        """The keys allowed in the map at `path`, or None when it is not a map of keys."""
        err = self.error_at(path)
        # The error names list items by index: queues[0].zzq.
        want = (dotted(path).replace("[]", "[0]") + "." if path else "") + BOGUS + ": unknown key;"
        if want in err:
            listed = err.split("allowed here:", 1)[1].strip().splitlines()[0]
            return [k.strip() for k in listed.split(",") if k.strip()]
        return None

    def walk(self, path, skip=()):
        keys = self.allowed_at(path)
        if keys is None:
            # A list of maps?
            keys = self.allowed_at(path + ["[]"]) if path else None
            if keys is None:
                return
            path = path + ["[]"]
        self.maps += 1
        for k in keys:
            here = path + [k]
            self.keys.add(dotted(here))
            if dotted(here) not in skip:
                self.walk(here, skip)


def run_program(args, suffix):
    def run(text):
        with tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False) as f:
            f.write(text)
            name = f.name
        try:
            p = subprocess.run(args(name), capture_output=True, text=True, timeout=60)
        finally:
            os.unlink(name)
        return "" if p.returncode == 0 else p.stderr + p.stdout
    return run


# ---- configuration -----------------------------------------------------------------------------

def check_config():
    run = run_program(lambda f: [GPUQD, "--check-config", "--config", f], ".yaml")
    binder = {"local": {"binder": "local"}, "kubernetes": {"binder": "kubernetes"}}
    # queues[] and nodes[] are queue and node specs: the scenario page's keys.
    prober = Prober(run, lambda path: binder.get(path[0], {}) if path else {})
    prober.walk([], skip={"queues", "nodes"})
    found = prober.keys
    if len(found) < 60 or prober.maps < 8:
        fail(f"the configuration probe found only {len(found)} keys in {prober.maps} maps: "
             "gpuqd's unknown-key error has changed its form?")
    page = read("gpuqd.yaml.5.md")
    rows = set(re.findall(r"^\|\s*`([A-Za-z0-9_.\[\]<>-]+)`\s*\|", page, re.M))
    for key in sorted(found):
        if key in rows:
            continue
        # A map's own key is documented by the rows of its keys.
        if any(r.startswith(key + ".") or r.startswith(key + "[]") for r in rows):
            continue
        fail(f"gpuqd.yaml.5.md: configuration key {key} has no row (| `{key}` | ... |)")
    for row in sorted(rows - found):
        fail(f"gpuqd.yaml.5.md: the row `{row}` names no key gpuqd accepts")
    blocks = re.findall(r"```yaml\n(.*?)```", page, re.S)
    if not blocks:
        fail("gpuqd.yaml.5.md has no ```yaml example")
    for i, block in enumerate(blocks):
        err = run(block)
        if err:
            fail(f"gpuqd.yaml.5.md: example {i + 1} is not a valid configuration: {err.strip()}")
    print(f"configuration: {len(found)} keys in {prober.maps} maps, {len(rows)} rows, {len(blocks)} examples")


# ---- scenario and spec keys ------------------------------------------------------------------------

def check_scenarios():
    run = run_program(lambda f: [GPUQ, "sim", "scenario", f], ".yaml")
    prober = Prober(run, lambda path: {})
    prober.walk([])
    found = prober.keys
    if len(found) < 60:
        fail(f"the scenario probe found only {len(found)} keys: has the error's form changed?")
    page = read("scenarios.md")
    quoted = set(re.findall(r"`([A-Za-z0-9_]+)`", page))
    names = {k.split(".")[-1].replace("[]", "") for k in found}
    for name in sorted(names - quoted):
        where = sorted(k for k in found if k.split(".")[-1].replace("[]", "") == name)
        fail(f"scenarios.md: key `{name}` ({', '.join(where[:3])}) is not documented")
    print(f"scenarios: {len(found)} keys ({len(names)} names)")


# ---- the command line --------------------------------------------------------------------------

def help_of(words):
    """(flags, [(sub-command, [aliases])]) from `gpuq-full WORDS --help`: the parser's own tree."""
    p = subprocess.run([GPUQ] + words + ["--help"], capture_output=True, text=True, timeout=30)
    flags, subs, part = [], [], None
    for line in p.stdout.split("\n"):
        if re.match(r"^\S.*:$", line):
            part = line
            continue
        if part == "Options:":
            m = re.match(r"^  (-\w)?,?(--[\w-]+)?", line)
            if m and (m.group(1) or m.group(2)):
                flags.append(m.group(2) or m.group(1))
        elif part == "Subcommands:":
            m = re.match(r"^  ([\w-]+)((?:, [\w-]+)*)\s", line)
            if m:
                subs.append((m.group(1), [a.strip() for a in m.group(2).split(",") if a.strip()]))
    return [f for f in flags if f not in ("--help", "-h")], subs


def sections(page):
    """[(level, heading text, body)] for each heading of `page` (code blocks skipped)."""
    out = []
    lines = page.split("\n")
    heads = []
    fence = False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fence = not fence
        m = None if fence else re.match(r"^(#+)\s+(.*)$", line)
        if m:
            heads.append((i, len(m.group(1)), m.group(2).replace("`", "").strip()))
    for n, (i, level, text) in enumerate(heads):
        end = len(lines)
        for j, lvl, _ in heads[n + 1:]:
            if lvl <= level:
                end = j
                break
        out.append((level, text, "\n".join(lines[i:end])))
    return out


def check_cli():
    page = read("gpuq.1.md")
    secs = sections(page)
    global_flags, _ = help_of([])
    if "--server" not in global_flags:
        fail(f"gpuq --help lists no global flags ({global_flags}): has its form changed?")
    for flag in global_flags:
        if f"`{flag}`" not in page:
            fail(f"gpuq.1.md: the global flag `{flag}` is not documented")
    commands = []

    def walk(path):
        for word, aliases in help_of(path)[1]:
            commands.append((path + [word], aliases))
            walk(path + [word])

    walk([])
    if len(commands) < 25:
        fail(f"gpuq --help lists only {len(commands)} commands")
    for cmd, aliases in commands:
        name = "gpuq " + " ".join(cmd)
        body = None
        for level, text, sbody in secs:
            if level >= 2 and re.match(re.escape(name) + r"($|[^A-Za-z0-9-])", text):
                body = sbody
                break
        if body is None:
            fail(f"gpuq.1.md: no heading '## {name}'")
            continue
        for alias in aliases:
            if not re.search(r"\b" + re.escape(alias) + r"\b", body):
                fail(f"gpuq.1.md: '{name}' does not name its alias {alias}")
        flags, _ = help_of(cmd)
        for flag in flags:
            if flag in global_flags:
                continue
            if f"`{flag}`" not in body:
                fail(f"gpuq.1.md: '{name}' does not document `{flag}`")
    print(f"command line: {len(commands)} commands, {len(global_flags)} global flags")


def check_gpuqd():
    p = subprocess.run([GPUQD, "--help"], capture_output=True, text=True, timeout=30)
    flags = sorted(set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", p.stdout)) - {"--help"})
    if "--config" not in flags or "--check-config" not in flags:
        fail(f"gpuqd --help lists {flags}")
    page = read("gpuqd.8.md")
    for flag in flags:
        if f"`{flag}`" not in page:
            fail(f"gpuqd.8.md: gpuqd's flag `{flag}` is not documented")
    print(f"gpuqd: {len(flags)} flags")


# ---- links between the project's pages -------------------------------------------------------

def slug(heading):
    """GitHub's anchor for a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


anchors = {}


def anchors_of(path):
    if path not in anchors:
        with open(path, encoding="utf-8") as f:
            text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
        seen, out = {}, set()
        for h in re.findall(r"^#+\s+(.*)$", text, re.M):
            h = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", h.replace("`", ""))
            b = slug(h)
            n = seen.get(b, 0)
            seen[b] = n + 1
            out.add(b if n == 0 else f"{b}-{n}")
        out.update(re.findall(r'<a (?:name|id)="([^"]+)"', text))
        anchors[path] = out
    return anchors[path]


def check_links():
    """Every relative link of every page (the published traces' own READMEs aside) leads to a
    file that exists, and to a heading of it that exists."""
    files = subprocess.run(["git", "-C", ROOT, "ls-files", "*.md"], capture_output=True, text=True).stdout.split()
    if not files:  # not a git checkout (a source tarball): walk the tree
        files = [os.path.relpath(os.path.join(b, f), ROOT) for b, _, fs in os.walk(ROOT) for f in fs
                 if f.endswith(".md") and "/build" not in b and "/.git" not in b]
    count = 0
    for page in files:
        if page.startswith(("bench/HISTORY", "data/traces/")):
            continue
        with open(os.path.join(ROOT, page), encoding="utf-8") as f:
            text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
        for m in re.finditer(r"\]\(([^)\s]+)\)", text):
            target = m.group(1)
            if re.match(r"[a-z]+:", target):
                continue
            count += 1
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(ROOT, os.path.dirname(page), path)) if path else os.path.join(ROOT, page)
            if not os.path.exists(full):
                fail(f"{page}: link {target}: no such file")
            elif anchor and full.endswith(".md") and anchor not in anchors_of(full):
                fail(f"{page}: link {target}: no such heading")
    print(f"links: {count} relative links in {len(files)} pages")


for check in (check_config, check_scenarios, check_cli, check_gpuqd, check_links):
    try:
        check()
    except FileNotFoundError as e:
        fail(str(e))
if failures:
    print(f"{len(failures)} problem(s)")
    sys.exit(1)
print("ok: every configuration key, scenario key, command and flag is documented")
