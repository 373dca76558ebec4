#!/usr/bin/env python3
"""Runs the commands shown in the documentation and checks their output.

Convention (docs/README.md states it for readers):

  * A fenced block opened with ```console is tested. In it, a line starting
    with "$ " is a command; a command line ending in a backslash continues on
    the next line. The lines after a command, up to the next command or the
    end of the block, are its expected output (stdout and stderr together).
  * In expected output, "..." matches any text within a line; a line that is
    only "..." matches any number of lines (none included).
  * Every command runs with bash from the repository root, stdout line
    buffered (stdbuf -oL, so that stdout and stderr interleave as on a
    terminal), and must exit 0;
    to show a failing command, write `$ cmd; echo "exit $?"`.
  * "build/" at the start of a word means the build folder (--build), so the
    docs can say build/bin/run whatever the build folder is.
  * Blocks opened with ```sh (or anything else) are never run: commands that
    need the GPU machine, long runs, or files the reader makes.
  * Links to a Markdown file of the repository, `[text](other.md#anchor)`
    or `[text](#anchor)`, outside code blocks, must name a file that exists
    and, with an anchor, a heading of that file (GitHub's anchors: lower
    case, punctuation dropped, spaces as hyphens, -1, -2, ... for repeats).

Usage: tools/check_docs.py [--build DIR] [--list] FILE.md...
Exit 0 when every command of every file matches and every link resolves, 1 otherwise.
"""
import argparse
import difflib
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT_S = 120


def parse(path):
    """Returns [(line number, command, expected output lines)] of the console blocks."""
    examples = []
    in_console = False
    in_other = False
    current = None
    continuing = False
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not in_console and not in_other:
            if stripped.startswith("```"):
                if stripped == "```console":
                    in_console = True
                else:
                    in_other = True
            continue
        if in_other:
            if stripped == "```":
                in_other = False
            continue
        if stripped == "```":  # end of a console block
            in_console = False
            current = None
            continue
        if continuing:
            current[1] += "\n" + line
            continuing = line.endswith("\\")
            continue
        if line.startswith("$ "):
            current = [number, line[2:], []]
            examples.append(current)
            continuing = line.endswith("\\")
            continue
        if current is None:
            raise SystemExit(f"{path}:{number}: console block: output before the first '$ ' command")
        current[2].append(line)
    if in_console:
        raise SystemExit(f"{path}: a console block is not closed")
    return [(n, cmd, expected) for n, cmd, expected in examples]


def pattern(expected_lines):
    lines = list(expected_lines)
    while lines and lines[-1].strip() == "":
        lines.pop()
    parts = []
    for line in lines:
        line = line.rstrip()
        if line == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append("[^\n]*".join(re.escape(p) for p in line.split("...")) + r"\n")
    return re.compile("".join(parts))


def normalize(text):
    lines = [l.rstrip() for l in text.replace("\r\n", "\n").split("\n")]
    while lines and lines[-1] == "":
        lines.pop()
    return "".join(l + "\n" for l in lines)


def heading_anchors(path):
    """The anchors GitHub gives the headings of a Markdown file."""
    anchors, seen, fenced = set(), {}, False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fenced = not fenced
            heading = None if fenced else re.match(r"#+ (.*)", line)
            if heading:
                slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
                n = seen.get(slug, 0)
                seen[slug] = n + 1
                anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def broken_links(doc):
    """[(line number, link)] of the links to Markdown files or anchors in `doc` that do not resolve."""
    broken, fenced = [], False
    with open(doc, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.startswith("```"):
                fenced = not fenced
            if fenced:
                continue
            line = re.sub(r"`[^`]*`", "", line)  # code spans show link syntax, they hold no links
            for target, anchor in re.findall(r"\]\(([^)#\s]*\.md|)(?:#([\w-]+))?\)", line):
                if not target and not anchor:
                    continue
                path = os.path.normpath(os.path.join(os.path.dirname(doc), target)) if target else doc
                if not os.path.isfile(path) or (anchor and anchor not in heading_anchors(path)):
                    broken.append((number, f"{target}#{anchor}" if anchor else target))
    return broken


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="the build folder (default: build)")
    ap.add_argument("--list", action="store_true", help="list the commands, run nothing")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    failures = 0
    total = 0
    broken = 0  # links
    for doc in args.files:
        if not args.list:
            for number, link in broken_links(doc):
                broken += 1
                print(f"FAIL  {doc}:{number}: the link {link} names no file or heading")
        examples = parse(doc)
        for number, command, expected in examples:
            total += 1
            if args.list:
                print(f"{doc}:{number}: $ {command}")
                continue
            shell = command
            if build != os.path.join(ROOT, "build"):
                shell = re.sub(r"(?<![\w/.-])build/", build.replace("\\", "\\\\") + "/", command)
            try:
                proc = subprocess.run(["stdbuf", "-oL", "-eL", "bash", "-c", shell], cwd=ROOT, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, timeout=TIMEOUT_S)
                output = normalize(proc.stdout.decode("utf-8", "replace"))
                rc = proc.returncode
            except subprocess.TimeoutExpired:
                output, rc = f"(timed out after {TIMEOUT_S} s)\n", -1
            ok = rc == 0 and pattern(expected).fullmatch(output) is not None
            if ok:
                print(f"ok    {doc}:{number}: $ {command.splitlines()[0]}")
                continue
            failures += 1
            print(f"FAIL  {doc}:{number}: $ {command}")
            if rc != 0:
                print(f"  exit status {rc} (a documented command must exit 0)")
            want = [l.rstrip() for l in expected]
            while want and want[-1] == "":
                want.pop()
            diff = difflib.unified_diff(want, output.splitlines(), "documented", "actual", lineterm="")
            print("\n".join("  " + d for d in diff))
    if args.list:
        return 0
    if broken:
        print(f"{broken} links name no file or heading")
    print(f"{total - failures} of {total} documented commands match"
          + ("" if not failures else f"; {failures} differ"))
    return 1 if failures or broken else 0


if __name__ == "__main__":
    sys.exit(main())
