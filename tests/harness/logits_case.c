#include "logits_case.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error_bounds.h"
#include "float_formats.h"
#include "framework.h"
#include "problem_case.h"
#include "tensor_buffers.h"

void lspec_default(lspec *s)
{
    memset(s, 0, sizeof *s);
    qspec_default(&s->q);
    s->q.sparse_mode = 0; /* what lig_quant_indexer sees when every range is a row's whole keys */
    s->q.pre_tokens = s->q.next_tokens = INT64_MAX;
    s->q.p_dup_key = 0.05;
    s->clean = 1;
    s->with_logits = 1;
    s->with_topk = 1;
    s->p_empty = 0.15;
    s->range_dtype = LIG_INT64;
    s->logits_dtype = LIG_FLOAT32;
}

static int bf16_logits(const lcase *L) { return L->s.logits_dtype == LIG_BFLOAT16; }

static size_t lesize(const lcase *L) { return bf16_logits(L) ? 2 : 4; }

static uint32_t lsentinel(const lcase *L) { return bf16_logits(L) ? LC_SENTINEL_BF16 : LC_SENTINEL; }

/* The bits of logits element i (counted in the buffer's elements). */
static uint32_t lbits(const lcase *L, size_t i)
{
    if (bf16_logits(L)) {
        uint16_t h;
        memcpy(&h, L->lbuf + i * 2, 2);
        return h;
    }
    uint32_t w;
    memcpy(&w, L->lbuf + i * 4, 4);
    return w;
}

static size_t lcount(const lcase *L) { return L->lbytes / lesize(L); }

int64_t lcase_row_keys(const lcase *L, int64_t row)
{
    const qcase *c = &L->c;
    if (c->p.layout == REF_TND) {
        return row < c->seq_q[0] ? c->lk[0] : -1;
    }
    const int64_t b = row / c->p.S1;
    if (c->p.seq_q != NULL && row % c->p.S1 >= c->seq_q[b]) {
        return -1; /* past the quantized case's valid rows: its data there is poison */
    }
    return c->s.paged ? c->lk[b] : c->p.S2;
}

static void draw_ranges(th_rng *r, lcase *L)
{
    const lspec *s = &L->s;
    for (int64_t row = 0; row < L->rows; row++) {
        const int64_t n = lcase_row_keys(L, row);
        int64_t a = 0, b = 0;
        if (n < 0) {
            a = b = 0;
        } else if (s->full) {
            b = n;
        } else if (th_rng_chance(r, s->p_empty)) {
            a = b = th_rng_range(r, 0, n);
        } else {
            a = th_rng_range(r, 0, n);
            b = th_rng_range(r, 0, n);
            if (a > b) {
                const int64_t t = a;
                a = b;
                b = t;
            }
            if (th_rng_chance(r, 0.25)) {
                b = n; /* up to the last key */
            }
        }
        if (s->start_null) {
            a = 0;
        }
        L->ks[row] = a;
        L->ke[row] = b;
    }
}

static lig_tensor *range_tensor(lcase *L, int slot, const int64_t *v)
{
    const qcase *c = &L->c;
    const lig_dtype dt = L->s.range_dtype;
    L->rbuf[slot] = th_xmalloc((size_t)(L->rows + 1) * 8);
    for (int64_t i = 0; i < L->rows; i++) {
        th_store_int(L->rbuf[slot], dt, i, v[i]);
    }
    const int64_t shape[2] = {c->p.B, c->p.S1};
    return c->p.layout == REF_TND ? lig_create_tensor(L->rbuf[slot], dt, 1, shape + 1, NULL)
                                  : lig_create_tensor(L->rbuf[slot], dt, 2, shape, NULL);
}

void lcase_make(th_rng *r, const lspec *s, lcase *L)
{
    memset(L, 0, sizeof *L);
    L->s = *s;
    qspec q = s->q;
    if (q.layout == REF_TND) {
        q.B = 1; /* one sequence over the T2 keys */
    } else if (!q.paged) {
        q.lengths = 0; /* every row and key of the tensors is valid */
    }
    qcase_make(r, &q, &L->c);
    qcall_make(&L->c, &L->call);
    const qcase *c = &L->c;
    L->rows = c->rows_q;
    L->ks = th_xmalloc((size_t)(L->rows + 1) * sizeof(int64_t));
    L->ke = th_xmalloc((size_t)(L->rows + 1) * sizeof(int64_t));
    draw_ranges(r, L);
    int64_t need = 0;
    for (int64_t row = 0; row < L->rows; row++) {
        const int64_t cols = s->compressed ? L->ke[row] - L->ks[row] : L->ke[row];
        need = cols > need ? cols : need;
    }
    const int64_t N2 = c->p.N2;
    L->W = need + s->extra_cols;
    L->cs = s->strided ? 2 : 1;
    L->hs = L->W * L->cs + (s->strided ? 1 : 0);
    L->rs = N2 * L->hs + (s->strided ? 3 : 0);
    L->short_logits = N2 == 1 && c->s.short_form;
    L->lbytes = (size_t)(L->rows * L->rs) * lesize(L) + 64;
    L->lbuf = th_xmalloc(L->lbytes);
    lcase_reset_outputs(L);
    const int64_t B = c->p.B, S1 = c->p.S1;
    int64_t shape[4], strides[4], n = 0;
    if (c->p.layout != REF_TND) {
        shape[n] = B;
        strides[n++] = S1 * L->rs;
    }
    shape[n] = S1;
    strides[n++] = L->rs;
    if (!L->short_logits) {
        shape[n] = N2;
        strides[n++] = L->hs;
    }
    shape[n] = L->W;
    strides[n++] = L->cs;
    /* no element (no column or no row): NULL data, as torch hands an empty tensor over */
    const int empty = L->W == 0 || L->rows == 0 || N2 == 0;
    L->logits = lig_create_tensor(empty ? NULL : L->lbuf, s->logits_dtype, n, shape, strides);
    L->key_start = range_tensor(L, 0, L->ks);
    L->key_end = range_tensor(L, 1, L->ke);
}

void lcase_free(lcase *L)
{
    lig_destroy_tensor(L->logits);
    lig_destroy_tensor(L->key_start);
    lig_destroy_tensor(L->key_end);
    free(L->rbuf[0]);
    free(L->rbuf[1]);
    free(L->lbuf);
    free(L->ks);
    free(L->ke);
    qcall_free(&L->call);
    qcase_free(&L->c);
}

void lcase_reset_outputs(lcase *L)
{
    const uint32_t sent = lsentinel(L);
    const uint16_t sent16 = (uint16_t)sent;
    for (size_t i = 0; i < lcount(L); i++) {
        if (bf16_logits(L)) {
            memcpy(L->lbuf + i * 2, &sent16, 2);
        } else {
            memcpy(L->lbuf + i * 4, &sent, 4);
        }
    }
    for (int i = QB_IDX; i <= QB_VAL; i++) {
        if (L->call.buf[i] != NULL) {
            memcpy(L->call.buf[i], L->call.snapshot[i], L->call.bytes[i]);
        }
    }
}

lig_status lcase_phase1(lcase *L, const lig_tensor *schedule, uint64_t *ws, lig_executor **exec)
{
    const qcall *k = &L->call;
    const lspec *s = &L->s;
    return lig_quant_logits_get_workspace_size(
        k->query, k->key, k->weights, k->sq, k->sk, k->table, s->start_null ? NULL : L->key_start, L->key_end,
        k->layout_query, k->layout_key, s->clean, s->compressed, s->with_logits ? L->logits : NULL, k->sparse_count,
        s->with_topk ? k->idx : NULL, s->with_topk ? k->val : NULL, schedule, ws, exec);
}

lig_status lcase_run(lcase *L, int threads, const lig_tensor *schedule)
{
    lcase_reset_outputs(L);
    if (threads > 0) {
        lig_set_num_threads(threads);
    }
    uint64_t ws = 0;
    lig_executor *exec = NULL;
    lig_status st = lcase_phase1(L, schedule, &ws, &exec);
    if (threads > 0) {
        lig_set_num_threads(0);
    }
    if (st != LIG_SUCCESS) {
        return st;
    }
    void *mem = ws ? th_xmalloc((size_t)ws) : NULL;
    if (mem) {
        memset(mem, 0xab, (size_t)ws);
    }
    st = lig_quant_logits(mem, ws, exec, NULL);
    free(mem);
    return st;
}

int lcase_inputs_unchanged(const lcase *L)
{
    for (int i = 0; i < QB_IDX; i++) {
        if (L->call.buf[i] != NULL && memcmp(L->call.buf[i], L->call.snapshot[i], L->call.bytes[i]) != 0) {
            return 0;
        }
    }
    for (int64_t i = 0; i < L->rows; i++) {
        if (th_load_int(L->rbuf[0], L->s.range_dtype, i) != L->ks[i] ||
            th_load_int(L->rbuf[1], L->s.range_dtype, i) != L->ke[i]) {
            return 0;
        }
    }
    return 1;
}

int lcase_outputs_unchanged(const lcase *L)
{
    for (size_t i = 0; i < lcount(L); i++) {
        if (lbits(L, i) != lsentinel(L)) {
            return 0;
        }
    }
    for (int i = QB_IDX; i <= QB_VAL; i++) {
        if (L->call.buf[i] != NULL && memcmp(L->call.buf[i], L->call.snapshot[i], L->call.bytes[i]) != 0) {
            return 0;
        }
    }
    return 1;
}

unsigned char *lcase_output_bytes(const lcase *L, size_t *bytes)
{
    const size_t a = L->lbytes, b = L->call.bytes[QB_IDX], c = L->call.buf[QB_VAL] ? L->call.bytes[QB_VAL] : 0;
    unsigned char *out = th_xmalloc(a + b + c + 1);
    memcpy(out, L->lbuf, a);
    memcpy(out + a, L->call.buf[QB_IDX], b);
    if (c) {
        memcpy(out + a + b, L->call.buf[QB_VAL], c);
    }
    *bytes = a + b + c;
    return out;
}

static size_t logit_word(const lcase *L, int64_t row, int64_t g, int64_t j)
{
    return (size_t)(row * L->rs + g * L->hs + j * L->cs);
}

uint32_t lcase_logit_bits(const lcase *L, int64_t row, int64_t g, int64_t j)
{
    return lbits(L, logit_word(L, row, g, j));
}

float lcase_logit(const lcase *L, int64_t row, int64_t g, int64_t j)
{
    const uint32_t b = lcase_logit_bits(L, row, g, j);
    if (bf16_logits(L)) {
        return (float)th_bf16_value((uint16_t)b);
    }
    float v;
    memcpy(&v, &b, sizeof v);
    return v;
}

typedef struct lranked {
    double score, tol, mag; /* tol: the fp32 bound of the score's accumulation; mag: its terms' size */
    int64_t key;
} lranked;

static int cmp_lranked(const void *x, const void *y)
{
    const lranked *a = x, *b = y;
    if (a->score != b->score) {
        return a->score > b->score ? -1 : 1;
    }
    return (a->key > b->key) - (a->key < b->key);
}

static double rank_of(double v) { return isnan(v) ? -INFINITY : v; }

/* The top-k of (row, g) against the ranked reference rk[0 .. len). */
static int check_topk(const lcase *L, int64_t row, int64_t g, const lranked *rk, int64_t len, char *why, size_t wsize)
{
    const qcase *c = &L->c;
    const int64_t K = c->p.K, n = len < K ? len : K, at = (row * c->p.N2 + g) * K;
    const lig_dtype idt = c->s.idx_dtype, vdt = c->s.val_dtype;
    const void *vb = L->call.buf[QB_VAL];
    double prev = INFINITY;
    for (int64_t j = 0; j < K; j++) {
        const int64_t key = th_load_int(L->call.buf[QB_IDX], idt, at + j);
        const double v = vb ? th_load(vb, vdt, at + j) : 0.0;
        if (j >= n) {
            if (key != -1 || (vb && !(v == -INFINITY))) {
                snprintf(why, wsize, "slot %lld: expected padding -1 / -inf, got %lld / %g", (long long)j, (long long)key, v);
                return 0;
            }
            continue;
        }
        if (key < L->ks[row] || key >= L->ke[row]) {
            snprintf(why, wsize, "slot %lld: index %lld outside [%lld, %lld)", (long long)j, (long long)key,
                     (long long)L->ks[row], (long long)L->ke[row]);
            return 0;
        }
        for (int64_t i = 0; i < j; i++) {
            if (th_load_int(L->call.buf[QB_IDX], idt, at + i) == key) {
                snprintf(why, wsize, "slot %lld: index %lld twice", (long long)j, (long long)key);
                return 0;
            }
        }
        if (vb) {
            if (rank_of(v) > prev) {
                snprintf(why, wsize, "slot %lld: value %g above the previous %g", (long long)j, v, prev);
                return 0;
            }
            prev = rank_of(v);
            /* one score, two outputs: the same bits (BFLOAT16 logits: the FLOAT32 value rounded once) */
            const int64_t col = L->s.compressed ? key - L->ks[row] : key;
            if (L->s.with_logits && vdt == LIG_FLOAT32 && bf16_logits(L)) {
                const uint32_t lb = lcase_logit_bits(L, row, g, col), vb16 = th_bf16_bits(v);
                if (lb != vb16 && !(isnan(v) && (lb & 0x7fffu) > 0x7f80u)) {
                    snprintf(why, wsize, "slot %lld: value %a rounds to bf16 0x%04x, the logit of key %lld is 0x%04x",
                             (long long)j, v, (unsigned)vb16, (long long)key, (unsigned)lb);
                    return 0;
                }
            } else if (L->s.with_logits && vdt == LIG_FLOAT32) {
                const float lv = lcase_logit(L, row, g, col), fv = (float)v;
                if (memcmp(&lv, &fv, sizeof lv) != 0) {
                    snprintf(why, wsize, "slot %lld: value %a is not the logit %a of key %lld", (long long)j, (double)fv,
                             (double)lv, (long long)key);
                    return 0;
                }
            }
        }
    }
    if (n == 0) {
        return 1;
    }
    /* the set: exact when the reference separates rank n - 1 from rank n beyond the bounds */
    const int exact = n == len || rk[n - 1].score - rk[n].score > rk[n - 1].tol + rk[n].tol;
    for (int64_t j = 0; j < n; j++) {
        const int64_t key = th_load_int(L->call.buf[QB_IDX], idt, at + j);
        const lranked *mine = NULL;
        int64_t pos = 0;
        for (; pos < len; pos++) {
            if (rk[pos].key == key) {
                mine = &rk[pos];
                break;
            }
        }
        if (exact && pos >= n) {
            snprintf(why, wsize, "slot %lld: key %lld is rank %lld of the reference, outside its top %lld", (long long)j,
                     (long long)key, (long long)pos, (long long)n);
            return 0;
        }
        if (!exact && mine->score + mine->tol < rk[n - 1].score - rk[n - 1].tol) {
            snprintf(why, wsize, "slot %lld: key %lld scores %.17g, below the cut %.17g beyond the bounds", (long long)j,
                     (long long)key, mine->score, rk[n - 1].score);
            return 0;
        }
        if (vb) {
            const double v = th_load(vb, vdt, at + j);
            const double te = tol_element(vdt, mine->score, (double)(c->p.D + c->p.N1 / c->p.N2 + 4), mine->mag);
            if (!(fabs(v - mine->score) <= te)) {
                snprintf(why, wsize, "slot %lld: value %.9g, reference %.17g", (long long)j, v, mine->score);
                return 0;
            }
        }
    }
    return 1;
}

int lcase_check(const lcase *L, const char *label)
{
    const qcase *c = &L->c;
    const ref_problem *p = &c->p;
    const int64_t G = p->N1 / p->N2;
    /* as qcase_check: the dot's D - 1 additions, two scale products, the weight, G - 1 head sums */
    const double steps = (double)(p->D + G + 4);
    const ref_quant_data x = {c->q, c->k, c->w, c->s.has_sq ? c->sq : NULL, c->sk};
    unsigned char *in_view = calloc(lcount(L) + 1, 1);
    int ok = 1;
    char why[300];
    for (int64_t row = 0; row < L->rows && ok; row++) {
        ref_row info;
        ref_row_info(p, row, &info);
        const int64_t ks = L->ks[row], ke = L->ke[row], len = ke - ks;
        for (int64_t g = 0; g < p->N2 && ok; g++) {
            lranked *rk = th_xmalloc((size_t)(len + 1) * sizeof *rk);
            for (int64_t s = ks; s < ke; s++) {
                double mag;
                rk[s - ks].key = s;
                rk[s - ks].score = ref_quant_score(p, &x, row, &info, g, s, &mag);
                rk[s - ks].mag = mag;
                rk[s - ks].tol = tol_accumulated(steps, mag);
            }
            why[0] = 0;
            for (int64_t j = 0; L->s.with_logits && j < L->W && ok; j++) {
                const size_t word = logit_word(L, row, g, j);
                in_view[word] = 1;
                const int64_t key = L->s.compressed ? ks + j : j;
                const int scored = key >= ks && key < ke;
                const float v = lcase_logit(L, row, g, j);
                if (scored) {
                    const lranked *e = &rk[key - ks];
                    const double bound = tol_element(L->s.logits_dtype, e->score, steps, e->mag);
                    if (!(fabs((double)v - e->score) <= bound)) {
                        snprintf(why, sizeof why, "logit (row %lld, head %lld, key %lld) %.9g, reference %.17g (bound %g)",
                                 (long long)row, (long long)g, (long long)key, (double)v, e->score, bound);
                        ok = 0;
                    }
                } else if (L->s.clean ? !(v == -INFINITY) : lbits(L, word) != lsentinel(L)) {
                    snprintf(why, sizeof why, "column %lld of (row %lld, head %lld), scoring [%lld, %lld): %s, got %a",
                             (long long)j, (long long)row, (long long)g, (long long)ks, (long long)ke,
                             L->s.clean ? "expected -inf" : "expected untouched", (double)v);
                    ok = 0;
                }
            }
            if (ok && L->s.with_topk) {
                qsort(rk, (size_t)len, sizeof *rk, cmp_lranked);
                ok = check_topk(L, row, g, rk, len, why, sizeof why);
                if (!ok) {
                    char more[80];
                    snprintf(more, sizeof more, " (row %lld, head %lld, range [%lld, %lld))", (long long)row, (long long)g,
                             (long long)ks, (long long)ke);
                    strncat(why, more, sizeof why - strlen(why) - 1);
                }
            }
            free(rk);
        }
    }
    for (size_t w = 0; ok && L->s.with_logits && w < lcount(L); w++) {
        if (!in_view[w] && lbits(L, w) != lsentinel(L)) {
            snprintf(why, sizeof why, "logits word %zu outside the view was written", w);
            ok = 0;
        }
    }
    if (ok && !L->s.with_logits) {
        for (size_t w = 0; w < lcount(L) && ok; w++) {
            ok = lbits(L, w) == lsentinel(L);
        }
        if (!ok) {
            snprintf(why, sizeof why, "logits written without being passed");
        }
    }
    free(in_view);
    if (!ok) {
        char desc[200];
        qcase_describe(c, desc, sizeof desc);
        CHECK(0, "%s: %s [%s; clean %d compressed %d strided %d topk %d logits %s]", label, why, desc, L->s.clean,
              L->s.compressed, L->s.strided, L->s.with_topk, th_dtype_name(L->s.logits_dtype));
    }
    return ok;
}
