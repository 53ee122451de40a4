/*
 * Calls of every operator on small problems of their suites, for tests that run them somewhere
 * unusual (several application threads at once, a forked child, a caller's floating-point mode)
 * and compare with a plain run. Call n of series t draws its data from a seed of its own.
 */
#ifndef LIG_TESTS_HARNESS_OPERATOR_CALLS_H
#define LIG_TESTS_HARNESS_OPERATOR_CALLS_H

#include "two_phase_call.h"
#include "suite.h"
#include "problem_case.h"

typedef struct op_call {
    const suite_op *op;
    tcase tc;
    klcase kc;
    suite_case sc;
    inst_result res;
} op_call;

/* Forward number n of series t (values too, fp32). */
void op_call_forward(op_call *c, int t, int n);
/* KL step number n of series t. */
void op_call_kl(op_call *c, int t, int n);
/* Backward number n of series t: contended dK rows; even n deterministic on continuous data
 * (their summation order shows in the bytes), odd n not, on grid data (a lost update shows). */
void op_call_backward(op_call *c, int t, int n);
/* Calls i = 0, 1, 2, ... of series t: forward, KL step, backward in turn. */
void op_call_mixed(op_call *c, int t, int i);

/* Whether `again` succeeded with the bytes of c->res in every output (failures say where). */
int op_call_same_bytes(const op_call *c, const inst_result *again, const char *label);

/* Frees the case and the result. */
void op_call_free(op_call *c);

#endif
