/* aliases.c — uvicorn's and gunicorn's spellings of spindle's flags, in one
 * table (the parser maps them, --help lists them), the ones that mean
 * something else answered with spindle's way, and the "did you mean" hint
 * for an unknown flag. Command line only: files and SPINDLE_* keep spindle's
 * names, which no other server's configuration shares. */
#include "cli/flags.h"

#include <string.h>

#define GU "gunicorn"
#define UV "uvicorn"

/* clang-format off */
const flag_alias cli_aliases[] = {
    /* The same meaning: mapped. */
    {"-b", NULL, AL_SAME, "bind", NULL, GU},
    {"--host", "HOST", AL_HOST, "bind", "127.0.0.1", UV},
    {"--port", "PORT", AL_PORT, "bind", "8000", UV},
    {"--uds", "PATH", AL_PREFIX, "bind", "unix:", UV},
    {"-w", NULL, AL_SAME, "workers", NULL, GU},
    {"-h", NULL, AL_SAME, "help", NULL, GU},
    {"-v", NULL, AL_SAME, "version", NULL, GU},
    {"-t", NULL, AL_SAME, "worker-timeout", NULL, GU},
    {"--timeout", NULL, AL_SAME, "worker-timeout", NULL, GU},
    {"--keep-alive", NULL, AL_SAME, "keepalive-timeout", NULL, GU},
    {"--timeout-keep-alive", NULL, AL_SAME, "keepalive-timeout", NULL, UV},
    {"--timeout-graceful-shutdown", NULL, AL_SAME, "graceful-timeout", NULL, UV},
    {"--limit-max-requests", NULL, AL_SAME, "max-requests", NULL, UV},
    {"--worker-connections", NULL, AL_SAME, "max-connections", NULL, GU},
    {"--limit-request-fields", NULL, AL_SAME, "max-header-count", NULL, GU},
    {"--ssl-certfile", NULL, AL_SAME, "certfile", NULL, UV},
    {"--ssl-keyfile", NULL, AL_SAME, "keyfile", NULL, UV},
    {"--ssl-ca-certs", NULL, AL_SAME, "ca-certs", NULL, UV},
    {"--ssl-cert-reqs", NULL, AL_SAME, "cert-reqs", NULL, UV},
    {"--ssl-ciphers", NULL, AL_SAME, "ciphers", NULL, UV},
    {"--access-logfile", NULL, AL_SAME, "access-log", NULL, GU},
    {"--error-logfile", NULL, AL_SAME, "error-log", NULL, GU},
    {"--log-file", NULL, AL_SAME, "error-log", NULL, GU},
    {"-u", NULL, AL_SAME, "user", NULL, GU},
    {"-g", NULL, AL_SAME, "group", NULL, GU},
    {"--ws-max-size", NULL, AL_SAME, "ws-max-message", NULL, UV},
    {"--ws-per-message-deflate", NULL, AL_SAME, "ws-deflate", NULL, UV},
    /* uvicorn trusts X-Forwarded-For and -Proto from 127.0.0.1 by default. */
    {"--proxy-headers", NULL, AL_DEFAULT, "forwarded-allow-ips", "127.0.0.1", UV},
    /* A different meaning, or no such choice: answered. */
    {"--http", NULL, AL_ANSWER, NULL,
     "spindle parses HTTP/1.1 itself, in C: there is no parser to choose (HTTP/2: --http2 on|off)",
     UV},
    {"--loop", NULL, AL_ANSWER, NULL,
     "each worker runs asyncio's own loop over spindle's epoll selector: there is no loop to "
     "choose, and uvloop has no place in it", UV},
    {"--ws", NULL, AL_ANSWER, NULL,
     "spindle speaks WebSocket itself, in C: there is no library to choose (its limits: "
     "--ws-max-message, --ws-ping-interval, --ws-idle-timeout)", UV},
    {"--ws-ping-timeout", NULL, AL_ANSWER, NULL,
     "spindle closes a WebSocket silent for --ws-idle-timeout SEC, its pings unanswered", UV},
    {"-k", NULL, AL_ANSWER, NULL,
     "spindle has one kind of worker: every connection a coroutine, WSGI and ASGI applications "
     "alike (--interface asgi|wsgi if auto guesses wrong)", GU},
    {"--worker-class", NULL, AL_ANSWER, NULL,
     "spindle has one kind of worker: every connection a coroutine, WSGI and ASGI applications "
     "alike (--interface asgi|wsgi if auto guesses wrong)", GU},
    {"--threads", NULL, AL_ANSWER, NULL,
     "spindle serves connections in coroutines, not threads; blocking calls go to "
     "spindle.run_blocking's threads (--blocking-threads N)", GU},
    {"--limit-concurrency", NULL, AL_ANSWER, NULL,
     "spindle makes the excess wait instead of answering 503: --max-connections N (per "
     "worker) or --max-concurrent-app-calls N (requests inside the application)", UV},
    {"--limit-request-line", NULL, AL_ANSWER, NULL,
     "spindle limits the request-target, not the whole line: --max-target-length BYTES (and "
     "the whole head: --max-head-size BYTES)", GU},
    {"--limit-request-field_size", NULL, AL_ANSWER, NULL,
     "spindle limits the whole head, not each field: --max-head-size BYTES", GU},
    {"--access-logformat", NULL, AL_ANSWER, NULL,
     "spindle's --access-log-format takes Apache's %h %r %s atoms (see --help), not "
     "gunicorn's %(h)s", GU},
    {"--no-access-log", NULL, AL_ANSWER, NULL,
     "spindle writes no access log unless --access-log FILE asks for one: leave it out", UV},
    {"--no-proxy-headers", NULL, AL_ANSWER, NULL,
     "spindle reads no proxy header unless --forwarded-allow-ips names the proxy: leave both "
     "out", UV},
    {"--proxy-allow-from", NULL, AL_ANSWER, NULL,
     "spindle takes PROXY protocol headers from the peers in --forwarded-allow-ips (one list "
     "for both)", GU},
    {"--ssl-version", NULL, AL_ANSWER, NULL,
     "spindle takes the oldest version accepted: --tls-min-version 1.2|1.3", UV},
    {"--ssl-keyfile-password", NULL, AL_ANSWER, NULL,
     "spindle reads unencrypted keys only (openssl pkey -in KEY -out PLAIN)", UV},
    {"--app-dir", NULL, AL_ANSWER, NULL,
     "spindle imports the application from the current directory: --chdir DIR", UV},
    {"--reload-dir", NULL, AL_ANSWER, NULL,
     "spindle's --reload watches the modules the application imported; other files: "
     "--reload-extra-file FILE", UV},
    {"-D", NULL, AL_ANSWER, NULL,
     "spindle stays in the foreground: run it under systemd or another supervisor (--pid FILE "
     "writes the master's pid)", GU},
    {"--daemon", NULL, AL_ANSWER, NULL,
     "spindle stays in the foreground: run it under systemd or another supervisor (--pid FILE "
     "writes the master's pid)", GU},
    {"-c", NULL, AL_ANSWER, NULL,
     "spindle's --config FILE reads 'name = value' lines (see --help), not gunicorn's Python "
     "file", GU},
};
/* clang-format on */
const size_t cli_naliases = sizeof cli_aliases / sizeof cli_aliases[0];

const flag_alias *cli_find_alias(const char *written) {
    for (size_t i = 0; i < cli_naliases; i++)
        if (strcmp(cli_aliases[i].name, written) == 0)
            return &cli_aliases[i];
    return NULL;
}

/* Edits (insert, delete, change, swap two neighbours) from a to b, both
 * shorter than 64 (the flag names are); longer ones count as far. */
static int distance(const char *a, const char *b) {
    size_t n = strlen(a), m = strlen(b);
    if (n >= 64 || m >= 64)
        return 99;
    int d[64][64];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[n][m];
}

/* The names a hint may offer: role's flags, then the accepted long aliases
 * (match: the alias's name; shown for a slip: its flag's, the canonical
 * spelling, for the ones that are the same flag renamed). */
enum { MAX_CANDIDATES = CLI_MAX_FLAGS + 64 };

static size_t candidates(int role, const char **match, const char **shown) {
    size_t n = 0;
    for (size_t i = 0; i < cli_nflags; i++)
        if (cli_flags[i].role & role) {
            match[n] = shown[n] = cli_flags[i].name;
            n++;
        }
    for (size_t i = 0; i < cli_naliases && n < MAX_CANDIDATES; i++) {
        const flag_alias *a = &cli_aliases[i];
        const flag *f = a->to ? cli_find_flag(a->to) : NULL;
        if (a->kind == AL_ANSWER || a->name[1] != '-' || !f || !(f->role & role))
            continue;
        match[n] = a->name + 2;
        shown[n++] = a->kind == AL_SAME ? f->name : a->name + 2;
    }
    return n;
}

int cli_hint(const char *written, int role, int dashes, char *out, size_t n) {
    const char *key = written + strspn(written, "-");
    size_t klen = strlen(key);
    if (klen < 2) /* -x: too short to be near anything in particular */
        return -1;
    const char *match[MAX_CANDIDATES], *shown[MAX_CANDIDATES];
    size_t nn = candidates(role, match, shown);
    int dist[MAX_CANDIDATES], best = 99, prefixes = 0;
    for (size_t i = 0; i < nn; i++) {
        dist[i] = distance(key, match[i]);
        best = dist[i] < best ? dist[i] : best;
        prefixes += strncmp(match[i], key, klen) == 0;
    }
    /* One slip first (--max-request), then the names it begins (--work:
     * --workers, --worker-timeout), then a few slips, fewer for short names
     * (--bnd; but --max is not --pid). */
    int near = klen <= 3 ? 1 : klen <= 6 ? 2 : 3;
    int by_prefix = best > 1 && prefixes;
    if (!by_prefix && best > near)
        return -1;
    const char *pick[MAX_CANDIDATES];
    size_t np = 0;
    for (size_t i = 0; i < nn; i++) {
        if (by_prefix ? strncmp(match[i], key, klen) != 0 : dist[i] != best)
            continue;
        const char *name = by_prefix ? match[i] : shown[i]; /* what it begins */
        size_t j = 0;
        while (j < np && strcmp(pick[j], name) != 0)
            j++;
        if (j == np)
            pick[np++] = name;
    }
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < np && len < n; i++) {
        const char *sep = i == 0 ? "" : i + 1 == np ? " or " : ", ";
        int w = snprintf(out + len, n - len, "%s%s%s", sep, dashes ? "--" : "", pick[i]);
        if (w < 0)
            break;
        len += (size_t)w;
    }
    return 0;
}

/* One alias as --help shows it: "-b ADDR (gunicorn)", "--uds PATH (uvicorn:
 * --bind unix:PATH)". */
static void print_alias(FILE *out, const flag_alias *a, const flag *f) {
    const char *arg = a->arg ? a->arg : a->kind == AL_DEFAULT ? NULL : f->arg;
    fprintf(out, "%s%s%s (%s", a->name, arg ? " " : "", arg ? arg : "", a->from);
    switch (a->kind) {
    case AL_PREFIX:
        fprintf(out, ": --%s %s%s", f->name, a->text, arg);
        break;
    case AL_HOST:
        fprintf(out, "; with --port: --%s HOST:PORT; default %s", f->name, a->text);
        break;
    case AL_PORT:
        fprintf(out, "; with --host; default %s", a->text);
        break;
    case AL_DEFAULT:
        fprintf(out, ": --%s %s unless set", f->name, a->text);
        break;
    default:
        break;
    }
    fprintf(out, ")");
}

void cli_usage_aliases(FILE *out, const flag *f) {
    for (size_t i = 0; i < cli_naliases; i++) {
        const flag_alias *a = &cli_aliases[i];
        if (a->kind == AL_ANSWER || strcmp(a->to, f->name) != 0)
            continue;
        fprintf(out, "  %-28s also ", "");
        print_alias(out, a, f);
        fprintf(out, "\n");
    }
}

void cli_usage_answered(FILE *out) {
    fprintf(out, "\nother servers' flags that mean something else here are answered with\n"
                 "spindle's way (exit 2):");
    int col = 80;
    for (size_t i = 0; i < cli_naliases; i++) {
        const flag_alias *a = &cli_aliases[i];
        if (a->kind != AL_ANSWER)
            continue;
        if (col + strlen(a->name) + 1 > 78) {
            fprintf(out, "\n ");
            col = 1;
        }
        col += fprintf(out, " %s", a->name);
    }
    fprintf(out, "\n");
}
