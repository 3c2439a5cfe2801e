/* topology.c — the interconnect between GPUs as NVML reports it (ec_meter_interconnect): the
 * active NVLink links of each GPU, else the farthest PCIe ancestor any two of them share. A
 * tensor-parallel run's all-reduces cross this link, so a configuration records it. */
#include "meter_internal.h"

#include <stdio.h>

static const char *pcie_level_name(int level)
{
    switch (level) {
    case NVML_TOPOLOGY_INTERNAL:
        return "internal";
    case NVML_TOPOLOGY_SINGLE:
        return "single";
    case NVML_TOPOLOGY_MULTIPLE:
        return "multiple";
    case NVML_TOPOLOGY_HOSTBRIDGE:
        return "hostbridge";
    case NVML_TOPOLOGY_NODE:
        return "node";
    case NVML_TOPOLOGY_SYSTEM:
        return "system";
    default:
        return NULL;
    }
}

/* Active NVLink links of one GPU; -1 when NVML cannot say. */
static int active_links(const ec_nvml *nv, nvmlDevice_t h)
{
    int n = 0, answered = 0;
    for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; link++) {
        int active = 0;
        nvmlReturn_t r = EC_NVML(nv, DeviceGetNvLinkState, h, link, &active);
        /* A link number the GPU lacks answers NOT_SUPPORTED or INVALID_ARGUMENT. */
        if (r == NVML_ERROR_FUNCTION_NOT_FOUND) return -1;
        if (r != NVML_SUCCESS) continue;
        answered = 1;
        n += active == NVML_FEATURE_ENABLED;
    }
    return answered ? n : 0;
}

void ec_meter_interconnect(const ec_meter *m, const int *gpus, int n, char *out, size_t len)
{
    snprintf(out, len, "unknown");
    if (n == 1) snprintf(out, len, "none");
    if (n < 2 || !m->nv.lib) return;
    for (int i = 0; i < n; i++)
        if (gpus[i] < 0 || gpus[i] >= m->ngpus) return;
    int fewest = -1;
    for (int i = 0; i < n; i++) {
        int links = active_links(&m->nv, m->gpus[gpus[i]].handle);
        if (links < 0) {
            fewest = -1;
            break;
        }
        if (fewest < 0 || links < fewest) fewest = links;
    }
    if (fewest > 0) {
        snprintf(out, len, "nvlink:%d", fewest);
        return;
    }
    int farthest = -1;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            int level = -1;
            if (EC_NVML(&m->nv, DeviceGetTopologyCommonAncestor, m->gpus[gpus[i]].handle,
                        m->gpus[gpus[j]].handle, &level) != NVML_SUCCESS ||
                !pcie_level_name(level))
                return;
            if (level > farthest) farthest = level;
        }
    snprintf(out, len, "pcie:%s", pcie_level_name(farthest));
}
