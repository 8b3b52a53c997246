/* usage.c — --help of `spindle` and of `python3 -m spindle`, made from the
 * flag table (flags.c) and the alias table (aliases.c): each row with its
 * argument, default and other servers' spellings. */
#include "cli/flags.h"

#include <stdio.h>

/* The rows for role in table order; exact: only those of role alone. */
static void print_rows(FILE *out, int role, int exact) {
    for (size_t i = 0; i < cli_nflags; i++) {
        const flag *f = &cli_flags[i];
        if (exact ? f->role != role : !(f->role & role))
            continue;
        char left[64];
        snprintf(left, sizeof left, "--%s%s%s", f->name, f->arg ? " " : "", f->arg ? f->arg : "");
        fprintf(out, "  %-28s %s%s%s%s\n", left, f->help, f->def ? " (default " : "",
                f->def ? f->def : "", f->def ? ")" : "");
        cli_usage_aliases(out, f);
    }
}

void cli_usage(FILE *out, const char *prog) {
    if (!prog) {
        fprintf(out, "usage: spindle [--bind ADDR]... [options]\n\n"
                     "spindle serves HTTP/1.1, HTTP/2 and TLS with one coroutine per request:\n"
                     "an --app module's C handlers, the files of --root, or with neither the\n"
                     "demo routes: GET / (Hello world!), POST|PUT /echo, GET /sleep?ms=N.\n"
                     "Python applications: spindle MODULE:APP (pip install), or\n"
                     "python3 -m spindle MODULE:APP.\n\n");
        fprintf(out, "options:\n");
        print_rows(out, ROLE_BIN, 0);
        cli_usage_answered(out);
        return;
    }
    fprintf(out, "usage: python3 -m spindle MODULE:CALLABLE [--bind ADDR]... [options]\n\n"
                 "Serves the WSGI or ASGI application CALLABLE (default: application) of\n"
                 "MODULE, which is imported from the current directory.\n\n");
    fprintf(out, "Python options:\n");
    print_rows(out, ROLE_PY, 1);
    fprintf(out, "\noptions:\n");
    print_rows(out, ROLE_BOTH, 1);
    /* What the binary takes and this command refuses, named from the table. */
    fprintf(out, "\nnot taken here (the spindle binary's only: the application is\n"
                 "MODULE:CALLABLE; its WebSockets are spindle.websocket or ASGI's):");
    for (size_t i = 0; i < cli_nflags; i++)
        if (cli_flags[i].role == ROLE_BIN)
            fprintf(out, " --%s", cli_flags[i].name);
    fprintf(out, "\n");
    cli_usage_answered(out);
}
