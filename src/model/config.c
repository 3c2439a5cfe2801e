/* config.c — tensor kinds of the Llama-family decoder: names, shapes, parameter and byte counts,
 * and the sanity check every config passes before any weight is read. */
#include "ecocompute/common.h"
#include "model_internal.h"

#include <limits.h>

static const char *const kind_names[EC_T_COUNT] = {
    "tok_emb", "attn_norm", "wq", "wk", "wv", "bq", "bk", "bv", "wo",
    "ffn_norm", "w_gate", "w_up", "w_down", "final_norm", "lm_head",
};

const char *ec_tensor_kind_name(ec_tensor_kind k)
{
    return (unsigned)k < EC_T_COUNT ? kind_names[k] : "?";
}

void ec_tensor_shape(const ec_model_config *c, ec_tensor_kind k, int *rows, int *cols)
{
    int q = c->n_heads * c->head_dim, kv = c->n_kv_heads * c->head_dim;
    int r = 1, n = 0;
    switch (k) {
    case EC_T_TOK_EMB: case EC_T_LM_HEAD: r = c->vocab_size; n = c->dim; break;
    case EC_T_ATTN_NORM: case EC_T_FFN_NORM: case EC_T_FINAL_NORM: n = c->dim; break;
    case EC_T_WQ: r = q; n = c->dim; break;
    case EC_T_WK: case EC_T_WV: r = kv; n = c->dim; break;
    case EC_T_BQ: n = q; break;
    case EC_T_BK: case EC_T_BV: n = kv; break;
    case EC_T_WO: r = c->dim; n = q; break;
    case EC_T_W_GATE: case EC_T_W_UP: r = c->hidden_dim; n = c->dim; break;
    case EC_T_W_DOWN: r = c->dim; n = c->hidden_dim; break;
    case EC_T_COUNT: r = 0; break;
    }
    *rows = r;
    *cols = n;
}

int ec_tensor_is_linear(ec_tensor_kind k)
{
    return k == EC_T_WQ || k == EC_T_WK || k == EC_T_WV || k == EC_T_WO || k == EC_T_W_GATE ||
           k == EC_T_W_UP || k == EC_T_W_DOWN;
}

int ec_tensor_is_per_layer(ec_tensor_kind k)
{
    return k != EC_T_TOK_EMB && k != EC_T_FINAL_NORM && k != EC_T_LM_HEAD && k < EC_T_COUNT;
}

uint64_t ec_tensor_numel(const ec_model_config *c, ec_tensor_kind k)
{
    int r, n;
    ec_tensor_shape(c, k, &r, &n);
    return (uint64_t)r * (uint64_t)n;
}

/* Whether the model stores tensor k at all: biases only with qkv_bias, the head only untied. */
static int tensor_present(const ec_model_config *c, ec_tensor_kind k)
{
    if (k == EC_T_BQ || k == EC_T_BK || k == EC_T_BV) return c->qkv_bias;
    if (k == EC_T_LM_HEAD) return !c->tied_embeddings;
    return 1;
}

/* Sums bytes_of(kind) over every stored tensor; per-layer kinds count n_layers times. */
static uint64_t sum_tensors(const ec_model_config *c, ec_precision prec, int weigh_bytes)
{
    uint64_t total = 0;
    for (int k = 0; k < EC_T_COUNT; k++) {
        if (!tensor_present(c, (ec_tensor_kind)k)) continue;
        int rows, cols;
        ec_tensor_shape(c, (ec_tensor_kind)k, &rows, &cols);
        uint64_t v = (uint64_t)rows * (uint64_t)cols;
        if (weigh_bytes)
            v = ec_tensor_is_linear((ec_tensor_kind)k)
                    ? (uint64_t)ec_precision_weight_bytes(prec, rows, cols)
                    : 2 * v;
        total += ec_tensor_is_per_layer((ec_tensor_kind)k) ? v * (uint64_t)c->n_layers : v;
    }
    return total;
}

uint64_t ec_model_param_count(const ec_model_config *c)
{
    return sum_tensors(c, EC_PREC_F32, 0);
}

uint64_t ec_model_weight_bytes(const ec_model_config *c, ec_precision prec)
{
    return sum_tensors(c, prec, 1);
}

int ec_model_config_check(const ec_model_config *c, const char *what)
{
    if (c->dim <= 0 || c->hidden_dim <= 0 || c->n_layers <= 0 || c->n_heads <= 0 ||
        c->n_kv_heads <= 0 || c->head_dim <= 0 || c->vocab_size <= 0 || c->max_seq_len <= 0)
        return ec_set_error("%s: config has a non-positive size (dim %d, hidden_dim %d, layers %d, "
                            "heads %d, kv_heads %d, head_dim %d, vocab %d, max_seq_len %d)",
                            what, c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads,
                            c->head_dim, c->vocab_size, c->max_seq_len);
    if (c->n_heads % c->n_kv_heads)
        return ec_set_error("%s: n_heads %d is not a multiple of n_kv_heads %d", what,
                            c->n_heads, c->n_kv_heads);
    if (c->head_dim % 2)
        return ec_set_error("%s: head_dim %d is odd; rotary embedding needs pairs", what,
                            c->head_dim);
    /* Every tensor must be indexable with int rows/cols and size_t bytes on the host. */
    if ((int64_t)c->n_heads * c->head_dim > INT_MAX ||
        (uint64_t)c->vocab_size * (uint64_t)c->dim > (uint64_t)INT_MAX * 64 ||
        (uint64_t)c->hidden_dim * (uint64_t)c->dim > (uint64_t)INT_MAX * 64)
        return ec_set_error("%s: config sizes are too large", what);
    if (!(c->norm_eps > 0) || !(c->rope_theta > 0))
        return ec_set_error("%s: norm_eps and rope_theta must be positive", what);
    return 0;
}
