"""`make bench`: lig-bench and the PyTorch peer side by side, in one run.

Runs lig-bench (both determinism modes) and torch_peer.py at the same shapes and thread
counts, prints one table with the ratios lig/PyTorch for time and peak memory, and writes
bench/results/bench.json and bench/results/gflops_vs_seq.png.

    python bench/run_bench.py [--seq 1024,2048] [--threads 1,2] [--peer-max-seq 8192] [--reps 5]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run_lig(binary, seqs, threads, reps, extra):
    cmd = [binary, "--json", "--seq", ",".join(map(str, seqs)), "--threads", ",".join(map(str, threads)),
           "--det", "both", "--reps", str(reps)] + extra
    print("$ " + " ".join(cmd), flush=True)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["results"]


def run_peer(seq, threads, reps, shape):
    cmd = [sys.executable, os.path.join(HERE, "torch_peer.py"), "--seq", str(seq), "--threads", str(threads),
           "--reps", str(reps), "--heads", str(shape["N1"]), "--dim", str(shape["D"]), "--topk", str(shape["K"]),
           "--dtype", shape["dtype"]]
    print("$ " + " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"S": seq, "threads": threads, "ok": False,
                "error": "peer died (exit %d): %s" % (proc.returncode, proc.stderr.strip()[-200:])}


def plot(lig, peer, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for threads in sorted({r["threads"] for r in lig}):
        for det in (True, False):
            pts = sorted((r["S"], r["gflops"]) for r in lig
                         if r["ok"] and r["threads"] == threads and r["deterministic"] == det)
            if pts:
                ax.plot(*zip(*pts), marker="o", label="lig, %d thr, %s" % (threads, "det" if det else "non-det"))
        pts = sorted((r["S"], r["gflops"]) for r in peer if r.get("ok") and r["threads"] == threads)
        if pts:
            ax.plot(*zip(*pts), marker="s", linestyle="--", label="PyTorch autograd, %d thr" % threads)
        peak = [r["peak_gflops"] for r in lig if r["threads"] == threads]
        if peak:
            ax.axhline(max(peak), color="grey", linewidth=0.8, linestyle=":")
            ax.annotate("FMA peak, %d thr" % threads, (min(r["S"] for r in lig), max(peak)), fontsize=7,
                        va="bottom")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("sequence length S (S1 = S2, causal, K = %d)" % lig[0]["K"])
    ax.set_ylabel("GFLOP/s (6*G*D per counted slot)")
    ax.set_title("LightningIndexerGrad, N1=%d D=%d %s" % (lig[0]["N1"], lig[0]["D"], lig[0]["dtype"]))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seq", default="1024,2048")
    p.add_argument("--threads", default="1,%d" % (os.cpu_count() or 1))
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--peer-reps", type=int, default=3)
    p.add_argument("--peer-max-seq", type=int, default=16384,
                   help="do not start the PyTorch peer above this S (it is O(S*K*D) memory)")
    p.add_argument("--lig-bench", default=os.path.join(HERE, "..", "build", "bench", "lig-bench"))
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    p.add_argument("extra", nargs="*", help="more lig-bench flags, after --")
    args = p.parse_args()
    seqs = [int(s) for s in args.seq.split(",")]
    threads = sorted({int(t) for t in args.threads.split(",")})

    lig = run_lig(args.lig_bench, seqs, threads, args.reps, args.extra)
    shape = {k: lig[0][k] for k in ("N1", "D", "K", "dtype")}
    peer = []
    for t in threads:
        for s in seqs:
            if s > args.peer_max_seq:
                peer.append({"S": s, "threads": t, "ok": False, "error": "not run (S > --peer-max-seq)"})
                continue
            peer.append(run_peer(s, t, args.peer_reps, shape))
            if not peer[-1].get("ok"):  # longer sequences only need more memory
                for s2 in seqs[seqs.index(s) + 1:]:
                    peer.append({"S": s2, "threads": t, "ok": False, "error": "not run (a shorter S failed)"})
                break

    print()
    print("LightningIndexerGrad, N1=%d D=%d K=%d %s, causal, S1 = S2; lig median of %d runs, PyTorch median of"
          " %d (forward + backward)" % (shape["N1"], shape["D"], shape["K"], shape["dtype"], args.reps,
                                        args.peer_reps))
    head = "%7s %4s | %9s %9s %7s %9s | %9s %7s %8s | %9s %8s | %10s %10s"
    print(head % ("S", "thr", "det s", "nondet s", "%peak", "RSS MiB", "torch s", "GF/s", "RSS MiB",
                  "time l/t", "mem l/t", "det/nondet", "lig GF/s"))
    largest_peer = {}
    for t in threads:
        for s in seqs:
            d = next(r for r in lig if r["S"] == s and r["threads"] == t and r["deterministic"])
            n = next(r for r in lig if r["S"] == s and r["threads"] == t and not r["deterministic"])
            pr = next(r for r in peer if r["S"] == s and r["threads"] == t)
            if pr.get("ok"):
                largest_peer[t] = s
                peer_cols = ("%9.3f" % pr["median_s"], "%7.1f" % pr["gflops"], "%8.0f" % (pr["peak_rss_kib"] / 1024),
                             "%9.3f" % (d["median_s"] / pr["median_s"]),
                             "%8.3f" % (d["peak_rss_kib"] / pr["peak_rss_kib"]))
            else:
                peer_cols = ("%9s" % "OOM" if "memory" in pr.get("error", "") else "%9s" % "-", "%7s" % "-",
                             "%8s" % "-", "%9s" % "-", "%8s" % "-")
            print("%7d %4d | %9.3f %9.3f %6.1f%% %9.0f | %s %s %s | %s %s | %10.3f %10.1f" % (
                s, t, d["median_s"], n["median_s"], d["percent_of_peak"], d["peak_rss_kib"] / 1024, *peer_cols,
                d["median_s"] / n["median_s"], d["gflops"]))
    for t in threads:
        failed = [r for r in peer if r["threads"] == t and not r.get("ok")]
        if failed:
            print("PyTorch, %d thread(s): largest S finished: %s; first failure at S=%d: %s" % (
                t, largest_peer.get(t, "none"), failed[0]["S"], failed[0].get("error", "")))
    peaks = {r["threads"]: r["peak_gflops"] for r in lig}
    print("measured FMA peak: " + ", ".join("%d thr %.1f GFLOP/s" % kv for kv in sorted(peaks.items())))

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench.json"), "w") as f:
        json.dump({"lig": lig, "pytorch": peer}, f, indent=1)
    try:
        plot(lig, peer, os.path.join(args.out, "gflops_vs_seq.png"))
        print("wrote %s" % os.path.join(args.out, "gflops_vs_seq.png"))
    except ImportError:
        print("matplotlib missing: no plot")


if __name__ == "__main__":
    main()
