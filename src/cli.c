/* cli.c — the command-line flags shared by `spindle` and `python3 -m
 * spindle`: one table that parses them and prints --help, so both commands
 * take the same names with the same defaults. */
#include "cli.h"

#include "log.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


typedef enum opt_kind { K_BIND, K_SECONDS, K_INT, K_INT0, K_SIZE, K_FLAG, K_STR, K_LEVEL } opt_kind;

typedef struct flag {
    const char *name;
    const char *arg;
    opt_kind kind;
    const char *help;
} flag;

static const flag flags[] = {
    {"bind", "ADDR", K_BIND,
     "listen on ADDR: HOST:PORT, [V6]:PORT, :PORT or unix:/path; repeatable "
     "(default 127.0.0.1:8080)"},
    {"header-timeout", "SEC", K_SECONDS,
     "whole request head, however trickled; then 408 (default 10)"},
    {"body-timeout", "SEC", K_SECONDS, "silence between request body bytes; then 408 (default 30)"},
    {"send-timeout", "SEC", K_SECONDS,
     "a client not reading the response; then close (default 30)"},
    {"keepalive-timeout", "SEC", K_SECONDS, "idle keep-alive connection; then close (default 5)"},
    {"linger-timeout", "SEC", K_SECONDS, "lingering close after an error answer (default 2)"},
    {"max-connections", "N", K_INT,
     "open connections per worker; more wait in the backlog "
     "(default 10000, at most ulimit -n less 32)"},
    {"backlog", "N", K_INT, "listen backlog (default 4096; the kernel caps it at somaxconn)"},
    {"max-head-size", "BYTES", K_SIZE, "request line and headers; then 431 (default 8192)"},
    {"max-header-count", "N", K_INT, "header fields; then 431 (default 100, at most 1000)"},
    {"max-target-length", "BYTES", K_SIZE, "request-target; then 414 (default 8000)"},
    {"max-body-size", "BYTES", K_SIZE,
     "request body; then 413 (default 0: no limit; bodies are "
     "streamed, never held in memory)"},
    {"drain-limit", "BYTES", K_SIZE,
     "unread body discarded to keep a connection; beyond it the "
     "connection closes (default 262144)"},
    {"pipeline-burst", "N", K_INT, "pipelined requests served before yielding (default 16)"},
    {"stack-size", "BYTES", K_SIZE, "coroutine stack (default 65536)"},
    {"no-guard-pages", NULL, K_FLAG,
     "coroutine stacks without guard pages: one memory mapping each "
     "instead of two (see README, Limits)"},
    {"forwarded-allow-ips", "LIST", K_STR,
     "proxies trusted for Forwarded / X-Forwarded-For: "
     "IPs and CIDRs, comma-separated, or * (default none)"},
    {"workers", "N", K_INT0,
     "worker processes (default: one per CPU); 0 serves in the master "
     "process itself, without supervision"},
    {"worker-timeout", "SEC", K_SECONDS,
     "a worker whose loop has not turned for this long (a "
     "handler blocked it) is killed and replaced; 0 never "
     "(default 30)"},
    {"graceful-timeout", "SEC", K_SECONDS,
     "on TERM, in-flight requests get this long before "
     "workers are stopped (default 30)"},
    {"app", "FILE.so", K_STR,
     "load a C application (see SP_APP_MODULE in spindle.h) instead of "
     "the demo routes"},
    {"log-level", "LEVEL", K_LEVEL, "debug, info, warning, error or critical (default info)"},
    {"help", NULL, K_FLAG, "this text"},
    {"version", NULL, K_FLAG, "print the version"},
};
#define NFLAGS (sizeof flags / sizeof flags[0])

void cli_usage(FILE *out, const char *prog) {
    if (!prog)
        fprintf(out, "usage: spindle [--bind ADDR]... [options]\n\n"
                     "spindle serves HTTP/1.1 with one coroutine per connection. With no\n"
                     "application it serves the demo routes: GET / (Hello world!), POST|PUT\n"
                     "/echo, GET /sleep?ms=N.\n\n");
    fprintf(out, "options:\n");
    for (size_t i = 0; i < NFLAGS; i++) {
        char left[64];
        snprintf(left, sizeof left, "--%s%s%s", flags[i].name, flags[i].arg ? " " : "",
                 flags[i].arg ? flags[i].arg : "");
        fprintf(out, "  %-28s %s\n", left, flags[i].help);
    }
}

/* Parses "1.5" seconds into ms; -1 on error. */
static long parse_seconds(const char *s) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || v < 0 || v > 86400 * 365)
        return -1;
    return (long)(v * 1000 + 0.5);
}

static long long parse_size(const char *s) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || v < 0)
        return -1;
    switch (*end) {
    case 'k':
    case 'K':
        v <<= 10;
        end++;
        break;
    case 'm':
    case 'M':
        v <<= 20;
        end++;
        break;
    case 'g':
    case 'G':
        v <<= 30;
        end++;
        break;
    default:
        break;
    }
    return *end ? -1 : v;
}

static int apply(sp_server_options *o, const char *name, const char *arg, cli_config *c) {
    long v = 0;
    long long sz = 0;
    const flag *f = NULL;
    for (size_t i = 0; i < NFLAGS; i++)
        if (strcmp(flags[i].name, name) == 0)
            f = &flags[i];
    if (!f)
        return -1;
    switch (f->kind) {
    case K_SECONDS:
        if ((v = parse_seconds(arg)) < 0 || v > 0x7fffffff) {
            fprintf(stderr, "spindle: --%s wants seconds (e.g. 10 or 0.5), not '%s'\n", name, arg);
            return -1;
        }
        break;
    case K_INT:
    case K_INT0: {
        char *end;
        v = strtol(arg, &end, 10);
        long min = f->kind == K_INT0 ? 0 : 1;
        if (end == arg || *end || v < min || v > 10000000) {
            fprintf(stderr, "spindle: --%s wants a whole number from %ld up, not '%s'\n", name, min,
                    arg);
            return -1;
        }
        break;
    }
    case K_SIZE:
        if ((sz = parse_size(arg)) < 0) {
            fprintf(stderr, "spindle: --%s wants a size in bytes (e.g. 8192, 64k, 1m), not '%s'\n",
                    name, arg);
            return -1;
        }
        break;
    default:
        break;
    }
    if (!strcmp(name, "bind")) {
        if (c->nbinds == MAX_BINDS) {
            fprintf(stderr, "spindle: at most %d --bind addresses\n", MAX_BINDS);
            return -1;
        }
        c->binds[c->nbinds++] = arg;
    } else if (!strcmp(name, "header-timeout"))
        o->header_timeout_ms = (int)v;
    else if (!strcmp(name, "body-timeout"))
        o->body_timeout_ms = (int)v;
    else if (!strcmp(name, "send-timeout"))
        o->send_timeout_ms = (int)v;
    else if (!strcmp(name, "keepalive-timeout"))
        o->keepalive_timeout_ms = (int)v;
    else if (!strcmp(name, "linger-timeout"))
        o->linger_timeout_ms = (int)v;
    else if (!strcmp(name, "max-connections"))
        o->max_connections = (int)v;
    else if (!strcmp(name, "backlog"))
        o->backlog = (int)v;
    else if (!strcmp(name, "max-head-size"))
        o->head_max = (size_t)sz;
    else if (!strcmp(name, "max-header-count"))
        o->fields_max = (size_t)v;
    else if (!strcmp(name, "max-target-length"))
        o->target_max = (size_t)sz;
    else if (!strcmp(name, "max-body-size"))
        o->body_max = (uint64_t)sz;
    else if (!strcmp(name, "drain-limit"))
        o->drain_max = (uint64_t)sz;
    else if (!strcmp(name, "pipeline-burst"))
        o->pipeline_burst = (int)v;
    else if (!strcmp(name, "stack-size"))
        o->stack_size = (size_t)sz;
    else if (!strcmp(name, "no-guard-pages"))
        o->no_guard_pages = 1;
    else if (!strcmp(name, "forwarded-allow-ips"))
        o->forwarded_allow_ips = arg;
    else if (!strcmp(name, "workers"))
        c->mo.workers = (int)v;
    else if (!strcmp(name, "worker-timeout"))
        c->mo.worker_timeout_ms = (int)v;
    else if (!strcmp(name, "graceful-timeout"))
        c->mo.graceful_timeout_ms = (int)v;
    else if (!strcmp(name, "app"))
        c->app = arg;
    else if (!strcmp(name, "log-level")) {
        int lv = log_parse_level(arg);
        if (lv < 0) {
            fprintf(stderr,
                    "spindle: --log-level is one of debug, info, warning, error, "
                    "critical, not '%s'\n",
                    arg);
            return -1;
        }
        log_set_level((log_level)lv);
    }
    return 0;
}

int cli_parse(int argc, char **argv, cli_config *c) {
    sp_server_options_init(&c->o);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    c->nbinds = 0;
    c->app = NULL;
    c->mo = (master_options){.workers = ncpu > 0 ? (int)ncpu : 1,
                             .worker_timeout_ms = 30000,
                             .graceful_timeout_ms = 30000};
    struct option longopts[NFLAGS + 1];
    for (size_t i = 0; i < NFLAGS; i++)
        longopts[i] = (struct option){flags[i].name, flags[i].arg ? required_argument : no_argument,
                                      NULL, 0};
    longopts[NFLAGS] = (struct option){0};
    optind = 0; /* glibc: start afresh, even if called before */
    opterr = 1;
    int idx;
    int ch;
    while ((ch = getopt_long(argc, argv, "", longopts, &idx)) != -1) {
        if (ch != 0) {
            fprintf(stderr, "spindle: see --help for the flags\n");
            return -1;
        }
        const char *name = longopts[idx].name;
        if (!strcmp(name, "help")) {
            cli_usage(stdout, c->prog);
            return 1;
        }
        if (!strcmp(name, "version")) {
            printf("spindle 0.1 (API %d)\n", SPINDLE_API_VERSION);
            return 1;
        }
        if (apply(&c->o, name, optarg, c) < 0)
            return -1;
    }
    if (optind < argc) {
        fprintf(stderr, "spindle: unexpected argument '%s'; see --help\n", argv[optind]);
        return -1;
    }
    if (c->nbinds == 0)
        c->binds[c->nbinds++] = "127.0.0.1:8080";
    return 0;
}

int cli_listen(const cli_config *c, sp_server *s) {
    for (int i = 0; i < c->nbinds; i++) {
        int rc = sp_server_listen(s, c->binds[i]);
        if (rc < 0) {
            fprintf(stderr, "spindle: cannot listen on %s: %s%s\n", c->binds[i], strerror(-rc),
                    rc == -EADDRINUSE ? " (another server uses that port; pick another with --bind)"
                    : rc == -EINVAL   ? " (write HOST:PORT, [V6]:PORT or unix:/path)"
                                      : "");
            return -1;
        }
        log_msg(LOG_INFO, "listening on %s", c->binds[i]);
    }
    return 0;
}
