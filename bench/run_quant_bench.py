"""The quantized forward's benchmark, every table in one run: prefill and decode, every
kernel set, 1 and 2 threads, against the measured unit peaks and the streaming bandwidth of the
cache, lig's bf16 forward and the PyTorch formulation on the same data, and the recall of the fp8 /
int8 selections against the bf16 one.

    python bench/run_quant_bench.py            # DeepSeek's shapes (make bench-quant)
    python bench/run_quant_bench.py --quick    # small shapes, a minute or two (make bench-quant-quick)

Steps (bench/README.md has the method):
  1. lig-quant-bench per thread count (its own process: the unit peaks at that thread count, then
     every set: lig's bf16 forward, INT8, FP8; medians of --reps; recall; sampled rows checked against
     float64), prefill S = --seq, all rows; the first one dumps the inputs for the peer;
  2. the same at S = --long-seq (--long-rows rows, --long-reps runs, no warm-up) for --long-sets
     (default: the set with the fastest INT8 prefill at step 1, 1 thread);
  3. lig-decode-bench: every (B, next_n, context) of --batch x --next-n x --ctx, every set in
     --decode-sets, bf16 / fp8 / int8, 1 and 2 threads in the same process, each step beside a plain
     read of its cache bytes; dumps the inputs;
  4. quant_peer.py: the PyTorch formulation on the dumped inputs, prefill both forms, variants bf16
     and fp32 matmul (the fastest is the peer); at --long-seq the last --peer-long-rows rows with
     the variant that was fastest at step 4's prefill; decode (fp8: the cache format DeepSeek uses;
     the int8 fallback is the same code) every shape;
  5. --json with every raw result, then the tables (markdown, stdout and --md) and the targets
     (--from-json makes them again from a --json). A failed check (lig's, against float64) or a
     failed step makes the exit status non-zero.
--clock wall (default) times everything by the wall clock (for a quiet machine); --clock cpu by the
process's CPU time (a loaded machine: a rate is then per CPU-second of all the process's threads,
so a 2-thread figure is a per-core rate, and the peaks are measured the same way).
"""
import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
N1, D, K = 64, 128, 2048
FULL = dict(seq=4096, long_seq=32768, ctx="8192,65536,131072", batch="1,16", next_n="1,2", reps=3, long_reps=1,
            decode_reps=3, peer_reps=3, peer_long_rows=1024)
QUICK = dict(seq=1024, long_seq=2048, ctx="4096,16384", batch="1,4", next_n="1,2", reps=3, long_reps=1,
             decode_reps=3, peer_reps=1, peer_long_rows=256)
LABEL = {"avx2-fma": "AVX2 FMA", "avx512-fma": "AVX-512 FMA", "avx512-bf16": "vdpbf16ps", "avx2-i16": "AVX2 vpmaddwd",
         "avx512-i16": "AVX-512 vpmaddwd", "avx512-vnni": "vpdpbusd", "avx-vnni": "AVX-VNNI ymm vpdpbusd",
         "none": "none"}
BF16_UNIT = {"avx2": "avx2-fma", "avxvnni": "avx2-fma", "avx512": "avx512-fma", "avx512bf16": "avx512-bf16"}


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def run(cmd, log):
    print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
    t0, c0 = time.time(), resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    sys.stderr.write(p.stdout)
    # wall seconds, and the step's CPU seconds (user + system, all its threads): on a loaded machine the
    # CPU seconds bound what the step takes on free cores
    log.append(dict(cmd=" ".join(cmd), rc=p.returncode, seconds=round(time.time() - t0, 1),
                    cpu_seconds=round(c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime, 1)))
    return p


def jsonl(path):
    out = []
    if os.path.exists(path):
        for line in open(path):
            line = line.strip()
            if line:
                out.append(json.loads(line))
    return out


def med(x):
    return statistics.median(x) if x else 0.0


def prefill_ops(S, rows):
    # 2 N1 D per visible key, summed over the last `rows` rows of an S x S causal problem
    return 2.0 * N1 * D * sum(S - rows + i + 1 for i in range(rows))


def decode_ops(B, n, C):
    return 2.0 * N1 * D * B * sum(C - n + t + 1 for t in range(n))


def pct(x):
    return "%.1f%%" % (100 * x) if x else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    for k, v in FULL.items():
        ap.add_argument("--" + k.replace("_", "-"), type=type(v), default=None)
    ap.add_argument("--long-rows", type=int, default=None, help="rows of the --long-seq prefill (default all)")
    ap.add_argument("--long-sets", default="auto")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--sets", default=None, help="prefill sets (default every set this CPU runs)")
    ap.add_argument("--decode-sets", default="-scalar",
                    help="decode sets: a list, or -scalar (default: every set but the portable one, minutes per sweep)")
    ap.add_argument("--peer-fp32-reps", type=int, default=1, help="timed runs of the (slower) fp32 peer variant")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    ap.add_argument("--data", default="/tmp/lig-quant-bench", help="the dumped inputs (large: about 2 GB at the full shapes)")
    ap.add_argument("--bench-dir", default=os.path.join(HERE, "..", "build", "bench"))
    ap.add_argument("--json", default=None, help="default bench/results/quant.json (quant_quick.json with --quick)")
    ap.add_argument("--md", default=None, help="also write the tables here")
    ap.add_argument("--from-json", default=None, help="the tables again from an earlier run's --json, without running")
    a = ap.parse_args()
    cfg = dict(QUICK if a.quick else FULL)
    for k in cfg:
        if getattr(a, k) is not None:
            cfg[k] = getattr(a, k)
    a.json = a.json or os.path.join(HERE, "results", "quant_quick.json" if a.quick else "quant.json")
    threads = [int(t) for t in a.threads.split(",")]
    S, SL = cfg["seq"], cfg["long_seq"]
    RL = a.long_rows or SL
    qb, db = os.path.join(a.bench_dir, "lig-quant-bench"), os.path.join(a.bench_dir, "lig-decode-bench")
    py, peer = sys.executable, os.path.join(HERE, "quant_peer.py")
    if a.from_json:
        st = json.load(open(a.from_json))
        cfg, threads, command, elapsed, log = st["config"], st["threads"], st["command"], st["seconds"], st["log"]
        failed, a.clock, S, SL, RL = st["failed"], st["clock"], cfg["seq"], cfg["long_seq"], st["long_rows"]
        long_sets, dsets, best_variant = st["long_sets"], st["decode_sets"], st["best_variant"]
        a.data = st.get("data", a.data)
        peaks = {int(t): v for t, v in st["peaks"].items()}
        rows, long_rows, dec, peers = st["prefill"], st["long"], st["decode"], st["peers"]
    else:
        os.makedirs(a.data, exist_ok=True)
        pre_js, long_js, dec_js = (os.path.join(a.data, n) for n in ("prefill.jsonl", "long.jsonl", "decode.jsonl"))
        for p in (pre_js, long_js, dec_js):
            if os.path.exists(p):
                os.remove(p)
        log, failed = [], []
        t_start = time.time()
        command = " ".join([os.path.basename(sys.executable)] + sys.argv)

        # 1. prefill at S, every set, per thread count
        sets = ["--sets", a.sets] if a.sets else []
        for i, t in enumerate(threads):
            p = run([qb, "--s", str(S), "--runs", str(cfg["reps"]), "--threads", str(t), "--clock", a.clock, "--json", pre_js]
                    + sets + (["--dump", a.data] if i == 0 else []), log)
            if p.returncode:
                failed.append("lig-quant-bench S=%d threads=%d: exit %d" % (S, t, p.returncode))
        pre = jsonl(pre_js)
        peaks = {r["threads"]: r["peaks"] for r in pre if "peaks" in r}
        rows = [r for r in pre if "set" in r]
        # 2. the long prefill
        long_sets = a.long_sets
        if long_sets == "auto":
            int8 = [r for r in rows if r["codes"] == "int8" and r["threads"] == threads[0] and r["rows"] == S]
            long_sets = max(int8, key=lambda r: r["gops"])["set"] if int8 else ""
        if long_sets and SL > 0:
            for i, t in enumerate(threads):
                p = run([qb, "--s", str(SL), "--rows", str(RL), "--runs", str(cfg["long_reps"]), "--warmup", "0", "--threads",
                         str(t), "--clock", a.clock, "--sets", long_sets, "--json", long_js] + (["--dump", a.data] if i == 0 else []), log)
                if p.returncode:
                    failed.append("lig-quant-bench S=%d threads=%d: exit %d" % (SL, t, p.returncode))
        long_rows = [r for r in jsonl(long_js) if "set" in r]
        # 3. decode
        dsets = a.decode_sets
        if dsets == "-scalar":
            dsets = ",".join(sorted({r["set"] for r in rows} - {"scalar"}, key=lambda s: [x["set"] for x in rows].index(s)))
        p = run([db, "--ctx", cfg["ctx"], "--batch", cfg["batch"], "--next-n", cfg["next_n"], "--forms", "bf16,fp8,int8",
                 "--threads", a.threads, "--reps", str(cfg["decode_reps"]), "--prefill", "0", "--no-unsplit", "--sets", dsets,
                 "--json", dec_js, "--dump", a.data], log)
        if p.returncode:
            failed.append("lig-decode-bench: exit %d" % p.returncode)
        dec = jsonl(dec_js)
        # 4. the PyTorch peer (one process per step: torch's import is seconds on a loaded machine)
        peers = []

        def peer_run(args, variants, reps, warmup=1):
            p = run([py, peer] + args + ["--variants", variants, "--threads", a.threads, "--reps", str(reps), "--fp32-reps",
                                         str(min(reps, a.peer_fp32_reps)), "--warmup", str(warmup)], log)
            if p.returncode:
                failed.append("quant_peer.py %s: exit %d" % (" ".join(args), p.returncode))
            peers.extend(json.loads(l) for l in p.stdout.splitlines() if l.startswith("{"))

        peer_run(["prefill", "--data", a.data, "--seq", str(S), "--forms", "fp8,int8"], "bf16,fp32", cfg["peer_reps"])
        best_variant = {}
        for form in ("fp8", "int8"):
            cands = [p for p in peers if p["peer"] == "prefill" and p["form"] == form and p["threads"] == threads[0]]
            best_variant[form] = min(cands, key=lambda p: p[a.clock + "_median"])["variant"] if cands else "bf16"
        if long_rows:
            for form in ("fp8", "int8"):
                peer_run(["prefill", "--data", a.data, "--seq", str(SL), "--dump-rows", str(RL), "--rows",
                          str(min(RL, cfg["peer_long_rows"])), "--forms", form], best_variant[form], 1, warmup=0)
        peer_run(["decode", "--data", a.data, "--batch", cfg["batch"], "--ctx", cfg["ctx"], "--next-n", cfg["next_n"],
                  "--forms", "fp8"], "bf16,fp32", cfg["peer_reps"])
        elapsed = time.time() - t_start
        state = dict(cpu=cpu_name(), command=command, clock=a.clock, data=a.data, seconds=elapsed, config=cfg, threads=threads, peaks=peaks,
                     prefill=rows, long=long_rows, long_rows=RL, long_sets=long_sets, decode_sets=dsets, best_variant=best_variant,
                     decode=dec, peers=peers, log=log, failed=list(failed))
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        json.dump(state, open(a.json, "w"), indent=1)

    # 5. tables
    md = []
    out = md.append
    clock = "wall-clock" if a.clock == "wall" else "process CPU time (a 2-thread rate is per core)"
    out("- **CPU**: %s (%d logical CPUs); %s" % (cpu_name(), os.cpu_count() or 0, platform.platform()))
    cpu_s = ", %.0f s of CPU" % sum(l["cpu_seconds"] for l in log) if log and all("cpu_seconds" in l for l in log) else ""
    out("- **Command**: `%s` (%.0f s in all%s; %s); torch %s" % (
        command, elapsed, cpu_s, clock, peers[0]["torch"] if peers else "-"))
    out("- **Medians**: lig prefill of %d runs (S = %d: %d, no warm-up), decode of %d, PyTorch of %d (fp32 variant: %d)"
        % (cfg["reps"], SL, cfg["long_reps"], cfg["decode_reps"], cfg["peer_reps"], a.peer_fp32_reps))
    for t in threads:
        if t in peaks:
            out("- **Unit peaks, %d thread(s), GOP/s**: %s" % (t, ", ".join("%s %.1f" % (LABEL.get(k, k), v) for k, v in peaks[t].items())))
    out("")

    def peer_rate(mode, form, t, **shape):
        cands = [p for p in peers if p["peer"] == mode and p["form"] == form and p["threads"] == t
                 and all(p.get(k) == v for k, v in shape.items())]
        if not cands:
            return None
        return min(cands, key=lambda p: p[a.clock + "_median"])

    def prefill_table(title, rs, seq, peer_rows):
        out("### %s" % title)
        out("")
        out("| set | codes | threads | kernels | rows | GOP/s | unit (peak) | % of peak | lig bf16 GOP/s | quant / bf16 | "
            "PyTorch GOP/s (variant) | lig / PyTorch | recall mean / min | check |")
        out("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rs:
            pk = peaks.get(r["threads"], {}).get(r["unit"], 0)
            pr = peer_rate("prefill", r["codes"], r["threads"], S=seq, rows=peer_rows) if r["rows"] >= peer_rows else None
            pg = prefill_ops(seq, peer_rows) / pr[a.clock + "_median"] * 1e-9 if pr else 0
            out("| %s | %s | %d | %s | %d | %.1f | %s (%.1f) | %s | %.1f | %.2fx | %s | %s | %.4f / %.4f | %s |" % (
                r["set"], r["codes"].upper(), r["threads"], r["kernels"], r["rows"], r["gops"], LABEL.get(r["unit"], r["unit"]), pk,
                pct(r["gops"] / pk if pk else 0), r["bf16_gops"], r["gops"] / r["bf16_gops"] if r["bf16_gops"] else 0,
                "%.1f (%s)" % (pg, pr["variant"]) if pr else "-", "%.1fx" % (r["gops"] / pg) if pg else "-",
                r["recall_mean"], r["recall_min"], r["check"]))
            if not r["check"].startswith("ok"):
                failed.append("prefill %s %s threads %d: %s" % (r["set"], r["codes"], r["threads"], r["check"]))
        out("")

    prefill_table("Prefill, S = %d (scalar: the last 128 rows; PyTorch: all rows, its fastest variant)" % S, rows, S, S)
    if long_rows:
        prefill_table("Prefill, S = %d, %d rows, set %s, %d run (PyTorch: the last %d rows, variant %s)"
                      % (SL, RL, long_sets, cfg["long_reps"], min(RL, cfg["peer_long_rows"]),
                         ", ".join("%s %s" % kv for kv in best_variant.items())), long_rows, SL,
                      min(RL, cfg["peer_long_rows"]))
    out("### The PyTorch formulation (every variant timed)")
    out("")
    out("| mode | shape | form | threads | variant | wall s | CPU s | lig-counted GOP/s | agreement with lig's selection (same codes) | recall vs lig's bf16 selection |")
    out("|---|---|---|---|---|---|---|---|---|---|")
    for p in peers:
        if p["peer"] == "prefill":
            shape, ops = "S=%d rows=%d" % (p["S"], p["rows"]), prefill_ops(p["S"], p["rows"])
        else:
            shape, ops = "B=%d n=%d C=%d" % (p["B"], p["next_n"], p["ctx"]), decode_ops(p["B"], p["next_n"], p["ctx"])
        out("| %s | %s | %s | %d | %s | %.4f | %.4f | %.1f | %.4f | %.4f |" % (
            p["peer"], shape, p["form"], p["threads"], p["variant"], p["wall_median"], p["cpu_median"],
            ops / p[a.clock + "_median"] * 1e-9, p["agree_lig"], p["recall_bf16"]))
    out("")

    # decode: one table per set; a row per (shape, form); 1-thread figures and the 2-thread speedup
    pre_rate = {(r["set"], r["codes"], r["threads"]): r["gops"] for r in rows if r["rows"] == S}
    for r in rows:
        pre_rate[(r["set"], "bf16", r["threads"])] = r["bf16_gops"]
    t1 = threads[0]
    for s in dsets.split(","):
        rs = [r for r in dec if r["set"] == s]
        if not rs:
            continue
        out("### Decode, set %s: one step of B x next_n rows against C keys each (%d thread(s); the other thread counts' speedup)" % (s, t1))
        out("")
        head = (["B", "next_n", "C", "form", "kernels", "ms wall / CPU", "GOP/s", "% of unit peak", "stream GB/s",
                 "step's % of stream", "decode / prefill rate"] + ["%dT / %dT (wall)" % (t, t1) for t in threads[1:]]
                + ["recall mean / min", "PyTorch ms, fp8 cache (variant)", "lig / PyTorch", "check"])
        out("| " + " | ".join(head) + " |")
        out("|" + "---|" * len(head))
        for r in rs:
            if r["threads"] != t1:
                continue
            w, c = med(r["wall_ms"]), med(r["cpu_ms"])
            tm = w if a.clock == "wall" else c
            g = r["ops"] / tm * 1e-6
            pk = peaks.get(t1, {}).get(r["unit"], 0)
            sw, sc = med(r["stream_wall_ms"]), med(r["stream_cpu_ms"])
            st = sw if a.clock == "wall" else sc
            pr = pre_rate.get((s, r["form"], t1))
            others = []
            for t in threads[1:]:
                o = [x for x in rs if x["threads"] == t and x["form"] == r["form"] and x["B"] == r["B"] and x["ctx"] == r["ctx"]
                     and x["next_n"] == r["next_n"]]
                others.append("%.2fx" % (w / med(o[0]["wall_ms"])) if o else "-")
            pp = peer_rate("decode", "fp8", t1, B=r["B"], ctx=r["ctx"], next_n=r["next_n"]) if r["form"] != "bf16" else None
            pms = pp[a.clock + "_median"] * 1e3 if pp else 0
            cells = ([r["B"], r["next_n"], r["ctx"], r["form"], r["kernels"], "%.3f / %.3f" % (w, c), "%.1f" % g,
                      pct(g / pk if pk else 0), "%.1f" % (r["bytes"] / st * 1e-6 if st else 0), pct(st / tm if tm else 0),
                      pct(g / pr) if pr else "-"] + others
                     + ["%.4f / %.4f" % (r["recall_mean"], r["recall_min"]) if "recall_mean" in r else "-",
                        "%.2f (%s)" % (pms, pp["variant"]) if pp else "-", "%.1fx" % (pms / tm) if pp else "-", r["check"]])
            out("| " + " | ".join(str(x) for x in cells) + " |")
        out("")
    for r in dec:
        if not r["check"].startswith("ok"):
            failed.append("decode %s %s B=%d n=%d C=%d threads %d: %s" % (r["set"], r["form"], r["B"], r["next_n"], r["ctx"],
                                                                          r["threads"], r["check"]))

    # the targets (1 thread)
    out("### Targets (1 thread)")
    out("")
    for r in rows:
        if r["threads"] != 1 or r["set"] == "scalar" or r["rows"] != S:
            continue
        pk = peaks.get(1, {})
        frac = r["gops"] / pk[r["unit"]] if pk.get(r["unit"]) else 0
        if r["codes"] == "int8":
            line = "- %s INT8: %s of the %s peak (target 70%%)" % (r["set"], pct(frac), LABEL.get(r["unit"]))
            bu = BF16_UNIT.get(r["set"])
            if bu and pk.get(bu) and pk.get(r["unit"], 0) >= 2 * pk[bu]:
                line += "; %.2fx lig's bf16 forward (target 1.6x: the int8 peak is %.1fx the bf16 path's)" % (
                    r["gops"] / r["bf16_gops"], pk[r["unit"]] / pk[bu])
            out(line)
        else:
            out("- %s FP8: %s of the %s peak (target 65%%)" % (r["set"], pct(frac), LABEL.get(r["unit"])))
    for s in dsets.split(","):
        for form in ("fp8", "int8", "bf16"):
            d1 = [r for r in dec if r["set"] == s and r["form"] == form and r["B"] == 1 and r["next_n"] == 1 and r["ctx"] == 65536]
            if not d1:
                continue
            by_t = {r["threads"]: r for r in d1}
            if 1 not in by_t:
                continue
            r1 = by_t[1]
            tm = med(r1["wall_ms"]) if a.clock == "wall" else med(r1["cpu_ms"])
            g, pr = r1["ops"] / tm * 1e-6, pre_rate.get((s, form, 1))
            line = "- decode %s %s, B = 1, next_n = 1, 64K: %s of the prefill rate (target 60%%)" % (s, form, pct(g / pr) if pr else "-")
            if 2 in by_t:
                line += "; 2 threads %.2fx 1 thread, wall (target 1.8x)" % (med(r1["wall_ms"]) / med(by_t[2]["wall_ms"]))
            out(line)
    out("")
    if log:
        out("### Steps (wall s, CPU s of all the step's threads)")
        out("")
        out("| step | wall s | CPU s | exit |")
        out("|---|---|---|---|")
        for l in log:
            out("| `%s` | %.1f | %s | %d |" % (l["cmd"].replace(HERE + "/", "bench/").replace(a.data, "DATA"), l["seconds"],
                                             "%.1f" % l["cpu_seconds"] if "cpu_seconds" in l else "-", l["rc"]))
        out("")
    if failed:
        out("**Failures**: " + "; ".join(failed))
    text = "\n".join(md)
    print(text)
    if a.md:
        open(a.md, "w").write(text + "\n")
    print("\n%.0f s; raw results in %s" % (elapsed, a.from_json or a.json), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
