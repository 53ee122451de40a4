/* The forwards' phase 1 after the entry: the checks (forward_checks.c), the lengths or key ranges
 * resolved, the forward problem and each of its parts built once (core/fwd_problem.h), and the
 * backend's plan published as an executor of the call's operator. */
#ifndef LIG_API_FORWARD_BUILD_H
#define LIG_API_FORWARD_BUILD_H

#include "api/forward_checks.h"

/* Phase 1 of the call: reports through c->workspace_size and c->executor. */
lig_status lig_fwd_phase1(lig_fwd_call *c);

#endif
