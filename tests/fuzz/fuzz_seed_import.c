/* fuzz_seed_import.c — libFuzzer target: the input is a whole seed-data file (the seeds'
 * published CSV and JSON files that `import`, `analyze` and `validate` read; store/seed_import.c).
 * That reader takes a path, so the input is written to a file below a "seed-data/" folder (the
 * reader derives each record's source from that part of the path) and read back. The reader picks
 * CSV or JSON by the content; the file name, which alone names the GPU of the benchmark_results
 * CSVs, is picked by the input's length, a CSV name or a JSON name. Valid or not, reading must
 * never crash, leak or overflow; an accepted file gives at least one record whose text fields are
 * terminated, whose source is the file's name below "seed-data/", and whose run index is -1 (a
 * summary row) or a run's 0, 1, ...; each record then goes through import's range check. */
#include "ecocompute/store.h"
#include "store/seed_import.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* The folder of this process's input files (made once, removed at exit). */
static char dir[256], files[2][300];

static void remove_files(void)
{
    for (int i = 0; i < 2; i++) unlink(files[i]);
    char seed[280];
    snprintf(seed, sizeof seed, "%s/seed-data", dir);
    rmdir(seed);
    rmdir(dir);
}

static int make_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/fuzz_seed_import.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) return -1;
    char seed[280];
    snprintf(seed, sizeof seed, "%s/seed-data", dir);
    if (mkdir(seed, 0700)) return -1;
    snprintf(files[0], sizeof files[0], "%s/rtx5090_benchmark_results.csv", seed);
    snprintf(files[1], sizeof files[1], "%s/a800_results.json", seed);
    atexit(remove_files);
    return 0;
}

#define TERMINATED(field) (memchr((field), '\0', sizeof(field)) != NULL)

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (!dir[0] && make_dir()) abort();
    const char *path = files[size % 2];
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (size && fwrite(data, 1, size, f) != size) abort();
    if (fclose(f)) abort();
    ec_run_record *r = NULL;
    size_t n = 0;
    if (ec_seed_read(path, &r, &n) == 0) {
        if (!n || !r) abort();
        for (size_t i = 0; i < n; i++) {
            if (!TERMINATED(r[i].source) || !TERMINATED(r[i].licence) ||
                !TERMINATED(r[i].model) || !TERMINATED(r[i].precision) ||
                !TERMINATED(r[i].gpu_name) || !TERMINATED(r[i].kernels))
                abort();
            if (strncmp(r[i].source, "rtx5090", 7) && strncmp(r[i].source, "a800", 4)) abort();
            if (r[i].run_index < -1) abort();
            /* What import does next with each record: its range check, which must not crash. */
            char why[256];
            (void)ec_run_record_check(&r[i], why, sizeof why);
        }
        free(r);
    } else if (r || n) {
        abort(); /* a refused file leaves nothing behind */
    }
    return 0;
}
