/* cpu_linear.c — a linear layer over a stored-format weight, split across the thread pool.
 * Each thread owns a fixed range of output features and computes all of their elements, so the
 * result does not depend on the thread count. */
#include "engine/cpu/cpu_backend.h"

#include <string.h>

typedef struct {
    const ec_qmatrix *m;
    const float *x; /* [rows][m->cols] */
    const ec_qact *act;
    int rows;
    float *y; /* [rows][m->rows] */
} linear_job;

static void linear_part(void *arg, int t, int n)
{
    const linear_job *j = arg;
    int r0, r1;
    ec_pool_split(j->m->rows, t, n, &r0, &r1);
    if (r0 < r1) ec_qmatrix_matmul_rows(j->m, j->x, j->act, j->rows, j->y, r0, r1);
}

int cpu_linear(ec_pool *pool, const ec_qmatrix *m, const float *x, int rows, const float *bias,
               float *y, long *stat)
{
    /* The int8 formats quantize the activations once per call; every thread then reads them. */
    int int8 = ec_qformat_of(m->prec)->act == EC_ACT_INT8;
    ec_qact act;
    memset(&act, 0, sizeof act);
    if (int8 && ec_qact_prepare(&act, m, x, rows) != 0) return -1;
    if (int8 && stat && m->threshold > 0.0f) {
        stat[0] += act.n_outliers;
        stat[1]++;
    }
    linear_job job = {m, x, int8 ? &act : NULL, rows, y};
    ec_pool_run(pool, linear_part, &job, ec_pool_parts(pool, (double)rows * m->rows * m->cols));
    if (int8) ec_qact_free(&act);
    if (bias)
        for (int b = 0; b < rows; b++)
            for (int r = 0; r < m->rows; r++)
                y[(size_t)b * m->rows + r] += bias[r];
    return 0;
}
