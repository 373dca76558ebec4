#!/usr/bin/env python3
"""How much of a converted rule file a rules database finds, by rule and by class.

    python3 tools/taso_coverage.py --rules build/bin/rules --db DB [--derive] FILE [--min-classes N]

Runs `rules --db DB check [--derive] FILE` and reads each rule's outcome:
stored (check prints nothing for it), implied, derived or not found.
A class is the rules that are one rule up to renaming and shape instance:
tgr's canonical form (variable names, side order, add/mul argument order)
of the rule with every variable renamed to one kind, so that `x0` at 2x4
and `i0` at 1x2x4x4 in the same places are one class. A class is found
when one of its rules is. Prints the counts, then each class not found with
its rules (line, operators per side, variable kinds); exit 1 when fewer
than --min-classes classes are found (or `check` fails to run).
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

OUTCOME = re.compile(r"^(?P<file>.+?):(?P<line>\d+): (?P<what>implied|derived|not found)")
VARIABLE = re.compile(r"\b([a-z]+)(\d+)\b(?!\s*[\[(])")


def rule_lines(path):
    """{line number: (rule text, shapes, label)} of a rule file; the label is
    the comment line before the rule (`taso N`)."""
    out, label = {}, ""
    with open(path) as f:
        for n, line in enumerate(f, 1):
            text = line.split("#")[0].strip()
            if text:
                rule, _, shapes = text.partition("|")
                out[n] = (rule.strip(), shapes.strip(), label)
            elif line.startswith("#"):
                label = line[1:].strip()
    return out


def outcomes(rules_bin, db, path, derive, extra):
    """{line number: stored|implied|derived|not found} from `rules check`."""
    cmd = [rules_bin, "--db", db, "check"] + (["--derive"] + extra if derive else []) + [path]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode not in (0, 1) or not run.stdout.rstrip().splitlines()[-1:]:
        sys.exit(f"taso_coverage: {' '.join(cmd)} failed ({run.returncode}): {run.stderr.strip()}")
    said = {}
    for line in run.stdout.splitlines():
        m = OUTCOME.match(line)
        if m:
            said[int(m["line"])] = m["what"]
    return said, run.stdout.rstrip().splitlines()[-1]


def one_kind(text):
    """The rule with every variable renamed to kind `t` (order of first use kept)."""
    names = {}
    return VARIABLE.sub(lambda m: names.setdefault(m.group(0), f"t{len(names)}"), text)


def class_keys(rules_bin, texts):
    """tgr's canonical form of each rule text with its variables of one kind."""
    keys = {}
    with tempfile.TemporaryDirectory() as tmp:
        db, empty = os.path.join(tmp, "empty.db"), os.path.join(tmp, "empty.rules")
        open(empty, "w").close()
        subprocess.run([rules_bin, "--db", db, "import", empty], check=True, capture_output=True)
        for text in texts:
            run = subprocess.run([rules_bin, "--db", db, "lookup", one_kind(text)], capture_output=True, text=True)
            m = re.search(r"canonical form: (.*)\)$", run.stdout.strip())
            if not m:
                sys.exit(f"taso_coverage: no canonical form for {text}: {run.stdout}{run.stderr}")
            keys[text] = m.group(1)
    return keys


def operators(side):
    """How many distinct operator nodes a side's text has (equal subexpressions are one node)."""
    nodes = set()
    for m in re.finditer(r"\b[a-z_][a-z_0-9]*(?=[\[(])", side):
        depth, i = 0, m.end()
        while i < len(side):  # to the end of the call's arguments
            depth += {"(": 1, ")": -1}.get(side[i], 0)
            if depth == 0 and side[i] == ")":
                break
            i += 1
        nodes.add(side[m.start():i + 1])
    return len(nodes)


def describe(text, shapes, label):
    src, _, dst = text.partition("=>")
    kinds = collections.Counter(VARIABLE.match(v.split("=")[0]).group(1) for v in shapes.split(",") if v)
    return (f"{label}: {operators(src)} and {operators(dst)} operators, variables "
            + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--rules", default="build/bin/rules", help="the rules tool")
    ap.add_argument("--db", required=True)
    ap.add_argument("--derive", action="store_true", help="rules check --derive")
    ap.add_argument("--limit", action="append", default=[], help="an option passed to check --derive (repeatable)")
    ap.add_argument("--min-classes", type=int, default=0, help="exit 1 when fewer classes are found")
    a = ap.parse_args()
    lines = rule_lines(a.file)
    said, summary = outcomes(a.rules, a.db, a.file, a.derive, a.limit)
    what = {n: said.get(n, "stored") for n in lines}
    keys = class_keys(a.rules, [t for t, _, _ in lines.values()])
    classes = collections.defaultdict(list)
    for n, (text, _, _) in lines.items():
        classes[keys[text]].append(n)
    found = [k for k, ns in classes.items() if any(what[n] != "not found" for n in ns)]
    counts = collections.Counter(what.values())
    print(f"check: {summary}")
    print(f"rules: {len(lines)}: " + ", ".join(f"{counts[w]} {w}" for w in ("stored", "implied", "derived",
                                                                           "not found")))
    print(f"classes: {len(found)} of {len(classes)} found ({100.0 * len(found) / len(classes):.1f} %)")
    for key, ns in classes.items():
        if key not in found:
            print(f"  class not found: {key}")
            for n in ns:
                print(f"    line {n}: {describe(*lines[n])}")
    return 1 if len(found) < a.min_classes else 0


if __name__ == "__main__":
    sys.exit(main())
