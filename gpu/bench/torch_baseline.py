#!/usr/bin/env python3
"""PyTorch baseline for `prefixsim-gpu-bench`'s attention grid (issue 6, item 9).

Same shapes as gpu/bench_main.cpp: llama-3.1-8b heads (32 query, 8 KV, head
dim 128), block size 16, a paged pool whose pages are interleaved across the
batch's requests as bench_main lays them out. For each (n new, c cached,
batch) it times, apart:

  gather  K/V pages -> contiguous [batch, kv_heads, c + n, 128] (index_select)
  flash   SDPA, FlashAttention-2 backend, on the gathered K/V
  cudnn   SDPA, cuDNN backend (c = 0 only, as the issue asks)

Causal masking is bottom-right aligned (query i of n sees keys up to c + i):
plain `is_causal` for c = 0; for c > 0 torch's `causal_lower_right` bias,
which SDPA runs on the fastest backend that supports it (named in the
`backend` column; the FLASH backend does not take it).

Protocol as bench_main: CUDA events, a 256 MB buffer written before every
run to flush L2, one warm-up run dropped, median of --reps. FLOPs are
FlashAttention's count 4 d Hq sum n (c + n/2) per layer; bytes are Q, the
context K/V and O, each once. Prints CSV on stdout.
"""
import argparse
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import causal_lower_right

HQ, HKV, D, BS = 32, 8, 128, 16
GRID = [(512, 0, 1), (2048, 0, 1), (4096, 0, 1), (4096, 4096, 1),
        (1024, 8192, 1), (512, 4096, 8), (128, 8192, 16), (2048, 2048, 4)]


def timed(fn, reps, flush):
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ms = []
    for i in range(reps + 1):
        flush.fill_(i & 0xFF)
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        if i > 0:
            ms.append(e0.elapsed_time(e1))
    return statistics.median(ms)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    dev = torch.device("cuda")
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    print(f"# torch {torch.__version__}, {torch.cuda.get_device_name()}, median of {args.reps}")
    print("kernel,n,c,batch,backend,ms,tflops,gbps")
    for n, c, batch in GRID:
        per = (n + c + BS - 1) // BS
        blocks = per * batch
        g = torch.Generator(device=dev).manual_seed(n * 7 + c * 13 + batch)
        k_pool = torch.rand(blocks, BS, HKV, D, device=dev, generator=g, dtype=torch.float32).to(torch.bfloat16) * 2 - 1
        v_pool = torch.rand(blocks, BS, HKV, D, device=dev, generator=g, dtype=torch.float32).to(torch.bfloat16) * 2 - 1
        q = torch.rand(batch, HQ, n, D, device=dev, generator=g, dtype=torch.float32).to(torch.bfloat16) * 2 - 1
        # bench_main's interleaved tables: page j of request i is block j * batch + i.
        table = (torch.arange(per, device=dev)[None, :] * batch + torch.arange(batch, device=dev)[:, None]).reshape(-1)
        kv_len = c + n

        def gather():
            k = k_pool.index_select(0, table).view(batch, per * BS, HKV, D)[:, :kv_len].transpose(1, 2)
            v = v_pool.index_select(0, table).view(batch, per * BS, HKV, D)[:, :kv_len].transpose(1, 2)
            return k.contiguous(), v.contiguous()

        k, v = gather()
        flops = 4.0 * D * HQ * batch * n * (c + n / 2)
        nbytes = 2.0 * batch * (2 * n * HQ * D + 2 * kv_len * HKV * D)
        rows = [("gather", "index_select", lambda: gather())]
        if c == 0:
            rows.append(("flash", "FLASH_ATTENTION", SDPBackend.FLASH_ATTENTION))
            rows.append(("cudnn", "CUDNN_ATTENTION", SDPBackend.CUDNN_ATTENTION))
        else:
            rows.append(("flash", "auto(causal_lower_right)", None))
        for name, backend, how in rows:
            if name == "gather":
                fn = how
            elif how is None:
                bias = causal_lower_right(n, kv_len)
                fn = lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=bias, enable_gqa=True)
            else:
                def fn(how=how):
                    with sdpa_kernel([how]):
                        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            try:
                ms = timed(fn, args.reps, flush)
            except RuntimeError:
                # A backend that refuses GQA: give it K/V repeated per query head
                # (the expansion is not timed) and say so in the backend column.
                ke, ve = k.repeat_interleave(HQ // HKV, dim=1), v.repeat_interleave(HQ // HKV, dim=1)
                if how is None:
                    fn = lambda: F.scaled_dot_product_attention(q, ke, ve, attn_mask=causal_lower_right(n, kv_len))
                else:
                    def fn(how=how):
                        with sdpa_kernel([how]):
                            return F.scaled_dot_product_attention(q, ke, ve, is_causal=True)
                backend += "+expanded_kv"
                try:
                    ms = timed(fn, args.reps, flush)
                except RuntimeError as err:  # refuses the shape itself: say so, keep going
                    print(f"{name},{n},{c},{batch},{backend},nan,nan,nan  # {str(err).splitlines()[0]}")
                    continue
            tf = flops / (ms * 1e-3) / 1e12 if name != "gather" else 0.0
            gb = nbytes / (ms * 1e-3) / 1e9 if name != "gather" else 0.0
            print(f"{name},{n},{c},{batch},{backend},{ms:.4f},{tf:.2f},{gb:.1f}")


if __name__ == "__main__":
    main()
