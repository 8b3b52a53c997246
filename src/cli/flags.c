/* flags.c — the one flag table of `spindle` and `python3 -m spindle`: each
 * row's name, argument, kind, command, reloadability, field, default and
 * help, and the setters of the rows that need one. Parsing a value by its
 * row's kind is flag_values.c's; --help is usage.c's. */
#include "cli/flags.h"

#include "base/log.h"
#include "loop/loop_backend.h"
#include "server/forwarded.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int add_bind(cli_config *c, const char *text);
static int add_static_map(cli_config *c, const char *text);
static int add_reload_extra(cli_config *c, const char *text);
static int set_log_level(cli_config *c, const char *text);
static int add_certfile(cli_config *c, const char *text);
static int add_keyfile(cli_config *c, const char *text);
static int set_cert_reqs(cli_config *c, const char *text);
static int set_tls_min_version(cli_config *c, const char *text);
static int set_forwarded_header(cli_config *c, const char *text);
static int set_forwarded_allow_ips(cli_config *c, const char *text);
static int set_interface(cli_config *c, const char *text);
static int set_lifespan(cli_config *c, const char *text);
static int set_http2(cli_config *c, const char *text);
static int set_ws_deflate(cli_config *c, const char *text);
static int set_io_backend(cli_config *c, const char *text);
static int set_error_log_format(cli_config *c, const char *text);
static int set_env_file(cli_config *c, const char *text);

/* A field its own setter checks or parses from words: reloaded like a field. */
#define INT_WORDS(field, fn)   T_INT, offsetof(cli_config, field), fn
#define STR_CHECKED(field, fn) T_STR, offsetof(cli_config, field), fn

#define B       ROLE_BOTH
#define HUP     1
#define RESTART 0

/* clang-format off */
const flag cli_flags[] = {
    {"bind", "ADDR", K_LIST, B, RESTART, SET(add_bind), "127.0.0.1:8080",
     "listen on ADDR: HOST:PORT, [V6]:PORT, :PORT or unix:/path; https://ADDR: TLS (needs "
     "--certfile); http://ADDR: plain even with --certfile; proxy://ADDR: its connections "
     "begin with a PROXY protocol header (see --proxy-protocol); repeatable"},
    {"certfile", "FILE", K_LIST, B, HUP, SET(add_certfile), "none",
     "the server's certificate, then its chain (PEM; RSA or ECDSA): the --bind listeners speak "
     "TLS (all of them unless some say https://); repeat with --keyfile, in pairs, for more "
     "names, chosen by SNI from each certificate's names (the first is the default); reread "
     "on HUP"},
    {"keyfile", "FILE", K_LIST, B, HUP, SET(add_keyfile), "in the certfile",
     "the private key of the --certfile of the same rank (PEM, unencrypted); repeatable"},
    {"ca-certs", "FILE", K_STR, B, HUP, STR(ca_certs), "none",
     "the CA certificates (PEM) client certificates are verified against (see --cert-reqs)"},
    {"cert-reqs", "WORD", K_STR, B, HUP, INT_WORDS(cert_reqs, set_cert_reqs), "none",
     "client certificates: none (not asked for), optional (asked; a bad one is refused, none "
     "is fine), required (a connection without a valid one is refused); or 0, 1, 2, as "
     "Python's ssl.CERT_* (gunicorn's and uvicorn's spelling)"},
    {"ciphers", "LIST", K_STR, B, HUP, STR(ciphers), "ECDHE with AES-GCM or CHACHA20",
     "the TLS 1.2 cipher suites, in OpenSSL's syntax (TLS 1.3 keeps its own AEAD suites)"},
    {"tls-min-version", "V", K_STR, B, HUP, INT_WORDS(tls_min_version, set_tls_min_version),
     "1.2", "the oldest TLS version accepted: 1.2 or 1.3 (1.0 and 1.1 are refused)"},
    {"tls-handshake-timeout", "SEC", K_SECONDS, B, HUP, INT(tls_handshake_timeout_ms), "10",
     "the whole TLS handshake, from the connection; then close"},
    {"workers", "N", K_INT0, B, HUP, INT(mo.workers), "one per CPU",
     "worker processes; 0 serves in the master process itself, without supervision"},
    {"reuse-port", NULL, K_FLAG, B, RESTART, INT(mo.reuse_port), NULL,
     "each worker gets its own SO_REUSEPORT socket instead of sharing the master's "
     "(a stopping worker's queued connections are then reset; see docs/operations.md)"},
    {"header-timeout", "SEC", K_SECONDS, B, HUP, INT(o.header_timeout_ms), "10",
     "whole request head, however trickled; then 408"},
    {"body-timeout", "SEC", K_SECONDS, B, HUP, INT(o.body_timeout_ms), "30",
     "silence between request body bytes; then 408"},
    {"body-min-rate", "BYTES", K_SIZE, B, HUP, U64(o.body_min_rate), "1024",
     "slowest request body, in bytes per second: once a --body-timeout of waiting is used "
     "up, each byte buys 1/BYTES s more; then 408; 0: no minimum"},
    {"send-timeout", "SEC", K_SECONDS, B, HUP, INT(o.send_timeout_ms), "30",
     "a client not reading the response; then close"},
    {"keepalive-timeout", "SEC", K_SECONDS, B, HUP, INT(o.keepalive_timeout_ms), "5",
     "idle keep-alive connection; then close"},
    {"linger-timeout", "SEC", K_SECONDS, B, HUP, INT(o.linger_timeout_ms), "2",
     "lingering close after an error answer"},
    {"ws-ping-interval", "SEC", K_SECONDS, B, HUP, INT(o.ws_ping_interval_ms), "20",
     "a WebSocket silent this long gets a ping (answered by any client: its pong is activity)"},
    {"ws-idle-timeout", "SEC", K_SECONDS, B, HUP, INT(o.ws_idle_timeout_ms), "60",
     "a WebSocket silent this long, pings unanswered, is closed with 1001 (going away) and "
     "its slot freed"},
    {"worker-timeout", "SEC", K_SECONDS, B, HUP, INT(mo.worker_timeout_ms), "30",
     "a worker whose loop has not turned for this long (a handler blocked it) dumps the stack "
     "of the blocking code (a Python traceback) to the error log and is killed and replaced; "
     "0 never"},
    {"graceful-timeout", "SEC", K_SECONDS, B, HUP, INT(mo.graceful_timeout_ms), "30",
     "on TERM, in-flight requests get this long before workers are stopped"},
    {"max-requests", "N", K_INT0, B, HUP, INT(mo.max_requests), "0",
     "a worker serving this many requests is replaced gracefully; 0 never"},
    {"max-requests-jitter", "N", K_INT0, B, HUP, INT(mo.max_requests_jitter), "0",
     "a random 0..N added to --max-requests per worker, so they do not all restart at once"},
    {"max-worker-memory", "SIZE", K_SIZE, B, HUP, SIZE(mo.max_worker_memory), "0",
     "a worker whose resident memory (RSS) passes SIZE (e.g. 512m) is replaced gracefully, "
     "checked every second (with --workers 1 or more: the master starts the next); 0 never"},
    {"max-connections", "N", K_INT, B, HUP, INT(o.max_connections),
     "10000, at most ulimit -n less 32", "open connections per worker; more wait in the backlog"},
    {"backlog", "N", K_INT, B, HUP, INT(o.backlog), "4096; the kernel caps it at somaxconn",
     "listen backlog"},
    {"max-head-size", "BYTES", K_SIZE, B, HUP, SIZE(o.head_max), "8192",
     "request line and headers; then 431"},
    {"max-header-count", "N", K_INT, B, HUP, SIZE(o.fields_max), "100, at most 1000",
     "header fields; then 431"},
    {"max-target-length", "BYTES", K_SIZE, B, HUP, SIZE(o.target_max), "8000",
     "request-target; then 414"},
    {"max-body-size", "BYTES", K_SIZE, B, HUP, U64(o.body_max),
     "0: no limit; bodies are streamed, never held in memory", "request body; then 413"},
    {"drain-limit", "BYTES", K_SIZE, B, HUP, U64(o.drain_max), "262144",
     "unread body discarded to keep a connection; beyond it the connection closes"},
    {"http2", "on|off", K_STR, B, HUP, INT_WORDS(http2_off, set_http2), "on",
     "HTTP/2: h2c by prior knowledge on plain listeners (h2 by ALPN on TLS ones), beside "
     "HTTP/1.1 on the same listeners; off: the h2c preface gets 505"},
    {"http2-max-streams", "N", K_INT, B, HUP, INT(http2_max_streams), "100",
     "concurrent streams per HTTP/2 connection (SETTINGS_MAX_CONCURRENT_STREAMS); more are "
     "refused with RST_STREAM REFUSED_STREAM"},
    {"io-backend", "NAME", K_STR, B, RESTART, INT_WORDS(io_backend, set_io_backend), "auto",
     "the event loop: auto (the one that used less CPU per request in the measurements, "
     "io_uring, else epoll), uring (io_uring: polls, removals, sends and closes batched into one "
     "io_uring_enter per loop turn; where the kernel lacks or forbids io_uring, as in many "
     "containers, each worker logs one line and uses epoll) or epoll"},
    {"pipeline-burst", "N", K_INT, B, HUP, INT(o.pipeline_burst), "16",
     "pipelined requests served before yielding"},
    {"stack-size", "BYTES", K_SIZE, B, HUP, SIZE(o.stack_size), "65536", "coroutine stack"},
    {"no-guard-pages", NULL, K_FLAG, B, HUP, INT(o.no_guard_pages), NULL,
     "coroutine stacks without guard pages: one memory mapping each "
     "instead of two (see docs/edges.md, Limits)"},
    {"forwarded-allow-ips", "LIST", K_STR, B, HUP,
     STR_CHECKED(o.forwarded_allow_ips, set_forwarded_allow_ips), "none",
     "proxies trusted for the --forwarded-header: IPs and CIDRs, comma-separated; unix for "
     "peers on a unix socket; * for every peer (unix ones too)"},
    {"forwarded-header", "NAME", K_STR, B, HUP,
     INT_WORDS(o.forwarded_header, set_forwarded_header), "x-forwarded-for",
     "the header the trusted proxy sets, the only one read: x-forwarded-for (with "
     "X-Forwarded-Proto) or forwarded (RFC 7239 for= and proto=)"},
    {"proxy-protocol", NULL, K_FLAG, B, RESTART, INT(o.proxy_protocol), NULL,
     "every connection on the --bind listeners begins with a PROXY protocol header (v1 or "
     "v2, as HAProxy's send-proxy sends) naming the client; only peers in "
     "--forwarded-allow-ips may send it; a connection without one is closed"},
    {"root", "DIR", K_STR, B, RESTART, STR(root), "none",
     "serve the files under DIR for requests no route claims (GET / is DIR's index.html); "
     "under python3 -m spindle, GET and HEAD of a path naming a file under DIR, the "
     "application everything else"},
    {"demo", NULL, K_FLAG, ROLE_BIN, RESTART, INT(demo), NULL,
     "serve the demo routes (GET / Hello world!, POST|PUT /echo, GET /sleep?ms=N) beside "
     "--root or a static map of /; with no application and no root they are served anyway"},
    {"static-map", "PREFIX=DIR", K_LIST, B, RESTART, SET(add_static_map), NULL,
     "serve the files under DIR at URL PREFIX (a path starting with /) with the C static "
     "server, before any route or the application: a missing file is a 404, a method other "
     "than GET or HEAD a 405; repeatable, the longest PREFIX wins"},
    {"app", "FILE.so", K_STR, ROLE_BIN, RESTART, STR(app), NULL,
     "load a C application (see SP_APP_MODULE in spindle.h) instead of the demo routes"},
    {"sessions", "STORE", K_STR, B, RESTART, STR(sessions),
     "none; sp_session_of and spindle.session fail until one is set",
     "where sessions live: memory (one worker), sqlite:PATH (all workers of a machine; "
     "survives restarts) or redis[s]://[[USER]:PASSWORD@]HOST[:PORT][/DB][?tls_ca=PATH] "
     "(several machines; rediss: TLS); C handlers reach "
     "them with sp_session_of, WSGI applications with spindle.session(environ)"},
    {"bus", "SPEC", K_STR, B, RESTART, STR(bus),
     "memory",
     "topics to publish and subscribe (sp_bus_* in spindle.h; spindle.publish/subscribe, "
     "apublish/asubscribe for ASGI): memory (every worker of this machine, through a ring "
     "in shared memory) or redis[s]://[[USER]:PASSWORD@]HOST[:PORT][/DB] (Redis Streams, every "
     "worker of every machine), each with optional ?retain=N&max_message=BYTES&queue=N "
     "limits; off: none (sp_bus_* fail with -ENXIO, spindle.publish with BusError)"},
    {"session-secret-file", "FILE", K_STR, B, RESTART, STR(session_secret), NULL,
     "the key that signs session cookies (the same file on every machine); without it a "
     "random key is made at start and sessions do not survive a restart"},
    {"session-cookie-secure", NULL, K_FLAG, B, RESTART, INT(session_cookie_secure), NULL,
     "mark every session cookie Secure, also on requests that no trusted proxy reports as "
     "https (without it: only those that one does)"},
    {"access-log", "FILE", K_STR, B, RESTART, STR(access_log), "none, as in gunicorn",
     "write an access log to FILE, or - for stdout"},
    {"access-log-format", "FMT", K_STR, B, RESTART, STR(access_log_format), "combined",
     "access log line: %h client, %l -, %u -, %t time, %r request line, %m method, %U path, "
     "%q query, %H protocol, %s status, %b bytes (- for none), %B bytes, %f referer, "
     "%a user agent, %{Name}i request header, %{Name}o response header, %T request time in s, "
     "%M in ms, %D in us, %L in s with decimals, %p pid, %% a percent sign; or json: one JSON object a "
     "line with every field"},
    {"error-log", "FILE", K_STR, B, RESTART, STR(error_log), "stderr",
     "write the server's log, and all else written to stderr (Python tracebacks), to FILE, "
     "appending; reopened on USR1"},
    {"error-log-format", "FMT", K_STR, B, HUP, SET(set_error_log_format), "text",
     "the error log's lines: text (TIME [PID] LEVEL: message) or json (one object a line: "
     "time, level, pid, message), as --access-log-format json"},
    {"stats", "PATH", K_STR, B, RESTART, STR(stats), "off",
     "serve Prometheus-format counters summed over all workers at PATH, and a status page at "
     "PATH?html"},
    {"stats-bind", "ADDR", K_STR, B, RESTART, STR(stats_bind), "none",
     "serve --stats only on this address of its own (127.0.0.1:PORT or unix:/path), never on "
     "the --bind listeners"},
    {"log-level", "LEVEL", K_STR, B, HUP, SET(set_log_level), "info",
     "debug, info, warning, error or critical"},
    {"log-query", NULL, K_FLAG, B, RESTART, INT(mo.board.log_query), NULL,
     "the error log's lines about a stalled or dead worker name its request with the query "
     "string (off: the path only, as a query may carry a token)"},
    {"pid", "FILE", K_STR, B, RESTART, STR(mo.pid_file), "none", "write the master's pid to FILE"},
    {"user", "NAME", K_STR, B, RESTART, STR(user), "stay",
     "the workers run as this user, switched right after the fork; the master keeps its "
     "rights to reread keys on HUP (--workers 0: the process switches after binding and "
     "reading the keys; --preload is refused with it)"},
    {"group", "NAME", K_STR, B, RESTART, STR(group), "the user's",
     "the workers' group, as --user (as root, only with --user)"},
    {"core-dumps", NULL, K_FLAG, B, RESTART, INT(core_dumps), NULL,
     "let workers dump core when they crash (off: a core would carry the session key and "
     "requests in flight)"},
    {"chdir", "DIR", K_STR, B, RESTART, STR(chdir), "stay",
     "change to DIR before loading the application"},
    {"reload", NULL, K_FLAG, B, RESTART, INT(reload), NULL,
     "development: restart the workers gracefully (as on HUP) when a source file of the "
     "application changes (python3 -m spindle: its imported modules outside the standard "
     "library and site-packages; the binary: the --app module, by re-executing itself); a "
     "change that fails to load is logged and the previous workers keep serving"},
    {"reload-extra-file", "FILE", K_LIST, B, RESTART, SET(add_reload_extra), "none",
     "with --reload, watch FILE too (templates, data); repeatable"},
    {"preload", NULL, K_FLAG, ROLE_PY, RESTART, INT(preload), NULL,
     "import the application once in the master, before the workers fork (default: each "
     "worker imports it after the fork)"},
    {"root-path", "PATH", K_STR, ROLE_PY, RESTART, STR(root_path), "empty",
     "SCRIPT_NAME: the URL prefix the application is mounted at"},
    {"max-concurrent-app-calls", "N", K_INT, ROLE_PY, RESTART, INT(max_concurrent), "no limit",
     "requests inside the application at once per worker; more wait their turn"},
    {"interface", "KIND", K_STR, ROLE_PY, RESTART, STR_CHECKED(interface, set_interface), "auto",
     "the application's interface: asgi (ASGI 3: an async callable), wsgi, or auto (asgi when "
     "the callable or its __call__ is a coroutine function)"},
    {"lifespan", "MODE", K_STR, ROLE_PY, RESTART, STR_CHECKED(lifespan, set_lifespan), "auto",
     "ASGI lifespan events per worker: on (a failed startup stops the server), off, or auto "
     "(an application failing the lifespan scope before receiving does not support it)"},
    {"factory", NULL, K_FLAG, ROLE_PY, RESTART, INT(factory), NULL,
     "the application named is a factory: it is called with no arguments (in each worker, or "
     "once with --preload) and what it returns is served; MODULE:create_app() in the "
     "application's name calls one too, with literal arguments if any"},
    {"env-file", "FILE", K_STR, ROLE_PY, RESTART, STR_CHECKED(env_file, set_env_file), "none",
     "put FILE's KEY=VALUE lines (# comments, optional quotes and export prefix) into the "
     "environment before the SPINDLE_* variables are read and the application imported; a "
     "variable already in the environment keeps its value"},
    {"log-config", "FILE", K_STR, ROLE_PY, RESTART, STR(log_config), "none",
     "configure Python's logging from FILE, a logging.config.dictConfig mapping in JSON (YAML "
     "if it ends in .yaml or .yml and PyYAML is installed), in each worker before the "
     "application is imported; spindle's own error log keeps its format"},
    {"ws-max-message", "BYTES", K_SIZE, B, RESTART, SIZE(ws_max_message), "1m",
     "the largest WebSocket message (reassembled) a handler receives (C handlers that pass no "
     "max_message of their own, spindle.websocket, ASGI); a larger one is closed with 1009"},
    {"ws-deflate", "on|off", K_STR, B, RESTART, INT_WORDS(ws_deflate_off, set_ws_deflate), "on",
     "permessage-deflate (RFC 7692): WebSocket messages compressed with zlib when the client "
     "offers it (browsers do); off declines every offer. The message limit counts inflated "
     "bytes"},
    {"ws-deflate-window", "BITS", K_INT, B, RESTART, INT(ws_deflate_window), "12",
     "the LZ77 window, 2^BITS bytes (9..15), of our compressor and of the client's where it "
     "lets us choose: with 12 and --ws-deflate-mem-level 5 a talking socket costs about 50 KB "
     "(15 and 8, zlib's defaults, about 250-300 KB); none while a side without context takeover "
     "is idle"},
    {"ws-deflate-mem-level", "N", K_INT, B, RESTART, INT(ws_deflate_mem), "5",
     "zlib's memLevel (1..9) for our compressor: its hash table and buffers take 2^(N+9) "
     "bytes; higher compresses a little better and faster"},
    {"blocking-threads", "N", K_INT, ROLE_PY, RESTART, INT(blocking_threads), "4",
     "threads per worker for spindle.run_blocking (and name resolution under "
     "spindle.patch()); more calls wait for a free thread"},
    {"config", "FILE", K_META, B, RESTART, NOWHERE, NULL,
     "read settings from FILE: 'name = value' lines named as the flags (without --), # "
     "comments; flags > SPINDLE_* environment > file > defaults; reread on HUP; a setting "
     "of the other command is skipped with a warning"},
    {"check-config", NULL, K_FLAG, B, RESTART, INT(check_config), NULL,
     "load the configuration and the application (import it and check it is callable; "
     "--app: load the module), report what is wrong, exit 0 or 1; binds and serves nothing"},
    {"print-config", NULL, K_META, B, RESTART, NOWHERE, NULL,
     "print the effective settings and where each came from, then exit"},
    {"help", NULL, K_META, B, RESTART, NOWHERE, NULL, "this text"},
    {"print-man", NULL, K_META, ROLE_BIN, RESTART, NOWHERE, NULL,
     "print the manual page spindle(1), in roff, made from this same table (man -l -)"},
    {"print-reference", NULL, K_META, ROLE_BIN, RESTART, NOWHERE, NULL,
     "print docs/cli.md, the command-line reference in Markdown, made from this same table"},
    {"version", NULL, K_META, B, RESTART, NOWHERE, NULL, "print the version"},
};
/* clang-format on */
const size_t cli_nflags = sizeof cli_flags / sizeof cli_flags[0];
_Static_assert(sizeof cli_flags / sizeof cli_flags[0] <= CLI_MAX_FLAGS, "raise CLI_MAX_FLAGS");

const flag *cli_find_flag(const char *name) {
    for (size_t i = 0; i < cli_nflags; i++)
        if (strcmp(cli_flags[i].name, name) == 0)
            return &cli_flags[i];
    return NULL;
}

cli_list *cli_list_of(const cli_config *c, const flag *f) {
    int slot = 0;
    for (const flag *g = cli_flags; g < f; g++)
        slot += g->kind == K_LIST;
    if (slot >= CLI_MAX_LISTS)
        abort(); /* a new repeatable row: raise CLI_MAX_LISTS */
    return (cli_list *)&c->lists[slot];
}

const char *cli_role_name(int role) {
    return role == ROLE_PY ? "python3 -m spindle" : "the spindle binary";
}

size_t cli_field_size(const flag *f) {
    switch (f->type) {
    case T_INT:
        return sizeof(int);
    case T_SIZE:
        return sizeof(size_t);
    case T_U64:
        return sizeof(uint64_t);
    case T_STR:
        return sizeof(const char *);
    default:
        return 0;
    }
}

/* One more value of a repeatable row into v (max of them). 0, or -1 with
 * a message naming what there is too much of. */
static int append(const char **v, int *n, int max, const char *text, const char *what) {
    if (*n == max) {
        fprintf(stderr, "spindle: at most %d %s\n", max, what);
        return -1;
    }
    v[(*n)++] = text;
    return 0;
}

static int add_bind(cli_config *c, const char *text) {
    return append(c->binds, &c->nbinds, MAX_BINDS, text, "--bind addresses");
}

static int add_certfile(cli_config *c, const char *text) {
    return append(c->certfiles, &c->ncertfiles, CLI_MAX_LIST, text, "--certfile files");
}

static int add_keyfile(cli_config *c, const char *text) {
    return append(c->keyfiles, &c->nkeyfiles, CLI_MAX_LIST, text, "--keyfile files");
}

static int set_cert_reqs(cli_config *c, const char *text) {
    static const char *const words[] = {"none", "optional", "required"};
    static const char *const digits[] = {"0", "1", "2"}; /* ssl.CERT_NONE .. CERT_REQUIRED */
    for (int i = 0; i < 3; i++)
        if (strcmp(text, words[i]) == 0 || strcmp(text, digits[i]) == 0) {
            c->cert_reqs = i; /* TLS_VERIFY_NONE, _OPTIONAL, _REQUIRED */
            return 0;
        }
    fprintf(stderr, "spindle: --cert-reqs is none, optional or required, not '%s'\n", text);
    return -1;
}

static int set_tls_min_version(cli_config *c, const char *text) {
    if (strcmp(text, "1.2") == 0 || strcmp(text, "1.3") == 0) {
        c->tls_min_version = text[2] == '2' ? 12 : 13;
        return 0;
    }
    if (strcmp(text, "1.0") == 0 || strcmp(text, "1.1") == 0 || strcmp(text, "1") == 0)
        fprintf(stderr,
                "spindle: --tls-min-version %s: TLS 1.0 and 1.1 are refused (deprecated by RFC "
                "8996, and every current client speaks 1.2); use 1.2 or 1.3\n",
                text);
    else
        fprintf(stderr, "spindle: --tls-min-version is 1.2 or 1.3, not '%s'\n", text);
    return -1;
}

static int add_reload_extra(cli_config *c, const char *text) {
    return append(c->reload_extra, &c->nreload_extra, CLI_MAX_LIST, text,
                  "--reload-extra-file files");
}

/* PREFIX=DIR: the shape checked here, the prefix and the directory at
 * start (startup.c), where the mount says what is wrong with them. */
static int add_static_map(cli_config *c, const char *text) {
    const char *eq = strchr(text, '=');
    if (text[0] != '/' || !eq || !eq[1]) {
        fprintf(stderr,
                "spindle: --static-map wants PREFIX=DIR, PREFIX a URL path starting with / "
                "(e.g. /static=./public), not '%s'\n",
                text);
        return -1;
    }
    return append(c->static_maps, &c->nstatic_maps, MAX_STATIC_MAPS, text, "--static-map mounts");
}

static int set_log_level(cli_config *c, const char *text) {
    int lv = log_parse_level(text);
    if (lv < 0) {
        fprintf(stderr,
                "spindle: --log-level is one of debug, info, warning, error, "
                "critical, not '%s'\n",
                text);
        return -1;
    }
    log_set_level((log_level)lv);
    return 0;
}

static int set_io_backend(cli_config *c, const char *text) {
    int k = backend_kind_parse(text);
    if (k < 0) {
        fprintf(stderr, "spindle: --io-backend is epoll, uring or auto, not '%s'\n", text);
        return -1;
    }
    c->io_backend = k;
    return 0;
}

static int set_http2(cli_config *c, const char *text) {
    if (strcmp(text, "on") == 0)
        c->http2_off = 0;
    else if (strcmp(text, "off") == 0)
        c->http2_off = 1;
    else {
        fprintf(stderr, "spindle: --http2 is on or off, not '%s'\n", text);
        return -1;
    }
    return 0;
}

/* on|off, or uvicorn's true|false (--ws-per-message-deflate). */
static int set_ws_deflate(cli_config *c, const char *text) {
    int on = !strcasecmp(text, "on") || !strcasecmp(text, "true");
    if (!on && strcasecmp(text, "off") && strcasecmp(text, "false")) {
        fprintf(stderr, "spindle: --ws-deflate is on or off, not '%s'\n", text);
        return -1;
    }
    c->ws_deflate_off = !on;
    return 0;
}

static int set_forwarded_header(cli_config *c, const char *text) {
    if (strcmp(text, "x-forwarded-for") == 0)
        c->o.forwarded_header = SP_FORWARDED_X_FORWARDED_FOR;
    else if (strcmp(text, "forwarded") == 0)
        c->o.forwarded_header = SP_FORWARDED_FORWARDED;
    else {
        fprintf(stderr,
                "spindle: --forwarded-header is x-forwarded-for or forwarded (the header "
                "your proxy sets), not '%s'\n",
                text);
        return -1;
    }
    return 0;
}

/* Checked here (parsed again by the server) so that a bad list is named at
 * start and on a reload (HUP), before anything is applied. */
static int set_forwarded_allow_ips(cli_config *c, const char *text) {
    fwd_nets scratch = {0};
    int rc = fwd_parse_nets(&scratch, text);
    if (rc == -ENOSPC) {
        fprintf(stderr, "spindle: --forwarded-allow-ips: at most %d networks, not '%s'\n",
                FORWARD_MAX_NETS, text);
        return -1;
    }
    if (rc < 0) {
        fprintf(stderr,
                "spindle: --forwarded-allow-ips wants IP addresses, CIDR networks, unix or *, "
                "separated by commas or spaces, not '%s'\n",
                text);
        return -1;
    }
    c->o.forwarded_allow_ips = text;
    return 0;
}

/* One of a few words, or -1 with a message naming the flag and the words. */
static int one_of(const char *name, const char *text, const char *const *words) {
    for (int i = 0; words[i]; i++)
        if (strcmp(text, words[i]) == 0)
            return 0;
    fprintf(stderr, "spindle: --%s is %s, %s or %s, not '%s'\n", name, words[0], words[1], words[2],
            text);
    return -1;
}

static int set_interface(cli_config *c, const char *text) {
    static const char *const words[] = {"auto", "asgi", "wsgi", NULL};
    if (one_of("interface", text, words) < 0)
        return -1;
    c->interface = text;
    return 0;
}

static int set_lifespan(cli_config *c, const char *text) {
    static const char *const words[] = {"auto", "on", "off", NULL};
    if (one_of("lifespan", text, words) < 0)
        return -1;
    c->lifespan = text;
    return 0;
}

static int set_error_log_format(cli_config *c, const char *text) {
    if (strcmp(text, "text") != 0 && strcmp(text, "json") != 0) {
        fprintf(stderr, "spindle: --error-log-format is text or json, not '%s'\n", text);
        return -1;
    }
    log_set_json(text[0] == 'j');
    return 0;
}

/* The value of an env file's line after '=': unquoted (an inline " #"
 * comment and trailing blanks dropped), 'single' (as written) or "double"
 * (\n, \t, \" and \\ escapes). Written in place; 0, or -1 when a quote is
 * not closed. */
static int env_value(char *v, char **out) {
    char q = *v;
    if (q != '"' && q != '\'') {
        char *end = v + strcspn(v, "\r\n");
        for (char *h = v; (h = strchr(h, '#')) && h < end; h++)
            if (h == v || h[-1] == ' ' || h[-1] == '\t') {
                end = h;
                break;
            }
        while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        *end = '\0';
        *out = v;
        return 0;
    }
    char *r = v + 1, *w = v;
    for (; *r && *r != q; r++) {
        if (q == '"' && *r == '\\' && r[1]) {
            r++;
            *w++ = *r == 'n' ? '\n' : *r == 't' ? '\t' : *r;
        } else
            *w++ = *r;
    }
    if (*r != q)
        return -1;
    *w = '\0';
    *out = v;
    return 0;
}

int cli_env_file_load(const char *path, int quiet) {
    FILE *fp = fopen(path, "r");
    if (!fp) {
        if (!quiet)
            fprintf(stderr, "spindle: --env-file %s: %s\n", path, strerror(errno));
        return -1;
    }
    char line[8192];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, fp)) {
        lineno++;
        char *p = line + strspn(line, " \t");
        if (*p == '#' || *p == '\n' || *p == '\r' || *p == '\0')
            continue;
        if (strncmp(p, "export ", 7) == 0)
            p += 7 + strspn(p + 7, " \t");
        size_t klen = strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
        char *eq = p + klen + strspn(p + klen, " \t");
        char *value;
        if (klen == 0 || (p[0] >= '0' && p[0] <= '9') || *eq != '=' ||
            env_value(eq + 1 + strspn(eq + 1, " \t"), &value) < 0) {
            if (!quiet)
                fprintf(stderr,
                        "spindle: --env-file %s:%d: want KEY=VALUE (a name of letters, "
                        "digits and _; a quoted value closes its quote)\n",
                        path, lineno);
            rc = -1;
            break;
        }
        p[klen] = '\0';
        setenv(p, value, 0); /* the real environment wins, as dotenv and uvicorn do */
    }
    fclose(fp);
    return rc;
}

/* Loaded here for a --config file's env-file (after the SPINDLE_* variables
 * were read: only the application sees those); python3 -m spindle loads a
 * command-line or SPINDLE_ENV_FILE one before parsing (module.c), so this
 * second load changes nothing. */
static int set_env_file(cli_config *c, const char *text) {
    if (cli_env_file_load(text, 0) < 0)
        return -1;
    c->env_file = text;
    return 0;
}
