/* test_tokenizer_json.c — tokenizer.json and tokenizer.model against golden ids and text from the
 * reference libraries (tests/data/tokenizers/goldens.json: Hugging Face tokenizers and
 * sentencepiece, for Qwen2.5, a SentencePiece-style BPE, GPT-2 and a tiny SentencePiece model),
 * chat templates, and malformed files (one message naming the file and the field). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ecocompute/common.h"
#include "ecocompute/tokenizer.h"
#include "model/tokenizer_internal.h"

static const char data_dir[] = EC_TOKENIZER_DATA;

/* A data file's text (the library's own reader). */
static char *read_all(const char *path)
{
    size_t len;
    char *text = ec_read_whole_file(path, &len);
    if (!text) fail_msg("%s", ec_last_error());
    return text;
}

static ec_tokenizer *open_in_data(const char *rel)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", data_dir, rel);
    ec_tokenizer *t = NULL;
    if (ec_tokenizer_open(&t, path, 0) != 0) {
        if (strstr(ec_last_error(), "need libsentencepiece")) return NULL; /* built without it */
        fail_msg("%s", ec_last_error());
    }
    return t;
}

static int ids_equal(const cJSON *want, const int *got, int n)
{
    if (cJSON_GetArraySize(want) != n) return 0;
    for (int i = 0; i < n; i++)
        if ((int)cJSON_GetArrayItem(want, i)->valuedouble != got[i]) return 0;
    return 1;
}

static int *ids_of(const cJSON *arr, int *n)
{
    *n = cJSON_GetArraySize(arr);
    int *ids = malloc(((size_t)*n + 1) * sizeof *ids);
    for (int i = 0; i < *n; i++) ids[i] = (int)cJSON_GetArrayItem(arr, i)->valuedouble;
    return ids;
}

static void write_json(const char *json, char *path, size_t cap);
static void remove_json(const char *path);

/* A variant of a shipped file (variants.json: steps replaced, added-token flags set), written
 * as a temporary tokenizer.json and opened; its path in path. */
static ec_tokenizer *open_variant(const cJSON *variants, const char *name, const char *base_rel,
                                  char *path, size_t cap)
{
    char base[1024];
    size_t len;
    snprintf(base, sizeof base, "%s/%s", data_dir, base_rel);
    char *text = ec_read_whole_file(base, &len);
    assert_non_null(text);
    cJSON *root = cJSON_ParseWithLength(text, len), *e;
    free(text);
    const cJSON *v = cJSON_GetObjectItem(variants, name);
    assert_non_null(root);
    assert_non_null(v);
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(v, "replace"))
    {
        cJSON_ReplaceItemInObject(root, e->string, cJSON_Duplicate(e, 1));
    }
    const cJSON *flags = cJSON_GetObjectItem(v, "added_flags"), *f;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(root, "added_tokens"))
    {
        const cJSON *mine = cJSON_GetObjectItem(flags, cJSON_GetObjectItem(e, "content")->valuestring);
        cJSON_ArrayForEach(f, mine)
        {
            cJSON_ReplaceItemInObject(e, f->string, cJSON_Duplicate(f, 1));
        }
    }
    char *json = cJSON_PrintUnformatted(root);
    write_json(json, path, cap);
    free(json);
    cJSON_Delete(root);
    ec_tokenizer *t;
    if (ec_tokenizer_open(&t, path, 0) != 0) fail_msg("%s", ec_last_error());
    return t;
}

/* Every case of one tokenizer: ids with and without special tokens, pieces, decoded text. */
static int check_cases(const char *name, const ec_tokenizer *t, const cJSON *cases)
{
    int failures = 0, checked = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cases)
    {
        const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
        for (int special = 0; special < 2; special++) {
            int *ids, n = ec_tokenizer_encode(t, text, special, &ids);
            const cJSON *want = cJSON_GetObjectItem(c, special ? "ids_special" : "ids");
            checked++;
            if (n < 0 || !ids_equal(want, ids, n)) {
                char *w = cJSON_PrintUnformatted(want);
                print_error("%s: encode%s(\"%.50s\") differs: want %s (got %d ids)\n", name,
                            special ? " with special tokens" : "", text, w, n);
                free(w);
                failures++;
            }
            const cJSON *tokens = cJSON_GetObjectItem(c, "tokens");
            /* The reference names an added token that took whitespace with lstrip/rstrip by the
             * text it covered: the piece stands inside it. */
            for (int i = 0; !special && tokens && n >= 0 && i < n && i < cJSON_GetArraySize(tokens); i++) {
                const char *piece = ec_tokenizer_piece(t, ids[i]);
                const char *want_piece = cJSON_GetArrayItem(tokens, i)->valuestring;
                if (strcmp(piece, want_piece) && !(ec_tokenizer_is_special(t, ids[i]) && strstr(want_piece, piece))) {
                    print_error("%s: piece of id %d differs\n", name, ids[i]);
                    failures++;
                }
            }
            free(ids);
        }
        for (int special = 0; special < 2; special++) {
            const cJSON *want = cJSON_GetObjectItem(c, special ? "decoded_special" : "decoded");
            if (!want) continue;
            int n, *ids = ids_of(cJSON_GetObjectItem(c, special ? "ids_special" : "ids"), &n);
            char *text_back = ec_tokenizer_decode(t, ids, n, !special);
            checked++;
            if (!text_back || strcmp(text_back, want->valuestring)) {
                print_error("%s: decode of \"%.50s\" differs: want \"%s\", got \"%s\"\n", name,
                            text, want->valuestring, text_back ? text_back : ec_last_error());
                failures++;
            }
            free(text_back);
            free(ids);
        }
    }
    print_message("%s: %d checks, %d differ\n", name, checked, failures);
    return failures;
}

static void test_goldens(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/goldens.json", data_dir);
    char *text = read_all(path);
    cJSON *root = cJSON_Parse(text);
    snprintf(path, sizeof path, "%s/variants.json", data_dir);
    char *variants_text = read_all(path);
    cJSON *variants = cJSON_Parse(variants_text);
    assert_non_null(root);
    assert_non_null(variants);
    const cJSON *tok;
    int failures = 0, tokenizers = 0;
    cJSON_ArrayForEach(tok, cJSON_GetObjectItem(root, "tokenizers"))
    {
        const char *rel = cJSON_GetObjectItem(tok, "path")->valuestring;
        const cJSON *variant = cJSON_GetObjectItem(tok, "variant");
        char tmp[256] = "";
        ec_tokenizer *t = variant ? open_variant(variants, variant->valuestring, rel, tmp, sizeof tmp)
                                  : open_in_data(rel);
        if (!t) {
            print_message("%s: skipped (built without libsentencepiece)\n", tok->string);
            continue;
        }
        failures += check_cases(tok->string, t, cJSON_GetObjectItem(tok, "cases"));
        tokenizers++;
        ec_tokenizer_free(t);
        if (tmp[0]) remove_json(tmp);
    }
    assert_true(tokenizers >= 6);
    assert_int_equal(failures, 0);
    cJSON_Delete(variants);
    cJSON_Delete(root);
    free(variants_text);
    free(text);
}

static void test_properties(void **state)
{
    (void)state;
    ec_tokenizer *qwen = open_in_data("qwen2.5"), *sp = open_in_data("lenml-llama2");
    assert_int_equal(ec_tokenizer_format_of(qwen), EC_TOKENIZER_HF_JSON);
    assert_int_equal(ec_tokenizer_vocab_size(qwen), 151665); /* 151643 + 22 added */
    assert_int_equal(ec_tokenizer_bos(qwen), -1);            /* Qwen has no BOS */
    assert_int_equal(ec_tokenizer_eos(qwen), ec_tokenizer_find(qwen, "<|im_end|>"));
    assert_true(ec_tokenizer_is_special(qwen, 151643));
    assert_false(ec_tokenizer_is_special(qwen, 151664)); /* <|file_sep|>: added, not special */
    assert_null(ec_tokenizer_piece(qwen, 151665));
    assert_int_equal(ec_tokenizer_bos(sp), 1);
    assert_int_equal(ec_tokenizer_eos(sp), 2);
    /* Model vocabularies smaller than the tokenizer's are refused: a different model's tokenizer. */
    ec_tokenizer *t = NULL;
    char path[1024];
    snprintf(path, sizeof path, "%s/qwen2.5", data_dir);
    assert_int_equal(ec_tokenizer_open(&t, path, 32000), -1);
    assert_non_null(strstr(ec_last_error(), "vocab_size is 32000"));
    assert_int_equal(ec_tokenizer_open(&t, path, 151936), 0); /* Qwen2.5's padded embedding */
    ec_tokenizer_free(t);
    ec_tokenizer_free(qwen);
    ec_tokenizer_free(sp);
}

/* dir/name with text (nothing when text is NULL). */
static void put_file(const char *dir, const char *name, const char *text)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = text ? fopen(path, "w") : NULL;
    if (!text) return;
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A model directory holding only a tokenizer_config.json (and optionally a config.json). */
static void write_dir(char *dir, const char *config, const char *model_config)
{
    strcpy(dir, "/tmp/ec_chat_XXXXXX");
    assert_non_null(mkdtemp(dir));
    put_file(dir, "tokenizer_config.json", config);
    put_file(dir, "config.json", model_config);
}

static void remove_dir(const char *dir)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    rmdir(dir);
}

static void test_chat_templates(void **state)
{
    (void)state;
    ec_tokenizer *qwen = open_in_data("qwen2.5"), *sp = open_in_data("lenml-llama2");
    char qwen_dir[1024];
    snprintf(qwen_dir, sizeof qwen_dir, "%s/qwen2.5", data_dir);
    ec_chat_template tpl;
    assert_int_equal(ec_chat_template_detect(qwen_dir, qwen, &tpl), 0);
    assert_int_equal(tpl.format, EC_CHAT_CHATML);
    char *text = ec_chat_render(&tpl, qwen, NULL, "Why is the sky blue?");
    /* What transformers' apply_chat_template prints for Qwen2.5 with one user message. */
    assert_string_equal(text, "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are "
                              "a helpful assistant.<|im_end|>\n<|im_start|>user\nWhy is the sky "
                              "blue?<|im_end|>\n<|im_start|>assistant\n");
    int *ids, n = ec_tokenizer_encode(qwen, text, 0, &ids);
    assert_int_equal(ids[0], ec_tokenizer_find(qwen, "<|im_start|>"));
    assert_int_equal(ids[n - 1], 198); /* "\n" after "assistant" */
    assert_int_equal(ec_chat_stop_token(&tpl, qwen), ec_tokenizer_find(qwen, "<|im_end|>"));
    free(ids);
    free(text);

    char dir[64];
    write_dir(dir, "{\"chat_template\": \"{{ bos_token }}{% for m in messages %}[INST] {{ m.content }} [/INST]{% endfor %}\"}", NULL);
    assert_int_equal(ec_chat_template_detect(dir, sp, &tpl), 0);
    assert_int_equal(tpl.format, EC_CHAT_MISTRAL);
    text = ec_chat_render(&tpl, sp, NULL, "hi");
    assert_string_equal(text, "<s>[INST] hi [/INST]");
    n = ec_tokenizer_encode(sp, text, 0, &ids);
    assert_int_equal(ids[0], 1); /* "<s>" written by the template is BOS */
    free(ids);
    free(text);
    remove_dir(dir);

    write_dir(dir, "{\"chat_template\": \"{% if x %}<<SYS>>{% endif %}[INST]\"}", NULL);
    assert_int_equal(ec_chat_template_detect(dir, sp, &tpl), 0);
    assert_int_equal(tpl.format, EC_CHAT_LLAMA2);
    text = ec_chat_render(&tpl, sp, "Be brief.", "hi");
    assert_string_equal(text, "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nhi [/INST]");
    free(text);
    remove_dir(dir);

    /* No template text: the architecture decides. */
    write_dir(dir, NULL, "{\"model_type\": \"phi3\"}");
    assert_int_equal(ec_chat_template_detect(dir, sp, &tpl), 0);
    assert_int_equal(tpl.format, EC_CHAT_PHI3);
    text = ec_chat_render(&tpl, sp, NULL, "hi");
    assert_string_equal(text, "<|user|>\nhi<|end|>\n<|assistant|>\n");
    free(text);
    remove_dir(dir);

    write_dir(dir, NULL, "{\"model_type\": \"llama\"}");
    assert_int_equal(ec_chat_template_detect(dir, sp, &tpl), 0);
    assert_int_equal(tpl.format, EC_CHAT_LLAMA2);
    remove_dir(dir);

    /* Unknown templates are said to be unknown, naming the file. */
    write_dir(dir, "{\"chat_template\": \"{% for m in messages %}### {{ m.content }}{% endfor %}\"}", NULL);
    assert_int_equal(ec_chat_template_detect(dir, sp, &tpl), -1);
    assert_non_null(strstr(ec_last_error(), "tokenizer_config.json: chat_template: unknown"));
    remove_dir(dir);
    write_dir(dir, NULL, "{\"model_type\": \"gemma\"}");
    assert_int_equal(ec_chat_template_detect(dir, sp, &tpl), -1);
    assert_non_null(strstr(ec_last_error(), "'gemma'"));
    remove_dir(dir);
    ec_tokenizer_free(qwen);
    ec_tokenizer_free(sp);
}

/* Llama-3's template, rendered without a file: the headers and the trimmed message. */
static void test_llama3_render(void **state)
{
    (void)state;
    ec_chat_template tpl = {EC_CHAT_LLAMA3, "", 0};
    char *text = ec_chat_render(&tpl, NULL, "sys ", "  hi\n");
    assert_string_equal(text, "<|start_header_id|>system<|end_header_id|>\n\nsys<|eot_id|>"
                              "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
                              "<|start_header_id|>assistant<|end_header_id|>\n\n");
    free(text);
}

/* Writes json as DIR/tokenizer.json in a new directory; the file's path into path. */
static void write_json(const char *json, char *path, size_t cap)
{
    char dir[] = "/tmp/ec_tokjson_XXXXXX";
    assert_non_null(mkdtemp(dir));
    snprintf(path, cap, "%s/tokenizer.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(json, f);
    fclose(f);
}

static void remove_json(const char *path)
{
    unlink(path);
    char dir[256];
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    rmdir(dir);
}

/* Writes text as a tokenizer.json and expects loading to fail naming the field. */
static void expect_malformed(const char *json, const char *field)
{
    char path[256];
    write_json(json, path, sizeof path);
    ec_tokenizer *t = NULL;
    int rc = ec_tokenizer_open(&t, path, 0);
    if (rc == 0) fail_msg("accepted malformed file expecting %s: %s", field, json);
    if (!strstr(ec_last_error(), path) || !strstr(ec_last_error(), field))
        fail_msg("message \"%s\" does not name the file and %s", ec_last_error(), field);
    assert_null(t);
    remove_json(path);
}

static void test_malformed(void **state)
{
    (void)state;
    const char *vocab = "\"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}";
    char buf[1024];
    expect_malformed("{\"model\": ", "not valid JSON");
    expect_malformed("[1, 2]", "not a JSON object");
    expect_malformed("{}", "model");
    expect_malformed("{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}", "model.type");
    expect_malformed("{\"model\": {\"type\": \"BPE\", \"vocab\": [1]}}", "model.vocab");
    expect_malformed("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -4}}}", "model.vocab");
    expect_malformed("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 0}}}", "model.vocab");
    snprintf(buf, sizeof buf, "{\"model\": {\"type\": \"BPE\", %s, \"merges\": [\"a c\"]}}", vocab);
    expect_malformed(buf, "model.merges[0]");
    snprintf(buf, sizeof buf, "{\"model\": {\"type\": \"BPE\", %s, \"merges\": [\"ab\"]}}", vocab);
    expect_malformed(buf, "model.merges[0]");
    snprintf(buf, sizeof buf, "{\"model\": {\"type\": \"BPE\", %s, \"merges\": 3}}", vocab);
    expect_malformed(buf, "model.merges");
    snprintf(buf, sizeof buf, "{\"model\": {\"type\": \"BPE\", %s, \"unk_token\": \"?\"}}", vocab);
    expect_malformed(buf, "model.unk_token");
    snprintf(buf, sizeof buf, "{\"model\": {\"type\": \"BPE\", %s, \"continuing_subword_prefix\": \"##\"}}", vocab);
    expect_malformed(buf, "model.continuing_subword_prefix");
    snprintf(buf, sizeof buf, "{\"model\": {\"type\": \"BPE\", %s}, \"added_tokens\": [{\"id\": \"x\", \"content\": \"<s>\"}]}", vocab);
    expect_malformed(buf, "added_tokens[0].id");
    snprintf(buf, sizeof buf, "{\"model\": {\"type\": \"BPE\", %s}, \"added_tokens\": [{\"id\": 5}]}", vocab);
    expect_malformed(buf, "added_tokens[0].content");
    snprintf(buf, sizeof buf, "{\"model\": {\"type\": \"BPE\", %s}, \"normalizer\": {\"type\": \"Lowercase\"}}", vocab);
    expect_malformed(buf, "normalizer.type");
    snprintf(buf, sizeof buf, "{\"model\": {\"type\": \"BPE\", %s}, \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFC\"}, {\"type\": \"Replace\", \"pattern\": {\"Regex\": \"x\"}, \"content\": \"y\"}]}}", vocab);
    expect_malformed(buf, "normalizer.normalizers[1].pattern");
    snprintf(buf, sizeof buf, "{\"model\": {\"type\": \"BPE\", %s}, \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"(unclosed\"}, \"behavior\": \"Isolated\"}}", vocab);
    expect_malformed(buf, "pre_tokenizer.pattern: bad regex");
    snprintf(buf, sizeof buf, "{\"model\": {\"type\": \"BPE\", %s}, \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"a\"}, \"behavior\": \"Contiguous\"}}", vocab);
    expect_malformed(buf, "pre_tokenizer.behavior");
    snprintf(buf, sizeof buf, "{\"model\": {\"type\": \"BPE\", %s}, \"pre_tokenizer\": {\"type\": \"Whitespace\"}}", vocab);
    expect_malformed(buf, "pre_tokenizer.type");
    snprintf(buf, sizeof buf, "{\"model\": {\"type\": \"BPE\", %s}, \"decoder\": {\"type\": \"WordPiece\"}}", vocab);
    expect_malformed(buf, "decoder.type");
    snprintf(buf, sizeof buf, "{\"model\": {\"type\": \"BPE\", %s}, \"decoder\": {\"type\": \"Strip\", \"content\": \" \"}}", vocab);
    expect_malformed(buf, "decoder");
    snprintf(buf, sizeof buf, "{\"model\": {\"type\": \"BPE\", %s}, \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<s>\"}}], \"special_tokens\": {}}}", vocab);
    expect_malformed(buf, "post_processor.special_tokens");
    snprintf(buf, sizeof buf, "{\"model\": {\"type\": \"BPE\", %s}, \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<s>\"}}], \"special_tokens\": {\"<s>\": {\"ids\": [9]}}}}", vocab);
    expect_malformed(buf, "post_processor");
}

/* A tiny valid file exercising merges, byte fallback and an unknown character. */
static void test_tiny_bpe(void **state)
{
    (void)state;
    const char *json =
        "{\"model\": {\"type\": \"BPE\", \"byte_fallback\": true, \"unk_token\": \"<unk>\","
        " \"vocab\": {\"<unk>\": 0, \"a\": 1, \"b\": 2, \"ab\": 3, \"<0xC3>\": 4, \"<0xA9>\": 5,"
        " \"abab\": 6}, \"merges\": [\"a b\", \"ab ab\"]},"
        " \"decoder\": {\"type\": \"Sequence\", \"decoders\": [{\"type\": \"ByteFallback\"},"
        " {\"type\": \"Fuse\"}]}}";
    char path[256];
    write_json(json, path, sizeof path);
    ec_tokenizer *t;
    assert_int_equal(ec_tokenizer_open(&t, path, 0), 0);
    int *ids, n = ec_tokenizer_encode(t, "ababa\xc3\xa9z", 0, &ids);
    /* abab merges fully, "a" stays, é falls back to its two bytes, z is unknown */
    int want[] = {6, 1, 4, 5, 0};
    assert_int_equal(n, 5);
    assert_memory_equal(ids, want, sizeof want);
    char *text = ec_tokenizer_decode(t, ids, n, 0);
    assert_string_equal(text, "ababa\xc3\xa9<unk>");
    free(text);
    free(ids);
    /* Invalid UTF-8 is refused, with where. */
    assert_int_equal(ec_tokenizer_encode(t, "ab\xff", 0, &ids), -1);
    assert_non_null(strstr(ec_last_error(), "byte 2"));
    ec_tokenizer_free(t);
    remove_json(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_goldens),        cmocka_unit_test(test_properties),
        cmocka_unit_test(test_chat_templates), cmocka_unit_test(test_llama3_render),
        cmocka_unit_test(test_malformed),      cmocka_unit_test(test_tiny_bpe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
