#!/usr/bin/env python3
"""attn_bwd / attn_bwd_sparse with the rows' lse and delta copied into shared tiles by the loop's
pipeline (on Hopper the tensor memory accelerator fetches them with q and do: the slots are
still released one by one) instead of loaded into registers at every iteration: the kernel
alone, as shipped and rewritten, timed in turn on the same inputs
(attention_bench_common.alternating_ms), dk and dv compared. Timing only; dq by attn_dq
(ATOMIC_DQ = 0), the Hopper tile (TR 1, BN 128, BM 64, 8 warps, 2 stages, ISSUE 1).

    PYTHONPATH=python TILEJIT_LIBRARY=... python3 bench/attention_lse_shared_variant.py [--out F]
    python3 bench/attention_lse_shared_variant.py --check DIR   # write the variant's source only

bf16 B = 4 H = 16 D = 128: N = 8192 (causal too), N = 16384 at 10% and 50% of the blocks.
"""
import os
import sys
import tempfile

from attention_bench_common import (alternating_ms, bwd_kernel_call, random_block_mask,
                                    random_tensors, session)

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "..", "kernels_src", "workloads", "attention.tile")
LOG2E = "1.4426950408889634"
REWRITES = [  # (shipped text, rewritten text, occurrences in the two kernels)
    (f"frag l2 = load(lse[b, h, i0 : i0 + BM]) * {LOG2E};",
     "shared l2s = copy(lse[b, h, i0 : i0 + BM]);", 4),
    ("frag dl = load(delta[b, h, i0 : i0 + BM]);", "shared dl = copy(delta[b, h, i0 : i0 + BM]);", 4),
    ("where(l2 > -inf, l2, inf)", f"where(l2s > -inf, l2s * {LOG2E}, inf)", 3),
    ("l2[", f"(l2s * {LOG2E})[", 3),
]


def variant_source(directory):
    """attention.tile with attn_bwd's and attn_bwd_sparse's per-iteration lse and delta loads
    rewritten as copies into shared tiles (the other kernels as they are)."""
    text = open(SOURCE).read()
    spans = []
    for start, end in (("kernel attn_bwd<", "kernel attn_dq<"),
                       ("kernel attn_bwd_sparse<", "kernel attn_dq_sparse<")):
        a = text.index(start)
        spans.append((a, text.index(end, a)))
    pieces, at = [], 0
    counts = [0] * len(REWRITES)
    for a, b in spans:
        body = text[a:b]
        for i, (old, new, _) in enumerate(REWRITES):
            counts[i] += body.count(old)
            body = body.replace(old, new)
        pieces += [text[at:a], body]
        at = b
    pieces.append(text[at:])
    for (old, _, want), got in zip(REWRITES, counts):
        if got != want:
            raise SystemExit(f"attention.tile: expected {want} of '{old}', found {got}")
    path = os.path.join(directory, "attention_lse_shared.tile")
    with open(path, "w") as f:
        f.write("".join(pieces))
    return path


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        print(variant_source(sys.argv[2]))
        return 0
    started = session(__doc__, "attention_lse_shared_variant")
    if started is None:
        return 0
    args, torch, tilejit, timer, emit = started
    rt = tilejit.runtime()
    sources = {"shipped": SOURCE, "lse_shared": variant_source(tempfile.mkdtemp())}
    B, H, D = 4, 16, 128
    tile = {"TR": 1, "BN": 128, "BM": 64, "WARPS": 8, "STAGES": 2, "ISSUE": 1, "D": D,
            "EXACT": 0, "ATOMIC_DQ": 0}
    for n, causal, density in ((8192, False, None), (8192, True, None), (16384, False, 10),
                               (16384, False, 50)):
        torch.manual_seed(0)
        q, k, v, dout = random_tensors(torch, 4, (B, H, n, D), torch.bfloat16)
        mask = random_block_mask(torch, tilejit, H, n, density) if density else None
        o, lse = tilejit.ops.attention_forward(q, k, v, causal=causal, block_mask=mask)
        delta = (o.float() * dout.float()).sum(-1)
        scale = D ** -0.5
        calls, outs = [], []
        dq_acc = torch.zeros(B, H, n, D, device="cuda", dtype=torch.float32)  # unused: ATOMIC_DQ 0
        for name, path in sources.items():
            dk, dv = torch.empty_like(k), torch.empty_like(v)
            calls.append(bwd_kernel_call(rt, path, dict(tile, CAUSAL=int(causal)), q, k, v, dout,
                                         lse, delta, dk, dv, dq_acc, scale, mask))
            outs.append((dk, dv))
        for call in calls:
            call()
        torch.cuda.synchronize()
        diff = max(((x.float() - y.float()).norm() / y.float().norm()).item()
                   for x, y in zip(outs[1], outs[0]))
        ms = alternating_ms(timer, calls)
        emit({"B": B, "H": H, "N": n, "D": D, "causal": causal, "density_percent": density,
              "device": torch.cuda.get_device_name(), "shipped_ms": ms[0],
              "lse_shared_ms": ms[1], "max_rel_diff_dk_dv": diff})
    return 0


if __name__ == "__main__":
    sys.exit(main())
