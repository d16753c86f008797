#!/usr/bin/env python3
"""prefixsim's cache mode against libCacheSim's cachesim, whole process, on the
same block stream.

Converts a Mooncake-format trace into the stream of KV blocks that
`prefixsim replay --mode cache` touches (per request, every full block of
prompt + output: Request::kv_len // B, sim/engine/cache_replay.h), writes it
in libCacheSim's oracleGeneral binary format (24-byte records: u32 time,
u64 object id, u32 size = 1, i64 next access, for belady), then runs

    prefixsim replay TRACE --mode cache --policy P --kv-blocks N --block-size B --quiet
    cachesim STREAM.bin oracleGeneral P N

alternately, --runs times each (5 by default), and prints per policy the
medians of CPU seconds (user + system, from wait4), wall seconds and peak RSS,
and the ratio cachesim CPU / prefixsim CPU (above 1: prefixsim is faster).
prefixsim reads the JSONL and hashes every block; cachesim reads the
prepared binary stream. Hit ratios are printed as a check that both ran the
same stream; they differ a little by design (prefixsim follows vLLM: a
prompt hits only up to its first miss, the last prompt token is always
recomputed, a request's blocks are pinned while it runs).

libCacheSim is not part of prefixsim: build it outside the repository, e.g.
    git clone https://github.com/1a1a11a/libCacheSim /work/ext/libCacheSim
    (apt install cmake libglib2.0-dev libzstd-dev)
    cd /work/ext/libCacheSim && mkdir _build && cd _build
    cmake -DCMAKE_BUILD_TYPE=Release .. && make -j2 cachesim

Usage:
    scripts/libcachesim_compare.py TRACE --prefixsim build/sim/cli/prefixsim \\
        --cachesim /work/ext/libCacheSim/_build/bin/cachesim [--kv-blocks N] \\
        [--policies lru,s3fifo,belady] [--runs 5]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time


def block_stream(trace, block_size, trace_block_size):
    """Object ids of the blocks each request touches, in order, ids dense
    from 0, with the second of the trace each access falls in. A prompt block is named by the chain of trace ids up to the last
    one it covers and its index (equal prefixes, equal blocks); a block
    holding output tokens is the request's own."""
    intern = {}
    stream = []

    def key_of(k):
        v = intern.get(k)
        if v is None:
            v = intern[k] = len(intern)
        return v

    chains = {}
    seconds = []
    with open(trace) as f:
        for n, line in enumerate(f):
            if not line.strip():
                continue
            r = json.loads(line)
            prompt, output, ids = r["input_length"], r["output_length"], r["hash_ids"]
            kv_len = prompt + max(output - 1, 0)
            chain, prev = [], None
            for h in ids:
                prev = chains.setdefault((prev, h), len(chains))
                chain.append(prev)
            second = int(r["timestamp"]) // 1000  # ms
            seconds.extend([second] * (kv_len // block_size))
            for j in range(kv_len // block_size):
                end = (j + 1) * block_size
                if end <= prompt:
                    stream.append(key_of((chain[(end - 1) // trace_block_size], j)))
                else:
                    stream.append(key_of(("out", n, j)))
    return stream, seconds


def write_oracle_general(stream, seconds, path):
    nxt = [-1] * len(stream)
    last = {}
    for i in range(len(stream) - 1, -1, -1):
        nxt[i] = last.get(stream[i], -1)
        last[stream[i]] = i
    rec = struct.Struct("<IQIq")
    with open(path, "wb") as f:
        buf = bytearray()
        for i, obj in enumerate(stream):
            buf += rec.pack(seconds[i], obj + 1, 1, nxt[i])  # ids from 1: 0 reads as "no object" in places
            if len(buf) > (1 << 22):
                f.write(buf)
                buf.clear()
        f.write(buf)


def timed(cmd):
    """CPU seconds (user + system), wall seconds, peak RSS (MiB) and stdout
    of one command, from wait4's rusage of that child alone."""
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        out = os.open(timed.out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.chdir(timed.cwd)  # cachesim writes its result file into the working folder
        try:
            os.execv(cmd[0], cmd)
        finally:
            os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    wall = time.monotonic() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(cmd)}")
    with open(timed.out_path) as f:
        text = f.read()
    return ru.ru_utime + ru.ru_stime, wall, ru.ru_maxrss / 1024.0, text


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--prefixsim", required=True)
    ap.add_argument("--cachesim", required=True)
    ap.add_argument("--kv-blocks", type=int, default=30000)
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument("--trace-block-size", type=int, default=512)
    ap.add_argument("--policies", default="lru,s3fifo,belady")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    a.trace, a.prefixsim, a.cachesim = (os.path.abspath(p) for p in (a.trace, a.prefixsim, a.cachesim))

    work = tempfile.mkdtemp(prefix="lcs-compare-")
    timed.out_path = os.path.join(work, "stdout.txt")
    timed.cwd = work
    binary = os.path.join(work, "stream.oracleGeneral.bin")
    # The stream is built in a child: a child's peak RSS (wait4) counts the
    # pages of the process it was forked from, so this one stays small.
    pid = os.fork()
    if pid == 0:
        stream, seconds = block_stream(a.trace, a.block_size, a.trace_block_size)
        write_oracle_general(stream, seconds, binary)
        print(f"{a.trace}: {len(stream)} block accesses, {len(set(stream))} distinct blocks; "
              f"pool {a.kv_blocks} blocks, B={a.block_size}, {a.runs} alternating runs each", flush=True)
        os._exit(0)
    if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0:
        sys.exit("could not convert the trace")
    print(f"{'policy':8} {'prefixsim CPU s':>16} {'cachesim CPU s':>15} {'cachesim/prefixsim':>19} "
          f"{'prefixsim MiB':>14} {'cachesim MiB':>13} {'prefixsim hit':>14} {'cachesim hit':>13}")
    for policy in a.policies.split(","):
        ours = [a.prefixsim, "replay", a.trace, "--mode", "cache", "--policy", policy, "--kv-blocks",
                str(a.kv_blocks), "--block-size", str(a.block_size), "--trace-block-size",
                str(a.trace_block_size), "--out", os.path.join(work, "out"), "--quiet"]
        theirs = [a.cachesim, binary, "oracleGeneral", policy, str(a.kv_blocks), "--ignore-obj-size", "1"]
        p_cpu, c_cpu, p_rss, c_rss = [], [], [], []
        hit_c = None
        for i in range(a.runs):
            order = [("p", ours), ("c", theirs)] if i % 2 == 0 else [("c", theirs), ("p", ours)]
            for who, cmd in order:
                cpu, wall, rss, text = timed(cmd)
                if who == "p":
                    p_cpu.append(cpu)
                    p_rss.append(rss)
                else:
                    c_cpu.append(cpu)
                    c_rss.append(rss)
                    m = re.search(r"miss ratio\s+([0-9.]+)", text)
                    if m:
                        hit_c = 1 - float(m.group(1))
        with open(os.path.join(work, "out", "report.json")) as f:
            rep = json.load(f)["prefix_cache"]
        pm, cm = statistics.median(p_cpu), statistics.median(c_cpu)
        print(f"{policy:8} {pm:16.3f} {cm:15.3f} {cm / pm:19.2f} {statistics.median(p_rss):14.1f} "
              f"{statistics.median(c_rss):13.1f} {rep['block_hit_rate']:14.4f} "
              f"{(f'{hit_c:.4f}' if hit_c is not None else '?'):>13}")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
