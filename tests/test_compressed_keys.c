/*
 * The compressed-key visibility rule (core/compressed_keys.h, contract 4.1), white-box, against
 * references written here from the rule's words rather than from its closed form:
 *   - an enumeration over the original timeline: entry j covers tokens j*r .. j*r + r - 1, the
 *     row sits at position entries*r + residual - rows + t, and the entry counts when its last
 *     token is at or before that position;
 *   - CANN's kernels' own expression (max((S2*r + res - S1 + s1 + 1) / r, 0), C division) and
 *     vLLM's DeepSeek-V4 one ((pos + 1) // r at pos = seq_len - query_len + i), which must agree;
 *   - 128-bit arithmetic at the int64 limits, where nothing can be enumerated.
 */
#include <stdint.h>
#include <string.h>

#include "core/compressed_keys.h"
#include "framework.h"
#include "lig.h"

/* Entries whose block is complete at `position`, counted one by one. */
static int64_t enumerate_complete(int64_t position, int64_t ratio, int64_t entries) {
    int64_t n = 0;
    for (int64_t j = 0; j < entries; j++)
        if (j * ratio + ratio - 1 <= position) n++;
    return n;
}

static lig_compressed_keys batch_of(int64_t mask, int64_t ratio, int64_t residual, int64_t entries, int64_t rows) {
    return (lig_compressed_keys){.mask_mode = mask, .ratio = ratio, .residual = residual, .entries = entries, .rows = rows};
}

/* Residuals worth trying for a ratio: all of them for small ratios, the ends and the middle else. */
static int residuals_of(int64_t ratio, int64_t *out) {
    if (ratio <= 16) {
        for (int64_t v = 0; v < ratio; v++) out[v] = v;
        return (int)ratio;
    }
    out[0] = 0, out[1] = 1, out[2] = ratio / 2, out[3] = ratio - 2, out[4] = ratio - 1;
    return 5;
}

LIG_TEST(compressed_keys_right_down_matches_enumeration) {
    static const int64_t entry_counts[] = {0, 1, 2, 3, 5, 9};
    int64_t mismatches = 0, rows_checked = 0;
    for (int64_t ratio = 1; ratio <= LIG_CMP_RATIO_MAX; ratio++) {
        int64_t residuals[LIG_CMP_RATIO_MAX];
        const int nres = residuals_of(ratio, residuals);
        for (int ri = 0; ri < nres; ri++) {
            const int64_t residual = residuals[ri];
            for (size_t ei = 0; ei < sizeof entry_counts / sizeof entry_counts[0]; ei++) {
                const int64_t entries = entry_counts[ei];
                const int64_t length = entries * ratio + residual; /* pre-compression keys */
                /* Fewer rows than keys (a KV prefix), as many, more (rows before the first key). */
                const int64_t row_counts[] = {0, 1, 2, ratio, length, length + 1, length + ratio + 3};
                for (size_t qi = 0; qi < sizeof row_counts / sizeof row_counts[0]; qi++) {
                    const int64_t rows = row_counts[qi];
                    const lig_compressed_keys c = batch_of(LIG_CMP_MASK_RIGHT_DOWN, ratio, residual, entries, rows);
                    if (!CHECK(lig_compressed_keys_check(&c, 0) == LIG_SUCCESS, "r=%lld res=%lld entries=%lld rows=%lld: %s",
                               (long long)ratio, (long long)residual, (long long)entries, (long long)rows,
                               lig_get_last_error()))
                        return;
                    for (int64_t t = 0; t < rows; t++) {
                        const int64_t position = length - rows + t;
                        const int64_t want = enumerate_complete(position, ratio, entries);
                        const int64_t got = lig_compressed_visible_count(&c, t);
                        /* CANN (dense_lightning_indexer_kl_loss_grad_kernel_base.h): C division, then 0. */
                        int64_t cann = (length - rows + t + 1) / ratio;
                        cann = cann > 0 ? cann : 0;
                        /* vLLM (deepseek_v4_ops/cache_utils.py): (pos + 1) // r with pos = seq_len - query_len + i. */
                        const int64_t vllm = lig_compressed_complete_blocks(position, ratio);
                        rows_checked++;
                        if (got != want || cann != want || vllm != want) {
                            if (mismatches++ < 5)
                                CHECK(false, "r=%lld res=%lld entries=%lld rows=%lld row %lld: visible %lld, "
                                             "enumerated %lld, CANN's expression %lld, vLLM's %lld",
                                      (long long)ratio, (long long)residual, (long long)entries, (long long)rows,
                                      (long long)t, (long long)got, (long long)want, (long long)cann, (long long)vllm);
                        }
                    }
                    /* Rows outside the batch see nothing. */
                    if (lig_compressed_visible_count(&c, -1) != 0 || lig_compressed_visible_count(&c, rows) != 0)
                        mismatches++;
                }
            }
        }
    }
    CHECK(mismatches == 0, "%lld of %lld rows disagree with the enumeration", (long long)mismatches,
          (long long)rows_checked);
    th_note("%lld rows over ratios 1..%d", (long long)rows_checked, LIG_CMP_RATIO_MAX);
}

LIG_TEST(compressed_keys_no_mask_sees_every_entry) {
    int64_t mismatches = 0;
    for (int64_t ratio = 1; ratio <= LIG_CMP_RATIO_MAX; ratio += 7)
        for (int64_t entries = 0; entries < 6; entries++)
            for (int64_t rows = 1; rows < 40; rows += 3) {
                const lig_compressed_keys c = batch_of(LIG_CMP_MASK_NONE, ratio, ratio - 1, entries, rows);
                for (int64_t t = 0; t < rows; t++)
                    if (lig_compressed_visible_count(&c, t) != entries) mismatches++;
            }
    CHECK(mismatches == 0, "%lld rows without a mask saw fewer than all entries", (long long)mismatches);
}

LIG_TEST(compressed_keys_complete_blocks_matches_enumeration) {
    int64_t mismatches = 0;
    for (int64_t ratio = 1; ratio <= LIG_CMP_RATIO_MAX; ratio++)
        for (int64_t position = -3; position < 4 * ratio + 5; position++) {
            const int64_t want = enumerate_complete(position, ratio, position / ratio + 2);
            if (lig_compressed_complete_blocks(position, ratio) != want && mismatches++ < 5)
                CHECK(false, "position %lld, ratio %lld: %lld complete blocks, enumerated %lld", (long long)position,
                      (long long)ratio, (long long)lig_compressed_complete_blocks(position, ratio), (long long)want);
        }
    CHECK(mismatches == 0, "%lld positions disagree", (long long)mismatches);
}

#if defined(__SIZEOF_INT128__)
__extension__ typedef __int128 wide;

static wide wide_floor_div(wide a, wide b) {
    const wide q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* The rule's closed form in 128 bits, where entries * ratio and position + 1 cannot overflow. */
static int64_t wide_visible(const lig_compressed_keys *c, int64_t t) {
    const wide position = (wide)c->entries * c->ratio + c->residual - c->rows + t;
    const wide n = wide_floor_div(position + 1, c->ratio);
    return n > 0 ? (int64_t)n : 0;
}
#endif

LIG_TEST(compressed_keys_int64_limits) {
#if defined(__SIZEOF_INT128__)
    int64_t mismatches = 0, cases = 0;
    static const int64_t ratios[] = {1, 2, 3, 4, 7, 64, 127, 128};
    for (size_t i = 0; i < sizeof ratios / sizeof ratios[0]; i++) {
        const int64_t ratio = ratios[i];
        for (int64_t residual = 0; residual < ratio && residual < 3; residual++) {
            const int64_t max_entries = (INT64_MAX - residual) / ratio; /* the longest timeline allowed */
            const int64_t entry_counts[] = {0, 1, max_entries / 2, max_entries - 1, max_entries};
            const int64_t row_counts[] = {1, 2, 3, INT64_MAX / 2, INT64_MAX - 1, INT64_MAX};
            for (size_t ei = 0; ei < 5; ei++)
                for (size_t qi = 0; qi < 6; qi++) {
                    const lig_compressed_keys c = batch_of(LIG_CMP_MASK_RIGHT_DOWN, ratio, residual, entry_counts[ei],
                                                           row_counts[qi]);
                    if (lig_compressed_keys_check(&c, 0) != LIG_SUCCESS) {
                        CHECK(false, "r=%lld entries=%lld rows=%lld refused: %s", (long long)ratio,
                              (long long)entry_counts[ei], (long long)row_counts[qi], lig_get_last_error());
                        continue;
                    }
                    const int64_t rows = row_counts[qi];
                    const int64_t probes[] = {0, 1, rows / 3, rows / 2, rows - ratio - 1, rows - 2, rows - 1};
                    for (size_t pi = 0; pi < 7; pi++) {
                        const int64_t t = probes[pi];
                        if (t < 0 || t >= rows) continue;
                        cases++;
                        const int64_t got = lig_compressed_visible_count(&c, t), want = wide_visible(&c, t);
                        if (got != want && mismatches++ < 5)
                            CHECK(false, "r=%lld res=%lld entries=%lld rows=%lld row %lld: %lld, want %lld",
                                  (long long)ratio, (long long)residual, (long long)c.entries, (long long)rows,
                                  (long long)t, (long long)got, (long long)want);
                    }
                }
        }
        /* The inference form at the last positions. */
        const int64_t positions[] = {INT64_MAX, INT64_MAX - 1, INT64_MAX - ratio, INT64_MIN, -1};
        for (size_t pi = 0; pi < 5; pi++) {
            cases++;
            const wide p = positions[pi];
            const wide exact = p < 0 ? 0 : wide_floor_div(p + 1, ratio);
            const int64_t want = exact > INT64_MAX ? INT64_MAX : (int64_t)exact; /* saturates */
            if (lig_compressed_complete_blocks(positions[pi], ratio) != want && mismatches++ < 5)
                CHECK(false, "position %lld ratio %lld: %lld, want %lld", (long long)positions[pi], (long long)ratio,
                      (long long)lig_compressed_complete_blocks(positions[pi], ratio), (long long)want);
        }
    }
    CHECK(mismatches == 0, "%lld of %lld cases at the int64 limits disagree", (long long)mismatches, (long long)cases);
#else
    th_skip("this compiler has no 128-bit integers for the reference");
#endif
}

static void expect_refused(const lig_compressed_keys *c, int64_t batch, const char *const *words, int nwords) {
    const lig_status st = lig_compressed_keys_check(c, batch);
    const char *msg = lig_get_last_error();
    if (!CHECK(st == LIG_ERR_PARAM_INVALID, "mask %lld ratio %lld residual %lld entries %lld rows %lld: status %d",
               (long long)c->mask_mode, (long long)c->ratio, (long long)c->residual, (long long)c->entries,
               (long long)c->rows, (int)st))
        return;
    for (int i = 0; i < nwords; i++)
        CHECK(strstr(msg, words[i]) != NULL, "message \"%s\" lacks \"%s\"", msg, words[i]);
}

LIG_TEST(compressed_keys_checks_name_the_parameter) {
    const char *mask[] = {"mask_mode", "0 (no mask) or 3", "got 1"};
    lig_compressed_keys c = batch_of(1, 4, 0, 8, 8);
    expect_refused(&c, 0, mask, 3);
    const char *mask2[] = {"mask_mode", "got 2"};
    c = batch_of(2, 4, 0, 8, 8);
    expect_refused(&c, 0, mask2, 2);

    const char *ratio0[] = {"cmp_ratio", "1..128", "got 0"};
    c = batch_of(3, 0, 0, 8, 8);
    expect_refused(&c, 0, ratio0, 3);
    const char *ratio129[] = {"cmp_ratio", "got 129"};
    c = batch_of(0, 129, 0, 8, 8);
    expect_refused(&c, 0, ratio129, 2);

    const char *res_high[] = {"cmp_residual_k[5]", "0..3", "cmp_ratio 4", "got 4"};
    c = batch_of(3, 4, 4, 8, 8);
    expect_refused(&c, 5, res_high, 4);
    const char *res_neg[] = {"cmp_residual_k[0]", "got -1"};
    c = batch_of(3, 4, -1, 8, 8);
    expect_refused(&c, 0, res_neg, 2);
    const char *res_ratio1[] = {"cmp_residual_k[2]", "0..0", "got 1"}; /* ratio 1: no residual */
    c = batch_of(3, 1, 1, 8, 8);
    expect_refused(&c, 2, res_ratio1, 3);

    const char *entries_neg[] = {"key length of batch 1", "got -2"};
    c = batch_of(3, 4, 0, -2, 8);
    expect_refused(&c, 1, entries_neg, 2);
    const char *rows_neg[] = {"query length of batch 1", "got -1"};
    c = batch_of(3, 4, 0, 2, -1);
    expect_refused(&c, 1, rows_neg, 2);

    /* One entry more than the longest timeline int64 holds. */
    const char *too_long[] = {"pre-compression length", "below 2^63"};
    c = batch_of(3, 128, 127, (INT64_MAX - 127) / 128 + 1, 1);
    expect_refused(&c, 0, too_long, 2);
    c = batch_of(0, 3, 0, INT64_MAX, 1);
    expect_refused(&c, 0, too_long, 2);

    /* The limits themselves pass. */
    c = batch_of(3, 128, 127, (INT64_MAX - 127) / 128, INT64_MAX);
    CHECK(lig_compressed_keys_check(&c, 0) == LIG_SUCCESS, "the longest timeline refused: %s", lig_get_last_error());
    c = batch_of(0, 1, 0, INT64_MAX, 0);
    CHECK(lig_compressed_keys_check(&c, 0) == LIG_SUCCESS, "INT64_MAX uncompressed keys refused: %s",
          lig_get_last_error());
}

/* The public lig_compressed_visible_counts: the enumeration's counts for a batch, and nothing written
 * on a refusal. */
LIG_TEST(compressed_keys_public_counts_match_enumeration) {
    int64_t mismatches = 0;
    for (int64_t ratio = 1; ratio <= 9; ratio++)
        for (int64_t residual = 0; residual < ratio; residual++)
            for (int64_t entries = 0; entries < 5; entries++)
                for (int64_t rows = 0; rows < 12; rows++) {
                    int64_t counts[12];
                    if (!CHECK(lig_compressed_visible_counts(3, ratio, residual, entries, rows, 7, counts) ==
                                   LIG_SUCCESS,
                               "%s", lig_get_last_error()))
                        return;
                    const int64_t length = entries * ratio + residual;
                    for (int64_t t = 0; t < rows; t++)
                        if (counts[t] != enumerate_complete(length - rows + t, ratio, entries)) mismatches++;
                    if (!CHECK(lig_compressed_visible_counts(0, ratio, residual, entries, rows, 7, counts) ==
                                   LIG_SUCCESS,
                               "%s", lig_get_last_error()))
                        return;
                    for (int64_t t = 0; t < rows; t++)
                        if (counts[t] != entries) mismatches++;
                }
    CHECK(mismatches == 0, "%lld counts disagree with the enumeration", (long long)mismatches);

    int64_t untouched[2] = {-5, -5};
    CHECK(lig_compressed_visible_counts(3, 4, 4, 10, 2, 2, untouched) == LIG_ERR_PARAM_INVALID &&
              strstr(lig_get_last_error(), "cmp_residual_k[2]") && untouched[0] == -5 && untouched[1] == -5,
          "a residual of a whole block: %s", lig_get_last_error());
    CHECK(lig_compressed_visible_counts(1, 4, 0, 10, 2, 0, untouched) == LIG_ERR_PARAM_INVALID &&
              strstr(lig_get_last_error(), "mask_mode") && untouched[0] == -5,
          "mask mode 1: %s", lig_get_last_error());
    CHECK(lig_compressed_visible_counts(3, 129, 0, 10, 2, 0, untouched) == LIG_ERR_PARAM_INVALID &&
              strstr(lig_get_last_error(), "cmp_ratio"),
          "ratio 129: %s", lig_get_last_error());
    CHECK(lig_compressed_visible_counts(3, 4, 0, 10, 2, 0, NULL) == LIG_ERR_PARAM_NULLPTR &&
              strstr(lig_get_last_error(), "counts"),
          "NULL counts: %s", lig_get_last_error());
    CHECK(lig_compressed_visible_counts(3, 4, 0, 10, 0, 0, NULL) == LIG_SUCCESS, "no rows, no counts: %s",
          lig_get_last_error());
}
