/* http.c — the exporter's HTTP endpoint on libmicrohttpd (Debian's libmicrohttpd-dev): GET
 * /metrics serves a scrape, GET /healthz "ok"; one internal polling thread, bounded connections
 * and timeouts. Built without the library, every entry point says so instead. */
#include "ecocompute/exporter.h"

#include "ecocompute/common.h"

#ifdef EC_HAVE_MICROHTTPD

#include <microhttpd.h>
#include <netdb.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* Prometheus' text format; its version parameter tells scrapers which parser to use. */
#define METRICS_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct ec_http_server {
    struct MHD_Daemon *daemon;
    ec_exporter *exporter;
    int port;
};

int ec_http_available(void)
{
    return 1;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
                             char *body, size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned status, const char *text)
{
    char *body = strdup(text);
    return body ? reply(c, status, "text/plain; charset=utf-8", body, strlen(body)) : MHD_NO;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **state)
{
    (void)version;
    (void)upload;
    ec_http_server *h = cls;
    if (*upload_size) {
        *upload_size = 0; /* a body is never expected; drop it */
        return MHD_YES;
    }
    (void)state;
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
    if (!strcmp(url, "/healthz")) return reply_text(c, MHD_HTTP_OK, "ok\n");
    if (!strcmp(url, "/metrics")) {
        size_t len;
        char *text = ec_exporter_scrape(h->exporter, &len);
        if (!text) {
            char msg[256];
            snprintf(msg, sizeof msg, "%s\n", ec_last_error());
            return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, msg);
        }
        return reply(c, MHD_HTTP_OK, METRICS_TYPE, text, len);
    }
    if (!strcmp(url, "/"))
        return reply_text(c, MHD_HTTP_OK, "ecocompute exporter: metrics at /metrics\n");
    return reply_text(c, MHD_HTTP_NOT_FOUND, "not found: try /metrics or /healthz\n");
}

/* "ADDR:PORT" or "[V6ADDR]:PORT", numeric only (a name lookup could hang). */
static int parse_listen(const char *listen, struct addrinfo **out)
{
    char host[128];
    const char *colon = strrchr(listen, ':');
    if (!colon || colon == listen || !colon[1])
        return ec_set_error("--listen '%s': expected ADDR:PORT, e.g. 127.0.0.1:9464", listen);
    size_t hl = (size_t)(colon - listen);
    const char *h = listen;
    if (listen[0] == '[') {
        if (colon[-1] != ']' || hl < 3)
            return ec_set_error("--listen '%s': expected [ADDR]:PORT for IPv6", listen);
        h++;
        hl -= 2;
    }
    if (hl >= sizeof host) return ec_set_error("--listen '%s': address too long", listen);
    memcpy(host, h, hl);
    host[hl] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535)
        return ec_set_error("--listen '%s': port must be 0..65535", listen);
    struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE,
                             .ai_socktype = SOCK_STREAM};
    int rc = getaddrinfo(host, colon + 1, &hints, out);
    if (rc != 0)
        return ec_set_error("--listen '%s': not a numeric address: %s", listen, gai_strerror(rc));
    return 0;
}

ec_http_server *ec_http_start(const char *listen, ec_exporter *x)
{
    struct addrinfo *ai;
    if (parse_listen(listen, &ai) != 0) return NULL;
    ec_http_server *h = calloc(1, sizeof *h);
    if (!h) {
        freeaddrinfo(ai);
        ec_set_error("out of memory");
        return NULL;
    }
    h->exporter = x;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    /* The server thread inherits this mask: SIGTERM must reach the thread that waits for it. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    h->daemon = MHD_start_daemon(flags, 0, NULL, NULL, handle, h, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                                 MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_CONNECTION_TIMEOUT,
                                 10u, MHD_OPTION_END);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    freeaddrinfo(ai);
    if (!h->daemon) {
        ec_set_error("cannot listen on %s (address in use or not local?)", listen);
        free(h);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : -1;
    return h;
}

int ec_http_port(const ec_http_server *h)
{
    return h->port;
}

void ec_http_stop(ec_http_server *h)
{
    if (!h) return;
    MHD_stop_daemon(h->daemon);
    free(h);
}

#else /* no libmicrohttpd */

struct ec_http_server {
    int unused;
};

int ec_http_available(void)
{
    return 0;
}

ec_http_server *ec_http_start(const char *listen, ec_exporter *x)
{
    (void)listen;
    (void)x;
    ec_set_error("this ecocompute was built without libmicrohttpd, so it cannot serve HTTP; "
                 "install libmicrohttpd-dev and rebuild, or use --textfile");
    return NULL;
}

int ec_http_port(const ec_http_server *h)
{
    (void)h;
    return -1;
}

void ec_http_stop(ec_http_server *h)
{
    (void)h;
}

#endif
