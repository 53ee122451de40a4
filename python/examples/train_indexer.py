"""Trains a lightning indexer from scratch with lig, the way a PyTorch user would.

The Python twin of the C demo's earlier form (examples/train_indexer.c now learns a main
attention through lig_sparse_indexer_kl_loss; this one keeps the hidden teacher). Each step draws a fresh sequence of S tokens with
random features x_s (F dims). A hidden teacher (standing in for the main attention) scores key s
for query t as T(t, s) = (A x_t) . (B x_s) / tau. The last Lq tokens are queries aligned to the end
of the keys (sparse_mode 3). The indexer (an nn.Module) has DeepSeek-V3.2's head shape (N1 heads,
one key head, D dims) and learns projections of the features:

    q_th = Wq_h x_t,   k_s = Wk x_s,   w_th = u_h

``lig.lightning_indexer`` selects the top-k keys per query and returns their scores; the target p
over those slots is the teacher's attention restricted to them and L1-normalised (DeepSeek-V3.2's
sparse-stage objective); the loss is sum_t KL(p_t || softmax(I_t)) -- lig's fused KL step by default
(``--kl torch`` writes it in plain torch instead) -- and ``loss.backward()`` runs lig's C backward
(dQ, dK, dW), which autograd takes to Wq, Wk and u. Adam does the rest. Recall@k compares the
indexer's selection with the teacher's own top-k: chance is k / visible keys.

    python train_indexer.py [--keys 4096] [--queries 128] [--heads 64] [--dim 128] [--topk 256]
                            [--feat 32] [--rank 4] [--steps 200] [--lr 3e-3] [--threads 0] [--seed 1]
"""
from __future__ import annotations

import argparse
import math
import time

import torch
from torch import nn

import lig

try:
    from tqdm import tqdm
except ImportError:  # the progress bar is optional
    tqdm = None


class LightningIndexer(nn.Module):
    """DeepSeek-V3.2's indexer head shape over token features: N1 query heads, one key head."""

    def __init__(self, feat: int, heads: int, dim: int, generator: torch.Generator):
        super().__init__()
        self.heads, self.dim = heads, dim
        self.Wq = nn.Parameter(torch.randn(heads * dim, feat, generator=generator) / math.sqrt(feat))
        self.Wk = nn.Parameter(torch.randn(dim, feat, generator=generator) / math.sqrt(feat))
        self.u = nn.Parameter(torch.full((heads,), 1.0 / math.sqrt(heads * dim)))

    def forward(self, x: torch.Tensor, queries: int, top_k: int):
        """x: [S, F] features, the last `queries` rows are the queries. Returns (indices, values)."""
        S = x.shape[0]
        q = (x[S - queries:] @ self.Wq.T).view(1, queries, self.heads, self.dim)
        k = (x @ self.Wk.T).view(1, S, 1, self.dim)
        w = self.u.view(1, 1, self.heads).expand(1, queries, self.heads)  # stride 0: read in place
        return lig.lightning_indexer(q, k, w, top_k, sparse_mode=3, values_dtype=torch.float32,
                                     deterministic=True)


def kl_loss_torch(values: torch.Tensor, p: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
    """sum_t KL(p_t || softmax(I_t)) over the selected slots, in plain torch (same as lig's)."""
    counted = indices >= 0
    logq = torch.log_softmax(values.masked_fill(~counted, float("-inf")), dim=-1)
    terms = torch.where(p > 0, p * (torch.log(p.clamp(min=1e-30)) - logq), torch.zeros(()))
    return terms.masked_fill(~counted, 0.0).sum()


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sizes = {"keys": 4096, "queries": 128, "heads": 64, "dim": 128, "topk": 256, "feat": 32, "rank": 4, "steps": 200}
    for name, default in sizes.items():
        ap.add_argument(f"--{name}", type=int, default=default)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--tau", type=float, default=0.5)
    ap.add_argument("--threads", type=int, default=0, help="lig threads (0: default)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kl", choices=["lig", "torch"], default="lig", help="lig's fused KL step or plain torch")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    S, Lq, K = args.keys, min(args.queries, args.keys), args.topk
    N1, D, F, r = args.heads, args.dim, args.feat, args.rank
    if args.threads:
        lig.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(args.seed)

    # the teacher, fixed and hidden
    A = torch.randn(r, F, generator=gen) / math.sqrt(F)
    Bm = torch.randn(r, F, generator=gen) / math.sqrt(F)
    model = LightningIndexer(F, N1, D, gen)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    t_idx = torch.arange(Lq).view(Lq, 1)
    visible = torch.arange(S).view(1, S) <= (S - Lq) + t_idx  # [Lq, S], right-down causal
    chance = K / (S - Lq / 2)

    print(f"lig {lig.__version__}: training a lightning indexer | {S} keys, {Lq} queries "
          f"(each sees {S - Lq + 1}..{S} keys), top-k {K}\n"
          f"indexer: {N1} heads x D={D} from {F}-dim token features | teacher: rank {r} | "
          f"{lig.get_num_threads()} lig threads, {torch.get_num_threads()} torch threads | KL: {args.kl}")

    history = []
    steps = range(1, args.steps + 1)
    show_bar = tqdm is not None and not args.no_progress
    bar = tqdm(steps, desc="train", unit="step") if show_bar else steps
    t_start = time.perf_counter()
    for _ in bar:
        x = torch.randn(S, F, generator=gen)
        indices, values = model(x, Lq, K)  # [1, Lq, K] each

        with torch.no_grad():  # the teacher: attention over the selected slots, and its own top-k
            xq = x[S - Lq:]
            scores = ((xq @ A.T) @ (x @ Bm.T).T / args.tau).masked_fill(~visible, float("-inf"))  # [Lq, S]
            top = scores.topk(min(K, S), dim=-1)
            teacher_top = torch.zeros(Lq, S, dtype=torch.bool)
            teacher_top.scatter_(1, top.indices, torch.isfinite(top.values))
            sel = indices[0].long()
            real = sel >= 0
            picked = torch.gather(scores, 1, sel.clamp(min=0)).masked_fill(~real, float("-inf"))
            p = torch.softmax(picked, dim=-1).masked_fill(~real, 0.0).unsqueeze(0)  # [1, Lq, K]
            hits = (torch.gather(teacher_top, 1, sel.clamp(min=0)) & real).sum().item()
            recall = hits / (Lq * K)

        if args.kl == "lig":
            loss = lig.indexer_kl_loss(values, p, indices)
        else:
            loss = kl_loss_torch(values, p, indices)
        opt.zero_grad(set_to_none=True)
        loss.backward()  # lig's backward: dQ, dK, dW -> Wq, Wk, u
        opt.step()

        mean_loss = loss.item() / Lq
        history.append((mean_loss, recall))
        if show_bar:
            bar.set_postfix(loss=f"{mean_loss:.4f}", recall=f"{recall:.3f}")
    elapsed = time.perf_counter() - t_start
    if show_bar:
        bar.close()

    (l0, r0), (l1, r1) = history[0], history[-1]
    print(f"summary: {args.steps} steps in {elapsed:.1f} s | loss/query {l0:.4f} -> {l1:.4f} | "
          f"recall@{K} {r0:.3f} -> {r1:.3f} (chance {chance:.3f})")
    return {"loss": l1, "recall": r1, "first_loss": l0, "first_recall": r0, "seconds": elapsed}


if __name__ == "__main__":
    main()
