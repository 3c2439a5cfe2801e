/* linear.cu — one linear layer for any batch: the GEMV kernels up to EC_CUDA_GEMV_MAX_BATCH token
 * rows, cuBLAS above (prefill, large decode batches).
 *
 * cuBLAS is column-major: the row-major weight W [rows][cols] is a column-major cols x rows
 * matrix, so y^T (rows x m) = op_T(W) * x^T, with x [m][cols] a column-major cols x m matrix.
 * Inputs are 16-bit, compute and output fp32 (CUBLAS_COMPUTE_32F), so the residual add is the
 * GEMM's beta = 1. ec_cuda_gemm16 is the backend's one 16-bit cuBLAS GEMM: the reference
 * quantized family multiplies its dequantized weights with it too (kernels_dequant.cu). */
#include "common/cuda_check.h"
#include "kernels.h"

extern "C" int ec_cuda_gemm16(cublasHandle_t cublas, ec_cuda_dtype t, const void *w, int ldw,
                              const void *x, int ldx, int m, int rows, int cols, float *y, int ldy,
                              float beta)
{
    cudaDataType ab = t == EC_CUDA_BF16 ? CUDA_R_16BF : CUDA_R_16F;
    const float alpha = 1.0f;
    EC_CUBLAS_TRY(cublasGemmEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, rows, m, cols, &alpha, w, ab,
                               ldw, x, ab, ldx, &beta, y, CUDA_R_32F, ldy, CUBLAS_COMPUTE_32F,
                               CUBLAS_GEMM_DEFAULT),
                  "cublasGemmEx (%d x %d weight, %d token rows)", rows, cols, m);
    return 0;
}

extern "C" int ec_cuda_linear(cublasHandle_t cublas, ec_cuda_dtype t, ec_gemv_mode mode,
                              const void *w, const void *x, int batch, int rows, int cols,
                              void *y, int ldy, float *gu, cudaStream_t stream)
{
    if (batch <= EC_CUDA_GEMV_MAX_BATCH)
        return ec_cuda_gemv(t, mode, w, x, batch, rows, cols, y, ldy, stream);
    if (mode != EC_GEMV_SILU_MUL)
        return ec_cuda_gemm16(cublas, t, w, cols, x, cols, batch, rows, cols, (float *)y, ldy,
                              mode == EC_GEMV_ADD ? 1.0f : 0.0f);
    if (ec_cuda_gemm16(cublas, t, w, cols, x, cols, batch, 2 * rows, cols, gu, 2 * rows, 0.0f))
        return -1;
    return ec_cuda_silu_mul(t, gu, batch, rows, y, ldy, stream);
}
