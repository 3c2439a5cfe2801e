/* kernels_embed.cu — the token embedding lookup into the fp32 residual stream (ec_cuda_embed). */
#include "common/cuda_check.h"
#include "kernels_common.cuh"

#include <stdint.h>

/* One block per token row; dim % 8 == 0 (checked at load) so each thread moves 16 bytes.
 * The step's first kernel lets the next launch only after its wait: launched back to back
 * without a graph, the previous step's argmax writes this step's tokens and position, which the
 * attention reads before its own wait. */
template <typename T>
__global__ void embed_kernel(const T *table, const int *tokens, int dim, float *x)
{
    ec_wait_inputs(false);
    ec_release_next();
    const T *row = table + (size_t)tokens[blockIdx.x] * dim;
    float *out = x + (size_t)blockIdx.x * dim;
    for (int c = threadIdx.x * 8; c < dim; c += blockDim.x * 8) {
        float v[8];
        ec_unpack8<T>(*reinterpret_cast<const uint4 *>(row + c), v);
#pragma unroll
        for (int i = 0; i < 8; i++) out[c + i] = v[i];
    }
}

extern "C" int ec_cuda_embed(ec_cuda_dtype t, const void *table, const int *tokens, int ntok,
                             int dim, float *x, cudaStream_t stream)
{
    return ec_dispatch_dtype(t, [&](auto tag) {
        typedef decltype(tag) T;
        EC_CUDA_TRY(ec_launch(embed_kernel<T>, dim3(ntok), dim3(128), 0, stream, (const T *)table,
                              tokens, dim, x),
                    "launch of embedding kernel (%d tokens x %d)", ntok, dim);
        return 0;
    });
}
