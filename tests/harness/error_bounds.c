#include "error_bounds.h"

#include <math.h>

double tol_eps(lig_dtype dtype)
{
    switch (dtype) {
    case LIG_FLOAT16: return ldexp(1.0, -11);
    case LIG_BFLOAT16: return ldexp(1.0, -8);
    default: return ldexp(1.0, -24);
    }
}

double tol_tiny(lig_dtype dtype)
{
    switch (dtype) {
    case LIG_FLOAT16: return ldexp(1.0, -24);
    case LIG_BFLOAT16: return ldexp(1.0, -133);
    default: return ldexp(1.0, -149);
    }
}

double tol_accumulated(double n, double abs_sum)
{
    return TOL_C_ACC * n * ldexp(1.0, -24) * abs_sum;
}

double tol_element(lig_dtype dtype, double ref, double n, double abs_sum)
{
    return tol_eps(dtype) * fabs(ref) + tol_accumulated(n, abs_sum) + tol_tiny(dtype);
}
