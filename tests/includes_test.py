#!/usr/bin/env python3
"""Includes stay honest: each #include "folder/x.hpp" of the project's own headers is used.

A file uses a header when it names something the header declares: a type (class, struct, enum,
union, alias), a function, a variable or constant, a macro at the header's namespace level, or a
member of one of its classes (".prepare(", "->size"; the header is needed for the complete type).
A header included for another reason (a template specialisation, what it includes in turn)
says so on the include line with IWYU's pragma: `#include "x.hpp"  // IWYU pragma: keep`, and a
.cpp file's own header (x.cpp including x.hpp) always counts as used.

This is a check on names, not a compiler: it cannot see that an include is needed only through
another one, and it lets pass an include whose names are also declared in another header. It
catches what it was written for: an include of which nothing is used (cli/cli.cpp included
sim/openb.hpp for years and used nothing of it).

Usage: includes_test.py ROOT
"""
import os
import re
import sys

ROOT = sys.argv[1]
FOLDERS = ["web", "api", "cli", "daemon", "auth", "binder", "storage", "sim", "scheduler", "preemption",
           "drf", "spec", "tests", "bench"]
KEYWORDS = set("""alignas alignof and asm auto bool break case catch char char8_t char16_t char32_t class
const consteval constexpr constinit const_cast continue co_await co_return co_yield decltype default delete
do double dynamic_cast else enum explicit export extern false float for friend goto if inline int long
mutable namespace new noexcept not nullptr operator or private protected public register reinterpret_cast
requires return short signed sizeof static static_assert static_cast struct switch template this
thread_local throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t
while override final std size_t int64_t uint64_t int32_t uint32_t uint8_t string string_view vector
optional map set""".split())


def strip(text):
    """The code without comments, string and character literals, or preprocessor lines but #define."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r'R"(\w*)\(.*?\)\1"', '""', text, flags=re.S)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    text = re.sub(r"'(\\.|[^'\\\n])*'", "''", text)
    return re.sub(r"\[\[.*?\]\]", " ", text, flags=re.S)  # attributes


def declared(header_text):
    """(names at namespace level, member names) declared by a header."""
    code = strip(header_text)
    names, members = set(), set()
    names.update(re.findall(r"^\s*#\s*define\s+(\w+)", code, re.M))
    code = re.sub(r"^\s*#[^\n]*", " ", code, flags=re.M)
    tokens = re.findall(r"[A-Za-z_]\w*|::|[{}();=\[\]<>,:~]|\S", code)
    stack = []          # for each open brace: "ns" (namespace, extern "C") or "class" or "other"
    statement = []      # the tokens of the statement being read at this level
    pending_kind = None  # what the next "{" opens
    for i, tok in enumerate(tokens):
        if tok == "{":
            kind = pending_kind or "other"
            if kind == "class" and all(s != "other" for s in stack):
                collect(statement, names if all(s == "ns" for s in stack) else members)
            elif kind == "other" and all(s == "ns" for s in stack):
                collect(statement, names)
            stack.append(kind)
            statement, pending_kind = [], None
            continue
        if tok == "}":
            if stack:
                stack.pop()
            statement, pending_kind = [], None
            continue
        if tok == ";":
            if all(s == "ns" for s in stack):
                collect(statement, names)
            elif stack and stack[-1] == "class" and all(s in ("ns", "class") for s in stack):
                collect(statement, members)
            statement, pending_kind = [], None
            continue
        statement.append(tok)
        if tok == "namespace" or (tok == "extern" and i + 1 < len(tokens) and tokens[i + 1] == '""'):
            pending_kind = "ns"
        elif tok in ("class", "struct", "union", "enum") and pending_kind is None:
            pending_kind = "class"
    # Enumerators: Kind::kX names Kind, already in names.
    return {n for n in names if n not in KEYWORDS}, {m for m in members if m not in KEYWORDS}


def collect(stmt, out):
    """The name a statement at namespace or class level declares."""
    if not stmt or stmt[0] in ("public", "private", "protected", "friend", "static_assert", "return"):
        if stmt and stmt[0] in ("public", "private", "protected") and ":" in stmt[:2]:
            stmt = stmt[2:]
        else:
            return
    if stmt[:1] == ["using"]:
        if "=" in stmt:
            out.add(stmt[stmt.index("=") - 1])
        elif stmt[1:2] != ["namespace"]:
            out.add(stmt[-1])
        return
    while stmt[:1] == ["template"]:  # template <...> decl: skip the parameter list
        depth, j = 0, 1
        for j in range(1, len(stmt)):
            depth += stmt[j] == "<"
            depth -= stmt[j] == ">"
            if depth == 0:
                break
        stmt = stmt[j + 1:]
    while stmt[:1] and stmt[0] in ("inline", "constexpr", "static", "extern", "explicit", "virtual", "[", "]"):
        stmt = stmt[1:]
    for kw in ("class", "struct", "union", "enum"):
        if kw in stmt[:2]:
            rest = [t for t in stmt[stmt.index(kw) + 1:] if t not in ("class", "struct", "final")]
            if rest and re.match(r"\w+$", rest[0]):
                out.add(rest[0])
            return
    if stmt[:1] == ["operator"] or "operator" in stmt:
        return
    depth = 0
    for j, t in enumerate(stmt):
        if t in ("(", "[", "="):
            if depth == 0 and j > 0 and re.match(r"\w+$", stmt[j - 1]):
                out.add(stmt[j - 1])
                return
        if t == "<":
            depth += 1
        elif t == ">":
            depth -= 1
    if stmt and re.match(r"\w+$", stmt[-1]):
        out.add(stmt[-1])


def main():
    headers = {}
    for folder in FOLDERS:
        for base, _, files in os.walk(os.path.join(ROOT, folder)):
            for f in files:
                if f.endswith(".hpp"):
                    path = os.path.relpath(os.path.join(base, f), ROOT)
                    with open(os.path.join(ROOT, path), encoding="utf-8") as h:
                        headers[path] = declared(h.read())
    problems = []
    checked = 0
    for folder in FOLDERS:
        for base, _, files in os.walk(os.path.join(ROOT, folder)):
            for f in sorted(files):
                if not f.endswith((".cpp", ".hpp")):
                    continue
                path = os.path.relpath(os.path.join(base, f), ROOT)
                with open(os.path.join(ROOT, path), encoding="utf-8") as h:
                    text = h.read()
                body = strip(re.sub(r"^\s*#\s*include[^\n]*", " ", text, flags=re.M))
                words = set(re.findall(r"[A-Za-z_]\w*", body))
                member_uses = set(re.findall(r"(?:\.|->)\s*([A-Za-z_]\w*)", body))
                for m in re.finditer(r'^\s*#\s*include\s+"([^"]+)"([^\n]*)', text, re.M):
                    inc, rest = m.group(1), m.group(2)
                    if inc not in headers or "IWYU pragma: keep" in rest:
                        continue
                    if os.path.splitext(inc)[0] == os.path.splitext(path)[0]:
                        continue  # x.cpp's own x.hpp
                    checked += 1
                    names, members = headers[inc]
                    if names & words or members & member_uses:
                        continue
                    problems.append(f"{path}: includes {inc} and uses nothing it declares"
                                    f" ({', '.join(sorted(names)[:6])}{'...' if len(names) > 6 else ''})")
    for p in problems:
        print("FAIL: " + p)
    if checked < 500:
        print(f"FAIL: only {checked} includes checked: has the layout changed?")
        return 1
    if problems:
        print(f"{len(problems)} include(s) of which nothing is used: remove them, or mark one needed for "
              "another reason with // IWYU pragma: keep")
        return 1
    print(f"ok: {checked} includes of the project's headers, each used")
    return 0


sys.exit(main())
