#!/usr/bin/env python3
"""Checks the launch convention of the runtime's kernels (runtime/cuda/dependent_launch.h).

Every kernel of runtime/cuda/*.cu is launched with programmatic dependent
launch, so each one must wait for the previous grid before it reads or writes
anything: its body's first statement is `await_previous_grid();`. Launches go
through `launch_kernel(...)`, which sets the attribute; `<<<...>>>` is left to
the kernels listed in PLAIN (launched without the attribute, for timing).
A kernel that forgets the wait would read its inputs before they are written,
now and then: this check makes that a test failure instead.

    tools/check_kernels.py [RUNTIME_CUDA_DIR]
"""
import pathlib
import re
import sys

PLAIN = {"delay_kernel"}  # the profile's delay: no attribute, nothing to wait for


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent / "runtime/cuda")
    problems, kernels = [], 0
    for path in sorted(root.glob("*.cu")):
        text = path.read_text()
        for m in re.finditer(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\s*\(", text):
            name = m.group(1)
            kernels += 1
            body = text.index("{", m.end())
            first = text[body + 1:].lstrip().split(";", 1)[0]
            if name not in PLAIN and first != "await_previous_grid()":
                problems.append(f"{path.name}: kernel {name} does not begin with await_previous_grid();")
        for m in re.finditer(r"(\w+)(?:<[^;]*?>)?<<<", text):
            if m.group(1) not in PLAIN:
                problems.append(f"{path.name}: {m.group(1)} is launched with <<<>>>; use launch_kernel")
    if kernels == 0:
        problems.append(f"no kernels found under {root}")
    for p in problems:
        print(p)
    print(f"check_kernels: {kernels} kernels, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
