/* fuzz_hf_config.c — libFuzzer target: the input is a Hugging Face config.json, parsed from
 * memory. Valid or not, parsing must never crash, and an accepted config must pass the decoder's
 * own sanity check and describe a rope scaling the engine computes. */
#include "model_internal.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    /* A private copy, exactly sized, so ASan flags any read past the end. */
    unsigned char *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    ec_model_config c;
    if (ec_hf_config_parse(buf, size, "config.json", &c) == 0) {
        if (ec_model_config_check(&c, "fuzz") != 0) abort();
        if (c.rope_scaling != EC_ROPE_SCALING_NONE && !(c.rope_scaling_factor > 0)) abort();
        if (c.rope_scaling == EC_ROPE_SCALING_LLAMA3 &&
            !(c.rope_high_freq_factor > c.rope_low_freq_factor && c.rope_original_max_pos > 0))
            abort();
    }
    free(buf);
    return 0;
}
