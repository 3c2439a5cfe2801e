/* ecocompute/tokenizer.h — text to token ids and back, whatever the tokenizer's file format:
 * Hugging Face `tokenizer.json` (byte-level BPE as in GPT-2, Llama-3, Qwen2; SentencePiece-style
 * BPE with byte fallback as in Llama-2, Mistral, Yi), SentencePiece `tokenizer.model` (when built
 * with libsentencepiece) and llama2.c `tokenizer.bin`; plus the chat templates of the common
 * instruction-tuned families, as known formats.
 *
 * Encoding and decoding follow the reference libraries (Hugging Face `tokenizers`,
 * `sentencepiece`, llama2.c's run.c) token for token. An open tokenizer is read-only: several
 * threads may encode and decode with it at once. */
#ifndef ECOCOMPUTE_TOKENIZER_H
#define ECOCOMPUTE_TOKENIZER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    EC_TOKENIZER_HF_JSON = 0,      /* tokenizer.json (optionally gzip-compressed, .json.gz) */
    EC_TOKENIZER_SENTENCEPIECE,    /* tokenizer.model */
    EC_TOKENIZER_LLAMA2C,          /* llama2.c tokenizer.bin / tok512.bin */
} ec_tokenizer_format;

typedef struct ec_tokenizer ec_tokenizer;

/* Opens a tokenizer from a file, or from a model directory, where it takes the first of
 * tokenizer.json, tokenizer.model, tokenizer.bin. The format comes from the file name: *.json
 * and *.json.gz are tokenizer.json, *.model SentencePiece, anything else llama2.c. llama2.c
 * files do not record their vocabulary size: model_vocab gives it (0 = every entry in the
 * file). For the other formats model_vocab > 0 checks that every token id fits the model.
 * Returns 0, or -1 with ec_last_error() naming the file, the field and what is wrong. */
int ec_tokenizer_open(ec_tokenizer **out, const char *path, int model_vocab);
void ec_tokenizer_free(ec_tokenizer *t);

ec_tokenizer_format ec_tokenizer_format_of(const ec_tokenizer *t);
const char *ec_tokenizer_format_name(ec_tokenizer_format f); /* "tokenizer.json", ... */
const char *ec_tokenizer_path(const ec_tokenizer *t); /* the file it was read from */
int ec_tokenizer_vocab_size(const ec_tokenizer *t);   /* largest id + 1 */

/* Encodes UTF-8 text into *ids (malloc'd, caller frees); returns the count or -1. Special
 * tokens written in the text ("<|im_start|>", "<s>") are always recognised as such;
 * add_special adds what the tokenizer adds around a text (BOS for Llama-2, none for Qwen2). */
int ec_tokenizer_encode(const ec_tokenizer *t, const char *text, int add_special, int **ids);
/* The text of ids[0..n) as one malloc'd UTF-8 string (bytes that do not form UTF-8 become
 * U+FFFD as in the reference libraries); skip_special leaves special tokens out. NULL and
 * ec_last_error() on an id outside the vocabulary or out of memory. */
char *ec_tokenizer_decode(const ec_tokenizer *t, const int *ids, int n, int skip_special);
/* The vocabulary entry of id as stored ("Ġworld", "▁the", "<0x0A>"); NULL when id is unused. */
const char *ec_tokenizer_piece(const ec_tokenizer *t, int id);
/* The id of a vocabulary entry or special token written exactly as stored; -1 when absent. */
int ec_tokenizer_find(const ec_tokenizer *t, const char *piece);
int ec_tokenizer_is_special(const ec_tokenizer *t, int id);
/* Beginning- and end-of-sequence ids (tokenizer_config.json's bos_token / eos_token next to a
 * tokenizer.json, the SentencePiece or llama2.c ids otherwise); -1 when the tokenizer has none. */
int ec_tokenizer_bos(const ec_tokenizer *t);
int ec_tokenizer_eos(const ec_tokenizer *t);

/* ---- Chat templates: the formats of the common families, not a Jinja engine ---- */
typedef enum {
    EC_CHAT_NONE = 0,
    EC_CHAT_LLAMA2,  /* <s>[INST] <<SYS>>\n...\n<</SYS>>\n\nUSER [/INST] */
    EC_CHAT_LLAMA3,  /* <|start_header_id|>user<|end_header_id|>\n\nUSER<|eot_id|>... */
    EC_CHAT_MISTRAL, /* <s>[INST] USER [/INST] */
    EC_CHAT_CHATML,  /* Qwen: <|im_start|>user\nUSER<|im_end|>\n<|im_start|>assistant\n */
    EC_CHAT_PHI3,    /* <|user|>\nUSER<|end|>\n<|assistant|>\n */
} ec_chat_format;

typedef struct {
    ec_chat_format format;
    char default_system[128]; /* the system prompt the template adds when none is given */
    int bos_first;            /* the template starts with the BOS token */
} ec_chat_template;

const char *ec_chat_format_name(ec_chat_format f); /* "llama-2", "llama-3", ... */
/* Recognises the chat template of a model directory: tokenizer_config.json's `chat_template`
 * string, else config.json's model_type (llama: Llama-3 when the tokenizer has
 * <|start_header_id|>, else Llama-2). Returns 0, or -1 with ec_last_error() saying which file
 * holds what unknown template. */
int ec_chat_template_detect(const char *model_dir, const ec_tokenizer *t, ec_chat_template *out);
/* The prompt text of one user turn (after an optional system prompt, NULL = the template's
 * default) ready for the assistant's answer, malloc'd; encode it with add_special = 0. */
char *ec_chat_render(const ec_chat_template *tpl, const ec_tokenizer *t, const char *system,
                     const char *user);
/* The token that ends the assistant's turn (<|eot_id|>, <|im_end|>, <|end|>, EOS); -1 if none. */
int ec_chat_stop_token(const ec_chat_template *tpl, const ec_tokenizer *t);

#ifdef __cplusplus
}
#endif
#endif
