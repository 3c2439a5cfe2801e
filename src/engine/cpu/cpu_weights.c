/* cpu_weights.c — loads a model's weights into the CPU backend's formats, tensor by tensor.
 *
 * Policy (docs/engine.md): the seven linear layers of each block are stored in the requested
 * precision; the token embedding and the output head stay 16-bit (bf16 for bf16, f32 for f32,
 * fp16 otherwise) unless quantize_head; norms and biases stay f32. Each tensor passes through
 * one float32 scratch buffer the size of the largest tensor, so the model never exists in
 * float32 as a whole (except, by definition, at f32). */
#include "engine/cpu/cpu_backend.h"

#include <stdlib.h>
#include <string.h>

static ec_precision embedding_format(ec_precision p)
{
    if (p == EC_PREC_F32) return EC_PREC_F32;
    if (p == EC_PREC_BF16) return EC_PREC_BF16;
    return EC_PREC_FP16;
}

static size_t largest_tensor(const ec_model_config *c)
{
    size_t most = 0;
    for (int k = 0; k < EC_T_COUNT; k++) {
        int rows, cols;
        ec_tensor_shape(c, (ec_tensor_kind)k, &rows, &cols);
        if ((size_t)rows * (size_t)cols > most) most = (size_t)rows * (size_t)cols;
    }
    return most;
}

/* Reads (kind, layer) through scratch and quantizes it into out. */
static int load_matrix(ec_qmatrix *out, const ec_model *m, ec_tensor_kind kind, int layer,
                       ec_precision prec, const ec_load_options *o, float *scratch)
{
    int rows, cols;
    ec_tensor_shape(ec_model_config_of(m), kind, &rows, &cols);
    if (ec_model_read_tensor(m, kind, layer, scratch) != 0) return -1;
    if (ec_qmatrix_quantize(out, prec, scratch, rows, cols) != 0)
        return ec_error_context("%s (layer %d)", ec_tensor_kind_name(kind), layer);
    if (ec_qformat_of(prec)->outliers) out->threshold = o->int8_threshold;
    return 0;
}

/* Reads a 1-D tensor (norm weight, bias) into a new float32 array. */
static int load_vector(float **out, const ec_model *m, ec_tensor_kind kind, int layer)
{
    int rows, cols;
    ec_tensor_shape(ec_model_config_of(m), kind, &rows, &cols);
    *out = malloc((size_t)rows * (size_t)cols * sizeof **out);
    if (!*out) return ec_set_error("%s: out of memory", ec_tensor_kind_name(kind));
    return ec_model_read_tensor(m, kind, layer, *out);
}

/* The seven quantized projections of a block, in a fixed order. */
enum { N_LINEAR = 7 };
static const ec_tensor_kind linear_kinds[N_LINEAR] = {EC_T_WQ,     EC_T_WK,   EC_T_WV,    EC_T_WO,
                                                      EC_T_W_GATE, EC_T_W_UP, EC_T_W_DOWN};
static void layer_linears(cpu_layer *L, ec_qmatrix *out[N_LINEAR])
{
    ec_qmatrix *all[N_LINEAR] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
    memcpy(out, all, sizeof all);
}

static int load_layer(cpu_layer *L, const ec_model *m, int l, const ec_load_options *o,
                      float *scratch)
{
    ec_qmatrix *mats[N_LINEAR];
    layer_linears(L, mats);
    for (int i = 0; i < N_LINEAR; i++)
        if (load_matrix(mats[i], m, linear_kinds[i], l, o->precision, o, scratch) != 0) return -1;
    if (load_vector(&L->attn_norm, m, EC_T_ATTN_NORM, l) != 0 ||
        load_vector(&L->ffn_norm, m, EC_T_FFN_NORM, l) != 0)
        return -1;
    if (ec_model_config_of(m)->qkv_bias &&
        (load_vector(&L->bq, m, EC_T_BQ, l) != 0 || load_vector(&L->bk, m, EC_T_BK, l) != 0 ||
         load_vector(&L->bv, m, EC_T_BV, l) != 0))
        return -1;
    return 0;
}

int cpu_weights_load(cpu_weights *w, const ec_model *m, const ec_load_options *o)
{
    const ec_model_config *c = ec_model_config_of(m);
    memset(w, 0, sizeof *w);
    float *scratch = malloc(largest_tensor(c) * sizeof *scratch);
    w->layers = calloc((size_t)c->n_layers, sizeof *w->layers);
    if (!scratch || !w->layers) {
        free(scratch);
        return ec_set_error("loading %s: out of memory", c->name);
    }
    w->n_layers = c->n_layers;
    ec_precision emb = embedding_format(o->precision);
    ec_precision head = o->quantize_head ? o->precision : emb;
    w->head_is_emb = c->tied_embeddings && head == emb;
    int rc = load_matrix(&w->tok_emb, m, EC_T_TOK_EMB, 0, emb, o, scratch);
    if (rc == 0 && !w->head_is_emb)
        rc = load_matrix(&w->lm_head, m, EC_T_LM_HEAD, 0, head, o, scratch);
    if (rc == 0) rc = load_vector(&w->final_norm, m, EC_T_FINAL_NORM, 0);
    for (int l = 0; rc == 0 && l < c->n_layers; l++)
        rc = load_layer(&w->layers[l], m, l, o, scratch);
    free(scratch);
    if (rc != 0) cpu_weights_free(w);
    return rc;
}

const ec_qmatrix *cpu_weights_head(const cpu_weights *w)
{
    return w->head_is_emb ? &w->tok_emb : &w->lm_head;
}

void cpu_weights_free(cpu_weights *w)
{
    for (int l = 0; l < w->n_layers && w->layers; l++) {
        cpu_layer *L = &w->layers[l];
        ec_qmatrix *mats[N_LINEAR];
        layer_linears(L, mats);
        for (int i = 0; i < N_LINEAR; i++)
            ec_qmatrix_free(mats[i]);
        free(L->attn_norm);
        free(L->ffn_norm);
        free(L->bq);
        free(L->bk);
        free(L->bv);
    }
    free(w->layers);
    ec_qmatrix_free(&w->tok_emb);
    ec_qmatrix_free(&w->lm_head);
    free(w->final_norm);
    memset(w, 0, sizeof *w);
}
