/* See sparse_logits_walk.h. */
#include "backends/cpu/operators/sparse_logits_walk.h"

#include <math.h>
#include <stdio.h>

#include "backends/cpu/runtime/first_failure.h"
#include "backends/cpu/runtime/threadpool.h"
#include "core/dtype_convert.h"
#include "core/error.h"

/* The row of unit x in the problem's row order (the order of the ranges and the block lists). */
static int64_t row_of(const lig_problem *pr, const lig_unit *x) { return pr->bt.row_prefix[x->b] + x->t; }

static char *out_col(const lig_sparse_blocks *sp, char *row, int64_t col) {
    return row + (size_t)(col * sp->out.dim) * sp->out.esize;
}

/* Every column of unit x's output row: -inf (the walk then writes the scored ones). */
static char *clear_row(const lig_fwd_problem *pb, const lig_unit *x) {
    const lig_sparse_blocks *sp = pb->sparse;
    char *row = lig_q_row_ptr(&sp->out, &pb->pr, x->b, x->t, x->g);
    for (int64_t c = 0; c < sp->cols; c++) lig_store_float(sp->out.dtype, out_col(sp, row, c), -INFINITY);
    return row;
}

/* Calls fn(pb, x, row, key, column) for every key unit x scores, in slot order. */
typedef void (*scored_fn)(const lig_fwd_problem *pb, const lig_unit *x, char *row, int64_t key, int64_t col);

static void each_scored(const lig_fwd_problem *pb, const lig_unit *x, char *row, scored_fn fn) {
    const lig_sparse_blocks *sp = pb->sparse;
    const int64_t r = row_of(&pb->pr, x);
    for (int64_t j = 0; j < sp->count[r]; j++) {
        const int64_t start = lig_sparse_block_start(sp, x->lo, lig_sparse_block_id(sp, r, j));
        const int64_t a = start > x->lo ? start : x->lo, e = start + sp->block_kv - 1 < x->hi ? start + sp->block_kv - 1 : x->hi;
        for (int64_t s = a; s <= e; s++) fn(pb, x, row, s, j * sp->block_kv + (s - start));
    }
}

static void store_zero(const lig_fwd_problem *pb, const lig_unit *x, char *row, int64_t key, int64_t col) {
    (void)x;
    (void)key;
    lig_store_float(pb->sparse->out.dtype, out_col(pb->sparse, row, col), 0.0f);
}

void lig_sparse_trivial(const lig_fwd_problem *pb) {
    for (int64_t u = 0; u < pb->pr.units; u++) {
        const lig_unit x = lig_unit_decode(&pb->pr, u);
        each_scored(pb, &x, clear_row(pb, &x), store_zero);
    }
}

/* Key s of batch b, head g, of a key-row view (the keys or their scales). */
static const char *key_elem(const lig_fwd_problem *pb, const lig_view4 *v, int64_t b, int64_t s, int64_t g) {
    return pb->paged ? lig_paged_key_elem(pb->paged, v, b, s, g) : lig_k_row_ptr(v, &pb->pr, b, s, g);
}

/* The stripe's next chosen block (the lowest first key among the rows' next blocks), the rows that
 * chose it (slots), and the keys any of them scores in it, [*a, *e]; false when every list is done. */
static bool next_block(const lig_fwd_problem *pb, const lig_unit *x, const int64_t *rows, int64_t m, int64_t *pos,
                       lig_sparse_segment *seg, int64_t *a, int64_t *e) {
    const lig_sparse_blocks *sp = pb->sparse;
    int64_t start = INT64_MAX, first[LIG_FWD_MAX_ROWS];
    for (int64_t i = 0; i < m; i++) {
        first[i] = pos[i] < sp->count[rows[i]] ? lig_sparse_block_start(sp, x[i].lo, lig_sparse_block_id(sp, rows[i], pos[i]))
                                               : INT64_MAX;
        if (first[i] < start) start = first[i];
    }
    if (start == INT64_MAX) return false;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    seg->start = start;
    for (int64_t i = 0; i < m; i++) {
        seg->slot[i] = first[i] == start ? pos[i]++ : -1;
        if (seg->slot[i] < 0) continue;
        lo = x[i].lo < lo ? x[i].lo : lo;
        hi = x[i].hi > hi ? x[i].hi : hi;
    }
    /* phase 1 checked that each chosen block holds a key of its row's range: a <= e */
    *a = start > lo ? start : lo;
    *e = start + sp->block_kv - 1 < hi ? start + sp->block_kv - 1 : hi;
    return true;
}

/* The scores of one engine call into the columns of the rows that chose each segment's block. */
static void store_segments(const lig_fwd_problem *pb, const lig_unit *x, char *const *out, int64_t m,
                           const lig_sparse_segment *seg, int64_t nseg, const float *score, int64_t block) {
    const lig_sparse_blocks *sp = pb->sparse;
    for (int64_t k = 0; k < nseg; k++)
        for (int64_t i = 0; i < m; i++) {
            if (seg[k].slot[i] < 0) continue;
            const int64_t a = seg[k].key0 > x[i].lo ? seg[k].key0 : x[i].lo;
            const int64_t e = seg[k].key0 + seg[k].n - 1 < x[i].hi ? seg[k].key0 + seg[k].n - 1 : x[i].hi;
            const float *sc = score + i * block + seg[k].at; /* key seg[k].key0 */
            for (int64_t s = a; s <= e; s++)
                lig_store_float(sp->out.dtype, out_col(sp, out[i], seg[k].slot[i] * sp->block_kv + (s - seg[k].start)),
                                sc[s - seg[k].key0]);
        }
}

/* A stripe: rows x[0 .. m) of one key head in one batch. Their chosen blocks are merged in key
 * order; runs of their keys fill the engine's blocks (a chosen block longer than the room left is
 * cut), each call scoring every key for all m rows, and each row keeps the keys it chose. */
static void run_stripe(const lig_cpu_fwd_plan *p, char *s, const lig_unit *x, int64_t m) {
    const lig_fwd_problem *pb = p->pb;
    const lig_problem *pr = &pb->pr;
    const lig_fwd_scratch_layout *L = &p->scratch;
    const lig_quant_scales *scales = pb->scales;
    const bool has_sq = scales && scales->has_sq;
    const char **key = (const char **)(void *)(s + L->key), **ksc = key + p->ctx.block;
    const char **q = (const char **)(void *)(s + L->q), **w = q + p->ctx.rows, **sq = w + p->ctx.rows;
    float *score = (float *)(void *)(s + L->score);
    lig_sparse_segment *seg = (lig_sparse_segment *)(void *)(s + L->seg);
    int64_t rows[LIG_FWD_MAX_ROWS], pos[LIG_FWD_MAX_ROWS], any = 0;
    char *out[LIG_FWD_MAX_ROWS];
    for (int64_t i = 0; i < m; i++) {
        const int64_t h0 = x[i].g * pr->G;
        rows[i] = row_of(pr, &x[i]);
        pos[i] = 0;
        any += pb->sparse->count[rows[i]];
        out[i] = clear_row(pb, &x[i]);
        q[i] = lig_q_row_ptr(&pb->q, pr, x[i].b, x[i].t, h0);
        w[i] = lig_q_row_ptr(&pb->w, pr, x[i].b, x[i].t, h0);
        if (has_sq) sq[i] = lig_q_row_ptr(&scales->sq, pr, x[i].b, x[i].t, h0);
    }
    if (any == 0) return;
    p->engine->begin_rows(&p->ctx, s + L->engine, m, q, w, has_sq ? sq : NULL);
    const int64_t block = p->ctx.block, b = x[0].b, g = x[0].g;
    lig_sparse_segment cur = {0};
    int64_t a = 0, e = -1; /* the current block's keys not yet scored: a .. e */
    for (;;) {
        int64_t n = 0, nseg = 0;
        while (n < block) {
            if (a > e && !next_block(pb, x, rows, m, pos, &cur, &a, &e)) break;
            const int64_t take = e - a + 1 < block - n ? e - a + 1 : block - n;
            seg[nseg] = cur;
            seg[nseg].key0 = a;
            seg[nseg].n = take;
            seg[nseg++].at = n;
            for (int64_t i = 0; i < take; i++) {
                key[n + i] = key_elem(pb, &pb->k, b, a + i, g);
                if (scales) ksc[n + i] = key_elem(pb, &scales->sk, b, a + i, g); /* the same table when paged */
            }
            n += take;
            a += take;
        }
        if (n == 0) return;
        p->engine->score_block(&p->ctx, s + L->engine, m, n, key, scales ? ksc : NULL, score);
        store_segments(pb, x, out, m, seg, nseg, score, block);
    }
}

int64_t lig_sparse_jobs(const lig_cpu_fwd_plan *p) {
    const lig_problem *pr = &p->pb->pr;
    const int64_t R = p->stripe_rows;
    return (pr->units / pr->N2 + R - 1) / R * pr->N2;
}

/* Job v: rows [v / N2 * R, ...) of key head v % N2, one stripe per batch they reach. */
void lig_sparse_job(const lig_cpu_fwd_plan *p, char *s, int64_t v) {
    const lig_problem *pr = &p->pb->pr;
    const int64_t R = p->stripe_rows, rows_total = pr->units / pr->N2, g = v % pr->N2, r0 = v / pr->N2 * R;
    const int64_t r1 = r0 + R < rows_total ? r0 + R : rows_total;
    lig_unit x[LIG_FWD_MAX_ROWS];
    int64_t m = 0;
    for (int64_t row = r0; row < r1; row++) {
        const lig_unit u = lig_unit_decode(pr, row * pr->N2 + g);
        if (m > 0 && u.b != x[0].b) {
            run_stripe(p, s, x, m);
            m = 0;
        }
        x[m++] = u;
    }
    if (m > 0) run_stripe(p, s, x, m);
}

/* ---- the table check ------------------------------------------------------------------------ */

/* Rows r0 .. r1 - 1 (units of key head 0: the lists are per row): the cache block of every scored
 * key, one entry per chosen block's keys. */
static void scan_rows(void *ctx, int64_t r0, int64_t r1, lig_failure *first) {
    const lig_fwd_problem *pb = ctx;
    const lig_problem *pr = &pb->pr;
    const lig_sparse_blocks *sp = pb->sparse;
    const lig_paged_keys *t = pb->paged;
    for (int64_t r = r0; r < r1; r++) {
        const lig_unit x = lig_unit_decode(pr, r * pr->N2);
        for (int64_t j = 0; j < sp->count[r]; j++) {
            const int64_t start = lig_sparse_block_start(sp, x.lo, lig_sparse_block_id(sp, r, j));
            const int64_t a = start > x.lo ? start : x.lo, e = start + sp->block_kv - 1 < x.hi ? start + sp->block_kv - 1 : x.hi;
            for (int64_t k = a / t->block_size; k <= e / t->block_size; k++) {
                const int64_t block = lig_table_block(t, x.b, k);
                if (block < 0 || block >= t->num_blocks) {
                    *first = (lig_failure){.item = r, .slot = k, .int_value = block};
                    return;
                }
            }
        }
    }
}

lig_status lig_sparse_check_table(const lig_cpu_fwd_plan *p) {
    const lig_fwd_problem *pb = p->pb;
    const lig_problem *pr = &pb->pr;
    if (pb->paged->block_size == 0 || pr->N2 == 0) return LIG_SUCCESS;
    const int64_t rows = pr->units / pr->N2;
    const lig_failure bad = lig_first_failure(rows, lig_threads_for(64.0 * (double)rows * (double)pb->sparse->max_blocks,
                                                                     p->threads), scan_rows, (void *)pb);
    if (bad.item == INT64_MAX) return LIG_SUCCESS;
    const lig_unit x = lig_unit_decode(pr, bad.item * pr->N2);
    return lig_fail(LIG_ERR_PARAM_INVALID,
                    "block_table: expected block numbers in [0, %lld) (num_blocks) for the cache blocks that hold the "
                    "chosen keys of row %lld of batch %lld, got %lld at [%lld,%lld]",
                    (long long)pb->paged->num_blocks, (long long)x.t, (long long)x.b, (long long)bad.int_value,
                    (long long)x.b, (long long)bad.slot);
}
