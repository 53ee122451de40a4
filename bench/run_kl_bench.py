"""The fused KL loss benchmark (issue 19): lig_sparse_indexer_kl_loss against its PyTorch peer, one run.

    python bench/run_kl_bench.py                 # DeepSeek-V3.2 training shape (S = 4096, N1 = 128, K = 2048)
    python bench/run_kl_bench.py --quick         # a small shape for `make bench-kl-quick` (seconds)

Steps (bench/README.md has the method):
  1. kl_loss_peer.py prepare: the inputs (causal top-K selection, the main attention's own softmax
     statistics over the selected slots), raw files in --data (reused when the shape matches);
  2. lig-kl-bench --peaks: the measured peak of every unit, per thread count;
  3. lig-kl-bench per (threads, deterministic), each its own process: median of --reps phase-2 runs,
     workspace, peak RSS, loss, an output hash (deterministic runs must agree bitwise across thread
     counts; the loss must be the same in every run);
  4. kl_loss_peer.py peer per (dtype, threads): the PyTorch formulation, median of --peer-reps;
  5. checks: lig's loss against the peers' losses, lig's dQ and dW of sample rows against a float64
     autograd reference (kl_loss_peer.py reference), lig's dK of sample keys against the fp32 peer's
     (fp32 accumulation); a failed check makes the exit status non-zero;
  6. the tables (markdown, for BENCHMARKS.md) and --json (default bench/results/kl_loss.json).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPE = ("seq", "heads", "dm", "dr", "idx_heads", "dim", "topk")
FULL = dict(seq=4096, heads=128, dm=512, dr=64, idx_heads=64, dim=128, topk=2048)
QUICK = dict(seq=1024, heads=32, dm=128, dr=32, idx_heads=16, dim=64, topk=256)
UNIT_OF_SET = {"avx2": "avx2-fma", "avx512": "avx512-fma", "avx512bf16": "avx512-bf16", "amx-bf16": "amx-bf16"}


def shape_flags(sh):
    return [f for k in SHAPE for f in ("--" + k.replace("_", "-"), str(sh[k]))]


def run_json(cmd, env=None):
    print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, env=env, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def bf16_file(path, shape):
    raw = np.fromfile(path, dtype=np.uint16).astype(np.uint32) << 16
    return raw.view(np.float32).reshape(shape).astype(np.float64)


def rel_err(got, ref):
    """max |got - ref| / max |ref| over the compared elements (0 when both are 0)."""
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    diff = float(np.max(np.abs(got - ref))) if ref.size else 0.0
    return diff / scale if scale > 0 else diff


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the small shape (%s)" % QUICK)
    for k in SHAPE:
        ap.add_argument("--" + k.replace("_", "-"), type=int)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=5, help="lig's timed runs per configuration")
    ap.add_argument("--peer-reps", type=int, default=3)
    ap.add_argument("--peer-dtypes", default="bf16,fp32")
    ap.add_argument("--peer-fp32-threads", default=None,
                    help="thread counts for the fp32 peer (default: --threads); fp32 is several times slower")
    ap.add_argument("--data", default=None, help="input directory (default /tmp/lig-kl-bench-<S>-<N1>-<K>)")
    ap.add_argument("--lig-kl-bench", default=os.path.join(HERE, "..", "build", "bench", "lig-kl-bench"))
    ap.add_argument("--json", default=os.path.join(HERE, "results", "kl_loss.json"))
    a = ap.parse_args()
    sh = dict(QUICK if a.quick else FULL)
    for k in SHAPE:
        if getattr(a, k) is not None:
            sh[k] = getattr(a, k)
    S, N1, Dm, Dr, Ni, D, K = (sh[k] for k in SHAPE)
    data = a.data or "/tmp/lig-kl-bench-%d-%d-%d-%d-%d-%d-%d" % (S, N1, Dm, Dr, Ni, D, K)
    threads = [int(t) for t in a.threads.split(",")]
    py = sys.executable
    peer_py = os.path.join(HERE, "kl_loss_peer.py")
    scale = 1.0 / float(Dm + Dr) ** 0.5
    failures = []

    stamp = os.path.join(data, "shape.json")
    if not (os.path.exists(stamp) and json.load(open(stamp)) == sh):
        run_json([py, peer_py, "prepare", "--out", data] + shape_flags(sh))
        json.dump(sh, open(stamp, "w"))

    peaks = run_json([a.lig_kl_bench, "--peaks", a.threads])["peaks"]
    peak = {(p["unit"], p["threads"]): p for p in peaks}

    lig_flags = ["--data", data, "--scale", repr(scale)] + shape_flags(sh)
    lig = []
    for t in threads:
        for det in (1, 0):
            dump = ["--dump"] if (t == threads[0] and det == 1) else []
            lig.append(run_json([a.lig_kl_bench] + lig_flags + ["--threads", str(t), "--det", str(det),
                                                                 "--reps", str(a.reps)] + dump))
    det_hashes = {r["hash"] for r in lig if r["det"] == 1}
    if len(det_hashes) != 1:
        failures.append("deterministic outputs differ across thread counts: %s" % sorted(det_hashes))
    if len({r["loss"] for r in lig}) != 1:
        failures.append("the loss differs between runs: %s" % [r["loss"] for r in lig])

    peers = []
    fp32_threads = [int(t) for t in (a.peer_fp32_threads or a.threads).split(",")]
    for dt in a.peer_dtypes.split(","):
        for t in (fp32_threads if dt == "fp32" else threads):
            dump = ["--dump"] if t == (fp32_threads if dt == "fp32" else threads)[0] else []
            peers.append(run_json([py, peer_py, "peer", "--data", data, "--dtype", dt, "--threads", str(t),
                                   "--reps", str(a.peer_reps)] + dump + shape_flags(sh)))

    # ---- checks ----
    loss = lig[0]["loss"]
    checks = []
    for p in peers:
        tol = 2e-3 if p["dtype"] == "fp32" else 1e-2
        err = abs(loss - p["loss"]) / max(abs(p["loss"]), 1e-30)
        checks.append(("loss vs peer %s (%d thr)" % (p["dtype"], p["threads"]), err, tol))
    rows = sorted({0, 1, K - 1, min(K, S - 1), S // 2, S - 1})
    ref = run_json([py, peer_py, "reference", "--data", data, "--rows", ",".join(map(str, rows))] + shape_flags(sh))
    dq = bf16_file(os.path.join(data, "lig_dq.bin"), (S, Ni * D))
    dw = bf16_file(os.path.join(data, "lig_dw.bin"), (S, Ni))
    dk = bf16_file(os.path.join(data, "lig_dk.bin"), (S, D))
    # bf16 outputs (half an ulp, 2^-9) of bf16-rounded products summed in fp32: 1e-2 of the row's largest value
    for t in rows:
        r = ref[str(t)]
        checks.append(("dQ row %d vs float64" % t, rel_err(dq[t], np.array(r["dq"])), 1e-2))
        checks.append(("dW row %d vs float64" % t, rel_err(dw[t], np.array(r["dw"])), 1e-2))
    dk_src = "peer_fp32" if "fp32" in a.peer_dtypes.split(",") else "peer_bf16"
    pdk = np.fromfile(os.path.join(data, dk_src + "_dk.bin"), dtype=np.float32).reshape(S, D).astype(np.float64)
    for s in sorted({0, S // 3, 2 * S // 3, S - 1}):
        checks.append(("dK key %d vs %s" % (s, dk_src), rel_err(dk[s], pdk[s]), 2e-2))
    ref_row_loss = {t: ref[str(t)]["loss"] for t in rows}
    for name, err, tol in checks:
        if not err <= tol:
            failures.append("%s: error %.3g > %.3g" % (name, err, tol))

    # ---- tables ----
    counted, flops = lig[0]["counted_slots"], lig[0]["flops"]
    set_ = lig[0]["kernel_set"]
    unit = UNIT_OF_SET.get(set_)
    best_peer = {t: min((p for p in peers if p["threads"] == t), key=lambda p: p["median_s"], default=None)
                 for t in threads}
    out = []
    out.append("Shape: B = 1, S = %d, N1 = %d, Dm = %d, Dr = %d, Nidx1 = %d, Nidx2 = 1, D = %d, K = %d, causal "
               "(sparse_mode 3), bf16, target head_mean; %d counted slots, %.4g GFLOP per call "
               "(teacher %.4g, I %.4g, backward %.4g)." % (
                   S, N1, Dm, Dr, Ni, D, K, counted, flops / 1e9, counted * 2.0 * N1 * (Dm + Dr) / 1e9,
                   counted * 2.0 * Ni * D / 1e9, counted * 6.0 * Ni * D / 1e9))
    out.append("")
    out.append("| threads | deterministic | lig median (s) | runs (s) | GFLOP/s | unit peak (GFLOP/s) | % of peak "
               "| workspace (MiB) | peak RSS (MiB) |")
    out.append("|---|---|---|---|---|---|---|---|---|")
    for r in lig:
        pk = peak.get((unit, r["threads"]))
        frac = "%.1f%%" % (100.0 * r["gflops"] / pk["gflops"]) if pk else "n/a"
        out.append("| %d | %s | %.3f | %s | %.1f | %s %.0f | %s | %.2f | %.0f |" % (
            r["threads"], "yes" if r["det"] else "no", r["median_s"], ", ".join("%.3f" % x for x in r["times"]),
            r["gflops"], pk["label"] if pk else "none", pk["gflops"] if pk else 0.0, frac,
            r["workspace_bytes"] / 2**20, r["peak_rss_kib"] / 1024))
    out.append("")
    out.append("| threads | det / non-det time |")
    out.append("|---|---|")
    for t in threads:
        d1 = next(r for r in lig if r["threads"] == t and r["det"] == 1)
        d0 = next(r for r in lig if r["threads"] == t and r["det"] == 0)
        out.append("| %d | %.3f |" % (t, d1["median_s"] / d0["median_s"]))
    out.append("")
    out.append("| peer | threads | median (s) | runs (s) | GFLOP/s (lig's count) | peak RSS (MiB) | loss |")
    out.append("|---|---|---|---|---|---|---|")
    for p in peers:
        out.append("| PyTorch %s | %d | %.3f | %s | %.1f | %.0f | %.6g |" % (
            p["dtype"], p["threads"], p["median_s"], ", ".join("%.2f" % x for x in p["times"]),
            flops / p["median_s"] / 1e9, p["peak_rss_kib"] / 1024, p["loss"]))
    out.append("")
    out.append("| threads | lig deterministic (s) | fastest peer (s) | speedup | lig RSS / peer RSS |")
    out.append("|---|---|---|---|---|")
    for t in threads:
        d1 = next(r for r in lig if r["threads"] == t and r["det"] == 1)
        bp = best_peer[t]
        if bp:
            out.append("| %d | %.3f | %.3f (%s) | %.2fx | %.2f |" % (
                t, d1["median_s"], bp["median_s"], bp["dtype"], bp["median_s"] / d1["median_s"],
                d1["peak_rss_kib"] / bp["peak_rss_kib"]))
    out.append("")
    out.append("Checks (error = max |lig - ref| / max |ref|): " + "; ".join(
        "%s %.2g (tol %.0e)" % c for c in checks) + ". lig loss %.7g; float64 row losses %s." % (
        loss, ", ".join("%d: %.6g" % kv for kv in ref_row_loss.items())))
    print("\n".join(out))
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    json.dump({"shape": sh, "scale": scale, "peaks": peaks, "lig": lig, "peers": peers,
               "checks": [{"name": n, "error": e, "tol": t} for n, e, t in checks], "failures": failures,
               "reference_rows": {t: {"loss": ref[str(t)]["loss"], "sum_p": ref[str(t)]["sum_p"]} for t in rows}},
              open(a.json, "w"), indent=1)
    for f in failures:
        print("FAILED: " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
