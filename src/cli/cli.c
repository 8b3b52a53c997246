/* cli.c — the command-line flags shared by `spindle` and `python3 -m
 * spindle`: one table that parses them and prints --help, so both commands
 * take the same names with the same defaults. */
#include "cli/cli.h"

#include "server/access_log.h"
#include "process/listen_fds.h"
#include "base/log.h"
#include "server/server.h"

#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef enum opt_kind {
    K_BIND,
    K_SECONDS,
    K_INT,
    K_INT0,
    K_SIZE,
    K_FLAG,
    K_STR,
    K_LEVEL,
    K_META, /* --help, --version, --config, --print-config: not settings */
} opt_kind;

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
    {"workers", "N", K_INT0,
     "worker processes (default: one per CPU); 0 serves in the master "
     "process itself, without supervision"},
    {"reuse-port", NULL, K_FLAG,
     "each worker gets its own SO_REUSEPORT socket instead of sharing the master's "
     "(a stopping worker's queued connections are then reset; see README)"},
    {"header-timeout", "SEC", K_SECONDS,
     "whole request head, however trickled; then 408 (default 10)"},
    {"body-timeout", "SEC", K_SECONDS, "silence between request body bytes; then 408 (default 30)"},
    {"send-timeout", "SEC", K_SECONDS,
     "a client not reading the response; then close (default 30)"},
    {"keepalive-timeout", "SEC", K_SECONDS, "idle keep-alive connection; then close (default 5)"},
    {"linger-timeout", "SEC", K_SECONDS, "lingering close after an error answer (default 2)"},
    {"worker-timeout", "SEC", K_SECONDS,
     "a worker whose loop has not turned for this long (a handler blocked it) is killed and "
     "replaced; 0 never (default 30)"},
    {"graceful-timeout", "SEC", K_SECONDS,
     "on TERM, in-flight requests get this long before workers are stopped (default 30)"},
    {"max-requests", "N", K_INT0,
     "a worker serving this many requests is replaced gracefully; 0 never (default 0)"},
    {"max-requests-jitter", "N", K_INT0,
     "a random 0..N added to --max-requests per worker, so they do not all restart at once "
     "(default 0)"},
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
    {"root", "DIR", K_STR, "serve the files under DIR for requests no route claims (default none)"},
    {"app", "FILE.so", K_STR,
     "load a C application (see SP_APP_MODULE in spindle.h) instead of the demo routes"},
    {"sessions", "STORE", K_STR,
     "where sessions live: memory (one worker), sqlite:PATH (all workers of a machine; "
     "survives restarts) or redis://HOST[:PORT] (several machines) (default: none; "
     "sp_session_of fails until one is set)"},
    {"session-secret-file", "FILE", K_STR,
     "the key that signs session cookies (the same file on every machine); without it a "
     "random key is made at start and sessions do not survive a restart"},
    {"access-log", "FILE", K_STR,
     "write an access log to FILE, or - for stdout (default: none, as in gunicorn)"},
    {"access-log-format", "FMT", K_STR,
     "access log line: %h client, %l -, %u -, %t time, %r request line, %s status, %b bytes, "
     "%f referer, %a user agent, %D request time in us, %p pid (default: combined)"},
    {"stats", "PATH", K_STR,
     "serve Prometheus-format counters summed over all workers at PATH, and a status page at "
     "PATH?html (default: off)"},
    {"log-level", "LEVEL", K_LEVEL, "debug, info, warning, error or critical (default info)"},
    {"pid", "FILE", K_STR, "write the master's pid to FILE (default: none)"},
    {"user", "NAME", K_STR, "switch to this user after binding the sockets (default: stay)"},
    {"group", "NAME", K_STR,
     "switch to this group after binding the sockets (default: the "
     "user's)"},
    {"chdir", "DIR", K_STR, "change to DIR before loading the application (default: stay)"},
    {"config", "FILE", K_META,
     "read settings from FILE: 'name = value' lines named as the flags (without --), # "
     "comments; flags > SPINDLE_* environment > file > defaults; reread on HUP"},
    {"print-config", NULL, K_META,
     "print the effective settings and where each came from, then "
     "exit"},
    {"help", NULL, K_META, "this text"},
    {"version", NULL, K_META, "print the version"},
};
#define NFLAGS (sizeof flags / sizeof flags[0])
_Static_assert(NFLAGS <= CLI_MAX_FLAGS, "raise CLI_MAX_FLAGS");

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

static const flag *find_flag(const char *name) {
    for (size_t i = 0; i < NFLAGS; i++)
        if (strcmp(flags[i].name, name) == 0)
            return &flags[i];
    return NULL;
}

/* Converts one setting into the configuration. 0, or -1 with a message. */
static int apply(cli_config *c, const flag *f, const char *arg) {
    sp_server_options *o = &c->o;
    const char *name = f->name;
    long v = 0;
    long long sz = 0;
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
    case K_FLAG:
        if (strcmp(arg, "true") != 0 && strcmp(arg, "false") != 0) {
            fprintf(stderr, "spindle: %s is true or false, not '%s'\n", name, arg);
            return -1;
        }
        v = strcmp(arg, "true") == 0;
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
        o->no_guard_pages = (int)v;
    else if (!strcmp(name, "forwarded-allow-ips"))
        o->forwarded_allow_ips = arg;
    else if (!strcmp(name, "workers"))
        c->mo.workers = (int)v;
    else if (!strcmp(name, "reuse-port"))
        c->mo.reuse_port = (int)v;
    else if (!strcmp(name, "worker-timeout"))
        c->mo.worker_timeout_ms = (int)v;
    else if (!strcmp(name, "graceful-timeout"))
        c->mo.graceful_timeout_ms = (int)v;
    else if (!strcmp(name, "max-requests"))
        c->mo.max_requests = (int)v;
    else if (!strcmp(name, "max-requests-jitter"))
        c->mo.max_requests_jitter = (int)v;
    else if (!strcmp(name, "pid"))
        c->mo.pid_file = arg;
    else if (!strcmp(name, "user"))
        c->user = arg;
    else if (!strcmp(name, "group"))
        c->group = arg;
    else if (!strcmp(name, "chdir"))
        c->chdir = arg;
    else if (!strcmp(name, "app"))
        c->app = arg;
    else if (!strcmp(name, "root"))
        c->root = arg;
    else if (!strcmp(name, "access-log"))
        c->access_log = arg;
    else if (!strcmp(name, "access-log-format"))
        c->access_log_format = arg;
    else if (!strcmp(name, "stats"))
        c->stats = arg;
    else if (!strcmp(name, "sessions"))
        c->sessions = arg;
    else if (!strcmp(name, "session-secret-file"))
        c->session_secret = arg;
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

/* Keeps a copy of s for the life of c (file and environment values). */
static const char *keep(cli_config *c, const char *s, size_t n) {
    if (c->nowned == CLI_MAX_OWNED)
        return NULL;
    char *d = strndup(s, n);
    if (d)
        c->owned[c->nowned++] = d;
    return d;
}

/* Records one setting from a source; a repeatable --bind from a stronger
 * source replaces the weaker source's list instead of adding to it. */
static int set_value(cli_config *c, const flag *f, const char *value, int source) {
    size_t i = (size_t)(f - flags);
    if (f->kind == K_BIND) {
        if (c->bind_source != source) {
            c->nbind_values = 0;
            c->bind_source = source;
        }
        if (c->nbind_values == MAX_BINDS) {
            fprintf(stderr, "spindle: at most %d --bind addresses\n", MAX_BINDS);
            return -1;
        }
        c->bind_values[c->nbind_values++] = value;
        return 0;
    }
    c->values[i] = value;
    c->sources[i] = source;
    return 0;
}

static const char *const source_names[] = {"default", "config file", "environment", "flag"};

/* Reads name = value lines. 0, or -1 with a message naming file and line. */
static int read_file(cli_config *c, const char *path) {
    FILE *fp = fopen(path, "r");
    if (!fp) {
        fprintf(stderr, "spindle: cannot read the config file %s: %s\n", path, strerror(errno));
        return -1;
    }
    char line[4096];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, fp)) {
        lineno++;
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '#' || *p == '\n' || *p == '\0')
            continue;
        char *eq = strchr(p, '=');
        if (!eq) {
            fprintf(stderr, "spindle: %s:%d: want 'name = value'\n", path, lineno);
            rc = -1;
            break;
        }
        char *ne = eq;
        while (ne > p && (ne[-1] == ' ' || ne[-1] == '\t'))
            ne--;
        *ne = '\0';
        char *v = eq + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        size_t vl = strcspn(v, "\r\n");
        while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
            vl--;
        if (vl >= 2 && ((v[0] == '"' && v[vl - 1] == '"') || (v[0] == '\'' && v[vl - 1] == '\''))) {
            v++;
            vl -= 2;
        }
        const flag *f = find_flag(p);
        if (!f || f->kind == K_META) {
            fprintf(stderr,
                    "spindle: %s:%d: unknown setting '%s' (the names are the flags of "
                    "--help, without --)\n",
                    path, lineno, p);
            rc = -1;
            break;
        }
        const char *val = keep(c, v, vl);
        if (!val || set_value(c, f, val, 1) < 0)
            rc = -1;
    }
    fclose(fp);
    return rc;
}

/* SPINDLE_NAME=value: the flag's name upper-cased, '-' as '_'. */
static int read_env(cli_config *c) {
    for (size_t i = 0; i < NFLAGS; i++) {
        if (flags[i].kind == K_META)
            continue;
        char key[64] = "SPINDLE_";
        size_t n = 8;
        for (const char *p = flags[i].name; *p && n < sizeof key - 1; p++)
            key[n++] = *p == '-' ? '_' : (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
        key[n] = '\0';
        const char *v = getenv(key);
        if (!v)
            continue;
        if (flags[i].kind == K_BIND) {
            /* Several addresses, separated by spaces or commas. */
            const char *p = v;
            while (*p) {
                size_t len = strcspn(p, " ,");
                if (len) {
                    const char *val = keep(c, p, len);
                    if (!val || set_value(c, &flags[i], val, 2) < 0)
                        return -1;
                }
                p += len;
                p += strspn(p, " ,");
            }
            continue;
        }
        if (set_value(c, &flags[i], v, 2) < 0)
            return -1;
    }
    return 0;
}

static void print_config(const cli_config *c) {
    for (size_t i = 0; i < NFLAGS; i++) {
        if (flags[i].kind == K_META)
            continue;
        if (flags[i].kind == K_BIND) {
            if (!c->nbind_values)
                printf("bind = 127.0.0.1:8080  # default\n");
            for (int b = 0; b < c->nbind_values; b++)
                printf("bind = %s  # %s\n", c->bind_values[b], source_names[c->bind_source]);
            continue;
        }
        if (c->values[i])
            printf("%s = %s  # %s\n", flags[i].name, c->values[i], source_names[c->sources[i]]);
        else
            printf("# %s: default\n", flags[i].name);
    }
}

void cli_free(cli_config *c) {
    for (int i = 0; i < c->nowned; i++)
        free(c->owned[i]);
    c->nowned = 0;
}

int cli_parse(int argc, char **argv, cli_config *c) {
    const char *prog = c->prog;
    cli_free(c);
    *c = (cli_config){.prog = prog, .argc = argc, .argv = argv};
    sp_server_options_init(&c->o);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    c->mo = (master_options){.workers = ncpu > 0 ? (int)ncpu : 1,
                             .worker_timeout_ms = 30000,
                             .graceful_timeout_ms = 30000};
    struct option longopts[NFLAGS + 1];
    for (size_t i = 0; i < NFLAGS; i++)
        longopts[i] =
            (struct option){flags[i].name, flags[i].arg ? required_argument : no_argument, NULL, 0};
    longopts[NFLAGS] = (struct option){0};
    /* First pass: the flags, kept aside; they win over everything. */
    const char *flag_vals[CLI_MAX_ARGS];
    const flag *flag_defs[CLI_MAX_ARGS];
    int nflag = 0, print = 0;
    const char *config = getenv("SPINDLE_CONFIG");
    optind = 0; /* glibc: start afresh, even if called before */
    opterr = 1;
    int idx, ch;
    while ((ch = getopt_long(argc, argv, "", longopts, &idx)) != -1) {
        if (ch != 0) {
            fprintf(stderr, "spindle: see --help for the flags\n");
            return -1;
        }
        const flag *f = &flags[idx];
        if (!strcmp(f->name, "help")) {
            cli_usage(stdout, c->prog);
            return 1;
        }
        if (!strcmp(f->name, "version")) {
            printf("spindle 0.1 (API %d)\n", SPINDLE_API_VERSION);
            return 1;
        }
        if (!strcmp(f->name, "config")) {
            config = optarg;
            continue;
        }
        if (!strcmp(f->name, "print-config")) {
            print = 1;
            continue;
        }
        if (nflag == CLI_MAX_ARGS) {
            fprintf(stderr, "spindle: too many flags\n");
            return -1;
        }
        flag_defs[nflag] = f;
        flag_vals[nflag++] = f->kind == K_FLAG ? "true" : optarg;
    }
    if (optind < argc) {
        fprintf(stderr, "spindle: unexpected argument '%s'; see --help\n", argv[optind]);
        return -1;
    }
    c->config_file = config;
    if (config && read_file(c, config) < 0)
        return -1;
    if (read_env(c) < 0)
        return -1;
    for (int i = 0; i < nflag; i++)
        if (set_value(c, flag_defs[i], flag_vals[i], 3) < 0)
            return -1;
    if (print) {
        print_config(c);
        return 1;
    }
    for (size_t i = 0; i < NFLAGS; i++)
        if (c->values[i] && apply(c, &flags[i], c->values[i]) < 0)
            return -1;
    const flag *bind = find_flag("bind");
    for (int b = 0; b < c->nbind_values; b++)
        if (apply(c, bind, c->bind_values[b]) < 0)
            return -1;
    if (c->nbinds == 0)
        c->binds[c->nbinds++] = "127.0.0.1:8080";
    return 0;
}

static int same_addr(const net_addr *a, const net_addr *b) {
    if (a->u.sa.sa_family != b->u.sa.sa_family)
        return 0;
    switch (a->u.sa.sa_family) {
    case AF_INET:
        return a->u.in.sin_port == b->u.in.sin_port &&
               a->u.in.sin_addr.s_addr == b->u.in.sin_addr.s_addr;
    case AF_INET6:
        return a->u.in6.sin6_port == b->u.in6.sin6_port &&
               memcmp(&a->u.in6.sin6_addr, &b->u.in6.sin6_addr, 16) == 0;
    case AF_UNIX:
        return strcmp(a->u.un.sun_path, b->u.un.sun_path) == 0;
    default:
        return 0;
    }
}

int cli_listen(const cli_config *c, sp_server *s) {
    int fds[LISTEN_FDS_MAX], used[LISTEN_FDS_MAX] = {0}, systemd;
    int n = listen_fds_inherited(fds, LISTEN_FDS_MAX, &systemd);
    int rc = 0;
    if (systemd && c->nbind_values == 0) {
        /* Socket activation without --bind: serve exactly what systemd passed. */
        for (int i = 0; i < n && rc == 0; i++) {
            rc = server_adopt_listener(s, fds[i]);
            used[i] = rc == 0;
        }
        log_msg(LOG_INFO, "serving %d socket(s) passed by systemd", n);
        goto out;
    }
    for (int b = 0; b < c->nbinds && rc == 0; b++) {
        net_addr want;
        int adopted = 0;
        if (net_parse_addr(c->binds[b], &want) == 0) {
            for (int i = 0; i < n && !adopted; i++) {
                net_addr have;
                have.len = sizeof have.u;
                if (used[i] || getsockname(fds[i], &have.u.sa, &have.len) != 0 ||
                    !same_addr(&want, &have))
                    continue;
                rc = server_adopt_listener(s, fds[i]);
                used[i] = adopted = rc == 0;
            }
        }
        if (adopted) {
            log_msg(LOG_INFO, "listening on %s (socket inherited)", c->binds[b]);
            continue;
        }
        rc = sp_server_listen(s, c->binds[b]);
        if (rc < 0) {
            fprintf(stderr, "spindle: cannot listen on %s: %s%s\n", c->binds[b], strerror(-rc),
                    rc == -EADDRINUSE ? " (another server uses that port; pick another with --bind)"
                    : rc == -EINVAL   ? " (write HOST:PORT, [V6]:PORT or unix:/path)"
                                      : "");
            break;
        }
        log_msg(LOG_INFO, "listening on %s", c->binds[b]);
    }
out:
    for (int i = 0; i < n; i++)
        if (!used[i])
            close(fds[i]); /* inherited but no longer asked for */
    return rc < 0 ? -1 : 0;
}

int cli_setup_server(const cli_config *c, sp_server *s) {
    if (c->access_log_format) {
        char bad;
        if (access_log_check_format(c->access_log_format, &bad) < 0) {
            fprintf(stderr, "spindle: --access-log-format: unknown field %%%c (see --help)\n", bad);
            return -1;
        }
    }
    server_set_access_log(s, c->access_log, c->access_log_format);
    if (c->stats) {
        int rc = c->stats[0] == '/' ? stats_page_add_route(s, c->stats, &c->mo.board) : -EINVAL;
        if (rc < 0) {
            fprintf(stderr, "spindle: --stats %s: %s\n", c->stats,
                    rc == -EINVAL ? "want a path starting with /" : strerror(-rc));
            return -1;
        }
    }
    server_set_timed(s, c->access_log || c->stats);
    return 0;
}

int cli_setup_sessions(const cli_config *c, sp_server *s) {
    if (!c->sessions && !c->session_secret)
        return 0;
    if (c->sessions && strcmp(c->sessions, "memory") == 0 && c->mo.workers > 1)
        log_msg(LOG_WARNING,
                "--sessions memory keeps sessions per worker: with %d workers a "
                "visitor's requests can land on a worker that does not know its "
                "session; use sqlite:PATH",
                c->mo.workers);
    if (sp_sessions_configure(s, c->sessions, c->session_secret) < 0) {
        fprintf(stderr, "spindle: --sessions %s: see the error above\n",
                c->sessions ? c->sessions : "memory");
        return -1;
    }
    return 0;
}

int cli_drop_privileges(const cli_config *c) {
    if (!c->user && !c->group)
        return 0;
    struct passwd *pw = NULL;
    if (c->user) {
        pw = getpwnam(c->user);
        if (!pw) {
            fprintf(stderr, "spindle: --user %s: no such user\n", c->user);
            return -1;
        }
    }
    gid_t gid = pw ? pw->pw_gid : getgid();
    if (c->group) {
        struct group *gr = getgrnam(c->group);
        if (!gr) {
            fprintf(stderr, "spindle: --group %s: no such group\n", c->group);
            return -1;
        }
        gid = gr->gr_gid;
    }
    if ((pw && initgroups(pw->pw_name, gid) != 0) || setgid(gid) != 0 ||
        (pw && setuid(pw->pw_uid) != 0)) {
        fprintf(stderr,
                "spindle: cannot switch to user %s / group %s: %s (start as root to "
                "use --user and --group)\n",
                c->user ? c->user : "-", c->group ? c->group : "-", strerror(errno));
        return -1;
    }
    return 0;
}

int cli_reload(sp_server *s, master_options *mo, void *ud) {
    cli_config *c = ud;
    cli_config *fresh = calloc(1, sizeof *fresh);
    if (!fresh)
        return -1;
    fresh->prog = c->prog;
    if (cli_parse(c->argc, c->argv, fresh) != 0 || server_set_options(s, &fresh->o) < 0) {
        cli_free(fresh);
        free(fresh);
        return -1;
    }
    mo->workers = fresh->mo.workers;
    mo->worker_timeout_ms = fresh->mo.worker_timeout_ms;
    mo->graceful_timeout_ms = fresh->mo.graceful_timeout_ms;
    mo->max_requests = fresh->mo.max_requests;
    mo->max_requests_jitter = fresh->mo.max_requests_jitter;
    /* Strings the server still points to (pid file, logs) stay valid: the
     * old copies are kept, only the new ones are swapped in. */
    cli_config old = *c;
    *c = *fresh;
    c->mo.pid_file = old.mo.pid_file;
    /* What the master set up stays: the shared slots and the reload hook. */
    c->mo.board = old.mo.board;
    c->mo.reload = old.mo.reload;
    c->mo.reload_ud = old.mo.reload_ud;
    free(fresh);
    (void)old; /* its owned strings may still be referenced: kept, a small leak per reload */
    return 0;
}
