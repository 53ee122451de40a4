/* The KL loss with the main attention's target on the CPU (docs/contract.md 2.5). The backward's
 * walk (indexer_grad.c) runs the units; this file is its dy source: before a unit's walk it
 *   1. lists the unit's counted slots (the backward's rule, in slot order),
 *   2. streams them in blocks through the teacher (teacher_engine.c): S = q . key (+ rope), then
 *      per slot, in fp32 and head order, mass_j = sum_h exp(scale * S[h] - max_h) / sum_h
 *      (or exp(scale * S[h] - lse_h)),
 *   3. scores them with the forward's engine: I_j = sum_h w_h ReLU(q_index_h . key_index_j),
 *   4. in double, per unit: the target p (with sinks, the head mean's normaliser N1 less the
 *      sinks' probabilities, sum_h exp(sink_h - max_h) / sum_h), the softmax y of I over the counted slots, the unit's
 *      loss sum_j p_j (log p_j - log y_j) (terms with p_j = 0 add 0) and dI_j = y_j sum(p) - p_j,
 *      rounded once to fp32 (LIG_KL_TARGET_CANN: dI_j = y_j - p_j and the loss with p and y
 *      clamped below at 1e-8, as CANN's kernel),
 * and the walk takes dI as dy (never rounded to the input dtype). Nothing of size rows x K x N1
 * exists: the scratch holds one block of slots and K floats per thread. The unit losses are
 * stored per unit and summed in unit order at the end, so the loss does not depend on the thread
 * count or the schedule; dQ, dW and (with the ring) dK are the backward's, hence deterministic. */
#include <math.h>
#include <string.h>

#include "backends/cpu/operators/sparse_grad_kl_loss_plan.h"
#include "backends/cpu/runtime/fp_mode.h"
#include "core/dtype_convert.h"
#include "core/workspace.h"

typedef struct kl_loss_run {
    const lig_cpu_grad_kl_loss_plan *p;
    double *unit_loss; /* [units] */
} kl_loss_run;

/* The main attention's mass at each counted slot: sum over heads of its probability, fp32. */
static void teacher_mass(const lig_cpu_grad_kl_loss_plan *p, char *s, const lig_unit *x, int64_t n, const int64_t *slot,
                         float *mass) {
    const lig_grad_kl_loss_problem *pb = p->pb;
    const lig_problem *pr = &pb->g.pr;
    const lig_kl_loss_scratch *L = &p->scratch;
    const lig_teacher_ctx *tc = &p->teacher;
    const int64_t N1 = pb->N1m;
    float *m = (float *)(void *)(s + L->stat_m), *z = (float *)(void *)(s + L->stat_s);
    for (int64_t h = 0; h < N1; h++) {
        if (pb->has_lse) {
            m[h] = lig_load_float(LIG_FLOAT32, lig_q_row_ptr(&pb->lse, pr, x->b, x->t, h));
            z[h] = 1.0f; /* exp(x - lse) / 1: exact */
        } else {
            m[h] = lig_load_float(LIG_FLOAT32, lig_q_row_ptr(&pb->smax, pr, x->b, x->t, h));
            z[h] = lig_load_float(LIG_FLOAT32, lig_q_row_ptr(&pb->ssum, pr, x->b, x->t, h));
        }
    }
    lig_teacher_begin_row(tc, s + L->teacher, lig_q_row_ptr(&pb->mq, pr, x->b, x->t, 0),
                          pb->has_rope ? lig_q_row_ptr(&pb->mqr, pr, x->b, x->t, 0) : NULL);
    const char **key = (const char **)(void *)(s + L->key), **rope = (const char **)(void *)(s + L->key_rope);
    float *sc = (float *)(void *)(s + L->scores);
    for (int64_t i0 = 0; i0 < n; i0 += tc->block) {
        const int64_t nb = n - i0 < tc->block ? n - i0 : tc->block;
        for (int64_t i = 0; i < nb; i++) {
            key[i] = lig_k_row_ptr(&pb->mk, pr, x->b, slot[i0 + i], 0);
            rope[i] = pb->has_rope ? lig_k_row_ptr(&pb->mkr, pr, x->b, slot[i0 + i], 0) : NULL;
        }
        lig_teacher_scores(tc, s + L->teacher, nb, key, rope, sc);
        lig_teacher_mass(tc, nb, sc, pb->scale, m, z, mass + i0);
    }
}

/* The sinks' share of the row's softmax, sum_h exp(sink_h - max_h) / sum_h, in double and head order
 * from the statistics teacher_mass loaded. A sink of -inf adds nothing (exactly 0, whatever the
 * statistics), so all -inf sinks give the plain head mean bit for bit. */
static double sink_mass(const lig_cpu_grad_kl_loss_plan *p, const char *s) {
    const lig_grad_kl_loss_problem *pb = p->pb;
    const float *m = (const float *)(const void *)(s + p->scratch.stat_m);
    const float *z = (const float *)(const void *)(s + p->scratch.stat_s);
    double total = 0.0;
    for (int64_t h = 0; h < pb->N1m; h++) {
        const float sink = lig_load_float(LIG_FLOAT32, pb->sinks.data + (size_t)(h * pb->sinks.head) * pb->sinks.esize);
        if (sink == -INFINITY) continue;
        total += exp((double)sink - (double)m[h]) / (double)z[h];
    }
    return total;
}

/* Steps 1-4 for unit u (see the top); returns dI of its counted slots and stores its loss. */
static const float *unit_dy(void *ctx, char *s, int64_t u, const lig_unit *x) {
    const kl_loss_run *r = ctx;
    const lig_cpu_grad_kl_loss_plan *p = r->p;
    const lig_grad_problem *g = &p->pb->g;
    const lig_problem *pr = &g->pr;
    const lig_kl_loss_scratch *L = &p->scratch;
    int64_t *slot = (int64_t *)(void *)(s + L->slot);
    float *mass = (float *)(void *)(s + L->mass), *value = (float *)(void *)(s + L->value);
    float *dy = (float *)(void *)(s + L->dy);

    int64_t n = 0;
    const char *ip = lig_q_row_ptr(&g->idx, pr, x->b, x->t, x->g);
    const int64_t istep = g->idx.dim * (int64_t)g->idx.esize;
    for (int64_t j = 0; j < pr->K; j++, ip += istep) {
        const int64_t sk = lig_load_int(g->idx.dtype, ip);
        if (sk >= x->lo && sk <= x->hi) slot[n++] = sk; /* the backward's counted slots; duplicates count */
    }
    r->unit_loss[u] = 0.0;
    if (n == 0) return dy;
    teacher_mass(p, s, x, n, slot, mass);
    lig_fwd_score_unit(p->fwd, &p->fctx, s + L->fwd, (const char **)(void *)(s + L->ikey), (float *)(void *)(s + L->iscore),
                       pr, &g->q, &g->w, &g->k, x, slot, n, value);

    /* the target: head mean (also CANN's; with sinks, over the heads' mass outside the sinks) or
     * L1-normalised mass (a zero total gives p = 0; sinks cancel there) */
    const lig_kl_target target = p->pb->target;
    double norm = target == LIG_KL_TARGET_L1 ? 0.0 : (double)p->pb->N1m;
    if (p->pb->has_sinks && target != LIG_KL_TARGET_L1) norm -= sink_mass(p, s);
    if (target == LIG_KL_TARGET_L1)
        for (int64_t i = 0; i < n; i++) norm += mass[i];
    const double inv = norm != 0.0 ? 1.0 / norm : 0.0;
    double vmax = value[0];
    for (int64_t i = 1; i < n; i++)
        if (value[i] > vmax) vmax = value[i];
    double z = 0.0, total = 0.0;
    for (int64_t i = 0; i < n; i++) {
        z += exp((double)value[i] - vmax);
        total += (double)mass[i] * inv;
    }
    const double log_z = log(z);
    double loss = 0.0;
    if (target == LIG_KL_TARGET_CANN) {
        /* CANN's kernel: dI = y - p, and every slot's term with p and y clamped below at its fp32
         * constant 1e-8f (so a slot with p = 0 still adds 1e-8 (log 1e-8 - log y)) */
        const double floor_v = (double)1e-8f, log_floor = log(floor_v);
        for (int64_t i = 0; i < n; i++) {
            const double t = (double)mass[i] * inv, log_y = (double)value[i] - vmax - log_z, y = exp(log_y);
            const double tc = t > floor_v ? t : floor_v, log_tc = t > floor_v ? log(t) : log_floor;
            const double log_yc = y > floor_v ? log_y : log_floor;
            loss += tc * (log_tc - log_yc);
            dy[i] = (float)(y - t);
        }
        r->unit_loss[u] = loss;
        return dy;
    }
    for (int64_t i = 0; i < n; i++) {
        const double t = (double)mass[i] * inv, log_y = (double)value[i] - vmax - log_z;
        if (t > 0.0) loss += t * (log(t) - log_y); /* 0 log 0 = 0 */
        dy[i] = (float)(exp(log_y) * total - t);
    }
    r->unit_loss[u] = loss;
    return dy;
}

static lig_status run_kl_loss(void *plan, void *workspace, void *stream) {
    const lig_cpu_grad_kl_loss_plan *p = plan;
    const lig_grad_kl_loss_problem *pb = p->pb;
    const lig_problem *pr = &pb->g.pr;
    (void)stream;
    const bool loss_work = pr->units > 0 && pr->K > 0 && pr->key_rows > 0;
    kl_loss_run r = {.p = p, .unit_loss = loss_work ? (double *)(void *)(lig_ws_base(workspace) + p->grad.ws.extra) : NULL};
    const lig_grad_dy_source source = {.ctx = &r, .unit_dy = unit_dy};
    const double per_slot = 8.0 * (double)(pr->G * pr->D) + 2.0 * (double)pb->N1m * (double)(pb->Dm + pb->Dr);
    const double flops = (double)pr->units * (double)pr->K * per_slot;
    /* the index checks, the walk with dI and the stores; nothing is written when the checks fail */
    /* with nothing to multiply (no index dims or heads) the walk still gives every unit to the
     * source: its loss term with I = 0, y uniform */
    const lig_status st = lig_cpu_grad_execute(&p->grad, workspace, loss_work ? &source : NULL, flops);
    if (st != LIG_SUCCESS) return st;
    double total = 0.0;
    for (int64_t u = 0; loss_work && u < pr->units; u++) total += r.unit_loss[u]; /* unit order */
    const float out = (float)total;
    memcpy(pb->loss, &out, sizeof out);
    return LIG_SUCCESS;
}

lig_status lig_cpu_run_sparse_grad_kl_loss(void *plan, void *workspace, void *stream);
lig_status lig_cpu_run_sparse_grad_kl_loss(void *plan, void *workspace, void *stream) {
    return lig_fp_mode_run(run_kl_loss, plan, workspace, stream);
}
