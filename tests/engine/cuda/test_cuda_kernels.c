/* test_cuda_kernels.c — every CUDA kernel against a CPU reference written here in double.
 *
 * Inputs are rounded to the 16-bit format first (with the quant layer's conversions), so the
 * references see exactly the values the GPU sees; what remains is fp32 accumulation order and
 * the final rounding of 16-bit outputs, which set each test's tolerance. Output buffers are
 * filled with 0xFF bytes (NaN in fp16, bf16 and fp32) before every launch, so an element a
 * kernel forgets to write fails the comparison. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ecocompute/engine.h"
#include "ecocompute/quant.h"
#include "engine/cuda/kernels.h"
#include "engine/cuda/gpu_test.h"

#include <math.h>
#include <string.h>

static const ec_cuda_dtype DTYPES[] = {EC_CUDA_F16, EC_CUDA_BF16};
static const char *dname(ec_cuda_dtype t) { return t == EC_CUDA_BF16 ? "bf16" : "fp16"; }
/* Relative rounding step of a 16-bit output (half an ulp at 11 / 8 significant bits). */
static double round_rel(ec_cuda_dtype t) { return t == EC_CUDA_BF16 ? 1.0 / 256 : 1.0 / 2048; }

/* Random 16-bit host array and its fp32 values. */
static uint16_t *rand16(ec_cuda_dtype t, size_t n, float scale, float *values)
{
    uint16_t *h = malloc(n * 2);
    for (size_t i = 0; i < n; i++) {
        h[i] = to16(t, frand() * scale);
        values[i] = from16(t, h[i]);
    }
    return h;
}

/* |got - want| <= tol (NaN fails). */
static void expect_near(double got, double want, double tol, const char *what, long i)
{
    if (!(fabs(got - want) <= tol))
        fail_msg("%s[%ld]: got %.7g, want %.7g (tolerance %.3g)", what, i, got, want, tol);
}

/* ---- conversion and embedding: exact ---- */
static void test_convert_embed(void **state)
{
    (void)state;
    for (int di = 0; di < gpu_test_dtypes(); di++) {
        ec_cuda_dtype t = DTYPES[di];
        int rows = 37, cols = 20, ld = 24;
        float *src = malloc((size_t)rows * cols * 4);
        for (int i = 0; i < rows * cols; i++) src[i] = frand() * 1000.0f * (float)(i % 7);
        float *d_src = dev_upload(src, (size_t)rows * cols * 4);
        uint16_t *d_dst = dev_poisoned((size_t)rows * ld * 2), *got = malloc((size_t)rows * ld * 2);
        kernel_ok(ec_cuda_convert_f32(t, d_src, d_dst, rows, cols, ld, 0));
        download(got, d_dst, (size_t)rows * ld * 2);
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < ld; c++) {
                uint16_t want = c < cols ? to16(t, src[r * cols + c]) : 0xFFFF; /* pad untouched */
                if (got[r * ld + c] != want)
                    fail_msg("%s convert [%d][%d]: got 0x%04x want 0x%04x", dname(t), r, c,
                             got[r * ld + c], want);
            }
        /* Embedding of a dense table [vocab][ld] (ld % 8 == 0): exact widening. */
        int tokens[5] = {0, 36, 5, 5, 17};
        CUDA_OK(cudaMemset(d_dst, 0, (size_t)rows * ld * 2));
        kernel_ok(ec_cuda_convert_f32(t, d_src, d_dst, rows, cols, ld, 0));
        int *d_tok = dev_upload(tokens, sizeof tokens);
        float *d_x = dev_poisoned(5 * (size_t)ld * 4), x[5 * 24];
        kernel_ok(ec_cuda_embed(t, d_dst, d_tok, 5, ld, d_x, 0));
        download(x, d_x, sizeof x);
        for (int i = 0; i < 5; i++)
            for (int c = 0; c < ld; c++) {
                float want = c < cols ? from16(t, to16(t, src[tokens[i] * cols + c])) : 0.0f;
                if (x[i * ld + c] != want)
                    fail_msg("%s embed [%d][%d]: got %g want %g", dname(t), i, c, x[i * ld + c], want);
            }
        cudaFree(d_src);
        cudaFree(d_dst);
        cudaFree(d_tok);
        cudaFree(d_x);
        free(src);
        free(got);
    }
}

/* ---- RMSNorm: fp32 statistics, one 16-bit rounding ---- */
static void test_rmsnorm(void **state)
{
    (void)state;
    for (int di = 0; di < gpu_test_dtypes(); di++) {
        ec_cuda_dtype t = DTYPES[di];
        int rows = 5, dim = 4104, stride = 4200;
        float eps = 1e-5f;
        float *x = malloc((size_t)rows * stride * 4), *w = malloc((size_t)dim * 4);
        for (int i = 0; i < rows * stride; i++) x[i] = frand() * (float)(1 + i % 3);
        for (int i = 0; i < dim; i++) w[i] = 1.0f + 0.5f * frand();
        float *d_x = dev_upload(x, (size_t)rows * stride * 4), *d_w = dev_upload(w, (size_t)dim * 4);
        uint16_t *d_out = dev_poisoned((size_t)rows * dim * 2), *out = malloc((size_t)rows * dim * 2);
        kernel_ok(ec_cuda_rmsnorm(t, d_x, (size_t)stride, d_w, rows, dim, eps, d_out, 0));
        download(out, d_out, (size_t)rows * dim * 2);
        for (int r = 0; r < rows; r++) {
            double ss = 0;
            for (int c = 0; c < dim; c++) ss += (double)x[r * stride + c] * x[r * stride + c];
            double inv = 1.0 / sqrt(ss / dim + eps);
            for (int c = 0; c < dim; c++) {
                double want = x[r * stride + c] * inv * w[c];
                /* 16-bit rounding of the output plus ~1e-6 from fp32 statistics */
                expect_near(from16(t, out[r * dim + c]), want, fabs(want) * (round_rel(t) + 1e-5) + 1e-6,
                            dname(t), r * dim + c);
            }
        }
        cudaFree(d_x);
        cudaFree(d_w);
        cudaFree(d_out);
        free(x);
        free(w);
        free(out);
    }
}

/* ---- linear layers: fp32 GEMV (batch 1), tensor-core GEMV (batch 2-8) and cuBLAS (batch 17),
 * three epilogues ---- */
static void check_linear(cublasHandle_t cublas, ec_cuda_dtype t, ec_gemv_mode mode, int batch,
                         int rows, int cols)
{
    int wrows = mode == EC_GEMV_SILU_MUL ? 2 * rows : rows, ldy = rows + 3;
    float *wf = malloc((size_t)wrows * cols * 4), *xf = malloc((size_t)batch * cols * 4);
    uint16_t *w = rand16(t, (size_t)wrows * cols, 1.0f, wf), *x = rand16(t, (size_t)batch * cols, 1.0f, xf);
    void *d_w = dev_upload(w, (size_t)wrows * cols * 2), *d_x = dev_upload(x, (size_t)batch * cols * 2);
    size_t ybytes = (size_t)batch * ldy * (mode == EC_GEMV_SILU_MUL ? 2 : 4);
    float *y0 = malloc((size_t)batch * ldy * 4);
    for (int i = 0; i < batch * ldy; i++) y0[i] = frand();
    void *d_y = mode == EC_GEMV_ADD ? dev_upload(y0, ybytes) : dev_poisoned(ybytes);
    float *d_gu = dev_poisoned((size_t)batch * 2 * rows * 4);
    kernel_ok(ec_cuda_linear(cublas, t, mode, d_w, d_x, batch, rows, cols, d_y, ldy, d_gu, 0));
    void *y = malloc(ybytes);
    download(y, d_y, ybytes);
    char what[96];
    snprintf(what, sizeof what, "%s linear mode %d batch %d %dx%d", dname(t), (int)mode, batch,
             rows, cols);
    for (int b = 0; b < batch; b++)
        for (int r = 0; r < rows; r++) {
            double d0 = 0, d1 = 0, mag0 = 0, mag1 = 0;
            for (int c = 0; c < cols; c++) {
                double xv = xf[(size_t)b * cols + c];
                d0 += wf[(size_t)r * cols + c] * xv;
                mag0 += fabs(wf[(size_t)r * cols + c] * xv);
                if (mode == EC_GEMV_SILU_MUL) {
                    d1 += wf[(size_t)(r + rows) * cols + c] * xv;
                    mag1 += fabs(wf[(size_t)(r + rows) * cols + c] * xv);
                }
            }
            /* fp32 accumulation (GEMV shuffles or tensor-core GEMM): 5e-5 of the summed term
             * magnitudes, ~3x the error seen from 4104-term sums, far below any wrong index. */
            double acc_tol = 5e-5 * mag0 + 1e-6;
            size_t i = (size_t)b * ldy + r;
            if (mode == EC_GEMV_SILU_MUL) {
                double silu = d0 / (1.0 + exp(-d0)), want = silu * d1;
                double tol = fabs(want) * round_rel(t) + 5e-5 * (mag0 * fabs(d1) + mag1 * fabs(silu)) + 1e-6;
                expect_near(from16(t, ((uint16_t *)y)[i]), want, tol, what, (long)i);
            } else {
                double want = d0 + (mode == EC_GEMV_ADD ? y0[i] : 0.0);
                expect_near(((float *)y)[i], want, acc_tol, what, (long)i);
            }
        }
    cudaFree(d_w);
    cudaFree(d_x);
    cudaFree(d_y);
    cudaFree(d_gu);
    free(wf);
    free(xf);
    free(w);
    free(x);
    free(y0);
    free(y);
}

static void test_linear(void **state)
{
    (void)state;
    cublasHandle_t cublas;
    if (cublasCreate(&cublas) != CUBLAS_STATUS_SUCCESS) fail_msg("cublasCreate failed");
    static const int batches[] = {1, 3, 8, 17};
    /* At batch 1 row pairs split over warps (ec_gemv_split): 2 warps at 4097x4104 and 3x1000 (a
     * lone last row), 4 at 5x2056, 8 at 6x4104, none at 64x8. The tensor-core GEMV takes
     * 16-byte loads only where a row is whole 32-column pieces (37x2048; 21x2080 ends in a
     * quarter of a 128-column chunk), else checked ones. */
    static const int shapes[][2] = {{4097, 4104}, {64, 8},    {3, 1000}, {5, 2056},
                                    {6, 4104},    {37, 2048}, {21, 2080}};
    for (int di = 0; di < gpu_test_dtypes(); di++)
        for (int m = 0; m < 3; m++)
            for (size_t bi = 0; bi < sizeof batches / sizeof batches[0]; bi++)
                for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
                    /* The big shape's SiLU·mul at batch 1 and 17 only keeps the run short. */
                    if (si == 0 && m == EC_GEMV_SILU_MUL && batches[bi] > 1 && batches[bi] < 17)
                        continue;
                    check_linear(cublas, DTYPES[di], (ec_gemv_mode)m, batches[bi], shapes[si][0],
                                 shapes[si][1]);
                }
    cublasDestroy(cublas);
}

static void test_gemv_rejects_bad_shapes(void **state)
{
    (void)state;
    assert_int_equal(ec_cuda_gemv(EC_CUDA_F16, EC_GEMV_STORE, NULL, NULL, 1, 4, 12, NULL, 4, 0), -1);
    assert_non_null(strstr(ec_last_error(), "multiple of 8"));
    assert_int_equal(ec_cuda_gemv(EC_CUDA_F16, EC_GEMV_STORE, NULL, NULL, 9, 4, 16, NULL, 4, 0), -1);
    /* one token row is the fp32 kernel's */
    assert_int_equal(ec_cuda_gemv_mma(EC_CUDA_F16, EC_GEMV_STORE, NULL, NULL, 1, 4, 16, NULL, 4, 0),
                     -1);
    assert_non_null(strstr(ec_last_error(), "needs batch 2-8"));
}

/* ---- rope + KV write ---- */
static void check_rope(ec_cuda_dtype t, int interleaved, int with_bias, int pos)
{
    ec_cuda_attn_shape s = {4, 2, 64, pos + 8, interleaved};
    int batch = 2, n = 3, ntok = batch * n, half = s.head_dim / 2;
    int q_dim = s.n_heads * s.head_dim, kv_dim = s.n_kv_heads * s.head_dim, w = q_dim + 2 * kv_dim;
    float *qkv = malloc((size_t)ntok * w * 4), *bias = malloc((size_t)w * 4), inv[32];
    for (int i = 0; i < ntok * w; i++) qkv[i] = frand();
    for (int i = 0; i < w; i++) bias[i] = 0.1f * frand();
    for (int j = 0; j < half; j++) inv[j] = 1.0f / powf(10000.0f, (float)(2 * j) / (float)s.head_dim);
    float *d_qkv = dev_upload(qkv, (size_t)ntok * w * 4), *d_bias = dev_upload(bias, (size_t)w * 4);
    float *d_inv = dev_upload(inv, sizeof inv);
    int *d_pos = dev_upload(&pos, sizeof pos);
    size_t cache_n = (size_t)batch * s.n_kv_heads * s.max_seq * s.head_dim;
    float *d_q = dev_poisoned((size_t)ntok * q_dim * 4), *q = malloc((size_t)ntok * q_dim * 4);
    uint16_t *d_k = dev_poisoned(cache_n * 2), *d_v = dev_poisoned(cache_n * 2);
    uint16_t *k = malloc(cache_n * 2), *v = malloc(cache_n * 2);
    kernel_ok(ec_cuda_rope_kv(t, &s, d_qkv, with_bias ? d_bias : NULL, d_inv, d_pos, batch, n, d_q,
                              d_k, d_v, 0));
    download(q, d_q, (size_t)ntok * q_dim * 4);
    download(k, d_k, cache_n * 2);
    download(v, d_v, cache_n * 2);
    int step = interleaved ? 2 : 1, partner = interleaved ? 1 : half;
    for (int tk = 0; tk < ntok; tk++) {
        int b = tk / n, p = pos + tk % n;
        const float *row = qkv + (size_t)tk * w;
        for (int head = 0; head < s.n_heads + s.n_kv_heads; head++)
            for (int j = 0; j < half; j++) {
                int off = head * s.head_dim + j * step;
                double x0 = row[off] + (with_bias ? bias[off] : 0.0);
                double x1 = row[off + partner] + (with_bias ? bias[off + partner] : 0.0);
                double a = (double)((float)p * inv[j]); /* the angle is formed in fp32, as on the CPU */
                double y0 = x0 * cos(a) - x1 * sin(a), y1 = x0 * sin(a) + x1 * cos(a);
                if (head < s.n_heads) {
                    expect_near(q[(size_t)tk * q_dim + off], y0, 2e-6, "rope q", off);
                    expect_near(q[(size_t)tk * q_dim + off + partner], y1, 2e-6, "rope q", off);
                } else {
                    int kh = head - s.n_heads, d = j * step;
                    size_t at = (((size_t)b * s.n_kv_heads + kh) * s.max_seq + p) * s.head_dim;
                    double tol0 = fabs(y0) * round_rel(t) + 2e-6, tol1 = fabs(y1) * round_rel(t) + 2e-6;
                    expect_near(from16(t, k[at + d]), y0, tol0, "rope k", (long)(at + d));
                    expect_near(from16(t, k[at + d + partner]), y1, tol1, "rope k", (long)(at + d));
                }
            }
        for (int e = 0; e < kv_dim; e++) {
            int h = e / s.head_dim, d = e % s.head_dim;
            double want = row[q_dim + kv_dim + e] + (with_bias ? bias[q_dim + kv_dim + e] : 0.0);
            size_t at = (((size_t)b * s.n_kv_heads + h) * s.max_seq + p) * s.head_dim + d;
            expect_near(from16(t, v[at]), want, fabs(want) * round_rel(t) + 1e-7, "rope v", (long)at);
        }
    }
    /* Positions outside [pos, pos + n) must stay untouched. */
    size_t before = ((size_t)0 * s.n_kv_heads * s.max_seq + (pos > 0 ? pos - 1 : pos + n)) * s.head_dim;
    assert_int_equal(k[before], 0xFFFF);
    assert_int_equal(v[before], 0xFFFF);
    cudaFree(d_qkv);
    cudaFree(d_bias);
    cudaFree(d_inv);
    cudaFree(d_pos);
    cudaFree(d_q);
    cudaFree(d_k);
    cudaFree(d_v);
    free(qkv);
    free(bias);
    free(q);
    free(k);
    free(v);
}

static void test_rope(void **state)
{
    (void)state;
    for (int di = 0; di < gpu_test_dtypes(); di++)
        for (int il = 0; il < 2; il++) {
            check_rope(DTYPES[di], il, il, 0);
            check_rope(DTYPES[di], il, !il, 4093); /* large angles: argument reduction */
        }
}

/* ---- attention: decode with splits, prefill with the causal mask ----
 * split_len 0: the tiled prefill kernel (ec_cuda_attention_prefill), n positions per sequence;
 * else the decode split kernels (ec_cuda_attention), n = 1. heads / kv_heads query and kv heads. */
static void check_attention_heads(ec_cuda_dtype t, int heads, int kv_heads, int head_dim, int ctx,
                                  int n, int split_len)
{
    ec_cuda_attn_shape s = {heads, kv_heads, head_dim, ctx + 3, 0};
    int batch = 2, ntok = batch * n, pos = ctx - n; /* last query sees ctx positions */
    int n_splits = split_len ? (ctx + split_len - 1) / split_len : 1;
    int group = s.n_heads / s.n_kv_heads;
    size_t cache_n = (size_t)batch * s.n_kv_heads * s.max_seq * head_dim;
    float *kf = malloc(cache_n * 4), *vf = malloc(cache_n * 4);
    uint16_t *k = rand16(t, cache_n, 1.0f, kf), *v = rand16(t, cache_n, 1.0f, vf);
    /* positions no query sees are NaN: a kernel that weights them by 0 still fails */
    for (size_t row = 0; row < cache_n / head_dim; row++)
        if ((int)(row % s.max_seq) >= ctx)
            for (int i = 0; i < head_dim; i++) k[row * head_dim + i] = v[row * head_dim + i] = 0xFFFF;
    size_t qn = (size_t)ntok * s.n_heads * head_dim;
    float *q = malloc(qn * 4);
    for (size_t i = 0; i < qn; i++) q[i] = 2.0f * frand();
    void *d_k = dev_upload(k, cache_n * 2), *d_v = dev_upload(v, cache_n * 2);
    float *d_q = dev_upload(q, qn * 4);
    int *d_pos = dev_upload(&pos, sizeof pos);
    float *d_part = dev_poisoned((size_t)ntok * s.n_heads * n_splits * (head_dim + 2) * 4);
    uint16_t *d_out = dev_poisoned(qn * 2), *out = malloc(qn * 2);
    if (split_len) {
        assert_int_equal(n, 1);
        kernel_ok(ec_cuda_attention_prepare(split_len));
        kernel_ok(ec_cuda_attention(t, &s, d_q, d_k, d_v, d_pos, batch, n_splits, split_len,
                                    d_part, d_out, 0));
    } else {
        kernel_ok(ec_cuda_attention_prefill(t, &s, d_q, d_k, d_v, d_pos, batch, n, d_out, 0));
    }
    download(out, d_out, qn * 2);
    double *sc = malloc((size_t)ctx * sizeof(double));
    char what[96];
    snprintf(what, sizeof what, "%s %s attention heads %d/%d hd %d ctx %d n %d split %d",
             dname(t), split_len ? "split" : "tiled", heads, kv_heads, head_dim, ctx, n, split_len);
    for (int tk = 0; tk < ntok; tk++) {
        int b = tk / n, len = pos + tk % n + 1;
        for (int h = 0; h < s.n_heads; h++) {
            const float *qh = q + ((size_t)tk * s.n_heads + h) * head_dim;
            size_t base = ((size_t)b * s.n_kv_heads + h / group) * s.max_seq * head_dim;
            double mx = -INFINITY, sum = 0;
            for (int p = 0; p < len; p++) {
                double d = 0;
                for (int i = 0; i < head_dim; i++) d += qh[i] * (double)kf[base + (size_t)p * head_dim + i];
                sc[p] = d / sqrt((double)head_dim);
                if (sc[p] > mx) mx = sc[p];
            }
            for (int p = 0; p < len; p++) sum += (sc[p] = exp(sc[p] - mx));
            for (int i = 0; i < head_dim; i++) {
                double o = 0;
                for (int p = 0; p < len; p++) o += sc[p] * vf[base + (size_t)p * head_dim + i];
                o /= sum;
                size_t at = ((size_t)tk * s.n_heads + h) * head_dim + i;
                /* |o| <= 1; fp32 softmax and sums, then one 16-bit rounding */
                expect_near(from16(t, out[at]), o, fabs(o) * round_rel(t) + 2e-5, what, (long)at);
            }
        }
    }
    cudaFree(d_k);
    cudaFree(d_v);
    cudaFree(d_q);
    cudaFree(d_pos);
    cudaFree(d_part);
    cudaFree(d_out);
    free(kf);
    free(vf);
    free(k);
    free(v);
    free(q);
    free(out);
    free(sc);
}

static void check_attention(ec_cuda_dtype t, int head_dim, int ctx, int n, int split_len)
{
    check_attention_heads(t, 4, 2, head_dim, ctx, n, split_len);
}

/* The decode split policy: whole multiples of 32, at most 64 splits, fewer and longer splits as
 * the rows (heads x sequences) grow, one split per row once the rows alone fill the device. */
static void test_decode_split_policy(void **state)
{
    (void)state;
    static const int seqs[] = {1, 40, 640, 5000, 100000};
    static const int rows[] = {1, 8, 32, 256, 2048, 1 << 20};
    for (int i = 0; i < 5; i++) {
        int prev = 0;
        for (int r = 0; r < 6; r++) {
            int len = ec_cuda_decode_split_len(seqs[i], rows[r]);
            int splits = (seqs[i] + len - 1) / len;
            if (len < 32 || len % 32 != 0 || splits > 64 || len < prev)
                fail_msg("max_seq %d, %d rows: split of %d positions (%d splits; %d at fewer rows)",
                         seqs[i], rows[r], len, splits, prev);
            prev = len;
        }
        if (prev < seqs[i])
            fail_msg("max_seq %d: %d positions per split with %d rows", seqs[i], prev, rows[5]);
    }
}

static void test_attention_decode(void **state)
{
    (void)state;
    static const int ctxs[] = {1, 7, 300, 5000};
    for (int di = 0; di < gpu_test_dtypes(); di++)
        for (int c = 0; c < 4; c++) {
            check_attention(DTYPES[di], 128, ctxs[c], 1, 128);
            check_attention(DTYPES[di], 128, ctxs[c], 1, ec_cuda_decode_split_len(ctxs[c], 8));
            check_attention(DTYPES[di], 8, ctxs[c], 1, ec_cuda_decode_split_len(ctxs[c], 8));
        }
    check_attention(EC_CUDA_F16, 64, 5000, 1, 4096); /* one long split in shared memory */
}

/* The tiled prefill kernel: a whole prompt from position 0, chunks after cached prefixes, row
 * tiles of 64 (full, partial, several), key tiles of 32 cut by the causal edge, every head_dim
 * class (4-float groups per thread 1..4, partly used), several query heads a block */
static void test_attention_prefill(void **state)
{
    (void)state;
    static const int cases[][3] = {
        /* head_dim, ctx, n */
        {64, 9, 9},     {64, 40, 6},   {32, 300, 17}, {128, 200, 130}, {128, 64, 64},
        {128, 300, 1},  {8, 70, 70},   {96, 50, 50},  {200, 33, 33},   {256, 100, 65},
        {128, 700, 200},
    };
    /* chunks of at most 32 positions: blocks of 2, 4 or 8 query heads of a kv group (a group of
     * 8, of 12 = 4 x 3, of 1), rows of a head cut short, long and short prefixes */
    static const int gqa[][5] = {
        /* heads, kv heads, head_dim, ctx, n */
        {16, 2, 128, 600, 32}, {16, 2, 64, 40, 5},  {16, 2, 128, 17, 17}, {24, 2, 128, 300, 9},
        {8, 8, 64, 100, 32},   {16, 2, 96, 33, 1},  {16, 2, 64, 70, 33},
    };
    for (int di = 0; di < gpu_test_dtypes(); di++) {
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
            check_attention(DTYPES[di], cases[c][0], cases[c][1], cases[c][2], 0);
        for (size_t c = 0; c < sizeof gqa / sizeof *gqa; c++)
            check_attention_heads(DTYPES[di], gqa[c][0], gqa[c][1], gqa[c][2], gqa[c][3],
                                  gqa[c][4], 0);
    }
}

/* ---- fused decode attention: byte-identical to rope + KV write + attention ----
 * Two steps (positions ctx-1 and ctx) on one pair of cache copies, so the second step also
 * checks that the first left its combine tickets at zero. */
static void check_attention_decode_fused(ec_cuda_dtype t, ec_cuda_attn_shape s, int ctx,
                                         int split_len, int clustered, int with_bias)
{
    int batch = 2, hd = s.head_dim, half = hd / 2;
    int q_dim = s.n_heads * hd, kv_dim = s.n_kv_heads * hd, w = q_dim + 2 * kv_dim;
    int n_splits = (s.max_seq + split_len - 1) / split_len; /* as the captured decode step */
    size_t cache_n = (size_t)batch * s.n_kv_heads * s.max_seq * hd, qn = (size_t)batch * q_dim;
    float *kf = malloc(cache_n * 4), *qkv = malloc((size_t)batch * w * 4), *bias = malloc((size_t)w * 4);
    float inv[EC_CUDA_MAX_HEAD_DIM / 2];
    uint16_t *k = rand16(t, cache_n, 1.0f, kf), *v = rand16(t, cache_n, 1.0f, kf);
    for (int i = 0; i < w; i++) bias[i] = 0.1f * frand();
    for (int j = 0; j < half; j++) inv[j] = 1.0f / powf(10000.0f, (float)(2 * j) / (float)hd);
    void *k2 = dev_upload(k, cache_n * 2), *v2 = dev_upload(v, cache_n * 2); /* two kernels */
    void *k1 = dev_upload(k, cache_n * 2), *v1 = dev_upload(v, cache_n * 2); /* fused */
    float *d_bias = with_bias ? dev_upload(bias, (size_t)w * 4) : NULL, *d_inv = dev_upload(inv, sizeof inv);
    float *d_q = dev_poisoned(qn * 4), *d_qkv = dev_poisoned((size_t)batch * w * 4);
    size_t part_n = (size_t)batch * s.n_heads * n_splits * (hd + 2);
    float *part2 = dev_poisoned(part_n * 4), *part1 = dev_poisoned(part_n * 4);
    unsigned *tickets = dev_alloc((size_t)batch * s.n_heads * 4, 0), tk[64];
    uint16_t *out2 = dev_poisoned(qn * 2), *out1 = dev_poisoned(qn * 2);
    uint16_t *a = malloc(cache_n * 2), *b = malloc(cache_n * 2);
    int *d_pos = dev_alloc(sizeof(int), 0);
    char what[96];
    kernel_ok(ec_cuda_attention_prepare(split_len));
    for (int pos = ctx - 1; pos <= ctx; pos++) {
        snprintf(what, sizeof what,
                 "%s fused decode attention hd %d heads %d/%d pos %d split %d%s", dname(t), hd,
                 s.n_heads, s.n_kv_heads, pos, split_len, clustered ? " clustered" : "");
        for (int i = 0; i < batch * w; i++) qkv[i] = 2.0f * frand();
        CUDA_OK(cudaMemcpy(d_qkv, qkv, (size_t)batch * w * 4, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(d_pos, &pos, sizeof pos, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemset(out1, 0xFF, qn * 2));
        kernel_ok(ec_cuda_rope_kv(t, &s, d_qkv, d_bias, d_inv, d_pos, batch, 1, d_q, k2, v2, 0));
        kernel_ok(ec_cuda_attention(t, &s, d_q, k2, v2, d_pos, batch, n_splits, split_len,
                                    part2, out2, 0));
        kernel_ok(ec_cuda_attention_decode(t, &s, d_qkv, d_bias, d_inv, d_pos, batch, n_splits,
                                           split_len, clustered, k1, v1, part1, tickets, out1, 0));
        download(a, out2, qn * 2);
        download(b, out1, qn * 2);
        for (size_t i = 0; i < qn; i++)
            if (a[i] != b[i]) fail_msg("%s: out[%zu] 0x%04x, two kernels 0x%04x", what, i, b[i], a[i]);
        void *caches[2][2] = {{k2, k1}, {v2, v1}};
        for (int c = 0; c < 2; c++) {
            download(a, caches[c][0], cache_n * 2);
            download(b, caches[c][1], cache_n * 2);
            for (size_t i = 0; i < cache_n; i++)
                if (a[i] != b[i])
                    fail_msg("%s: %c cache[%zu] 0x%04x, two kernels 0x%04x", what, "kv"[c], i, b[i], a[i]);
        }
        download(tk, tickets, (size_t)batch * s.n_heads * 4);
        for (int i = 0; i < batch * s.n_heads; i++)
            if (tk[i] != 0) fail_msg("%s: ticket %d left at %u", what, i, tk[i]);
    }
    void *dev[] = {k1, v1, k2, v2, d_bias, d_inv, d_q, d_qkv, part1, part2, tickets, out1, out2, d_pos};
    void *host[] = {kf, qkv, bias, k, v, a, b};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++) cudaFree(dev[i]);
    for (size_t i = 0; i < sizeof host / sizeof *host; i++) free(host[i]);
}

static void test_attention_decode_fused(void **state)
{
    (void)state;
    static const int ctxs[] = {1, 7, 300, 5000};
    for (int di = 0; di < gpu_test_dtypes(); di++)
        for (int c = 0; c < 4; c++) {
            ec_cuda_attn_shape llama = {8, 8, 128, ctxs[c] + 3, 0}, gqa = {8, 2, 64, ctxs[c] + 3, 1};
            check_attention_decode_fused(DTYPES[di], llama, ctxs[c],
                                         ec_cuda_decode_split_len(ctxs[c] + 3, 8), 0, c & 1);
            check_attention_decode_fused(DTYPES[di], gqa, ctxs[c], 32, 0, !(c & 1));
            /* a batch that fills the device: one split per (head, sequence) */
            check_attention_decode_fused(DTYPES[di], gqa, ctxs[c],
                                         ec_cuda_decode_split_len(ctxs[c] + 3, 1 << 20), 0, c & 1);
        }
    ec_cuda_attn_shape tiny = {4, 2, 8, 40, 0};
    /* one split longer than the cache */
    check_attention_decode_fused(EC_CUDA_F16, tiny, 20, 128, 0, 1);

    /* Clustered rows, as many as the device's clusters hold (sm_90+ code: 8 or more; on an
     * H100 16, where a batch-1 row of 640 positions must cluster): the policy's 11 splits of 64
     * at 643 positions; 16 splits (the most) of which 2 or all hold positions, the rest meeting
     * only the barriers; splits of 32, and of 64 (a softmax of two scores a lane) at head_dim 64,
     * 128 and 256 (two combined dimensions a thread). Code without clusters (a compute_80 build
     * on any GPU) never clusters: ec_cuda_decode_cluster_max is 0 there. */
    int dev = 0, most = ec_cuda_decode_cluster_max();
    CUDA_OK(cudaGetDevice(&dev));
    if (!(ec_cuda_code_features(dev) & EC_GPU_CLUSTERS)) {
        if (most != 0) fail_msg("code without clusters runs clusters of %d decode blocks", most);
        return;
    }
    if (most < 8) fail_msg("code with clusters runs clusters of %d decode blocks", most);
    if (most == 16 && !ec_cuda_decode_clustered(643, 8 * 2))
        fail_msg("a row of 643 positions at 8 heads x 2 sequences does not cluster");
    static const struct {
        ec_cuda_attn_shape s;
        int ctx, split_len, with_bias;
    } cases[] = {
        {{8, 8, 128, 643, 0}, 600, 64, 1},   {{8, 8, 128, 1024, 0}, 100, 64, 1},
        {{8, 8, 128, 1024, 0}, 1000, 64, 0}, {{8, 2, 64, 512, 1}, 300, 32, 0},
        {{8, 2, 64, 640, 1}, 600, 64, 1},    {{4, 2, 256, 643, 0}, 640, 64, 1},
        {{8, 8, 128, 256, 0}, 200, 32, 1}, /* 8 splits: every sm_90 device */
    };
    for (int di = 0; di < gpu_test_dtypes(); di++)
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            int splits = (cases[c].s.max_seq + cases[c].split_len - 1) / cases[c].split_len;
            if (splits <= most)
                check_attention_decode_fused(DTYPES[di], cases[c].s, cases[c].ctx,
                                             cases[c].split_len, 1, cases[c].with_bias);
        }
    /* more splits than a cluster holds: refused before any launch */
    ec_cuda_attn_shape wide = {8, 8, 128, 17 * 64, 0};
    if (ec_cuda_attention_decode(EC_CUDA_F16, &wide, NULL, NULL, NULL, NULL, 1, 17, 64, 1, NULL,
                                 NULL, NULL, NULL, NULL, 0) == 0)
        fail_msg("a clustered decode attention of 17 splits was accepted");
}

/* ---- argmax: lowest index on ties, NaN never wins ----
 * Vocabularies narrower than the block, of Llama-2 (two slices, the second partial), one past a
 * slice (the last logit alone in its slice), of Qwen2 and of Llama-3 (10 and 8 slices), with the
 * winner in the last slice, ties across slices, -0 against +0, and an all-NaN row. Each setup runs
 * twice on the same keys and tickets: the first call must leave them clear for the next. The
 * second call feeds a decode step at position 5: each token goes to the step's input and
 * history row 5 (rows 4 and 6 keep their poison), the position becomes 6, the count is left 0. */
static void check_argmax(int vocab)
{
    enum { BATCH = 7 };
    float *l = malloc((size_t)BATCH * vocab * 4);
    for (int i = 0; i < BATCH * vocab; i++) l[i] = frand();
    float *r[BATCH];
    for (int b = 0; b < BATCH; b++) r[b] = l + (size_t)b * vocab;
    for (int i = 0; i < vocab; i++) r[1][i] = 0.5f;  /* all tied: index 0 */
    r[2][vocab - 3] = 7.0f;                          /* tie between 17 and vocab-3: 17 */
    r[2][17] = 7.0f;
    r[3][5] = NAN;                                   /* NaN ignored, max elsewhere */
    r[3][vocab / 2 + 1] = 3.0f;
    r[4][vocab - 1] = 9.0f;                          /* the last logit */
    for (int i = 0; i < vocab; i++) r[5][i] = -1.0f; /* -0 and +0 tie: the lower index */
    r[5][vocab - 2] = 0.0f;
    r[5][vocab / 3] = -0.0f;
    for (int i = 0; i < vocab; i++) r[6][i] = NAN;   /* no answer: 0 */
    float *d_l = dev_upload(l, (size_t)BATCH * vocab * 4);
    unsigned long long *d_keys = dev_alloc(BATCH * 8, 0);
    unsigned *d_tickets = dev_alloc(BATCH * 4, 0);
    int step[1 + BATCH] = {5}, history[8 * BATCH];
    for (int i = 1; i <= BATCH; i++) step[i] = -1;
    ec_cuda_argmax_feed feed = {dev_upload(step, sizeof step), dev_poisoned(sizeof history),
                                dev_alloc(4, 0)};
    for (int call = 0; call < 2; call++) {
        int *d_out = dev_poisoned(BATCH * 4), out[BATCH];
        kernel_ok(ec_cuda_argmax(d_l, BATCH, vocab, d_out, d_keys, d_tickets, call ? &feed : NULL, 0));
        download(out, d_out, sizeof out);
        assert_int_equal(out[0], ec_argmax(l, vocab));
        assert_int_equal(out[1], 0);
        assert_int_equal(out[2], 17);
        assert_int_equal(out[3], vocab / 2 + 1);
        assert_int_equal(out[4], vocab - 1);
        assert_int_equal(out[5], ec_argmax(r[5], vocab));
        assert_int_equal(out[5], vocab / 3);
        assert_int_equal(out[6], 0);
        cudaFree(d_out);
        download(step, feed.step, sizeof step);
        download(history, feed.history, sizeof history);
        unsigned rows_done;
        download(&rows_done, feed.rows_done, 4);
        assert_int_equal(step[0], 5 + call);
        assert_int_equal(rows_done, 0);
        for (int b = 0; b < BATCH; b++) {
            assert_int_equal(step[1 + b], call ? out[b] : -1);
            if (call) assert_int_equal(history[5 * BATCH + b], out[b]);
            assert_int_equal(history[4 * BATCH + b], -1); /* the poison */
            assert_int_equal(history[6 * BATCH + b], -1);
        }
    }
    unsigned long long keys[BATCH];
    unsigned tickets[BATCH];
    download(keys, d_keys, sizeof keys);
    download(tickets, d_tickets, sizeof tickets);
    for (int b = 0; b < BATCH; b++) {
        assert_true(keys[b] == 0);
        assert_int_equal(tickets[b], 0);
    }
    cudaFree(d_l);
    cudaFree(d_keys);
    cudaFree(d_tickets);
    cudaFree(feed.step);
    cudaFree(feed.history);
    cudaFree(feed.rows_done);
    free(l);
}

static void test_argmax(void **state)
{
    (void)state;
    static const int vocabs[] = {40, 32000, 16385, 151936, 128256};
    for (size_t i = 0; i < sizeof vocabs / sizeof *vocabs; i++) check_argmax(vocabs[i]);
}

/* The code the driver loaded for device 0 is the code ec_gpu_code_for predicts from the
 * architectures compiled in (so `ecocompute gpus` tells the truth), and its architecture is the
 * code's own: 80 for a compute_80-only build on an H200 (the kernel paths follow it). */
static void test_code_arch_is_the_predicted_one(void **state)
{
    (void)state;
    int major = 0, minor = 0;
    CUDA_OK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
    CUDA_OK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
    ec_gpu_code want;
    ec_gpu_code_for(ec_cuda_build_architectures(), major, minor, &want);
    int arch = ec_cuda_code_arch(0);
    printf("code arch: device 0 (compute capability %d.%d) runs %s_%d code, predicted %d "
           "(build: %s)\n",
           major, minor, want.jit ? "compute" : "sm", arch, want.code_arch,
           ec_cuda_build_architectures());
    assert_int_equal(arch, want.code_arch);
}

int main(void)
{
    gpu_test_require_device();
    gpu_test_rng = 88172645463325252ull; /* this file's test data */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_code_arch_is_the_predicted_one),
        cmocka_unit_test(test_convert_embed),
        cmocka_unit_test(test_rmsnorm),
        cmocka_unit_test(test_linear),
        cmocka_unit_test(test_gemv_rejects_bad_shapes),
        cmocka_unit_test(test_rope),
        cmocka_unit_test(test_decode_split_policy),
        cmocka_unit_test(test_attention_decode),
        cmocka_unit_test(test_attention_prefill),
        cmocka_unit_test(test_attention_decode_fused),
        cmocka_unit_test(test_argmax),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
