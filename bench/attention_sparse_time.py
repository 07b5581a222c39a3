#!/usr/bin/env python3
# Times attn_fwd_sparse (and attn_fwd dense) on the yardstick's block-sparse shape: B4 H16 N8192
# D128 bf16, block 128, each query block row keeping round(density * nb) blocks, the diagonal
# among them. Medians over 30 calls, L2 flushed by a 256 MB zero_() before each.
import json, math, sys
import torch, tilejit
rt = tilejit.Runtime()
fwd_s = rt.load("embedded:workloads/attention.tile", "attn_fwd_sparse")
fwd_d = rt.load("embedded:workloads/attention.tile", "attn_fwd")
B, H, N, D, BLK = 4, 16, 8192, 128, 128
nb = N // BLK
torch.manual_seed(0)
q = torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16)
k = torch.randn_like(q); v = torch.randn_like(q)
o = torch.empty_like(q); lse = torch.empty(B, H, N, device="cuda")
flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
scale = 1 / math.sqrt(D)
def time(fn):
    ts = []
    for i in range(33):
        flush.zero_()
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize()
        if i >= 3: ts.append(a.elapsed_time(b))
    ts.sort(); return ts[len(ts) // 2]
out = []
cfgs = [{"D": 128, "BLK": 128}, {"D": 128, "BLK": 128, "BM": 128, "BN": 32, "STAGES": 2, "WARPS": 4},
        {"D": 128, "BLK": 128, "BM": 128, "BN": 64, "STAGES": 2, "WARPS": 8}]
for density in (0.1, 0.25, 0.5, 1.0):
    keep = max(1, round(density * nb))
    idx = torch.empty(1, H, nb, nb, dtype=torch.int32, device="cuda")
    for h in range(H):
        for r in range(nb):
            others = [c for c in torch.randperm(nb).tolist() if c != r][: keep - 1]
            row = [r] + others
            idx[0, h, r, : len(row)] = torch.tensor(row, dtype=torch.int32)
    cnt = torch.full((1, H, nb), keep, dtype=torch.int32, device="cuda")
    for cfg in cfgs:
        ms = time(lambda: fwd_s(q, k, v, cnt, idx, o, lse, scale, config=cfg))
        tf = 4 * B * H * N * N * D * keep / nb / ms / 1e9
        out.append({"kernel": "attn_fwd_sparse", "density": keep / nb, "config": cfg, "ms": ms, "tflops": tf})
        print(f"sparse density {keep/nb:.3f} {cfg} {ms:.3f} ms {tf:.0f} TFLOP/s", flush=True)
for cfg in cfgs[1:]:
    c = {x: y for x, y in cfg.items() if x != "BLK"}
    ms = time(lambda: fwd_d(q, k, v, o, lse, scale, config=c))
    print(f"dense {c} {ms:.3f} ms", flush=True)
    out.append({"kernel": "attn_fwd", "config": c, "ms": ms})
json.dump(out, open(sys.argv[1], "w"), indent=1)
