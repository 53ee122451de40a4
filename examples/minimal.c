/* The smallest complete use of lig: one BSND problem, fp32, two-phase call. */
#include <lig.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    enum { B = 1, S = 4, N1 = 2, N2 = 1, D = 3, K = 2 };
    float q[B * S * N1 * D], k[B * S * N2 * D], w[B * S * N1], dy[B * S * K];
    int32_t idx[B * S * K];
    float dq[B * S * N1 * D], dk[B * S * N2 * D], dw[B * S * N1];
    for (int i = 0; i < B * S * N1 * D; i++) q[i] = (float)((i % 7) - 3) / 4.0f;
    for (int i = 0; i < B * S * N2 * D; i++) k[i] = (float)((i % 5) - 1) / 2.0f;
    for (int i = 0; i < B * S * N1; i++) w[i] = 0.5f;
    for (int t = 0; t < S; t++) { /* row t selects keys t and t-1 (or -1 padding) */
        idx[t * K + 0] = t;
        idx[t * K + 1] = t - 1;
        dy[t * K + 0] = 1.0f;
        dy[t * K + 1] = -0.5f;
    }
    const int64_t qs[] = {B, S, N1, D}, ks[] = {B, S, N2, D}, ws[] = {B, S, N1}, is[] = {B, S, K};
    lig_tensor *tq = lig_create_tensor(q, LIG_FLOAT32, 4, qs, NULL);
    lig_tensor *tk = lig_create_tensor(k, LIG_FLOAT32, 4, ks, NULL);
    lig_tensor *tw = lig_create_tensor(w, LIG_FLOAT32, 3, ws, NULL);
    lig_tensor *tdy = lig_create_tensor(dy, LIG_FLOAT32, 3, is, NULL);
    lig_tensor *tidx = lig_create_tensor(idx, LIG_INT32, 3, is, NULL);
    lig_tensor *tdq = lig_create_tensor(dq, LIG_FLOAT32, 4, qs, NULL);
    lig_tensor *tdk = lig_create_tensor(dk, LIG_FLOAT32, 4, ks, NULL);
    lig_tensor *tdw = lig_create_tensor(dw, LIG_FLOAT32, 3, ws, NULL);

    uint64_t ws_size = 0;
    lig_executor *plan = NULL;
    lig_status st = lig_indexer_grad_get_workspace_size(tq, tk, tdy, tidx, tw, NULL, NULL, /*head_num=*/0, "BSND",
                                                        /*sparse_mode=*/3, INT64_MAX, INT64_MAX,
                                                        /*deterministic=*/true, tdq, tdk, tdw, &ws_size, &plan);
    if (st == LIG_SUCCESS) {
        void *workspace = ws_size ? malloc(ws_size) : NULL;
        st = lig_indexer_grad(workspace, ws_size, plan, NULL); /* consumes the plan */
        free(workspace);
    }
    if (st != LIG_SUCCESS) {
        fprintf(stderr, "lig: %s: %s\n", lig_status_string(st), lig_get_last_error());
        return 1;
    }
    printf("dW[0,3,:] = %g %g, dK[0,2,0,:] = %g %g %g\n", dw[6], dw[7], dk[6], dk[7], dk[8]);
    lig_tensor *all[] = {tq, tk, tw, tdy, tidx, tdq, tdk, tdw};
    for (int i = 0; i < 8; i++) lig_destroy_tensor(all[i]);
    return 0;
}
