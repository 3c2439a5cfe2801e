/* bench_cuda.h — what the GPU tools under bench/ share: CHECK(call), a CUDA runtime call that
 * exits with the file, line, call and CUDA's message when it fails (the tools have no error to
 * return), and bench_graph_us, their timing of a kernel as the decode step runs it (calls
 * captured in a graph). */
#ifndef ECOCOMPUTE_BENCH_CUDA_H
#define ECOCOMPUTE_BENCH_CUDA_H

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* µs per call of `reps` calls of launch(ctx) (non-zero: a failed launch) captured in one graph
 * on st: the shortest of `replays` replays of the graph, the first of which also warms up. */
static inline double bench_graph_us(int (*launch)(void *ctx), void *ctx, cudaStream_t st, int reps,
                                    int replays)
{
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    int failed = 0;
    for (int i = 0; i < reps; i++)
        failed |= launch(ctx);
    CHECK(cudaStreamEndCapture(st, &g));
    if (failed) {
        fprintf(stderr, "a launch failed during the graph capture\n");
        exit(1);
    }
    CHECK(cudaGraphInstantiate(&ge, g, 0));
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    double best = 1e30;
    for (int r = 0; r < replays; r++) {
        CHECK(cudaEventRecord(a, st));
        CHECK(cudaGraphLaunch(ge, st));
        CHECK(cudaEventRecord(b, st));
        CHECK(cudaEventSynchronize(b));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        if (1e3 * ms / reps < best) best = 1e3 * ms / reps;
    }
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(b));
    CHECK(cudaGraphExecDestroy(ge));
    CHECK(cudaGraphDestroy(g));
    return best;
}

#endif
