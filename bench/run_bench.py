"""`make bench`: lig-bench and the PyTorch peer side by side, in one run.

Runs lig-bench (every kernel set, the chosen ops, both determinism modes) and torch_peer.py (its
fastest correct variant: user's dtype or fp32, gather or dense form) at the same shapes and thread
counts, prints one table per op with lig's time, GFLOP/s and fraction of the peak of the unit
each set uses, the peer's time, the speedup peer/lig and the memory ratio lig/peer, and writes
bench/results/bench.json and bench/results/gflops_vs_seq.png.

    python bench/run_bench.py [--seq 1024,2048] [--threads 1,2] [--ops grad,fwd,step] [--sets all]
                              [--reps 5] [--peer-reps 3] [--peer-max-seq 16384] [-- more lig-bench flags]
    python bench/run_bench.py --shapes small-group [--seq 4096] [--threads 1]
        N1 = 8, 16, 32, 64 (lig only): each set's fraction of its unit peak per group size, and
        the fraction G = 8 reaches relative to G = 64; writes bench/results/small_group.json.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OPS = ("grad", "fwd", "step")
SMALL_GROUP_HEADS = (8, 16, 32, 64)


def run_lig(binary, seqs, threads, ops, sets, reps, det, extra):
    cmd = [binary, "--json", "--seq", ",".join(map(str, seqs)), "--threads", ",".join(map(str, threads)),
           "--op", ",".join(ops), "--sets", sets, "--det", det, "--reps", str(reps)] + extra
    print("$ " + " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)  # progress goes to our stderr
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError:
        sys.exit("lig-bench failed (exit %d) without a JSON report" % proc.returncode)
    out["exit_status"] = proc.returncode
    return out


def run_peer(op, seq, threads, reps, shape, extra):
    cmd = [sys.executable, os.path.join(HERE, "torch_peer.py"), "--op", op, "--seq", str(seq), "--threads",
           str(threads), "--reps", str(reps), "--heads", str(shape["N1"]), "--kv-heads", str(shape["N2"]),
           "--dim", str(shape["D"]), "--topk", str(shape["K"]), "--dtype", shape["dtype"]] + extra
    print("$ " + " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"op": op, "S": seq, "threads": threads, "ok": False, "error": "peer died (exit %d)" % proc.returncode}


def fmt(x, spec, missing="-"):
    return spec % x if x is not None else missing


def find(rows, **kv):
    for r in rows:
        if all(r.get(k) == v for k, v in kv.items()):
            return r
    return None


def print_tables(lig, peer, seqs, threads, ops):
    results = lig["results"]
    sets = []
    for r in results:
        if r["set"] not in sets:
            sets.append(r["set"])
    for op in ops:
        print()
        print("%s  (lig: median of %d; PyTorch: fastest correct variant, median; speedup = PyTorch s / lig det s)" % (
            {"grad": "BACKWARD (LightningIndexerGrad)", "fwd": "FORWARD (scores + top-k)",
             "step": "TRAINING STEP (forward + KL step + backward)"}[op], lig["problem"]["reps"]))
        head = "%6s %3s | %-10s %-22s %-16s %9s %9s %8s %7s %8s | %-12s %9s %8s | %8s %8s | %s"
        print(head % ("S", "thr", "set", "kernels", "unit", "det s", "nondet s", "GFLOP/s", "% peak", "RSS MiB",
                      "torch var.", "torch s", "RSS MiB", "speedup", "mem l/t", "lig check"))
        for s in seqs:
            for t in threads:
                pr = find(peer, op=op, S=s, threads=t)
                for st in sets:
                    if op == "fwd":
                        d = find(results, set=st, op=op, S=s, threads=t)
                        n = None
                    else:
                        d = find(results, set=st, op=op, S=s, threads=t, deterministic=True)
                        n = find(results, set=st, op=op, S=s, threads=t, deterministic=False)
                    main = d or n
                    if main is None:
                        continue
                    if not main["ok"]:
                        print("%6d %3d | %-10s failed: %s" % (s, t, st, main["error"]))
                        continue
                    kern = main["kernel_set_fwd"] if op == "fwd" else main["kernel_set_grad"]
                    if op == "step" and main["kernel_set_kl"] != kern:
                        kern = "%s, kl %s" % (kern, main["kernel_set_kl"])
                    if op == "step" and main["kernel_set_fwd"] != main["kernel_set_grad"]:
                        kern = "fwd %s, kl %s, grad %s" % (main["kernel_set_fwd"], main["kernel_set_kl"],
                                                         main["kernel_set_grad"])
                    pct = main.get("percent_of_unit_peak")
                    if pr and pr.get("ok"):
                        ptxt = "%-12s %9.3f %8.0f" % (pr["variant"], pr["median_s"], pr["peak_rss_kib"] / 1024)
                        ratio = "%8.2f %8.3f" % (pr["median_s"] / main["median_s"],
                                                 main["peak_rss_kib"] / pr["peak_rss_kib"])
                    else:
                        why = (pr or {}).get("error", "not run")
                        ptxt = "%-12s %9s %8s" % ("OOM" if "memory" in why else "-", "-", "-")
                        ratio = "%8s %8s" % ("-", "-")
                    print("%6d %3d | %-10s %-22s %-16s %9s %9s %8.1f %7s %8.0f | %s | %s | %s" % (
                        s, t, st, kern, main["unit"], fmt(d and d["median_s"], "%.4f"), fmt(n and n["median_s"], "%.4f"),
                        main["gflops"], fmt(pct, "%.1f%%"), main["peak_rss_kib"] / 1024, ptxt, ratio,
                        "ok" if main["check_ok"] else main["check"]))
    for op in ops:
        failed = [r for r in peer if r["op"] == op and not r.get("ok")]
        for r in failed:
            print("PyTorch %s, S=%d, %d thread(s): %s" % (op, r["S"], r["threads"], r.get("error", "")))


def print_peaks(lig):
    print()
    print("CPU: %s (%d online); lig %s; kernel sets: %s" % (lig["cpu"], lig["online_cpus"], lig["lig_version"],
                                                           lig["kernel_sets"]))
    print("measured unit peaks (GFLOP/s, best of 3, same run):")
    units = []
    for u in lig["unit_peaks"]:
        if u["unit"] not in units:
            units.append(u["unit"])
    for unit in units:
        rows = [u for u in lig["unit_peaks"] if u["unit"] == unit]
        if not rows[0]["available"]:
            print("  %-16s not on this CPU" % rows[0]["label"])
            continue
        print("  %-16s %s   [%s]" % (rows[0]["label"], ", ".join("%d thr %.1f" % (u["threads"], u["gflops"])
                                                                  for u in rows), rows[0]["instruction"]))


def plot(lig, peer, ops, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = [r for r in lig["results"] if r["ok"]]
    fig, axes = plt.subplots(1, len(ops), figsize=(6 * len(ops), 4.5), squeeze=False)
    for ax, op in zip(axes[0], ops):
        rows = [r for r in results if r["op"] == op and r["deterministic"] in (True, None)]
        for st in sorted({r["set"] for r in rows}):
            for t in sorted({r["threads"] for r in rows}):
                pts = sorted((r["S"], r["gflops"]) for r in rows if r["set"] == st and r["threads"] == t)
                if pts:
                    ax.plot(*zip(*pts), marker="o", label="lig %s, %d thr" % (st, t))
        for t in sorted({r["threads"] for r in peer if r["op"] == op}):
            pts = sorted((r["S"], r["gflops"]) for r in peer if r["op"] == op and r.get("ok") and r["threads"] == t)
            if pts:
                ax.plot(*zip(*pts), marker="s", linestyle="--", label="PyTorch (best variant), %d thr" % t)
        drawn = set()
        for r in rows:
            key = (r["unit"], r["threads"])
            if r.get("unit_peak_gflops") and key not in drawn:
                drawn.add(key)
                ax.axhline(r["unit_peak_gflops"], color="grey", linewidth=0.7, linestyle=":")
                ax.annotate("%s peak, %d thr" % (r["unit"], r["threads"]), (min(x["S"] for x in rows),
                            r["unit_peak_gflops"]), fontsize=6, va="bottom")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("S (S1 = S2, causal, K = %d)" % lig["problem"]["K"])
        ax.set_ylabel("GFLOP/s (%s)" % {"grad": "6*G*D per counted slot", "fwd": "2*G*D per visible pair",
                                         "step": "forward + backward flops"}[op])
        ax.set_title("%s, N1=%d D=%d %s (deterministic)" % (op, lig["problem"]["N1"], lig["problem"]["D"],
                                                             lig["problem"]["dtype"]))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def small_group(args, seqs, threads, ops, extra):
    """N1 = 8..64 at one S: each set's fraction of its unit peak, and G = 8 relative to G = 64."""
    runs = {}
    for n1 in SMALL_GROUP_HEADS:
        runs[n1] = run_lig(args.lig_bench, seqs, threads, ops, args.sets, args.reps, args.det,
                           ["--heads", str(n1)] + extra)
    print()
    print("Small groups (N2 = 1, so G = N1): % of the unit peak per set; last column G=8 / G=64 (target >= 0.60)")
    print("%-5s %6s %3s %-10s %-16s %s %9s" % ("op", "S", "thr", "set", "unit",
                                             " ".join("%8s" % ("G=%d" % g) for g in SMALL_GROUP_HEADS), "8/64"))
    failures = sum(1 for g in SMALL_GROUP_HEADS for r in runs[g]["results"] if not (r["ok"] and r["check_ok"]))
    for op in ops:
        for s in seqs:
            for t in threads:
                for st in [x for x in runs[64]["kernel_sets"].split(",") if any(
                        r["set"] == x for r in runs[64]["results"])]:
                    pct = {}
                    unit = "-"
                    for g in SMALL_GROUP_HEADS:
                        rs = [r for r in runs[g]["results"] if r["op"] == op and r["S"] == s and r["threads"] == t
                              and r["set"] == st and r["ok"]]
                        best = [r for r in rs if r.get("percent_of_unit_peak") is not None]
                        if best:  # deterministic when both modes ran
                            r = next((x for x in best if x["deterministic"] in (True, None)), best[0])
                            pct[g] = r["percent_of_unit_peak"]
                            unit = r["unit"]
                    ratio = pct[8] / pct[64] if 8 in pct and 64 in pct and pct[64] > 0 else None
                    print("%-5s %6d %3d %-10s %-16s %s %9s" % (
                        op, s, t, st, unit, " ".join("%7.1f%%" % pct[g] if g in pct else "%8s" % "-"
                                                     for g in SMALL_GROUP_HEADS), fmt(ratio, "%.2f")))
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "small_group.json")
    with open(path, "w") as f:
        json.dump({"heads": list(SMALL_GROUP_HEADS), "lig": {str(k): v for k, v in runs.items()}}, f, indent=1)
    print("wrote %s" % path)
    return failures


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seq", default=None, help="default 1024,2048 (small-group: 4096)")
    p.add_argument("--threads", default="1,%d" % (os.cpu_count() or 1))
    p.add_argument("--ops", default="grad,fwd,step")
    p.add_argument("--sets", default="all", help="lig kernel sets (default: all that lig_kernel_sets() reports)")
    p.add_argument("--det", default="both", help="lig-bench --det: 1, 0 or both (small-group default: 1)")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--peer-reps", type=int, default=3)
    p.add_argument("--peer-max-seq", type=int, default=16384,
                   help="do not start the PyTorch peer above this S")
    p.add_argument("--peer-variants", default="all", help="torch_peer.py --variants")
    p.add_argument("--shapes", default="default", choices=["default", "small-group"])
    p.add_argument("--lig-bench", default=os.path.join(HERE, "..", "build", "bench", "lig-bench"))
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    p.add_argument("extra", nargs="*", help="more lig-bench flags, after --")
    args = p.parse_args()
    small = args.shapes == "small-group"
    seqs = [int(s) for s in (args.seq or ("4096" if small else "1024,2048")).split(",")]
    threads = sorted({int(t) for t in args.threads.split(",")})
    ops = [o for o in args.ops.split(",") if o]
    if any(o not in OPS for o in ops):
        p.error("--ops: expected a list of grad, fwd, step")

    if small:
        if args.det == "both":
            args.det = "1"
        failures = small_group(args, seqs, threads, ops, args.extra)
        sys.exit(1 if failures else 0)

    lig = run_lig(args.lig_bench, seqs, threads, ops, args.sets, args.reps, args.det, args.extra)
    prob = lig["problem"]
    shape = {k: prob[k] for k in ("N1", "N2", "D", "K", "dtype")}
    peer = []
    for op in ops:
        for t in threads:
            failed_at = None
            for s in seqs:
                if s > args.peer_max_seq:
                    peer.append({"op": op, "S": s, "threads": t, "ok": False, "error": "not run (S > --peer-max-seq)"})
                elif failed_at is not None:  # longer sequences only need more memory
                    peer.append({"op": op, "S": s, "threads": t, "ok": False,
                                 "error": "not run (S=%d failed)" % failed_at})
                else:
                    peer.append(run_peer(op, s, t, args.peer_reps, shape, ["--variants", args.peer_variants]))
                    if not peer[-1].get("ok"):
                        failed_at = s

    print_peaks(lig)
    print("problem: B=1 S1=S2=S N1=%d N2=%d D=%d K=%d %s, causal (sparse_mode 3)" % (
        prob["N1"], prob["N2"], prob["D"], prob["K"], prob["dtype"]))
    print_tables(lig, peer, seqs, threads, ops)
    bad = [r for r in lig["results"] if not (r["ok"] and r["check_ok"])]
    for r in bad:
        print("lig-bench FAILED: set %s %s S=%d thr=%d: %s %s" % (r["set"], r["op"], r["S"], r["threads"], r["error"],
                                                                r["check"]))

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench.json"), "w") as f:
        json.dump({"lig": lig, "pytorch": peer}, f, indent=1)
    print("wrote %s" % os.path.join(args.out, "bench.json"))
    try:
        plot(lig, peer, ops, os.path.join(args.out, "gflops_vs_seq.png"))
        print("wrote %s" % os.path.join(args.out, "gflops_vs_seq.png"))
    except ImportError:
        print("matplotlib missing: no plot")
    sys.exit(1 if bad or lig.get("exit_status") else 0)


if __name__ == "__main__":
    main()
