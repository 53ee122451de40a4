/* The row dispatch of the SIMD GEMM micro-kernels: a micro-kernel's tile body takes its row count
 * as a compile-time constant (so that each count is a body of its own, unrolled, its accumulators
 * in registers), and a call with a run-time count picks among them with
 *   LIG_TILE_ROWS(max, rows, tile, args...);
 * a switch that calls tile(r, args...) for r = rows, for 1 <= rows <= max (max: 4, 6, 8 or 12;
 * a literal or a macro naming one). Rows below 2 take the 1-row body; rows past max are the
 * caller's error. Portable preprocessor text only: it expands to what was written out by hand. */
#ifndef LIG_CPU_KERNELS_TILE_ROWS_H
#define LIG_CPU_KERNELS_TILE_ROWS_H

#define LIG_TILE_ROWS(max, rows, tile, ...) LIG_TILE_ROWS_UP_TO_(max, rows, tile, __VA_ARGS__)

/* (max is expanded before it is pasted: LIG_TILE_ROWS(MR, ...) takes MR's value) */
#define LIG_TILE_ROWS_UP_TO_(max, rows, tile, ...)                                                 \
    switch (rows) { LIG_TILE_ROW_CASES_##max##_(tile, __VA_ARGS__) }
#define LIG_TILE_ROW_CASE_(r, tile, ...)                                                            \
    case r: tile(r, __VA_ARGS__); break;
#define LIG_TILE_ROW_CASES_4_(tile, ...)                                                            \
    LIG_TILE_ROW_CASE_(4, tile, __VA_ARGS__) LIG_TILE_ROW_CASE_(3, tile, __VA_ARGS__)               \
    LIG_TILE_ROW_CASE_(2, tile, __VA_ARGS__) default: tile(1, __VA_ARGS__); break;
#define LIG_TILE_ROW_CASES_6_(tile, ...)                                                            \
    LIG_TILE_ROW_CASE_(6, tile, __VA_ARGS__) LIG_TILE_ROW_CASE_(5, tile, __VA_ARGS__)               \
    LIG_TILE_ROW_CASES_4_(tile, __VA_ARGS__)
#define LIG_TILE_ROW_CASES_8_(tile, ...)                                                            \
    LIG_TILE_ROW_CASE_(8, tile, __VA_ARGS__) LIG_TILE_ROW_CASE_(7, tile, __VA_ARGS__)               \
    LIG_TILE_ROW_CASES_6_(tile, __VA_ARGS__)
#define LIG_TILE_ROW_CASES_12_(tile, ...)                                                           \
    LIG_TILE_ROW_CASE_(12, tile, __VA_ARGS__) LIG_TILE_ROW_CASE_(11, tile, __VA_ARGS__)             \
    LIG_TILE_ROW_CASE_(10, tile, __VA_ARGS__) LIG_TILE_ROW_CASE_(9, tile, __VA_ARGS__)              \
    LIG_TILE_ROW_CASES_8_(tile, __VA_ARGS__)

#endif
