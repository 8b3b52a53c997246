/* man.c — spindle(1) in roff, printed by `spindle --print-man` from the one
 * flag table (flags.c), so the installed manual page cannot drift from
 * --help: the Makefile writes build/spindle.1 with it. */
#include "cli/flags.h"

#include <string.h>

/* Text as roff: backslashes and hyphens escaped, a leading . or ' guarded. */
static void roff(FILE *out, const char *s) {
    if (*s == '.' || *s == '\'')
        fputs("\\&", out);
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\e", out);
        else if (*s == '-')
            fputs("\\-", out);
        else
            fputc(*s, out);
    }
}

/* One .TP paragraph per row of role (exact: that role alone). */
static void rows(FILE *out, int role, int exact) {
    for (size_t i = 0; i < cli_nflags; i++) {
        const flag *f = &cli_flags[i];
        if (exact ? f->role != role : !(f->role & role))
            continue;
        fputs(".TP\n\\fB\\-\\-", out);
        roff(out, f->name);
        fputs("\\fR", out);
        if (f->arg) {
            fputs(" \\fI", out);
            roff(out, f->arg);
            fputs("\\fR", out);
        }
        fputc('\n', out);
        roff(out, f->help);
        if (f->def) {
            fputs(" (default: ", out);
            roff(out, f->def);
            fputc(')', out);
        }
        if (f->kind != K_META)
            fputs(f->reload ? ". Applied again on HUP." : ". Takes a restart to change.", out);
        fputc('\n', out);
    }
}

static const char *const signals[][2] = {
    {"TERM", "graceful stop: stop accepting, finish in-flight requests, exit 0"},
    {"INT", "graceful the first time, immediate the second"},
    {"QUIT", "immediate stop"},
    {"HUP", "reload: reread the config file, start new workers, drain the old ones"},
    {"USR2", "binary upgrade: a new master from the binary inherits the listening sockets"},
    {"USR1", "reopen the access logs (after logrotate)"},
    {"TTIN, TTOU", "one worker more, one less"},
};

void cli_man(FILE *out, const char *version) {
    fprintf(out, ".TH SPINDLE 1 \"\" \"spindle %s\" \"User Commands\"\n", version);
    fputs(".SH NAME\nspindle \\- coroutine HTTP/1.1 application server\n"
          ".SH SYNOPSIS\n.B spindle\n[\\fB\\-\\-bind\\fR \\fIADDR\\fR]... [\\fIoptions\\fR]\n"
          ".br\n.B python3 \\-m spindle\n\\fIMODULE\\fR:\\fICALLABLE\\fR [\\fIoptions\\fR]\n"
          ".SH DESCRIPTION\n"
          "spindle serves HTTP/1.1 with one coroutine per connection: a master process and\n"
          "worker processes, each running an event loop. It runs C applications loaded with\n"
          "\\fB\\-\\-app\\fR (or, with none, the demo routes: GET / answers Hello world!,\n"
          "POST|PUT /echo echoes the body, GET /sleep?ms=N answers after N ms), and, as\n"
          "\\fBpython3 \\-m spindle\\fR, WSGI applications.\n"
          ".SH OPTIONS\n",
          out);
    rows(out, ROLE_BIN, 0);
    fputs(".SH \"WSGI OPTIONS\"\nTaken by \\fBpython3 \\-m spindle\\fR only, besides the options "
          "above that are not marked as the binary's:\n",
          out);
    rows(out, ROLE_PY, 1);
    fputs(".PP\nThe spindle binary's only:", out);
    for (size_t i = 0; i < cli_nflags; i++)
        if (cli_flags[i].role == ROLE_BIN) {
            fputs(" \\fB\\-\\-", out);
            roff(out, cli_flags[i].name);
            fputs("\\fR", out);
        }
    fputs(".\n.SH CONFIGURATION\n"
          "Each option can also be set in the \\fB\\-\\-config\\fR file, as a\n"
          "\\fIname\\fR = \\fIvalue\\fR line named as the option without \\-\\-, and in the\n"
          "environment as SPINDLE_\\fINAME\\fR (upper case, \\- as _; SPINDLE_BIND takes\n"
          "several addresses separated by spaces or commas; SPINDLE_CONFIG names the file).\n"
          "Flags win over the environment, which wins over the file, which wins over the\n"
          "defaults; \\fB\\-\\-print\\-config\\fR shows the result.\n"
          ".SH SIGNALS\nSent to the master:\n",
          out);
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        fprintf(out, ".TP\n.B %s\n%s\n", signals[i][0], signals[i][1]);
    fputs(".SH FILES\n.TP\n.I /etc/spindle.conf\nthe configuration the systemd unit reads\n"
          ".TP\n.I spindle.service, spindle.socket\nsystemd units (Type=notify, reload with HUP, "
          "socket activation)\n"
          ".SH \"SEE ALSO\"\nthe README and docs/ARCHITECTURE.md of the source tree; spindle.h, "
          "the C API\n",
          out);
}
