/* The forwards' phase-1 validation (docs/contract.md 2.1, 2.4, 2.6): lig_indexer, lig_indexer_paged,
 * lig_quant_indexer and lig_quant_logits. Each operator is a row of two tables: the table of its
 * tensor arguments (name, role; built once per call, read by the pointer, overlap and device
 * checks) and the ordered list of its checks, each of which validates its arguments once. The
 * entries (indexer.c, quant_indexer.c, quant_logits.c) fill a lig_fwd_call and hand it to
 * lig_fwd_phase1 (forward_build.c), which runs these checks, resolves the lengths or the key ranges,
 * runs the checks that need them and builds the problem. */
#ifndef LIG_API_FORWARD_CHECKS_H
#define LIG_API_FORWARD_CHECKS_H

#include <stdbool.h>
#include <stdint.h>

#include "api/argument_checks.h"
#include "api/executor.h"
#include "core/problem.h"

enum { LIG_FWD_MAX_ARGUMENTS = 12 };

/* One forward call: its arguments as the entry received them (those the operator lacks are NULL),
 * then what the checks find. */
typedef struct lig_fwd_call {
    lig_op op; /* LIG_OP_INDEXER, _INDEXER_PAGED, _QUANT_INDEXER, _QUANT_LOGITS or _SPARSE_LOGITS */
    const lig_tensor *query, *key, *block_table, *weights;
    const lig_tensor *query_dequant_scale, *key_dequant_scale;
    const lig_tensor *actual_seq_lengths_query, *actual_seq_lengths_key;
    const lig_tensor *key_start, *key_end, *schedule;
    const lig_tensor *logits, *sparse_indices, *sparse_values;
    const lig_tensor *sparse_kv_block_indices, *sparse_logits; /* the sparse logits' */
    const char *layout;     /* layout, or the quantized operators' layout_query */
    const char *layout_key; /* the quantized operators' */
    int64_t query_quant_mode, key_quant_mode;
    int64_t sparse_count, sparse_mode, pre_tokens, next_tokens;
    bool clean_logits, compressed;
    int64_t sparse_block_kv; /* the sparse logits' */
    bool use_unaligned_ks;
    uint64_t *workspace_size;  /* where phase 1 reports (lig_fwd_phase1) */
    lig_executor **executor;

    /* found by the checks */
    lig_argument list[LIG_FWD_MAX_ARGUMENTS];
    lig_arguments args;   /* the operator's table over `list` */
    bool paged;           /* the keys are a paged cache read through block_table */
    bool short_form;      /* the slot outputs without their N2 axis */
    bool logits_short;    /* logits without its N2 axis */
    int64_t logits_cols;  /* W: the logits' columns */
    bool sparse_short;    /* sparse_logits without its N2 axis */
    int64_t max_blocks;   /* the sparse logits' M: sparse_kv_block_indices' last extent */
    lig_problem pr;       /* the geometry (lengths resolved by forward_build.c) */
    lig_placement placed;
} lig_fwd_call;

/* Every check that needs no sequence length: pointers, layouts, the tensors' ranks, dtypes and
 * shapes, the scalars, overlaps and devices. Fills c->pr's geometry and c->placed. */
lig_status lig_fwd_check_arguments(lig_fwd_call *c);

/* The checks that read the resolved lengths or ranges (c->pr): block_table's rows (the one place
 * they are checked) and the index dtype's range. */
lig_status lig_fwd_check_resolved(const lig_fwd_call *c);

#endif
