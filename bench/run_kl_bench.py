"""The fused KL loss benchmark: lig_sparse_indexer_grad_kl_loss against its PyTorch peer, one run.

    python bench/run_kl_bench.py                 # DeepSeek-V3.2 training shape (S = 4096, N1 = 128, K = 2048)
    python bench/run_kl_bench.py --quick         # a small shape for `make bench-kl-quick` (seconds)

Steps (bench/README.md has the method):
  1. kl_loss_peer.py prepare: the inputs (causal top-K selection, the main attention's own softmax
     statistics over the selected slots), raw files in --data (reused when the shape matches);
  2. lig-kl-bench --peaks: the measured peak of every unit, per thread count; --workspace-sweep:
     phase 1's workspace for N1 in {16, 128}, K in {512, 2048}, S in {1024, 4096};
  3. lig-kl-bench per thread count, its own process (--det 2): each of --reps rounds runs the
     non-deterministic plan then the deterministic one (their ratio under one load), by the wall
     clock and by CPU time; workspace, peak RSS, loss, an output hash (the deterministic outputs
     must agree bitwise across thread counts; the loss must be the same in every run);
  4. kl_loss_peer.py peer per (dtype, threads): the PyTorch formulation, median of --peer-reps, by
     the wall clock and by CPU time (with --overlap, lig, the bf16 peer and the fp32 peer run at once);
  5. checks: lig's loss against the peers' losses, lig's dQ and dW of sample rows against a float64
     autograd reference (kl_loss_peer.py reference), lig's dK of sample keys against the fp32 peer's
     (fp32 accumulation); a failed check makes the exit status non-zero;
  6. the tables (markdown, for BENCHMARKS.md) and --json (default bench/results/kl_loss.json, or
     kl_loss_quick.json with --quick).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import threading

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPE = ("seq", "heads", "dm", "dr", "idx_heads", "dim", "topk")
FULL = dict(seq=4096, heads=128, dm=512, dr=64, idx_heads=64, dim=128, topk=2048)
QUICK = dict(seq=1024, heads=32, dm=128, dr=32, idx_heads=16, dim=64, topk=256)
UNIT_OF_SET = {"avx2": "avx2-fma", "avxvnni": "avx2-fma", "avx512": "avx512-fma", "avx512bf16": "avx512-bf16",
               "amx-bf16": "amx-bf16"}  # avxvnni: avx2's fp32 kernels (its own are int8 only)


def shape_flags(sh):
    return [f for k in SHAPE for f in ("--" + k.replace("_", "-"), str(sh[k]))]


def run_json(cmd, env=None):
    print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, env=env, text=True).stdout
    line = out.strip().splitlines()[-1]
    print(line[:4000], file=sys.stderr, flush=True)  # each result as it comes (long runs, shared machines)
    return json.loads(line)


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
    ap.add_argument("--overlap", action="store_true",
                    help="run lig (one job per thread count), the bf16 peer and the fp32 peer at the same time (on a machine loaded by others"
                         " anyway; compare their CPU times)")
    ap.add_argument("--peer-reps", type=int, default=3)
    ap.add_argument("--peer-dtypes", default="bf16,fp32")
    ap.add_argument("--peer-warmup-rows", type=int, default=None,
                    help="the peer's warm-up runs only the first rows (default: the whole problem)")
    ap.add_argument("--peer-fp32-reps", type=int, default=None, help="timed runs of the fp32 peer (default --peer-reps)")
    ap.add_argument("--peer-fp32-threads", default=None,
                    help="thread counts for the fp32 peer (default: --threads); fp32 is several times slower")
    ap.add_argument("--data", default=None, help="input directory (default /tmp/lig-kl-bench-<S>-<N1>-<K>)")
    ap.add_argument("--lig-kl-bench", default=os.path.join(HERE, "..", "build", "bench", "lig-kl-bench"))
    ap.add_argument("--from-log", default=None,
                    help="make the checks and tables from the result lines of an earlier run's stderr instead of running")
    ap.add_argument("--json", default=None,
                    help="default bench/results/kl_loss.json (kl_loss_quick.json with --quick)")
    a = ap.parse_args()
    sh = dict(QUICK if a.quick else FULL)
    a.json = a.json or os.path.join(HERE, "results", "kl_loss_quick.json" if a.quick else "kl_loss.json")
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
    if not a.from_log and not (os.path.exists(stamp) and json.load(open(stamp)) == sh):
        run_json([py, peer_py, "prepare", "--out", data] + shape_flags(sh))
        json.dump(sh, open(stamp, "w"))

    if a.from_log:
        # the tables and checks from the result lines of an earlier run's stderr (one JSON object per
        # line, as run_json echoes them): for a run whose last jobs were cut short
        logged = []
        for line in open(a.from_log):
            try:
                logged.append(json.loads(line))
            except ValueError:  # a command line, or an echo cut at 2000 characters (the reference's)
                pass
        peaks = next(r["peaks"] for r in logged if "peaks" in r)
        sweep = [w for r in logged if "workspace" in r for w in r["workspace"]]
        lig = sorted((r for r in logged if "kernel_set" in r), key=lambda r: r["threads"])
        peers = [r for r in logged if "dtype" in r]
        peak = {(p["unit"], p["threads"]): p for p in peaks}
        threads = [r["threads"] for r in lig]
        print("from %s: %d lig runs, peers %s" % (a.from_log, len(lig), [(p["dtype"], p["threads"]) for p in peers]),
              file=sys.stderr)
    else:
        peaks = run_json([a.lig_kl_bench, "--peaks", a.threads])["peaks"]
        sweep = [w for t in threads for w in run_json([a.lig_kl_bench, "--workspace-sweep", "--threads", str(t)]
                                                       + shape_flags(sh))["workspace"]]
        peak = {(p["unit"], p["threads"]): p for p in peaks}

        lig_flags = ["--data", data, "--scale", repr(scale)] + shape_flags(sh)
        fp32_threads = [int(t) for t in (a.peer_fp32_threads or a.threads).split(",")]
        # three job lists: lig (per thread count, one process interleaving deterministic and
        # non-deterministic runs), the bf16 peer, the fp32 peer; sequential unless --overlap
        jobs = {"lig-%d" % t: [[a.lig_kl_bench] + lig_flags + ["--threads", str(t), "--det", "2", "--reps", str(a.reps)]
                               + (["--dump"] if t == threads[0] else [])] for t in threads}
        warmup = ["--warmup-rows", str(a.peer_warmup_rows)] if a.peer_warmup_rows else []
        for dt in a.peer_dtypes.split(","):
            ts = fp32_threads if dt == "fp32" else threads
            reps = a.peer_fp32_reps if dt == "fp32" and a.peer_fp32_reps else a.peer_reps
            jobs[dt] = [[py, peer_py, "peer", "--data", data, "--dtype", dt, "--threads", str(t), "--reps", str(reps)]
                        + (["--dump"] if t == ts[0] else []) + warmup + shape_flags(sh) for t in ts]
        results = {}
        def run_list(name):
            results[name] = [run_json(c) for c in jobs[name]]
        if a.overlap:
            workers = [threading.Thread(target=run_list, args=(n,)) for n in jobs]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            if set(results) != set(jobs):
                sys.exit("a job list failed: %s" % sorted(set(jobs) - set(results)))
        else:
            for n in jobs:
                run_list(n)
        lig = [r for t in threads for r in results["lig-%d" % t]]
        peers = [p for n in jobs if not n.startswith("lig") for p in results[n]]
    det_hashes = {r["hash"] for r in lig}
    if len(det_hashes) != 1:
        failures.append("deterministic outputs differ across thread counts: %s" % sorted(det_hashes))
    if len({r["loss"] for r in lig}) != 1:
        failures.append("the loss differs between runs: %s" % [r["loss"] for r in lig])

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
    # the fp32 peer's dK (fp32 products and sums) when it ran, else the bf16 peer's (fp32 accumulation)
    dk_src = "peer_fp32" if any(p["dtype"] == "fp32" for p in peers) else "peer_bf16"
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
    out = []
    out.append("Shape: B = 1, S = %d, N1 = %d, Dm = %d, Dr = %d, Nidx1 = %d, Nidx2 = 1, D = %d, K = %d, causal "
               "(sparse_mode 3), bf16, target head_mean; %d counted slots, %.4g GFLOP per call "
               "(teacher %.4g, I %.4g, backward %.4g)." % (
                   S, N1, Dm, Dr, Ni, D, K, counted, flops / 1e9, counted * 2.0 * N1 * (Dm + Dr) / 1e9,
                   counted * 2.0 * Ni * D / 1e9, counted * 6.0 * Ni * D / 1e9))
    out.append("")
    ws_nd = {w["threads"]: w["nondet"] for w in sweep if (w["heads"], w["topk"], w["seq"]) == (N1, K, S)}
    pk1 = peak.get((unit, 1))
    cpu_peak = pk1["gflops_cpu_time"] if pk1 else 0.0
    out.append("Unit peaks measured in this run (%s): %s." % (pk1["label"] if pk1 else "none", ", ".join(
        "%d thread(s) %.1f GFLOP/s by the wall clock" % (p["threads"], p["gflops"]) for p in peaks if p["unit"] == unit)
        + (", 1 thread %.1f GFLOP/s by its CPU time" % cpu_peak if pk1 else "")))
    out.append("")
    out.append("| threads | plan | wall median (s) | wall runs (s) | CPU median (s, all threads) | GFLOP/s (wall) "
               "| GFLOP/s per CPU-second | % of the unit peak (CPU time) | workspace (MiB) | peak RSS (MiB) |")
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    for r in lig:
        for det in (True, False):
            w = r["median_s"] if det else r["median_nondet_s"]
            c = r["median_cpu_s"] if det else r["median_nondet_cpu_s"]
            runs = r["times"] if det else r["times_nondet"]
            ws = r["workspace_bytes"] if det else ws_nd.get(r["threads"])
            out.append("| %d | %s | %.3f | %s | %.3f | %.1f | %.1f | %s | %s | %s |" % (
                r["threads"], "deterministic" if det else "non-deterministic", w, ", ".join("%.2f" % x for x in runs),
                c, flops / w / 1e9, flops / c / 1e9, "%.1f%%" % (100.0 * flops / c / 1e9 / cpu_peak) if cpu_peak else "n/a",
                "%.2f" % (ws / 2**20) if ws is not None else "n/a", "%.0f" % (r["peak_rss_kib"] / 1024) if det else "(same process)"))
    out.append("")
    out.append("| threads | det / non-det, wall (interleaved) | det / non-det, CPU time |")
    out.append("|---|---|---|")
    for r in lig:
        out.append("| %d | %.3f | %.3f |" % (r["threads"], r["median_s"] / r["median_nondet_s"],
                                           r["median_cpu_s"] / r["median_nondet_cpu_s"]))
    out.append("")
    out.append("Workspace (phase 1 alone) against N1, K and S, other dims as above: no N1 x K x S term.")
    out.append("")
    out.append("| N1 | K | S | threads | deterministic (MiB) | non-deterministic (MiB) | N1 x K x S fp32 (MiB) |")
    out.append("|---|---|---|---|---|---|---|")
    for w in sweep:
        out.append("| %d | %d | %d | %d | %.2f | %.2f | %.0f |" % (
            w["heads"], w["topk"], w["seq"], w["threads"], w["det"] / 2**20, w["nondet"] / 2**20,
            4.0 * w["heads"] * w["topk"] * w["seq"] / 2**20))
    out.append("")
    out.append("| peer | threads | wall median (s) | wall runs (s) | CPU median (s) | GFLOP/s per CPU-second "
               "(lig's count) | peak RSS (MiB) | loss |")
    out.append("|---|---|---|---|---|---|---|---|")
    for p in peers:
        out.append("| PyTorch %s | %d | %.2f | %s | %.2f | %.1f | %.0f | %.7g |" % (
            p["dtype"], p["threads"], p["median_s"], ", ".join("%.2f" % x for x in p["times"]), p["median_cpu_s"],
            flops / p["median_cpu_s"] / 1e9, p["peak_rss_kib"] / 1024, p["loss"]))
    out.append("")
    out.append("| threads | lig deterministic, wall / CPU (s) | fastest peer, wall / CPU (s) | speedup, wall | speedup, CPU "
               "| lig RSS / peer RSS |")
    out.append("|---|---|---|---|---|---|")
    for r in lig:
        t = r["threads"]
        cands = [p for p in peers if p["threads"] == t]
        if not cands:
            continue
        bw = min(cands, key=lambda p: p["median_s"])
        bc = min(cands, key=lambda p: p["median_cpu_s"])
        out.append("| %d | %.2f / %.2f | %.2f (%s) / %.2f (%s) | %.2fx | %.2fx | %.2f |" % (
            t, r["median_s"], r["median_cpu_s"], bw["median_s"], bw["dtype"], bc["median_cpu_s"], bc["dtype"],
            bw["median_s"] / r["median_s"], bc["median_cpu_s"] / r["median_cpu_s"],
            r["peak_rss_kib"] / min(p["peak_rss_kib"] for p in cands)))
    out.append("")
    out.append("Checks (error = max |lig - ref| / max |ref|): " + "; ".join(
        "%s %.2g (tol %.0e)" % c for c in checks) + ". lig loss %.7g; float64 row losses %s." % (
        loss, ", ".join("%d: %.6g" % kv for kv in ref_row_loss.items())))
    print("\n".join(out))
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    json.dump({"shape": sh, "scale": scale, "peaks": peaks, "lig": lig, "workspace_sweep": sweep, "peers": peers,
               "checks": [{"name": n, "error": e, "tol": t} for n, e, t in checks], "failures": failures,
               "reference_rows": {t: {"loss": ref[str(t)]["loss"], "sum_p": ref[str(t)]["sum_p"]} for t in rows}},
              open(a.json, "w"), indent=1)
    for f in failures:
        print("FAILED: " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
