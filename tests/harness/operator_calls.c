#include "operator_calls.h"

#include <string.h>

#include "backward_checks.h"
#include "case_generators.h"
#include "framework.h"
#include "forward_kl_checks.h"

void op_call_forward(op_call *c, int t, int n)
{
    th_rng r = th_rng_make(73000u + 100u * (uint64_t)t + (uint64_t)n);
    fwd_gen_opts o;
    fwd_gen_opts_default(&o);
    o.tie_heavy = n % 4 == 0;
    tcase *tc = &c->tc;
    tc_init(tc);
    tc->dtype = suite_float_dtypes[(t + n) % 3];
    tc_set_dims(tc, 2, 2 * (1 + t % 2), 1 + t % 2, 16, 8);
    gen_layout(&r, tc, 0, 40, 60, 0, 0, 1);
    fwd_gen_data(&r, tc, &o);
    c->op = &suite_forward;
    c->sc.tc = tc;
    c->sc.with_values = 1;
    c->sc.val_dtype = LIG_FLOAT32;
}

void op_call_kl(op_call *c, int t, int n)
{
    th_rng r = th_rng_make(73000u + 100u * (uint64_t)t + (uint64_t)n);
    klcase *kc = &c->kc;
    kl_init(kc);
    kc->ndim = 2;
    kc->shape[0] = 300;
    kc->shape[1] = 16;
    kc->has_indices = n % 3 != 0;
    kc->v_dtype = suite_float_dtypes[(t + n) % 3];
    kl_alloc(kc);
    kl_gen_opts o;
    kl_gen_opts_default(&o);
    kl_gen_data(&r, kc, &o);
    c->op = &suite_kl;
    c->sc.kc = kc;
}

void op_call_backward(op_call *c, int t, int n)
{
    th_rng r = th_rng_make(74000u + 100u * (uint64_t)t + (uint64_t)n);
    const int deterministic = n % 2 == 0;
    const int64_t n2 = 1 + t % 2;
    gen_contended_case(&r, &c->tc, suite_float_dtypes[(t + n) % 3], !deterministic, 2 * n2, n2, n % 3 == 2);
    c->tc.deterministic = deterministic;
    c->tc.dw_dtype = n % 3 == 1 ? LIG_FLOAT32 : c->tc.dtype;
    c->op = &suite_backward;
    c->sc.tc = &c->tc;
}

void op_call_mixed(op_call *c, int t, int i)
{
    memset(c, 0, sizeof *c);
    const int round = i / 3;
    switch (i % 3) {
    case 0: op_call_forward(c, t, 2 * round); break;
    case 1: op_call_kl(c, t, 2 * round + 1); break;
    default: op_call_backward(c, t, round); break;
    }
}

int op_call_same_bytes(const op_call *c, const inst_result *again, const char *label)
{
    if (!CHECK(again->st1 == LIG_SUCCESS && again->st2 == LIG_SUCCESS, "%s: rerun failed: %s", label, again->message))
        return 0;
    int same = 1;
    for (int o = 0; o < c->op->n_outputs; o++) {
        same &= CHECK(again->raw_bytes[o] == c->res.raw_bytes[o] &&
                          memcmp(again->raw[o], c->res.raw[o], again->raw_bytes[o]) == 0,
                      "%s: %s bytes differ from the first run", label, c->op->output_names[o]);
    }
    return same;
}

void op_call_free(op_call *c)
{
    inst_result_free(&c->res);
    if (c->op == &suite_kl) {
        kl_free(&c->kc);
    } else {
        tc_free(&c->tc);
    }
}
