/* decode_split.c — the decode attention's split policy (positions per flash-decoding split) as a
 * plain function of what the device holds, so that it can be checked without a GPU; the CUDA
 * side (ec_cuda_decode_split_len, kernels_attention.cu) only asks the device for its wave. */
#include "kernels.h"

int ec_decode_split_len_for(int max_seq, int rows, int wave)
{
    int splits = rows > 0 && wave > 0 ? wave / rows : EC_DECODE_MAX_SPLITS;
    splits = splits < 1 ? 1 : splits > EC_DECODE_MAX_SPLITS ? EC_DECODE_MAX_SPLITS : splits;
    int len = (max_seq + splits - 1) / splits;
    len = (len + EC_DECODE_MIN_SPLIT - 1) / EC_DECODE_MIN_SPLIT * EC_DECODE_MIN_SPLIT;
    return len > EC_DECODE_MIN_SPLIT ? len : EC_DECODE_MIN_SPLIT;
}
