/* kernels_rope.cu — rotary position embedding fused with the KV-cache write, for prefill calls
 * (the decode step runs it inside its attention kernel, ec_cuda_attention_decode).
 *
 * The QKV linear leaves q, k and v side by side in fp32; this kernel adds the optional bias,
 * rotates q and k by their position (both pairing conventions: interleaved pairs (2j, 2j+1) as in
 * llama2.c, or halves (j, j + head_dim/2) as in Hugging Face), keeps q in fp32 for the attention
 * and stores k and v in 16-bit straight into the cache, so k never makes a round trip. The angle is
 * (float)position * inv_freq[j] with full-precision sincosf, as on the CPU (kernels_rope.cuh);
 * Llama-3 rope scaling is already folded into inv_freq by the host. */
#include "common/cuda_check.h"
#include "kernels_common.cuh"
#include "kernels_rope.cuh"

enum { ROPE_THREADS = 256 };

/* blockIdx.y is the token row; the x blocks share its q pairs, k pairs and v values (a single
 * decode token still spreads over several SMs). Each block first computes the row's head_dim/2
 * angles into shared memory: every head of the row uses the same ones, and sincosf is not cheap
 * (with a sincosf per item, one item per thread and 64 blocks per row, Llama-2-7B's batch-64
 * prefill spent 81 ms in this kernel, 8 % of it). */
template <typename T>
__global__ void __launch_bounds__(ROPE_THREADS)
    rope_kv_kernel(ec_cuda_attn_shape s, const float *qkv, const float *bias,
                   const float *inv_freq, const int *pos, int n, float *q, T *k_cache, T *v_cache)
{
    __shared__ float2 s_sc[EC_CUDA_MAX_HEAD_DIM / 2];
    ec_wait_inputs();
    int t = blockIdx.y, b = t / n, p = *pos + t % n;
    int half = s.head_dim / 2, q_dim = s.n_heads * s.head_dim, kv_dim = s.n_kv_heads * s.head_dim;
    for (int j = threadIdx.x; j < half; j += ROPE_THREADS) s_sc[j] = ec_rope_sincos(p, inv_freq[j]);
    __syncthreads();
    const float *row = qkv + (size_t)t * (q_dim + 2 * kv_dim);
    ec_rope_pairing pr = ec_rope_pairing_of(s);
    int n_pairs = (s.n_heads + s.n_kv_heads) * half, partner = pr.partner;
    for (int i = blockIdx.x * ROPE_THREADS + threadIdx.x; i < n_pairs + kv_dim;
         i += gridDim.x * ROPE_THREADS) {
        if (i >= n_pairs) { /* v: copy into the cache */
            int e = i - n_pairs, h = e / s.head_dim, d = e % s.head_dim;
            float v = row[q_dim + kv_dim + e] + (bias ? bias[q_dim + kv_dim + e] : 0.0f);
            size_t at = (((size_t)b * s.n_kv_heads + h) * s.max_seq + p) * s.head_dim + d;
            v_cache[at] = ec_from_f32<T>(v);
            continue;
        }
        int head = i / half, j = i % half; /* heads 0..n_heads-1 are q, the rest k */
        int off = head * s.head_dim + j * pr.step; /* q and k are contiguous in the row */
        float2 y = ec_rope_rotate(row, bias, off, partner, s_sc[j]);
        if (head < s.n_heads) {
            float *qrow = q + (size_t)t * q_dim;
            qrow[off] = y.x;
            qrow[off + partner] = y.y;
        } else {
            int kh = head - s.n_heads, d = j * pr.step;
            T *krow = k_cache + (((size_t)b * s.n_kv_heads + kh) * s.max_seq + p) * s.head_dim;
            krow[d] = ec_from_f32<T>(y.x);
            krow[d + partner] = ec_from_f32<T>(y.y);
        }
    }
}

extern "C" int ec_cuda_rope_kv(ec_cuda_dtype t, const ec_cuda_attn_shape *s, const float *qkv,
                               const float *bias, const float *inv_freq, const int *pos, int batch,
                               int n, float *q, void *k_cache, void *v_cache, cudaStream_t stream)
{
    return ec_dispatch_dtype(t, [&](auto tag) {
        typedef decltype(tag) T;
        int items = (s->n_heads + s->n_kv_heads) * (s->head_dim / 2) + s->n_kv_heads * s->head_dim;
        int rows = batch * n, per_row = (items + ROPE_THREADS - 1) / ROPE_THREADS;
        /* about two blocks per SM in all, at least one per row */
        int want = (2 * ec_sm_count() + rows - 1) / rows;
        if (want < 1) want = 1;
        dim3 grid((unsigned)(want < per_row ? want : per_row), (unsigned)rows);
        EC_CUDA_TRY(ec_launch(rope_kv_kernel<T>, grid, dim3(ROPE_THREADS), 0, stream, *s, qkv,
                              bias, inv_freq, pos, n, q, (T *)k_cache, (T *)v_cache),
                    "launch of rope/KV-write kernel (%d x %d tokens)", batch, n);
        return 0;
    });
}
