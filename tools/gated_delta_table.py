#!/usr/bin/env python3
"""The tables of tools/device_gated_delta.sh from its results.jsonl (one or several files:
the two device calls' rows together): the rule's forward per chunk size beside FLA's, forward +
backward beside our forward and the PyTorch recurrence, linear attention beside FLA's forms.
Memory is what a call holds on the device: tilejit's device_bytes (inputs, outputs,
intermediates) + scratch_bytes; a peer's inputs + its peak extra allocation.

    python3 tools/gated_delta_table.py FILE.jsonl [FILE.jsonl ...]
"""
import json
import re
import sys

NAN = float("nan")


def load(paths):
    rows = []
    for p in paths:
        try:
            rows += [json.loads(line) for line in open(p) if line.strip()]
        except FileNotFoundError:
            print(f"gated_delta_table: {p}: no such file", file=sys.stderr)
    return rows


def key(r):
    s = r.get("shape", r)
    return (s["B"], s["T"], s["H"], s.get("D"))


def chunk(r):
    m = re.search(r"/C(\d+)$", r.get("problem", ""))
    return int(m.group(1)) if m else 64


def steps(r):
    return {x["step"]: x["ms"] for x in r.get("steps", [])}


def held(r):
    return (r.get("device_bytes", 0) + r.get("scratch_bytes", 0)) / 1e6


def peer_mb(k, extra, with_do):
    b, t, h, d = k
    inputs = 3 * b * t * h * d * 2 + b * t * h * (4 + 2) + (b * t * h * d * 2 if with_do else 0)
    return (inputs + extra) / 1e6 if extra is not None else NAN


def main(paths):
    rows = load(paths)
    by = {}
    for r in rows:
        by.setdefault(r.get("src"), []).append(r)
    fla = {key(r): r for r in by.get("fla", [])}
    fwd = {}
    for r in by.get("tilejit_fwd", []):
        fwd.setdefault(key(r), {})[chunk(r)] = r
    print("| bf16 rule fwd | C=16 ms | C=32 ms | C=64 ms | best (prepare + chunk) | FLA ms | "
          "FLA / best | MB tj / FLA | ok |")
    best_fwd = {}
    for k in sorted(fwd, key=lambda k: (k[0] * k[1], k)):
        c = fwd[k]
        best = min(c.values(), key=lambda r: r["ms"])
        best_fwd[k] = best["ms"]
        st = steps(best)
        f = fla.get(k, {})
        p = f.get("fla_fwd_ms", NAN)
        ms = " | ".join(f"{c[x]['ms']:.3f}" if x in c else "-" for x in (16, 32, 64))
        print(f"| B={k[0]} T={k[1]} H={k[2]} D={k[3]} | {ms} | C={chunk(best)}: "
              f"{st.get('prepare', 0):.3f} + {st.get('forward', 0):.3f} | {p:.3f} | "
              f"{p / best['ms']:.2f} | {held(best):.0f} / "
              f"{peer_mb(k, f.get('fla_fwd_peak_extra_bytes'), False):.0f} | "
              f"{all(r.get('correct') for r in c.values())} |")
    rec = {key(r): r for r in by.get("torch_recurrence", [])}
    print("| bf16 rule fwd+bwd | C | steps ms | fwd+bwd ms | / best fwd | MB | "
          "torch recurrence fwd+bwd ms, MB | ok (worst error) |")
    for r in sorted(by.get("tilejit_fwdbwd", []), key=lambda r: (key(r)[0] * key(r)[1], key(r),
                                                                  chunk(r))):
        k = key(r)
        st = steps(r)
        t = rec.get(k, {})
        worst = max((r.get("errors") or {"-": NAN}).values())
        print(f"| B={k[0]} T={k[1]} H={k[2]} D={k[3]} | {chunk(r)} | "
              f"{' '.join(f'{n}={v:.3f}' for n, v in st.items())} | {r['ms']:.3f} | "
              f"{r['ms'] / best_fwd.get(k, NAN):.2f} | {held(r):.0f} | "
              f"{t.get('torch_recurrence_fwdbwd_ms', NAN):.1f}, "
              f"{peer_mb(k, t.get('torch_recurrence_fwdbwd_peak_extra_bytes'), True):.0f} | "
              f"{r.get('correct')} ({worst:.1e}) |")
    fl = {key(r): r for r in by.get("fla_linear", [])}
    print("| bf16 linear attn | tj fwd ms | tj fwd+bwd ms | FLA chunk / fused_chunk fwd+bwd ms | "
          "best FLA / tj | MB tj / FLA chunk | ok |")
    for r in sorted(by.get("tilejit_linear", []), key=lambda r: (key(r)[0] * key(r)[1], key(r))):
        k = key(r)
        p = fl.get(k, {})
        a = p.get("fla_chunk_fwdbwd_ms", NAN)
        b = p.get("fla_fused_chunk_fwdbwd_ms", NAN)
        best = min((x for x in (a, b) if x == x), default=NAN)
        print(f"| B={k[0]} T={k[1]} H={k[2]} D={k[3]} | {steps(r).get('forward', 0):.3f} | "
              f"{r['ms']:.3f} | {a:.3f} / {b:.3f} | {best / r['ms']:.2f} | {held(r):.0f} / "
              f"{peer_mb(k, p.get('fla_chunk_fwdbwd_peak_extra_bytes'), True):.0f} | "
              f"{r.get('correct')} |")
    for src in ("fla", "fla_linear", "torch_recurrence"):
        for r in by.get(src, []):
            errs = {n: v for n, v in r.items() if n.endswith(("_error", "_skipped"))}
            if errs:
                print(f"{src} {key(r)}: {errs}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
