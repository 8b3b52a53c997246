/* cli.h — the flags of `spindle` and `python3 -m spindle` (flags.c,
 * parse.c, reload.c) and the start-up sequence both commands share
 * (startup.c). */
#ifndef SPINDLE_CLI_H
#define SPINDLE_CLI_H

#include "process/master.h"
#include "spindle.h"

#include <stdio.h>

#define MAX_BINDS       16
#define MAX_STATIC_MAPS 16
#define CLI_MAX_FLAGS   84
#define CLI_MAX_LIST    16 /* values of one repeatable row */
#define CLI_MAX_LISTS   6  /* repeatable rows (K_LIST) in the flag table */
#define CLI_MAX_ARGS    256
#define CLI_MAX_OWNED   256

/* Which command is parsing (cli_config.role), and which a flag applies to. */
enum { ROLE_BIN = 1, ROLE_PY = 2, ROLE_BOTH = 3 };

/* A repeatable row's values as written, all from one source: a stronger
 * source's list replaces a weaker one's instead of adding to it. */
typedef struct cli_list {
    const char *v[CLI_MAX_LIST];
    int n, source;
} cli_list;

typedef struct cli_config {
    const char *prog; /* NULL for `spindle`; else python3 -m spindle or spindle.run */
    int role;         /* ROLE_BIN or ROLE_PY, from prog */
    int argc;         /* kept to parse again on reload (HUP) */
    char **argv;
    const char *config_file;
    sp_server_options o;
    int http2_off, http2_max_streams; /* server_set_http2: not in o, whose size is ABI */
    int io_backend;                   /* --io-backend: backend_kind (loop_set_default_backend) */
    const char *binds[MAX_BINDS];
    int nbinds;
    const char *app;
    const char *root;                         /* --root DIR: static files */
    const char *static_maps[MAX_STATIC_MAPS]; /* --static-map PREFIX=DIR, as written */
    int nstatic_maps;
    const char *access_log, *access_log_format, *stats;
    const char *error_log; /* --error-log FILE: the log and fd 2; NULL or - stderr */
    const char *sessions, *session_secret;
    int session_cookie_secure; /* --session-cookie-secure */
    const char *stats_bind;    /* --stats-bind ADDR: --stats on its own listener */
    int core_dumps;            /* --core-dumps: workers stay dumpable */
    int check_config;          /* --check-config: load everything, serve nothing */
    int demo;                  /* --demo: the demo routes beside a static root */
    const char *bus;           /* --bus SPEC: topics (sp_bus_configure) */
    int reload;                /* --reload: restart the workers when a source changes */
    const char *reload_extra[CLI_MAX_LIST]; /* --reload-extra-file, as written */
    int nreload_extra;
    const char *user, *group, *chdir;
    /* TLS (tls_setup.c) */
    const char *certfiles[CLI_MAX_LIST], *keyfiles[CLI_MAX_LIST]; /* in pairs */
    int ncertfiles, nkeyfiles;
    const char *ca_certs, *ciphers;
    int cert_reqs;                     /* TLS_VERIFY_* */
    int tls_min_version;               /* 12 or 13; 0: 12 */
    int tls_handshake_timeout_ms;      /* 0: 10 s */
    unsigned char listener_scheme[16]; /* per listener: CLI_BIND_* */
    struct tls_ctx *tls;               /* the contexts the TLS listeners use */
    size_t ws_max_message; /* --ws-max-message: the default WebSocket message limit; 0 1 MiB */
    int ws_deflate_off;    /* --ws-deflate off: permessage-deflate offers declined */
    int ws_deflate_window; /* --ws-deflate-window: 9..15; 0 the default (12) */
    int ws_deflate_mem;    /* --ws-deflate-mem-level: 1..9; 0 the default (5) */
    /* python3 -m spindle only */
    int preload;            /* import the application in the master */
    const char *root_path;  /* SCRIPT_NAME */
    int max_concurrent;     /* requests inside the application at once; 0 no limit */
    int blocking_threads;   /* spindle.run_blocking's thread pool per worker; 0 default (4) */
    const char *interface;  /* --interface: auto, asgi or wsgi (NULL: auto) */
    const char *lifespan;   /* --lifespan: auto, on or off (NULL: auto) */
    int factory;            /* --factory: the spec names a callable returning the app */
    const char *env_file;   /* --env-file: KEY=VALUE lines put into the environment */
    const char *log_config; /* --log-config: Python logging dictConfig (JSON or YAML) */
    master_options mo;
    /* each setting's text and where it came from (0 default .. 3 flag) */
    const char *values[CLI_MAX_FLAGS];
    int sources[CLI_MAX_FLAGS];
    cli_list lists[CLI_MAX_LISTS]; /* the repeatable rows', in table order */
    char *owned[CLI_MAX_OWNED];
    int nowned;
} cli_config;

/* Parses argv (argv[0] is the program name) into c, over the defaults.
 * Settings come from, weakest first: defaults, the --config file (or
 * SPINDLE_CONFIG), SPINDLE_* environment variables, the flags. Returns 0 to
 * run, 1 when --help, --version or --print-config was printed (exit 0), -1
 * on a bad setting (a message naming it was printed; exit 2). Values point
 * into argv (which must outlive c) or into copies c owns. */
int cli_parse(int argc, char **argv, cli_config *c);

/* Frees what cli_parse copied (config file and environment values). */
void cli_free(cli_config *c);

/* Prints the flags (and, for prog NULL, spindle's usage line). */
void cli_usage(FILE *out, const char *prog);

/* Prints spindle(1), the manual page in roff, from the flag table. */
void cli_man(FILE *out, const char *version);
/* VERSION, as the build was given it (only parse.c is compiled with it). */
const char *cli_version(void);
/* The flag table as Markdown: docs/cli.md (--print-reference; checked by
 * tests/suites/docs_reference.sh). */
void cli_reference(FILE *out);

/* What cli_serve serves: the caller's part of the start-up. */
typedef struct cli_app {
    /* Adds the application's routes and hooks to s: after the access log
     * and --stats, before --sessions and --root. 0, or the exit status with
     * a message printed. */
    int (*setup)(sp_server *s, cli_config *c, void *ud);
    /* Optional: takes every request no route and no --root file claims
     * (the WSGI application). Routed last as "/" + asterisk for every
     * method; --root hands it the GET and HEAD requests for paths that
     * name no file. */
    sp_handler fallback;
    void *ud;
    /* Optional: what is served, for the start-up banner: "app:app (ASGI)".
     * Without it the banner names the --app module, --root or the demo. */
    void (*describe)(const cli_config *c, void *ud, char *out, size_t n);
} cli_app;

/* The one start-up sequence of both commands: --chdir, the server, access
 * log and --stats, the application, --sessions, --root, the listeners, the
 * dropped privileges, then the master until a stop signal. c must live as
 * long (reload re-parses into it). Returns the exit status. */
int cli_serve(cli_config *c, const cli_app *app);

/* --env-file: the KEY=VALUE lines of path put into the environment (#
 * comments, blank lines, optional quotes, an `export ` prefix); a key the
 * environment has already keeps its value. quiet: no message. 0, or -1
 * with a message naming the file and line. */
int cli_env_file_load(const char *path, int quiet);

/* What a listener's --bind said (listener_scheme). */
enum { CLI_BIND_ANY, CLI_BIND_HTTP, CLI_BIND_HTTPS, CLI_BIND_SIDE };

/* tls_setup.c: strips "https://" or "http://" from *spec: CLI_BIND_*. */
int cli_bind_scheme(const char **spec);
/* The TLS contexts built (in the master, before the fork) and given to
 * the listeners that speak TLS: those whose --bind says https://, or, when
 * none does and --certfile is given, every --bind listener but http:// and
 * proxy:// ones. 0, or -1 with a message printed (exit 2). */
int cli_tls_setup(cli_config *c, sp_server *s);
/* --user/--group after the listeners and keys (privileges.c): the workers
 * switch after the fork, or this process now with --workers 0. 0, or 1
 * with a message printed. */
int cli_switch_user(cli_config *c, sp_server *s);
/* On HUP: the contexts of fresh built aside (*out; NULL when TLS is off
 * or unchanged in shape). 0, or -1 with the error logged: nothing changes. */
int cli_tls_reload_build(const cli_config *c, const cli_config *fresh, struct tls_ctx **out);
/* Then installed on the TLS listeners (the old contexts freed). */
void cli_tls_reload_install(cli_config *c, const cli_config *fresh, sp_server *s,
                            struct tls_ctx *t);
/* --check-config: the contexts built and freed. 0, or -1 with a message. */
int cli_tls_check(const cli_config *c);
/* --print-config: each certificate's subject, names and expiry. */
void cli_tls_print(const cli_config *c);

/* The master's reload hook (ud: the cli_config, whose mo is mo): parses
 * the same command line and config file again and applies the reloadable
 * settings to s and mo; a changed setting that is not reloadable is logged
 * as needing a restart. 0, or -1 (nothing applied). */
int cli_reload(sp_server *s, master_options *mo, void *ud);

#endif
