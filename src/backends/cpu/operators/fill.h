/* Constant fills of row views: the outputs no unit writes (rows past a batch's valid length,
 * every output of an empty problem) get their value here, in one place for every operator. */
#ifndef LIG_CPU_OPERATORS_FILL_H
#define LIG_CPU_OPERATORS_FILL_H

#include <stdint.h>

#include "core/problem.h"

/* Stores `value` (rounded into a float dtype, or as an integer into an index dtype) into every
 * element of rows [r0, r1) of batch b of a view, heads x dims elements per row (rows addressed
 * by the tensor's own row index). */
void lig_fill_rows(const lig_view4 *v, int64_t b, int64_t r0, int64_t r1, int64_t heads, int64_t dims, double value);

/* The query rows no unit owns: past each batch's valid length (BSND), past the last
 * cumulative end (TND); or every row of the tensor (`rows` of them per batch) when `all`. */
void lig_fill_query_rows(const lig_problem *pr, const lig_view4 *v, int64_t heads, int64_t dims, double value,
                         bool all);

/* Every key row of a key-shaped view (dK of an empty problem). */
void lig_fill_key_rows(const lig_problem *pr, const lig_view4 *v, int64_t heads, int64_t dims, double value);

#endif
