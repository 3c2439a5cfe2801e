/* results.c — names of the enumerations of the flat run record (results.h). */
#include "ecocompute/results.h"

#include <string.h>

#include "ecocompute/common.h"

static const char *const def_names[] = {"gross", "net", "unknown"};
static const char *const gate_names[] = {"pass", "fail", "pending", "unknown"};

const char *ec_energy_definition_name(ec_energy_definition d)
{
    return (unsigned)d <= EC_ENERGY_UNKNOWN ? def_names[d] : "unknown";
}

int ec_energy_definition_parse(const char *text, ec_energy_definition *out)
{
    for (int i = 0; i <= EC_ENERGY_UNKNOWN; i++)
        if (text && !strcmp(text, def_names[i])) {
            *out = (ec_energy_definition)i;
            return 0;
        }
    return ec_set_error("unknown energy definition '%s' (expected gross, net or unknown)",
                        text ? text : "(null)");
}

const char *ec_gate_status_name(ec_gate_status g)
{
    return (unsigned)g <= EC_GATE_UNKNOWN ? gate_names[g] : "unknown";
}

int ec_gate_status_parse(const char *text, ec_gate_status *out)
{
    for (int i = 0; i <= EC_GATE_UNKNOWN; i++)
        if (text && !strcmp(text, gate_names[i])) {
            *out = (ec_gate_status)i;
            return 0;
        }
    return ec_set_error("unknown gate status '%s' (expected pass, fail, pending or unknown)",
                        text ? text : "(null)");
}
