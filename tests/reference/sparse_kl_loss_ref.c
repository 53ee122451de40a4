/* Float64 reference of the KL loss with the main attention's target (see sparse_kl_loss_ref.h). */
#include "reference/sparse_kl_loss_ref.h"

#include <math.h>
#include <stdlib.h>

#include "reference/indexer_fwd_ref.h"

double ref_kl_teacher_prob(const ref_kl_loss_case *c, int64_t row, int64_t key_row, int64_t h) {
    double s = 0.0;
    for (int64_t d = 0; d < c->Dm; d++) s += c->mq[(row * c->N1m + h) * c->Dm + d] * c->mk[key_row * c->Dm + d];
    for (int64_t d = 0; d < c->Dr; d++) s += c->mqr[(row * c->N1m + h) * c->Dr + d] * c->mkr[key_row * c->Dr + d];
    const int64_t at = row * c->N1m + h;
    if (c->lse) return exp(c->scale * s - c->lse[at]);
    return exp(c->scale * s - c->smax[at]) / c->ssum[at];
}

double ref_kl_loss(const ref_kl_loss_case *c, double *dI, double *abs_loss) {
    const ref_problem *p = c->p;
    const int64_t rows = ref_rows_q(p), K = p->K;
    double total = 0.0, size = 0.0;
    double *mass = malloc(sizeof(double) * (size_t)(K ? K : 1)), *score = malloc(sizeof(double) * (size_t)(K ? K : 1));
    int *on = malloc(sizeof(int) * (size_t)(K ? K : 1));
    for (int64_t row = 0; row < rows; row++) {
        ref_row info;
        ref_row_info(p, row, &info);
        for (int64_t g = 0; g < p->N2; g++) {
            const int64_t *ix = c->idx + (row * p->N2 + g) * K;
            double *d = dI ? dI + (row * p->N2 + g) * K : NULL;
            double msum = 0.0;
            int any = 0;
            for (int64_t j = 0; j < K; j++) {
                on[j] = info.valid && ref_classify(p, &info, ix[j]) == REF_SLOT_COUNTED;
                if (d) d[j] = 0.0;
                if (!on[j]) continue;
                any = 1;
                mass[j] = 0.0;
                for (int64_t h = 0; h < c->N1m; h++) mass[j] += ref_kl_teacher_prob(c, row, info.key_base + ix[j], h);
                msum += mass[j];
                score[j] = ref_fwd_score(p, c->qi, c->ki, c->w, row, &info, g, ix[j], NULL);
            }
            if (!any) continue;
            double norm = c->l1 ? msum : (double)c->N1m;
            for (int64_t h = 0; c->sinks && !c->l1 && h < c->N1m; h++) { /* the sinks' mass leaves the target */
                const int64_t at = row * c->N1m + h;
                norm -= c->lse ? exp(c->sinks[h] - c->lse[at]) : exp(c->sinks[h] - c->smax[at]) / c->ssum[at];
            }
            double vmax = -INFINITY, z = 0.0, tmass = 0.0;
            for (int64_t j = 0; j < K; j++)
                if (on[j] && score[j] > vmax) vmax = score[j];
            for (int64_t j = 0; j < K; j++)
                if (on[j]) {
                    z += exp(score[j] - vmax);
                    tmass += norm != 0.0 ? mass[j] / norm : 0.0;
                }
            for (int64_t j = 0; j < K; j++) {
                if (!on[j]) continue;
                const double t = norm != 0.0 ? mass[j] / norm : 0.0, y = exp(score[j] - vmax) / z;
                if (c->cann) { /* CANN: max(p, eps) (log max(p, eps) - log max(y, eps)), eps = 1e-8f */
                    const double eps = (double)1e-8f, tc = fmax(t, eps), yc = fmax(y, eps);
                    const double term = tc * (log(tc) - log(yc));
                    total += term;
                    size += fabs(term);
                    if (d) d[j] = y - t;
                    continue;
                }
                if (t > 0.0) {
                    const double term = t * (log(t) - log(y));
                    total += term;
                    size += fabs(term);
                }
                if (d) d[j] = y * tmass - t;
            }
        }
    }
    free(mass);
    free(score);
    free(on);
    if (abs_loss) *abs_loss = size;
    return total;
}
