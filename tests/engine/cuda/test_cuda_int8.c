/* test_cuda_int8.c — every int8 / int8-mixed linear path of the CUDA backend against the CPU
 * reference formats (ec_qact_prepare + ec_qmatrix_matmul_rows).
 *
 * Each setup draws a weight, quantizes it on the host with ec_qmatrix_quantize (the bytes the
 * backend uploads), draws fp16-representable activations with a chosen outlier pattern, and runs
 * ec_cuda_qlinear in both kernel families and every epilogue. What must hold:
 *   - the quantized activations, token scales, outlier count, mask and (where built) column list
 *     are identical to the CPU's (same fp32 operations on the same fp16 values);
 *   - without outlier columns, STORE and ADD outputs of both families bit-identical to the CPU
 *     (exact int32 dot products, the same scale products; see kernels_int8_act.cuh);
 *   - with outlier columns, the fused GEMV (each lane sums its chunks' columns), the one-pass
 *     GEMM at 9-64 tokens and the fused epilogue (tensor-core MMAs), the fused family's gathered
 *     columns above 256 tokens and the reference family (both a 16-bit cuBLAS GEMM) sum the
 *     outlier products in their own order, so the difference is bounded by the error of
 *     two n-term fp32 sums: 4·γ_n·Σ|x_c·w_c| (γ_n = n·2⁻²⁴/(1 − n·2⁻²⁴); 4 not 2 because tensor
 *     cores may truncate instead of rounding) plus one rounding of the final add (2⁻²³·|y|);
 *   - SILU_MUL (16-bit output): silu(g)·u in double from the CPU's g and u, within one fp16
 *     rounding (2⁻¹¹ relative) plus fp32 expf error — 2⁻¹⁰·|want| + 1e-7 (the fp16 subnormal
 *     step is 6e-8);
 *   - every output element is written (outputs are NaN-poisoned first) and the padding columns
 *     [rows, ldy) are left alone;
 *   - the outlier statistics counter gets {outlier columns, 1 call} per call for int8-mixed;
 *   - a second call on the same context gives the same result (the scan's state is reset);
 *   - at batch 1 all of this holds both for the GEMV that quantizes its own token (widths that
 *     are multiples of 8) and, with the prepare path forced (ec_cuda_test_path_choice), for the prepare launch + GEMV.
 * A failure prints the setup, the first differing elements, the worst error and the count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ecocompute/engine.h"
#include "ecocompute/quant.h"
#include "engine/cuda/gpu_test.h"
#include "engine/cuda/qweight.h"

#include <math.h>
#include <string.h>

static float f16(float v) { return ec_f16_to_f32(ec_f32_to_f16(v)); }

/* ---- setups ---- */

typedef enum { OUT_NONE = 0, OUT_ONE, OUT_MANY, OUT_ALL, OUT_NAN } outlier_pattern;
static const char *pattern_name[] = {"none", "one", "many", "all", "none, one NaN"};

typedef struct {
    ec_precision prec;
    float threshold; /* int8-mixed only */
    int rows, cols;  /* output rows (SILU_MUL: the weight holds 2*rows) and input width */
    int batch;
    outlier_pattern pattern;
    int silu;        /* the setup is a gate/up weight run with SILU_MUL */
} setup;

typedef struct {
    setup s;
    int wrows;
    char name[160];
    ec_qmatrix qm;      /* host quantized weight (CPU reference) */
    float *x;           /* [batch][cols] fp16 values */
    uint16_t *x16;      /* [batch][cols] */
    ec_qact act;        /* CPU activation quantization */
    float *yref;        /* [batch][wrows] CPU output */
    double *outlier_mag; /* [batch][wrows] Σ|x_c · w_c| over the outlier columns */
    ec_cuda_qweight w;  /* device weight */
    void *d_w, *d_x;
} fixture;

/* Activations in (-2, 2) with outliers placed by the pattern; token 1 is all zero when batch >= 3
 * (scale 0, zero codes). Values just below and exactly at 6 test the >= rule. */
static void make_activations(fixture *f)
{
    const setup *s = &f->s;
    for (int b = 0; b < s->batch; b++)
        for (int c = 0; c < s->cols; c++) {
            float v = s->batch >= 3 && b == 1 ? 0.0f : f16(2.0f * frand());
            f->x[(size_t)b * s->cols + c] = v;
        }
    int last = s->batch - 1;
    if (s->cols > 2) f->x[2] = 5.99609375f; /* the largest fp16 below 6: never an outlier */
    switch (s->pattern) {
    case OUT_NONE: break;
    case OUT_ONE: /* one column, crossing in the last token only (any token counts) */
        f->x[(size_t)last * s->cols + s->cols / 3] = -8.5f;
        break;
    case OUT_MANY: /* every 5th column from 1, in alternating tokens, magnitudes 6 .. 55 */
        for (int c = 1, k = 0; c < s->cols; c += 5, k++) {
            int b = k % 2 ? last : 0;
            f->x[(size_t)b * s->cols + c] = (k % 3 ? -1.0f : 1.0f) * (6.0f + (float)(k % 50));
        }
        break;
    case OUT_ALL: /* every column: the int8 part is empty, scales are 0 */
        for (int c = 0; c < s->cols; c++) f->x[c] = c % 2 ? 6.0f : -7.25f;
        break;
    case OUT_NAN: /* no outlier; a NaN the absmax skips (fmaxf) and whose code is 0 */
        f->x[(size_t)last * s->cols + s->cols / 2] = NAN;
        break;
    }
    for (size_t i = 0; i < (size_t)s->batch * s->cols; i++) f->x16[i] = ec_f32_to_f16(f->x[i]);
}

static void fixture_init(fixture *f, const setup *s)
{
    memset(f, 0, sizeof *f);
    f->s = *s;
    f->wrows = s->silu ? 2 * s->rows : s->rows;
    snprintf(f->name, sizeof f->name, "%s t=%g %s %dx%d batch %d outliers %s",
             ec_precision_name(s->prec), (double)s->threshold, s->silu ? "gate/up" : "linear",
             f->wrows, s->cols, s->batch, pattern_name[s->pattern]);
    size_t wn = (size_t)f->wrows * s->cols, xn = (size_t)s->batch * s->cols;
    float *wf = malloc(wn * sizeof *wf);
    for (int r = 0; r < f->wrows; r++)
        for (int c = 0; c < s->cols; c++) /* row 1 zero: absmax 0, zero codes */
            wf[(size_t)r * s->cols + c] = r == 1 ? 0.0f : frand() * (float)(1 + r % 5);
    if (ec_qmatrix_quantize(&f->qm, s->prec, wf, f->wrows, s->cols) != 0)
        fail_msg("quantize: %s", ec_last_error());
    free(wf);
    if (s->prec == EC_PREC_INT8_MIXED) f->qm.threshold = s->threshold;
    f->x = malloc(xn * sizeof *f->x);
    f->x16 = malloc(xn * sizeof *f->x16);
    make_activations(f);
    if (ec_qact_prepare(&f->act, &f->qm, f->x, s->batch) != 0)
        fail_msg("qact: %s", ec_last_error());
    f->yref = malloc((size_t)s->batch * f->wrows * sizeof *f->yref);
    ec_qmatrix_matmul_rows(&f->qm, f->x, &f->act, s->batch, f->yref, 0, f->wrows);
    f->outlier_mag = calloc((size_t)s->batch * f->wrows, sizeof *f->outlier_mag);
    const int8_t *q = f->qm.data;
    for (int b = 0; b < s->batch; b++)
        for (int r = 0; r < f->wrows; r++)
            for (int k = 0; k < f->act.n_outliers; k++) {
                int c = f->act.outlier_cols[k];
                float wv = f16((float)q[(size_t)r * s->cols + c] * (f->qm.scales[r] / 127.0f));
                f->outlier_mag[(size_t)b * f->wrows + r] += fabs((double)f->x[(size_t)b * s->cols + c] * wv);
            }

    /* The device weight exactly as the backend lays it out (qweight.h). */
    size_t bytes = ec_cuda_qweight_bytes(s->prec, f->wrows, s->cols);
    f->d_w = dev_alloc(bytes, 0);
    ec_cuda_qweight_place(&f->w, s->prec, f->wrows, s->cols, s->threshold, (uintptr_t)f->d_w);
    CUDA_OK(cudaMemcpy2D(f->w.data, (size_t)f->w.ld, f->qm.data, (size_t)s->cols, (size_t)s->cols,
                         (size_t)f->wrows, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(f->w.scales, f->qm.scales, (size_t)f->wrows * sizeof(float),
                       cudaMemcpyHostToDevice));
    if (s->silu) {
        int seg[2] = {s->rows, s->rows};
        ec_cuda_qweight_segments(&f->w, 2, seg);
    } else if (s->rows >= 3) { /* like q, k, v: the reference family runs them one by one */
        int seg[3] = {s->rows / 2, s->rows / 4, s->rows - s->rows / 2 - s->rows / 4};
        ec_cuda_qweight_segments(&f->w, 3, seg);
    }
    f->d_x = dev_upload(f->x16, xn * 2);
}

static void fixture_free(fixture *f)
{
    ec_qmatrix_free(&f->qm);
    ec_qact_free(&f->act);
    free(f->x);
    free(f->x16);
    free(f->yref);
    free(f->outlier_mag);
    cudaFree(f->d_w);
    cudaFree(f->d_x);
}

/* ---- comparisons that explain themselves ---- */

typedef struct {
    const char *what;
    long bad, shown;
    double worst, worst_tol;
    long worst_i;
} tally;

static void tally_check(tally *t, long i, int b, int r, double got, double want, double tol)
{
    double err = fabs(got - want);
    if (err <= tol) return; /* NaN fails */
    if (t->shown++ < 5)
        printf("    %s: token %d row %d: got %.9g want %.9g (|diff| %.3g, tolerance %.3g)\n",
               t->what, b, r, got, want, err, tol);
    if (t->bad++ == 0 || !(err <= t->worst)) {
        t->worst = err;
        t->worst_tol = tol;
        t->worst_i = i;
    }
}

static void tally_done(const tally *t, const char *name, long total)
{
    if (t->bad)
        fail_msg("%s — %s: %ld of %ld elements differ; worst |diff| %.3g (tolerance %.3g) at "
                 "index %ld",
                 name, t->what, t->bad, total, t->worst, t->worst_tol, t->worst_i);
}

/* Quantized activations, scales, outlier count, mask and (where the path builds one: not the
 * fused GEMV's prepare, whose GEMV reads the mask) column list against ec_qact_prepare. */
/* listed: the call built the column list; gathered: the one-pass GEMM's outlier activations
 * xo [batch][ld] (x at the listed columns, zeros to the next multiple of 16). */
static void check_activations(const fixture *f, const ec_cuda_qctx *ctx, const char *family,
                              int listed, int gathered)
{
    const setup *s = &f->s;
    int ld = f->w.ld;
    int8_t *xq = malloc((size_t)s->batch * ld);
    float *scale = malloc((size_t)s->batch * sizeof *scale);
    download(xq, ctx->xq, (size_t)s->batch * ld);
    download(scale, ctx->xscale, (size_t)s->batch * sizeof *scale);
    for (int b = 0; b < s->batch; b++) {
        if (memcmp(&scale[b], &f->act.scale[b], sizeof(float)) != 0)
            fail_msg("%s (%s): token %d scale %.9g, CPU %.9g", f->name, family, b, scale[b],
                     f->act.scale[b]);
        for (int c = 0; c < ld; c++) {
            int want = c < s->cols ? f->act.q[(size_t)b * s->cols + c] : 0;
            if (xq[(size_t)b * ld + c] != want)
                fail_msg("%s (%s): token %d column %d code %d, CPU %d (x %.6g, scale %.9g)%s",
                         f->name, family, b, c, xq[(size_t)b * ld + c], want,
                         c < s->cols ? f->x[(size_t)b * s->cols + c] : 0.0, scale[b],
                         c >= s->cols ? " (pad column)" : "");
        }
    }
    if (f->w.threshold > 0.0f) {
        int n = -1, nwords = (s->cols + 31) / 32, *cols = malloc((size_t)s->cols * sizeof *cols);
        unsigned *mask = malloc((size_t)nwords * sizeof *mask), *want = calloc((size_t)nwords, sizeof *want);
        download(&n, ctx->ocount, sizeof n);
        if (n != f->act.n_outliers)
            fail_msg("%s (%s): %d outlier columns, CPU %d", f->name, family, n, f->act.n_outliers);
        download(mask, ctx->omask, (size_t)nwords * sizeof *mask);
        for (int k = 0; k < f->act.n_outliers; k++)
            want[f->act.outlier_cols[k] / 32] |= 1u << (f->act.outlier_cols[k] % 32);
        for (int i = 0; i < nwords; i++)
            if (mask[i] != want[i])
                fail_msg("%s (%s): outlier mask word %d is %08x, CPU %08x", f->name, family, i,
                         mask[i], want[i]);
        if (listed) {
            download(cols, ctx->ocols, (size_t)(n > 0 ? n : 1) * sizeof *cols);
            for (int k = 0; k < n; k++)
                if (cols[k] != f->act.outlier_cols[k])
                    fail_msg("%s (%s): outlier %d is column %d, CPU %d", f->name, family, k,
                             cols[k], f->act.outlier_cols[k]);
        }
        if (gathered) {
            int n16 = (n + 15) / 16 * 16;
            uint16_t *xo = malloc((size_t)s->batch * ld * sizeof *xo);
            download(xo, ctx->xo, (size_t)s->batch * ld * sizeof *xo);
            for (int b = 0; b < s->batch; b++)
                for (int p = 0; p < n16; p++) {
                    const uint16_t *xr = f->x16 + (size_t)b * s->cols;
                    uint16_t want16 = p < n ? xr[f->act.outlier_cols[p]] : 0;
                    if (xo[(size_t)b * ld + p] != want16)
                        fail_msg("%s (%s): gathered outlier activation %d of token %d is %04x, "
                                 "want %04x", f->name, family, p, b, xo[(size_t)b * ld + p],
                                 want16);
                }
            free(xo);
        }
        free(cols);
        free(mask);
        free(want);
    }
    free(xq);
    free(scale);
}

static double fp32_sum_bound(int n) /* γ_n of an n-term fp32 sum */
{
    double u = ldexp(1.0, -24);
    return n * u / (1.0 - n * u);
}

/* Runs one family and mode on the fixture and checks everything listed at the top. */
static void run_case(const fixture *f, cublasHandle_t cublas, cudaStream_t st, ec_kernels kernels,
                     ec_gemv_mode mode)
{
    const setup *s = &f->s;
    int ldy = s->rows + 3, B = s->batch;
    const char *family = ec_kernels_name(kernels);
    /* mixed: batches above EC_CUDA_GATHER_MIN_ROWS (300, 2100) take the fused family's gathered
     * outlier columns */
    ec_cuda_qshape shape = {B, s->cols, f->wrows, (size_t)f->wrows * s->cols, 1, kernels, 0, 0,
                            s->prec == EC_PREC_INT8_MIXED, 0};
    float *d_wide = dev_alloc((size_t)B * f->wrows * sizeof(float), 0xFF);
    ec_cuda_qctx ctx;
    if (ec_cuda_qctx_init(&ctx, &shape, cublas, st, d_wide) != 0) fail_msg("%s", ec_last_error());
    size_t elem = mode == EC_GEMV_SILU_MUL ? 2 : 4, ybytes = (size_t)B * ldy * elem;
    float *y0 = malloc((size_t)B * ldy * sizeof *y0);
    for (int i = 0; i < B * ldy; i++) y0[i] = frand();
    void *d_y = mode == EC_GEMV_ADD ? dev_upload(y0, ybytes) : dev_alloc(ybytes, 0xFF);
    unsigned long long *d_stat = dev_alloc(2 * sizeof(unsigned long long), 0), stat[2];
    /* STORE and SILU_MUL run twice: a call must leave the scan's ticket ready for the next. */
    int reps = mode == EC_GEMV_ADD ? 1 : 2;
    for (int rep = 0; rep < reps; rep++)
        if (ec_cuda_qlinear(&ctx, &f->w, mode, f->d_x, B, d_y, ldy, d_stat) != 0)
            fail_msg("%s (%s, mode %d): %s", f->name, family, (int)mode, ec_last_error());
    CUDA_OK(cudaStreamSynchronize(st));
    int one_pass = kernels == EC_KERNELS_FUSED && B > EC_CUDA_GEMV_MAX_BATCH &&
                   ec_cuda_qlinear_one_pass(&ctx, &f->w, B);
    /* the fused family lists the columns only for its gathers; its epilogue path has the mask
     * and the count (the quantization's) */
    int listed = kernels == EC_KERNELS_REFERENCE || one_pass || B > EC_CUDA_GATHER_MIN_ROWS;
    check_activations(f, &ctx, family, listed, one_pass && f->w.threshold > 0.0f);

    void *y = malloc(ybytes);
    download(y, d_y, ybytes);
    char what[64];
    snprintf(what, sizeof what, "%s mode %s", family,
             mode == EC_GEMV_STORE ? "store" : mode == EC_GEMV_ADD ? "add" : "silu-mul");
    tally t = {what, 0, 0, 0, 0, 0};
    /* Bit-exact without outlier columns; every path sums the outlier products in its own order. */
    int n = f->act.n_outliers;
    int exact = n == 0;
    for (int b = 0; b < B; b++) {
        for (int r = 0; r < s->rows; r++) {
            size_t i = (size_t)b * ldy + r, ri = (size_t)b * f->wrows + r;
            if (mode == EC_GEMV_SILU_MUL) {
                double g = f->yref[ri], u = f->yref[ri + s->rows];
                double want = g / (1.0 + exp(-g)) * u;
                double tol = fabs(want) / 1024 + 1e-7;
                if (!exact) { /* g and u each carry the outlier-sum bound; |silu'| <= 1.1 */
                    double dg = 4 * fp32_sum_bound(n) * f->outlier_mag[ri] + ldexp(fabs(g), -22);
                    double du = 4 * fp32_sum_bound(n) * f->outlier_mag[ri + s->rows] +
                                ldexp(fabs(u), -22);
                    tol += 2 * (dg * fabs(u) + du * fabs(g));
                }
                float got = ec_f16_to_f32(((uint16_t *)y)[i]);
                /* Beyond fp16's range the 16-bit output saturates to inf, as it must. */
                if (isinf(ec_f16_to_f32(ec_f32_to_f16((float)want))) && got == ec_f16_to_f32(ec_f32_to_f16((float)want)))
                    continue;
                tally_check(&t, (long)i, b, r, got, want, tol);
            } else {
                /* The CPU value, plus the residual in ADD mode, in the same fp32 operation. */
                float want = mode == EC_GEMV_ADD ? y0[i] + f->yref[ri] : f->yref[ri];
                double tol = exact ? 0.0
                                   : 4 * fp32_sum_bound(n) * f->outlier_mag[ri] +
                                         ldexp(fabs(want), -23) * 2;
                tally_check(&t, (long)i, b, r, ((float *)y)[i], want, tol);
            }
        }
        /* Padding columns of y must still hold the poison (or the residual). */
        for (int r = s->rows; r < ldy; r++) {
            size_t i = (size_t)b * ldy + r;
            int same = mode == EC_GEMV_ADD ? ((float *)y)[i] == y0[i]
                       : mode == EC_GEMV_SILU_MUL ? ((uint16_t *)y)[i] == 0xFFFF
                                                  : ((uint32_t *)y)[i] == 0xFFFFFFFFu;
            if (!same) fail_msg("%s (%s): padding column %d of token %d was written", f->name, what, r, b);
        }
    }
    tally_done(&t, f->name, (long)B * s->rows);

    download(stat, d_stat, sizeof stat);
    int calls = f->w.threshold > 0.0f ? reps : 0;
    if (stat[0] != (unsigned long long)calls * n || stat[1] != (unsigned long long)calls)
        fail_msg("%s (%s): outlier statistics {%llu columns, %llu calls}, want {%d, %d}", f->name,
                 what, stat[0], stat[1], calls * n, calls);
    ec_cuda_qctx_free(&ctx);
    cudaFree(d_wide);
    cudaFree(d_y);
    cudaFree(d_stat);
    free(y0);
    free(y);
}

/* Both families; then the fused family once more on a path the launch policy does not pick
 * (ec_cuda_test_path_choice): at the one-pass GEMM's batches (9-64) that GEMM also where the
 * policy keeps cuBLAS and the epilogue (plain int8, more than 16 rows); at batch 1 the prepare
 * launch before the GEMV where the GEMV would quantize its own token (widths that are multiples
 * of 8). */
static void run_setup(const setup *s, cublasHandle_t cublas, cudaStream_t st)
{
    fixture f;
    fixture_init(&f, s);
    int *path = s->batch > EC_CUDA_GEMV_MAX_BATCH && s->batch <= EC_CUDA_INT8_MMA_MAX_BATCH
                    ? &ec_cuda_test_path_choice.int8_one_pass_everywhere
                : s->batch == 1 ? &ec_cuda_test_path_choice.int8_prepare_always
                                : NULL;
    for (int k = 0; k < 2 + (path != NULL); k++) {
        ec_kernels kernels = k == 1 ? EC_KERNELS_REFERENCE : EC_KERNELS_FUSED;
        if (k == 2) *path = 1;
        if (s->silu) {
            run_case(&f, cublas, st, kernels, EC_GEMV_SILU_MUL);
        } else {
            run_case(&f, cublas, st, kernels, EC_GEMV_STORE);
            run_case(&f, cublas, st, kernels, EC_GEMV_ADD);
        }
        if (k == 2) *path = 0;
    }
    fixture_free(&f);
}

typedef struct {
    cublasHandle_t cublas;
    cudaStream_t stream;
} gpu;

static int gpu_setup(void **state)
{
    static gpu g;
    if (cudaStreamCreate(&g.stream) != cudaSuccess || cublasCreate(&g.cublas) != CUBLAS_STATUS_SUCCESS ||
        cublasSetStream(g.cublas, g.stream) != CUBLAS_STATUS_SUCCESS)
        return -1;
    *state = &g;
    return 0;
}

static int gpu_teardown(void **state)
{
    gpu *g = *state;
    cublasDestroy(g->cublas);
    cudaStreamDestroy(g->stream);
    return 0;
}

/* The precision / threshold pairs: int8, int8-mixed with no outlier path (t = 0), the default
 * threshold, and a threshold above every value (no outlier column: exactly the int8 result). */
static const struct {
    ec_precision prec;
    float t;
} configs[] = {{EC_PREC_INT8, 0.0f},
               {EC_PREC_INT8_MIXED, 0.0f},
               {EC_PREC_INT8_MIXED, 6.0f},
               {EC_PREC_INT8_MIXED, 1.0e4f}};

/* Small shapes, everything crossed: batches around the GEMV limit (8), the one-pass GEMM's token
 * tiles (9, 17, 64: 2, 4 and 8 tiles of 8) and its limit (64: 100 takes cuBLAS and the epilogue),
 * the outlier scan's and the epilogue's 64-token blocks (100: two of them, the scan ORs across
 * blocks), int8-mixed's gathered outlier columns above 256 token rows (300) and the tensor-core
 * chunk of 2048 token rows (2100), widths that are not multiples of 16 (200) or 8 (100): int8
 * rows and activations are padded to 16 columns with zeros. The one-pass GEMM takes the widths
 * that are multiples of 64: one chunk (64), and 16 chunks split over a cluster of 2 (1024; 21
 * rows, a partial row tile, 3 SiLU·mul tiles). */
static void test_small_shapes(void **state)
{
    gpu *g = *state;
    static const int shapes[][2] = {{1, 64}, {37, 200}, {5, 100}, {21, 1024}};
    static const int batches[] = {1, 3, 8, 9, 17, 64, 100, 300, 2100};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (size_t bi = 0; bi < sizeof batches / sizeof batches[0]; bi++)
            for (size_t ci = 0; ci < 4; ci++)
                for (int p = OUT_NONE; p <= OUT_ALL; p++)
                    for (int silu = 0; silu < 2; silu++) {
                        setup s = {configs[ci].prec, configs[ci].t, shapes[si][0], shapes[si][1],
                                   batches[bi], (outlier_pattern)p, silu};
                        run_setup(&s, g->cublas, g->stream);
                    }
}

/* Llama-2-7B shapes (q/o 4096x4096, gate/up 2x11008x4096, down 4096x11008) at decode batches
 * and across the GEMV / tensor-core switch. */
static void test_llama_shapes(void **state)
{
    gpu *g = *state;
    static const setup list[] = {
        {EC_PREC_INT8_MIXED, 6.0f, 4096, 4096, 1, OUT_ONE, 0},
        {EC_PREC_INT8_MIXED, 6.0f, 4096, 4096, 8, OUT_MANY, 0},
        {EC_PREC_INT8_MIXED, 6.0f, 4096, 4096, 17, OUT_MANY, 0},
        {EC_PREC_INT8, 0.0f, 4096, 4096, 64, OUT_ONE, 0},
        {EC_PREC_INT8_MIXED, 6.0f, 4096, 4096, 64, OUT_ONE, 0},
        {EC_PREC_INT8_MIXED, 6.0f, 11008, 4096, 1, OUT_ONE, 1},
        {EC_PREC_INT8, 0.0f, 11008, 4096, 3, OUT_NONE, 1},
        {EC_PREC_INT8_MIXED, 6.0f, 11008, 4096, 9, OUT_ONE, 1},
        {EC_PREC_INT8_MIXED, 6.0f, 11008, 4096, 64, OUT_MANY, 1},
        {EC_PREC_INT8_MIXED, 6.0f, 11008, 4096, 9, OUT_NONE, 0},
        {EC_PREC_INT8_MIXED, 6.0f, 4096, 11008, 1, OUT_MANY, 0},
        {EC_PREC_INT8, 0.0f, 4096, 11008, 8, OUT_NONE, 0},
        {EC_PREC_INT8_MIXED, 1.0e4f, 4096, 11008, 17, OUT_MANY, 0},
        /* enough epilogue tiles (256 row x 4 token tiles) that the outlier chunks are not split
         * over a cluster (kernels_int8_gemm.cu: epilogue_split); the shapes above are split */
        {EC_PREC_INT8_MIXED, 6.0f, 8192, 512, 256, OUT_MANY, 0},
        /* a NaN activation: the GEMV quantizing its own token (int8: the absmax on half pairs)
         * and, with the prepare path forced, the one-token prepare at batch 1; the per-token
         * prepare at batch 3 */
        {EC_PREC_INT8, 0.0f, 4096, 4096, 1, OUT_NAN, 0},
        {EC_PREC_INT8, 0.0f, 4096, 11008, 1, OUT_NAN, 0},
        {EC_PREC_INT8_MIXED, 6.0f, 4096, 4096, 1, OUT_NAN, 0},
        {EC_PREC_INT8, 0.0f, 4096, 4096, 3, OUT_NAN, 0},
        /* rows wider than the per-token prepare holds (14336): the one-block prepare */
        {EC_PREC_INT8_MIXED, 6.0f, 64, 20000, 1, OUT_MANY, 0},
        {EC_PREC_INT8_MIXED, 6.0f, 64, 20000, 5, OUT_ONE, 0},
    };
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) {
        printf("  %s %dx%d batch %d\n", ec_precision_name(list[i].prec), list[i].rows, list[i].cols,
               list[i].batch);
        run_setup(&list[i], g->cublas, g->stream);
    }
}

/* ec_cuda_qlinear_normed (the fused int8 decode GEMV normalises inside its activation prepare)
 * against ec_cuda_rmsnorm followed by ec_cuda_qlinear, in both families and on both sides of
 * the GEMV batch limit: the normalised rows and the outputs must be bit-identical (the prepare's
 * norm adds the squares in the kernel's order), the outlier statistics the same. The residual
 * rows carry a few columns of 40, so int8-mixed sees outlier columns after the norm. */
static void check_normed(const setup *s, cublasHandle_t cublas, cudaStream_t st,
                         ec_kernels kernels)
{
    fixture f;
    fixture_init(&f, s);
    int B = s->batch, cols = s->cols, ldy = f.wrows;
    size_t xn_bytes = (size_t)B * cols * 2, y_bytes = (size_t)B * ldy * sizeof(float);
    float *res = malloc((size_t)B * cols * sizeof *res), *gamma = malloc((size_t)cols * sizeof *gamma);
    for (int i = 0; i < B * cols; i++) res[i] = i % 97 == 5 ? 40.0f : frand();
    for (int c = 0; c < cols; c++) gamma[c] = 1.0f + 0.5f * frand();
    float *d_res = dev_upload(res, (size_t)B * cols * sizeof *res), *d_gamma = dev_upload(gamma, (size_t)cols * sizeof *gamma);
    ec_cuda_norm norm = {d_res, (size_t)cols, d_gamma, 1e-5f, NULL};
    ec_cuda_qshape shape = {B, cols, f.wrows, (size_t)f.wrows * cols, 1, kernels, 0, 0,
                            s->prec == EC_PREC_INT8_MIXED, 0};
    float *d_wide = dev_alloc((size_t)B * f.wrows * sizeof(float), 0xFF);
    ec_cuda_qctx ctx;
    if (ec_cuda_qctx_init(&ctx, &shape, cublas, st, d_wide) != 0) fail_msg("%s", ec_last_error());
    void *d_xn[2] = {dev_poisoned(xn_bytes), dev_poisoned(xn_bytes)};
    void *d_y[2] = {dev_poisoned(y_bytes), dev_poisoned(y_bytes)};
    unsigned long long *d_stat = dev_alloc(4 * sizeof(unsigned long long), 0), stat[4];
    kernel_ok(ec_cuda_rmsnorm(EC_CUDA_F16, d_res, (size_t)cols, d_gamma, B, cols, 1e-5f, d_xn[0], st));
    kernel_ok(ec_cuda_qlinear(&ctx, &f.w, EC_GEMV_STORE, d_xn[0], B, d_y[0], ldy, d_stat));
    kernel_ok(ec_cuda_qlinear_normed(&ctx, &f.w, EC_GEMV_STORE, &norm, d_xn[1], B, d_y[1], ldy,
                                     d_stat + 2));
    void *xn[2] = {malloc(xn_bytes), malloc(xn_bytes)}, *y[2] = {malloc(y_bytes), malloc(y_bytes)};
    for (int k = 0; k < 2; k++) {
        download(xn[k], d_xn[k], xn_bytes);
        download(y[k], d_y[k], y_bytes);
    }
    download(stat, d_stat, sizeof stat);
    const char *family = ec_kernels_name(kernels);
    if (memcmp(xn[0], xn[1], xn_bytes) != 0)
        fail_msg("%s (%s): the normed call's normalised rows differ from ec_cuda_rmsnorm's", f.name, family);
    if (memcmp(y[0], y[1], y_bytes) != 0)
        fail_msg("%s (%s): the normed call's output differs from rmsnorm + qlinear", f.name, family);
    if (stat[0] != stat[2] || stat[1] != stat[3])
        fail_msg("%s (%s): outlier statistics {%llu, %llu} against {%llu, %llu}", f.name, family,
                 stat[2], stat[3], stat[0], stat[1]);
    if (s->prec == EC_PREC_INT8_MIXED && s->threshold == 6.0f && stat[0] == 0)
        fail_msg("%s (%s): no outlier column after the norm: the test lost its point", f.name, family);
    for (int k = 0; k < 2; k++) {
        cudaFree(d_xn[k]);
        cudaFree(d_y[k]);
        free(xn[k]);
        free(y[k]);
    }
    ec_cuda_qctx_free(&ctx);
    cudaFree(d_wide);
    cudaFree(d_stat);
    cudaFree(d_res);
    cudaFree(d_gamma);
    free(res);
    free(gamma);
    fixture_free(&f);
}

static void test_normed_linear(void **state)
{
    gpu *g = *state;
    static const int batches[] = {1, 3, 8, 9};
    for (size_t ci = 0; ci < 4; ci++)
        for (size_t bi = 0; bi < 4; bi++)
            for (int k = 0; k < 2; k++) {
                setup s = {configs[ci].prec, configs[ci].t, 300, 4096, batches[bi], OUT_NONE, 0};
                check_normed(&s, g->cublas, g->stream, k ? EC_KERNELS_REFERENCE : EC_KERNELS_FUSED);
            }
    /* the one-block prepare of rows wider than the per-token prepare holds */
    for (size_t ci = 0; ci < 4; ci++) {
        setup s = {configs[ci].prec, configs[ci].t, 64, 20000, 6, OUT_NONE, 0};
        check_normed(&s, g->cublas, g->stream, EC_KERNELS_FUSED);
    }
}

static void test_rejects_bad_calls(void **state)
{
    gpu *g = *state;
    ec_cuda_qshape shape = {4, 64, 16, 16 * 64, 1, EC_KERNELS_FUSED, 0, 0, 0, 0};
    ec_cuda_qctx ctx;
    if (ec_cuda_qctx_init(&ctx, &shape, g->cublas, g->stream, NULL) != 0) fail_msg("%s", ec_last_error());
    ec_cuda_qweight w;
    ec_cuda_qweight_place(&w, EC_PREC_INT8, 16, 64, 0.0f, 0);
    assert_int_equal(ec_cuda_qlinear(&ctx, &w, EC_GEMV_STORE, NULL, 5, NULL, 16, NULL), -1);
    assert_non_null(strstr(ec_last_error(), "outside the context"));
    /* SILU_MUL needs a two-segment gate/up weight. */
    assert_int_equal(ec_cuda_qlinear(&ctx, &w, EC_GEMV_SILU_MUL, NULL, 1, NULL, 8, NULL), -1);
    /* The decode prepare keeps 32 columns a thread: a wider input is refused, named. */
    assert_int_equal(ec_cuda_int8_prepare(NULL, NULL, 1, 40000, 40000, 6.0f, NULL, NULL, NULL, NULL,
                                          NULL, g->stream),
                     -1);
    assert_non_null(strstr(ec_last_error(), "40000 columns, at most 32768"));
    /* The GEMV that quantizes its own token loads it in 8-column vectors. */
    assert_int_equal(ec_cuda_int8_gemv_own_fits(4096, (void *)(uintptr_t)256), 1);
    assert_int_equal(ec_cuda_int8_gemv_own_fits(4096, (void *)(uintptr_t)264), 0);
    assert_int_equal(ec_cuda_int8_gemv_own_fits(100, NULL), 0);
    assert_int_equal(ec_cuda_int8_gemv_own_fits(16392, NULL), 0);
    assert_int_equal(ec_cuda_int8_gemv_own(EC_GEMV_STORE, NULL, NULL, 16, 112, NULL, 100, 0.0f, NULL,
                                           NULL, NULL, NULL, NULL, NULL, 16, g->stream),
                     -1);
    assert_non_null(strstr(ec_last_error(), "100 columns (needs a multiple of 8"));
    /* The quantization counts outlier columns only from a mask (refused before any launch). */
    int qcount = 0;
    assert_int_equal(ec_cuda_int8_quantize(NULL, 4, 64, 64, NULL, NULL, NULL, NULL, NULL, NULL,
                                           &qcount, NULL, g->stream),
                     -1);
    assert_non_null(strstr(ec_last_error(), "an outlier count without a mask"));
    /* The GEMM epilogue's outlier product needs the mask with its count, never with osum, and
     * lists at most 32768 columns (refused before anything is launched). */
    unsigned mask = 0;
    int count = 0;
    float osum = 0.0f;
    assert_int_equal(ec_cuda_int8_epilogue(EC_GEMV_STORE, NULL, 4, NULL, 16, NULL, 64, NULL, NULL,
                                           64, &mask, &count, &osum, 16, 1, NULL, 16, g->stream),
                     -1);
    assert_non_null(strstr(ec_last_error(), "both an outlier mask and sums"));
    assert_int_equal(ec_cuda_int8_epilogue(EC_GEMV_STORE, NULL, 4, NULL, 16, NULL, 64, NULL, NULL,
                                           64, &mask, NULL, NULL, 16, 1, NULL, 16, g->stream),
                     -1);
    assert_non_null(strstr(ec_last_error(), "an outlier mask without its count"));
    assert_int_equal(ec_cuda_int8_epilogue(EC_GEMV_STORE, NULL, 4, NULL, 16, NULL, 40000, NULL,
                                           NULL, 40000, &mask, &count, NULL, 16, 1, NULL, 16,
                                           g->stream),
                     -1);
    assert_non_null(strstr(ec_last_error(), "40000 columns with an outlier mask, at most 32768"));
    ec_cuda_qctx_free(&ctx);
}

int main(void)
{
    gpu_test_require_device();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_shapes),
        cmocka_unit_test(test_llama_shapes),
        cmocka_unit_test(test_normed_linear),
        cmocka_unit_test(test_rejects_bad_calls),
    };
    return cmocka_run_group_tests(tests, gpu_setup, gpu_teardown);
}
