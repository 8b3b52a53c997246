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

/* Other servers' spellings: those taken, and those answered with spindle's
 * way, as --help lists them (from the alias table). */
static void other_servers(FILE *out) {
    fputs(".SH \"OTHER SERVERS' FLAGS\"\n"
          "uvicorn's and gunicorn's spellings, on the command line only:\n",
          out);
    for (size_t i = 0; i < cli_naliases; i++) {
        const flag_alias *a = &cli_aliases[i];
        fputs(".TP\n\\fB", out);
        roff(out, a->name);
        fputs("\\fR (", out);
        roff(out, a->from);
        fputs(")\n", out);
        if (a->kind == AL_ANSWER) {
            fputs("refused (exit 2): ", out);
            roff(out, a->text);
            fputc('\n', out);
            continue;
        }
        static const char *const how[] = {
            [AL_SAME] = "the same as",
            [AL_PREFIX] = "a value V is",
            [AL_HOST] = "the host of one",
            [AL_PORT] = "the port of one",
            [AL_DEFAULT] = "sets, unless a flag, file or variable does,",
        };
        fprintf(out, "%s \\fB\\-\\-", how[a->kind]);
        roff(out, a->to);
        fputs("\\fR", out);
        if (a->kind == AL_PREFIX || a->kind == AL_DEFAULT) {
            fputc(' ', out);
            roff(out, a->text);
            if (a->kind == AL_PREFIX)
                fputc('V', out);
        } else if (a->kind == AL_HOST || a->kind == AL_PORT) {
            fputs(" HOST:PORT (default ", out);
            roff(out, a->text);
            fputc(')', out);
        }
        fputc('\n', out);
    }
}

void cli_man(FILE *out, const char *version) {
    fprintf(out, ".TH SPINDLE 1 \"\" \"spindle %s\" \"User Commands\"\n", version);
    fputs(".SH NAME\nspindle \\- HTTP/1.1, HTTP/2 and TLS application server for C handlers and "
          "Python (WSGI and ASGI) apps, one coroutine per request\n"
          ".SH SYNOPSIS\n.B spindle\n[\\fB\\-\\-bind\\fR \\fIADDR\\fR]... [\\fIoptions\\fR]\n"
          ".br\n.B python3 \\-m spindle\n\\fIMODULE\\fR:\\fICALLABLE\\fR [\\fIoptions\\fR]\n"
          ".SH DESCRIPTION\n"
          "spindle serves HTTP/1.1 and HTTP/2 (h2 by ALPN over TLS, h2c by prior knowledge),\n"
          "plain or over TLS, and WebSockets, with one coroutine per request: a master process\n"
          "and worker processes, each running an event loop (epoll or io_uring; Linux only).\n"
          "It runs C applications loaded with \\fB\\-\\-app\\fR (or, with none, the demo routes:\n"
          "GET / answers Hello world!, POST|PUT /echo echoes the body, GET /sleep?ms=N answers\n"
          "after N ms), and, as \\fBpython3 \\-m spindle\\fR (or the \\fBspindle\\fR command\n"
          "pip installs), WSGI and ASGI applications.\n"
          ".SH OPTIONS\n",
          out);
    rows(out, ROLE_BIN, 0);
    fputs(".SH \"PYTHON OPTIONS\"\nTaken by \\fBpython3 \\-m spindle\\fR only, besides the options "
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
    fputs(".\n", out);
    other_servers(out);
    fputs(".SH CONFIGURATION\n"
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

/* Text for a Markdown table cell: | * < [ ] and backslashes escaped. */
static void md(FILE *out, const char *s) {
    for (; *s; s++) {
        if (strchr("|*<[]\\`", *s))
            fputc('\\', out);
        fputc(*s, out);
    }
}

/* f's aliases (aliases.c) as --help words them, escaped, "; " between. */
static void md_aliases(FILE *out, const flag *f) {
    int first = 1;
    for (size_t i = 0; i < cli_naliases; i++) {
        const flag_alias *a = &cli_aliases[i];
        if (a->kind == AL_ANSWER || strcmp(a->to, f->name) != 0)
            continue;
        const char *arg = a->arg ? a->arg : a->kind == AL_DEFAULT ? NULL : f->arg;
        char text[256];
        int n = snprintf(text, sizeof text, "%s%s%s (%s", a->name, arg ? " " : "", arg ? arg : "",
                         a->from);
        size_t len = n < 0 ? 0 : (size_t)n < sizeof text ? (size_t)n : sizeof text - 1;
        if (a->kind == AL_PREFIX)
            snprintf(text + len, sizeof text - len, ": --%s %s%s)", f->name, a->text, arg);
        else if (a->kind == AL_HOST)
            snprintf(text + len, sizeof text - len, "; with --port: --%s HOST:PORT; default %s)",
                     f->name, a->text);
        else if (a->kind == AL_PORT)
            snprintf(text + len, sizeof text - len, "; with --host; default %s)", a->text);
        else if (a->kind == AL_DEFAULT)
            snprintf(text + len, sizeof text - len, ": --%s %s unless set)", f->name, a->text);
        else
            snprintf(text + len, sizeof text - len, ")");
        fputs(first ? "" : "; ", out);
        md(out, text);
        first = 0;
    }
}

static const char *role_cell(int role) {
    return role == ROLE_BOTH ? "both" : role == ROLE_PY ? "Python" : "binary";
}

/* One table row per flag of role (exact: that role alone). */
static void md_rows(FILE *out, int role, int exact) {
    fputs("| flag | default | taken by | on HUP | what it does | also (other servers' spelling) "
          "|\n|---|---|---|---|---|---|\n",
          out);
    for (size_t i = 0; i < cli_nflags; i++) {
        const flag *f = &cli_flags[i];
        if (exact ? f->role != role : !(f->role & role))
            continue;
        fprintf(out, "| `--%s%s", f->name, f->arg ? " " : "");
        for (const char *a = f->arg; a && *a; a++) { /* in a code span, only | is escaped */
            if (*a == '|')
                fputc('\\', out);
            fputc(*a, out);
        }
        fputs("` | ", out);
        if (f->def)
            md(out, f->def);
        else
            fputs(f->kind == K_FLAG ? "off" : "–", out);
        fprintf(out, " | %s | %s | ", role_cell(f->role),
                f->kind == K_META ? "–"
                : f->reload       ? "applied"
                                  : "restart");
        md(out, f->help);
        fputs(" | ", out);
        md_aliases(out, f);
        fputs(" |\n", out);
    }
}

void cli_reference(FILE *out) {
    fputs("# The command line: every flag\n\n"
          "Every flag of `spindle` and of its Python command, with its argument, default, command "
          "and reload behaviour. This page is generated from the flag table (`src/cli/flags.c`): "
          "regenerate it with `build/spindle --print-reference >docs/cli.md`, never by hand "
          "(`tests/suites/docs_reference.sh` fails when it differs).\n\n"
          "## The two commands\n\n"
          "    spindle [--bind ADDR]... [options]                  # the binary: C handlers\n"
          "    spindle MODULE:CALLABLE [--bind ADDR]... [options]  # pip's console command\n"
          "    python3 -m spindle MODULE:CALLABLE [options]        # the same, from the package\n\n"
          "The binary (`build/spindle`, or `bin/spindle` once installed) serves a C application "
          "module loaded with `--app FILE.so`, or, with none, the demo routes that tests and "
          "benchmarks use: `GET /` answers `Hello world!`; `POST`/`PUT /echo` streams the body "
          "back; `GET /sleep?ms=N` answers after N ms while other requests go on; `OPTIONS *` "
          "and `OPTIONS /` get 204 with `Allow`; other paths 404; a known path with another "
          "method 405 with `Allow`.\n\n"
          "The Python command (`python3 -m spindle`, or the `spindle` command `pip install .` "
          "puts in the environment) serves the WSGI or ASGI callable CALLABLE (default "
          "`application`) of MODULE, imported from the current directory (or `--chdir`); see "
          "[python-wsgi.md](python-wsgi.md) and [python-asgi.md](python-asgi.md).\n\n"
          "Both commands parse one table: a flag of the other command is refused with a message "
          "and exit status 2; in a config file or a `SPINDLE_*` variable, which both may share, "
          "such a setting is skipped with a warning. In the tables, *taken by* is `binary`, "
          "`Python` or `both`; *on HUP* says whether a reload (`kill -HUP`, see "
          "[operations.md](operations.md)) applies a changed value (`applied`) or logs that it "
          "takes a restart (`restart`).\n\n"
          "## Values and where settings come from\n\n"
          "Sizes take `k`, `m`, `g` suffixes (`512m`); times are seconds and take fractions "
          "(`0.5`). Settings come from, weakest first: the defaults, the `--config` file (or "
          "`SPINDLE_CONFIG`), `SPINDLE_*` environment variables (the flag's name in upper case, "
          "`-` as `_`: `SPINDLE_WORKERS=4`; `SPINDLE_BIND=\"a b\"` takes several addresses "
          "separated by spaces or commas), then the flags. A config file has one `name = value` "
          "line per setting, named as the flag without `--`, `#` comments, one line per value of "
          "a repeatable flag. `--print-config` prints the result and where each value came "
          "from.\n\n"
          "## Flags of both commands and of the binary\n\n",
          out);
    md_rows(out, ROLE_BIN, 0);
    fputs("\n## Flags of the Python command only\n\n", out);
    md_rows(out, ROLE_PY, 1);
    fputs("\nThe binary's only (the Python command refuses them; its application is "
          "MODULE:CALLABLE):",
          out);
    for (size_t i = 0; i < cli_nflags; i++)
        if (cli_flags[i].role == ROLE_BIN)
            fprintf(out, " `--%s`", cli_flags[i].name);
    fputs(".\n\n## Other servers' flags\n\n"
          "uvicorn's and gunicorn's spellings (`src/cli/aliases.c`) are taken on the command line "
          "only (config files and `SPINDLE_*` keep spindle's names): those that mean the same are "
          "in the *also* column above. Those that mean something else here are refused (exit 2) "
          "with spindle's way:\n\n| flag | from | spindle's way |\n|---|---|---|\n",
          out);
    for (size_t i = 0; i < cli_naliases; i++) {
        const flag_alias *a = &cli_aliases[i];
        if (a->kind != AL_ANSWER)
            continue;
        fprintf(out, "| `%s` | %s | ", a->name, a->from);
        md(out, a->text);
        fputs(" |\n", out);
    }
}
