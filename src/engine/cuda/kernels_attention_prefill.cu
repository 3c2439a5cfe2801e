/* kernels_attention_prefill.cu — causal attention for many query rows per sequence (a prefill
 * chunk), tiled so that a key/value row read from the cache serves 64 query rows.
 *
 * The decode kernels (kernels_attention.cu) give each query row blocks of its own, so a prompt
 * of n positions reads its sequence's cache rows about n/2 times over; at batch 64 × 512 that
 * was half of a 7 B model's prefill. Here a block owns PF_ROWS
 * consecutive query rows of one (sequence, query head) and walks the keys they see in tiles,
 * flash-attention style. Two kernels: attn_prefill_mma_kernel (below) on tensor cores at
 * head_dim 64, 96 and 128, and for the other head_dims attn_prefill_kernel, 256 threads on CUDA
 * cores with tiles of PF_KEYS positions:
 *
 *   sQ [PF_ROWS][hd + 4]   the rows' rotated queries (fp32; padded rows: no bank conflicts)
 *   sK [PF_KEYS][hd + 4]   the tile's keys, sV [PF_KEYS][hd] its values (fp32)
 *   sP [PF_ROWS][PF_PLD]   the tile's probabilities exp(score - running max)
 *
 * A chunk of at most PF_ROWS / 2 positions per sequence (int8-mixed's 2048-row prefill chunks
 * hold 32 positions of each of 64 sequences) would leave most of a block's rows empty, yet cost
 * every block the whole walk over its sequence's keys. Then a block takes HPB query heads of one
 * kv group (they read the same keys and values), PF_ROWS / HPB rows of each: block row r is
 * position r % (PF_ROWS / HPB) of the tile, head r / (PF_ROWS / HPB) of the block's heads.
 *
 * Thread (tr, tc) = (threadIdx.x / 16, threadIdx.x % 16) owns query rows tr + 16 i (i < 4): their
 * scores against keys tc + 16 j (j < 2), and their output dimensions 4 (tc + 16 k) .. + 3
 * (k < DG = ceil(hd / 64)). A row's running max and sum live in the 16 lanes of a half-warp
 * (group shuffles), its output is rescaled by exp(old max - new max) per tile, and the next tile's
 * cache rows are loaded into registers while the current one is used.
 *
 * Arithmetic as on the CPU and in the decode kernels: fp32 dot products of the fp32 query with
 * the 16-bit keys, divided by sqrt(head_dim), expf, fp32 sums, one rounding of the output; only
 * the order of the sums and the per-tile rescaling differ (the tensor-core kernel gets there by
 * splitting its fp32 operands, see there). */
#include "common/cuda_check.h"
#include "kernels_common.cuh"

enum {
    PF_THREADS = 256,
    PF_ROWS_LOG2 = 6,
    PF_ROWS = 1 << PF_ROWS_LOG2, /* query rows per block: 16 row lanes x 4 */
    PF_KEYS = 32,            /* key positions per tile: 16 key lanes x 2 */
    PF_PLD = PF_KEYS + 16    /* sP row stride: two rows of a warp land 16 banks apart */
};

static size_t prefill_smem_bytes(int hd)
{
    size_t ld = (size_t)hd + 4;
    return ((PF_ROWS + PF_KEYS) * ld + (size_t)PF_KEYS * hd + PF_ROWS * PF_PLD) * sizeof(float);
}

__device__ __forceinline__ float4 ld4(const float *p)
{
    return *reinterpret_cast<const float4 *>(p);
}

/* Block row r's place in a tile of `rows` positions per head (rph_log2: log2 of the rows per
 * head): its position (rows past `rows` repeat the last one, so that every row has a finite max;
 * they are not stored), the head among the block's, and whether it is stored. */
struct pf_row {
    int i, head;
    bool stored;
};
__device__ __forceinline__ pf_row pf_row_of(int r, int rph_log2, int rows)
{
    int i = r & ((1 << rph_log2) - 1);
    return {min(i, rows - 1), r >> rph_log2, i < rows};
}

/* DG = ceil(head_dim / 64): 4-float output groups per thread, and 16-byte cache loads per thread
 * per tile of keys (and of values). */
template <typename T, int DG>
__global__ void __launch_bounds__(PF_THREADS, DG <= 2 ? 2 : 1) /* 2: head_dim <= 128 */
    attn_prefill_kernel(ec_cuda_attn_shape s, const float *q, const T *k_cache, const T *v_cache,
                        const int *pos, int n, int hpb_log2, T *out)
{
    extern __shared__ float4 smem4[];
    int hd = s.head_dim, ld = hd + 4, units = hd / 8; /* 16-byte units of a cache row */
    float *sQ = reinterpret_cast<float *>(smem4), *sK = sQ + PF_ROWS * ld, *sV = sK + PF_KEYS * ld;
    float *sP = sV + PF_KEYS * hd;
    /* Later rows see more keys: the grid's first blocks take the last tiles. */
    int tile = (int)(gridDim.x - 1 - blockIdx.x), h0 = blockIdx.y << hpb_log2, b = blockIdx.z;
    int tr = threadIdx.x / 16, tc = threadIdx.x % 16;
    int rph_log2 = PF_ROWS_LOG2 - hpb_log2; /* 1 << rph_log2 positions of each head */
    int i0 = tile << rph_log2, rows = min(1 << rph_log2, n - i0);
    int kh = h0 / (s.n_heads / s.n_kv_heads); /* the HPB heads share it */
    size_t head_off = ((size_t)b * s.n_kv_heads + kh) * s.max_seq * hd;
    const T *K = k_cache + head_off, *V = v_cache + head_off;
    ec_wait_inputs();
    int p0 = *pos + i0, keys = p0 + rows; /* the tile's rows see positions 0 .. keys - 1 */

    for (int e = threadIdx.x; e < PF_ROWS * (hd / 4); e += PF_THREADS) {
        int r = e / (hd / 4), d = e % (hd / 4) * 4;
        pf_row pr = pf_row_of(r, rph_log2, rows);
        size_t src = ((size_t)b * n + i0 + pr.i) * s.n_heads + h0 + pr.head;
        *reinterpret_cast<float4 *>(sQ + r * ld + d) = ld4(q + src * hd + d);
    }

    uint4 kr[DG], vr[DG];
    auto fetch = [&](int k0) { /* positions past `keys` read as zeros (V: 0 * p stays 0) */
#pragma unroll
        for (int u = 0; u < DG; u++) {
            int e = threadIdx.x + u * PF_THREADS, r = e / units, c = e % units * 8;
            bool in = e < PF_KEYS * units && k0 + r < keys;
            size_t at = (size_t)(k0 + r) * hd + c;
            kr[u] = in ? *reinterpret_cast<const uint4 *>(K + at) : make_uint4(0, 0, 0, 0);
            vr[u] = in ? *reinterpret_cast<const uint4 *>(V + at) : make_uint4(0, 0, 0, 0);
        }
    };
    auto stash = [&]() {
#pragma unroll
        for (int u = 0; u < DG; u++) {
            int e = threadIdx.x + u * PF_THREADS, r = e / units, c = e % units * 8;
            if (e >= PF_KEYS * units) break;
            float f[8];
            ec_unpack8<T>(kr[u], f);
            *reinterpret_cast<float4 *>(sK + r * ld + c) = make_float4(f[0], f[1], f[2], f[3]);
            *reinterpret_cast<float4 *>(sK + r * ld + c + 4) = make_float4(f[4], f[5], f[6], f[7]);
            ec_unpack8<T>(vr[u], f);
            *reinterpret_cast<float4 *>(sV + r * hd + c) = make_float4(f[0], f[1], f[2], f[3]);
            *reinterpret_cast<float4 *>(sV + r * hd + c + 4) = make_float4(f[4], f[5], f[6], f[7]);
        }
    };

    float m[4], l[4], acc[4][DG][4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        m[i] = -INFINITY;
        l[i] = 0.0f; /* this lane's keys only; the half-warp's sum at the end */
#pragma unroll
        for (int k = 0; k < DG; k++)
#pragma unroll
            for (int c = 0; c < 4; c++) acc[i][k][c] = 0.0f;
    }
    float norm = sqrtf((float)hd);
    fetch(0);
    for (int k0 = 0; k0 < keys; k0 += PF_KEYS) {
        __syncthreads(); /* the previous tile's sK, sV, sP are used up (first: sQ is written) */
        stash();
        __syncthreads();
        if (k0 + PF_KEYS < keys) fetch(k0 + PF_KEYS);

        float sc[4][2] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
#pragma unroll 2
        for (int d = 0; d < hd; d += 4) {
            float4 kv[2] = {ld4(sK + tc * ld + d), ld4(sK + (tc + 16) * ld + d)};
#pragma unroll
            for (int i = 0; i < 4; i++) {
                float4 qv = ld4(sQ + (tr + 16 * i) * ld + d);
#pragma unroll
                for (int j = 0; j < 2; j++) {
                    sc[i][j] = fmaf(qv.x, kv[j].x, sc[i][j]);
                    sc[i][j] = fmaf(qv.y, kv[j].y, sc[i][j]);
                    sc[i][j] = fmaf(qv.z, kv[j].z, sc[i][j]);
                    sc[i][j] = fmaf(qv.w, kv[j].w, sc[i][j]);
                }
            }
        }
#pragma unroll
        for (int i = 0; i < 4; i++) {
            int qpos = p0 + pf_row_of(tr + 16 * i, rph_log2, rows).i;
            float mx = -INFINITY;
#pragma unroll
            for (int j = 0; j < 2; j++) {
                sc[i][j] = k0 + tc + 16 * j <= qpos ? sc[i][j] / norm : -INFINITY;
                mx = fmaxf(mx, sc[i][j]);
            }
            /* finite: position 0 is in every row's first tile */
            float mnew = fmaxf(m[i], ec_group_max(mx, 16)), corr = expf(m[i] - mnew);
            m[i] = mnew;
            l[i] *= corr;
#pragma unroll
            for (int j = 0; j < 2; j++) {
                float p = expf(sc[i][j] - mnew);
                l[i] += p;
                sP[(tr + 16 * i) * PF_PLD + tc + 16 * j] = p;
            }
#pragma unroll
            for (int k = 0; k < DG; k++) {
                acc[i][k][0] *= corr;
                acc[i][k][1] *= corr;
                acc[i][k][2] *= corr;
                acc[i][k][3] *= corr;
            }
        }
        __syncthreads(); /* sP */
#pragma unroll 2
        for (int j = 0; j < PF_KEYS; j += 4) {
            float4 pv[4];
#pragma unroll
            for (int i = 0; i < 4; i++) pv[i] = ld4(sP + (tr + 16 * i) * PF_PLD + j);
#pragma unroll
            for (int jj = 0; jj < 4; jj++)
#pragma unroll
                for (int k = 0; k < DG; k++) {
                    int d = 4 * (tc + 16 * k);
                    if (d >= hd) break;
                    float4 v = ld4(sV + (j + jj) * hd + d);
#pragma unroll
                    for (int i = 0; i < 4; i++) {
                        float p = jj == 0   ? pv[i].x
                                  : jj == 1 ? pv[i].y
                                  : jj == 2 ? pv[i].z
                                            : pv[i].w;
                        acc[i][k][0] = fmaf(p, v.x, acc[i][k][0]);
                        acc[i][k][1] = fmaf(p, v.y, acc[i][k][1]);
                        acc[i][k][2] = fmaf(p, v.z, acc[i][k][2]);
                        acc[i][k][3] = fmaf(p, v.w, acc[i][k][3]);
                    }
                }
        }
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float sum = ec_group_sum(l[i], 16);
        pf_row pr = pf_row_of(tr + 16 * i, rph_log2, rows);
        if (!pr.stored) continue;
        T *o = out + (((size_t)b * n + i0 + pr.i) * s.n_heads + h0 + pr.head) * hd;
#pragma unroll
        for (int k = 0; k < DG; k++) {
            int d = 4 * (tc + 16 * k);
            if (d >= hd) break;
            o[d] = ec_from_f32<T>(acc[i][k][0] / sum);
            o[d + 1] = ec_from_f32<T>(acc[i][k][1] / sum);
            o[d + 2] = ec_from_f32<T>(acc[i][k][2] / sum);
            o[d + 3] = ec_from_f32<T>(acc[i][k][3] / sum);
        }
    }
}

/* ---- the same attention on tensor cores (head_dim 64, 96 or 128) ----
 * Block rows as above (64 a block: 16 per warp, pf_row_of), keys in tiles of 64 positions whose
 * K and V rows are copied as stored (16-bit) into shared memory, two tiles in flight (cp.async).
 * Warp w computes its 16 rows' scores against a tile with m16n8k16 MMAs (fp32 accumulation),
 * keeps each row's running max and sum in the 4 lanes that hold it, and adds P·V with MMAs too,
 * P taken from the score fragments as FlashAttention-2 does.
 * The CPU's accuracy: the MMA takes its 16-bit inputs exactly, but the query and the
 * probabilities are fp32. Each is split into 16-bit parts whose sum is the fp32 value to about
 * its 24 bits (bf16: three parts of 8; fp16: hi + lo, 22 bits, and 2^-25 absolute where lo falls
 * below fp16's normal range), and every part gets its own MMA against the exact 16-bit keys and
 * values: fp32-accurate products at 2-3 times the MMAs, which tensor cores still run far faster
 * than the CUDA cores' fp32. */
enum { TC_KEYS = 64, TC_PAD = 8 /* halves: rows 16 bytes apart in banks, ldmatrix-aligned */ };

template <typename T> struct tc_parts { enum { N = 2 }; };         /* fp16: 11 + 11 bits */
template <> struct tc_parts<__nv_bfloat16> { enum { N = 3 }; };    /* bf16: 8 + 8 + 8 bits */

static size_t tc_smem_bytes(int hd, int parts)
{
    /* sQ [parts][PF_ROWS][hd + 8], then sK and sV [2 stages][TC_KEYS][hd + 8], all 16-bit */
    return ((size_t)parts * PF_ROWS + 4 * TC_KEYS) * (hd + TC_PAD) * 2;
}

__device__ __forceinline__ void tc_ldmatrix_x4(uint32_t (&r)[4], const void *p)
{
    unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}
__device__ __forceinline__ void tc_ldmatrix_x4_trans(uint32_t (&r)[4], const void *p)
{
    unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}

__device__ __forceinline__ uint32_t tc_bits(__half v) { return __half_as_ushort(v); }
__device__ __forceinline__ uint32_t tc_bits(__nv_bfloat16 v) { return __bfloat16_as_ushort(v); }

/* x and y split into P 16-bit parts each (part i: the rounding of what parts 0..i-1 left), part
 * i of both packed in pairs[i], x in the low half (an MMA fragment register). */
template <typename T, int P>
__device__ __forceinline__ void tc_split2(float x, float y, uint32_t (&pairs)[P])
{
#pragma unroll
    for (int i = 0; i < P; i++) {
        T a = ec_from_f32<T>(x), b = ec_from_f32<T>(y);
        x = __fsub_rn(x, ec_to_f32(a));
        y = __fsub_rn(y, ec_to_f32(b));
        pairs[i] = tc_bits(a) | tc_bits(b) << 16;
    }
}

template <typename T, int KS> /* KS = head_dim / 16 */
__global__ void __launch_bounds__(128)
    attn_prefill_mma_kernel(ec_cuda_attn_shape s, const float *q, const T *k_cache,
                            const T *v_cache, const int *pos, int n, int hpb_log2, T *out)
{
    constexpr int P = tc_parts<T>::N, HD = 16 * KS, LD = HD + TC_PAD, NT = TC_KEYS / 8;
    extern __shared__ uint4 smem16[];
    T *sQ = reinterpret_cast<T *>(smem16);                      /* [P][64][LD] */
    T *sK = sQ + P * PF_ROWS * LD, *sV = sK + 2 * TC_KEYS * LD; /* [2][64][LD] each */
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    int tile = (int)(gridDim.x - 1 - blockIdx.x), h0 = blockIdx.y << hpb_log2, b = blockIdx.z;
    int rph_log2 = PF_ROWS_LOG2 - hpb_log2;
    int i0 = tile << rph_log2, rows = min(1 << rph_log2, n - i0);
    size_t head_off = ((size_t)b * s.n_kv_heads + h0 / (s.n_heads / s.n_kv_heads)) * s.max_seq * HD;
    const T *K = k_cache + head_off, *V = v_cache + head_off;
    ec_wait_inputs();
    int p0 = *pos + i0, keys = p0 + rows;

    /* K and V rows [k0, k0 + 64) into stage st; rows at or past `keys` are zeros (never NaN:
     * a zero probability times a NaN value would still be NaN) */
    auto fetch = [&](int k0, int st) {
        for (int e = threadIdx.x; e < TC_KEYS * (HD / 8); e += 128) {
            int r = e / (HD / 8), c = e % (HD / 8) * 8;
            bool in = k0 + r < keys;
            size_t at = in ? (size_t)(k0 + r) * HD + c : 0;
            ec_cp_async16(sK + (st * TC_KEYS + r) * LD + c, K + at, in);
            ec_cp_async16(sV + (st * TC_KEYS + r) * LD + c, V + at, in);
        }
        ec_cp_async_commit();
    };
    fetch(0, 0);
    /* the rows' queries in P parts (padding rows repeat the last row, as above) */
    for (int e = threadIdx.x; e < PF_ROWS * (HD / 2); e += 128) {
        int r = e / (HD / 2), d = e % (HD / 2) * 2;
        pf_row pr = pf_row_of(r, rph_log2, rows);
        float2 v = *reinterpret_cast<const float2 *>(
            q + (((size_t)b * n + i0 + pr.i) * s.n_heads + h0 + pr.head) * HD + d);
        uint32_t parts[P];
        tc_split2<T, P>(v.x, v.y, parts);
#pragma unroll
        for (int i = 0; i < P; i++)
            *reinterpret_cast<uint32_t *>(sQ + (i * PF_ROWS + r) * LD + d) = parts[i];
    }

    /* ldmatrix.x4: lanes 8i..8i+7 address the rows of 8x8 matrix i, which lands in register i.
     * A fragment (16 rows x 16 columns; also V transposed, 16 keys x 8 dims x 2): matrices at
     * (rows 0-7, 8-15) x (columns 0-7, 8-15), row-half first. B of two key tiles (keys x 16
     * dims): (dims 0-7, 8-15) x (keys 0-7, 8-15), dim-half first. */
    int a_row = (lane & 7) + ((lane >> 3) & 1) * 8, a_col = (lane >> 4) * 8;
    int b_row = (lane & 7) + ((lane >> 4) & 1) * 8, b_col = ((lane >> 3) & 1) * 8;
    int qpos[2]; /* this lane's rows: 16 warp + g and + 8 */
#pragma unroll
    for (int hr = 0; hr < 2; hr++)
        qpos[hr] = p0 + pf_row_of(16 * warp + g + 8 * hr, rph_log2, rows).i;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}, o[2 * KS][4];
#pragma unroll
    for (int d = 0; d < 2 * KS; d++)
        o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
    float norm = sqrtf((float)HD);
    int ntiles = (keys + TC_KEYS - 1) / TC_KEYS;
    for (int kt = 0; kt < ntiles; kt++) {
        int st = kt & 1, k0 = kt * TC_KEYS;
        if (kt + 1 < ntiles) {
            fetch(k0 + TC_KEYS, st ^ 1);
            ec_cp_async_wait<1>();
        } else {
            ec_cp_async_wait<0>();
        }
        __syncthreads(); /* tile kt (and at kt = 0 the queries) in shared memory */
        const T *tK = sK + st * TC_KEYS * LD, *tV = sV + st * TC_KEYS * LD;

        float sc[NT][4];
#pragma unroll
        for (int j = 0; j < NT; j++)
            sc[j][0] = sc[j][1] = sc[j][2] = sc[j][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < KS; kk++) {
            uint32_t a[P][4];
#pragma unroll
            for (int i = 0; i < P; i++)
                tc_ldmatrix_x4(a[i], sQ + (i * PF_ROWS + 16 * warp + a_row) * LD + 16 * kk + a_col);
#pragma unroll
            for (int j = 0; j < NT; j += 2) {
                uint32_t kb[4]; /* B of key tiles j and j + 1 */
                tc_ldmatrix_x4(kb, tK + (8 * j + b_row) * LD + 16 * kk + b_col);
#pragma unroll
                for (int i = 0; i < P; i++) {
                    ec_mma16816<T>(sc[j], a[i], make_uint2(kb[0], kb[1]));
                    ec_mma16816<T>(sc[j + 1], a[i], make_uint2(kb[2], kb[3]));
                }
            }
        }
        /* fragment entry c of key tile j: row g + 8 (c / 2), key k0 + 8 j + 2 t + c % 2 */
#pragma unroll
        for (int hr = 0; hr < 2; hr++) {
            float mx = -INFINITY;
#pragma unroll
            for (int j = 0; j < NT; j++)
#pragma unroll
                for (int c = 0; c < 2; c++) {
                    float &v = sc[j][2 * hr + c];
                    v = k0 + 8 * j + 2 * t + c <= qpos[hr] ? v / norm : -INFINITY;
                    mx = fmaxf(mx, v);
                }
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            float mnew = fmaxf(m[hr], mx), corr = expf(m[hr] - mnew); /* finite: key 0 in tile 0 */
            m[hr] = mnew;
            l[hr] *= corr;
#pragma unroll
            for (int j = 0; j < NT; j++)
#pragma unroll
                for (int c = 0; c < 2; c++) {
                    float &v = sc[j][2 * hr + c];
                    v = expf(v - mnew);
                    l[hr] += v;
                }
#pragma unroll
            for (int d = 0; d < 2 * KS; d++) {
                o[d][2 * hr] *= corr;
                o[d][2 * hr + 1] *= corr;
            }
        }
        /* O += P V: P's k-step jj is key tiles 2 jj and 2 jj + 1, whose score fragments are the
         * A fragment's halves */
#pragma unroll
        for (int jj = 0; jj < NT / 2; jj++) {
            uint32_t a[4][P];
            tc_split2<T, P>(sc[2 * jj][0], sc[2 * jj][1], a[0]);
            tc_split2<T, P>(sc[2 * jj][2], sc[2 * jj][3], a[1]);
            tc_split2<T, P>(sc[2 * jj + 1][0], sc[2 * jj + 1][1], a[2]);
            tc_split2<T, P>(sc[2 * jj + 1][2], sc[2 * jj + 1][3], a[3]);
#pragma unroll
            for (int d = 0; d < 2 * KS; d += 2) {
                uint32_t vb[4]; /* B of dimension tiles d and d + 1 */
                tc_ldmatrix_x4_trans(vb, tV + (16 * jj + a_row) * LD + 8 * d + a_col);
#pragma unroll
                for (int i = 0; i < P; i++) {
                    const uint32_t ai[4] = {a[0][i], a[1][i], a[2][i], a[3][i]};
                    ec_mma16816<T>(o[d], ai, make_uint2(vb[0], vb[1]));
                    ec_mma16816<T>(o[d + 1], ai, make_uint2(vb[2], vb[3]));
                }
            }
        }
        __syncthreads(); /* stage st is read: the next iteration's fetch may overwrite it */
    }
#pragma unroll
    for (int hr = 0; hr < 2; hr++) {
        float sum = l[hr];
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        pf_row pr = pf_row_of(16 * warp + g + 8 * hr, rph_log2, rows);
        if (!pr.stored) continue;
        T *orow = out + (((size_t)b * n + i0 + pr.i) * s.n_heads + h0 + pr.head) * HD;
#pragma unroll
        for (int d = 0; d < 2 * KS; d++) {
            orow[8 * d + 2 * t] = ec_from_f32<T>(o[d][2 * hr] / sum);
            orow[8 * d + 2 * t + 1] = ec_from_f32<T>(o[d][2 * hr + 1] / sum);
        }
    }
}

/* Heads per block (log2): while half the rows still hold every position, and the kv group
 * splits; and the grid of row tiles x head groups x sequences. */
static dim3 prefill_grid(const ec_cuda_attn_shape *s, int batch, int n, int *hpb_log2)
{
    int group = s->n_heads / s->n_kv_heads, h = 0;
    while (2 * n <= (PF_ROWS >> h) && group % (2 << h) == 0) h++;
    *hpb_log2 = h;
    int rph = PF_ROWS >> h;
    return dim3((unsigned)((n + rph - 1) / rph), (unsigned)(s->n_heads >> h), (unsigned)batch);
}

/* Launches Kernel (CUDA-core or tensor-core) with `bytes` of shared memory, opted in up to
 * `most` (what any head_dim it serves needs, as far as the device allows: set once). */
template <typename T, auto Kernel>
static int launch_prefill(const ec_cuda_attn_shape *s, const float *q, const void *k_cache,
                          const void *v_cache, const int *pos, int batch, int n, void *out,
                          size_t bytes, size_t most, unsigned threads, cudaStream_t stream)
{
    int limit = ec_smem_limit();
    if (bytes > (size_t)limit)
        return ec_set_error("prefill attention at head_dim %d needs %zu bytes of shared memory; "
                            "the device allows %d per block", s->head_dim, bytes, limit);
    EC_CUDA_TRY(ec_smem_optin<Kernel>(most < (size_t)limit ? most : (size_t)limit),
                "cudaFuncSetAttribute(prefill attention, %zu bytes of shared memory)", most);
    int hpb_log2;
    dim3 grid = prefill_grid(s, batch, n, &hpb_log2);
    EC_CUDA_TRY(ec_launch(Kernel, grid, dim3(threads), bytes, stream, *s, q, (const T *)k_cache,
                          (const T *)v_cache, pos, n, hpb_log2, (T *)out),
                "launch of prefill attention (%d row tiles x %d heads x %d sequences, %d heads "
                "a block)", grid.x, s->n_heads, batch, 1 << hpb_log2);
    return 0;
}

template <typename T, int DG>
static int launch_fp32(const ec_cuda_attn_shape *s, const float *q, const void *k_cache,
                       const void *v_cache, const int *pos, int batch, int n, void *out,
                       cudaStream_t stream)
{
    return launch_prefill<T, attn_prefill_kernel<T, DG>>(
        s, q, k_cache, v_cache, pos, batch, n, out, prefill_smem_bytes(s->head_dim),
        prefill_smem_bytes(64 * DG), PF_THREADS, stream);
}

template <typename T, int KS>
static int launch_mma(const ec_cuda_attn_shape *s, const float *q, const void *k_cache,
                      const void *v_cache, const int *pos, int batch, int n, void *out,
                      cudaStream_t stream)
{
    size_t bytes = tc_smem_bytes(16 * KS, tc_parts<T>::N);
    return launch_prefill<T, attn_prefill_mma_kernel<T, KS>>(
        s, q, k_cache, v_cache, pos, batch, n, out, bytes, bytes, 128, stream);
}

extern "C" int ec_cuda_attention_prefill(ec_cuda_dtype t, const ec_cuda_attn_shape *s,
                                         const float *q, const void *k_cache, const void *v_cache,
                                         const int *pos, int batch, int n, void *out,
                                         cudaStream_t stream)
{
    if (s->head_dim % 8 != 0 || s->head_dim > EC_CUDA_MAX_HEAD_DIM ||
        s->n_heads % s->n_kv_heads != 0)
        return ec_set_error("prefill attention: unsupported head_dim %d / heads %d / kv heads %d "
                            "(needs head_dim a multiple of 8 up to %d, heads a multiple of kv "
                            "heads)", s->head_dim, s->n_heads, s->n_kv_heads,
                            EC_CUDA_MAX_HEAD_DIM);
    static_assert(EC_CUDA_MAX_HEAD_DIM <= 4 * 64, "at most four 4-float groups per thread");
    return ec_dispatch_dtype(t, [&](auto tag) {
        typedef decltype(tag) T;
        int hd = s->head_dim, dg = (hd + 63) / 64;
        return hd == 128  ? launch_mma<T, 8>(s, q, k_cache, v_cache, pos, batch, n, out, stream)
               : hd == 96 ? launch_mma<T, 6>(s, q, k_cache, v_cache, pos, batch, n, out, stream)
               : hd == 64 ? launch_mma<T, 4>(s, q, k_cache, v_cache, pos, batch, n, out, stream)
               : dg == 1  ? launch_fp32<T, 1>(s, q, k_cache, v_cache, pos, batch, n, out, stream)
               : dg == 2  ? launch_fp32<T, 2>(s, q, k_cache, v_cache, pos, batch, n, out, stream)
               : dg == 3  ? launch_fp32<T, 3>(s, q, k_cache, v_cache, pos, batch, n, out, stream)
                          : launch_fp32<T, 4>(s, q, k_cache, v_cache, pos, batch, n, out, stream);
    });
}
