/* cli.h — the flags of `spindle` and `python3 -m spindle` (cli.c). */
#ifndef SPINDLE_CLI_H
#define SPINDLE_CLI_H

#include "process/master.h"
#include "spindle.h"

#include <stdio.h>

#define MAX_BINDS     16
#define CLI_MAX_FLAGS 64
#define CLI_MAX_ARGS  256
#define CLI_MAX_OWNED 256

typedef struct cli_config {
    const char *prog; /* NULL for `spindle`; else the usage line is the caller's */
    int argc;         /* kept to parse again on reload (HUP) */
    char **argv;
    const char *config_file;
    sp_server_options o;
    const char *binds[MAX_BINDS];
    int nbinds;
    const char *app;
    const char *root; /* --root DIR: static files */
    const char *access_log, *access_log_format, *stats;
    const char *sessions, *session_secret;
    const char *user, *group, *chdir;
    master_options mo;
    /* each setting's text and where it came from (0 default .. 3 flag) */
    const char *values[CLI_MAX_FLAGS];
    int sources[CLI_MAX_FLAGS];
    const char *bind_values[MAX_BINDS];
    int nbind_values, bind_source;
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

/* Sets up every --bind address on s: a socket inherited from systemd or an
 * upgrading master when one matches, else a new one. With socket activation
 * and no --bind, exactly the sockets systemd passed. 0, or -1 with a
 * message printed. */
int cli_listen(const cli_config *c, sp_server *s);

/* The access log, --stats route and request timing on s (before the
 * application's routes, so the stats path wins). 0, or -1 with a message. */
int cli_setup_server(const cli_config *c, sp_server *s);

/* --sessions / --session-secret-file, after the application's routes (so
 * the flags override its choice). 0, or -1 with a message. */
int cli_setup_sessions(const cli_config *c, sp_server *s);

/* --user / --group, after binding. 0, or -1 with a message printed. */
int cli_drop_privileges(const cli_config *c);

/* The master's reload hook (ud: the cli_config): parses the same command
 * line and config file again into s and mo. */
int cli_reload(sp_server *s, master_options *mo, void *ud);

#endif
