/* decode_split.c — the decode attention's policies as plain functions of what the device holds,
 * so that they can be checked without a GPU: positions per flash-decoding split, whether a row's
 * splits meet in a thread block cluster, and up to which position a step prefetches its cached
 * rows into L2. The CUDA side (kernels_attention.cu) only asks the device for its wave, its
 * largest cluster and its L2 size. */
#include <limits.h>

#include "kernels.h"

static int round_up(int n, int to) { return (n + to - 1) / to * to; }

int ec_decode_split_len_for(int max_seq, int rows, int wave, int cluster_max)
{
    int splits = rows > 0 && wave > 0 ? wave / rows : EC_DECODE_MAX_SPLITS;
    splits = splits < 1 ? 1 : splits > EC_DECODE_MAX_SPLITS ? EC_DECODE_MAX_SPLITS : splits;
    int len = round_up((max_seq + splits - 1) / splits, EC_DECODE_MIN_SPLIT);
    len = len > EC_DECODE_MIN_SPLIT ? len : EC_DECODE_MIN_SPLIT;
    if (cluster_max > 1 && (max_seq + len - 1) / len > cluster_max) {
        int clustered = round_up((max_seq + cluster_max - 1) / cluster_max, EC_DECODE_MIN_SPLIT);
        if (clustered <= EC_DECODE_CLUSTER_SPLIT) len = clustered;
    }
    return len;
}

int ec_decode_clustered(int n_splits, int cluster_max)
{
    return n_splits >= 2 && n_splits <= cluster_max;
}

int ec_decode_prefetch_below(long long l2_bytes, int batch, int n_kv_heads, int head_dim,
                             int elem_bytes)
{
    long long per_position = 2LL * batch * n_kv_heads * head_dim * elem_bytes; /* K and V rows */
    if (l2_bytes <= 0 || per_position <= 0) return -1;
    long long below = l2_bytes / EC_DECODE_PREFETCH_L2_PARTS / per_position;
    return below < INT_MAX ? (int)below : INT_MAX;
}
