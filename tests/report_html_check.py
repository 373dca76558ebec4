#!/usr/bin/env python3
"""Checks the page of `optimize --report-html` in a browser (docs/optimizing.md).

Usage: report_html_check.py OPTIMIZE MODEL WORKDIR [OPTIMIZE OPTIONS...]

Optimizes MODEL with --report-html and --report, then checks the page:
  - its text: two drawings (#before, #after), each an inline <svg> with
    nodes, the rewritten nodes highlighted on both (every rewrite's removed
    nodes of the model on the left, at least one added node on the right),
    each applied rule's section with the axioms its proof cites, and the
    cost table;
  - as drawn: headless Chromium ($CHROMIUM, default "chromium") takes a
    screenshot; below the legend, the left half must show the removed
    colour and ink (edges, text), the right half the added colour and ink.
The screenshot check is then run on a copy of the page without the
right-hand drawing, which it must reject (a check that cannot fail proves
nothing). Prints "report page drawn: ..." and exits 0, or names the failure
and exits 1.
"""

import json
import os
import re
import struct
import subprocess
import sys
import zlib

# pipeline/html_report.h and ir/graph_dot.cpp
REMOVED = (0xF4, 0xA6, 0xA6)
ADDED = (0xA6, 0xE3, 0xA6)
INK = (0x40, 0x40, 0x40)  # edges and text, dark grey to black
WIDTH, HEIGHT = 1400, 900


class CheckFailed(Exception):
    pass


def decode_png(path):
    """(width, height, rows of (r, g, b) bytes-like, channels) of an 8-bit RGB or RGBA PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise CheckFailed("%s is not a PNG" % path)
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        raise CheckFailed("unexpected PNG format (depth %d, colour type %d)" % (depth, colour))
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind == 1:
            for i in range(channels, stride):
                line[i] = (line[i] + line[i - channels]) & 0xFF
        elif kind == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, prev))
        elif kind == 3:
            for i in range(stride):
                left = line[i - channels] if i >= channels else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                b, c = prev[i], prev[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(line)
        prev = line
    return width, height, rows, channels


def count_colour(png, colour, x0, x1, y0, y1, tolerance=8):
    width, height, rows, channels = png
    count = 0
    for y in range(y0, min(y1, height)):
        row = rows[y]
        for x in range(x0, min(x1, width)):
            i = x * channels
            if all(abs(row[i + k] - colour[k]) <= tolerance for k in range(3)):
                count += 1
    return count


def screenshot(chromium, page, png_path, profile):
    command = [chromium, "--headless", "--disable-gpu", "--hide-scrollbars", "--user-data-dir=" + profile,
               "--window-size=%d,%d" % (WIDTH, HEIGHT), "--screenshot=" + png_path, "file://" + os.path.abspath(page)]
    if os.geteuid() == 0:
        command.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
    if os.path.exists(png_path):
        os.remove(png_path)
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if result.returncode != 0 or not os.path.exists(png_path):
        raise CheckFailed("chromium failed (exit %d): %s" % (result.returncode, result.stderr[-2000:]))
    return decode_png(png_path)


def check_drawn(png):
    """Both halves, below the title and legend, show their graph."""
    width, height = png[0], png[1]
    top = height // 7
    half = width // 2
    found = {
        "removed colour on the left": count_colour(png, REMOVED, 0, half, top, height),
        "ink on the left": count_colour(png, INK, 0, half, top, height, tolerance=0x40),
        "added colour on the right": count_colour(png, ADDED, half, width, top, height),
        "ink on the right": count_colour(png, INK, half, width, top, height, tolerance=0x40),
    }
    missing = [what for what, n in found.items() if n < (100 if what.startswith("ink") else 10)]
    if missing:
        raise CheckFailed("the screenshot lacks " + ", ".join(missing) + " (pixels found: %s)" % found)
    return found


def check_text(html, report):
    figures = {}
    for side in ("before", "after"):
        m = re.search(r'<figure id="%s">(.*?)</figure>' % side, html, re.S)
        if not m or "<svg" not in m.group(1):
            raise CheckFailed("no drawing in #%s" % side)
        figures[side] = m.group(1)
        if len(re.findall(r'<g id="%s_n\d+" class="node' % side, figures[side])) < 10:
            raise CheckFailed("the drawing #%s has fewer than 10 nodes" % side)
    highlighted = {side: len(re.findall(r'class="node highlighted"', figures[side])) for side in figures}
    removed_in_model = set()
    for r in report["rewrites"]:
        removed_in_model.update(n for n in r["removed"] if "/rule" not in n)
    if highlighted["before"] < len(removed_in_model):
        raise CheckFailed("%d nodes highlighted before, %d removed from the model" %
                          (highlighted["before"], len(removed_in_model)))
    if highlighted["after"] < 1:
        raise CheckFailed("no node highlighted after")
    for r in report["rules_applied"]:
        tag = ("default_rule" if r["rules_db"] != report["rules_db"] else "rule") + str(r["id"])
        m = re.search(r'<section class="rule" id="%s">(.*?)</section>' % tag, html, re.S)
        if not m:
            raise CheckFailed("no section for %s" % tag)
        if "axioms cited" not in m.group(1) and "region check" not in m.group(1):
            raise CheckFailed("the section of %s shows no proof" % tag)
    if '<table class="costs">' not in html:
        raise CheckFailed("no cost table")
    return highlighted


def main(argv):
    if len(argv) < 4:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    optimize, model, workdir = argv[1:4]
    chromium = os.environ.get("CHROMIUM", "chromium")
    os.makedirs(workdir, exist_ok=True)
    page, report_path = os.path.join(workdir, "report.html"), os.path.join(workdir, "report.json")
    result = subprocess.run([optimize, model, "-o", os.path.join(workdir, "optimized.onnx"), "-q", "--report",
                             report_path, "--report-html", page] + argv[4:], capture_output=True, text=True)
    if result.returncode != 0:
        print("FAIL: optimize exited %d: %s" % (result.returncode, result.stderr), file=sys.stderr)
        return 1
    html, report = open(page).read(), json.load(open(report_path))
    profile = os.path.join(workdir, "chromium-profile")
    try:
        highlighted = check_text(html, report)
        found = check_drawn(screenshot(chromium, page, os.path.join(workdir, "page.png"), profile))
    except CheckFailed as e:
        print("FAIL: %s" % e, file=sys.stderr)
        return 1

    # The same check on a page whose right-hand drawing is gone must fail.
    broken = re.sub(r'(<figure id="after">.*?)<svg.*?</svg>', r"\1", html, flags=re.S)
    broken_page = os.path.join(workdir, "without_after.html")
    open(broken_page, "w").write(broken)
    try:
        check_drawn(screenshot(chromium, broken_page, os.path.join(workdir, "without_after.png"), profile))
        print("FAIL: the screenshot check accepted a page without the second drawing", file=sys.stderr)
        return 1
    except CheckFailed:
        pass
    print("report page drawn: %d highlighted before, %d after; pixels %s; a page without the second drawing is "
          "rejected" % (highlighted["before"], highlighted["after"], found))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
