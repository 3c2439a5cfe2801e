/* cpu_ops.h — the scalar float32 building blocks of the Llama forward pass on the CPU:
 * RMSNorm, rotary embeddings, one head's causal attention over the KV cache, SwiGLU.
 * Their operation order follows llama2.c's run.c so that float32 results match it bit for bit
 * wherever the matmuls do. */
#ifndef EC_ENGINE_CPU_OPS_H
#define EC_ENGINE_CPU_OPS_H

#include "ecocompute/model.h"

/* out[i] = w[i] * x[i] / sqrt(mean(x^2) + eps); out may alias x. */
void cpu_rmsnorm(float *out, const float *x /* [n] */, const float *w /* [n] */, int n, float eps);

/* Rotary frequencies of a config: inv_freq [head_dim/2] = theta^(-2j/head_dim), with the
 * config's rope scaling (llama3 or linear) applied. */
void cpu_rope_inv_freq(const ec_model_config *c, float *inv_freq /* [head_dim/2] */);
/* cos/sin of pos * inv_freq for one position. */
void cpu_rope_angles(const float *inv_freq, int half, int pos, float *cos_out /* [half] */,
                     float *sin_out /* [half] */);
/* Rotates each of n_heads heads of vec in place: pairs (2j, 2j+1) when interleaved (llama2.c),
 * else (j, j + head_dim/2) (rotate-half, Hugging Face). */
void cpu_rope_apply(float *vec /* [n_heads][head_dim] */, int n_heads, int head_dim,
                    const float *cos_v, const float *sin_v, int interleaved);

/* One query head attending causally to positions [0, len) of one KV head:
 * out = softmax(q·k_t / sqrt(head_dim)) · v_t. k and v point at position 0 of that head and
 * advance by stride floats per position; scores is scratch. */
void cpu_attend(float *out /* [head_dim] */, const float *q /* [head_dim] */, const float *k,
                const float *v, int stride, int len, int head_dim, float *scores /* [len] */);

/* gate[i] = silu(gate[i]) * up[i] (SwiGLU). */
void cpu_swiglu(float *gate /* [n] */, const float *up /* [n] */, int n);

#endif
