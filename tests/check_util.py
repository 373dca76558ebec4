"""What the command-line check scripts (tests/*_check.py) share: a failure
that names the problem, and running a program that must succeed."""

import subprocess
import sys


def fail(message):
    """Prints FAIL: message to standard error and exits 1."""
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def run(command):
    """Runs command (a list); its standard output, or fail() with its output when it exits non-zero."""
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        fail("%s exited %d:\n%s%s" % (" ".join(command), result.returncode, result.stdout, result.stderr))
    return result.stdout
