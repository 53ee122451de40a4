#include "error_cases.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case_generators.h"
#include "framework.h"
#include "problem_case.h"

int contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = hay; *p; p++) {
        size_t i = 0;
        while (i < n && p[i] && tolower((unsigned char)p[i]) == tolower((unsigned char)needle[i])) {
            i++;
        }
        if (i == n) {
            return 1;
        }
    }
    return 0;
}

static int is_ident(char ch)
{
    return isalnum((unsigned char)ch) || ch == '_';
}

/* `word` as a whole identifier. */
static int contains_word(const char *msg, const char *word, size_t len)
{
    for (const char *p = msg; *p; p++) {
        if (strncmp(p, word, len) == 0 && (p == msg || !is_ident(p[-1])) && !is_ident(p[len])) {
            return 1;
        }
    }
    return 0;
}

int names_any(const char *msg, const char *names)
{
    const char *p = names;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (contains_word(msg, p, len)) {
            return 1;
        }
        if (!bar) {
            break;
        }
        p = bar + 1;
    }
    return 0;
}

void check_error_message(const char *label, const char *msg, const char *names)
{
    CHECK(msg[0] != '\0', "%s: empty error message", label);
    CHECK(names_any(msg, names), "%s: message does not name %s: \"%s\"", label, names, msg);
    CHECK(contains_ci(msg, "expected"), "%s: message lacks \"expected\": \"%s\"", label, msg);
    CHECK(contains_ci(msg, "got"), "%s: message lacks \"got\": \"%s\"", label, msg);
}

static lig_status launch_and_keep_message(inst *in, void *workspace, uint64_t size, lig_executor *executor)
{
    const lig_status st = in->launch(workspace, size, executor, NULL);
    snprintf(in->message, sizeof in->message, "%s", lig_get_last_error());
    return st;
}

lig_status errtest_phase2(inst *in, int ws, const char *name, int *not_run)
{
    *not_run = 0;
    switch (ws) {
    case ERRTEST_WS_SHORT:
    case ERRTEST_WS_ZERO:
    case ERRTEST_WS_NULL_PTR:
        /* a case that cannot provoke its error must not pass as if it had */
        if (!CHECK(in->workspace_size > 0,
                   "%s: cannot run: its problem needs no workspace, so phase 2 cannot be given a short or missing "
                   "one (the case needs a problem that needs a workspace)",
                   name)) {
            *not_run = 1;
            return inst_phase2(in, 0);
        }
        if (ws == ERRTEST_WS_NULL_PTR) {
            lig_executor *e = in->executor;
            in->executor = NULL; /* consumed */
            return launch_and_keep_message(in, NULL, in->workspace_size, e);
        }
        return inst_phase2(in, ws == ERRTEST_WS_SHORT ? -1 : -(int64_t)in->workspace_size);
    case ERRTEST_WS_NULL_EXEC:
        return launch_and_keep_message(in, NULL, 0, NULL); /* the real executor goes with the teardown */
    default:
        return inst_phase2(in, 0);
    }
}

void errtest_verdict(const char *name, int phase, lig_status st, lig_status want, lig_status want_alt, inst *in,
                     const char *names, const char *const *has)
{
    const int ok = st == want || (want_alt != LIG_SUCCESS && st == want_alt);
    CHECK(ok, "%s: phase %d returned %d (%s), expected %d; message \"%s\"", name, phase, (int)st,
          lig_status_string(st), (int)want, st == LIG_SUCCESS ? "" : in->message);
    if (st == LIG_SUCCESS) {
        return;
    }
    if (phase == 1) {
        CHECK(in->executor == NULL, "%s: a failed phase 1 left an executor behind", name);
        in->executor = NULL; /* never free what a failed call handed back */
    }
    check_error_message(name, in->message, names);
    for (int i = 0; has != NULL && i < 2; i++) {
        if (has[i] != NULL) {
            CHECK(strstr(in->message, has[i]) != NULL, "%s: message lacks \"%s\": \"%s\"", name, has[i],
                  in->message);
        }
    }
}

void errtest_call_verdict(const char *name, lig_status st, lig_status want, const char *msg, const char *names,
                          lig_executor *exec)
{
    CHECK(st == want, "%s: expected status %d, got %d (%s)", name, (int)want, (int)st, msg);
    if (st != LIG_SUCCESS) {
        check_error_message(name, msg, names);
    }
    if (getenv("LIG_TEST_SHOW_MESSAGES")) {
        th_note("%s: %s", name, msg);
    }
    CHECK(exec == NULL, "%s: a failed phase 1 left an executor", name);
    lig_destroy_executor(exec);
}

void errtest_named_verdict(const char *name, lig_status st, lig_status want, const char *first, lig_executor *exec)
{
    char msg[512];
    snprintf(msg, sizeof msg, "%s", lig_get_last_error());
    errtest_call_verdict(name, st, want, msg, first, exec);
    const size_t n = strlen(first);
    if (st != LIG_SUCCESS) {
        CHECK(strncmp(msg, first, n) == 0 && msg[n] == ':', "%s: message does not start with \"%s:\": \"%s\"", name,
              first, msg);
    }
}

void errtest_base_dims(tcase *tc, void (*edit)(tcase *tc))
{
    tc_init(tc);
    tc->p.N1 = 4;
    tc->p.N2 = 2;
    tc->p.D = 8;
    tc->p.K = 3;
    tc->p.B = 2;
    if (edit != NULL) {
        edit(tc);
    }
}

void errtest_base_layout(th_rng *r, tcase *tc, ref_layout layout)
{
    tc->has_seq_q = tc->has_seq_k = 1;
    if (layout == REF_BSND) {
        tc->p.S1 = 3;
        tc->p.S2 = 5;
        gen_bsnd(r, tc);
        tc->seq_q[0] = 3;
        tc->seq_q[1] = 2;
        tc->seq_k[0] = 5;
        tc->seq_k[1] = 3;
    } else {
        tc->p.layout = REF_TND;
        tc->p.S1 = 4;
        tc->p.S2 = 6;
        tc_alloc(tc);
        tc->seq_q[0] = 2;
        tc->seq_q[1] = 3;
        tc->seq_k[0] = 4;
        tc->seq_k[1] = 5;
    }
}

/* The base problems: BSND S1 = 3, S2 = 5, lengths q (3, 2), k (5, 3); TND T1 = 4, T2 = 6, ends
 * q (2, 3), k (4, 5). */
static void bsnd_q_above(tcase *tc) { tc->seq_q[0] = 4; }
static void bsnd_q_negative(tcase *tc) { tc->seq_q[1] = -1; }
static void bsnd_k_above(tcase *tc) { tc->seq_k[1] = 6; }
static void bsnd_k_negative(tcase *tc) { tc->seq_k[0] = -2; }
static void seq_i32_above(tcase *tc) { tc->seq_dtype = LIG_INT32; tc->seq_k[0] = 6; }
static void seq_i32_negative(tcase *tc) { tc->seq_dtype = LIG_INT32; tc->seq_k[0] = -5; }
static void tnd_q_decreasing(tcase *tc) { tc->seq_q[0] = 3; tc->seq_q[1] = 2; }
static void tnd_k_decreasing(tcase *tc) { tc->seq_k[0] = 5; tc->seq_k[1] = 4; }
static void tnd_q_above(tcase *tc) { tc->seq_q[1] = 5; }
static void tnd_k_above(tcase *tc) { tc->seq_k[1] = 7; }
static void tnd_q_negative(tcase *tc) { tc->seq_q[0] = -1; }
static void tnd_no_q(tcase *tc) { tc->has_seq_q = 0; tc_sync_seq(tc); }
static void tnd_no_k(tcase *tc) { tc->has_seq_k = 0; tc_sync_seq(tc); }
static void tnd_none(tcase *tc) { tc->has_seq_q = tc->has_seq_k = 0; tc_sync_seq(tc); }

#define SEQ_Q "actual_seq_lengths_query"
#define SEQ_K "actual_seq_lengths_key"

const errtest_seq_defect errtest_seq_defects[] = {
    {"BSND query length above S1", REF_BSND, bsnd_q_above, SEQ_Q},
    {"BSND query length negative", REF_BSND, bsnd_q_negative, SEQ_Q},
    {"BSND key length above S2", REF_BSND, bsnd_k_above, SEQ_K},
    {"BSND key length negative", REF_BSND, bsnd_k_negative, SEQ_K},
    {"BSND int32 key length above S2", REF_BSND, seq_i32_above, SEQ_K},
    {"BSND int32 key length negative", REF_BSND, seq_i32_negative, SEQ_K},
    {"TND query ends decreasing", REF_TND, tnd_q_decreasing, SEQ_Q},
    {"TND key ends decreasing", REF_TND, tnd_k_decreasing, SEQ_K},
    {"TND query end above T1", REF_TND, tnd_q_above, SEQ_Q},
    {"TND key end above T2", REF_TND, tnd_k_above, SEQ_K},
    {"TND negative first end", REF_TND, tnd_q_negative, SEQ_Q},
    {"TND without query ends", REF_TND, tnd_no_q, SEQ_Q},
    {"TND without key ends", REF_TND, tnd_no_k, SEQ_K},
    {"TND without any ends", REF_TND, tnd_none, SEQ_Q "|" SEQ_K},
};

const size_t errtest_n_seq_defects = sizeof errtest_seq_defects / sizeof errtest_seq_defects[0];

const errtest_scalar_defect errtest_mode_band_defects[] = {
    {"sparse_mode 1", REF_BSND, ERRTEST_SPARSE_MODE, 1},
    {"sparse_mode 2", REF_BSND, ERRTEST_SPARSE_MODE, 2},
    {"sparse_mode 4", REF_BSND, ERRTEST_SPARSE_MODE, 4},
    {"sparse_mode -1", REF_BSND, ERRTEST_SPARSE_MODE, -1},
    {"pre_tokens -1", REF_BSND, ERRTEST_PRE_TOKENS, -1},
    {"pre_tokens INT64_MIN", REF_BSND, ERRTEST_PRE_TOKENS, INT64_MIN},
    {"next_tokens -1", REF_BSND, ERRTEST_NEXT_TOKENS, -1},
    {"TND next_tokens -7", REF_TND, ERRTEST_NEXT_TOKENS, -7},
};

const size_t errtest_n_mode_band_defects = sizeof errtest_mode_band_defects / sizeof errtest_mode_band_defects[0];

const char *errtest_scalar_name(errtest_scalar which)
{
    static const char *names[3] = {"sparse_mode", "pre_tokens", "next_tokens"};
    return names[which];
}

static unsigned char *apply_edit(const errtest_case *c, inst *in)
{
    switch (c->kind) {
    case ET_NULL_ARG: in->arg[c->target] = NULL; break;
    case ET_REPLACE: inst_replace_arg(in, c->target, c->dtype, c->ndim, c->shape); break;
    case ET_ALIAS: return inst_alias_arg(in, c->target, c->source, c->shift);
    case ET_SELF_OVERLAP: {
        const tbuf *t = &in->buf[c->target];
        int64_t strides[LIG_MAX_DIMS];
        int64_t s = 1;
        for (int i = t->ndim - 1; i >= 0; i--) {
            strides[i] = s;
            s *= t->shape[i];
        }
        strides[1] = 0;
        in->arg[c->target] = inst_adopt(in, lig_create_tensor(t->base, t->dtype, t->ndim, t->shape, strides));
        break;
    }
    case ET_LAYOUT: in->layout = c->str; break;
    case ET_HEAD_NUM: in->head_num = c->value; break;
    case ET_COUNT: in->sparse_count = c->value; break;
    case ET_MODE: in->sparse_mode = c->value; break;
    case ET_PRE: in->pre_tokens = c->value; break;
    case ET_NEXT: in->next_tokens = c->value; break;
    case ET_NULL_WS_SIZE: in->workspace_size_arg = NULL; break;
    case ET_NULL_EXEC_PTR: in->executor_arg = NULL; break;
    default: break;
    }
    return NULL;
}

static void run_case(const errtest_operator *op, const errtest_case *c)
{
    errtest_problem p;
    inst in;
    op->setup(c, &p, &in);
    unsigned char *alias = apply_edit(c, &in);
    if (op->after_edit) op->after_edit(c, &p, &in, alias);
    lig_status st = inst_phase1(&in);
    if (c->phase == 1) {
        errtest_verdict(c->name, 1, st, c->want, c->want_alt, &in, c->names, c->has);
    } else if (CHECK(st == LIG_SUCCESS, "%s: phase 1 must succeed, got %d: %s", c->name, (int)st, in.message)) {
        int not_run = 0;
        st = op->phase2 ? op->phase2(c, &in, &not_run) : errtest_phase2(&in, c->ws, c->name, &not_run);
        if (!not_run) {
            errtest_verdict(c->name, 2, st, c->want, c->want_alt, &in, c->names, c->has);
        }
    }
    if (st != LIG_SUCCESS) {
        CHECK(inst_all_unchanged(&in), "%s: the failed call wrote to an input or output", c->name);
    }
    op->teardown(c, &p, &in);
}

void errtest_run(const errtest_operator *op, const errtest_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int before = th_current_failures();
        run_case(op, &cases[i]);
        if (th_current_failures() != before) {
            th_note("case \"%s\" failed", cases[i].name);
        }
    }
}

void errtest_run_replacements(const errtest_operator *op, const errtest_replacement *defects, size_t n)
{
    errtest_case *cases = th_xcalloc(n, sizeof *cases);
    for (size_t i = 0; i < n; i++) {
        const errtest_replacement *d = &defects[i];
        cases[i] = (errtest_case){.name = d->name, .layout = d->layout, .edit_dims = d->edit_dims, .kind = ET_REPLACE,
                                  .target = d->target, .dtype = d->dtype, .ndim = d->ndim, .phase = 1,
                                  .want = LIG_ERR_PARAM_INVALID, .names = d->names};
        memcpy(cases[i].shape, d->shape, sizeof d->shape);
    }
    errtest_run(op, cases, n);
    free(cases);
}

void errtest_run_seq_defects(const errtest_operator *op, int which)
{
    for (size_t i = 0; i < errtest_n_seq_defects; i++) {
        const errtest_seq_defect *d = &errtest_seq_defects[i];
        const errtest_case c = {.name = d->name, .op = which, .layout = d->layout, .edit_data = d->edit, .phase = 1,
                                .want = LIG_ERR_PARAM_INVALID, .names = d->names};
        errtest_run(op, &c, 1);
    }
}

void errtest_run_mode_band_defects(const errtest_operator *op, int which)
{
    static const errtest_edit kinds[3] = {ET_MODE, ET_PRE, ET_NEXT};
    for (size_t i = 0; i < errtest_n_mode_band_defects; i++) {
        const errtest_scalar_defect *d = &errtest_mode_band_defects[i];
        const errtest_case c = {.name = d->name, .op = which, .layout = d->layout, .kind = kinds[d->which],
                                .value = d->value, .phase = 1, .want = LIG_ERR_PARAM_INVALID,
                                .names = errtest_scalar_name(d->which)};
        errtest_run(op, &c, 1);
    }
}

/* The cases every operator shares, run on its problem `which`. */
static void run_shared(const errtest_operator *op, int which, const errtest_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        errtest_case c = cases[i];
        c.op = which;
        errtest_run(op, &c, 1);
    }
}

void errtest_run_pointer_defects(const errtest_operator *op, int which)
{
    static const errtest_case cases[] = {
        {.name = "layout NULL", .kind = ET_LAYOUT, .str = NULL, .phase = 1, .want = LIG_ERR_PARAM_NULLPTR,
         .names = "layout"},
        {.name = "workspace_size NULL", .kind = ET_NULL_WS_SIZE, .phase = 1, .want = LIG_ERR_PARAM_NULLPTR,
         .names = "workspace_size"},
        {.name = "executor NULL (phase 1)", .kind = ET_NULL_EXEC_PTR, .phase = 1, .want = LIG_ERR_PARAM_NULLPTR,
         .names = "executor"},
        {.name = "executor NULL (phase 2)", .phase = 2, .ws = ERRTEST_WS_NULL_EXEC, .want = LIG_ERR_PARAM_NULLPTR,
         .names = "executor"},
    };
    run_shared(op, which, cases, sizeof cases / sizeof cases[0]);
}

void errtest_run_workspace_defects(const errtest_operator *op, int which)
{
    static const errtest_case cases[] = {
        {.name = "workspace one byte short", .phase = 2, .ws = ERRTEST_WS_SHORT, .want = LIG_ERR_PARAM_INVALID,
         .names = "workspace|workspace_size"},
        {.name = "no workspace at all", .phase = 2, .ws = ERRTEST_WS_ZERO, .want = LIG_ERR_PARAM_INVALID,
         .want_alt = LIG_ERR_PARAM_NULLPTR, .names = "workspace|workspace_size"},
        {.name = "NULL workspace with the right size", .phase = 2, .ws = ERRTEST_WS_NULL_PTR,
         .want = LIG_ERR_PARAM_NULLPTR, .want_alt = LIG_ERR_PARAM_INVALID, .names = "workspace"},
        {.name = "TND workspace one byte short", .layout = REF_TND, .phase = 2, .ws = ERRTEST_WS_SHORT,
         .want = LIG_ERR_PARAM_INVALID, .names = "workspace|workspace_size"},
    };
    run_shared(op, which, cases, sizeof cases / sizeof cases[0]);
}

void errtest_refused_on_cuda(const char *op, lig_status st, const lig_executor *exec) {
    CHECK(st == LIG_ERR_PARAM_INVALID && exec == NULL, "CUDA tensors: status %d, expected LIG_ERR_PARAM_INVALID", (int)st);
#ifdef LIG_TEST_HAVE_CUDA
    char want[160];
    snprintf(want, sizeof want, "%s has no CUDA form yet", op);
#else
    const char *want = "this build of lig has no CUDA backend";
    (void)op;
#endif
    const char *msg = lig_get_last_error();
    CHECK(strstr(msg, want) != NULL && strstr(msg, "query") != NULL, "message \"%s\" lacks \"query\" and \"%s\"", msg,
          want);
}
