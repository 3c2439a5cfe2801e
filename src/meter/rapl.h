/* rapl.h (internal) — CPU package and DRAM energy from Linux powercap (RAPL) zones, with the
 * counters' wraparound unwrapped into 64-bit running totals. */
#ifndef EC_METER_RAPL_H
#define EC_METER_RAPL_H

#include <stddef.h>

typedef struct ec_rapl ec_rapl;

/* Opens the package-* and dram zones under root (NULL: $ECOCOMPUTE_POWERCAP_ROOT, else
 * /sys/class/powercap). Returns NULL and writes why into reason when none is readable. */
ec_rapl *ec_rapl_open(const char *root, char *reason, size_t reason_len);
void ec_rapl_close(ec_rapl *r);
/* Reads every zone and adds its increase since the last read (one wrap at most between reads,
 * so call it well within the wrap period). Returns 0, or -1 and writes why into reason. */
int ec_rapl_update(ec_rapl *r, char *reason, size_t reason_len);
/* Energy accumulated since open, J. */
void ec_rapl_totals(const ec_rapl *r, double *package_j, double *dram_j);
int ec_rapl_zone_count(const ec_rapl *r);
int ec_rapl_has_dram(const ec_rapl *r); /* 1 when a dram zone is summed */

#endif
