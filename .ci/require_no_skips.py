#!/usr/bin/env python3
"""Fails CI when a test it requires was skipped (exit 77) in the last run.

Skipped means skipped: a test without its data, browser or GPU exits 77, and
meson counts it apart from the passes. CI has no GPU, so the gpu suite may
skip, and no swap device, so the swap suite may (a kept mapping's pages
swapped out, sim/base/reused_pages.h); the real-data suite may skip only
where ../shared has no traces (a clean clone elsewhere); every other suite,
browser included (CI installs Chromium), is required.

usage: require_no_skips.py BUILD_DIR SHARED_DIR
"""
import json
import os
import sys

build, shared = sys.argv[1], sys.argv[2]
have_traces = os.path.isdir(os.path.join(shared, "traces"))
skipped = []
for line in open(os.path.join(build, "meson-logs", "testlog.json"), encoding="utf-8"):
    t = json.loads(line)
    if t["result"] != "SKIP":
        continue
    suite = t["name"].split(" / ")[0].split(":")[-1]  # "prefixsim:real / name" -> "real"
    if suite in ("gpu", "swap") or (suite == "real" and not have_traces):
        continue
    skipped.append(t["name"])
if skipped:
    sys.exit("CI: required tests were skipped: " + ", ".join(skipped))
print("CI: no required test was skipped" + ("" if have_traces else f" (real-data suite: {shared}/traces absent)"))
