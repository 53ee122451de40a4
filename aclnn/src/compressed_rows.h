/*
 * CANN's V4-era indexers (aclnnLightningIndexerV2, aclnnQuantLightningIndexerV2) over lig's paged
 * forward. Their rows see compressed keys (cmpRatio, cmpResidualK, maskMode 3), a count per row that
 * is not a mask lig's forward has; lig's forward does take per-batch key lengths over a paged cache.
 * So every query row becomes a batch of its own: a block table row pointing at its batch's keys and
 * a key length that is the row's visible count, from lig_compressed_visible_counts (the one rule,
 * docs/contract.md 4.1). Contiguous keys are described as a cache without copying: BSND as B blocks
 * of S2 keys, TND as blocks of a size that divides T2 and every batch's first key. Indices stay
 * batch-relative, as CANN writes them.
 */
#ifndef LIG_ACLNN_COMPRESSED_ROWS_H
#define LIG_ACLNN_COMPRESSED_ROWS_H

#include <stdbool.h>
#include <stdint.h>

#include <lig.h>

#include "../include/aclnn/aclnn_base.h"
#include "executor.h"
#include "tensor.h"

/* The arguments both V2 operators share, as CANN names them. */
typedef struct fe_v2_args {
    const char *api;
    const aclTensor *query, *key, *blockTable;
    const aclTensor *cuSeqlensQ, *cuSeqlensK, *sequsedQ, *sequsedK, *cmpResidualK;
    const char *cuQName, *cuKName; /* the two operators spell cuSeqlens / cuSeqLens differently */
    const char *layoutQ, *layoutK; /* already defaulted */
    const char *pagedLayout;       /* "PA_BBND" (LightningIndexerV2) or "PA_BSND" (the quant one) */
    int64_t maskMode, cmpRatio;
} fe_v2_args;

/* The per-row problem: R query rows ([B,S1] or T1), each its own batch. */
typedef struct fe_v2_rows {
    bool tnd;            /* query layout TND */
    bool key_tnd;        /* key layout TND (described as blocks of block_size keys) */
    int64_t B, R;        /* CANN's batches; query rows */
    int64_t num_blocks;  /* the key described as a cache [num_blocks, block_size, ...] */
    int64_t block_size;
    int64_t cols;        /* table columns */
    int64_t *lengths;    /* [R] visible entries of each row (0 for rows past a batch's used ones) */
    int64_t *table;      /* [R, cols] blocks of the row's batch */
} fe_v2_rows;

/* A live, in-bounds INT32 / INT64 tensor of `ndim` dimensions (CANN's are INT32; lig's lengths take
 * INT64 too). Not kept: CANN reads these in phase 1, and so does this front end. */
aclnnStatus fe_check_int_tensor(const aclTensor *t, const char *name, const char *api, int64_t ndim);

/* Checks the layouts' tensors and lengths (read here, as CANN's tiling reads them) and fills *rows;
 * its two arrays live in one allocation handed to `args` (freed with the executor). */
aclnnStatus fe_v2_rows_plan(const fe_v2_args *a, fe_args *args, fe_v2_rows *rows);

/* A view of an argument: memory, dtype, extents and element strides. */
typedef struct fe_view {
    char *data;
    lig_dtype dtype;
    int64_t ndim, shape[FE_MAX_DIMS], strides[FE_MAX_DIMS];
} fe_view;

/* The view of a bound aclTensor, or (staged) of its contiguous FLOAT32 copy at `staged`. */
fe_view fe_view_of(const aclTensor *t, float *staged);

/* A query-row tensor ([B,S1,...] or [T1,...]) as [R,1,...]: one row per batch. BSND needs its B
 * and S1 axes to merge into one stride (any contiguous tensor does). */
aclnnStatus fe_v2_row_view(const fe_v2_rows *rows, const char *name, const char *api, fe_view *v);

/* The key (or its per-key scales) as the cache [num_blocks, block_size, ...] (PA: as it is). */
void fe_v2_cache_view(const fe_v2_rows *rows, fe_view *v);

/* Binds the lig tensor *lt of `args` to view `v` (fe_args_reshape). */
aclnnStatus fe_v2_rebind(fe_args *args, lig_tensor **lt, const fe_view *v, const char *name, const char *api);

/* The lengths [R] and table [R, cols] as lig tensors of `args`. */
aclnnStatus fe_v2_row_tensors(const fe_v2_rows *rows, fe_args *args, const char *api, lig_tensor **lengths,
                              lig_tensor **table);

/* What runs after lig: outputIdxOffset added to every index that is not -1 (int32 arithmetic, as the
 * device's), and sparseValues filled with -inf when returnValue is 0. Checks outputIdxOffset
 * ([B,S1,N2] | [T1,N2], or without N2; INT32 or INT64) and the values' shape; installs args->post. */
aclnnStatus fe_v2_post(const fe_v2_rows *rows, fe_args *args, const char *api, const aclTensor *indices,
                       const aclTensor *outputIdxOffset, const aclTensor *values_to_fill);

#endif /* LIG_ACLNN_COMPRESSED_ROWS_H */
