/* cpu_ops.c — RMSNorm, rotary embeddings, causal attention for one head, SwiGLU (float32). */
#include "engine/cpu/cpu_ops.h"

#include <math.h>

void cpu_rmsnorm(float *out, const float *x, const float *w, int n, float eps)
{
    float ss = 0.0f;
    for (int i = 0; i < n; i++)
        ss += x[i] * x[i];
    ss /= (float)n;
    ss += eps;
    ss = 1.0f / sqrtf(ss);
    for (int i = 0; i < n; i++)
        out[i] = w[i] * (ss * x[i]);
}

/* Llama-3 rope scaling (as in Hugging Face's _compute_llama3_parameters): long wavelengths are
 * slowed by `factor`, short ones kept, and the band between blended smoothly. */
static float llama3_scale(const ec_model_config *c, float inv_freq)
{
    const float pi = 3.14159265358979323846f;
    float old_len = (float)c->rope_original_max_pos;
    float low_wavelen = old_len / c->rope_low_freq_factor;
    float high_wavelen = old_len / c->rope_high_freq_factor;
    float wavelen = 2.0f * pi / inv_freq;
    if (wavelen < high_wavelen) return inv_freq;
    if (wavelen > low_wavelen) return inv_freq / c->rope_scaling_factor;
    float smooth = (old_len / wavelen - c->rope_low_freq_factor) /
                   (c->rope_high_freq_factor - c->rope_low_freq_factor);
    return (1.0f - smooth) * inv_freq / c->rope_scaling_factor + smooth * inv_freq;
}

void cpu_rope_inv_freq(const ec_model_config *c, float *inv_freq)
{
    for (int j = 0; j < c->head_dim / 2; j++) {
        inv_freq[j] = 1.0f / powf(c->rope_theta, (float)(2 * j) / (float)c->head_dim);
        if (c->rope_scaling == EC_ROPE_SCALING_LLAMA3) inv_freq[j] = llama3_scale(c, inv_freq[j]);
        else if (c->rope_scaling == EC_ROPE_SCALING_LINEAR) inv_freq[j] /= c->rope_scaling_factor;
    }
}

void cpu_rope_angles(const float *inv_freq, int half, int pos, float *cos_out, float *sin_out)
{
    for (int j = 0; j < half; j++) {
        float angle = (float)pos * inv_freq[j];
        cos_out[j] = cosf(angle);
        sin_out[j] = sinf(angle);
    }
}

void cpu_rope_apply(float *vec, int n_heads, int head_dim, const float *cos_v, const float *sin_v,
                    int interleaved)
{
    int half = head_dim / 2;
    /* Element j of a pair sits at j*step, its partner `partner` further on. */
    int step = interleaved ? 2 : 1;
    int partner = interleaved ? 1 : half;
    for (int h = 0; h < n_heads; h++) {
        float *head = vec + (size_t)h * head_dim;
        for (int j = 0; j < half; j++) {
            float *a = head + j * step, *b = a + partner;
            float v0 = *a, v1 = *b;
            *a = v0 * cos_v[j] - v1 * sin_v[j];
            *b = v0 * sin_v[j] + v1 * cos_v[j];
        }
    }
}

void cpu_attend(float *out, const float *q, const float *k, const float *v, int stride, int len,
                int head_dim, float *scores)
{
    float norm = sqrtf((float)head_dim);
    float max = -INFINITY;
    for (int t = 0; t < len; t++) {
        const float *kt = k + (size_t)t * stride;
        float s = 0.0f;
        for (int i = 0; i < head_dim; i++)
            s += q[i] * kt[i];
        s /= norm;
        scores[t] = s;
        if (s > max) max = s;
    }
    float sum = 0.0f;
    for (int t = 0; t < len; t++) {
        scores[t] = expf(scores[t] - max);
        sum += scores[t];
    }
    for (int t = 0; t < len; t++)
        scores[t] /= sum;
    for (int i = 0; i < head_dim; i++)
        out[i] = 0.0f;
    for (int t = 0; t < len; t++) {
        const float *vt = v + (size_t)t * stride;
        for (int i = 0; i < head_dim; i++)
            out[i] += scores[t] * vt[i];
    }
}

void cpu_swiglu(float *gate, const float *up, int n)
{
    for (int i = 0; i < n; i++) {
        float g = gate[i];
        g *= 1.0f / (1.0f + expf(-g));
        gate[i] = g * up[i];
    }
}
