/* sarif.c — audit findings as SARIF 2.1.0 (the format code-scanning services read): one run, the
 * rules with their fixes, one result per finding with its file and line. Severity to level: red
 * error; orange and yellow warning; green and gray note. */
#include "ecocompute/advise.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "ecocompute/common.h"

static const char *level_of(ec_audit_severity s)
{
    switch (s) {
    case EC_AUDIT_RED:
        return "error";
    case EC_AUDIT_ORANGE:
    case EC_AUDIT_YELLOW:
        return "warning";
    default:
        return "note";
    }
}

static cJSON *text_object(const char *text)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "text", text);
    return o;
}

int ec_audit_write_sarif(FILE *out, const ec_audit_findings *f)
{
    size_t nrules;
    const ec_audit_rule *rules = ec_audit_rules(&nrules);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "$schema", "https://json.schemastore.org/sarif-2.1.0.json");
    cJSON_AddStringToObject(root, "version", "2.1.0");
    cJSON *runs = cJSON_AddArrayToObject(root, "runs");
    cJSON *run = cJSON_CreateObject();
    cJSON_AddItemToArray(runs, run);
    cJSON *tool = cJSON_AddObjectToObject(run, "tool");
    cJSON *driver = cJSON_AddObjectToObject(tool, "driver");
    cJSON_AddStringToObject(driver, "name", "ecocompute advise audit");
    cJSON_AddStringToObject(driver, "version", ec_version());
    cJSON_AddStringToObject(driver, "informationUri", "https://github.com/ecocompute/ecocompute");
    cJSON *jr = cJSON_AddArrayToObject(driver, "rules");
    for (size_t i = 0; i < nrules; i++) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "id", rules[i].id);
        cJSON_AddStringToObject(r, "name", rules[i].id);
        cJSON_AddItemToObject(r, "shortDescription", text_object(rules[i].title));
        cJSON_AddItemToObject(r, "help", text_object(rules[i].fix));
        cJSON *cfg = cJSON_AddObjectToObject(r, "defaultConfiguration");
        cJSON_AddStringToObject(cfg, "level", level_of(rules[i].severity));
        cJSON_AddItemToArray(jr, r);
    }
    cJSON *results = cJSON_AddArrayToObject(run, "results");
    for (size_t i = 0; i < f->n; i++) {
        const ec_audit_finding *x = &f->v[i];
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "ruleId", x->rule->id);
        cJSON_AddNumberToObject(r, "ruleIndex", (double)(x->rule - rules));
        cJSON_AddStringToObject(r, "level", level_of(x->severity));
        char msg[2048];
        snprintf(msg, sizeof msg, "[%s] %s. Fix: %s. Impact: %s",
                 ec_audit_severity_name(x->severity), x->message, x->rule->fix, x->impact);
        cJSON_AddItemToObject(r, "message", text_object(msg));
        cJSON *locs = cJSON_AddArrayToObject(r, "locations");
        cJSON *loc = cJSON_CreateObject();
        cJSON *phys = cJSON_AddObjectToObject(loc, "physicalLocation");
        cJSON *art = cJSON_AddObjectToObject(phys, "artifactLocation");
        const char *uri = x->file;
        if (!strncmp(uri, "./", 2)) uri += 2;
        cJSON_AddStringToObject(art, "uri", uri);
        cJSON *region = cJSON_AddObjectToObject(phys, "region");
        cJSON_AddNumberToObject(region, "startLine", x->line > 0 ? x->line : 1);
        cJSON_AddItemToArray(locs, loc);
        cJSON *props = cJSON_AddObjectToObject(r, "properties");
        cJSON_AddStringToObject(props, "severity", ec_audit_severity_name(x->severity));
        cJSON_AddStringToObject(props, "impact", x->impact);
        cJSON_AddItemToArray(results, r);
    }
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    if (!s) return ec_set_error("out of memory");
    fputs(s, out);
    fputc('\n', out);
    free(s);
    return 0;
}
