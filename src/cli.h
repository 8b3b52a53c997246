/* cli.h — the flags of `spindle` and `python3 -m spindle` (cli.c). */
#ifndef SPINDLE_CLI_H
#define SPINDLE_CLI_H

#include "master.h"
#include "spindle.h"

#include <stdio.h>

#define MAX_BINDS 16

typedef struct cli_config {
    const char *prog; /* NULL for `spindle`; else the usage line is the caller's */
    sp_server_options o;
    const char *binds[MAX_BINDS];
    int nbinds;
    const char *app;
    master_options mo;
} cli_config;

/* Parses argv (argv[0] is the program name) into c, over the defaults.
 * Returns 0 to run, 1 when --help or --version was printed (exit 0), -1 on
 * a bad flag (a message naming it was printed; exit 2). Arguments point
 * into argv, which must outlive c. */
int cli_parse(int argc, char **argv, cli_config *c);

/* Prints the flags (and, for prog NULL, spindle's usage line). */
void cli_usage(FILE *out, const char *prog);

/* Binds every --bind address on s. 0, or -1 with a message printed. */
int cli_listen(const cli_config *c, sp_server *s);

#endif
