/* store.c — the results database: opening (with the checks that keep foreign, damaged and newer
 * files untouched), migrations, sessions, configurations, runs with their phases, imported
 * records, traces and calibrations. Runs are written and read through the export column table
 * (columns.c), each column living in one table: sessions (environment), configurations (what
 * was measured), runs, or phases (prefill_* / decode_*). */
#include "ecocompute/meter.h"
#include "ecocompute/store.h"

#include "store/store_internal.h"

#include <errno.h>
#include <signal.h>
#include <math.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A writer waits this long for another writer's transaction (a reader never blocks it in WAL). */
#define BUSY_TIMEOUT_MS 10000

/* Readers need the runs table as written since this version (later versions add other tables),
 * so export and analyze read an older file without migrating it. */
#define READABLE_SCHEMA_VERSION 2

struct ec_store {
    sqlite3 *db;
    int version;
    char path[4096];
    char host[256]; /* this process, as named in claims */
    long pid;
};

static int db_error(ec_store *s, const char *what)
{
    return ec_set_error("%s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
}

static int exec(ec_store *s, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) == SQLITE_OK) return 0;
    ec_set_error("%s: %s", s->path, msg ? msg : sqlite3_errmsg(s->db));
    sqlite3_free(msg);
    return -1;
}

static int prepare(ec_store *s, const char *sql, sqlite3_stmt **st)
{
    if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) == SQLITE_OK) return 0;
    *st = NULL;
    return db_error(s, "query");
}

/* Runs a one-integer query (PRAGMA x, SELECT count(*) ...); -1 with ec_last_error on failure. */
static int query_int(ec_store *s, const char *sql, long long *out)
{
    sqlite3_stmt *st;
    if (prepare(s, sql, &st) != 0) return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) *out = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : db_error(s, "query");
}

static void rollback(ec_store *s)
{
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

/* Creates the directories leading to path (mkdir -p of its dirname). */
static int make_parent_dirs(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return 0;
    *slash = '\0';
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(dir, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

const char *ec_store_default_path(void)
{
    static char path[4096];
    const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    if (xdg && xdg[0] == '/') /* the XDG spec ignores relative values */
        snprintf(path, sizeof path, "%s/ecocompute/results.db", xdg);
    else if (home && *home)
        snprintf(path, sizeof path, "%s/.local/share/ecocompute/results.db", home);
    else
        snprintf(path, sizeof path, "results.db");
    return path;
}

int ec_store_schema_version(ec_store *s)
{
    return s->version;
}

sqlite3 *ec_store_sqlite(ec_store *s)
{
    return s->db;
}

const char *ec_store_file(ec_store *s)
{
    return s->path;
}

/* Applies the migrations from the file's version on, inside the caller's write transaction
 * (which also checked the file), so two writers opening an old or new file at once migrate it
 * once. */
static int migrate(ec_store *s)
{
    for (int v = s->version; v < EC_STORE_SCHEMA_VERSION; v++) {
        if (exec(s, ec_store_migrations[v]) != 0) return -1;
        char sql[96];
        snprintf(sql, sizeof sql, "PRAGMA user_version = %d; PRAGMA application_id = %d", v + 1,
                 EC_STORE_APPLICATION_ID);
        if (exec(s, sql) != 0) return -1;
    }
    s->version = EC_STORE_SCHEMA_VERSION;
    return 0;
}

/* Decides whether the open file is ours, current, and intact. Returns 0 (s->version set), or
 * -1 with a message; *fresh says the file holds nothing yet (a new database). */
static int check_file(ec_store *s, int *fresh)
{
    long long app = 0, version = 0, tables = 0;
    if (query_int(s, "PRAGMA application_id", &app) != 0 ||
        query_int(s, "PRAGMA user_version", &version) != 0 ||
        query_int(s, "SELECT count(*) FROM sqlite_master", &tables) != 0) {
        int code = sqlite3_errcode(s->db);
        if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT)
            return ec_set_error("%s is damaged or not a database (%s); it was left untouched",
                                s->path, sqlite3_errmsg(s->db));
        return -1;
    }
    *fresh = app == 0 && version == 0 && tables == 0;
    if (*fresh) return 0;
    if (app != EC_STORE_APPLICATION_ID)
        return ec_set_error("%s is an SQLite database of another program (application id "
                            "0x%llx), not an ecocompute results database; it was left untouched",
                            s->path, (unsigned long long)app);
    if (version > EC_STORE_SCHEMA_VERSION)
        return ec_set_error("%s has schema version %lld, newer than this ecocompute's (%d): "
                            "use a newer ecocompute",
                            s->path, version, EC_STORE_SCHEMA_VERSION);
    sqlite3_stmt *st;
    if (prepare(s, "PRAGMA quick_check(1)", &st) != 0) return -1;
    int rc = sqlite3_step(st);
    const char *verdict = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
    if (!verdict || strcmp(verdict, "ok") != 0) {
        ec_set_error("%s is damaged (%s); it was left untouched", s->path,
                     verdict ? verdict : sqlite3_errmsg(s->db));
        sqlite3_finalize(st);
        return -1;
    }
    sqlite3_finalize(st);
    s->version = (int)version;
    return 0;
}

/* PRAGMA journal_mode needs the file to itself and can fail with SQLITE_BUSY without calling
 * the busy handler while another connection creates the database, so it is retried here. */
static int use_wal(ec_store *s)
{
    double deadline = ec_now_s() + BUSY_TIMEOUT_MS / 1000.0;
    for (;;) {
        int rc = sqlite3_exec(s->db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
        if (rc == SQLITE_OK) return 0;
        if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || ec_now_s() > deadline)
            return db_error(s, "switching to write-ahead logging");
        ec_sleep_s(0.01, NULL);
    }
}

/* Checks the file inside one transaction (a read one, or a write one that then also creates or
 * migrates it), so that the header and the tables are read in one state, never a half-created
 * database of a concurrent writer. */
static int check_in_transaction(ec_store *s, int write, int readonly)
{
    if (exec(s, write ? "BEGIN IMMEDIATE" : "BEGIN") != 0) return -1;
    int fresh = 0;
    if (check_file(s, &fresh) != 0) goto fail;
    if (readonly && (fresh || s->version < READABLE_SCHEMA_VERSION)) {
        ec_set_error(fresh ? "%s holds no results yet"
                           : "%s has an older schema: a writing command (bench, import) migrates it",
                     s->path);
        goto fail;
    }
    if (write && migrate(s) != 0) goto fail;
    if (exec(s, "COMMIT") == 0) return 0;
fail:
    rollback(s);
    return -1;
}

/* Readers check the file; writers check it before changing anything (a foreign file is never
 * switched to WAL), then switch to WAL and check, create or migrate it under the write lock. */
static int check_and_migrate(ec_store *s, int readonly)
{
    if (check_in_transaction(s, 0, readonly) != 0) return -1;
    if (readonly) return 0;
    /* WAL: readers see the last committed run while a sweep writes; FULL: a committed run
     * survives a power cut, not only a killed process. */
    if (use_wal(s) != 0 || exec(s, "PRAGMA synchronous = FULL") != 0) return -1;
    return check_in_transaction(s, 1, 0);
}

/* A read-only open of a file in a directory this process cannot write: SQLite could not create
 * the write-ahead log's index beside it, so the file is read as immutable when no log is
 * pending (no writer can be at work there). */
static int read_as_immutable(const char *path)
{
    char dir[4096], wal[4200];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *(slash == dir ? slash + 1 : slash) = '\0';
    snprintf(wal, sizeof wal, "%s-wal", path);
    return access(slash ? dir : ".", W_OK) != 0 && access(wal, F_OK) != 0;
}

/* "file:PATH?immutable=1" with the path's URI-special characters escaped. */
static void immutable_uri(const char *path, char *uri, size_t len)
{
    size_t n = (size_t)snprintf(uri, len, "file:");
    for (const unsigned char *p = (const unsigned char *)path; *p && n + 4 < len; p++)
        n += (size_t)(strchr("?#%", *p) || *p < 0x20 ? snprintf(uri + n, len - n, "%%%02X", *p)
                                                     : snprintf(uri + n, len - n, "%c", *p));
    snprintf(uri + n, len - n, "?immutable=1");
}

int ec_store_open(ec_store **out, const char *path, int readonly)
{
    *out = NULL;
    struct stat sb;
    int exists = stat(path, &sb) == 0;
    if (exists && !S_ISREG(sb.st_mode)) return ec_set_error("%s is not a regular file", path);
    if (!exists && readonly) return ec_set_error("no results database at %s", path);
    if (exists && sb.st_size > 0) {
        /* Refuse anything that is not SQLite before SQLite can touch it. */
        char magic[16] = {0};
        FILE *f = ec_fopen_regular(path);
        if (!f) return -1;
        size_t got = fread(magic, 1, sizeof magic, f);
        fclose(f);
        if (got < sizeof magic || memcmp(magic, "SQLite format 3", 16) != 0)
            return ec_set_error("%s is not an ecocompute results database (not an SQLite file); "
                                "it was left untouched",
                                path);
    }
    if (!exists && make_parent_dirs(path) != 0)
        return ec_set_error("cannot create the directory of %s: %s", path, strerror(errno));
    ec_store *s = calloc(1, sizeof *s);
    if (!s) return ec_set_error("out of memory");
    snprintf(s->path, sizeof s->path, "%s", path);
    s->pid = (long)getpid();
    if (gethostname(s->host, sizeof s->host) != 0) snprintf(s->host, sizeof s->host, "unknown");
    s->host[sizeof s->host - 1] = '\0';
    int flags = readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    char uri[8300];
    const char *name = path;
    if (readonly && read_as_immutable(path)) {
        immutable_uri(path, uri, sizeof uri);
        name = uri;
        flags |= SQLITE_OPEN_URI;
    }
    if (sqlite3_open_v2(name, &s->db, flags, NULL) != SQLITE_OK) {
        ec_set_error("cannot open %s: %s", path, s->db ? sqlite3_errmsg(s->db) : "out of memory");
        ec_store_close(s);
        return -1;
    }
    sqlite3_busy_timeout(s->db, BUSY_TIMEOUT_MS);
    sqlite3_extended_result_codes(s->db, 0);
    if (check_and_migrate(s, readonly) != 0) goto fail;
    if (exec(s, "PRAGMA foreign_keys = ON") != 0) goto fail;
    *out = s;
    return 0;
fail:
    ec_store_close(s);
    return -1;
}

void ec_store_close(ec_store *s)
{
    if (!s) return;
    sqlite3_close(s->db);
    free(s);
}

/* ---- where each export column lives ---- */

typedef enum { HOME_SESSION, HOME_CONFIG, HOME_RUN, HOME_PREFILL, HOME_DECODE, HOME_KEY } col_home;

static const char *const session_cols[] = {"gpu_name",   "gpu_uuid",           "gpu_arch",
                                           "driver",     "cuda",               "power_limit_w",
                                           "host_cpu",   "ecocompute_version", "git_commit",
                                           NULL};
static const char *const config_cols[] = {"model",   "params_b",   "precision", "kernels",
                                          "device",  "batch",      "prompt_len", "gen_len",
                                          "tp",      "interconnect", NULL};

static int in_list(const char *const *list, const char *name)
{
    for (; *list; list++)
        if (!strcmp(*list, name)) return 1;
    return 0;
}

/* The table of column c and its column name there (*sql_name). */
static col_home home_of(const ec_column *c, const char **sql_name)
{
    *sql_name = c->name;
    if (in_list(session_cols, c->name)) return HOME_SESSION;
    if (in_list(config_cols, c->name)) return HOME_CONFIG;
    if (!strncmp(c->name, "prefill_", 8)) {
        *sql_name = c->name + 8;
        return HOME_PREFILL;
    }
    if (!strncmp(c->name, "decode_", 7)) {
        *sql_name = c->name + 7;
        return HOME_DECODE;
    }
    /* session_id, run_id and gate are the runs table's keys and links, bound separately. */
    if (!strcmp(c->name, "session_id") || !strcmp(c->name, "run_id") ||
        !strcmp(c->name, "gate") || !strcmp(c->name, "run_index"))
        return HOME_KEY;
    return HOME_RUN;
}

static void *field(const void *r, const ec_column *c)
{
    return (char *)r + c->offset;
}

void ec_store_bind_column(sqlite3_stmt *st, int idx, const ec_column *c, const void *r)
{
    const void *p = field(r, c);
    switch (c->type) {
    case EC_COL_TEXT: sqlite3_bind_text(st, idx, p, -1, SQLITE_TRANSIENT); break;
    case EC_COL_REAL: {
        double v = *(const double *)p;
        if (isnan(v))
            sqlite3_bind_null(st, idx);
        else
            sqlite3_bind_double(st, idx, v);
        break;
    }
    case EC_COL_INT: sqlite3_bind_int(st, idx, *(const int *)p); break;
    case EC_COL_LONG: sqlite3_bind_int64(st, idx, *(const long *)p); break;
    case EC_COL_HEX: sqlite3_bind_int64(st, idx, (sqlite3_int64) * (const unsigned long long *)p);
        break;
    case EC_COL_ENERGY_DEF:
        sqlite3_bind_text(st, idx, ec_energy_definition_name(*(const ec_energy_definition *)p), -1,
                          SQLITE_STATIC);
        break;
    case EC_COL_GATE:
        sqlite3_bind_text(st, idx, ec_gate_status_name(*(const ec_gate_status *)p), -1,
                          SQLITE_STATIC);
        break;
    }
}

void ec_store_read_column(sqlite3_stmt *st, int idx, const ec_column *c, void *r)
{
    void *p = field(r, c);
    int null = sqlite3_column_type(st, idx) == SQLITE_NULL;
    const char *text = (const char *)sqlite3_column_text(st, idx);
    switch (c->type) {
    case EC_COL_TEXT: snprintf(p, c->size, "%s", text ? text : ""); break;
    case EC_COL_REAL: *(double *)p = null ? NAN : sqlite3_column_double(st, idx); break;
    case EC_COL_INT: *(int *)p = null ? -1 : sqlite3_column_int(st, idx); break;
    case EC_COL_LONG: *(long *)p = null ? -1 : (long)sqlite3_column_int64(st, idx); break;
    case EC_COL_HEX:
        *(unsigned long long *)p = (unsigned long long)sqlite3_column_int64(st, idx);
        break;
    case EC_COL_ENERGY_DEF:
        if (!text || ec_energy_definition_parse(text, p) != 0)
            *(ec_energy_definition *)p = EC_ENERGY_UNKNOWN;
        break;
    case EC_COL_GATE:
        if (!text || ec_gate_status_parse(text, p) != 0) *(ec_gate_status *)p = EC_GATE_UNKNOWN;
        break;
    }
}

/* ---- loading runs ---- */

/* Columns a file of an older schema lacks (read-only opens do not migrate), with the value
 * its rows have: every run before version 6 ran on one device. */
static const struct {
    const char *name, *value;
    int since;
} added_columns[] = {{"tp", "1", 6},
                     {"interconnect", "''", 6},
                     {"prefill_gpu_energy_per_gpu_j", "''", 6},
                     {"decode_gpu_energy_per_gpu_j", "''", 6}};

static const char *older_value(const char *column, int version)
{
    for (size_t i = 0; i < sizeof added_columns / sizeof *added_columns; i++)
        if (version < added_columns[i].since && !strcmp(column, added_columns[i].name))
            return added_columns[i].value;
    return NULL;
}

/* The SELECT list of every export column, in column order, for a file of schema `version`
 * (free() it). */
static char *select_list(int version)
{
    size_t n;
    const ec_column *c = ec_run_columns(&n);
    size_t cap = 64 * n + 64, len = 0;
    char *sql = malloc(cap);
    if (!sql) return NULL;
    sql[0] = '\0';
    for (size_t j = 0; j < n; j++) {
        const char *name;
        col_home h = home_of(&c[j], &name);
        const char *expr = "";
        char buf[96];
        if (older_value(c[j].name, version))
            expr = older_value(c[j].name, version);
        else if (!strcmp(c[j].name, "run_id"))
            expr = "r.id";
        else if (!strcmp(c[j].name, "gate"))
            expr = "COALESCE(r.gate, c.gate)";
        else if (h == HOME_KEY) /* session_id, run_index */
            expr = !strcmp(c[j].name, "session_id") ? "r.session_id" : "r.run_index";
        else {
            static const char alias[] = {'s', 'c', 'r', 'p', 'd'};
            snprintf(buf, sizeof buf, "%c.%s", alias[h], name);
            expr = buf;
        }
        len += (size_t)snprintf(sql + len, cap - len, "%s%s", j ? ", " : "", expr);
    }
    return sql;
}

static const char load_from[] =
    " FROM runs r JOIN configurations c ON c.id = r.config_id"
    " JOIN sessions s ON s.id = r.session_id"
    " LEFT JOIN phases p ON p.run_id = r.id AND p.phase = 'prefill'"
    " LEFT JOIN phases d ON d.run_id = r.id AND d.phase = 'decode'";

/* Steps st and reads every row into a malloc'd array. */
static int read_records(ec_store *s, sqlite3_stmt *st, ec_run_record **out, size_t *n)
{
    size_t nc, cap = 0;
    const ec_column *c = ec_run_columns(&nc);
    ec_run_record *v = NULL;
    *n = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            ec_run_record *w = realloc(v, cap * sizeof *w);
            if (!w) {
                free(v);
                return ec_set_error("out of memory loading runs");
            }
            v = w;
        }
        ec_run_record *r = &v[(*n)++];
        ec_run_record_init(r);
        for (size_t j = 0; j < nc; j++)
            ec_store_read_column(st, (int)j, &c[j], r);
    }
    if (rc != SQLITE_DONE) {
        free(v);
        *n = 0;
        return db_error(s, "loading runs");
    }
    *out = v;
    return 0;
}

int ec_store_load_runs(ec_store *s, const ec_run_filter *f, ec_run_record **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    char *cols = select_list(s->version);
    if (!cols) return ec_set_error("out of memory");
    char *sql = NULL;
    size_t len = 0;
    FILE *q = open_memstream(&sql, &len);
    if (!q) {
        free(cols);
        return ec_set_error("out of memory");
    }
    fprintf(q,
            "SELECT %s%s WHERE r.attempt = c.attempt"
            " AND (?1 IS NULL OR c.model = ?1) AND (?2 IS NULL OR c.precision = ?2)"
            " AND (?3 IS NULL OR c.kernels = ?3) AND (?4 IS NULL OR c.device = ?4)"
            " AND (?5 IS NULL OR s.gpu_name = ?5 OR s.gpu_uuid = ?5)"
            " AND (?6 IS NULL OR r.session_id = ?6) AND (?7 = 0 OR c.batch = ?7)"
            " ORDER BY r.id",
            cols, load_from);
    fclose(q);
    free(cols);
    sqlite3_stmt *st;
    int rc = prepare(s, sql, &st);
    free(sql);
    if (rc != 0) return -1;
    ec_run_filter any = {0};
    if (!f) f = &any;
    const char *text[] = {f->model, f->precision, f->kernels, f->device, f->gpu, f->session};
    for (int i = 0; i < 6; i++)
        if (text[i]) sqlite3_bind_text(st, i + 1, text[i], -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 7, f->batch);
    rc = read_records(s, st, out, n);
    sqlite3_finalize(st);
    return rc;
}

int ec_store_load_attempt(ec_store *s, long config_id, int attempt, ec_run_record **out,
                          size_t *n)
{
    *out = NULL;
    *n = 0;
    char *cols = select_list(s->version);
    if (!cols) return ec_set_error("out of memory");
    size_t len = strlen(cols) + sizeof load_from + 128;
    char *sql = malloc(len);
    if (!sql) {
        free(cols);
        return ec_set_error("out of memory");
    }
    snprintf(sql, len, "SELECT %s%s WHERE r.config_id = ?1 AND r.attempt = ?2 ORDER BY r.run_index",
             cols, load_from);
    free(cols);
    sqlite3_stmt *st;
    int rc = prepare(s, sql, &st);
    free(sql);
    if (rc != 0) return -1;
    sqlite3_bind_int64(st, 1, config_id);
    sqlite3_bind_int(st, 2, attempt);
    rc = read_records(s, st, out, n);
    sqlite3_finalize(st);
    return rc;
}

/* ---- sessions ---- */

static void random_hex(char *out, size_t nbytes)
{
    unsigned char b[16] = {0};
    if (nbytes > sizeof b) nbytes = sizeof b;
    FILE *f = fopen("/dev/urandom", "rb");
    size_t got = f ? fread(b, 1, nbytes, f) : 0;
    if (f) fclose(f);
    if (got < nbytes) { /* no urandom: time and pid still make ids distinct per process */
        uint64_t x = (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid() ^ (uint64_t)clock();
        for (size_t i = 0; i < nbytes; i++, x >>= 8)
            b[i] = (unsigned char)x;
    }
    for (size_t i = 0; i < nbytes; i++)
        sprintf(out + 2 * i, "%02x", b[i]);
}

int ec_store_begin_session(ec_store *s, ec_session *e)
{
    double now = ec_wall_s();
    ec_iso8601(now, e->started_utc, sizeof e->started_utc);
    time_t t = (time_t)now;
    struct tm tm;
    gmtime_r(&t, &tm);
    char stamp[32], hex[9];
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    random_hex(hex, 4);
    snprintf(e->id, sizeof e->id, "%s-%s", stamp, hex);
    sqlite3_stmt *st;
    if (prepare(s,
                "INSERT INTO sessions (id, started_utc, gpu_name, gpu_uuid, gpu_arch, driver, "
                "cuda, power_limit_w, gpu_count, host_cpu, hostname, ecocompute_version, "
                "git_commit, command_line, spec, idle_s, idle_power_w, idle_method, interval_s, "
                "trace_path) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,"
                "?18,?19,?20)",
                &st) != 0)
        return -1;
    const char *text[] = {e->id,       e->started_utc, e->gpu_name, e->gpu_uuid, e->gpu_arch,
                          e->driver,   e->cuda};
    for (int i = 0; i < 7; i++)
        sqlite3_bind_text(st, i + 1, text[i], -1, SQLITE_STATIC);
    if (isfinite(e->power_limit_w)) sqlite3_bind_double(st, 8, e->power_limit_w);
    sqlite3_bind_int(st, 9, e->gpu_count);
    sqlite3_bind_text(st, 10, e->host_cpu, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 11, e->hostname, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 12, e->ecocompute_version, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 13, e->git_commit, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 14, e->command_line, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 15, e->spec_json, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 16, e->idle_s);
    if (isfinite(e->idle_power_w)) sqlite3_bind_double(st, 17, e->idle_power_w);
    sqlite3_bind_text(st, 18, e->idle_method, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 19, e->interval_s);
    sqlite3_bind_text(st, 20, e->trace_path, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_error(s, "storing the session");
    sqlite3_finalize(st);
    return rc;
}

int ec_store_end_session(ec_store *s, const char *session_id)
{
    char now[32];
    ec_iso8601(ec_wall_s(), now, sizeof now);
    sqlite3_stmt *st;
    if (prepare(s, "UPDATE sessions SET ended_utc = ?1 WHERE id = ?2", &st) != 0) return -1;
    sqlite3_bind_text(st, 1, now, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, session_id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_error(s, "ending the session");
    sqlite3_finalize(st);
    return rc;
}

int ec_store_last_spec(ec_store *s, char **out)
{
    *out = NULL;
    sqlite3_stmt *st;
    if (prepare(s, "SELECT spec FROM sessions WHERE spec IS NOT NULL ORDER BY rowid DESC LIMIT 1",
                &st) != 0)
        return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *out = strdup((const char *)sqlite3_column_text(st, 0));
        if (!*out) rc = SQLITE_NOMEM;
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_NOMEM) return ec_set_error("out of memory");
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : db_error(s, "reading the last session");
}

/* ---- configurations ---- */

/* A stored configuration is a sweep's tag and protocol and the run key's (results.h) model,
 * precision, kernels, device, GPU uuid, batch and lengths; config_where and bind_key spell them
 * in SQL. */
static const char config_where[] =
    "tag = ?1 AND model = ?2 AND precision = ?3 AND kernels = ?4 AND device = ?5 AND gpu_uuid = ?6"
    " AND batch = ?7 AND prompt_len = ?8 AND gen_len = ?9 AND protocol = ?10 AND tp = ?11";

static void bind_key(sqlite3_stmt *st, const ec_config_key *k)
{
    const char *text[] = {k->tag, k->model, k->precision, k->kernels, k->device, k->gpu_uuid};
    for (int i = 0; i < 6; i++)
        sqlite3_bind_text(st, i + 1, text[i], -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 7, k->batch);
    sqlite3_bind_int(st, 8, k->prompt_len);
    sqlite3_bind_int(st, 9, k->gen_len);
    sqlite3_bind_text(st, 10, k->protocol, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 11, k->tp);
}

/* The stored configuration of an imported record: its run key, untagged, under the "imported"
 * protocol. */
static void stored_key_of(ec_config_key *k, const ec_run_record *r)
{
    ec_run_key rk = ec_run_key_of(r);
    memset(k, 0, sizeof *k);
    snprintf(k->model, sizeof k->model, "%s", rk.model);
    snprintf(k->precision, sizeof k->precision, "%s", rk.precision);
    snprintf(k->kernels, sizeof k->kernels, "%s", rk.kernels);
    snprintf(k->device, sizeof k->device, "%s", rk.device);
    snprintf(k->gpu_uuid, sizeof k->gpu_uuid, "%s", rk.gpu_uuid);
    snprintf(k->protocol, sizeof k->protocol, "imported");
    k->params_b = r->params_b;
    k->batch = rk.batch;
    k->prompt_len = rk.prompt_len;
    k->gen_len = rk.gen_len;
    k->tp = rk.tp;
    snprintf(k->interconnect, sizeof k->interconnect, "%s", r->interconnect);
}

/* Finds or creates the configuration (inside the caller's transaction, if any). */
static int config_id(ec_store *s, const ec_config_key *k, long *id)
{
    sqlite3_stmt *st;
    if (prepare(s,
                "INSERT OR IGNORE INTO configurations (tag, model, precision, kernels, device, "
                "gpu_uuid, batch, prompt_len, gen_len, protocol, tp, params_b, runs, "
                "interconnect) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
                "?14)",
                &st) != 0)
        return -1;
    bind_key(st, k);
    if (isfinite(k->params_b)) sqlite3_bind_double(st, 12, k->params_b);
    sqlite3_bind_int(st, 13, k->runs);
    sqlite3_bind_text(st, 14, k->interconnect, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return db_error(s, "storing a configuration");
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT id FROM configurations WHERE %s", config_where);
    if (prepare(s, sql, &st) != 0) return -1;
    bind_key(st, k);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) *id = (long)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : db_error(s, "finding a configuration");
}

int ec_store_config(ec_store *s, const ec_config_key *k, ec_config_state *out)
{
    memset(out, 0, sizeof *out);
    if (config_id(s, k, &out->id) != 0) return -1;
    sqlite3_stmt *st;
    if (prepare(s,
                "SELECT c.attempt, c.gate, c.cv_tok_pct, c.cv_power_pct, (SELECT count(*) FROM "
                "runs r WHERE r.config_id = c.id AND r.attempt = c.attempt) FROM configurations "
                "c WHERE c.id = ?1",
                &st) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, out->id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        out->attempt = sqlite3_column_int(st, 0);
        if (ec_gate_status_parse((const char *)sqlite3_column_text(st, 1), &out->gate) != 0)
            out->gate = EC_GATE_UNKNOWN;
        out->cv_tok_pct = sqlite3_column_type(st, 2) == SQLITE_NULL ? NAN
                                                                    : sqlite3_column_double(st, 2);
        out->cv_power_pct = sqlite3_column_type(st, 3) == SQLITE_NULL
                                ? NAN
                                : sqlite3_column_double(st, 3);
        out->committed = sqlite3_column_int(st, 4);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : db_error(s, "reading a configuration");
}

int ec_store_finish_attempt(ec_store *s, long config_id_, int attempt, ec_gate_status gate,
                            double cv_tok_pct, double cv_power_pct)
{
    const char *sql = gate == EC_GATE_PENDING
                          ? "UPDATE configurations SET attempt = attempt + 1, cv_tok_pct = ?3, "
                            "cv_power_pct = ?4 WHERE id = ?1 AND attempt = ?2 AND gate = 'pending'"
                          : "UPDATE configurations SET gate = ?5, cv_tok_pct = ?3, cv_power_pct = "
                            "?4 WHERE id = ?1 AND attempt = ?2 AND gate = 'pending'";
    sqlite3_stmt *st;
    if (prepare(s, sql, &st) != 0) return -1;
    sqlite3_bind_int64(st, 1, config_id_);
    sqlite3_bind_int(st, 2, attempt);
    if (isfinite(cv_tok_pct)) sqlite3_bind_double(st, 3, cv_tok_pct);
    if (isfinite(cv_power_pct)) sqlite3_bind_double(st, 4, cv_power_pct);
    if (gate != EC_GATE_PENDING)
        sqlite3_bind_text(st, 5, ec_gate_status_name(gate), -1, SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_error(s, "storing a quality gate");
    sqlite3_finalize(st);
    return rc;
}

int ec_store_config_stabilized(ec_store *s, long id, double waited_s, int settled)
{
    sqlite3_stmt *st;
    if (prepare(s, "UPDATE configurations SET stabilize_s = ?2, stabilize_settled = ?3 WHERE id = ?1",
                &st) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_double(st, 2, waited_s);
    sqlite3_bind_int(st, 3, settled);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_error(s, "storing the stabilization");
    sqlite3_finalize(st);
    return rc;
}

/* ---- runs ---- */

void ec_store_fingerprint(const ec_column *c, size_t nc, const void *r, const char *const *skip,
                          char out[17])
{
    uint64_t h = 1469598103934665603ull;
    for (size_t j = 0; j < nc; j++) {
        if (in_list(skip, c[j].name)) continue;
        char buf[256];
        const void *p = field(r, &c[j]);
        switch (c[j].type) {
        case EC_COL_TEXT: snprintf(buf, sizeof buf, "%s", (const char *)p); break;
        case EC_COL_REAL: snprintf(buf, sizeof buf, "%a", *(const double *)p); break;
        case EC_COL_INT: snprintf(buf, sizeof buf, "%d", *(const int *)p); break;
        case EC_COL_LONG: snprintf(buf, sizeof buf, "%ld", *(const long *)p); break;
        case EC_COL_HEX: snprintf(buf, sizeof buf, "%llx", *(const unsigned long long *)p); break;
        case EC_COL_ENERGY_DEF: snprintf(buf, sizeof buf, "%d", *(const int *)p); break;
        case EC_COL_GATE: buf[0] = '\0'; break;
        }
        for (const char *q = buf;; q++) { /* the terminating NUL separates fields */
            h ^= (unsigned char)*q;
            h *= 1099511628211ull;
            if (!*q) break;
        }
    }
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

/* A run's content identity: run_id and gate aside (they change on import and when a
 * configuration finishes), so that re-imports skip known runs. The columns of tensor
 * parallelism count only when they differ from what every earlier row holds, so runs stored or
 * exported before them keep their identity. */
static void fingerprint(const ec_run_record *r, char out[17])
{
    const char *skip[7] = {"run_id", "gate"};
    int n = 2;
    if (r->tp == 1) skip[n++] = "tp";
    if (!r->interconnect[0]) skip[n++] = "interconnect";
    if (!r->prefill.gpu_energy_per_gpu_j[0]) skip[n++] = "prefill_gpu_energy_per_gpu_j";
    if (!r->decode.gpu_energy_per_gpu_j[0]) skip[n++] = "decode_gpu_energy_per_gpu_j";
    skip[n] = NULL;
    size_t nc;
    const ec_column *c = ec_run_columns(&nc);
    ec_store_fingerprint(c, nc, r, skip, out);
}

/* Inserts the run row and its two phases (inside the caller's transaction). gate_override:
 * the row's own gate (imports) or NULL (the configuration's). Returns 1 when the same content
 * is stored already (ignore_duplicate) and nothing was added. */
static int insert_run_rows(ec_store *s, long cfg, const char *session_id, int attempt,
                           const ec_run_record *r, const char *gate_override,
                           int ignore_duplicate, long *run_id)
{
    size_t nc;
    const ec_column *c = ec_run_columns(&nc);
    char names[4096] = "", marks[1024] = "";
    size_t nl = 0, ml = 0;
    int nbind = 0;
    for (size_t j = 0; j < nc; j++) {
        const char *name;
        if (home_of(&c[j], &name) != HOME_RUN) continue;
        nl += (size_t)snprintf(names + nl, sizeof names - nl, ", %s", name);
        ml += (size_t)snprintf(marks + ml, sizeof marks - ml, ", ?%d", 7 + nbind++);
    }
    char sql[6144];
    snprintf(sql, sizeof sql,
             "INSERT %s INTO runs (config_id, session_id, attempt, run_index, fingerprint, gate%s)"
             " VALUES (?1, ?2, ?3, ?4, ?5, ?6%s)",
             ignore_duplicate ? "OR IGNORE" : "", names, marks);
    sqlite3_stmt *st;
    if (prepare(s, sql, &st) != 0) return -1;
    char fp[17];
    fingerprint(r, fp);
    sqlite3_bind_int64(st, 1, cfg);
    sqlite3_bind_text(st, 2, session_id, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, attempt);
    sqlite3_bind_int(st, 4, r->run_index);
    sqlite3_bind_text(st, 5, fp, -1, SQLITE_STATIC);
    if (gate_override) sqlite3_bind_text(st, 6, gate_override, -1, SQLITE_STATIC);
    int k = 7;
    for (size_t j = 0; j < nc; j++) {
        const char *name;
        if (home_of(&c[j], &name) == HOME_RUN) ec_store_bind_column(st, k++, &c[j], r);
    }
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return db_error(s, "storing a run");
    if (sqlite3_changes(s->db) == 0) return 1;
    long id = (long)sqlite3_last_insert_rowid(s->db);
    if (run_id) *run_id = id;
    for (int ph = 0; ph < 2; ph++) {
        col_home want = ph ? HOME_DECODE : HOME_PREFILL;
        nl = ml = 0;
        nbind = 0;
        for (size_t j = 0; j < nc; j++) {
            const char *name;
            if (home_of(&c[j], &name) != want) continue;
            nl += (size_t)snprintf(names + nl, sizeof names - nl, ", %s", name);
            ml += (size_t)snprintf(marks + ml, sizeof marks - ml, ", ?%d", 3 + nbind++);
        }
        snprintf(sql, sizeof sql, "INSERT INTO phases (run_id, phase%s) VALUES (?1, ?2%s)", names,
                 marks);
        if (prepare(s, sql, &st) != 0) return -1;
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, ph ? "decode" : "prefill", -1, SQLITE_STATIC);
        k = 3;
        for (size_t j = 0; j < nc; j++) {
            const char *name;
            if (home_of(&c[j], &name) == want) ec_store_bind_column(st, k++, &c[j], r);
        }
        rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE) return db_error(s, "storing a phase");
    }
    return 0;
}

/* ---- claims: one process measures a configuration at a time ---- */

/* Inside a write transaction: who holds config_id's claim. Returns 1 (this process or nobody
 * alive: free to take), 0 (another live process; *holder says who) or -1. */
static int claim_is_free(ec_store *s, long config_id_, char *holder, size_t holder_len)
{
    sqlite3_stmt *st;
    if (prepare(s, "SELECT host, pid, heartbeat_unix_s FROM claims WHERE config_id = ?1", &st))
        return -1;
    sqlite3_bind_int64(st, 1, config_id_);
    int rc = sqlite3_step(st), is_free = 1;
    if (rc == SQLITE_ROW) {
        const char *host = (const char *)sqlite3_column_text(st, 0);
        long pid = (long)sqlite3_column_int64(st, 1);
        double heartbeat = sqlite3_column_double(st, 2);
        int same_host = host && !strcmp(host, s->host);
        if (same_host && pid == s->pid)
            is_free = 1;
        else if (same_host) /* a process of this host: alive unless kill says it is gone */
            is_free = kill((pid_t)pid, 0) != 0 && errno == ESRCH;
        else
            is_free = ec_wall_s() - heartbeat > EC_STORE_CLAIM_STALE_S;
        if (!is_free && holder) snprintf(holder, holder_len, "pid %ld on %s", pid, host);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return db_error(s, "reading a claim");
    return is_free;
}

/* Inside a write transaction: records this process as config_id's holder, now. */
static int take_claim(ec_store *s, long config_id_)
{
    sqlite3_stmt *st;
    if (prepare(s, "INSERT OR REPLACE INTO claims (config_id, host, pid, heartbeat_unix_s) "
                   "VALUES (?1, ?2, ?3, ?4)",
                &st))
        return -1;
    sqlite3_bind_int64(st, 1, config_id_);
    sqlite3_bind_text(st, 2, s->host, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, s->pid);
    sqlite3_bind_double(st, 4, ec_wall_s());
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_error(s, "storing a claim");
    sqlite3_finalize(st);
    return rc;
}

int ec_store_claim_config(ec_store *s, long config_id_, char *holder, size_t holder_len)
{
    if (exec(s, "BEGIN IMMEDIATE") != 0) return -1;
    int is_free = claim_is_free(s, config_id_, holder, holder_len);
    if (is_free < 0 || (is_free && take_claim(s, config_id_) != 0) || exec(s, "COMMIT") != 0) {
        rollback(s);
        return -1;
    }
    return is_free;
}

int ec_store_release_config(ec_store *s, long config_id_)
{
    sqlite3_stmt *st;
    if (prepare(s, "DELETE FROM claims WHERE config_id = ?1 AND host = ?2 AND pid = ?3", &st))
        return -1;
    sqlite3_bind_int64(st, 1, config_id_);
    sqlite3_bind_text(st, 2, s->host, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, s->pid);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_error(s, "releasing a claim");
    sqlite3_finalize(st);
    return rc;
}

int ec_store_insert_run(ec_store *s, long config_id_, int attempt, const ec_run_record *r,
                        long *run_id)
{
    if (exec(s, "BEGIN IMMEDIATE") != 0) return -1;
    /* The claim is checked in the run's own transaction: a run is stored by its claim's holder
     * only, whatever happened since the claim was taken. */
    char holder[300];
    int is_free = claim_is_free(s, config_id_, holder, sizeof holder);
    if (is_free <= 0 || take_claim(s, config_id_) != 0) {
        if (is_free == 0)
            ec_set_error("%s: configuration %ld is being measured by %s; this run was not stored",
                         s->path, config_id_, holder);
        rollback(s);
        return -1;
    }
    /* The model's size is known once it is open, after its configuration was created. */
    sqlite3_stmt *st;
    int rc = prepare(s, "UPDATE configurations SET params_b = ?2 WHERE id = ?1 AND params_b IS NULL",
                     &st);
    if (rc == 0) {
        sqlite3_bind_int64(st, 1, config_id_);
        if (isfinite(r->params_b)) sqlite3_bind_double(st, 2, r->params_b);
        rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_error(s, "storing the model size");
        sqlite3_finalize(st);
    }
    if (rc != 0 || insert_run_rows(s, config_id_, r->session_id, attempt, r, NULL, 0, run_id) != 0 ||
        exec(s, "COMMIT") != 0) {
        rollback(s);
        return -1;
    }
    return 0;
}

/* ---- imports ---- */

/* The environment columns of a record, compared with an existing session's. */
static int same_environment(ec_store *s, const char *id, const ec_run_record *r, int *found)
{
    size_t nc;
    const ec_column *c = ec_run_columns(&nc);
    char sql[512] = "SELECT ";
    size_t len = strlen(sql);
    for (int i = 0; session_cols[i]; i++)
        len += (size_t)snprintf(sql + len, sizeof sql - len, "%s%s", i ? ", " : "",
                                session_cols[i]);
    snprintf(sql + len, sizeof sql - len, " FROM sessions WHERE id = ?1");
    sqlite3_stmt *st;
    if (prepare(s, sql, &st) != 0) return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st), same = 1;
    *found = rc == SQLITE_ROW;
    if (*found) {
        ec_run_record stored;
        ec_run_record_init(&stored);
        for (int i = 0; session_cols[i]; i++)
            for (size_t j = 0; j < nc; j++)
                if (!strcmp(c[j].name, session_cols[i])) {
                    ec_store_read_column(st, i, &c[j], &stored);
                    const void *a = field(&stored, &c[j]), *b = field(r, &c[j]);
                    if (c[j].type == EC_COL_TEXT)
                        same &= !strcmp(a, b);
                    else /* power_limit_w: NaN equals NaN here */
                        same &= *(const double *)a == *(const double *)b ||
                                (isnan(*(const double *)a) && isnan(*(const double *)b));
                }
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return db_error(s, "reading a session");
    return same;
}

/* The session an imported record belongs to: its own session id when that session is new here
 * or has the same environment, else the id with a hash of the environment appended (two sources
 * that reused an id). Records without a session id group by source and environment. */
static int import_session(ec_store *s, const ec_run_record *r, char *id, size_t idlen)
{
    ec_run_record env;
    ec_run_record_init(&env);
    size_t nc;
    const ec_column *c = ec_run_columns(&nc);
    for (size_t j = 0; j < nc; j++)
        if (in_list(session_cols, c[j].name) || !strcmp(c[j].name, "source"))
            memcpy(field(&env, &c[j]), field(r, &c[j]),
                   c[j].type == EC_COL_TEXT ? c[j].size : sizeof(double));
    char hash[17];
    fingerprint(&env, hash);
    if (r->session_id[0])
        snprintf(id, idlen, "%s", r->session_id);
    else
        snprintf(id, idlen, "import-%s", hash);
    for (int pass = 0; pass < 2; pass++) {
        int found, same = same_environment(s, id, r, &found);
        if (same < 0) return -1;
        if (found && same) return 0;
        if (!found) {
            char sql[1024] = "INSERT INTO sessions (id, imported";
            size_t len = strlen(sql);
            for (int i = 0; session_cols[i]; i++)
                len += (size_t)snprintf(sql + len, sizeof sql - len, ", %s", session_cols[i]);
            len += (size_t)snprintf(sql + len, sizeof sql - len, ") VALUES (?1, 1");
            int k = 2;
            for (int i = 0; session_cols[i]; i++)
                len += (size_t)snprintf(sql + len, sizeof sql - len, ", ?%d", k++);
            snprintf(sql + len, sizeof sql - len, ")");
            sqlite3_stmt *st;
            if (prepare(s, sql, &st) != 0) return -1;
            sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
            k = 2;
            for (int i = 0; session_cols[i]; i++)
                for (size_t j = 0; j < nc; j++)
                    if (!strcmp(c[j].name, session_cols[i])) ec_store_bind_column(st, k++, &c[j], r);
            int rc = sqlite3_step(st);
            sqlite3_finalize(st);
            return rc == SQLITE_DONE ? 0 : db_error(s, "storing an imported session");
        }
        size_t l = strlen(id);
        snprintf(id + (l + 18 < idlen ? l : idlen - 18), 18, "~%s", hash);
    }
    return ec_set_error("session id '%s' is used with two different environments", r->session_id);
}

int ec_store_insert_records_counted(ec_store *s, const ec_run_record *r, size_t n,
                                    size_t *inserted)
{
    size_t added = 0;
    if (exec(s, "BEGIN IMMEDIATE") != 0) return -1;
    for (size_t i = 0; i < n; i++) {
        char session[64];
        ec_config_key k;
        stored_key_of(&k, &r[i]);
        long cfg;
        int rc = import_session(s, &r[i], session, sizeof session);
        if (rc == 0) rc = config_id(s, &k, &cfg);
        if (rc == 0)
            rc = insert_run_rows(s, cfg, session, 0, &r[i], ec_gate_status_name(r[i].gate), 1,
                                 NULL);
        if (rc < 0) {
            rollback(s);
            return ec_error_context("record %zu (%s %s)", i + 1, r[i].model, r[i].precision);
        }
        added += rc == 0;
    }
    if (exec(s, "COMMIT") != 0) {
        rollback(s);
        return -1;
    }
    if (inserted) *inserted = added;
    return 0;
}

int ec_store_insert_records(ec_store *s, const ec_run_record *r, size_t n)
{
    return ec_store_insert_records_counted(s, r, n, NULL);
}

/* ---- traces ---- */

int ec_store_import_trace(ec_store *s, const char *session_id, const char *csv_path)
{
    static const char header[] = EC_TRACE_CSV_HEADER;
    FILE *f = ec_fopen_regular(csv_path);
    if (!f) return ec_error_context("trace");
    char line[512];
    if (!fgets(line, sizeof line, f) || strncmp(line, header, sizeof header - 1) != 0) {
        fclose(f);
        return ec_set_error("%s is not a meter trace (unexpected header)", csv_path);
    }
    sqlite3_stmt *st;
    if (exec(s, "BEGIN IMMEDIATE") != 0) {
        fclose(f);
        return -1;
    }
    if (prepare(s,
                "INSERT INTO traces (session_id, t_s, gpu, energy_mj, power_instant_w, "
                "power_avg_w, sm_mhz, mem_mhz, temp_c, clock_event_reasons, util_gpu_pct, "
                "util_mem_pct, lost) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
                "?13)",
                &st) != 0) {
        rollback(s);
        fclose(f);
        return -1;
    }
    int rc = 0;
    size_t lineno = 1;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        sqlite3_bind_text(st, 1, session_id, -1, SQLITE_STATIC);
        char *p = line;
        for (int col = 0; col < 12; col++) {
            char *end = p + strcspn(p, ",\r\n");
            char sep = *end;
            *end = '\0';
            if (*p) {
                char *e;
                if (col == 8) /* clock_event_reasons, hex */
                    sqlite3_bind_int64(st, 2 + col, (sqlite3_int64)strtoull(p, &e, 16));
                else if (col == 0 || col == 3 || col == 4)
                    sqlite3_bind_double(st, 2 + col, strtod(p, &e));
                else
                    sqlite3_bind_int64(st, 2 + col, strtoll(p, &e, 10));
                if (*e) rc = ec_set_error("%s: line %zu: bad value '%s'", csv_path, lineno, p);
            } else if (col == 11) {
                sqlite3_bind_int(st, 13, 0);
            }
            if (sep != ',' && col < 11) {
                rc = ec_set_error("%s: line %zu: too few fields", csv_path, lineno);
                break;
            }
            p = end + 1;
        }
        if (rc == 0 && sqlite3_step(st) != SQLITE_DONE) rc = db_error(s, "storing the trace");
    }
    sqlite3_finalize(st);
    fclose(f);
    if (rc == 0 && exec(s, "COMMIT") == 0) return 0;
    rollback(s);
    return -1;
}

int ec_store_load_trace(ec_store *s, const char *session_id, ec_session_trace *out)
{
    memset(out, 0, sizeof *out);
    out->idle_power_w = NAN;
    sqlite3_stmt *st;
    if (prepare(s, "SELECT started_utc, idle_power_w FROM sessions WHERE id = ?1", &st) != 0)
        return -1;
    sqlite3_bind_text(st, 1, session_id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const unsigned char *t = sqlite3_column_text(st, 0);
        snprintf(out->started_utc, sizeof out->started_utc, "%s", t ? (const char *)t : "");
        if (sqlite3_column_type(st, 1) != SQLITE_NULL)
            out->idle_power_w = sqlite3_column_double(st, 1);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return db_error(s, "reading a session");
    /* The first GPU of the session: its ticks carry one t_s each (several GPUs' rows of one
     * tick need not share a timestamp, so they are not summed). */
    if (prepare(s,
                "SELECT t_s, power_instant_w FROM traces WHERE session_id = ?1 AND lost = 0 "
                "AND power_instant_w IS NOT NULL AND gpu = (SELECT MIN(gpu) FROM traces "
                "WHERE session_id = ?1) ORDER BY t_s",
                &st) != 0)
        return -1;
    sqlite3_bind_text(st, 1, session_id, -1, SQLITE_STATIC);
    size_t cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (out->n == cap) {
            size_t nc = cap ? cap * 2 : 256;
            ec_trace_point *p = realloc(out->points, nc * sizeof *p);
            if (!p) {
                sqlite3_finalize(st);
                ec_session_trace_free(out);
                return ec_set_error("out of memory");
            }
            out->points = p;
            cap = nc;
        }
        out->points[out->n].t_s = sqlite3_column_double(st, 0);
        out->points[out->n++].power_w = sqlite3_column_double(st, 1);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        ec_session_trace_free(out);
        return db_error(s, "reading a trace");
    }
    return 0;
}

void ec_session_trace_free(ec_session_trace *t)
{
    free(t->points);
    t->points = NULL;
    t->n = 0;
}

/* ---- calibrations ---- */

int ec_store_insert_calibration(ec_store *s, const ec_calibration *c)
{
    sqlite3_stmt *st;
    if (prepare(s,
                "INSERT INTO calibrations (gpu_name, gpu_uuid, driver, timestamp_utc, "
                "ecocompute_version, git_commit, idle_power_w, read_bw_bytes_s, copy_bw_bytes_s, "
                "gemm_fp16_flop_s, read_power_w, read_pj_per_byte_net, copy_power_w, "
                "gemm_power_w) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
                "?14)",
                &st) != 0)
        return -1;
    const char *text[] = {c->gpu_name,           c->gpu_uuid,  c->driver,
                          c->timestamp_utc,      c->ecocompute_version, c->git_commit};
    for (int i = 0; i < 6; i++)
        sqlite3_bind_text(st, i + 1, text[i], -1, SQLITE_STATIC);
    const double v[] = {c->idle_power_w,     c->read.rate,            c->copy.rate,
                        c->gemm.rate,        c->read.avg_power_w,     c->read.pj_per_unit_net,
                        c->copy.avg_power_w, c->gemm.avg_power_w};
    for (int i = 0; i < 8; i++)
        if (isfinite(v[i])) sqlite3_bind_double(st, 7 + i, v[i]);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_error(s, "storing a calibration");
    sqlite3_finalize(st);
    return rc;
}

int ec_store_latest_calibration(ec_store *s, const char *gpu_uuid, ec_calibration *c)
{
    sqlite3_stmt *st;
    if (prepare(s,
                "SELECT gpu_name, gpu_uuid, driver, timestamp_utc, ecocompute_version, "
                "git_commit, idle_power_w, read_bw_bytes_s, copy_bw_bytes_s, gemm_fp16_flop_s, "
                "read_power_w, read_pj_per_byte_net, copy_power_w, gemm_power_w FROM "
                "calibrations WHERE gpu_uuid = ?1 ORDER BY timestamp_utc DESC, id DESC LIMIT 1",
                &st) != 0)
        return -1;
    sqlite3_bind_text(st, 1, gpu_uuid, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        memset(c, 0, sizeof *c);
        struct {
            char *dst;
            size_t len;
        } text[] = {{c->gpu_name, sizeof c->gpu_name},
                    {c->gpu_uuid, sizeof c->gpu_uuid},
                    {c->driver, sizeof c->driver},
                    {c->timestamp_utc, sizeof c->timestamp_utc},
                    {c->ecocompute_version, sizeof c->ecocompute_version},
                    {c->git_commit, sizeof c->git_commit}};
        for (int i = 0; i < 6; i++)
            snprintf(text[i].dst, text[i].len, "%s", (const char *)sqlite3_column_text(st, i));
        double *v[] = {&c->idle_power_w,     &c->read.rate,            &c->copy.rate,
                       &c->gemm.rate,        &c->read.avg_power_w,     &c->read.pj_per_unit_net,
                       &c->copy.avg_power_w, &c->gemm.avg_power_w};
        for (int i = 0; i < 8; i++)
            *v[i] = sqlite3_column_type(st, 6 + i) == SQLITE_NULL ? NAN
                                                                  : sqlite3_column_double(st, 6 + i);
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE) return ec_set_error("no calibration stored for GPU %s", gpu_uuid);
    return rc == SQLITE_ROW ? 0 : db_error(s, "reading a calibration");
}
