/* nccl.c — NCCL through dlopen: the few entry points the tensor-parallel ranks call, declared
 * here with the layouts of NVIDIA's nccl.h (NCCL 2.x; its API reference), resolved once. NVLink
 * SHARP (multicast) stays off: NCCL_NVLS_ENABLE=0 is set before the first communicator, so a
 * run's collectives take the same path on every host whatever the NVSwitch generation. */
#include "nccl.h"

#include "ecocompute/common.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nccl_result;                          /* ncclResult_t: 0 = ncclSuccess */
typedef struct { char internal[EC_NCCL_ID_BYTES]; } nccl_unique_id; /* ncclUniqueId */
typedef void *nccl_comm;                          /* ncclComm_t */
enum { NCCL_FLOAT32 = 7, NCCL_SUM = 0 };          /* ncclFloat32, ncclSum */

static struct {
    void *lib;
    int version;
    nccl_result (*get_version)(int *);
    nccl_result (*get_unique_id)(nccl_unique_id *);
    nccl_result (*comm_init_rank)(nccl_comm *, int, nccl_unique_id, int);
    nccl_result (*all_reduce)(const void *, void *, size_t, int, int, nccl_comm, cudaStream_t);
    nccl_result (*comm_destroy)(nccl_comm);
    const char *(*error_string)(nccl_result);
    char error[256];
} nccl;
static pthread_once_t nccl_once = PTHREAD_ONCE_INIT;

struct ec_nccl_comm {
    nccl_comm comm;
};

static void *symbol(const char *name)
{
    void *p = dlsym(nccl.lib, name);
    if (!p && !nccl.error[0])
        snprintf(nccl.error, sizeof nccl.error, "NCCL library lacks %s", name);
    return p;
}

static void load_once(void)
{
    const char *path = getenv("ECOCOMPUTE_NCCL_LIBRARY");
    nccl.lib = dlopen(path && *path ? path : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!nccl.lib) {
        snprintf(nccl.error, sizeof nccl.error,
                 "tensor parallelism over GPUs needs NCCL: %s (install NCCL, or name the file "
                 "in ECOCOMPUTE_NCCL_LIBRARY)", dlerror());
        return;
    }
    *(void **)&nccl.get_version = symbol("ncclGetVersion");
    *(void **)&nccl.get_unique_id = symbol("ncclGetUniqueId");
    *(void **)&nccl.comm_init_rank = symbol("ncclCommInitRank");
    *(void **)&nccl.all_reduce = symbol("ncclAllReduce");
    *(void **)&nccl.comm_destroy = symbol("ncclCommDestroy");
    *(void **)&nccl.error_string = symbol("ncclGetErrorString");
    if (nccl.error[0]) {
        dlclose(nccl.lib);
        nccl.lib = NULL;
        return;
    }
    int v = 0;
    if (nccl.get_version(&v) == 0) nccl.version = v;
    /* Before any communicator exists: NCCL reads its environment once. */
    setenv("NCCL_NVLS_ENABLE", "0", 1);
}

int ec_nccl_load(void)
{
    pthread_once(&nccl_once, load_once);
    return nccl.lib ? 0 : ec_set_error("%s", nccl.error);
}

int ec_nccl_version(void)
{
    return nccl.lib ? nccl.version : 0;
}

static int nccl_fail(nccl_result r, const char *what)
{
    return ec_set_error("%s: %s (NCCL error %d)", what, nccl.error_string(r), r);
}

int ec_nccl_unique_id(unsigned char id[EC_NCCL_ID_BYTES])
{
    if (ec_nccl_load()) return -1;
    nccl_unique_id u;
    nccl_result r = nccl.get_unique_id(&u);
    if (r != 0) return nccl_fail(r, "ncclGetUniqueId");
    memcpy(id, u.internal, EC_NCCL_ID_BYTES);
    return 0;
}

int ec_nccl_comm_init(ec_nccl_comm **out, int world, const unsigned char id[EC_NCCL_ID_BYTES],
                      int rank)
{
    *out = NULL;
    if (ec_nccl_load()) return -1;
    ec_nccl_comm *c = calloc(1, sizeof *c);
    if (!c) return ec_set_error("out of memory for an NCCL communicator");
    nccl_unique_id u;
    memcpy(u.internal, id, EC_NCCL_ID_BYTES);
    nccl_result r = nccl.comm_init_rank(&c->comm, world, u, rank);
    if (r != 0) {
        free(c);
        return nccl_fail(r, "ncclCommInitRank");
    }
    *out = c;
    return 0;
}

int ec_nccl_allreduce_sum(ec_nccl_comm *c, float *x, size_t n, cudaStream_t stream)
{
    nccl_result r = nccl.all_reduce(x, x, n, NCCL_FLOAT32, NCCL_SUM, c->comm, stream);
    return r ? nccl_fail(r, "ncclAllReduce") : 0;
}

void ec_nccl_comm_destroy(ec_nccl_comm *c)
{
    if (!c) return;
    nccl.comm_destroy(c->comm);
    free(c);
}
