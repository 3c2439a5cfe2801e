/* synthetic.c — synthetic weights for any config: every element is a pure function of
 * (seed, kind, layer, index) (synth_hash.h), scaled per tensor like a real initialisation, with
 * optional injected outlier feature dimensions. docs/models.md justifies the scales. */
#include "ecocompute/common.h"
#include "model_internal.h"
#include "synth_hash.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define DEFAULT_OUTLIERS 6      /* LLM.int8 (Dettmers 2022): a handful of dims in 6.7B+ models */
#define DEFAULT_OUTLIER_MAG 40.f /* the middle of the 20-60 that paper reports */
#define OUTLIER_MIN_PARAMS 6000000000ULL
#define CHUNK ((uint64_t)1 << 18) /* elements per work item: big enough to amortise a thread */

typedef struct {
    uint64_t seed;
    int threads;
    unsigned char *outlier; /* [dim] 1 where the hidden dim carries outlier activations */
    float outlier_mag;
} synth_state;

float ec_synth_normal(uint64_t seed, ec_tensor_kind k, int layer, uint64_t i)
{
    return ec_synth_normal_keyed(ec_synth_key(seed, (int)k, layer), i);
}

/* Standard deviation of a tensor's values around its mean (1 for norms, 0 otherwise). */
static float tensor_std(const ec_model_config *c, ec_tensor_kind k)
{
    int rows, cols;
    ec_tensor_shape(c, k, &rows, &cols);
    switch (k) {
    case EC_T_WQ: case EC_T_WK: case EC_T_WV: case EC_T_W_GATE: case EC_T_W_UP:
    case EC_T_LM_HEAD:
        return 1.f / sqrtf((float)cols);
    case EC_T_WO: case EC_T_W_DOWN:
        /* Projections back into the residual stream, scaled down by sqrt(2 * layers) as in
         * GPT-2/Megatron init, keep the residual's variance bounded over the depth. */
        return 1.f / sqrtf((float)cols * 2.f * (float)c->n_layers);
    default:
        return 0.02f; /* embedding (HF initializer_range), biases, and the noise on norms */
    }
}

/* The projections whose input is a normed hidden state, where the outlier dims are. Their
 * weights on those dims are scaled by 1/MAG, so an outlier dim adds to each output what any
 * other dim adds: the outputs keep their O(1) spread. Without it the dims' magnitude-40 inputs
 * tripled the spread of the gate/up outputs, and SiLU(gate)·up then crossed LLM.int8's threshold
 * in 10-20 % of the down projection's input columns per token (docs/models.md). */
static int reads_normed_hidden(ec_tensor_kind k)
{
    return k == EC_T_WQ || k == EC_T_WK || k == EC_T_WV || k == EC_T_W_GATE || k == EC_T_W_UP;
}

typedef struct {
    const ec_model *m;
    ec_tensor_kind k;
    uint64_t key, n, next_chunk;
    float *out;
    pthread_mutex_t lock;
} fill_job;

static void fill_range(const fill_job *j, uint64_t lo, uint64_t hi)
{
    const synth_state *s = j->m->impl;
    const ec_model_config *c = &j->m->cfg;
    float sd = tensor_std(c, j->k);
    int is_norm = j->k == EC_T_ATTN_NORM || j->k == EC_T_FFN_NORM || j->k == EC_T_FINAL_NORM;
    int has_outliers = s->outlier && (j->k == EC_T_ATTN_NORM || j->k == EC_T_FFN_NORM);
    int reads_outliers = s->outlier && reads_normed_hidden(j->k);
    int rows, cols;
    ec_tensor_shape(c, j->k, &rows, &cols);
    uint64_t col = lo % (uint64_t)cols; /* of element i, kept without a division per element */
    for (uint64_t i = lo; i < hi; i++, col = col + 1 == (uint64_t)cols ? 0 : col + 1) {
        float v = sd * ec_synth_normal_keyed(j->key, i);
        if (is_norm) v += 1.f;
        if (has_outliers && s->outlier[i]) v = s->outlier_mag;
        if (reads_outliers && s->outlier[col]) v /= s->outlier_mag;
        j->out[i] = v;
    }
}

static void *fill_worker(void *arg)
{
    fill_job *j = arg;
    for (;;) {
        pthread_mutex_lock(&j->lock);
        uint64_t lo = j->next_chunk;
        j->next_chunk += CHUNK;
        pthread_mutex_unlock(&j->lock);
        if (lo >= j->n) return NULL;
        fill_range(j, lo, lo + CHUNK < j->n ? lo + CHUNK : j->n);
    }
}

static int synth_read(const ec_model *m, ec_tensor_kind k, int layer, float *out)
{
    const synth_state *s = m->impl;
    if (k == EC_T_LM_HEAD && m->cfg.tied_embeddings) k = EC_T_TOK_EMB, layer = 0;
    if (!ec_tensor_is_per_layer(k)) layer = 0;
    fill_job j = {m, k, ec_synth_key(s->seed, (int)k, layer), ec_tensor_numel(&m->cfg, k), 0, out,
                  PTHREAD_MUTEX_INITIALIZER};
    uint64_t chunks = (j.n + CHUNK - 1) / CHUNK;
    int nt = s->threads < (int64_t)chunks ? s->threads : (int)chunks;
    pthread_t tid[64];
    int started = 0;
    for (; started < nt - 1; started++)
        if (pthread_create(&tid[started], NULL, fill_worker, &j)) break;
    fill_worker(&j); /* the caller works too; with no helper threads it does everything */
    for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
    pthread_mutex_destroy(&j.lock);
    return 0;
}

static void synth_destroy(ec_model *m)
{
    synth_state *s = m->impl;
    free(s->outlier);
    free(s);
}

/* Marks `count` distinct hidden dims, drawn from the seed by a partial Fisher-Yates shuffle. */
static int pick_outliers(synth_state *s, int dim, int count)
{
    int *perm = malloc((size_t)dim * sizeof *perm);
    s->outlier = calloc((size_t)dim, 1);
    if (!perm || !s->outlier) {
        free(perm);
        return ec_set_error("synthetic: out of memory choosing outlier dims");
    }
    for (int i = 0; i < dim; i++) perm[i] = i;
    uint64_t key = ec_synth_key(s->seed, EC_T_COUNT, 0);
    for (int i = 0; i < count; i++) {
        int r = i + (int)(ec_synth_mix64(key + (uint64_t)i) % (uint64_t)(dim - i));
        int t = perm[i];
        perm[i] = perm[r];
        perm[r] = t;
        s->outlier[perm[i]] = 1;
    }
    free(perm);
    return 0;
}

int ec_synthetic_open(ec_model *m, const ec_model_config *c, const ec_model_options *o)
{
    if (ec_model_config_check(c, c->name)) return -1;
    int count = o->outliers;
    if (count < 0) count = ec_model_param_count(c) >= OUTLIER_MIN_PARAMS ? DEFAULT_OUTLIERS : 0;
    if (count > c->dim)
        return ec_set_error("%s: outliers=%d exceeds the hidden size %d", c->name, count, c->dim);
    if (o->outlier_mag < 0 || !isfinite(o->outlier_mag))
        return ec_set_error("%s: outlier_mag must be a positive number", c->name);
    synth_state *s = calloc(1, sizeof *s);
    if (!s) return ec_set_error("%s: out of memory", c->name);
    s->seed = o->seed;
    s->outlier_mag = o->outlier_mag > 0 ? o->outlier_mag : DEFAULT_OUTLIER_MAG;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    s->threads = o->threads > 0 ? o->threads : (cores > 0 ? (int)cores : 1);
    if (s->threads > 64) s->threads = 64;
    if (count > 0 && pick_outliers(s, c->dim, count)) {
        free(s);
        return -1;
    }
    m->cfg = *c;
    m->cfg.rope_interleaved = 0;
    snprintf(m->source, sizeof m->source, "synthetic(seed=%" PRIu64 ")", o->seed);
    m->read = synth_read;
    m->destroy = synth_destroy;
    m->impl = s;
    return 0;
}
