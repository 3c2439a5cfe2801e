/* tp_backend.c — tensor parallelism over `world` devices of one host, backend-neutral: each rank
 * is an ordinary backend (CPU or CUDA) loaded with its shard of the model (ec_model_shard) and
 * the group (ec_load_options.tp_group), which completes the partial sums of the row-parallel
 * projections inside its own step. This file only runs the ranks in step, one persistent thread
 * each (every rank must reach the group's all-reduces together), and checks that they agree:
 * every rank computes the whole head and the same greedy tokens, and rank 0 answers. */
#include "tp_backend.h"

#include "engine/cpu/threadpool.h"
#include "engine/tp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef enum {
    CALL_LOAD, CALL_FORWARD, CALL_DECODE, CALL_SYNC, CALL_PREPARE, CALL_STATS, CALL_DESTROY
} call_kind;

/* One call of every rank; rank r reads its own arguments from the arrays. */
typedef struct {
    call_kind kind;
    const ec_model *const *shards;     /* CALL_LOAD: [world] */
    const ec_load_options *opts;       /* CALL_LOAD: [world] */
    const int *tokens;                 /* CALL_FORWARD: [batch][n] */
    int *const *rank_tokens;           /* CALL_DECODE: [world] -> [batch][ld] */
    int *const *next;                  /* CALL_FORWARD: [world] -> [batch] */
    float *logits;                     /* CALL_FORWARD: rank 0 only */
    double *const *stats;              /* CALL_STATS: [world] -> [layers][inputs] */
    int batch, n, pos, ld, steps;
    int rc[EC_TP_MAX_WORLD];
    char error[EC_TP_MAX_WORLD][256];  /* ec_last_error is per thread: each rank's, kept */
} tp_call;

typedef struct {
    int world;
    int idx[EC_TP_MAX_WORLD];
    ec_tp_group *group;
    ec_pool *pool;                         /* world threads, thread r drives rank r */
    ec_model *shards[EC_TP_MAX_WORLD];
    ec_backend *ranks[EC_TP_MAX_WORLD];
    ec_model_config cfg;                   /* the whole model's */
    int max_batch;
    int *scratch;                          /* [world-1][max_batch * (max_seq + 1)] */
    size_t scratch_per_rank;
    int *next;                             /* [world][max_batch] */
} tp_state;

static tp_state *state_of(ec_backend *b) { return b->impl; }

static void run_rank(void *arg, int r, int n)
{
    (void)n;
    tp_call *c = ((void **)arg)[0];
    tp_state *s = ((void **)arg)[1];
    ec_backend *b = s->ranks[r];
    int rc = 0;
    switch (c->kind) {
    case CALL_LOAD:
        rc = b->ops->load(b, c->shards[r], &c->opts[r]);
        break;
    case CALL_FORWARD:
        rc = b->ops->forward(b, c->tokens, c->batch, c->n, c->pos, c->next[r],
                             r == 0 ? c->logits : NULL);
        break;
    case CALL_DECODE:
        rc = b->ops->decode ? b->ops->decode(b, c->rank_tokens[r], c->ld, c->batch, c->pos, c->steps)
                            : ec_decode_stepwise(b, c->rank_tokens[r], c->ld, c->batch, c->pos,
                                                 c->steps);
        break;
    case CALL_SYNC:
        rc = b->ops->synchronize(b);
        break;
    case CALL_PREPARE:
        rc = b->ops->prepare ? b->ops->prepare(b, c->batch) : 0;
        break;
    case CALL_STATS:
        rc = b->ops->outlier_stats ? b->ops->outlier_stats(b, c->stats[r])
                                   : ec_set_error("backend %s counts no outliers", b->ops->name);
        break;
    case CALL_DESTROY:
        ec_backend_destroy(b);
        s->ranks[r] = NULL;
        break;
    }
    c->rc[r] = rc;
    if (rc != 0) {
        snprintf(c->error[r], sizeof c->error[r], "%s", ec_last_error());
        /* The others may be waiting for this rank inside the group: let them go. */
        ec_tp_break(s->group, r);
    }
}

/* Runs the call on every rank at once. When ranks fail, the error is that of the rank that
 * failed first (the others may only have been released from a wait for it); the group is made
 * whole again for the next call. */
static int run_all(tp_state *s, tp_call *c)
{
    void *arg[2] = {c, s};
    ec_pool_run(s->pool, run_rank, arg, s->world);
    int first = ec_tp_broken_by(s->group);
    if (first < 0) return 0;
    ec_tp_reset(s->group);
    return ec_set_error("tensor-parallel rank %d (%s): %s", first,
                        s->idx[first] < 0 ? "cpu" : "cuda", c->error[first]);
}

static int ranks_disagree(const tp_state *s, const int *const *v, size_t n, const char *what)
{
    for (int r = 1; r < s->world; r++)
        if (memcmp(v[0], v[r], n * sizeof **v))
            return ec_set_error("tensor-parallel ranks 0 and %d computed different %s", r, what);
    return 0;
}

static int tp_forward(ec_backend *b, const int *tokens, int batch, int n, int pos, int *next,
                      float *logits)
{
    tp_state *s = state_of(b);
    if (batch < 1 || batch > s->max_batch)
        return ec_set_error("tensor-parallel backend: batch %d outside 1..%d", batch, s->max_batch);
    int *rank_next[EC_TP_MAX_WORLD];
    for (int r = 0; r < s->world; r++)
        rank_next[r] = s->next + (size_t)r * s->max_batch;
    tp_call c = {.kind = CALL_FORWARD, .tokens = tokens, .next = rank_next, .logits = logits,
                 .batch = batch, .n = n, .pos = pos};
    if (run_all(s, &c) || ranks_disagree(s, (const int *const *)rank_next, (size_t)batch, "tokens"))
        return -1;
    memcpy(next, rank_next[0], (size_t)batch * sizeof *next);
    return 0;
}

/* Rank 0 decodes into the caller's tokens, the others into copies, then all must match. */
static int tp_decode(ec_backend *b, int *tokens, int ld, int batch, int pos, int steps)
{
    tp_state *s = state_of(b);
    size_t n = (size_t)batch * (size_t)ld;
    if (batch < 1 || batch > s->max_batch || n > s->scratch_per_rank)
        return ec_set_error("tensor-parallel backend: decode of %d sequences x %d columns outside "
                            "the loaded %d x %zu", batch, ld, s->max_batch,
                            s->scratch_per_rank / (size_t)s->max_batch);
    int *rank_tokens[EC_TP_MAX_WORLD] = {tokens};
    for (int r = 1; r < s->world; r++) {
        rank_tokens[r] = s->scratch + (size_t)(r - 1) * s->scratch_per_rank;
        memcpy(rank_tokens[r], tokens, n * sizeof *tokens);
    }
    tp_call c = {.kind = CALL_DECODE, .rank_tokens = rank_tokens, .batch = batch, .pos = pos,
                 .ld = ld, .steps = steps};
    if (run_all(s, &c)) return -1;
    return ranks_disagree(s, (const int *const *)rank_tokens, n, "tokens");
}

static int tp_synchronize(ec_backend *b)
{
    tp_call c = {.kind = CALL_SYNC};
    return run_all(state_of(b), &c);
}

static int tp_prepare(ec_backend *b, int batch)
{
    tp_call c = {.kind = CALL_PREPARE, .batch = batch};
    return run_all(state_of(b), &c);
}

/* The inputs of q/k/v and gate/up are whole on every rank (rank 0's count is the model's); those
 * of o and down are split by columns, so their counts add up over the ranks. */
static int tp_outlier_stats(ec_backend *b, double *avg)
{
    tp_state *s = state_of(b);
    size_t n = (size_t)s->cfg.n_layers * EC_LINEAR_INPUTS;
    double *all = malloc((size_t)s->world * n * sizeof *all);
    if (!all) return ec_set_error("out of memory");
    double *per[EC_TP_MAX_WORLD];
    for (int r = 0; r < s->world; r++)
        per[r] = all + (size_t)r * n;
    tp_call c = {.kind = CALL_STATS, .stats = per};
    int rc = run_all(s, &c);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        int split = i % EC_LINEAR_INPUTS == EC_LINEAR_O || i % EC_LINEAR_INPUTS == EC_LINEAR_DOWN;
        avg[i] = per[0][i];
        for (int r = 1; split && r < s->world; r++)
            avg[i] += per[r][i];
    }
    free(all);
    return rc;
}

static void tp_destroy(ec_backend *b)
{
    tp_state *s = state_of(b);
    if (!s) return;
    /* All ranks at once: destroying an NCCL communicator is collective, so one rank's destroy
     * waits for the others'. */
    if (s->pool && s->group) {
        tp_call c = {.kind = CALL_DESTROY};
        run_all(s, &c);
    }
    for (int r = 0; r < s->world; r++) {
        ec_backend_destroy(s->ranks[r]);
        ec_model_close(s->shards[r]);
    }
    ec_pool_destroy(s->pool);
    ec_tp_group_destroy(s->group);
    free(s->scratch);
    free(s->next);
    free(s);
    b->impl = NULL;
}

static int tp_load(ec_backend *b, const ec_model *m, const ec_load_options *o)
{
    (void)b, (void)m, (void)o;
    return ec_set_error("tensor-parallel backend: loaded once, by ec_backend_open");
}

static const ec_backend_ops tp_ops = {
    .name = "tp",
    .load = tp_load,
    .forward = tp_forward,
    .decode = tp_decode,
    .synchronize = tp_synchronize,
    .destroy = tp_destroy,
    .outlier_stats = tp_outlier_stats,
    .prepare = tp_prepare,
};

/* CPU ranks share the machine's cores: without a thread count each gets its share of them. */
static int rank_threads(const ec_load_options *o, int world)
{
    int total = o->threads > 0 ? o->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    return total / world > 0 ? total / world : 1;
}

static int create_ranks(tp_state *s, const ec_model *m, const ec_load_options *o,
                        ec_load_options *opts)
{
    const ec_model_config *c = ec_model_config_of(m);
    s->cfg = *c;
    s->max_batch = o->max_batch > 0 ? o->max_batch : 1;
    int max_seq = o->max_seq > 0 ? o->max_seq : c->max_seq_len;
    s->scratch_per_rank = (size_t)s->max_batch * ((size_t)max_seq + 1);
    s->scratch = malloc((size_t)(s->world > 1 ? s->world - 1 : 1) * s->scratch_per_rank * sizeof(int));
    s->next = malloc((size_t)s->world * s->max_batch * sizeof(int));
    if (!s->scratch || !s->next) return ec_set_error("out of memory for %d ranks", s->world);
    if (ec_tp_group_create(&s->group, s->world) || ec_pool_create(&s->pool, s->world)) return -1;
    for (int r = 0; r < s->world; r++) {
        char name[16];
        if (s->idx[r] < 0) snprintf(name, sizeof name, "cpu");
        else snprintf(name, sizeof name, "cuda:%d", s->idx[r]);
        if (ec_model_shard(&s->shards[r], m, r, s->world) || ec_backend_create(&s->ranks[r], name))
            return -1;
        opts[r] = *o;
        opts[r].device = s->idx[r];
        opts[r].tp = s->world;
        opts[r].tp_group = s->group;
        opts[r].tp_rank = r;
        if (s->idx[r] < 0) opts[r].threads = rank_threads(o, s->world);
    }
    return 0;
}

int ec_tp_backend_open(ec_backend **out, const int *idx, int world, const ec_model *m,
                       const ec_load_options *o)
{
    *out = NULL;
    if (world < 1 || world > EC_TP_MAX_WORLD)
        return ec_set_error("tensor parallelism over %d devices: 1 to %d are supported", world,
                            EC_TP_MAX_WORLD);
    for (int r = 1; r < world; r++)
        if ((idx[r] < 0) != (idx[0] < 0))
            return ec_set_error("tensor parallelism mixes CPU and GPU ranks");
    if (ec_model_shardable(ec_model_config_of(m), world)) return -1;
    ec_backend *b = calloc(1, sizeof *b);
    tp_state *s = calloc(1, sizeof *s);
    if (!b || !s) {
        free(b);
        free(s);
        return ec_set_error("out of memory for the tensor-parallel backend");
    }
    s->world = world;
    memcpy(s->idx, idx, (size_t)world * sizeof *idx);
    b->ops = &tp_ops;
    b->impl = s;
    ec_load_options opts[EC_TP_MAX_WORLD];
    int rc = create_ranks(s, m, o, opts) ? -1 : 0;
    if (rc == 0) {
        tp_call c = {.kind = CALL_LOAD, .shards = (const ec_model *const *)s->shards, .opts = opts};
        rc = run_all(s, &c) ? -2 : 0;
    }
    if (rc != 0) {
        ec_backend_destroy(b);
        return rc;
    }
    *out = b;
    return 0;
}
