/* model.c — ec_model: picks the weight source (catalog name → synthetic, directory → Hugging
 * Face safetensors, file → llama2.c checkpoint), checks tensor requests, maps files read-only. */
#include "ecocompute/common.h"
#include "model_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

void ec_model_options_default(ec_model_options *o)
{
    memset(o, 0, sizeof *o);
    o->seed = 42;
    o->outliers = -1;
}

int ec_map_file(ec_mapped_file *f, const char *path)
{
    f->data = NULL;
    f->size = 0;
    int fd = ec_open_regular(path);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st)) {
        close(fd);
        return ec_set_error("%s: cannot stat: %s", path, strerror(errno));
    }
    if (st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            return ec_set_error("%s: cannot map: %s", path, strerror(e));
        }
        f->data = p;
        f->size = (size_t)st.st_size;
    }
    close(fd); /* the mapping keeps the file alive */
    return 0;
}

void ec_unmap_file(ec_mapped_file *f)
{
    if (f->data) munmap((void *)f->data, f->size);
    f->data = NULL;
    f->size = 0;
}

int ec_model_open(ec_model **out, const char *name_or_path, const ec_model_options *opts)
{
    *out = NULL;
    ec_model_options defaults;
    if (!opts) {
        ec_model_options_default(&defaults);
        opts = &defaults;
    }
    ec_model *m = calloc(1, sizeof *m);
    if (!m) return ec_set_error("%s: out of memory", name_or_path);
    const ec_model_config *cat = ec_catalog_find(name_or_path);
    struct stat st;
    int rc;
    if (cat)
        rc = ec_synthetic_open(m, cat, opts);
    else if (stat(name_or_path, &st) != 0)
        rc = ec_set_error("%s: not a catalog model (see 'ecocompute models'), and no such file or "
                          "directory", name_or_path);
    else if (S_ISDIR(st.st_mode))
        rc = ec_hf_open(m, name_or_path);
    else
        rc = ec_llama2c_open(m, name_or_path);
    if (rc) {
        free(m);
        return -1;
    }
    *out = m;
    return 0;
}

const ec_model_config *ec_model_config_of(const ec_model *m)
{
    return &m->cfg;
}

const char *ec_model_source(const ec_model *m)
{
    return m->source;
}

int ec_model_eos_ids(const ec_model *m, const int **ids)
{
    *ids = m->eos_ids;
    return m->n_eos;
}

int ec_model_read_tensor(const ec_model *m, ec_tensor_kind k, int layer, float *out)
{
    if ((unsigned)k >= EC_T_COUNT)
        return ec_set_error("%s: no tensor kind %d", m->cfg.name, (int)k);
    if (ec_tensor_is_per_layer(k) && (layer < 0 || layer >= m->cfg.n_layers))
        return ec_set_error("%s: %s: layer %d out of range [0, %d)", m->cfg.name,
                            ec_tensor_kind_name(k), layer, m->cfg.n_layers);
    if ((k == EC_T_BQ || k == EC_T_BK || k == EC_T_BV) && !m->cfg.qkv_bias)
        return ec_set_error("%s: %s: the model has no q/k/v bias", m->cfg.name,
                            ec_tensor_kind_name(k));
    return m->read(m, k, layer, out);
}

void ec_model_close(ec_model *m)
{
    if (!m) return;
    m->destroy(m);
    free(m);
}
