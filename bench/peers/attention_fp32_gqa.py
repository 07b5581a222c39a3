"""SDPA's fp32 backends on issue 16's seed shapes, with and without GQA, timed as `tilejit bench`.

    python3 bench/peers/attention_fp32_gqa.py [--out FILE.jsonl] [--group G]

For the 16 fp32 seed shapes of WORKLOADS.md section 3 (B in {1, 2}, N in {512, 1024}, H in
{8, 16}, D = 64, not causal), each with HKV = H (plain) and HKV = H / G (GQA, G = 4 unless
--group says otherwise; SDPA's enable_gqa), it times every SDPA backend that takes fp32 inputs
(math, efficient, and the default choice): the forward, and forward + backward as one call
(the forward, then autograd.grad of its output). L2 flushed (256 MB memset) before each call,
CUDA events, median of 20 after 3 warm-ups. A backend that refuses a shape is recorded with
torch's reason. One JSON line per shape and backend (stdout, and FILE when given); `best_*` on
the shape's last line is the fastest backend that ran. torch's TF32 matmul flag is left off
(its default), as the shared yardstick leaves it.
"""
import argparse
import json
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", help="also append the JSON lines to this file")
    p.add_argument("--group", type=int, default=4, help="query heads per kv head for GQA (4)")
    args = p.parse_args()
    if args.group < 1 or 8 % args.group:
        print(f"attention_fp32_gqa: --group {args.group} must divide 8 (the smallest H)",
              file=sys.stderr)
        return 2
    import torch
    if not torch.cuda.is_available():
        print("attention_fp32_gqa: no CUDA device; nothing to time", file=sys.stderr)
        return 0
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from flushed_timer import FlushedTimer
    timer = FlushedTimer(torch)

    def median_ms(fn):
        return timer.median_ms(fn, n=20)

    backends = [("math", [SDPBackend.MATH]), ("efficient", [SDPBackend.EFFICIENT_ATTENTION]),
                ("auto", None)]
    out = open(args.out, "a") if args.out else None
    for B in (1, 2):
        for N in (512, 1024):
            for H in (8, 16):
                for HKV in (H, H // args.group):
                    D = 64
                    q = torch.randn(B, H, N, D, device="cuda", requires_grad=True)
                    k, v = (torch.randn(B, HKV, N, D, device="cuda", requires_grad=True)
                            for _ in range(2))
                    do = torch.randn(B, H, N, D, device="cuda")
                    gqa = HKV != H
                    best = {}
                    for name, which in backends:
                        row = {"B": B, "H": H, "HKV": HKV, "N": N, "D": D, "dtype": "f32",
                               "backend": name, "device": torch.cuda.get_device_name()}

                        def fwd():
                            return F.scaled_dot_product_attention(q, k, v, enable_gqa=gqa)

                        def fwd_bwd():
                            return torch.autograd.grad(fwd(), (q, k, v), do)

                        try:
                            if which:
                                with sdpa_kernel(which):
                                    row["fwd_ms"] = median_ms(fwd)
                                    row["fwd_bwd_ms"] = median_ms(fwd_bwd)
                            else:
                                row["fwd_ms"] = median_ms(fwd)
                                row["fwd_bwd_ms"] = median_ms(fwd_bwd)
                            for key in ("fwd_ms", "fwd_bwd_ms"):
                                if key not in best or row[key] < best[key][0]:
                                    best[key] = (row[key], name)
                        except Exception as ex:  # a backend refusing fp32 or GQA
                            row["error"] = " ".join(str(ex).split())[:300]
                        if name == backends[-1][0]:
                            for key, (ms, who) in best.items():
                                row["best_" + key] = ms
                                row["best_" + key.replace("_ms", "_backend")] = who
                        line = json.dumps(row)
                        print(line)
                        if out:
                            out.write(line + "\n")
                    del q, k, v, do
    return 0


if __name__ == "__main__":
    sys.exit(main())
