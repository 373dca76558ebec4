#!/usr/bin/env python3
"""Comparisons of an operator's name with a literal outside ir/: a ratchet.

The operator table (ir/) describes each operator once; the passes ask it
(traits, hooks) or compare kinds (`n.op->kind == OpKind::kRelu`, ir/op_def.h)
instead of branching on names (docs/design.md). This check keeps names from
coming back: it counts, per source file outside ir/ and tests/,
  - the comparisons `== "NAME"` and `!= "NAME"` (either side) whose NAME is
    an operator of the table, except those whose other side is a
    parameter's word (`get_word("act") == "relu"`: a value, not an operator);
  - the lookups and identity tests by a literal operator name,
    `get("NAME")`, `find("NAME")` and `is(NODE, "NAME")` (OpTable::get
    takes an OpKind: `op_def(OpKind::kRelu)`),
and compares them with tools/dev/op_name_checks.txt. It reads text, not
code: an attribute's or parameter's string that happens to be an operator's
name (`approximate == "tanh"`, a parameter called "pad") counts too, and a
registry keyed by name (`{"conv2d", lower_conv}`, ONNX export and import,
PET's region rules) does not.

  op_name_checks.py RUN_PROGRAM [--update]

RUN_PROGRAM is build/bin/run (its --ops lists the table). Exit status 1 when a
file has more such comparisons than the baseline allows (a new branch on a
name: add a trait or hook to the operator table instead), and the lines that
are new; --update rewrites the baseline to the current counts (after moving
branches out, to lock the gain in).
"""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / "tools" / "dev" / "op_name_checks.txt"
SOURCES = ("*.cpp", "*.h", "*.cu")
SKIPPED = ("ir/", "tests/", "build")


def operator_names(run_program: str) -> set:
    listing = subprocess.run([run_program, "--ops"], capture_output=True, text=True, check=True).stdout
    names = set(re.findall(r"^([a-z_0-9]+)\(", listing, re.MULTILINE))
    if len(names) < 10:
        sys.exit(f"op_name_checks: '{run_program} --ops' listed {len(names)} operators; expected the table")
    return names


COMPARISON = re.compile(r'(?:[=!]=\s*"([a-z_0-9]+)")|(?:"([a-z_0-9]+)"\s*[=!]=)')
PARAMETER_WORD = re.compile(r'get_word\([^()]*\)\s*$')  # left of `== "NAME"`
LOOKUP = re.compile(r'\b(?:get|find|is)\((?:[^()"]*,\s*)?"([a-z_0-9]+)"\)')


def name_uses(code: str, names: set) -> int:
    """How many operator-name comparisons and lookups one line of code makes."""
    count = 0
    for m in COMPARISON.finditer(code):
        name = m.group(1) or m.group(2)
        if name not in names:
            continue
        if m.group(1) and PARAMETER_WORD.search(code[:m.start()]):
            continue
        if m.group(2) and code[m.end():].lstrip().startswith(("get_word(", "params.get_word(")):
            continue
        count += 1
    return count + sum(1 for name in LOOKUP.findall(code) if name in names)


def comparisons(text: str, names: set) -> list:
    """The lines of `text` comparing something with an operator's name or looking one up by it."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if name_uses(line.split("//", 1)[0], names):
            found.append((number, line.strip()))
    return found


def current_counts(names: set) -> dict:
    counts = {}
    for glob in SOURCES:
        for path in ROOT.rglob(glob):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith(SKIPPED):
                continue
            found = comparisons(path.read_text(errors="replace"), names)
            if found:
                counts[rel] = found
    return counts


def read_baseline() -> dict:
    baseline = {}
    for line in BASELINE.read_text().splitlines():
        if line and not line.startswith("#"):
            count, rel = line.split(maxsplit=1)
            baseline[rel] = int(count)
    return baseline


def main() -> int:
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] != "--update"):
        sys.exit(__doc__)
    counts = current_counts(operator_names(sys.argv[1]))
    if len(sys.argv) == 3:
        lines = [f"{len(found)} {rel}" for rel, found in sorted(counts.items())]
        BASELINE.write_text("# op_name_checks.py: operator-name comparisons and lookups allowed per file (those left compare an "
                            "attribute's or parameter's string, not an operator)\n" +
                            "\n".join(lines) + "\n")
        print(f"op_name_checks: baseline written: {sum(len(f) for f in counts.values())} in {len(counts)} files")
        return 0
    baseline = read_baseline()
    grown = {rel: found for rel, found in counts.items() if len(found) > baseline.get(rel, 0)}
    total = sum(len(f) for f in counts.values())
    allowed = sum(baseline.values())
    for rel, found in sorted(grown.items()):
        print(f"{rel}: {len(found)} operator-name comparisons, {baseline.get(rel, 0)} allowed:")
        for number, line in found:
            print(f"  {rel}:{number}: {line}")
    if grown:
        print("op_name_checks: a pass branches on or looks up an operator's name; compare kinds instead "
              "(op_is(n.op, OpKind::kRelu), op_def(OpKind::kRelu)) or ask the operator table (a trait or hook in "
              "ir/op_def.h), or, where a registry must, raise the count in " +
              BASELINE.relative_to(ROOT).as_posix())
        return 1
    print(f"op_name_checks: {total} operator-name comparisons in {len(counts)} files outside ir/ "
          f"(baseline {allowed}{', lower it with --update' if total < allowed else ''})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
