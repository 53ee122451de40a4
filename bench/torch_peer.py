"""The PyTorch peer: lig's three operations written the way a PyTorch user would, at their best.

Same problem as lig-bench: B = 1, S1 = S2 = S, causal (row t sees keys 0..t), N1 query heads over
N2 key heads, D, top-K; q, k ~ N(0,1) and w ~ N(0,1) * N1^-0.5 * D^-0.5 in the user's dtype.

    fwd   DeepSeek-V3.2's reference selection: index scores of every key (einsum, ReLU, weighted
          sum over the heads), -inf on the keys a row cannot see, topk of min(K, visible keys),
          and slots whose score is -inf become -1: each row ends up with min(K, t+1) keys.
          Computed in blocks of query rows, each against only the keys its last row can see,
          under torch.no_grad (the selection has no gradient).
    grad  the backward of I at the selected slots given dy (autograd of sum(I_sel * dy)), with dy
          and the indices from a real forward + KL step made once before the timings.
    step  forward, KL(p || softmax(I_sel)) over the counted slots, backward: one training step.
          The target p is a teacher that partly agrees with the indexer, p ~ exp(I + N(0,1)), made
          from the warm-up's selection (as lig-bench does).

Each is tried in several variants and the fastest is the peer:
    dtype: the user's dtype (bf16/fp16: torch's bf16 GEMMs use AMX where the CPU has it), and
           fp32 (inputs converted inside the timed region);
    form:  "gather": gather the selected keys [rows, K, D] and recompute I_sel from them (the
           DeepSeek reference's gather); "dense": index scores of every visible key with
           autograd, then gather the selected scores (no key gather; the backward runs through
           the dense GEMMs). The forward has only the dense form.
Blocks of query rows keep each block's largest tensor near --block-mib; autograd accumulates
dK across blocks, so the blocked step is exact.

Every variant runs in its own process (peak RSS per configuration; the peak is reset after the
setup through /proc/self/clear_refs where the kernel allows it, so it is the operation's own),
under an address-space cap so that running out of memory is an exception. Timing: one warm-up,
then the median of --reps. Each variant checks a sample of rows against float64 (dQ and dW rows,
or the forward's selection), with a tolerance for its compute dtype.

    python torch_peer.py --op step --seq 2048 --heads 64 --dim 128 --topk 2048 --dtype bf16 --threads 2
prints one JSON object: the fastest variant's fields, plus every variant under "variants".
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

OPS = ("fwd", "grad", "step")


# ---- the operations --------------------------------------------------------------------------

def block_rows(S, N1, K, D, block_mib, itemsize=4):
    """Rows per block: the largest per-block tensor ([rows, N1, keys] scores or [rows, K, D]
    gathered keys) stays near block_mib."""
    widest = max(N1 * max(S, K), K * D)
    rows = (block_mib << 20) // (widest * itemsize)
    return int(max(16, min(S, rows)))


def visible_mask(torch, t0, t1, L):
    """[rows, L]: key s is visible from row t when s <= t (causal, S1 = S2)."""
    return torch.arange(L)[None, :] <= torch.arange(t0, t1)[:, None]


def scores_block(torch, qb, k, wb, L):
    """Index scores of rows qb [c, N2, G, D] against keys 0..L-1: [c, N2, L]."""
    logits = torch.einsum("tghd,sgd->tghs", qb, k[:L])
    return torch.einsum("tghs,tgh->tgs", torch.relu(logits), wb)


def select(torch, scores, vis, K):
    """DeepSeek's selection on one block: -inf where not visible, topk of min(K, keys), -1 where
    the score is -inf. Returns indices [c, N2, K] (int64) and values [c, N2, K] (fp32, -inf)."""
    c, N2, L = scores.shape
    masked = scores.masked_fill(~vis[:, None, :], float("-inf"))
    kk = min(K, L)
    vals, inds = torch.topk(masked, kk, dim=-1)
    inds = inds.masked_fill(vals == float("-inf"), -1)
    idx = torch.full((c, N2, K), -1, dtype=torch.int64)
    out = torch.full((c, N2, K), float("-inf"), dtype=torch.float32)
    idx[:, :, :kk] = inds
    out[:, :, :kk] = vals.float()
    return idx, out


def forward(torch, x, K, cdt, rows):
    """fwd: indices and values of the whole problem, computed in `cdt`."""
    q, k, w = x["q"].to(cdt), x["k"].to(cdt), x["w"].to(cdt)
    S, N2, G, D = q.shape
    idx = torch.empty((S, N2, K), dtype=torch.int64)
    vals = torch.empty((S, N2, K), dtype=torch.float32)
    with torch.no_grad():
        for t0 in range(0, S, rows):
            t1 = min(S, t0 + rows)
            sc = scores_block(torch, q[t0:t1], k, w[t0:t1], t1)
            idx[t0:t1], vals[t0:t1] = select(torch, sc, visible_mask(torch, t0, t1, t1), K)
    return idx, vals


def kl_loss(torch, isel, counted, p):
    """sum over rows of KL(p || softmax(I_sel)) over the counted slots, in fp32."""
    logq = torch.log_softmax(isel.float().masked_fill(~counted, float("-inf")), dim=-1)
    use = counted & (p > 0)
    logp = torch.log(torch.where(use, p, torch.ones_like(p)))
    return torch.where(use, p * (logp - logq), torch.zeros_like(p)).sum()


def selected_scores(torch, form, qb, kl, wb, ib, t0, t1):
    """I at the selected slots of one block, with autograd: [c, N2, K]."""
    safe = ib.clamp(min=0)
    if form == "gather":
        N2 = kl.shape[1]
        kg = kl[safe, torch.arange(N2)[None, :, None]]                 # [c, N2, K, D]
        logits = torch.einsum("tghd,tgjd->tghj", qb, kg)
        return torch.einsum("tghj,tgh->tgj", torch.relu(logits), wb)
    sc = scores_block(torch, qb, kl, wb, t1)                           # dense: [c, N2, t1]
    return sc.gather(-1, safe)


def backward(torch, x, idx, dy, form, cdt, rows):
    """grad: dQ, dK, dW of sum(I_sel * dy), block by block (dK accumulates across blocks)."""
    q, w = x["q"].to(cdt), x["w"].to(cdt)
    kl = x["k"].to(cdt).detach().requires_grad_()  # a fresh leaf: .to() of the same dtype is a no-op
    S = q.shape[0]
    dq, dw = torch.empty_like(q), torch.empty_like(w)
    for t0 in range(0, S, rows):
        t1 = min(S, t0 + rows)
        qb = q[t0:t1].detach().requires_grad_()
        wb = w[t0:t1].detach().requires_grad_()
        ib, dyb = idx[t0:t1], dy[t0:t1].to(cdt)
        isel = selected_scores(torch, form, qb, kl, wb, ib, t0, t1)
        (isel * torch.where(ib >= 0, dyb, torch.zeros_like(dyb))).sum().backward()
        dq[t0:t1], dw[t0:t1] = qb.grad, wb.grad
    return dq, kl.grad, dw


def step(torch, x, K, p, form, cdt, rows):
    """step: forward selection, KL against p, backward. Returns (loss, idx, dq, dk, dw)."""
    q, w = x["q"].to(cdt), x["w"].to(cdt)
    kl = x["k"].to(cdt).detach().requires_grad_()  # a fresh leaf: .to() of the same dtype is a no-op
    S, N2, G, D = q.shape
    dq, dw = torch.empty_like(q), torch.empty_like(w)
    idx = torch.empty((S, N2, K), dtype=torch.int64)
    loss = 0.0
    for t0 in range(0, S, rows):
        t1 = min(S, t0 + rows)
        qb = q[t0:t1].detach().requires_grad_()
        wb = w[t0:t1].detach().requires_grad_()
        vis = visible_mask(torch, t0, t1, t1)
        if form == "gather":  # select without grad, then recompute the selected scores
            with torch.no_grad():
                ib, _ = select(torch, scores_block(torch, qb, kl, wb, t1), vis, K)
            isel = selected_scores(torch, form, qb, kl, wb, ib, t0, t1)
        else:  # dense: one score computation feeds the selection and the gradient
            sc = scores_block(torch, qb, kl, wb, t1)
            ib, _ = select(torch, sc.detach(), vis, K)
            isel = sc.gather(-1, ib.clamp(min=0))
        idx[t0:t1] = ib
        lb = kl_loss(torch, isel, ib >= 0, p[t0:t1])
        lb.backward()
        loss += float(lb.detach())
        dq[t0:t1], dw[t0:t1] = qb.grad, wb.grad
    return loss, idx, dq, kl.grad, dw


# ---- data, target, checks ----------------------------------------------------------------------

def make_inputs(torch, a):
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[a.dtype]
    gen = torch.Generator().manual_seed(0)
    S, N1, N2, D = a.seq, a.heads, a.kv_heads, a.dim
    G = N1 // N2
    q = torch.randn((S, N2, G, D), generator=gen).to(dtype)            # round to nearest even
    k = torch.randn((S, N2, D), generator=gen).to(dtype)
    w = (torch.randn((S, N2, G), generator=gen) * (N1 * D) ** -0.5).to(dtype)
    return {"q": q, "k": k, "w": w, "dtype": dtype}


def make_target(torch, idx, vals):
    """p ~ exp(I + N(0,1)) over the counted slots of each row, normalised."""
    gen = torch.Generator().manual_seed(1)
    counted = idx >= 0
    z = vals.masked_fill(~counted, float("-inf")) + torch.randn(vals.shape, generator=gen)
    return torch.softmax(z, dim=-1).masked_fill(~counted, 0.0)


def kl_dy(torch, idx, vals, p):
    """The KL step's dy = softmax(I) * sum(p) - p on the counted slots (float64, then fp32)."""
    counted = idx >= 0
    v = vals.double().masked_fill(~counted, float("-inf"))
    q = torch.softmax(v, dim=-1)
    dy = q * p.double().sum(-1, keepdim=True) - p.double()
    return dy.masked_fill(~counted, 0.0).float()


def sample_rows(S, K):
    rows = {0, K - 1, K, S // 2, S - 1}
    return sorted(r for r in rows if 0 <= r < S)


def rel_tol(cdt, torch):
    """Max |peer - float64| over a row, as a fraction of the row's max |float64|."""
    return {torch.bfloat16: 3e-2, torch.float16: 5e-3}.get(cdt, 1e-4)


def check_grad_rows(torch, x, idx, dy, dq, dw, cdt):
    """dQ and dW of sample rows against float64, from the indices and dy the peer used."""
    q, k, w = x["q"].double(), x["k"].double(), x["w"].double()
    S, N2, G, D = q.shape
    worst = 0.0
    for t in sample_rows(S, idx.shape[-1]):
        for g in range(N2):
            sel = idx[t, g]
            keep = sel >= 0
            kg = k[sel[keep], g]                                     # [n, D]
            d = dy[t, g][keep].double()
            s = q[t, g] @ kg.T                                       # [G, n]
            ref_dw = (torch.relu(s) * d).sum(-1)
            ref_dq = ((s > 0) * w[t, g][:, None] * d[None, :]) @ kg
            for lib, ref in ((dq[t, g].double(), ref_dq), (dw[t, g].double(), ref_dw)):
                scale = float(ref.abs().max()) or 1.0
                worst = max(worst, float((lib - ref).abs().max()) / scale)
    return worst


def check_dk_keys(torch, x, idx, dy, dk):
    """dK of sample keys against float64: every counted slot of every row that selected them."""
    q, k, w = x["q"].double(), x["k"].double(), x["w"].double()
    S, N2, G, D = q.shape
    worst = 0.0
    for s in sorted({0, S // 3, 2 * S // 3, S - 1}):
        for g in range(N2):
            t, j = (idx[:, g, :] == s).nonzero(as_tuple=True)
            ref = torch.zeros(D, dtype=torch.float64)
            if t.numel():
                sc = torch.einsum("nhd,d->nh", q[t, g], k[s, g])             # [n, G]
                a = (sc > 0) * w[t, g] * dy[t, g, j].double()[:, None]
                ref = torch.einsum("nh,nhd->d", a, q[t, g])
            scale = float(ref.abs().max()) or 1.0
            worst = max(worst, float((dk[s, g].double() - ref).abs().max()) / scale)
    return worst


def check_fwd_rows(torch, x, idx, cdt):
    """Sample rows: min(K, t+1) distinct visible keys, and no unselected key scores clearly
    above a selected one (float64 scores; the margin allows the compute dtype's rounding)."""
    q, k, w = x["q"].double(), x["k"].double(), x["w"].double()
    S, N2, G, D = q.shape
    K = idx.shape[-1]
    eps = {torch.bfloat16: 2.0 ** -7, torch.float16: 2.0 ** -10}.get(cdt, 2.0 ** -20)
    for t in sample_rows(S, K):
        for g in range(N2):
            sel = idx[t, g]
            n = min(K, t + 1)
            chosen = sel[:n]
            if (sel[n:] != -1).any() or (chosen < 0).any() or (chosen > t).any() or chosen.unique().numel() != n:
                return "row %d: expected %d distinct visible keys then -1" % (t, n)
            logits = q[t, g] @ k[: t + 1, g].T                     # [G, t+1]
            score = (torch.relu(logits) * w[t, g][:, None]).sum(0)
            err = 4 * eps * (torch.relu(logits).abs() * w[t, g].abs()[:, None]).sum(0) + eps * score.abs()
            mark = torch.zeros(t + 1, dtype=torch.bool)
            mark[chosen] = True
            if n < t + 1 and float((score - err)[~mark].max()) > float((score + err)[mark].min()):
                return "row %d: an unselected key outscores a selected one beyond rounding" % t
    return None


# ---- one variant, in its own process -----------------------------------------------------------

def reset_peak_rss():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


def peak_rss_kib(reset_ok):
    if reset_ok:
        return status_kib("VmHWM")
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def run_variant(a, dtype_mode, form):
    import torch

    torch.set_num_threads(a.threads)
    x = make_inputs(torch, a)
    cdt = x["dtype"] if dtype_mode == "dtype" else torch.float32
    S, K, N1, D = a.seq, a.topk, a.heads, a.dim
    G = N1 // a.kv_heads
    rows = block_rows(S, N1, K, D, a.block_mib)
    idx = dy = p = None
    if a.op == "grad":  # a real forward + KL step gives the indices and dy (not timed)
        idx, vals = forward(torch, x, K, torch.float32, rows)
        dy = kl_dy(torch, idx, vals, make_target(torch, idx, vals)).to(x["dtype"])
    reset_ok = reset_peak_rss()
    rss_before = status_kib("VmRSS")  # torch's libraries, the inputs and the setup's leftovers

    def once():
        if a.op == "fwd":
            return forward(torch, x, K, cdt, rows)
        if a.op == "grad":
            return backward(torch, x, idx, dy, form, cdt, rows)
        return step(torch, x, K, p, form, cdt, rows)

    if a.op == "step":  # the warm-up's selection is the one the target is made for
        i0, v0 = forward(torch, x, K, cdt, rows)
        p = make_target(torch, i0, v0)
        del i0, v0
    times = []
    for rep in range(a.reps + 1):
        t0 = time.perf_counter()
        out = once()
        dt = time.perf_counter() - t0
        if rep > 0:  # the first run is the warm-up
            times.append(dt)
    rss = peak_rss_kib(reset_ok)

    visible = S * (S + 1) // 2 * a.kv_heads
    if a.op == "fwd":
        counted = int((out[0] >= 0).sum())
        problem = check_fwd_rows(torch, x, out[0], cdt)
        check = "ok (fwd %d rows)" % len(sample_rows(S, K)) if problem is None else "FAILED: " + problem
        flops = 2.0 * G * D * visible
    else:
        if a.op == "grad":
            dq, dk, dw = out
            used_idx, used_dy = idx, dy
        else:
            loss, used_idx, dq, dk, dw = out
            # the dy autograd used inside the step: from the float64 scores of the sample rows
            used_dy = step_dy_rows(torch, x, used_idx, p)
        counted = int((used_idx >= 0).sum())
        worst = check_grad_rows(torch, x, used_idx, used_dy, dq, dw, cdt)
        what = "dQ/dW %d rows" % len(sample_rows(S, K))
        if a.op == "grad":  # the step's dy of every row is autograd's own: dK is checked here only
            worst = max(worst, check_dk_keys(torch, x, used_idx, used_dy, dk))
            what += ", dK 4 keys"
        tol = rel_tol(cdt, torch)
        check = ("ok (%s; worst error %.2g of the row's max|ref|, tolerance %.0e)" % (what, worst, tol)
                 if worst <= tol else "FAILED: %s: error %.3g of max|ref| (tolerance %.0e)" % (what, worst, tol))
        flops = 6.0 * G * D * counted + (2.0 * G * D * visible if a.op == "step" else 0.0)
    median = statistics.median(times)
    res = {"ok": True, "variant": "%s-%s" % ("fp32" if cdt == torch.float32 else a.dtype, form),
           "compute_dtype": str(cdt).replace("torch.", ""), "form": form, "median_s": median,
           "times_s": times, "gflops": flops / median * 1e-9, "flops": flops, "counted_slots": counted,
           "visible_pairs": visible, "block_rows": rows, "peak_rss_kib": rss, "rss_before_kib": rss_before,
           "peak_rss_method": "VmHWM after reset" if reset_ok else "ru_maxrss", "check": check,
           "check_ok": check.startswith("ok"), "torch_version": torch.__version__}
    if a.op == "step":
        res["loss"] = loss
    return res


def step_dy_rows(torch, x, idx, p):
    """dy = softmax(I_sel) * sum(p) - p for the sample rows, from float64 scores (other rows 0)."""
    q, k, w = x["q"].double(), x["k"].double(), x["w"].double()
    S, N2, G, D = q.shape
    dy = torch.zeros(idx.shape, dtype=torch.float64)
    for t in sample_rows(S, idx.shape[-1]):
        for g in range(N2):
            keep = idx[t, g] >= 0
            kg = k[idx[t, g][keep], g]
            isel = (torch.relu(q[t, g] @ kg.T) * w[t, g][:, None]).sum(0)
            pr = p[t, g][keep].double()
            dy[t, g, keep] = torch.softmax(isel, -1) * pr.sum() - pr
    return dy


# ---- the driver: every variant in a process of its own ------------------------------------------

def variants_for(a):
    forms = ["dense"] if a.op == "fwd" else ["gather", "dense"]
    modes = ["dtype"] if a.dtype == "fp32" else ["dtype", "fp32"]
    chosen = [(m, f) for m in modes for f in forms]
    if a.variants != "all":
        want = set(a.variants.split(","))
        chosen = [(m, f) for m, f in chosen if "%s-%s" % (m, f) in want]
    return chosen


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--op", default="grad", choices=OPS)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--heads", type=int, default=64)
    p.add_argument("--kv-heads", type=int, default=1)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--topk", type=int, default=2048)
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--block-mib", type=int, default=256, help="size of the largest per-block tensor")
    p.add_argument("--variants", default="all",
                   help="comma list of dtype-gather, dtype-dense, fp32-gather, fp32-dense (default all)")
    p.add_argument("--mem-limit-gib", type=float, default=20.0)
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)  # internal: run one variant here
    a = p.parse_args()
    if a.heads % a.kv_heads:
        p.error("--heads must be a multiple of --kv-heads")
    base = {"op": a.op, "S": a.seq, "N1": a.heads, "N2": a.kv_heads, "D": a.dim, "K": a.topk,
            "dtype": a.dtype, "threads": a.threads}

    if a.one:
        limit = int(a.mem_limit_gib * (1 << 30))
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        mode, form = a.one.split("-")
        out = dict(base)
        try:
            out.update(run_variant(a, mode, form))
        except (RuntimeError, MemoryError) as e:  # allocation failures under the cap
            out.update({"ok": False, "variant": a.one, "peak_rss_kib": peak_rss_kib(False),
                        "error": "out of memory: " + (str(e).splitlines() or [""])[0][:200]})
        json.dump(out, sys.stdout)
        print()
        return

    results = []
    for mode, form in variants_for(a):
        cmd = [sys.executable, os.path.abspath(__file__), "--one", "%s-%s" % (mode, form)] + [
            arg for arg in sys.argv[1:]]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        try:
            r = json.loads(proc.stdout.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            r = dict(base, ok=False, variant="%s-%s" % (mode, form),
                     error="peer died (exit %d): %s" % (proc.returncode, proc.stderr.strip()[-300:]))
        print("torch_peer: %s %s S=%d thr=%d: %s" % (a.op, r["variant"], a.seq, a.threads,
              "%.3f s, %s" % (r["median_s"], r["check"]) if r.get("ok") else r.get("error")),
              file=sys.stderr, flush=True)
        results.append(r)
    good = [r for r in results if r.get("ok") and r.get("check_ok")]
    out = dict(base)
    if good:
        best = min(good, key=lambda r: r["median_s"])
        out.update(best)
    else:
        out.update({"ok": False, "error": "; ".join("%s: %s" % (r.get("variant"), r.get("error") or r.get("check"))
                                                    for r in results)})
    out["variants"] = results
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
