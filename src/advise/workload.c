/* workload.c — the arithmetic of `advise estimate`: a workload in natural quantities turned into
 * generated tokens per period, and tokens × J/1k into kWh, facility kWh (PUE), dollars and kgCO2.
 */
#include "ecocompute/advise.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "ecocompute/common.h"

int ec_period_parse(const char *text, ec_period *out)
{
    if (!strcmp(text, "day"))
        *out = EC_PER_DAY;
    else if (!strcmp(text, "month"))
        *out = EC_PER_MONTH;
    else if (!strcmp(text, "year"))
        *out = EC_PER_YEAR;
    else
        return ec_set_error("unknown period '%s' (day, month or year)", text);
    return 0;
}

const char *ec_period_name(ec_period p)
{
    return p == EC_PER_DAY ? "day" : p == EC_PER_YEAR ? "year" : "month";
}

/* A Julian year of 365.25 days and its twelfth, so a month times 12 is exactly a year. */
double ec_period_days(ec_period p)
{
    return p == EC_PER_DAY ? 1.0 : p == EC_PER_YEAR ? 365.25 : 365.25 / 12.0;
}

int ec_parse_quantity(const char *text, double *out)
{
    char digits[64];
    size_t j = 0;
    const char *p = text;
    for (; *p && j + 1 < sizeof digits; p++) {
        if (*p == ',' || *p == '_') continue; /* thousands separators */
        if (!(isdigit((unsigned char)*p) || *p == '.' || *p == 'e' || *p == 'E' ||
              ((*p == '+' || *p == '-') && j > 0 &&
               (digits[j - 1] == 'e' || digits[j - 1] == 'E'))))
            break;
        digits[j++] = *p;
    }
    digits[j] = 0;
    char *end;
    double x = j ? strtod(digits, &end) : NAN;
    if (!j || *end) return ec_set_error("'%s' is not a count", text);
    static const struct {
        const char *suffix;
        double factor;
    } units[] = {{"", 1},         {"k", 1e3},   {"K", 1e3},      {"M", 1e6},
                 {"B", 1e9},      {"G", 1e9},   {"\u4e07", 1e4}, {"\u4e07\u5b57", 1e4},
                 {"\u4ebf", 1e8}, {"\u5b57", 1}};
    for (size_t u = 0; u < sizeof units / sizeof *units; u++)
        if (!strcmp(p, units[u].suffix)) {
            x *= units[u].factor;
            if (!(x >= 0) || !isfinite(x)) return ec_set_error("'%s' is not a count", text);
            *out = x;
            return 0;
        }
    return ec_set_error("'%s': unknown suffix '%s' (k, M, B, \u4e07, \u4ebf)", text, p);
}

static int given(double x)
{
    return !isnan(x);
}

int ec_workload_tokens(const ec_workload_input *in, ec_workload *out)
{
    memset(out, 0, sizeof *out);
    out->requests = NAN;
    int n = given(in->tokens) + given(in->requests) + given(in->chars) + given(in->users) +
            given(in->hours_per_day);
    if (n == 0)
        return ec_set_error("no workload: give --tokens, --requests, --chars, --users or "
                            "--hours-per-day");
    if (n > 1) return ec_set_error("give one workload quantity, not %d", n);
    const char *per = ec_period_name(in->period);
    if (given(in->tokens)) {
        if (!(in->tokens >= 0)) return ec_set_error("tokens must be at least 0");
        out->tokens = in->tokens;
        snprintf(out->how, sizeof out->how, "%.0f tokens per %s, as given", in->tokens, per);
        return 0;
    }
    if (given(in->hours_per_day)) {
        if (!(in->hours_per_day >= 0 && in->hours_per_day <= 24))
            return ec_set_error("hours per day must be within 0..24");
        if (!(in->tok_s > 0)) return ec_set_error("no throughput to run the hours at");
        double days = ec_period_days(in->period);
        out->tokens = in->hours_per_day * 3600.0 * in->tok_s * days;
        snprintf(out->how, sizeof out->how, "%.3g h/day x 3600 s x %.1f tok/s x %.4g days per %s",
                 in->hours_per_day, in->tok_s, days, per);
        return 0;
    }
    if (given(in->chars)) {
        if (!(in->chars >= 0)) return ec_set_error("characters must be at least 0");
        if (!(in->chars_per_token > 0)) return ec_set_error("no characters-per-token ratio");
        out->tokens = in->chars / in->chars_per_token;
        snprintf(out->how, sizeof out->how, "%.0f characters / %.3g characters per token, per %s",
                 in->chars, in->chars_per_token, per);
        return 0;
    }
    double requests = in->requests;
    char what[96];
    snprintf(what, sizeof what, "%.0f requests", in->requests);
    if (given(in->users)) {
        if (!(in->users >= 0 && in->requests_per_user >= 0))
            return ec_set_error("users and requests per user must be at least 0 (and both given)");
        requests = in->users * in->requests_per_user;
        snprintf(what, sizeof what, "%.0f users x %.4g requests each", in->users,
                 in->requests_per_user);
    }
    if (!(requests >= 0)) return ec_set_error("requests must be at least 0");
    if (!(in->tokens_per_request > 0)) return ec_set_error("tokens per request must be positive");
    out->requests = requests;
    out->tokens = requests * in->tokens_per_request;
    snprintf(out->how, sizeof out->how, "%s x %.0f generated tokens per request, per %s", what,
             in->tokens_per_request, per);
    return 0;
}

void ec_footprint_of(double tokens, double j_per_1k, double tok_s, double pue, double usd_per_kwh,
                     double g_co2_per_kwh, ec_footprint *out)
{
    out->pue = pue;
    out->gpu_kwh = tokens * j_per_1k / 1000.0 / 3.6e6;
    out->facility_kwh = out->gpu_kwh * pue;
    out->cost_usd = isfinite(usd_per_kwh) ? out->facility_kwh * usd_per_kwh : NAN;
    out->kg_co2 = isfinite(g_co2_per_kwh) ? out->facility_kwh * g_co2_per_kwh / 1000.0 : NAN;
    out->gpu_hours = tok_s > 0 ? tokens / tok_s / 3600.0 : NAN;
}
