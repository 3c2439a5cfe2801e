/* ecocompute/engine.h — the backend-neutral decode engine and the backend interface.
 *
 * The engine loop (prefill a batch of prompts, then decode greedily a fixed number of tokens
 * with a KV cache, never stopping early) knows nothing of CPUs or CUDA: it drives a backend
 * through ec_backend_ops. A backend owns its weights (in the requested format) and its KV cache;
 * its forward pass is one call per step, so a GPU backend can fuse and graph-capture the whole
 * step. Phase hooks let callers (bench, meter) open measurement windows around prefill and
 * decode without the engine knowing about meters. docs/engine.md describes the forward pass
 * and the policies (which tensors are quantized, how generation counts). */
#ifndef ECOCOMPUTE_ENGINE_H
#define ECOCOMPUTE_ENGINE_H

#include "ecocompute/common.h"
#include "ecocompute/model.h"
#include "ecocompute/quant.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { EC_KERNELS_FUSED = 0, EC_KERNELS_REFERENCE } ec_kernels;
const char *ec_kernels_name(ec_kernels k); /* "fused", "reference" */
int ec_kernels_parse(const char *name, ec_kernels *out);

/* A tensor-parallel group (src/engine/tp.h); backends see it through ec_load_options. */
typedef struct ec_tp_group ec_tp_group;

typedef struct {
    ec_precision precision; /* format of the linear layers (default fp16) */
    ec_kernels kernels;     /* GPU kernel family (docs/cuda-backend.md); the CPU backend has one */
    float int8_threshold;   /* int8-mixed outlier threshold (default EC_INT8_THRESHOLD) */
    int quantize_head;      /* also quantize the output head (default: 16-bit) */
    int max_batch;          /* KV cache is allocated for this many sequences (default 1) ... */
    int max_seq;            /* ... of up to this many positions; 0 = the model's max_seq_len */
    int threads;            /* CPU backend worker threads; 0 = all cores */
    int device;             /* CUDA device index (the first rank's under tensor parallelism) */
    int tp;                 /* tensor-parallel ranks (0 or 1: one device); ec_device_list */
    /* Set by the tensor-parallel backend for each rank it loads (NULL otherwise): the model
     * given to load is then the rank's shard (ec_model_shard), and the backend completes the
     * partial sums of o and down over the group. */
    ec_tp_group *tp_group;
    int tp_rank;
} ec_load_options;
void ec_load_options_default(ec_load_options *o);

/* The inputs of a layer's linears whose int8-mixed outlier columns are counted (q, k and v share
 * one input, as do gate and up). */
typedef enum {
    EC_LINEAR_QKV = 0,
    EC_LINEAR_O,
    EC_LINEAR_GATE_UP,
    EC_LINEAR_DOWN,
    EC_LINEAR_INPUTS
} ec_linear_input;
const char *ec_linear_input_name(ec_linear_input i); /* "qkv", "o", "gate/up", "down" */

typedef struct ec_backend ec_backend;
typedef struct {
    const char *name; /* "cpu", "cuda" */
    /* Uploads the model's weights in o->precision and allocates the KV cache. */
    int (*load)(ec_backend *b, const ec_model *m, const ec_load_options *o);
    /* Runs positions [pos, pos+n) of `batch` sequences: tokens is [batch][n]. Writes the greedy
     * next token of each sequence's last position to next [batch] and, if logits is not NULL,
     * that position's logits to logits [batch][vocab]. Returns 0 or -1 (ec_last_error). */
    int (*forward)(ec_backend *b, const int *tokens, int batch, int n, int pos, int *next,
                   float *logits);
    /* Waits until all submitted work is finished (phase boundaries are timed after this). */
    int (*synchronize)(ec_backend *b);
    void (*destroy)(ec_backend *b);
    /* Optional (NULL when the backend cannot count): int8-mixed outlier statistics since load.
     * avg [n_layers][EC_LINEAR_INPUTS] gets the mean number of activation columns that crossed
     * the threshold per call (a prefill chunk or a decode step) of each linear input; 0 where
     * nothing was counted (other precisions). Returns 0 or -1 (ec_last_error). */
    int (*outlier_stats)(ec_backend *b, double *avg);
    /* Optional (NULL: nothing to do): the one-time work before the first steps of `batch`
     * sequences, so that timed phases hold only steady-state work. ec_generate calls it before
     * its prefill phase starts; forward does the same work itself when it was not called. The
     * CUDA backend captures (and loads the kernels of) its decode graph here. Returns 0 or -1. */
    int (*prepare)(ec_backend *b, int batch);
    /* Optional (NULL: ec_generate calls ec_decode_stepwise): `steps` greedy decode steps of
     * `batch` sequences whose tokens are tokens [batch][ld]. Column 0 holds each sequence's
     * token at position pos; step g feeds column g at position pos + g and writes its next
     * token to column g + 1. The same tokens as ec_decode_stepwise, but the backend need not
     * hand each one back before the next step (the CUDA backend feeds them on the device).
     * Called after a forward returned. Returns 0 or -1 (ec_last_error). */
    int (*decode)(ec_backend *b, int *tokens, int ld, int batch, int pos, int steps);
} ec_backend_ops;

struct ec_backend {
    const ec_backend_ops *ops;
    void *impl;
};

/* Parses a device name: "cpu" (index -1), "cuda" (index 0), "cuda:N". -1 if malformed. */
int ec_device_parse(const char *device, int *cuda_index);
/* The devices of a tensor-parallel run: "cuda:0,1,3" lists them; "cuda:N" with tp ranks means
 * N .. N+tp-1, "cuda" 0 .. tp-1, "cpu" tp CPU ranks (index -1 each; the CPU backend's check of
 * the sharding arithmetic). tp 0 takes the list's length; a list and a different tp, repeated
 * GPUs or more than `cap` ranks are refused. Writes the CUDA indices (-1 for cpu) to idx and
 * returns their count, or -1 (ec_last_error). */
int ec_device_list(const char *device, int tp, int *idx, int cap);
/* The GPU a device name runs on, as the meter selects it: "GPU-<uuid>" for cuda[:N] (CUDA's
 * device order can differ from NVML's). -1 (ec_last_error) for "cpu", a malformed name, a
 * missing device, or a build without the CUDA backend. */
int ec_device_gpu_uuid(const char *device, char *buf, size_t len);
/* Creates an empty backend by device name (then call ops->load). -1 (ec_last_error) if the
 * name is malformed or that backend is not built. */
int ec_backend_create(ec_backend **out, const char *device);
/* Calls ops->destroy (frees weights and cache) and frees b; NULL is fine. */
void ec_backend_destroy(ec_backend *b);
/* Creates the backend `device` names and loads `m` into it with `o`; o->device is set from
 * `device`. More than one device (a list, or o->tp > 1) opens the tensor-parallel backend, which
 * loads one shard of `m` per device and runs them in step. Returns 0, -1 when the backend cannot be created (malformed name, not built) or -2
 * when loading failed (ec_last_error says why; callers word the two differently); *out is NULL
 * on failure. The one way bench and the CLI open a loaded backend. */
int ec_backend_open(ec_backend **out, const char *device, const ec_model *m, ec_load_options *o);

typedef enum { EC_PHASE_PREFILL = 0, EC_PHASE_DECODE } ec_phase;
typedef struct {
    /* Called right before a phase starts and right after it ended (backend synchronized). */
    void (*on_phase)(void *ctx, ec_phase phase, int begin);
    void *ctx;
} ec_phase_hooks;

typedef struct {
    double prefill_s;    /* wall time of one prefill phase, s */
    double decode_s;     /* wall time of one decode phase, s */
    long prefill_tokens; /* batch * prompt_len tokens processed (one phase) */
    long decode_tokens;  /* batch * (gen - 1) tokens produced by decode steps (one phase) */
    int prefill_reps, decode_reps; /* repetitions of each phase inside its window */
    double prefill_window_s, decode_window_s; /* wall time of all repetitions, s */
} ec_generate_stats;

/* Greedy generation: prompts [batch][prompt_len] → out [batch][gen] (exactly gen tokens each,
 * never stopping early). The prefill call runs positions [0, prompt_len) and yields token 0;
 * each of the gen-1 decode steps (ops->decode, else ec_decode_stepwise) feeds the previous token
 * and yields the next, so the cache needs prompt_len + gen - 1 positions. hooks may be NULL.
 * Returns 0 or -1 (ec_last_error). */
int ec_generate(ec_backend *b, const int *prompts, int batch, int prompt_len, int gen, int *out,
                const ec_phase_hooks *hooks, ec_generate_stats *stats);
/* The same, each phase repeated inside its hooks' window so that the window lasts long enough
 * for the GPU's energy counter (a counter that updates every 0.1 s cannot time a 0.1 s phase):
 * the prefill call prefill_reps times over the same prompts, then the whole decode phase
 * decode_reps times from the same KV position (each repetition rewrites the same cache positions
 * and, greedy, yields the same tokens); then each phase once more at a time until its window
 * lasts min_window_s. Stats give one phase's time, the repetitions and the windows' time. */
int ec_generate_repeated(ec_backend *b, const int *prompts, int batch, int prompt_len, int gen,
                         int *out, int prefill_reps, int decode_reps, double min_window_s,
                         const ec_phase_hooks *hooks, ec_generate_stats *stats);
/* ops->decode's contract through one forward call per step, each token back on the host before
 * the next step starts (what eager frameworks do). */
int ec_decode_stepwise(ec_backend *b, int *tokens, int ld, int batch, int pos, int steps);

/* Bytes a decode step must read from memory at least: every linear weight in `prec`, the
 * norms, the 16-bit head (the embedding table only by the rows it looks up, i.e. not at all
 * when untied), and the K and V caches of `batch` sequences over `context` positions (16-bit,
 * as the CUDA backend keeps them). Over the memory bandwidth, this is the step's time floor:
 * the denominator of "% of roofline". */
double ec_decode_step_bytes(const ec_model_config *c, ec_precision prec, int batch,
                            double context);

/* Synthetic prompts: out [batch][len] token ids in [3, vocab) (ids 0-2 are the special
 * unk/bos/eos of Llama vocabularies), a pure function of (seed, index). */
void ec_prompt_synthetic(uint64_t seed, int vocab, int batch, int len, int *out);

/* ---- which of this build's CUDA code runs on a GPU, and with what (src/engine/gpu_support.c) ----
 * Machine code (SASS) for sm_XY runs on GPUs of compute capability X.y for y >= Y (sm_90a, which
 * is arch-specific, on 9.0 alone); PTX for compute_XY is compiled by the driver, at first use,
 * for any GPU of compute capability X.Y or newer. The driver loads the best machine code and
 * else JIT-compiles the newest PTX, and that code has its own architecture's instructions,
 * whatever the GPU: a compute_80 build runs on an H200 exactly as on an A100. So the CUDA
 * backend chooses each kernel path by the architecture of the code that runs (it reads it from
 * the loaded code); these functions predict it from the list compiled in, without a GPU. */
enum {
    EC_GPU_BF16 = 1u << 0,        /* bf16 arithmetic and bf16 tensor cores (sm_80+) */
    EC_GPU_CP_ASYNC = 1u << 1,    /* asynchronous copies to shared memory, m16n8k16 mma (sm_80+) */
    EC_GPU_FP8_CVT = 1u << 2,     /* hardware e4m3 -> fp16 conversion (sm_89+) */
    EC_GPU_CLUSTERS = 1u << 3,    /* thread block clusters, distributed shared memory (sm_90+) */
    EC_GPU_PDL = 1u << 4,         /* programmatic dependent launch (sm_90+) */
    EC_GPU_L2_PREFETCH = 1u << 5, /* bulk prefetch into L2 (sm_90+) */
    EC_GPU_WGMMA = 1u << 6,       /* warpgroup mma (sm_90a code alone) */
    EC_GPU_FEATURE_COUNT = 7
};
/* The EC_GPU_* bits of device code of architecture code_arch (10 x major + minor, e.g. 86),
 * arch_specific for sm_90a-style code. */
unsigned ec_gpu_features(int code_arch, int arch_specific);
/* "bf16", "cp.async", "fp8-cvt", "clusters", "pdl", "l2-prefetch", "wgmma" for one bit. */
const char *ec_gpu_feature_name(unsigned bit);

typedef struct {
    int code_arch;     /* 10 x major + minor of the code that runs (86: sm_86); 0: none does */
    int arch_specific; /* sm_90a-style code */
    int jit;           /* PTX compiled by the driver at first use, not machine code */
    unsigned features; /* ec_gpu_features of it */
} ec_gpu_code;
/* Which of `archs` (CMAKE_CUDA_ARCHITECTURES entries separated by spaces or semicolons: "80-real",
 * "90a-real", "120-virtual", "86" for both) runs on a GPU of compute capability major.minor.
 * Returns 0, or -1 (out->code_arch 0) when none does. */
int ec_gpu_code_for(const char *archs, int major, int minor, ec_gpu_code *out);
/* This build's CUDA architectures ("75-real 80-real ..."); "" without the CUDA backend. */
const char *ec_cuda_build_architectures(void);
/* What precision p needs that code with `features` lacks ("bf16 arithmetic (compute capability
 * 8.0+)"), or NULL when the CUDA backend runs p there. */
const char *ec_gpu_precision_missing(ec_precision p, unsigned features);

/* ---- accuracy metrics over next-token logits (eval) ---- */
/* Index of the largest value, the lowest index on ties (greedy decoding). */
int ec_argmax(const float *x, int n);
/* KL(softmax(ref) || softmax(other)) in nats. */
double ec_logits_kl(const float *ref, const float *other, int n);
/* -log softmax(logits)[target] in nats. */
double ec_logits_nll(const float *logits, int n, int target);

/* ---- whether a device can run a precision (src/engine/device_ready.c) ---- */
/* 0 when `device` ("cpu", "cuda", "cuda:N") runs precision p with this build: for a GPU, a driver,
 * the device and this build's code for it with what p needs. Else -1 with one line in
 * ec_last_error (no driver, no such device, no code for the GPU, no CUDA backend built). */
int ec_device_ready(const char *device, ec_precision p);

#ifdef __cplusplus
}
#endif
#endif
