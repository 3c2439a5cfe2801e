/* kernel_trace.c — a CUPTI injection library that writes every kernel's GPU start and end (a GPU
 * tool, not a test; Nsight Systems is not on the device machines). Kernels inside CUDA graphs are
 * recorded per node, and CONCURRENT_KERNEL tracing does not serialise them, so a decode step's
 * timeline keeps the overlap that programmatic dependent launch gives (bench/trace_report.py turns
 * it into per-layer durations and gaps).
 *
 * usage: CUDA_INJECTION64_PATH=/path/libkernel_trace.so KERNEL_TRACE_OUT=trace.csv PROGRAM ...
 * Output CSV: start_ns,end_ns,graph_id,graph_node_id,grid,block,registers,device,name (mangled;
 * device: the CUDA device ordinal, which tells a tensor-parallel run's GPUs apart). */
#include <cupti.h>

#include <stdio.h>
#include <stdlib.h>

#define CUPTI_CHECK(call)                                                                    \
    do {                                                                                     \
        CUptiResult r_ = (call);                                                             \
        if (r_ != CUPTI_SUCCESS) {                                                           \
            const char *msg_ = "?";                                                          \
            cuptiGetResultString(r_, &msg_);                                                 \
            fprintf(stderr, "kernel_trace: %s:%d %s: %s\n", __FILE__, __LINE__, #call, msg_); \
            return 0;                                                                        \
        }                                                                                    \
    } while (0)

enum { BUFFER_BYTES = 8 << 20 };

static FILE *trace_out;

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = aligned_alloc(ACTIVITY_RECORD_ALIGNMENT, BUFFER_BYTES);
    *size = *buffer ? BUFFER_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid)
{
    (void)size;
    CUpti_Activity *rec = NULL;
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
        fprintf(trace_out, "%llu,%llu,%u,%llu,%dx%d,%d,%u,%u,%s\n", (unsigned long long)k->start,
                (unsigned long long)k->end, k->graphId, (unsigned long long)k->graphNodeId,
                k->gridX, k->gridY, k->blockX, (unsigned)k->registersPerThread, k->deviceId,
                k->name);
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
        fprintf(stderr, "kernel_trace: %zu records dropped\n", dropped);
    free(buffer);
}

static void flush_at_exit(void)
{
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (trace_out) fclose(trace_out);
    trace_out = NULL;
}

/* Called by the CUDA driver when CUDA_INJECTION64_PATH names this library. */
int InitializeInjection(void);
int InitializeInjection(void)
{
    const char *path = getenv("KERNEL_TRACE_OUT");
    trace_out = fopen(path ? path : "kernel_trace.csv", "w");
    if (!trace_out) {
        perror("kernel_trace: cannot open KERNEL_TRACE_OUT");
        return 0;
    }
    fprintf(trace_out, "start_ns,end_ns,graph_id,graph_node_id,grid,block,registers,device,name\n");
    CUPTI_CHECK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
    CUPTI_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    atexit(flush_at_exit);
    return 1;
}
