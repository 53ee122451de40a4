/* The quantized operators' own input checks (docs/contract.md 2.4), shared by
 * lig_quant_indexer_get_workspace_size (api/quant_indexer.c) and
 * lig_quant_logits_get_workspace_size (api/quant_logits.c). */
#ifndef LIG_API_QUANT_CHECKS_H
#define LIG_API_QUANT_CHECKS_H

#include "api/forward_plan.h"

/* The two layouts (layout_key "PA_BSND" with a block table, else the query's layout without one),
 * query / key / weights / block_table (their ranks, dtypes and shapes: fills *pr) and the two
 * dequantization scales of `a`, whose pointers are checked. */
lig_status lig_quant_check_inputs(const lig_fwd_args *a, const char *layout_query, const char *layout_key,
                                  lig_problem *pr);

#endif
