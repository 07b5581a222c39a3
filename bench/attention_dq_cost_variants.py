#!/usr/bin/env python3
"""What dq by atomics costs inside attn_bwd, taken apart: the kernel (its ISSUE = 1 transposed
form, the Hopper tile at D = 128) timed as shipped and with its dq statement rewritten, each
variant compiled from a copy of kernels_src/workloads/attention.tile and launched on the same
inputs, the variants alternating (attention_bench_common.alternating_ms). Timing only: the
variants other than "atomics" do not compute dq.

    PYTHONPATH=python TILEJIT_LIBRARY=... python3 bench/attention_dq_cost_variants.py [--out F]
    python3 bench/attention_dq_cost_variants.py --check DIR   # write the variants' sources only

Variants: atomics (as shipped: dq's product on wgmma, red.global.add.v2 per pair), shared (the
product computed and written to a shared tile, no global traffic), store (dq's rows stored
instead of added: the writes without the L2's reductions), no_dq (ATOMIC_DQ = 0: attn_bwd as
the attn_dq plan runs it).
bf16 B = 4 H = 16 D = 128: N = 8192, and N = 16384 at 10% of the blocks (attn_bwd_sparse).
"""
import os
import sys
import tempfile

from attention_bench_common import (alternating_ms, bwd_kernel_call, random_block_mask,
                                    random_tensors, session)

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "..", "kernels_src", "workloads", "attention.tile")
SHIPPED = "atomic_add(dq_acc[b, h, i0 : i0 + BM, 0 : D], dqp * scale, bulk = BULK);"
REWRITES = {
    # dq's product computed and written to a shared tile: no global traffic.
    "shared": "shared dqs = cast<T>(dqp * scale);",
    # dq's rows stored, not added: the global writes without the L2's reductions.
    "store": "store(dq_acc[b, h, i0 : i0 + BM, 0 : D], dqp * scale);",
}


def variant_sources(directory):
    """{variant: path}: attention.tile with the ISSUE = 1 dq statement of attn_bwd and of
    attn_bwd_sparse rewritten."""
    text = open(SOURCE).read()
    out = {"atomics": SOURCE}
    for name, stmt in REWRITES.items():
        if text.count(SHIPPED) != 2:
            raise SystemExit(f"attention.tile: expected 2 dq statements, found {text.count(SHIPPED)}")
        path = os.path.join(directory, f"attention_{name}.tile")
        with open(path, "w") as f:
            f.write(text.replace(SHIPPED, stmt))
        out[name] = path
    return out


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        for name, path in variant_sources(sys.argv[2]).items():
            print(name, path)
        return 0
    started = session(__doc__, "attention_dq_cost_variants")
    if started is None:
        return 0
    args, torch, tilejit, timer, emit = started
    rt = tilejit.runtime()
    sources = variant_sources(tempfile.mkdtemp())
    B, H, D = 4, 16, 128
    tile = {"TR": 1, "BN": 128, "BM": 64, "WARPS": 8, "STAGES": 2, "ISSUE": 1, "D": D,
            "CAUSAL": 0, "EXACT": 0}
    for n, density in ((8192, None), (16384, 10)):
        torch.manual_seed(0)
        q, k, v, dout = random_tensors(torch, 4, (B, H, n, D), torch.bfloat16)
        mask = random_block_mask(torch, tilejit, H, n, density) if density else None
        o, lse = tilejit.ops.attention_forward(q, k, v, block_mask=mask)
        delta = (o.float() * dout.float()).sum(-1)
        dk, dv = torch.empty_like(k), torch.empty_like(v)
        dq_acc = torch.zeros(B, H, n, D, device="cuda", dtype=torch.float32)
        scale = D ** -0.5
        calls, names = [], []
        for name, path in sources.items():
            for atomic in ((1,) if name != "atomics" else (1, 0)):
                calls.append(bwd_kernel_call(rt, path, dict(tile, ATOMIC_DQ=atomic), q, k, v,
                                             dout, lse, delta, dk, dv, dq_acc, scale, mask))
                names.append(name if atomic else "no_dq")
        for call in calls:
            call()
        ms = alternating_ms(timer, calls)
        emit({"B": B, "H": H, "N": n, "D": D, "density_percent": density,
              "device": torch.cuda.get_device_name(),
              **{f"{name}_ms": t for name, t in zip(names, ms)}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
