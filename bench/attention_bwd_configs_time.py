#!/usr/bin/env python3
"""The attention backward (--forward: the forward) under several forced configurations (e.g.
dq by attn_dq against dq by atomics in attn_bwd), through tilejit.ops.attention_backward
(attention_forward) on the same inputs, timed in turn
(attention_bench_common.alternating_ms), each configuration's gradients compared with the
first's. One JSON line per shape.

    PYTHONPATH=python TILEJIT_LIBRARY=... python3 bench/attention_bwd_configs_time.py \\
        --configs 'ATOMIC_DQ=0,ISSUE=1;ATOMIC_DQ=1,ISSUE=1' [--shapes 8192:128,8192:128:causal,
        16384:128:10] [--out F]
    python3 bench/attention_bwd_configs_time.py --table F   # F's rows as a markdown table

Shapes are N:D[:causal|:DENSITY%] at bf16 B=4 H=16 (a random block mask per head, the
diagonal kept, as a BlockMask, for a density). L2 flushed before each call, CUDA events.
"""
import sys

from attention_bench_common import alternating_ms, random_block_mask, random_tensors, session


def parse_configs(text):
    """'A=1,B=0;A=0' -> [{'A': '1', 'B': '0'}, {'A': '0'}]; a clear error for anything else."""
    configs = []
    for part in text.split(";"):
        config = {}
        for item in filter(None, part.split(",")):
            name, eq, value = item.partition("=")
            if not eq or not name.strip() or not value.strip():
                raise SystemExit(f"--configs: '{item}' is not NAME=VALUE")
            config[name.strip()] = value.strip()
        configs.append(config)
    if len(configs) < 2:
        raise SystemExit("--configs: give at least two configurations, separated by ';'")
    return configs


def parse_shape(text):
    """'N:D[:causal|:DENSITY]' -> (N, D, causal, density or None)."""
    parts = text.split(":")
    try:
        n, d = int(parts[0]), int(parts[1])
        tail = parts[2] if len(parts) > 2 else ""
        if len(parts) > 3 or (tail and tail != "causal" and not 0 < int(tail) <= 100):
            raise ValueError
    except (ValueError, IndexError):
        raise SystemExit(f"--shapes: '{text}' is not N:D[:causal|:DENSITY]")
    return n, d, tail == "causal", int(tail) if tail and tail != "causal" else None


def print_table(path):
    """The JSON lines of an earlier run as a markdown table (a device script's summary)."""
    import json
    rows = [json.loads(line) for line in open(path)]
    if rows:
        print("| N | D | causal | density | " + " | ".join(rows[0]["configs"]) +
              " | max rel diff |")
    for r in rows:
        print(f"| {r['N']} | {r['D']} | {r['causal']} | {r['density_percent']} | "
              + " | ".join(f"{x:.3f}" for x in r["bwd_ms"])
              + f" | {max(r['max_rel_diff_vs_first']):.2e} |")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        print_table(sys.argv[2])
        return 0

    def extra(p):
        # Parsed here, so that a malformed value is named before anything else (GPU or not).
        p.add_argument("--configs", required=True, type=parse_configs,
                       help="configurations separated by ';'")
        p.add_argument("--shapes", default="8192:128,8192:128:causal,16384:128:10",
                       type=lambda text: [parse_shape(s) for s in text.split(",")])
        p.add_argument("--rounds", type=int, default=5)
        p.add_argument("--forward", action="store_true",
                       help="time attention_forward under the configurations instead")
    started = session(__doc__, "attention_bwd_configs_time", extra)
    if started is None:
        return 0
    args, torch, tilejit, timer, emit = started
    configs = args.configs
    B, H = 4, 16
    for n, d, causal, density in args.shapes:
        torch.manual_seed(0)
        q, k, v, dout = random_tensors(torch, 4, (B, H, n, d), torch.bfloat16)
        mask = random_block_mask(torch, tilejit, H, n, density) if density else None
        o, lse = tilejit.ops.attention_forward(q, k, v, causal=causal, block_mask=mask)
        if args.forward:  # the rows' bwd_ms are then the forward's times
            calls = [lambda c=c: tilejit.ops.attention_forward(q, k, v, causal=causal,
                                                               block_mask=mask, config=c)
                     for c in configs]
        else:
            calls = [lambda c=c: tilejit.ops.attention_backward(
                q, k, v, o, lse, dout, causal=causal, block_mask=mask, config=c)
                for c in configs]
        grads = [call() for call in calls]
        ms = alternating_ms(timer, calls, rounds=args.rounds)
        emit({"pass": "forward" if args.forward else "backward",
              "B": B, "H": H, "N": n, "D": d, "causal": causal, "density_percent": density,
              "device": torch.cuda.get_device_name(),
              "configs": [",".join(f"{k}={v}" for k, v in c.items()) for c in configs],
              "bwd_ms": ms,
              "max_rel_diff_vs_first": [max(((a.float() - b.float()).norm() /
                                             b.float().norm()).item()
                                            for a, b in zip(g, grads[0])) for g in grads]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
