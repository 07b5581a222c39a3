"""FlashAttention-2 and cuDNN attention through SDPA, timed the way `tilejit bench` times.

    python3 bench/peers/sdpa_flash_quick.py [--out FILE.jsonl] [--shapes N:D[:causal],...]

For four bf16 shapes by default (B=4 H=16: N=8192 D=128 with and without causal, N=2048 D=64
and D=128), or the B=4 H=16 shapes `--shapes` lists (`--shapes long`: issue 16's twelve, N in
{2048, 8192, 16384}, D in {64, 128}, causal and not), it times SDPA with the flash (FlashAttention-2) and cuDNN backends forced: the forward, and the
backward as autograd.grad of the forward's output. L2 flushed (256 MB memset) before each call,
CUDA events, median of 30 after 3 warm-ups. Beside the times, each backend's peak memory of one
forward + backward (`<backend>_fwdbwd_peak_bytes`: the bytes live at the call's peak, q, k, v and
do included, as `tilejit bench` reports `device_bytes`). One JSON line per shape (stdout, and
FILE when given). A quick same-run yardstick beside `tilejit bench --workload attention`; the shared
../shared/peers/attention.py times every backend and shape.
"""
import argparse
import json
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", help="also append the JSON lines to this file")
    p.add_argument("--shapes", help="N:D[:causal] comma-separated (B=4 H=16), or `long`")
    args = p.parse_args()
    shapes = [(4, 16, 8192, 128, False), (4, 16, 8192, 128, True),
              (4, 16, 2048, 64, False), (4, 16, 2048, 128, False)]
    if args.shapes == "long":
        shapes = [(4, 16, n, d, c) for n in (2048, 8192, 16384) for d in (64, 128)
                  for c in (False, True)]
    elif args.shapes:
        shapes = []
        for item in args.shapes.split(","):
            f = item.split(":")
            if len(f) not in (2, 3) or not all(x.isdigit() for x in f[:2]) or (
                    len(f) == 3 and f[2] != "causal"):
                p.error(f"--shapes: '{item}' is not N:D or N:D:causal")
            shapes.append((4, 16, int(f[0]), int(f[1]), len(f) == 3))
    import torch
    if not torch.cuda.is_available():
        print("sdpa_flash_quick: no CUDA device; nothing to time", file=sys.stderr)
        return 0
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from flushed_timer import FlushedTimer
    timer = FlushedTimer(torch)

    def median_ms(fn):
        return timer.median_ms(fn, n=30)

    def peak_bytes(fn, inputs):
        """Bytes live at the peak of fn(): what it allocates at most, plus its inputs."""
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        fn()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - base + sum(t.nbytes for t in inputs)

    out = open(args.out, "a") if args.out else None
    for (B, H, N, D, causal) in shapes:
        q, k, v = (torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16,
                               requires_grad=True) for _ in range(3))
        do = torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16)
        row = {"B": B, "H": H, "N": N, "D": D, "causal": causal,
               "device": torch.cuda.get_device_name()}
        for name, backend in [("flash", SDPBackend.FLASH_ATTENTION),
                              ("cudnn", SDPBackend.CUDNN_ATTENTION)]:
            with sdpa_kernel(backend):
                row[name + "_fwd_ms"] = median_ms(
                    lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
                o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                row[name + "_bwd_ms"] = median_ms(
                    lambda: torch.autograd.grad(o, (q, k, v), do, retain_graph=True))
                del o
                row[name + "_fwdbwd_peak_bytes"] = peak_bytes(
                    lambda: torch.autograd.grad(
                        F.scaled_dot_product_attention(q, k, v, is_causal=causal), (q, k, v), do),
                    (q, k, v, do))
        line = json.dumps(row)
        print(line)
        if out:
            out.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
