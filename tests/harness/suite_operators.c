/* The backward, the forward and the KL step behind suite_op (suite.h). */
#include <inttypes.h>
#include <stdio.h>

#include "backward_checks.h"
#include "float_formats.h"
#include "framework.h"
#include "forward_kl_checks.h"
#include "forward_kl_runner.h"
#include "backward_runner.h"
#include "suite.h"

/* ---- backward ---- */

static void grad_run(suite_case *sc, inst_result *res)
{
    run_case(sc->tc, res);
}

static int grad_check_result(suite_case *sc, const inst_result *res, const char *label)
{
    return check_result(sc->tc, res, label);
}

static void grad_describe(const suite_case *sc, char *buf, size_t size)
{
    tc_describe(sc->tc, buf, size);
}

static void grad_setup(suite_case *sc, inst *in)
{
    run_setup(sc->tc, in);
}

static int grad_check_inst(const inst *in, suite_case *sc, const char *label)
{
    return check_inst(in, sc->tc, label);
}

const suite_op suite_backward = {
    .name = "backward",
    .n_outputs = 3,
    .output_names = {"d_query", "d_key", "d_weights"},
    .run = grad_run,
    .check_result = grad_check_result,
    .describe = grad_describe,
    .setup = grad_setup,
    .check_inst = grad_check_inst,
    .stats_reset = check_stats_reset,
    .stats_note = check_stats_note,
};

/* ---- forward ---- */

static void fwd_run_case(suite_case *sc, inst_result *res)
{
    fwd_run(sc->tc, sc->with_values, sc->val_dtype, res);
}

static int fwd_check_run(suite_case *sc, const inst_result *res, const char *label)
{
    return fwd_check_result(sc->tc, sc->val_dtype, res, label);
}


static void fwd_describe(const suite_case *sc, char *buf, size_t size)
{
    char desc[512];
    tc_describe(sc->tc, desc, sizeof desc);
    snprintf(buf, size, "%s values=%s", desc, sc->with_values ? th_dtype_name(sc->val_dtype) : "none");
}

static void fwd_setup_case(suite_case *sc, inst *in)
{
    fwd_setup(sc->tc, sc->with_values, sc->val_dtype, in);
}

static int fwd_check_instance(const inst *in, suite_case *sc, const char *label)
{
    return fwd_check_inst(in, sc->tc, sc->with_values, sc->val_dtype, label);
}

static void fwd_note(const char *what, int64_t min_work)
{
    fwd_check_stats_note(what);
    const fwd_check_stats s = fwd_check_stats_get();
    CHECK(s.cases == 0 || s.selected >= min_work, "%s: %" PRId64 " keys selected, at least %" PRId64 " wanted", what,
          s.selected, min_work);
}

const suite_op suite_forward = {
    .name = "forward",
    .n_outputs = 2,
    .output_names = {"sparse_indices", "sparse_values"},
    .run = fwd_run_case,
    .check_result = fwd_check_run,
    .describe = fwd_describe,
    .setup = fwd_setup_case,
    .check_inst = fwd_check_instance,
    .stats_reset = fwd_check_stats_reset,
    .stats_note = fwd_note,
};

/* ---- KL step ---- */

static void kl_run_case(suite_case *sc, inst_result *res)
{
    kl_run(sc->kc, res);
}

static int kl_check_run(suite_case *sc, const inst_result *res, const char *label)
{
    return kl_check_result(sc->kc, res, label);
}


static void kl_describe_case(const suite_case *sc, char *buf, size_t size)
{
    kl_describe(sc->kc, buf, size);
}

static void kl_setup_case(suite_case *sc, inst *in)
{
    kl_setup(sc->kc, in);
}

static int kl_check_instance(const inst *in, suite_case *sc, const char *label)
{
    return kl_check_inst(in, sc->kc, label);
}

/* Every KL check compares every row: there are no totals to keep. */
static void kl_stats_reset(void)
{
}

static void kl_stats_note(const char *what, int64_t min_work)
{
    (void)what;
    (void)min_work;
}

const suite_op suite_kl = {
    .name = "KL step",
    .n_outputs = 2,
    .output_names = {"loss", "dy"},
    .run = kl_run_case,
    .check_result = kl_check_run,
    .describe = kl_describe_case,
    .setup = kl_setup_case,
    .check_inst = kl_check_instance,
    .stats_reset = kl_stats_reset,
    .stats_note = kl_stats_note,
};
