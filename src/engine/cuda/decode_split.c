/* decode_split.c — the decode attention's policies as plain functions of what the device holds,
 * so that they can be checked without a GPU: positions per flash-decoding split, whether a row's
 * splits meet in a thread block cluster, and up to which position a step prefetches its cached
 * rows into L2. The CUDA side (kernels_attention.cu) only asks the device for its wave, its
 * largest cluster and its L2 size. */
#include <limits.h>

#include "kernels.h"

static int round_up(int n, int to) { return (n + to - 1) / to * to; }

/* The wave's split: splits of all rows fill about one wave of blocks. */
static int wave_split_len(int max_seq, int rows, int wave)
{
    int splits = rows > 0 && wave > 0 ? wave / rows : EC_DECODE_MAX_SPLITS;
    splits = splits < 1 ? 1 : splits > EC_DECODE_MAX_SPLITS ? EC_DECODE_MAX_SPLITS : splits;
    int len = round_up((max_seq + splits - 1) / splits, EC_DECODE_MIN_SPLIT);
    return len > EC_DECODE_MIN_SPLIT ? len : EC_DECODE_MIN_SPLIT;
}

/* The clustered split, or 0 where the row keeps the wave's. */
static int cluster_split_len(int max_seq, int rows, int wave, int cluster_max)
{
    if (cluster_max < 2) return 0;
    int len = wave_split_len(max_seq, rows, wave);
    if ((max_seq + len - 1) / len <= cluster_max) return 0;
    len = round_up((max_seq + cluster_max - 1) / cluster_max, EC_DECODE_MIN_SPLIT);
    return len <= EC_DECODE_CLUSTER_SPLIT ? len : 0;
}

int ec_decode_split_len_for(int max_seq, int rows, int wave, int cluster_max)
{
    int len = cluster_split_len(max_seq, rows, wave, cluster_max);
    return len ? len : wave_split_len(max_seq, rows, wave);
}

int ec_decode_clustered_for(int max_seq, int rows, int wave, int cluster_max)
{
    return cluster_split_len(max_seq, rows, wave, cluster_max) != 0;
}

int ec_decode_prefetch_below(long long l2_bytes, int batch, int n_kv_heads, int head_dim,
                             int elem_bytes)
{
    long long per_position = 2LL * batch * n_kv_heads * head_dim * elem_bytes; /* K and V rows */
    if (l2_bytes <= 0 || per_position <= 0) return -1;
    long long below = l2_bytes / EC_DECODE_PREFETCH_L2_PARTS / per_position;
    return below < INT_MAX ? (int)below : INT_MAX;
}
