/* test_cuda_nf4_fp8.c — the nf4, nf4-dq and fp8 linears of both kernel families (kernels_quant.h)
 * against the CPU formats (ec_qmatrix_quantize / ec_qmatrix_matmul_rows are the ground truth).
 *
 * Weights are quantized on the host and uploaded byte for byte. Each weight is built from up to
 * three separately quantized row ranges (like Wq/Wk/Wv or gate/up), so nf4-dq runs with a
 * segment table. Activations are random values already rounded to the 16-bit format, so both
 * sides multiply the same numbers. Outputs are poisoned (0xFF bytes = NaN) before every launch,
 * and the columns between the output rows and ldy, plus one extra row of y, must stay untouched.
 *
 * Two exact checks pin the layouts element by element (the nf4-dq absmax decode and the
 * whole-weight dequantization, bit for bit); the linear checks then cover the dataflow at every
 * batch path (naive GEMV, dequant + cuBLAS, fused tensor cores 1..64 and chunks of 64)
 * and shape edge (odd columns, short last block, partial tiles, unaligned rows).
 *
 * The carried norm (fp8 at batch 1, ec_cuda_qcarry): the residual add's tile sums of squares,
 * and the normalising linear bit for bit against the norm launch's path; nf4 refuses it.
 *
 * Failures do not stop at the first config: every config is checked and each failing one prints
 * what differs, where and by how much; a summary line per (format, family, dtype, shape) gives
 * the worst error as a fraction of its tolerance. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ecocompute/engine.h"
#include "ecocompute/quant.h"
#include "engine/cuda/gpu_test.h"
#include "engine/cuda/kernels_quant.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The fused family's column-split scratch, shared by every fused call as a backend shares it:
 * each call must leave its counters at zero for the next. */
static ec_cuda_qsplit g_split;

static const ec_cuda_dtype DTYPES[] = {EC_CUDA_F16, EC_CUDA_BF16};
static const char *dname(ec_cuda_dtype t)
{
    return t == EC_CUDA_BF16 ? "bf16" : "fp16";
}
/* Relative rounding of a 16-bit value: half an ulp at 11 / 8 significant bits. */
static double round_rel(ec_cuda_dtype t)
{
    return t == EC_CUDA_BF16 ? 1.0 / 256 : 1.0 / 2048;
}
static const char *MODE_NAME[] = {"store", "add", "silu_mul"};

/* ---- a test weight: up to 3 separately quantized pieces, on the host and the device ---- */
typedef struct {
    ec_precision prec;
    int rows, cols, npieces, row0[EC_CUDA_MAX_SEGMENTS];
    ec_qmatrix q[EC_CUDA_MAX_SEGMENTS];
    float *wdq; /* [rows][cols] the CPU's dequantized weights (ec_qmatrix_dequantize_row) */
    void *dev[2 + 2 * EC_CUDA_MAX_SEGMENTS];
    int ndev;
    ec_cuda_packed_weight w;
} tweight;

static int nblocks(int cols)
{
    return (cols + EC_NF4_BLOCK - 1) / EC_NF4_BLOCK;
}
static size_t row_bytes(ec_precision p, int cols)
{
    return p == EC_PREC_FP8 ? (size_t)cols : ((size_t)cols + 1) / 2;
}

/* Random weights with row magnitudes over 2^-3 .. 2^1 and, in row 0, an all-zero first block
 * (absmax 0, code 7), then split into pieces of ~1/2, ~1/4 and the rest of the rows. In fp8,
 * row 0 of a weight wide enough then holds each of the 254 finite E4M3 values once, times 2^-8
 * (absmax 1.75: scale 2^-8, which leaves every code as at scale 1 and keeps the row's outputs,
 * and silu(gate) * up of them, within fp16's range), so the exact checks decode every code,
 * subnormals and both zeros included. */
static void tweight_make(tweight *tw, ec_precision prec, int rows, int cols, const float *tables)
{
    memset(tw, 0, sizeof *tw);
    tw->prec = prec;
    tw->rows = rows;
    tw->cols = cols;
    float *w = malloc((size_t)rows * cols * sizeof *w);
    for (int r = 0; r < rows; r++) {
        float scale = ldexpf(1.0f, r % 5 - 3);
        for (int c = 0; c < cols; c++)
            w[(size_t)r * cols + c] = frand() * scale;
    }
    if (cols > EC_NF4_BLOCK)
        for (int c = 0; c < EC_NF4_BLOCK; c++)
            w[c] = 0.0f;
    int every_code = prec == EC_PREC_FP8 && cols >= EC_NF4_BLOCK + 254;
    if (every_code)
        for (int code = 0, c = EC_NF4_BLOCK; code < 256; code++)
            if ((code & 0x7f) != 0x7f) w[c++] = ldexpf(ec_e4m3_to_f32((uint8_t)code), -8);
    int cut[EC_CUDA_MAX_SEGMENTS + 1] = {0, rows / 2, rows / 2 + rows / 4, rows};
    for (int p = 0; p < EC_CUDA_MAX_SEGMENTS; p++) {
        if (cut[p + 1] <= cut[p]) continue;
        int i = tw->npieces++;
        tw->row0[i] = cut[p];
        if (ec_qmatrix_quantize(&tw->q[i], prec, w + (size_t)cut[p] * cols, cut[p + 1] - cut[p],
                                cols))
            fail_msg("quantize: %s", ec_last_error());
    }
    if (every_code) {
        const uint8_t *row0 = tw->q[0].data;
        for (int i = 0; i < 254; i++) {
            int code = i < 127 ? i : i + 1; /* 0x7f is skipped */
            if (row0[EC_NF4_BLOCK + i] != code)
                fail_msg("fp8 row 0 column %d: code 0x%02x, want 0x%02x", EC_NF4_BLOCK + i,
                         row0[EC_NF4_BLOCK + i], code);
        }
    }
    /* Concatenate codes and scales as the backend's fused weights would hold them. */
    size_t rb = row_bytes(prec, cols), nsc = prec == EC_PREC_FP8 ? 1 : (size_t)nblocks(cols);
    uint8_t *codes = malloc((size_t)rows * rb);
    float *scales = malloc((size_t)rows * nsc * sizeof *scales);
    tw->wdq = malloc((size_t)rows * cols * sizeof *tw->wdq);
    for (int i = 0; i < tw->npieces; i++) {
        const ec_qmatrix *q = &tw->q[i];
        memcpy(codes + (size_t)tw->row0[i] * rb, q->data, (size_t)q->rows * rb);
        if (q->scales)
            memcpy(scales + (size_t)tw->row0[i] * nsc, q->scales, (size_t)q->rows * nsc * 4);
        for (int r = 0; r < q->rows; r++)
            ec_qmatrix_dequantize_row(q, r, tw->wdq + (size_t)(tw->row0[i] + r) * cols);
    }
    tw->w.prec = prec;
    tw->w.rows = rows;
    tw->w.cols = cols;
    tw->w.tables = tables;
    tw->w.codes = tw->dev[tw->ndev++] = dev_upload(codes, (size_t)rows * rb);
    if (prec != EC_PREC_NF4_DQ)
        tw->w.scales = tw->dev[tw->ndev++] = dev_upload(scales, (size_t)rows * nsc * 4);
    else {
        tw->w.nseg = tw->npieces;
        for (int i = 0; i < tw->npieces; i++) {
            const ec_qmatrix *q = &tw->q[i];
            size_t n = (size_t)q->rows * nsc, n2 = (n + EC_NF4_DQ_BLOCK - 1) / EC_NF4_DQ_BLOCK;
            tw->w.seg[i].row0 = tw->row0[i];
            tw->w.seg[i].qscales = tw->dev[tw->ndev++] = dev_upload(q->qscales, n);
            tw->w.seg[i].qscale_absmax = tw->dev[tw->ndev++] = dev_upload(q->qscale_absmax, n2 * 4);
            tw->w.seg[i].qscale_offset = q->qscale_offset;
        }
    }
    free(codes);
    free(scales);
    free(w);
}

static void tweight_free(tweight *tw)
{
    for (int i = 0; i < tw->npieces; i++)
        ec_qmatrix_free(&tw->q[i]);
    for (int i = 0; i < tw->ndev; i++)
        cudaFree(tw->dev[i]);
    free(tw->wdq);
}

/* ---- CPU references, split over threads by rows ---- */
typedef struct {
    const tweight *tw;
    ec_cuda_dtype t;
    const float *x; /* [batch][cols] */
    int batch, r0, r1;
    float *ycpu;                /* [batch][rows] ec_qmatrix_matmul_rows */
    double *ref16, *refp, *mag; /* [batch][rows] sum x*round16(w), sum x*pair_weight, sum |x*w| */
} ref_job;

/* Weight (r, c) of the format as value * scale: fp8 the e4m3 value and the row scale, nf4 the
 * code's value and the block absmax (decoded from the 8-bit code for nf4-dq). */
static void weight_parts(const tweight *tw, int r, int c, float *value, float *scale)
{
    int i = tw->npieces - 1;
    while (tw->row0[i] > r) i--;
    const ec_qmatrix *q = &tw->q[i];
    int qr = r - tw->row0[i];
    const uint8_t *codes = q->data;
    if (tw->prec == EC_PREC_FP8) {
        *value = ec_e4m3_to_f32(codes[(size_t)qr * tw->cols + c]);
        *scale = q->scales[qr];
        return;
    }
    uint8_t byte = codes[(size_t)qr * row_bytes(tw->prec, tw->cols) + c / 2];
    *value = ec_nf4_code[c % 2 ? byte & 15 : byte >> 4];
    size_t k = (size_t)qr * nblocks(tw->cols) + c / EC_NF4_BLOCK;
    *scale = tw->prec == EC_PREC_NF4 ? q->scales[k]
                                     : ec_dynamic_map()[q->qscales[k]] *
                                               q->qscale_absmax[k / EC_NF4_DQ_BLOCK] +
                                           q->qscale_offset;
}

/* The CPU format's weight in fp32. */
static float fp32_weight(const tweight *tw, int r, int c)
{
    float value, scale;
    weight_parts(tw, r, c, &value, &scale);
    return value * scale;
}

/* The fused nf4 kernels' weight (kernels_nf4.cu): T(T(value) * T(absmax)), the product of two
 * 16-bit numbers being exact in fp32 and so rounded once, as the paired 16-bit multiply does. */
static float nf4_pair_weight(const tweight *tw, ec_cuda_dtype t, int r, int c)
{
    float value, scale;
    weight_parts(tw, r, c, &value, &scale);
    return from16(t, to16(t, from16(t, to16(t, value)) * from16(t, to16(t, scale))));
}

static void *ref_worker(void *arg)
{
    ref_job *j = arg;
    const tweight *tw = j->tw;
    int rows = tw->rows, cols = tw->cols;
    for (int i = 0; i < tw->npieces; i++) {
        const ec_qmatrix *q = &tw->q[i];
        int lo = j->r0 > tw->row0[i] ? j->r0 : tw->row0[i];
        int hi = j->r1 < tw->row0[i] + q->rows ? j->r1 : tw->row0[i] + q->rows;
        if (lo >= hi) continue;
        float *yp = malloc((size_t)j->batch * q->rows * sizeof *yp);
        ec_qmatrix_matmul_rows(q, j->x, NULL, j->batch, yp, lo - tw->row0[i], hi - tw->row0[i]);
        for (int b = 0; b < j->batch; b++)
            for (int r = lo; r < hi; r++)
                j->ycpu[(size_t)b * rows + r] = yp[(size_t)b * q->rows + (r - tw->row0[i])];
        free(yp);
    }
    int nf4 = tw->prec != EC_PREC_FP8;
    float *w16 = malloc((size_t)cols * sizeof *w16), *wp = malloc((size_t)cols * sizeof *wp);
    for (int r = j->r0; r < j->r1; r++) {
        const float *wr = tw->wdq + (size_t)r * cols;
        for (int c = 0; c < cols; c++) {
            w16[c] = from16(j->t, to16(j->t, wr[c]));
            wp[c] = nf4 ? nf4_pair_weight(tw, j->t, r, c) : 0.0f;
        }
        for (int b = 0; b < j->batch; b++) {
            const float *xb = j->x + (size_t)b * cols;
            double s16 = 0, sp = 0, m = 0;
            for (int c = 0; c < cols; c++) {
                s16 += (double)xb[c] * w16[c];
                sp += (double)xb[c] * wp[c];
                m += fabs((double)xb[c] * wr[c]);
            }
            j->ref16[(size_t)b * rows + r] = s16;
            j->refp[(size_t)b * rows + r] = sp;
            j->mag[(size_t)b * rows + r] = m;
        }
    }
    free(w16);
    free(wp);
    return NULL;
}

static void cpu_reference(const tweight *tw, ec_cuda_dtype t, const float *x, int batch,
                          float *ycpu, double *ref16, double *refp, double *mag)
{
    enum { MAX_THREADS = 32 };
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nt = ncpu < 1 ? 1 : ncpu > MAX_THREADS ? MAX_THREADS : (int)ncpu;
    if (nt > tw->rows) nt = tw->rows;
    pthread_t th[MAX_THREADS];
    ref_job jobs[MAX_THREADS];
    for (int i = 0; i < nt; i++) {
        jobs[i] = (ref_job){tw,
                            t,
                            x,
                            batch,
                            (int)((long)tw->rows * i / nt),
                            (int)((long)tw->rows * (i + 1) / nt),
                            ycpu,
                            ref16,
                            refp,
                            mag};
        if (pthread_create(&th[i], NULL, ref_worker, &jobs[i])) fail_msg("pthread_create failed");
    }
    for (int i = 0; i < nt; i++)
        pthread_join(th[i], NULL);
}

/* The weights a path multiplies (kernels_quant.h, "Numerics"): the CPU format's fp32 weights
 * (the reference nf4 GEMV at batch 1, the fused fp8 kernels), those rounded to 16 bits (the
 * reference family's dequant + GEMM: batch > 1, fp8 at any batch), or the fused nf4 kernels'
 * nf4_pair_weight — with how many 16-bit roundings each differs from the format's weight. */
typedef enum { W_FP32, W_ROUND16, W_NF4_PAIR } weights;
static weights weights_of(ec_precision p, int fused, int batch)
{
    if (!fused) return p == EC_PREC_FP8 || batch > 1 ? W_ROUND16 : W_FP32;
    return p == EC_PREC_FP8 ? W_FP32 : W_NF4_PAIR;
}
static const int ROUNDINGS[] = {[W_FP32] = 0, [W_ROUND16] = 1, [W_NF4_PAIR] = 3};
static const char *WEIGHTS_NAME[] = {[W_FP32] = "fp32", [W_ROUND16] = "16-bit", [W_NF4_PAIR] = "nf4 pair"};

/* ---- one linear config ---- */
typedef struct {
    int fails;    /* failing configs so far */
    double worst; /* largest |err| / tol over the group */
} tally;

typedef struct {
    long bad, first_b, first_r;
    double worst, got, want, cpu, tol;
    long wb, wr;
} verdict;

static void judge(verdict *v, long b, long r, double got, double want, double cpu, double tol)
{
    double err = fabs(got - want), ratio = err / tol;
    if (!(err <= tol)) { /* NaN fails */
        if (v->bad++ == 0) {
            v->first_b = b;
            v->first_r = r;
        }
        if (isnan(got)) ratio = INFINITY;
    }
    if (!(ratio <= v->worst)) {
        v->worst = ratio;
        v->got = got;
        v->want = want;
        v->cpu = cpu;
        v->tol = tol;
        v->wb = b;
        v->wr = r;
    }
}

static void check_linear(cublasHandle_t cublas, const tweight *tw, ec_cuda_dtype t, int fused,
                         ec_gemv_mode mode, int batch, int ldx, const void *d_x, const float *ycpu,
                         const double *ref16, const double *refp, const double *mag, tally *tl)
{
    int silu = mode == EC_GEMV_SILU_MUL, rows = tw->rows;
    int out = silu ? rows / 2 : rows, ldy = out + 3;
    weights wk = weights_of(tw->prec, fused, batch);
    const double *ref = wk == W_ROUND16 ? ref16 : wk == W_NF4_PAIR ? refp : NULL;
    size_t esz = silu ? 2 : 4, ybytes = (size_t)(batch + 1) * ldy * esz; /* + a guard row */
    float *y0 = malloc((size_t)(batch + 1) * ldy * sizeof *y0);
    for (long i = 0; i < (long)(batch + 1) * ldy; i++)
        y0[i] = frand();
    void *d_y = mode == EC_GEMV_ADD ? dev_upload(y0, ybytes) : dev_poisoned(ybytes);
    ec_cuda_packed_scratch s = {0};
    if (!fused) {
        s.absmax = dev_poisoned((size_t)rows * nblocks(tw->cols) * 4);
        s.w16 = dev_poisoned((size_t)rows * tw->cols * 2);
        s.gu = dev_poisoned((size_t)batch * rows * 4);
    }
    int rc = fused ? ec_cuda_packed_linear_fused(t, mode, &tw->w, d_x, ldx, batch, d_y, ldy,
                                                 &g_split, NULL, 0)
                   : ec_cuda_packed_linear_reference(cublas, t, mode, &tw->w, d_x, ldx, batch, d_y,
                                                     ldy, &s, 0);
    kernel_ok(rc);
    void *y = malloc(ybytes);
    download(y, d_y, ybytes);

    verdict v = {0};
    long untouched_bad = 0, ub = -1, ur = -1;
    for (int b = 0; b <= batch; b++)
        for (int r = 0; r < ldy; r++) {
            size_t i = (size_t)b * ldy + r;
            if (b == batch || r >= out) { /* must be exactly as before the call */
                int same = silu                  ? ((uint16_t *)y)[i] == 0xFFFF
                           : mode == EC_GEMV_ADD ? ((float *)y)[i] == y0[i]
                                                 : ((uint32_t *)y)[i] == 0xFFFFFFFFu;
                if (!same && untouched_bad++ == 0) {
                    ub = b;
                    ur = r;
                }
                continue;
            }
            /* Tolerances. Both sides sum the same fp32 products (or, on the 16-bit-weight paths,
             * the double reference sums the same rounded weights) in different orders: each
             * rounding of a partial sum is <= 2^-24 |partial| <= 2^-24 sum|x w|, and with random
             * signs they add like a random walk (seen ~1e-7 sum|x w|). 1e-5 sum|x w| (168 ulps
             * of the magnitude) also covers the tensor cores' truncating adds, while a decoding
             * error (a wrong code moves a weight by >= 4 % of its block's absmax) is caught at
             * these shapes, and exactly by the layout tests below. Against the CPU format the
             * 16-bit-weight paths may differ by up to ROUNDINGS 16-bit roundings per weight on
             * top. */
            size_t k = (size_t)b * rows;
            if (silu) {
                double g = ref ? ref[k + r] : ycpu[k + r],
                       u = ref ? ref[k + r + out] : ycpu[k + r + out];
                double eg = 1e-5 * mag[k + r] + 1e-6, eu = 1e-5 * mag[k + r + out] + 1e-6;
                double sg = g / (1.0 + exp(-g)), want = sg * u;
                double tol =
                    fabs(want) * round_rel(t) + 1.1 * eg * fabs(u) + fabs(sg) * eu + eg * eu + 1e-6;
                double cpu_g = ycpu[k + r], cpu_u = ycpu[k + r + out];
                judge(&v, b, r, from16(t, ((uint16_t *)y)[i]), want,
                      cpu_g / (1.0 + exp(-cpu_g)) * cpu_u, tol);
            } else {
                double base = mode == EC_GEMV_ADD ? y0[i] : 0.0;
                double tol = 1e-5 * mag[k + r] + 1e-6;
                double want = base + (ref ? ref[k + r] : ycpu[k + r]);
                judge(&v, b, r, ((float *)y)[i], want, base + ycpu[k + r], tol);
                if (ref) /* the format's own numerics, within its weights' roundings */
                    judge(&v, b, r, ((float *)y)[i], base + ycpu[k + r], base + ycpu[k + r],
                          tol + ROUNDINGS[wk] * round_rel(t) * mag[k + r]);
            }
        }
    if (v.bad || untouched_bad) {
        tl->fails++;
        print_error("FAIL %s %s %s %s batch %d %dx%d (ldx %d, ldy %d, %s weights): %ld of %ld "
                    "outputs off, first [b=%ld][r=%ld]; worst [b=%ld][r=%ld] got %.9g want %.9g "
                    "(cpu format %.9g) |diff| %.3g = %.3g x tol %.3g; %ld untouched elements "
                    "changed (first [b=%ld][col=%ld])\n",
                    ec_precision_name(tw->prec), fused ? "fused" : "reference", dname(t),
                    MODE_NAME[mode], batch, tw->rows, tw->cols, ldx, ldy, WEIGHTS_NAME[wk],
                    v.bad, (long)batch * out, v.first_b, v.first_r, v.wb, v.wr, v.got, v.want,
                    v.cpu, fabs(v.got - v.want), v.worst, v.tol, untouched_bad, ub, ur);
    }
    if (v.worst > tl->worst) tl->worst = v.worst;
    cudaFree(d_y);
    cudaFree(s.absmax);
    cudaFree(s.w16);
    cudaFree(s.gu);
    free(y0);
    free(y);
}

/* All families, modes and the given batches on one weight shape. */
static int run_shape(cublasHandle_t cublas, const float *tables, ec_precision prec, int rows,
                     int cols, const int *batches, int nbatch, const ec_cuda_dtype *dtypes,
                     int ndtypes, int ldx_pad)
{
    tweight tw;
    tweight_make(&tw, prec, rows, cols, tables);
    int ldx = cols + ldx_pad, fails = 0;
    for (int di = 0; di < ndtypes; di++) {
        ec_cuda_dtype t = dtypes[di];
        tally tl[2] = {{0, 0}, {0, 0}};
        int configs = 0;
        for (int bi = 0; bi < nbatch; bi++) {
            int batch = batches[bi];
            uint16_t *xh = malloc((size_t)batch * ldx * 2);
            float *xf = malloc((size_t)batch * cols * sizeof *xf);
            for (int b = 0; b < batch; b++)
                for (int c = 0; c < ldx; c++) {
                    /* pad columns hold NaN: a kernel reading past cols would poison its sums */
                    uint16_t h = c < cols ? to16(t, frand()) : 0xFFFF;
                    xh[(size_t)b * ldx + c] = h;
                    if (c < cols) xf[(size_t)b * cols + c] = from16(t, h);
                }
            void *d_x = dev_upload(xh, (size_t)batch * ldx * 2);
            size_t n = (size_t)batch * rows;
            float *ycpu = malloc(n * sizeof *ycpu);
            double *ref16 = malloc(n * sizeof *ref16), *refp = malloc(n * sizeof *refp),
                   *mag = malloc(n * sizeof *mag);
            cpu_reference(&tw, t, xf, batch, ycpu, ref16, refp, mag);
            for (int fused = 0; fused < 2; fused++)
                for (int m = 0; m < 3; m++) {
                    if (m == EC_GEMV_SILU_MUL && rows % 2) continue;
                    check_linear(cublas, &tw, t, fused, (ec_gemv_mode)m, batch, ldx, d_x, ycpu,
                                 ref16, refp, mag, &tl[fused]);
                    configs++;
                }
            cudaFree(d_x);
            free(xh);
            free(xf);
            free(ycpu);
            free(ref16);
            free(refp);
            free(mag);
        }
        for (int f = 0; f < 2; f++) {
            printf("%-6s %-9s %s %5d x %-5d: %d configs, %d failed, worst |err|/tol %.3g\n",
                   ec_precision_name(prec), f ? "fused" : "reference", dname(t), rows, cols,
                   configs / 2, tl[f].fails, tl[f].worst);
            fails += tl[f].fails;
        }
    }
    tweight_free(&tw);
    return fails;
}

static const ec_precision PRECS[] = {EC_PREC_NF4, EC_PREC_NF4_DQ, EC_PREC_FP8};

/* Small shapes: every batch path (1 GEMV, 2..64 tensor cores, 100 = two chunks of 64), odd
 * columns (pad nibble), short last blocks, partial 128-column chunks and 16-row tiles, odd
 * output counts for SiLU·mul (74 and 2 rows = 37 and 1 features); x rows padded (ldx = cols + 8
 * keeps 16-byte alignment when cols allows, so (40, 96) and (1, 64) take the vector path). */
static void test_linear_small(void **state)
{
    (void)state;
    cublasHandle_t cublas;
    float *tables;
    if (cublasCreate(&cublas) != CUBLAS_STATUS_SUCCESS) fail_msg("cublasCreate failed");
    kernel_ok(ec_cuda_quant_tables(&tables));
    static const int shapes[][2] = {{1, 64},   {2, 33},   {5, 63}, {37, 200},
                                    {74, 200}, {64, 130}, {40, 96}};
    static const int batches[] = {1, 2, 3, 8, 9, 16, 17, 64, 100};
    int fails = 0;
    for (int p = 0; p < 3; p++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            fails += run_shape(cublas, tables, PRECS[p], shapes[s][0], shapes[s][1], batches,
                               (int)(sizeof batches / sizeof batches[0]), DTYPES, gpu_test_dtypes(), 8);
    cudaFree(tables);
    cublasDestroy(cublas);
    if (fails) fail_msg("%d small-shape configs failed (see FAIL lines above)", fails);
}

/* Llama-2-7B / Llama-3.1-8B / TinyLlama shapes, x rows unpadded (the vector path). Batches cover
 * both kernels of each family at fp16; bf16 once per kernel, to keep the CPU reference short. */
static void test_linear_llama(void **state)
{
    (void)state;
    cublasHandle_t cublas;
    float *tables;
    if (cublasCreate(&cublas) != CUBLAS_STATUS_SUCCESS) fail_msg("cublasCreate failed");
    kernel_ok(ec_cuda_quant_tables(&tables));
    static const int shapes[][2] = {{4096, 4096}, {11008, 4096}, {4096, 11008}, {2048, 5632}};
    static const int b16[] = {1, 3, 8, 9, 17, 64}, bbf[] = {1, 17};
    int fails = 0;
    for (int p = 0; p < 3; p++) {
        for (int s = 0; s < 4; s++)
            fails += run_shape(cublas, tables, PRECS[p], shapes[s][0], shapes[s][1], b16, 6,
                               &DTYPES[0], 1, 0);
        if (gpu_test_dtypes() > 1)
            fails += run_shape(cublas, tables, PRECS[p], 4096, 4096, bbf, 2, &DTYPES[1], 1, 0);
    }
    cudaFree(tables);
    cublasDestroy(cublas);
    if (fails) fail_msg("%d Llama-shape configs failed (see FAIL lines above)", fails);
}

/* ---- exact layout checks ---- */

/* The fused kernels' decode, weight by weight: one-hot activations (x[b] = 1 at column c0 + b)
 * make every product and partial sum exact, so y[b][r] must equal the weight exactly — a wrong
 * code, nibble order, table entry or fragment position anywhere shows up as a mismatch, which
 * the random-activation checks (a tolerance of 1e-5 sum|x w|) could miss for a single weight.
 * The tensor-core kernels (batch 1 and 8: qmma_kernel; 64: qgemm_kernel, with the column split or
 * without) multiply nf4_pair_weight for nf4, and for fp8 the exact e4m3 value whose sum they
 * scale in fp32, i.e. fp32_weight. */
static void check_fused_decode(const tweight *tw, ec_cuda_dtype t, int B, const ec_cuda_qsplit *split)
{
    int rows = tw->rows, cols = tw->cols;
    uint16_t *xh = malloc((size_t)B * cols * 2);
    float *y = malloc((size_t)B * rows * sizeof *y);
    for (int c0 = 0; c0 < cols; c0 += B) {
        int batch = cols - c0 < B ? cols - c0 : B;
        for (int b = 0; b < batch; b++)
            for (int c = 0; c < cols; c++)
                xh[(size_t)b * cols + c] = to16(t, c == c0 + b ? 1.0f : 0.0f);
        void *d_x = dev_upload(xh, (size_t)batch * cols * 2);
        float *d_y = dev_poisoned((size_t)batch * rows * 4);
        kernel_ok(ec_cuda_packed_linear_fused(t, EC_GEMV_STORE, &tw->w, d_x, cols, batch, d_y,
                                              rows, split, NULL, 0));
        download(y, d_y, (size_t)batch * rows * 4);
        cudaFree(d_x);
        cudaFree(d_y);
        for (int b = 0; b < batch; b++)
            for (int r = 0; r < rows; r++) {
                float got = y[(size_t)b * rows + r],
                      want = tw->prec == EC_PREC_FP8 ? fp32_weight(tw, r, c0 + b)
                                                     : nf4_pair_weight(tw, t, r, c0 + b);
                if (!(got == want)) {
                    /* the parts tell a wrong block scale (got / value near scale) from a wrong
                     * code or position (far from it) */
                    float value, scale;
                    weight_parts(tw, r, c0 + b, &value, &scale);
                    fail_msg("%s %s %dx%d fused decode of weight [%d][%d] (batch %d): got "
                             "%.9g want %.9g (value %.9g, scale %.9g; got / value %.9g)",
                             ec_precision_name(tw->prec), dname(t), rows, cols, r, c0 + b, batch,
                             got, want, value, scale, got / value);
                }
            }
    }
    free(xh);
    free(y);
}

/* The nf4-dq absmax decode equals map[q] * absmax2 + offset (two fp32 roundings) bit for bit,
 * the whole-weight dequantization equals round16(CPU dequantized weight) bit for bit, and the
 * fused kernels decode every weight exactly (check_fused_decode). */
static void test_layouts_exact(void **state)
{
    (void)state;
    float *tables;
    kernel_ok(ec_cuda_quant_tables(&tables));
    /* (16, 256): 16-byte aligned rows, the kernels' vector path; the others their byte path */
    static const int shapes[][2] = {{5, 63}, {37, 200}, {300, 1000}, {3, 5000}, {16, 256}};
    const float *map = ec_dynamic_map();
    for (int p = 0; p < 3; p++)
        for (int s = 0; s < 5; s++) {
            tweight tw;
            int rows = shapes[s][0], cols = shapes[s][1], nb = nblocks(cols);
            tweight_make(&tw, PRECS[p], rows, cols, tables);
            float *d_am = NULL;
            if (PRECS[p] == EC_PREC_NF4_DQ) {
                d_am = dev_poisoned((size_t)rows * nb * 4);
                kernel_ok(ec_cuda_nf4dq_absmax(&tw.w, d_am, 0));
                float *am = malloc((size_t)rows * nb * 4);
                download(am, d_am, (size_t)rows * nb * 4);
                for (int i = 0; i < tw.npieces; i++) {
                    const ec_qmatrix *q = &tw.q[i];
                    for (long k = 0; k < (long)q->rows * nb; k++) {
                        float v = map[q->qscales[k]] * q->qscale_absmax[k / EC_NF4_DQ_BLOCK];
                        v = v + q->qscale_offset;
                        float got = am[(size_t)tw.row0[i] * nb + k];
                        if (memcmp(&got, &v, 4) != 0)
                            fail_msg("nf4-dq %dx%d absmax of segment %d block %ld (row %ld): got "
                                     "%.9g want %.9g",
                                     rows, cols, i, k, tw.row0[i] + k / nb, got, v);
                    }
                }
                free(am);
            }
            for (int di = 0; di < gpu_test_dtypes(); di++) {
                ec_cuda_dtype t = DTYPES[di];
                uint16_t *d_w16 = dev_poisoned((size_t)rows * cols * 2);
                uint16_t *w16 = malloc((size_t)rows * cols * 2);
                kernel_ok(ec_cuda_qdequant(t, &tw.w, d_am, d_w16, 0));
                download(w16, d_w16, (size_t)rows * cols * 2);
                for (int r = 0; r < rows; r++)
                    for (int c = 0; c < cols; c++) {
                        size_t i = (size_t)r * cols + c;
                        uint16_t want = to16(t, tw.wdq[i]);
                        if (w16[i] != want)
                            fail_msg(
                                "%s %s %dx%d dequantized [%d][%d]: got 0x%04x (%g) want 0x%04x "
                                "(%g, cpu fp32 %.9g)",
                                ec_precision_name(PRECS[p]), dname(t), rows, cols, r, c, w16[i],
                                from16(t, w16[i]), want, from16(t, want), tw.wdq[i]);
                    }
                cudaFree(d_w16);
                free(w16);
                check_fused_decode(&tw, t, 1, NULL);
                check_fused_decode(&tw, t, 8, NULL);
                check_fused_decode(&tw, t, 64, &g_split);
                check_fused_decode(&tw, t, 64, NULL);
            }
            cudaFree(d_am);
            tweight_free(&tw);
        }
    cudaFree(tables);
}

/* ---- the carried norm (ec_cuda_qcarry) ---- */

/* The producer: an fp8 residual add at batch 1 leaves the sums of squares of the row it wrote by
 * 16-row tiles (within fp32 summation order of the host's sums of the downloaded row), and
 * nothing past them. rows = 200 ends in a partial tile; 4352 takes two row tiles per warp. */
static void check_sumsq_producer(ec_cuda_dtype t, int rows)
{
    enum { COLS = 128 };
    const ec_precision prec = EC_PREC_FP8;
    tweight tw;
    tweight_make(&tw, prec, rows, COLS, NULL);
    int tiles = (rows + 15) / 16;
    float *res = malloc((size_t)rows * sizeof *res), *ss = malloc((size_t)(tiles + 1) * 4);
    uint16_t xh[COLS];
    for (int r = 0; r < rows; r++)
        res[r] = frand();
    for (int c = 0; c < COLS; c++)
        xh[c] = to16(t, frand());
    float *d_res = dev_upload(res, (size_t)rows * 4), *d_ss = dev_poisoned((size_t)(tiles + 1) * 4);
    void *d_x = dev_upload(xh, sizeof xh);
    ec_cuda_qcarry carry = {d_ss, NULL};
    kernel_ok(ec_cuda_packed_linear_fused(t, EC_GEMV_ADD, &tw.w, d_x, COLS, 1, d_res, rows,
                                          &g_split, &carry, 0));
    download(res, d_res, (size_t)rows * 4);
    download(ss, d_ss, (size_t)(tiles + 1) * 4);
    for (int i = 0; i < tiles; i++) {
        double want = 0.0;
        for (int r = 16 * i; r < rows && r < 16 * i + 16; r++)
            want += (double)res[r] * res[r];
        if (!(fabs(ss[i] - want) <= 1e-6 * want))
            fail_msg("%s %s ADD of %d rows: sum of squares of tile %d got %.9g want %.9g",
                     ec_precision_name(prec), dname(t), rows, i, ss[i], want);
    }
    uint32_t past;
    memcpy(&past, &ss[tiles], 4);
    if (past != 0xFFFFFFFFu)
        fail_msg("%s %s ADD of %d rows wrote past its %d tile sums", ec_precision_name(prec),
                 dname(t), rows, tiles);
    cudaFree(d_res);
    cudaFree(d_ss);
    cudaFree(d_x);
    free(res);
    free(ss);
    tweight_free(&tw);
}

/* The consumer against the norm's launch: a residual of multiples of 1/16 up to 2 has squares
 * that add up exactly in fp32 in any order (at most 1024 / 256 each, 2^23 / 256 for 8192
 * columns), so the carried tile sums give the norm kernel's 1/rms bit for bit and every
 * activation must round the same, T(x * inv * w): the outputs must be identical. x is poisoned,
 * so a kernel that read it would write NaN. rows 256 takes one row tile per warp, 4352 two;
 * dim 5120 (Qwen2.5-14B) stages part of its row after the sums (ec_stage_carried_row holds 4096
 * columns with them). */
static void check_carried_consumer(ec_cuda_dtype t, ec_gemv_mode mode, int rows, int dim)
{
    const float eps = 1e-5f;
    const ec_precision prec = EC_PREC_FP8;
    tweight tw;
    tweight_make(&tw, prec, rows, dim, NULL);
    size_t xbytes = (size_t)dim * 2;
    float *res = malloc((size_t)dim * 4), *nw = malloc((size_t)dim * 4),
          *ss = calloc((size_t)dim / 16, 4);
    for (int c = 0; c < dim; c++) {
        res[c] = (float)(rand() % 65 - 32) / 16.0f;
        nw[c] = frand();
        ss[c / 16] += res[c] * res[c];
    }
    float *d_res = dev_upload(res, (size_t)dim * 4), *d_nw = dev_upload(nw, (size_t)dim * 4),
          *d_ss = dev_upload(ss, (size_t)dim / 16 * 4);
    void *d_xn = dev_poisoned(xbytes), *d_x = dev_poisoned(xbytes);
    int out = mode == EC_GEMV_SILU_MUL ? rows / 2 : rows;
    size_t ybytes = (size_t)out * (mode == EC_GEMV_SILU_MUL ? 2 : 4);
    void *d_want = dev_poisoned(ybytes), *d_got = dev_poisoned(ybytes);
    kernel_ok(ec_cuda_rmsnorm(t, d_res, (size_t)dim, d_nw, 1, dim, eps, d_xn, 0));
    kernel_ok(ec_cuda_packed_linear_fused(t, mode, &tw.w, d_xn, dim, 1, d_want, out, &g_split,
                                          NULL, 0));
    ec_cuda_norm norm = {d_res, (size_t)dim, d_nw, eps, d_ss};
    ec_cuda_qcarry carry = {NULL, &norm};
    kernel_ok(ec_cuda_packed_linear_fused(t, mode, &tw.w, d_x, dim, 1, d_got, out, &g_split,
                                          &carry, 0));
    uint8_t *want = malloc(ybytes), *got = malloc(ybytes), *x = malloc(xbytes);
    download(want, d_want, ybytes);
    download(got, d_got, ybytes);
    download(x, d_x, xbytes);
    size_t esz = mode == EC_GEMV_SILU_MUL ? 2 : 4;
    for (int r = 0; r < out; r++)
        if (memcmp(got + r * esz, want + r * esz, esz) != 0) {
            double g = esz == 2 ? from16(t, ((uint16_t *)got)[r]) : ((float *)got)[r],
                   w = esz == 2 ? from16(t, ((uint16_t *)want)[r]) : ((float *)want)[r];
            fail_msg("%s %s %s %d x %d with the carried norm: output %d got %.9g, with the norm "
                     "launched %.9g",
                     ec_precision_name(prec), dname(t), MODE_NAME[mode], rows, dim, r, g, w);
        }
    for (size_t i = 0; i < xbytes; i++)
        if (x[i] != 0xFF) fail_msg("the carried norm's consumer wrote its x (byte %zu)", i);
    cudaFree(d_res);
    cudaFree(d_nw);
    cudaFree(d_ss);
    cudaFree(d_xn);
    cudaFree(d_x);
    cudaFree(d_want);
    cudaFree(d_got);
    free(want);
    free(got);
    free(x);
    free(res);
    free(nw);
    free(ss);
    tweight_free(&tw);
}

/* A call with a carried norm that the entry must refuse before any launch, `msg` in its error. */
static void expect_carry_refused(const ec_cuda_packed_weight *w, ec_gemv_mode mode, int batch,
                                 const ec_cuda_qcarry *carry, const char *msg)
{
    assert_int_equal(ec_cuda_packed_linear_fused(EC_CUDA_F16, mode, w, NULL, w->cols, batch, NULL,
                                                 w->rows, NULL, carry, 0),
                     -1);
    if (!strstr(ec_last_error(), msg))
        fail_msg("refused with \"%s\", not \"%s\"", ec_last_error(), msg);
}

/* fp8 carries the norm; nf4 and nf4-dq refuse it (kernels_nf4.cu, CARRY_NORM). */
static void test_carried_norm(void **state)
{
    (void)state;
    for (int di = 0; di < gpu_test_dtypes(); di++) {
        ec_cuda_dtype t = DTYPES[di];
        check_sumsq_producer(t, 200);
        check_sumsq_producer(t, 4352);
        check_carried_consumer(t, EC_GEMV_STORE, 256, 256);
        check_carried_consumer(t, EC_GEMV_STORE, 4352, 256);
        check_carried_consumer(t, EC_GEMV_SILU_MUL, 256, 256);
        check_carried_consumer(t, EC_GEMV_SILU_MUL, 4352, 256);
        check_carried_consumer(t, EC_GEMV_STORE, 256, 5120);
    }
    float *tables, sumsq[4];
    kernel_ok(ec_cuda_quant_tables(&tables));
    ec_cuda_qcarry sums = {sumsq, NULL};
    for (int p = 0; p < 2; p++) {
        tweight tw;
        tweight_make(&tw, PRECS[p], 32, 64, tables);
        expect_carry_refused(&tw.w, EC_GEMV_ADD, 1, &sums, "does not carry the norm");
        tweight_free(&tw);
    }
    cudaFree(tables);
}

static void test_rejects_bad_input(void **state)
{
    (void)state;
    uint8_t codes = 0;
    float scale = 1.0f;
    ec_cuda_packed_weight w = {EC_PREC_NF4_DQ, 4, 64, &codes, NULL, 0, {{0}}, &scale};
    assert_int_equal(
        ec_cuda_packed_linear_fused(EC_CUDA_F16, EC_GEMV_STORE, &w, NULL, 64, 1, NULL, 4, NULL, NULL, 0), -1);
    assert_non_null(strstr(ec_last_error(), "segments"));
    w.prec = EC_PREC_NF4;
    w.scales = &scale;
    w.rows = 3;
    assert_int_equal(
        ec_cuda_packed_linear_fused(EC_CUDA_F16, EC_GEMV_SILU_MUL, &w, NULL, 64, 1, NULL, 4, NULL, NULL, 0),
        -1);
    assert_non_null(strstr(ec_last_error(), "even"));
    assert_int_equal(
        ec_cuda_packed_linear_fused(EC_CUDA_F16, EC_GEMV_STORE, &w, NULL, 63, 1, NULL, 4, NULL, NULL, 0), -1);
    w.rows = 4;
    _Alignas(16) float row[64] = {0};
    float sumsq[4] = {0};
    ec_cuda_norm norm = {row, 64, row, 1e-5f, sumsq};
    ec_cuda_qcarry normed = {NULL, &norm}, sums = {sumsq, NULL};
    const char *needs = "carried norm needs a store or SiLU·mul at batch 1";
    expect_carry_refused(&w, EC_GEMV_STORE, 2, &normed, needs);
    expect_carry_refused(&w, EC_GEMV_ADD, 1, &normed, needs);
    expect_carry_refused(&w, EC_GEMV_STORE, 1, &sums, "sums of squares come from a residual add");
    expect_carry_refused(&w, EC_GEMV_ADD, 2, &sums, "at batch 1 (got mode 1, batch 2)");
    norm.x = row + 1; /* not on a 16-byte boundary */
    expect_carry_refused(&w, EC_GEMV_STORE, 1, &normed, needs);
    norm.x = row;
    w.cols = 80; /* not a multiple of 32 */
    expect_carry_refused(&w, EC_GEMV_STORE, 1, &normed, "(got 80)");
    /* nor of 128 (llama2.c's stories15M): the consumer's MMA lanes would read past its staged
     * row, an illegal address, so the norm is launched instead */
    w.cols = 288;
    expect_carry_refused(&w, EC_GEMV_STORE, 1, &normed, "multiples of 128 up to 8192 (got 288)");
    w.cols = EC_CUDA_QCARRY_MAX_COLS + 32; /* past what a CTA stages */
    expect_carry_refused(&w, EC_GEMV_STORE, 1, &normed, "(got 8224)");
    w.cols = 64;
    w.prec = EC_PREC_INT8;
    assert_int_equal(
        ec_cuda_packed_linear_fused(EC_CUDA_F16, EC_GEMV_STORE, &w, NULL, 64, 1, NULL, 4, NULL, NULL, 0), -1);
    assert_non_null(strstr(ec_last_error(), "int8"));
}

/* The 17-64-token kernel has two builds of one source: wgmma on compute capability 9.0 (the
 * default there), mma.sync elsewhere. The second group runs the checks that reach it again with
 * mma.sync forced, so a GPU that picks wgmma tests both. */
static int force_mma_sync(void **state)
{
    (void)state;
    ec_cuda_test_path_choice.qgemm_mma_sync = 1;
    return 0;
}
static int default_kernels(void **state)
{
    (void)state;
    ec_cuda_test_path_choice.qgemm_mma_sync = 0;
    return 0;
}

int main(void)
{
    gpu_test_require_device();
    if (ec_cuda_qsplit_alloc(&g_split, 16384)) {
        fprintf(stderr, "split scratch: %s\n", ec_last_error());
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rejects_bad_input),
        cmocka_unit_test(test_layouts_exact),
        cmocka_unit_test(test_linear_small),
        cmocka_unit_test(test_linear_llama),
        cmocka_unit_test(test_carried_norm),
    };
    const struct CMUnitTest mma_sync[] = {
        cmocka_unit_test(test_layouts_exact),
        cmocka_unit_test(test_linear_small),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    failed += cmocka_run_group_tests_name("mma.sync at 17-64 tokens", mma_sync, force_mma_sync,
                                          default_kernels);
    ec_cuda_qsplit_free(&g_split);
    return failed;
}
