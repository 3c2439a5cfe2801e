/* roofline.c — the bytes a decode step cannot avoid reading, the numerator of every
 * "% of bandwidth roofline" (engine.h). */
#include "ecocompute/engine.h"

double ec_decode_step_bytes(const ec_model_config *c, ec_precision prec, int batch,
                            double context)
{
    double bytes = (double)ec_model_weight_bytes(c, prec);
    /* An untied embedding table is only indexed (batch rows), never streamed. */
    if (!c->tied_embeddings) bytes -= (double)ec_tensor_numel(c, EC_T_TOK_EMB) * 2.0;
    double kv_per_position = 2.0 * c->n_layers * c->n_kv_heads * c->head_dim * 2.0; /* K+V */
    return bytes + kv_per_position * context * batch;
}
