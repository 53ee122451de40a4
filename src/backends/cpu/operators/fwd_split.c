#include "backends/cpu/operators/fwd_split.h"

#include "backends/cpu/operators/fwd_engine.h"
#include "backends/cpu/operators/topk.h"
#include "core/tuning.h"

void lig_fwd_rows_span(const lig_unit *x, int64_t m, int64_t *lo, int64_t *hi) {
    *lo = INT64_MAX;
    *hi = -1;
    for (int64_t i = 0; i < m; i++)
        if (x[i].hi >= x[i].lo) {
            *lo = x[i].lo < *lo ? x[i].lo : *lo;
            *hi = x[i].hi > *hi ? x[i].hi : *hi;
        }
}

int64_t lig_fwd_split_stripe_rows(int64_t G, int64_t rows) {
    const int64_t most = G > 0 ? LIG_FWD_STRIPE_COLUMNS / G : LIG_FWD_MAX_ROWS;
    const int64_t r = most > LIG_FWD_MAX_ROWS ? LIG_FWD_MAX_ROWS : most;
    return r > rows ? r : rows;
}

bool lig_fwd_list_stripes(const lig_problem *pr, int64_t rows, lig_fwd_stripes *out) {
    int64_t n = 0;
    for (int64_t b = 0; b < pr->B; b++) {
        const int64_t per_head = (pr->bt.lq[b] + rows - 1) / rows;
        if (per_head > LIG_FWD_MAX_STRIPES || n + per_head * pr->N2 > LIG_FWD_MAX_STRIPES) return false;
        n += per_head * pr->N2;
    }
    out->n = 0;
    for (int64_t b = 0; b < pr->B; b++)
        for (int64_t t0 = 0; t0 < pr->bt.lq[b]; t0 += rows)
            for (int64_t g = 0; g < pr->N2; g++) {
                lig_fwd_stripe *st = &out->stripe[out->n++];
                const int64_t m = pr->bt.lq[b] - t0 < rows ? pr->bt.lq[b] - t0 : rows;
                *st = (lig_fwd_stripe){.row0 = pr->bt.row_prefix[b] + t0, .m = m, .g = g, .slices = 1};
                lig_unit x[LIG_FWD_MAX_ROWS];
                for (int64_t i = 0; i < m; i++) x[i] = lig_unit_decode(pr, (st->row0 + i) * pr->N2 + g);
                lig_fwd_rows_span(x, m, &st->lo, &st->hi);
            }
    return true;
}

int64_t lig_fwd_split_slots(int64_t heap_cap) {
    const uint64_t per = sizeof(lig_candidate) * (uint64_t)(heap_cap > 0 ? heap_cap : 1);
    const uint64_t fit = LIG_FWD_SPLIT_BUDGET / per;
    const int64_t n = fit < LIG_FWD_SPLIT_SLOTS ? (int64_t)fit : LIG_FWD_SPLIT_SLOTS;
    return n >= 2 ? n : 0;
}

/* At most `want` slices per stripe, none shorter than min_keys (0: one slice); the slots used. */
static int64_t cut_stripes(lig_fwd_stripes *sp, int64_t block, int64_t min_keys, int64_t want) {
    int64_t slots = 0;
    sp->jobs = sp->merge_rows = 0;
    for (int64_t i = 0; i < sp->n; i++) {
        lig_fwd_stripe *st = &sp->stripe[i];
        const int64_t keys = st->hi >= st->lo ? st->hi - st->lo + 1 : 0;
        int64_t slices = min_keys > 0 ? keys / min_keys : 1;
        slices = slices > want ? want : slices < 1 ? 1 : slices;
        /* whole blocks per slice, then as many slices as that length needs */
        const int64_t per = (keys + slices - 1) / slices;
        st->slice_keys = per > 0 ? (per + block - 1) / block * block : block;
        st->slices = keys > 0 ? (keys + st->slice_keys - 1) / st->slice_keys : 1;
        st->first_job = sp->jobs;
        st->slot = slots;
        sp->jobs += st->slices;
        if (st->slices > 1) {
            sp->merge_rows += st->m;
            slots += st->slices * st->m;
        }
    }
    return slots;
}

void lig_fwd_split_stripes(lig_fwd_stripes *sp, int64_t K, int64_t block, int64_t split_keys, int64_t slots) {
    int64_t min_keys = split_keys;
    if (split_keys < 0) min_keys = LIG_FWD_SPLIT_MIN_KEYS > 4 * K ? LIG_FWD_SPLIT_MIN_KEYS : 4 * K;
    int64_t want = slots > 0 ? (LIG_FWD_SPLIT_JOBS + sp->n - 1) / sp->n : 1;
    /* fewer slices until the (row, slice) pairs fit the region; one slice each needs no slot */
    while (cut_stripes(sp, block, min_keys, want) > slots) want = want > 2 ? want / 2 : 1;
}

int64_t lig_fwd_split_keys(void) { return lig_tuning_current().fwd_split_keys; }
