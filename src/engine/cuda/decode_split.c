/* decode_split.c — the decode attention's policies as plain functions of what the device holds,
 * so that they can be checked without a GPU: positions per flash-decoding split, and up to which
 * position a step prefetches its cached rows into L2. The CUDA side (kernels_attention.cu) only
 * asks the device for its wave and its L2 size. */
#include <limits.h>

#include "kernels.h"

int ec_decode_split_len_for(int max_seq, int rows, int wave)
{
    int splits = rows > 0 && wave > 0 ? wave / rows : EC_DECODE_MAX_SPLITS;
    splits = splits < 1 ? 1 : splits > EC_DECODE_MAX_SPLITS ? EC_DECODE_MAX_SPLITS : splits;
    int len = (max_seq + splits - 1) / splits;
    len = (len + EC_DECODE_MIN_SPLIT - 1) / EC_DECODE_MIN_SPLIT * EC_DECODE_MIN_SPLIT;
    return len > EC_DECODE_MIN_SPLIT ? len : EC_DECODE_MIN_SPLIT;
}

int ec_decode_prefetch_below(long long l2_bytes, int batch, int n_kv_heads, int head_dim,
                             int elem_bytes)
{
    long long per_position = 2LL * batch * n_kv_heads * head_dim * elem_bytes; /* K and V rows */
    if (l2_bytes <= 0 || per_position <= 0) return -1;
    long long below = l2_bytes / EC_DECODE_PREFETCH_L2_PARTS / per_position;
    return below < INT_MAX ? (int)below : INT_MAX;
}
