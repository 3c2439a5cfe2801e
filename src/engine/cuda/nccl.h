/* nccl.h — the NCCL collectives the CUDA backend's tensor-parallel ranks use, loaded with dlopen
 * at first use (as the meter loads NVML), so that the library and the binary need NCCL only on
 * hosts that split a model over GPUs. ECOCOMPUTE_NCCL_LIBRARY names the library file; else
 * libnccl.so.2 from the loader's search path (the CUDA toolkit's lib64, or PyTorch's
 * nvidia/nccl/lib in LD_LIBRARY_PATH). */
#ifndef EC_ENGINE_CUDA_NCCL_H
#define EC_ENGINE_CUDA_NCCL_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { EC_NCCL_ID_BYTES = 128 }; /* NCCL_UNIQUE_ID_BYTES */

typedef struct ec_nccl_comm ec_nccl_comm;

/* Loads NCCL (once per process); -1 with the reason when it cannot. */
int ec_nccl_load(void);
/* NCCL's version as 10000 * major + 100 * minor + patch (2.28.9: 22809); 0 if not loaded. */
int ec_nccl_version(void);
/* A new communicator id (rank 0 makes it; every rank passes the same bytes to comm_init). */
int ec_nccl_unique_id(unsigned char id[EC_NCCL_ID_BYTES]);
/* Joins rank `rank` of `world` on the current CUDA device; blocks until all ranks joined. */
int ec_nccl_comm_init(ec_nccl_comm **out, int world, const unsigned char id[EC_NCCL_ID_BYTES],
                      int rank);
/* x [n] becomes the sum of every rank's x, enqueued on `stream` (capturable into a graph). */
int ec_nccl_allreduce_sum(ec_nccl_comm *c, float *x, size_t n, cudaStream_t stream);
void ec_nccl_comm_destroy(ec_nccl_comm *c);

#ifdef __cplusplus
}
#endif
#endif
