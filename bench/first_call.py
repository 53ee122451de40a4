"""The time of a Python program's first lig calls: `import lig`, then the first call of each op on
a tiny problem, each run in a fresh interpreter (what a script, a test session or a spawned worker
pays once); the median over several runs.

    .venv/bin/python bench/first_call.py [--runs 7] [--json]

The library itself takes microseconds on a tiny problem (the "second call" row shows it), so the
rest of a first call is what Python loads or builds on it.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

# One measurement in a fresh interpreter: torch imported first (every lig user has it), then
# perf_counter around `import lig` and around each op's first call.
CHILD = r"""
import json, sys, time
import torch
t = time.perf_counter()
import lig
out = {"import lig": time.perf_counter() - t}
gen = torch.Generator().manual_seed(0)
q = torch.randn(1, 8, 4, 16, generator=gen)
k = torch.randn(1, 8, 1, 16, generator=gen)
w = torch.rand(1, 8, 4, generator=gen)
for n in ("first", "second"):
    t = time.perf_counter()
    idx, val = lig.indexer(q, k, w, 4)
    out[f"indexer, {n} call"] = time.perf_counter() - t
dy = torch.ones(idx.shape)
target = torch.softmax(val.masked_fill(idx < 0, float("-inf")), -1)
t = time.perf_counter()
lig.indexer_grad(q, k, dy, idx, w)
out["indexer_grad, first call"] = time.perf_counter() - t
t = time.perf_counter()
lig.indexer_kl_grad(val, target, idx)
out["indexer_kl_grad, first call"] = time.perf_counter() - t
out["torch._dynamo imported"] = float("torch._dynamo" in sys.modules)
print(json.dumps(out))
"""


def measure() -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="fresh interpreters (the median is reported)")
    ap.add_argument("--json", action="store_true", help="every run's figures as JSON instead of the table")
    args = ap.parse_args()
    runs = [measure() for _ in range(args.runs)]
    if args.json:
        print(json.dumps(runs, indent=1))
        return
    print(f"median of {args.runs} fresh interpreters ({sys.executable}):")
    for key in runs[0]:
        values = [r[key] for r in runs]
        if key == "torch._dynamo imported":
            print(f"  {key:30s} {sum(v > 0 for v in values)} of {len(values)} runs")
        else:
            print(f"  {key:30s} {statistics.median(values) * 1e3:9.2f} ms  "
                  f"(min {min(values) * 1e3:.2f}, max {max(values) * 1e3:.2f})")


if __name__ == "__main__":
    main()
