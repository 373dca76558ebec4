#!/usr/bin/env python3
"""Validates an ONNX model with the ONNX checker.

Usage: python3 tools/check_onnx.py MODEL.onnx

Runs onnx.checker.check_model(path, full_check=True) (full_check adds strict
shape inference). The model is checked by path, so external data next to it
and models over 2 GB are handled. Prints "OK: MODEL" and exits 0 when the model
is valid; otherwise prints the checker's error to stderr and exits 1.
"""

import sys


def main(argv):
    if len(argv) == 2 and argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 1
    path = argv[1]
    try:
        import onnx
    except ImportError as e:
        print("error: python package onnx is not installed (%s)" % e, file=sys.stderr)
        return 1
    try:
        onnx.checker.check_model(path, full_check=True)
    except Exception as e:  # ValidationError, InferenceError, OSError, ...
        print("INVALID: %s\n%s: %s" % (path, type(e).__name__, e), file=sys.stderr)
        return 1
    print("OK: %s" % path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
