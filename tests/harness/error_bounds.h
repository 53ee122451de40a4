/*
 * How far a library result may be from the float64 reference, element by element, when the data
 * is continuous (grid data is compared bitwise elsewhere).
 *
 * The library computes every output in fp32 from inputs that are exact in fp32 (the test data is
 * representable in its dtype), then rounds it once into the output dtype. Model each fp32
 * operation as fl(a op b) = (a op b)(1 + d) with |d| <= u = 2^-24. An output element is a sum of
 * elementary products (e.g. w * dy * k for dQ); if every elementary product goes through at most
 * n fp32 roundings (the products that form it plus the additions on its way into the sum, in any
 * order: summing m non-zero terms in any tree puts at most m - 1 inexact additions on any path,
 * and adding an exact 0 rounds nothing), then
 *     |acc - ref| <= gamma_n * abs,   gamma_n = n u / (1 - n u),   abs = sum of |elementary products|
 * (Higham, "Accuracy and Stability of Numerical Algorithms", 3.1 and 4.2). The final rounding into
 * the output dtype adds at most u_out * |acc| <= u_out * |ref| + u_out * |acc - ref| (u_out = 2^-8
 * bf16, 2^-11 fp16, 2^-24 fp32), or at most the subnormal spacing tiny(dtype) below the normal
 * range. Hence
 *     |lib - ref| <= u_out |ref| + (1 + u_out) gamma_n abs + tiny(dtype)
 *                <= u_out |ref| + TOL_C_ACC * n * 2^-24 * abs + tiny(dtype)
 * with TOL_C_ACC = 2, valid while n u <= 1/4 ((1 + 2^-8) / (1 - 1/4) < 2); the tests' n stay below
 * 10^5, i.e. n u < 0.006. Each checker states its n.
 */
#ifndef LIG_TESTS_HARNESS_ERROR_BOUNDS_H
#define LIG_TESTS_HARNESS_ERROR_BOUNDS_H

#include <stdint.h>

#include "lig.h"

#define TOL_C_ACC 2.0

/* Relative rounding unit of a float dtype (2^-24, 2^-11, 2^-8). */
double tol_eps(lig_dtype dtype);
/* Spacing of its subnormals (2^-149, 2^-24, 2^-133): the absolute error floor of a rounding. */
double tol_tiny(lig_dtype dtype);

/* The fp32 accumulation part: TOL_C_ACC * n * 2^-24 * abs. */
double tol_accumulated(double n, double abs_sum);
/* The whole bound of an element of `dtype` whose reference is `ref`: see above. */
double tol_element(lig_dtype dtype, double ref, double n, double abs_sum);

#endif /* LIG_TESTS_HARNESS_ERROR_BOUNDS_H */
