/* gemv_split.c — the decode GEMV's policy of warps per row pair as a plain function of the
 * device's SM count, so that it can be checked without a GPU; the CUDA side (ec_gemv_split,
 * kernels_common.cuh) only asks the device for its SMs. */
#include "kernels.h"

int ec_gemv_split_for(int pairs, int rounds, int sms)
{
    int want = EC_GEMV_WARPS_PER_SM * sms, ks = 1;
    while (ks < EC_GEMV_MAX_SPLIT && pairs * ks < want && rounds >= 4 * ks) ks *= 2;
    return ks;
}
