/* kernels_attention.cu — decode attention over the KV cache, flash-decoding style (one new
 * position per sequence; a prefill's many positions: kernels_attention_prefill.cu).
 *
 * A query's context (positions 0 .. its own) is cut into splits of split_len positions. One
 * 128-thread block per (query head, sequence, split) computes the split's scores into shared
 * memory, their max m and sum l of exp(score - m), and the unnormalised output sum exp * v; a
 * second kernel merges the splits with the usual rescaling by exp(m_split - m_max). Splits let a
 * single decode sequence spread a long context over all SMs; blocks whose split starts beyond the
 * query's position exit at once, so a graph captured with the maximum number of splits serves
 * every position.
 *
 * Within a block, TPK = next power of two of head_dim/8 lanes share one key row (16-byte loads,
 * 8 dims per lane) and reduce the dot product with shuffles; each group loads KEYS rows before
 * using them, so KEYS * 128/TPK keys are in flight at once.
 * Scores are fp32 and divided by sqrt(head_dim) as on the CPU. */
#include "common/cuda_check.h"
#include "kernels_common.cuh"
#include "kernels_rope.cuh"

enum {
    ATTN_THREADS = 128,
    ATTN_KEYS = 4,         /* key rows in flight per lane group */
    ATTN_CLUSTER_KEYS = 8, /* ... in a clustered decode block: a split of 64 in one round */
};

static int keys_lanes(int head_dim) /* TPK */
{
    int tpk = 1;
    while (tpk * 8 < head_dim) tpk *= 2;
    return tpk;
}

/* Dynamic shared memory: the split's scores, then a [groups][head_dim] partial-output table
 * (groups * head_dim <= ATTN_THREADS * 8 since head_dim <= 8 * TPK). */
__host__ __device__ static inline size_t attn_smem_floats(int split_len)
{
    return (size_t)split_len + ATTN_THREADS * 8;
}
static size_t attn_smem_bytes(int split_len) { return attn_smem_floats(split_len) * sizeof(float); }
/* The decode kernels' static shared memory (scratch, the rotated query and a flag), and the
 * dynamic shared memory any kernel may take without opting in: the clustered kernel stays within
 * it, so its launch needs no attribute sized for the largest cluster. */
static constexpr size_t ATTN_STATIC_SMEM = (32 + EC_CUDA_MAX_HEAD_DIM + 1) * sizeof(float);
static constexpr size_t SMEM_UNASKED = 48 << 10;
/* A clustered decode block's, then the partials of its cluster's splits [n_splits][hd + 2] (read
 * in rank 0's). */
static size_t attn_cluster_smem_bytes(int split_len, int n_splits, int head_dim)
{
    return attn_smem_bytes(split_len) + (size_t)n_splits * (head_dim + 2) * sizeof(float);
}

/* The partial of one split: positions [start, end) of the cache rows K, V [max_seq][hd] against
 * the fp32 query qrow [hd] (global or shared), into out [hd + 2] = (unnormalised output, max m,
 * sum l; global, or another block's shared memory). Called by all ATTN_THREADS threads of the
 * block; smem holds attn_smem_bytes. KEYS changes only how many rows a group loads at once, not
 * the arithmetic or its order. */
template <typename T, int KEYS>
__device__ void attend_split(int hd, const float *qrow, const T *K, const T *V, int start, int end,
                             int tpk, float *smem, float *scratch, float *out)
{
    int groups = ATTN_THREADS / tpk, g = threadIdx.x / tpk, d0 = (threadIdx.x % tpk) * 8;
    bool active = d0 < hd;
    float qv[8];
#pragma unroll
    for (int i = 0; i < 8; i++) qv[i] = active ? qrow[d0 + i] : 0.0f;

    float *scores = smem, *table = smem + (end - start);
    float norm = sqrtf((float)hd);
    /* Every thread runs the same trip count so the group shuffles see all their lanes. Each
     * group loads KEYS rows before using any: decode is latency-bound here. */
    for (int p0 = start; p0 < end; p0 += groups * KEYS) {
        uint4 kr[KEYS];
#pragma unroll
        for (int u = 0; u < KEYS; u++) {
            int p = p0 + g + u * groups;
            kr[u] = active && p < end ? *reinterpret_cast<const uint4 *>(K + (size_t)p * hd + d0)
                                      : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < KEYS; u++) {
            int p = p0 + g + u * groups;
            float kv[8], dot = 0.0f;
            ec_unpack8<T>(kr[u], kv);
#pragma unroll
            for (int i = 0; i < 8; i++) dot = fmaf(qv[i], kv[i], dot);
            dot = ec_group_sum(dot, tpk);
            if (p < end && threadIdx.x % tpk == 0) scores[p - start] = dot / norm;
        }
    }
    __syncthreads();
    int cnt = end - start;
    float m = -INFINITY, l = 0.0f; /* thread 0's are the split's */
    if (cnt <= 64) {
        /* A decode split's scores fit one warp, two a lane: warp reductions without the block
         * reductions' barriers */
        if (threadIdx.x < 32) {
            int i = threadIdx.x;
            float s0 = i < cnt ? scores[i] : -INFINITY;
            float s1 = i + 32 < cnt ? scores[i + 32] : -INFINITY;
            m = ec_warp_max(fmaxf(s0, s1));
            float e0 = i < cnt ? expf(s0 - m) : 0.0f, e1 = i + 32 < cnt ? expf(s1 - m) : 0.0f;
            if (i < cnt) scores[i] = e0;
            if (i + 32 < cnt) scores[i + 32] = e1;
            l = ec_warp_sum(e0 + e1);
        }
        __syncthreads(); /* the exp'd scores */
    } else {
        for (int i = threadIdx.x; i < cnt; i += ATTN_THREADS) m = fmaxf(m, scores[i]);
        m = ec_block_reduce<true>(m, scratch);
        for (int i = threadIdx.x; i < cnt; i += ATTN_THREADS) {
            float e = expf(scores[i] - m);
            scores[i] = e;
            l += e;
        }
        l = ec_block_reduce<false>(l, scratch); /* its barriers also publish the exp'd scores */
    }

    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (active)
        for (int p0 = start + g; p0 < end; p0 += groups * KEYS) {
            uint4 vr[KEYS];
            float e[KEYS];
#pragma unroll
            for (int u = 0; u < KEYS; u++) {
                int p = p0 + u * groups;
                bool in = p < end;
                vr[u] = in ? *reinterpret_cast<const uint4 *>(V + (size_t)p * hd + d0)
                           : make_uint4(0, 0, 0, 0);
                e[u] = in ? scores[p - start] : 0.0f;
            }
#pragma unroll
            for (int u = 0; u < KEYS; u++) {
                float vv[8];
                ec_unpack8<T>(vr[u], vv);
#pragma unroll
                for (int i = 0; i < 8; i++) acc[i] = fmaf(e[u], vv[i], acc[i]);
            }
        }
    if (active)
#pragma unroll
        for (int i = 0; i < 8; i++) table[g * hd + d0 + i] = acc[i];
    __syncthreads();
    for (int d = threadIdx.x; d < hd; d += ATTN_THREADS) {
        float sum = 0.0f;
        for (int gg = 0; gg < groups; gg++) sum += table[gg * hd + d];
        out[d] = sum;
    }
    if (threadIdx.x == 0) {
        out[hd] = m;
        out[hd + 1] = l;
    }
}

/* One split's term of a combine: its output o, max mi and sum li rescaled to the common max m.
 * Both combines below add the terms in split order, so their results are bit-identical. */
__device__ __forceinline__ void combine_term(float o, float mi, float li, float m, float &num,
                                             float &den)
{
    float w = expf(mi - m);
    num = fmaf(w, o, num);
    den = fmaf(w, li, den);
}

/* Output dimension d of one (token row, head) from the partials [used][hd + 2] of its first
 * `used` splits, element i read by load(i), rescaled to their common max, in split order (the
 * combine kernel, and a cluster's rank 0). */
template <class Load>
__device__ __forceinline__ float combine_dim(Load load, int used, int hd, int d)
{
    float m = -INFINITY;
    for (int i = 0; i < used; i++) m = fmaxf(m, load(i * (hd + 2) + hd));
    float num = 0.0f, den = 0.0f;
    for (int i = 0; i < used; i++) {
        int at = i * (hd + 2);
        combine_term(load(at + d), load(at + hd), load(at + hd + 1), m, num, den);
    }
    return num / den;
}

template <typename T>
__global__ void __launch_bounds__(ATTN_THREADS)
    attn_split_kernel(ec_cuda_attn_shape s, const float *q, const T *k_cache, const T *v_cache,
                      const int *pos, int split_len, int tpk, float *part)
{
    extern __shared__ float smem[];
    __shared__ float scratch[32];
    int h = blockIdx.x, b = blockIdx.y, split = blockIdx.z, n_splits = gridDim.z;
    ec_wait_inputs();
    int len = *pos + 1; /* causal: positions 0 .. the new one */
    int start = split * split_len;
    if (start >= len) return; /* block-uniform */
    int hd = s.head_dim, kh = h / (s.n_heads / s.n_kv_heads);
    size_t head_off = ((size_t)b * s.n_kv_heads + kh) * s.max_seq * hd;
    attend_split<T, ATTN_KEYS>(hd, q + ((size_t)b * s.n_heads + h) * hd, k_cache + head_off,
                               v_cache + head_off, start, min(start + split_len, len), tpk, smem,
                               scratch,
                               part + (((size_t)b * s.n_heads + h) * n_splits + split) * (hd + 2));
}

/* One block per (head, sequence), one thread per output dimension. */
template <typename T>
__global__ void attn_combine_kernel(ec_cuda_attn_shape s, const float *part, const int *pos,
                                    int n_splits, int split_len, T *out)
{
    int h = blockIdx.x, b = blockIdx.y, d = threadIdx.x, hd = s.head_dim;
    ec_wait_inputs();
    if (d >= hd) return;
    int len = *pos + 1, used = (len + split_len - 1) / split_len;
    const float *p = part + ((size_t)b * s.n_heads + h) * n_splits * (hd + 2);
    out[((size_t)b * s.n_heads + h) * hd + d] =
        ec_from_f32<T>(combine_dim([p](int i) { return __ldcg(p + i); }, used, hd, d));
}

enum { COMBINE_BATCH = 32 };
static_assert(EC_CUDA_MAX_HEAD_DIM <= 2 * ATTN_THREADS,
              "a decode thread rotates one pair and combines at most two dimensions");

/* combine_dim for every dimension of one (token row, head) by the whole decode block, the same
 * terms in the same order, with its loads issued together: the splits' maxima and sums go
 * through shared memory (s_ml [2 used]), and a thread's outputs are loaded COMBINE_BATCH splits
 * at a time, the first batch along with them, so up to 32 splits cost one round trip instead of
 * a chain of them. The loads bypass L1: other blocks wrote the partials during this
 * launch. */
template <typename T>
__device__ void combine_block(const float *p, int used, int hd, float *s_ml, T *out)
{
    float o[COMBINE_BATCH];
    int d = threadIdx.x; /* hd <= 2 ATTN_THREADS: at most a second dimension, d + ATTN_THREADS */
#pragma unroll
    for (int j = 0; j < COMBINE_BATCH; j++)
        o[j] = j < used && d < hd ? __ldcg(p + j * (hd + 2) + d) : 0.0f;
    for (int i = threadIdx.x; i < used; i += ATTN_THREADS) {
        s_ml[2 * i] = __ldcg(p + i * (hd + 2) + hd);
        s_ml[2 * i + 1] = __ldcg(p + i * (hd + 2) + hd + 1);
    }
    __syncthreads();
    float m = -INFINITY;
    for (int i = 0; i < used; i++) m = fmaxf(m, s_ml[2 * i]);
    for (; d < hd; d += ATTN_THREADS) {
        float num = 0.0f, den = 0.0f;
        for (int i0 = 0; i0 < used; i0 += COMBINE_BATCH) {
            if (i0 > 0 || d != (int)threadIdx.x)
#pragma unroll
                for (int j = 0; j < COMBINE_BATCH; j++)
                    o[j] = i0 + j < used ? __ldcg(p + (i0 + j) * (hd + 2) + d) : 0.0f;
#pragma unroll
            for (int j = 0; j < COMBINE_BATCH; j++) {
                int i = i0 + j;
                if (i >= used) break;
                combine_term(o[j], s_ml[2 * i], s_ml[2 * i + 1], m, num, den);
            }
        }
        out[d] = ec_from_f32<T>(num / den);
    }
}

/* The decode step's attention in one launch: rope, KV append, splits and combine. Block (head
 * h, sequence b, split) rotates its query head from the QKV row into shared memory; the block
 * whose split holds the new position first writes that position's rotated k and its v into the
 * cache (every query head of a kv group writes the same bytes, and each block reads only what it
 * wrote itself or what earlier steps wrote); then it attends its split as attn_split_kernel
 * does. The partials meet in one of two ways:
 * - attn_decode_kernel: in global memory; the last split block of (b, h) to finish — a ticket
 *   counter per (b, h), reset by that block for the next replay — combines them as
 *   attn_combine_kernel does;
 * - attn_decode_cluster_kernel, where the split policy clusters a row
 *   (ec_cuda_decode_clustered): each block writes its partial into the shared memory of the
 *   cluster's rank 0 (split 0), which combines them after one cluster barrier. The ticket's
 *   fence and atomic, and the combine's loads from L2, were the tail of every layer's attention:
 *   without them (a timing-only build) batch-1 steps were 3.1 % (fp8, Llama-3.1-8B) and 3.9 %
 *   (int8, Llama-2-7B) shorter.
 * The rotation (kernels_rope.cuh), the split and the combine are the two-kernel path's code, so
 * the outputs and cache rows are bit-identical to ec_cuda_rope_kv + ec_cuda_attention. At batch
 * 1 the kernel is a chain of dependent round trips per block (row, scores, partial, combine):
 * the position and rope angles come before the wait and the combine's loads go out together
 * (0.1-0.9 % faster steps); loading the split's first cache rows into registers
 * before the wait, or its V rows with its K rows, only reordered them
 * and measured slower, as did the clustered kernel's first key and value rows loaded at or
 * before the wait (0.8-6 % slower steps, fp16 included). What pays is a bulk
 * prefetch of the split's cached rows into L2 before the wait (attn_prefetch_below), which costs
 * the block two instructions and no registers: its K and V loads then meet L2 instead of the
 * HBM.
 *
 * decode_partial is both kernels' block up to its partial, written to `out` [hd + 2]; it calls
 * after_wait() right after the PDL wait, in every block. Returns the splits the row uses, or 0
 * for a block whose split starts past the new position (it does nothing after the wait). */
template <typename T, int KEYS, class AfterWait>
__device__ __forceinline__ int decode_partial(const ec_cuda_attn_shape &s, const float *qkv,
                                              const float *bias, const float *inv_freq,
                                              const int *pos, int split_len, int tpk, T *k_cache,
                                              T *v_cache, int prefetch_below, float *smem,
                                              float *scratch, float *s_q, AfterWait after_wait,
                                              float *out)
{
    int h = blockIdx.x, b = blockIdx.y, split = blockIdx.z;
    /* The position is in place before the step's first kernel lets its successor launch (the
     * host's copy, or the previous step's argmax) and the frequencies since load: no kernel of
     * the step writes them, so they and the rope angle need not wait. A thread rotates at most
     * pair threadIdx.x (head_dim / 2 <= ATTN_THREADS). */
    int p = *pos;
    float2 sc = make_float2(0.0f, 0.0f);
    if ((int)threadIdx.x < s.head_dim / 2) sc = ec_rope_sincos(p, inv_freq[threadIdx.x]);
    int hd = s.head_dim, half = hd / 2, kh = h / (s.n_heads / s.n_kv_heads);
    size_t head_off = ((size_t)b * s.n_kv_heads + kh) * s.max_seq * hd;
    T *K = k_cache + head_off, *V = v_cache + head_off;
    int start = split * split_len;
    if (p <= prefetch_below && threadIdx.x == 0 && start < p) {
        size_t bytes = (size_t)min(split_len, p - start) * hd * sizeof(T);
        ec_prefetch_l2(K + (size_t)start * hd, bytes);
        ec_prefetch_l2(V + (size_t)start * hd, bytes);
    }
    ec_wait_inputs();
    after_wait();
    int len = p + 1;
    if (start >= len) return 0; /* block-uniform */
    int end = min(start + split_len, len);
    int q_dim = s.n_heads * hd, kv_dim = s.n_kv_heads * hd;
    const float *row = qkv + (size_t)b * (q_dim + 2 * kv_dim);
    ec_rope_pairing pr = ec_rope_pairing_of(s);
    for (int j = threadIdx.x; j < half; j += ATTN_THREADS) {
        int d = j * pr.step;
        float2 y = ec_rope_rotate(row, bias, h * hd + d, pr.partner, sc);
        s_q[d] = y.x;
        s_q[d + pr.partner] = y.y;
        if (end == len) {
            y = ec_rope_rotate(row, bias, q_dim + kh * hd + d, pr.partner, sc);
            K[(size_t)p * hd + d] = ec_from_f32<T>(y.x);
            K[(size_t)p * hd + d + pr.partner] = ec_from_f32<T>(y.y);
        }
    }
    if (end == len)
        for (int d = threadIdx.x; d < hd; d += ATTN_THREADS) {
            int e = q_dim + kv_dim + kh * hd + d;
            V[(size_t)p * hd + d] = ec_from_f32<T>(row[e] + (bias ? bias[e] : 0.0f));
        }
    __syncthreads(); /* s_q, and this block's cache writes before its own reads of them */
    attend_split<T, KEYS>(hd, s_q, K, V, start, end, tpk, smem, scratch, out);
    return (len + split_len - 1) / split_len;
}

template <typename T>
__global__ void __launch_bounds__(ATTN_THREADS)
    attn_decode_kernel(ec_cuda_attn_shape s, const float *qkv, const float *bias,
                       const float *inv_freq, const int *pos, int split_len, int tpk, T *k_cache,
                       T *v_cache, float *part, unsigned *tickets, T *out, int prefetch_below)
{
    extern __shared__ float smem[];
    __shared__ float scratch[32], s_q[EC_CUDA_MAX_HEAD_DIM];
    __shared__ bool s_last;
    int h = blockIdx.x, b = blockIdx.y, split = blockIdx.z, hd = s.head_dim;
    float *mine = part + ((size_t)b * s.n_heads + h) * gridDim.z * (hd + 2);
    int used = decode_partial<T, ATTN_KEYS>(s, qkv, bias, inv_freq, pos, split_len, tpk, k_cache,
                                            v_cache, prefetch_below, smem, scratch, s_q, [] {},
                                            mine + split * (hd + 2));
    if (!used) return;
    __syncthreads(); /* the whole partial is written before the ticket is taken */
    if (threadIdx.x == 0) {
        unsigned *ticket = tickets + (size_t)b * s.n_heads + h;
        __threadfence(); /* the partial is visible to the block that draws the last ticket */
        s_last = atomicAdd(ticket, 1u) == (unsigned)used - 1;
        if (s_last) *ticket = 0; /* every split of (b, h) has drawn: ready for the next step */
    }
    __syncthreads();
    if (!s_last) return;
    __threadfence();
    combine_block<T>(mine, used, hd, smem, out + ((size_t)b * s.n_heads + h) * hd);
}

/* A cluster is one (head, sequence) row: gridDim.z splits, block rank = split. Every block
 * arrives at the cluster barrier at its start and waits after the PDL wait, so no block writes
 * into rank 0's shared memory before rank 0 runs (long since, by then). Blocks past the position
 * write nothing but still meet the final barrier. Dynamic shared memory: attn_cluster_smem_bytes
 * (the partials [gridDim.z][hd + 2] after the split's scores and table). */
template <typename T>
__global__ void __launch_bounds__(ATTN_THREADS)
    attn_decode_cluster_kernel(ec_cuda_attn_shape s, const float *qkv, const float *bias,
                               const float *inv_freq, const int *pos, int split_len, int tpk,
                               T *k_cache, T *v_cache, T *out, int prefetch_below)
{
    extern __shared__ float smem[];
    __shared__ float scratch[32], s_q[EC_CUDA_MAX_HEAD_DIM];
    ec_cluster cluster; /* launched only for sm_90+ code (attn_cluster_max) */
    int h = blockIdx.x, b = blockIdx.y, split = blockIdx.z, hd = s.head_dim;
    /* cg's arrive releases (a GPU-wide fence, 6 % of the kernel's stalls alone under ncu); a
     * relaxed arrival measured no faster in the step */
    cluster.barrier_arrive();
    float *parts = smem + attn_smem_floats(split_len); /* rank 0's: the row's partials */
    int used = decode_partial<T, ATTN_CLUSTER_KEYS>(
        s, qkv, bias, inv_freq, pos, split_len, tpk, k_cache, v_cache, prefetch_below, smem,
        scratch, s_q, [&] { cluster.barrier_wait(); },
        cluster.map_shared_rank(parts + split * (hd + 2), 0));
    cluster.sync(); /* every partial is in rank 0's shared memory (release, acquire) */
    if (split != 0) return;
    T *o = out + ((size_t)b * s.n_heads + h) * hd;
    for (int d = threadIdx.x; d < hd; d += ATTN_THREADS)
        o[d] = ec_from_f32<T>(combine_dim([parts](int i) { return parts[i]; }, used, hd, d));
}

/* ec_decode_prefetch_below for this device: its L2 where the code has the bulk prefetch
 * (sm_90+ code; ec_prefetch_l2 is empty below it). */
static int attn_prefetch_below(const ec_cuda_attn_shape *s, int batch, size_t elem)
{
    int l2 = ec_per_device([](int dev) {
        int bytes = 0;
        return ec_cuda_code_features(dev) & EC_GPU_L2_PREFETCH &&
                       cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, dev) == cudaSuccess
                   ? bytes
                   : 0;
    });
    return ec_decode_prefetch_below(l2, batch, s->n_kv_heads, s->head_dim, (int)elem);
}

/* ec_cuda_decode_cluster_max: 16 (past the portable 8, where the device allows it) or 8 at
 * splits of EC_DECODE_CLUSTER_SPLIT positions and the widest heads; 0 for code below sm_90, or
 * where not even 8 fit. */
static int attn_cluster_max()
{
    return ec_per_device([](int dev) {
        if (!(ec_cuda_code_features(dev) & EC_GPU_CLUSTERS)) return 0;
        const void *kernels[] = {(const void *)attn_decode_cluster_kernel<__half>,
                                 (const void *)attn_decode_cluster_kernel<__nv_bfloat16>};
        for (const void *k : kernels)
            if (cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) !=
                cudaSuccess) {
                (void)cudaGetLastError(); /* then portable clusters only */
                break;
            }
        for (int size = EC_DECODE_MAX_CLUSTER; size >= 8; size /= 2) {
            cudaLaunchAttribute attr;
            attr.id = cudaLaunchAttributeClusterDimension;
            attr.val.clusterDim.x = 1;
            attr.val.clusterDim.y = 1;
            attr.val.clusterDim.z = (unsigned)size;
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3(1, 1, (unsigned)size);
            cfg.blockDim = dim3(ATTN_THREADS);
            cfg.dynamicSmemBytes =
                attn_cluster_smem_bytes(EC_DECODE_CLUSTER_SPLIT, size, EC_CUDA_MAX_HEAD_DIM);
            cfg.attrs = &attr;
            cfg.numAttrs = 1;
            int clusters = 0;
            if (cudaOccupancyMaxActiveClusters(&clusters, attn_decode_cluster_kernel<__half>,
                                               &cfg) == cudaSuccess &&
                clusters > 0)
                return size;
            (void)cudaGetLastError();
        }
        return 0;
    });
}

/* The ticket kernel's blocks the device holds at once (registers limit them, not a split's
 * scores); 0 if that cannot be had (then the most splits). */
static int attn_wave()
{
    return ec_per_device([](int) {
        int per_sm = 0;
        size_t smem = attn_smem_bytes(EC_DECODE_MIN_SPLIT);
        return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, attn_decode_kernel<__half>,
                                                             ATTN_THREADS, smem) == cudaSuccess
                   ? ec_sm_count() * per_sm
                   : 0;
    });
}

extern "C" int ec_cuda_decode_split_len(int max_seq, int rows)
{
    return ec_decode_split_len_for(max_seq, rows, attn_wave(), attn_cluster_max());
}

extern "C" int ec_cuda_decode_cluster_max(void) { return attn_cluster_max(); }

extern "C" int ec_cuda_decode_clustered(int max_seq, int rows)
{
    return ec_decode_clustered_for(max_seq, rows, attn_wave(), attn_cluster_max());
}

extern "C" int ec_cuda_attention_prepare(int max_split_len)
{
    size_t bytes = attn_smem_bytes(max_split_len);
    int limit = ec_smem_limit();
    if (bytes + ATTN_STATIC_SMEM > (size_t)limit)
        return ec_set_error("attention splits of %d positions need %zu bytes of shared memory; "
                            "the device allows %d per block",
                            max_split_len, bytes + ATTN_STATIC_SMEM, limit);
    const void *kernels[] = {(const void *)attn_split_kernel<__half>,
                             (const void *)attn_split_kernel<__nv_bfloat16>,
                             (const void *)attn_decode_kernel<__half>,
                             (const void *)attn_decode_kernel<__nv_bfloat16>};
    for (const void *k : kernels)
        EC_CUDA_TRY(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes),
                    "cudaFuncSetAttribute(attention, %zu bytes of shared memory)", bytes);
    return 0;
}

/* Sets the error and returns true for a shape the kernels cannot run. */
static bool attn_shape_unsupported(const ec_cuda_attn_shape *s)
{
    if (s->head_dim % 8 == 0 && s->head_dim <= EC_CUDA_MAX_HEAD_DIM && s->n_heads % s->n_kv_heads == 0)
        return false;
    ec_set_error("attention: unsupported head_dim %d / heads %d / kv heads %d (needs head_dim a "
                 "multiple of 8 up to %d, heads a multiple of kv heads)",
                 s->head_dim, s->n_heads, s->n_kv_heads, EC_CUDA_MAX_HEAD_DIM);
    return true;
}

extern "C" int ec_cuda_attention(ec_cuda_dtype t, const ec_cuda_attn_shape *s, const float *q,
                                 const void *k_cache, const void *v_cache, const int *pos,
                                 int batch, int n_splits, int split_len, float *part, void *out,
                                 cudaStream_t stream)
{
    if (attn_shape_unsupported(s)) return -1;
    return ec_dispatch_dtype(t, [&](auto tag) {
        typedef decltype(tag) T;
        dim3 grid((unsigned)s->n_heads, (unsigned)batch, (unsigned)n_splits);
        EC_CUDA_TRY(ec_launch(attn_split_kernel<T>, grid, dim3(ATTN_THREADS),
                              attn_smem_bytes(split_len), stream, *s, q, (const T *)k_cache,
                              (const T *)v_cache, pos, split_len, keys_lanes(s->head_dim), part),
                    "launch of attention kernel (%d heads x %d sequences x %d splits of %d)",
                    s->n_heads, batch, n_splits, split_len);
        dim3 cgrid((unsigned)s->n_heads, (unsigned)batch);
        unsigned threads = (unsigned)((s->head_dim + 31) / 32 * 32);
        EC_CUDA_TRY(ec_launch(attn_combine_kernel<T>, cgrid, dim3(threads), 0, stream, *s, part,
                              pos, n_splits, split_len, (T *)out),
                    "launch of attention combine kernel (%d heads x %d sequences)", s->n_heads,
                    batch);
        return 0;
    });
}

extern "C" int ec_cuda_attention_decode(ec_cuda_dtype t, const ec_cuda_attn_shape *s,
                                        const float *qkv, const float *bias,
                                        const float *inv_freq, const int *pos, int batch,
                                        int n_splits, int split_len, int clustered, void *k_cache,
                                        void *v_cache, float *part, unsigned *tickets, void *out,
                                        cudaStream_t stream)
{
    if (attn_shape_unsupported(s)) return -1;
    size_t cluster_smem = attn_cluster_smem_bytes(split_len, n_splits, s->head_dim);
    if (clustered && (n_splits < 2 || n_splits > attn_cluster_max() ||
                      cluster_smem + ATTN_STATIC_SMEM > SMEM_UNASKED))
        return ec_set_error("clustered decode attention: %d splits of %d positions (the device "
                            "runs clusters of at most %d, in 48 KiB of shared memory a block)",
                            n_splits, split_len, attn_cluster_max());
    return ec_dispatch_dtype(t, [&](auto tag) {
        typedef decltype(tag) T;
        dim3 grid((unsigned)s->n_heads, (unsigned)batch, (unsigned)n_splits);
        int prefetch_below = attn_prefetch_below(s, batch, sizeof(T));
        if (clustered) {
            EC_CUDA_TRY(ec_launch_clustered(attn_decode_cluster_kernel<T>, grid,
                                            dim3(1, 1, (unsigned)n_splits), dim3(ATTN_THREADS),
                                            cluster_smem, stream, *s, qkv, bias, inv_freq, pos,
                                            split_len, keys_lanes(s->head_dim), (T *)k_cache,
                                            (T *)v_cache, (T *)out, prefetch_below),
                        "launch of clustered decode attention kernel (%d heads x %d sequences x "
                        "%d splits of %d)", s->n_heads, batch, n_splits, split_len);
            return 0;
        }
        EC_CUDA_TRY(ec_launch(attn_decode_kernel<T>, grid, dim3(ATTN_THREADS),
                              attn_smem_bytes(split_len), stream, *s, qkv, bias, inv_freq, pos,
                              split_len, keys_lanes(s->head_dim), (T *)k_cache, (T *)v_cache,
                              part, tickets, (T *)out, prefetch_below),
                    "launch of decode attention kernel (%d heads x %d sequences x %d splits of "
                    "%d)", s->n_heads, batch, n_splits, split_len);
        return 0;
    });
}
