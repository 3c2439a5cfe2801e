/* tp_backend.h — the tensor-parallel backend: one backend per device, each holding its shard of
 * the model, run in step by one thread per rank. */
#ifndef EC_ENGINE_TP_BACKEND_H
#define EC_ENGINE_TP_BACKEND_H

#include "ecocompute/engine.h"

/* Opens and loads `world` ranks on the devices idx [world] (CUDA indices, -1 for the CPU) with
 * shard r of `m` on idx[r]. Returns 0, -1 for a group that cannot be formed (the model does not
 * split, too many ranks) or -2 when a rank failed to load (ec_backend_open's convention). */
int ec_tp_backend_open(ec_backend **out, const int *idx, int world, const ec_model *m,
                       const ec_load_options *o);

#endif
