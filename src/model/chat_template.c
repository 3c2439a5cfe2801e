/* chat_template.c — the chat templates of the common instruction-tuned families as known
 * formats (Llama-2, Llama-3, Mistral, ChatML for Qwen, Phi-3): recognised from the Jinja text of
 * tokenizer_config.json's `chat_template` by the markers each family's template writes, or from
 * config.json's model_type; rendered for one user turn with the generation prompt, as
 * transformers' apply_chat_template(add_generation_prompt=True) renders them. */
#include "ecocompute/common.h"
#include "ecocompute/tokenizer.h"
#include "tokenizer_internal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *ec_chat_format_name(ec_chat_format f)
{
    switch (f) {
    case EC_CHAT_NONE: return "none";
    case EC_CHAT_LLAMA2: return "llama-2";
    case EC_CHAT_LLAMA3: return "llama-3";
    case EC_CHAT_MISTRAL: return "mistral";
    case EC_CHAT_CHATML: return "chatml";
    case EC_CHAT_PHI3: return "phi-3";
    }
    return "?";
}

/* A JSON file of the model directory, or NULL when absent or unreadable. */
static cJSON *read_json(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t len;
    char *text = ec_read_whole_file(path, &len);
    cJSON *json = text ? cJSON_ParseWithLength(text, len) : NULL;
    free(text);
    return json;
}

/* The Jinja text of tokenizer_config.json's chat_template (a string, or the "default" entry of
 * a list of named templates). */
static const char *template_text(const cJSON *config)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(config, "chat_template"), *e;
    if (cJSON_IsString(t)) return t->valuestring;
    if (!cJSON_IsArray(t)) return NULL;
    cJSON_ArrayForEach(e, t)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
        const cJSON *body = cJSON_GetObjectItemCaseSensitive(e, "template");
        if (cJSON_IsString(name) && !strcmp(name->valuestring, "default") && cJSON_IsString(body))
            return body->valuestring;
    }
    return NULL;
}

/* The family whose markers the template writes. */
static ec_chat_format format_of_template(const char *jinja)
{
    if (strstr(jinja, "<|start_header_id|>")) return EC_CHAT_LLAMA3;
    if (strstr(jinja, "<|im_start|>")) return EC_CHAT_CHATML;
    if (strstr(jinja, "<|user|>") && strstr(jinja, "<|end|>")) return EC_CHAT_PHI3;
    if (strstr(jinja, "[INST]")) return strstr(jinja, "<<SYS>>") ? EC_CHAT_LLAMA2 : EC_CHAT_MISTRAL;
    return EC_CHAT_NONE;
}

static ec_chat_format format_of_model_type(const char *type, const ec_tokenizer *t)
{
    if (!strcmp(type, "llama"))
        return t && ec_tokenizer_find(t, "<|start_header_id|>") >= 0 ? EC_CHAT_LLAMA3 : EC_CHAT_LLAMA2;
    if (!strcmp(type, "mistral")) return EC_CHAT_MISTRAL;
    if (!strcmp(type, "qwen2") || !strcmp(type, "qwen2_moe") || !strcmp(type, "qwen3")) return EC_CHAT_CHATML;
    if (!strcmp(type, "phi3")) return EC_CHAT_PHI3;
    return EC_CHAT_NONE;
}

int ec_chat_template_detect(const char *model_dir, const ec_tokenizer *t, ec_chat_template *out)
{
    memset(out, 0, sizeof *out);
    cJSON *config = read_json(model_dir, "tokenizer_config.json");
    const char *jinja = template_text(config);
    if (jinja) {
        out->format = format_of_template(jinja);
        /* Qwen's templates add their own system prompt when the conversation has none. */
        static const char *const defaults[] = {
            "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.",
            "You are a helpful assistant."};
        for (size_t i = 0; out->format == EC_CHAT_CHATML && i < 2 && !out->default_system[0]; i++)
            if (strstr(jinja, defaults[i]))
                snprintf(out->default_system, sizeof out->default_system, "%s", defaults[i]);
        out->bos_first = strstr(jinja, "bos_token") != NULL;
        cJSON_Delete(config);
        if (out->format == EC_CHAT_NONE)
            return ec_set_error("%s/tokenizer_config.json: chat_template: unknown template (known: "
                                "llama-2, llama-3, mistral, chatml, phi-3)",
                                model_dir);
        return 0;
    }
    cJSON_Delete(config);
    cJSON *model = read_json(model_dir, "config.json");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "model_type");
    out->format = cJSON_IsString(type) ? format_of_model_type(type->valuestring, t) : EC_CHAT_NONE;
    /* Without a template text, the families' published templates: BOS first for Llama and
     * Mistral, Qwen2.5's default system prompt for ChatML. */
    out->bos_first = out->format == EC_CHAT_LLAMA2 || out->format == EC_CHAT_LLAMA3 ||
                     out->format == EC_CHAT_MISTRAL;
    if (out->format == EC_CHAT_CHATML)
        snprintf(out->default_system, sizeof out->default_system, "%s",
                 "You are a helpful assistant.");
    int known = out->format != EC_CHAT_NONE;
    if (!known)
        ec_set_error("%s: no chat template: tokenizer_config.json has no chat_template and "
                     "config.json's model_type '%s' is none of llama, mistral, qwen2, phi3",
                     model_dir, cJSON_IsString(type) ? type->valuestring : "(missing)");
    cJSON_Delete(model);
    return known ? 0 : -1;
}

/* s without leading and trailing whitespace (Llama-3's template trims each message), as a
 * length for "%.*s". */
static const char *trimmed(const char *s, int *len)
{
    while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\n' || s[n - 1] == '\t' || s[n - 1] == '\r')) n--;
    *len = (int)n;
    return s;
}

char *ec_chat_render(const ec_chat_template *tpl, const ec_tokenizer *t, const char *system,
                     const char *user)
{
    if (!system && tpl->default_system[0]) system = tpl->default_system;
    const char *bos_piece = t ? ec_tokenizer_piece(t, ec_tokenizer_bos(t)) : NULL;
    if (!bos_piece || !tpl->bos_first) bos_piece = "";
    if (t && ec_tokenizer_format_of(t) != EC_TOKENIZER_HF_JSON && bos_piece[0]) bos_piece = "<s>";
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    int n;
    const char *s;
    switch (tpl->format) {
    case EC_CHAT_LLAMA2:
        if (system)
            fprintf(f, "%s[INST] <<SYS>>\n%s\n<</SYS>>\n\n%s [/INST]", bos_piece, system, user);
        else
            fprintf(f, "%s[INST] %s [/INST]", bos_piece, user);
        break;
    case EC_CHAT_MISTRAL:
        fprintf(f, "%s[INST] %s%s%s [/INST]", bos_piece, system ? system : "", system ? "\n\n" : "", user);
        break;
    case EC_CHAT_LLAMA3:
        fputs(bos_piece, f);
        if (system) {
            s = trimmed(system, &n);
            fprintf(f, "<|start_header_id|>system<|end_header_id|>\n\n%.*s<|eot_id|>", n, s);
        }
        s = trimmed(user, &n);
        fprintf(f, "<|start_header_id|>user<|end_header_id|>\n\n%.*s<|eot_id|>"
                   "<|start_header_id|>assistant<|end_header_id|>\n\n", n, s);
        break;
    case EC_CHAT_CHATML:
        if (system) fprintf(f, "<|im_start|>system\n%s<|im_end|>\n", system);
        fprintf(f, "<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n", user);
        break;
    case EC_CHAT_PHI3:
        fputs(bos_piece, f);
        if (system) fprintf(f, "<|system|>\n%s<|end|>\n", system);
        fprintf(f, "<|user|>\n%s<|end|>\n<|assistant|>\n", user);
        break;
    case EC_CHAT_NONE:
        fputs(user, f);
        break;
    }
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

int ec_chat_stop_token(const ec_chat_template *tpl, const ec_tokenizer *t)
{
    const char *marker = tpl->format == EC_CHAT_LLAMA3   ? "<|eot_id|>"
                         : tpl->format == EC_CHAT_CHATML ? "<|im_end|>"
                         : tpl->format == EC_CHAT_PHI3   ? "<|end|>"
                                                         : NULL;
    int id = marker ? ec_tokenizer_find(t, marker) : -1;
    return id >= 0 ? id : ec_tokenizer_eos(t);
}
