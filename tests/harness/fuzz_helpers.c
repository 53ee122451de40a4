#include "fuzz_helpers.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_budget.h"
#include "case_generators.h"
#include "framework.h"

void fuzz_drive(double share, uint64_t default_seed, int64_t min_iterations, fuzz_iteration_fn one, void *stats)
{
    const uint64_t seed = (uint64_t)th_env_int("LIG_FUZZ_SEED", (int64_t)default_seed);
    const double seconds = th_fuzz_seconds(share);
    const int64_t only = th_env_int("LIG_FUZZ_ITER", -1);
    th_note("fuzz seed %" PRIu64 " (LIG_FUZZ_SEED overrides), %.1f s budget (its share of LIG_FUZZ_SECONDS)", seed,
            seconds);
    int failing = 0;
    if (only >= 0) {
        one(seed, only, stats);
    } else {
        const double deadline = th_now() + seconds;
        for (int64_t iter = 0; iter < min_iterations || th_now() < deadline; iter++) {
            if (!one(seed, iter, stats) && ++failing >= FUZZ_MAX_FAILING_ITERATIONS) {
                th_note("stopping after %d failing iterations", failing);
                break;
            }
        }
    }
    lig_set_num_threads(0);
}

void fuzz_note_defect(fuzz_expect *ex, const char *s)
{
    size_t n = strlen(ex->what);
    snprintf(ex->what + n, sizeof ex->what - n, "%s%s", n ? ", " : "", s);
}

void fuzz_note_invalid(fuzz_expect *ex, const char *s)
{
    ex->invalid1 = 1;
    fuzz_note_defect(ex, s);
}

int64_t fuzz_pick_band(th_rng *r)
{
    double u = th_rng_unit(r);
    if (u < 0.5) {
        return INT64_MAX;
    }
    if (u < 0.85) {
        return th_rng_range(r, 0, 6);
    }
    return th_rng_chance(r, 0.5) ? INT64_MAX - 1 : (int64_t)1 << 40;
}

lig_dtype fuzz_pick_float(th_rng *r)
{
    static const lig_dtype floats[3] = {LIG_FLOAT32, LIG_FLOAT16, LIG_BFLOAT16};
    return floats[th_rng_range(r, 0, 2)];
}

tc_strides fuzz_pick_plain_strides(th_rng *r)
{
    static const tc_strides plain[4] = {TC_CONTIGUOUS, TC_EXPLICIT, TC_PADDED, TC_PERMUTED};
    return plain[th_rng_range(r, 0, 3)];
}

tc_strides fuzz_pick_in_strides(th_rng *r, double p_inner, double p_broadcast, fuzz_expect *ex)
{
    const double u = th_rng_unit(r);
    if (u < p_inner) {
        ex->maybe_refused = 1;
        return TC_INNER_STRIDED;
    }
    if (u < p_broadcast) {
        ex->maybe_refused = 1;
        return TC_BROADCAST;
    }
    return fuzz_pick_plain_strides(r);
}

void fuzz_pick_mode_and_band(th_rng *r, tcase *tc)
{
    tc->p.sparse_mode = th_rng_chance(r, 0.5) ? 0 : 3;
    tc->p.pre_tokens = fuzz_pick_band(r);
    tc->p.next_tokens = fuzz_pick_band(r);
}

void fuzz_pick_forms(th_rng *r, tcase *tc, double p_inner, double p_broadcast, fuzz_expect *ex)
{
    tc->short_form = tc->p.N2 == 1 && th_rng_chance(r, 0.5);
    tc->in_strides = fuzz_pick_in_strides(r, p_inner, p_broadcast, ex);
    tc->out_strides = fuzz_pick_plain_strides(r);
}

void fuzz_pick_heads(th_rng *r, tcase *tc, int zero)
{
    tc->p.B = zero == 0 ? 0 : th_rng_range(r, 1, 3);
    tc->p.N2 = th_rng_range(r, 1, 3);
    tc->p.N1 = zero == 1 ? 0 : tc->p.N2 * th_rng_range(r, 1, 3);
    tc->p.D = zero == 2 ? 0 : th_rng_range(r, 1, 17);
}

void fuzz_layout(th_rng *r, tcase *tc, int64_t s1, int64_t s2)
{
    if (th_rng_chance(r, 0.4)) {
        const int64_t extra_q = th_rng_range(r, 0, 2);
        gen_tnd(r, tc, s1, s2, extra_q, th_rng_range(r, 0, 2));
    } else {
        tc->p.S1 = s1;
        tc->p.S2 = s2;
        tc->has_seq_q = th_rng_chance(r, 0.5);
        tc->has_seq_k = th_rng_chance(r, 0.5);
        gen_bsnd(r, tc);
    }
}

static void drop_seq(tcase *tc, int on_q, fuzz_expect *ex)
{
    if (on_q) {
        tc->has_seq_q = 0;
    } else {
        tc->has_seq_k = 0;
    }
    tc_sync_seq(tc);
    ex->invalid1 = 1;
    fuzz_note_defect(ex, "TND without a length array");
}

void fuzz_defect_seq(th_rng *r, tcase *tc, double p_missing, fuzz_expect *ex)
{
    ref_problem *p = &tc->p;
    if (p->B == 0) {
        return;
    }
    int64_t b = th_rng_range(r, 0, p->B - 1);
    int on_q = th_rng_chance(r, 0.5);
    int64_t *seq = on_q ? tc->seq_q : tc->seq_k;
    int64_t limit = on_q ? p->S1 : p->S2;
    if (p->layout == REF_BSND) {
        if (on_q) {
            tc->has_seq_q = 1;
        } else {
            tc->has_seq_k = 1;
        }
        tc_sync_seq(tc);
        seq[b] = th_rng_chance(r, 0.5) ? limit + th_rng_range(r, 1, 3) : -th_rng_range(r, 1, 3);
        fuzz_note_defect(ex, on_q ? "BSND query length out of range" : "BSND key length out of range");
    } else if (p_missing > 0.0 && th_rng_chance(r, p_missing)) {
        drop_seq(tc, on_q, ex);
    } else if (b > 0 && seq[b - 1] > 0 && th_rng_chance(r, 0.5)) {
        seq[b] = seq[b - 1] - th_rng_range(r, 1, seq[b - 1]);
        fuzz_note_defect(ex, "TND ends decreasing");
    } else {
        seq[p->B - 1] = limit + th_rng_range(r, 1, 3);
        fuzz_note_defect(ex, "TND end above T");
    }
    ex->invalid1 = 1;
}

void fuzz_defect_seq_missing(th_rng *r, tcase *tc, fuzz_expect *ex)
{
    if (tc->p.layout == REF_TND) {
        drop_seq(tc, th_rng_chance(r, 0.5), ex);
    }
}

void fuzz_defect_replace(inst *in, int slot, const lig_tensor *t, const char *what, fuzz_expect *ex)
{
    in->arg[slot] = t;
    fuzz_note_invalid(ex, what);
}

void fuzz_defect_null_tensor(th_rng *r, inst *in, const int *slots, int n, fuzz_expect *ex)
{
    in->arg[slots[th_rng_range(r, 0, n - 1)]] = NULL;
    ex->null_err = 1;
    fuzz_note_defect(ex, "NULL tensor");
}

void fuzz_defect_null_pointer(inst *in, int ws, fuzz_expect *ex)
{
    if (ws) {
        in->workspace_size_arg = NULL;
    } else {
        in->executor_arg = NULL;
    }
    ex->null_err = 1;
    fuzz_note_defect(ex, ws ? "NULL workspace_size" : "NULL executor");
}

/* st is NULLPTR and that is allowed, or INVALID and that is allowed. */
static int status_in(lig_status st, int allow_nullptr, int allow_invalid)
{
    return (allow_nullptr && st == LIG_ERR_PARAM_NULLPTR) || (allow_invalid && st == LIG_ERR_PARAM_INVALID);
}

int fuzz_check_phase1(inst *in, lig_status st, const fuzz_expect *ex, const char *label, fuzz_stats *s)
{
    const int must_fail = ex->null_err || ex->invalid1;
    if (st == LIG_SUCCESS) {
        return CHECK(!must_fail, "%s: phase 1 accepted a defective call", label);
    }
    CHECK(in->executor == NULL, "%s: failed phase 1 left an executor", label);
    in->executor = NULL; /* never destroy what a failed call handed back */
    CHECK(in->message[0] != '\0', "%s: failure without a message", label);
    CHECK(inst_all_unchanged(in), "%s: failed phase 1 wrote to a tensor", label);
    if (must_fail) {
        CHECK(status_in(st, ex->null_err, ex->invalid1 || ex->maybe_refused), "%s: phase 1 returned %d: %s", label,
              (int)st, in->message);
        s->nullptr_errors += st == LIG_ERR_PARAM_NULLPTR;
        s->invalid1 += st == LIG_ERR_PARAM_INVALID;
    } else if (ex->maybe_refused && st == LIG_ERR_PARAM_INVALID) {
        s->refusals++;
    } else {
        CHECK(0, "%s: valid problem rejected in phase 1 with %d: %s", label, (int)st, in->message);
    }
    return 0;
}

void fuzz_check_phase2(inst *in, lig_status st, int may_fail, int must_fail, const suite_op *op, suite_case *sc,
                       const char *label, fuzz_stats *s)
{
    if (st != LIG_SUCCESS) {
        CHECK(may_fail && st == LIG_ERR_PARAM_INVALID, "%s: phase 2 returned %d: %s", label, (int)st, in->message);
        CHECK(in->message[0] != '\0', "%s: phase 2 failure without a message", label);
        CHECK(inst_all_unchanged(in), "%s: failed phase 2 wrote to a tensor", label);
        s->invalid2++;
    } else if (must_fail) {
        CHECK(0, "%s: phase 2 accepted a defective call", label);
    } else {
        CHECK(inst_gaps_ok(in), "%s: an input changed or an output byte outside the view was written", label);
        op->check_inst(in, sc, label);
        s->successes++;
    }
}

void fuzz_stats_note(const char *name, const fuzz_stats *s)
{
    th_note("%s: %" PRId64 " iterations: %" PRId64 " matched the reference, %" PRId64 " refused strides, %" PRId64
            " NULLPTR, %" PRId64 " INVALID in phase 1, %" PRId64 " INVALID in phase 2",
            name, s->iterations, s->successes, s->refusals, s->nullptr_errors, s->invalid1, s->invalid2);
}
