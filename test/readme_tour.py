#!/usr/bin/env python3
"""Runs the README's "A ten-minute tour", literally and in order.

Every ```sh block of that section runs as one bash script (set -eu, so a
failing command fails the test) in a fresh folder, with $P the built
prefixsim and ../shared the shared data folder. Lines that need a GPU
machine are left out, each named with its reason below; everything else
runs as a user would type it. Exit 77 (skipped) when ../shared has no
traces: the tour replays them.

usage: readme_tour.py PREFIXSIM README.md SHARED_DIR
"""
import os
import re
import subprocess
import sys
import tempfile

# Commands that only a GPU machine can run (the tour says so next to them).
GPU_ONLY = [
    (re.compile(r"^prefixsim-gpu-bench\b"), "runs on the GPU machine (built with -Dcuda=enabled)"),
    (re.compile(r"^\$P gpu validate\b"), "needs the step times measured by prefixsim-gpu-bench on a GPU"),
]


def tour_blocks(readme):
    text = open(readme, encoding="utf-8").read()
    start = text.index("## A ten-minute tour")
    end = text.find("\n## ", start + 1)
    section = text[start:end if end >= 0 else len(text)]
    return re.findall(r"```sh\n(.*?)```", section, re.S)


def main():
    prefixsim, readme, shared = (os.path.abspath(a) for a in sys.argv[1:4])
    shared = os.environ.get("PREFIXSIM_SHARED", shared)  # as the C++ tests take it
    if not os.path.isdir(os.path.join(shared, "traces")):
        print(f"SKIP: {shared}/traces is absent; the tour replays its traces")
        return 77
    blocks = tour_blocks(readme)
    if not blocks:
        print("FAIL: no ```sh blocks in the README's tour")
        return 1
    with tempfile.TemporaryDirectory(prefix="prefixsim-tour-") as cwd:
        for i, block in enumerate(blocks, 1):
            kept = []
            for line in block.splitlines():
                reason = next((why for pat, why in GPU_ONLY if pat.search(line.strip())), None)
                if reason:
                    print(f"block {i}: left out `{line.strip()}`: {reason}")
                else:
                    kept.append(line)
            script = "\n".join(kept).replace("../shared", shared)
            env = dict(os.environ, P=prefixsim)
            r = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env,
                               capture_output=True, text=True)
            print(f"block {i}: exit {r.returncode}\n{script}\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
            if r.returncode != 0:
                print(f"FAIL: tour block {i} exited {r.returncode}")
                return 1
    print(f"OK: {len(blocks)} tour blocks ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
