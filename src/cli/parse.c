/* parse.c — cli_parse: the settings from the flag table's four sources
 * (defaults, the --config file, SPINDLE_* environment variables, flags),
 * a row of the other command refused from a flag and skipped with a
 * warning from a file or the environment; and --print-config. The flags
 * are walked by whole name only (a prefix is no flag), with the other
 * servers' spellings of aliases.c. */
#include "cli/flags.h"

#include "base/log.h"
#include "coro/coro.h"
#include "loop/loop_backend.h"

#include <nghttp2/nghttp2.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <openssl/crypto.h>
#include <openssl/opensslv.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { SRC_DEFAULT, SRC_FILE, SRC_ENV, SRC_FLAG };
static const char *const source_names[] = {"default", "config file", "environment", "flag"};

/* Keeps a copy of s for the life of c (file and environment values). */
static const char *keep(cli_config *c, const char *s, size_t n) {
    if (c->nowned == CLI_MAX_OWNED)
        return NULL;
    char *d = strndup(s, n);
    if (d)
        c->owned[c->nowned++] = d;
    return d;
}

/* Records one setting from a source; a repeatable row's value from a
 * stronger source replaces the weaker source's list instead of adding to it. */
static int set_value(cli_config *c, const flag *f, const char *value, int source) {
    size_t i = (size_t)(f - cli_flags);
    if (f->kind == K_LIST) {
        cli_list *l = cli_list_of(c, f);
        if (l->source != source) {
            l->n = 0;
            l->source = source;
        }
        if (l->n == CLI_MAX_LIST) {
            fprintf(stderr, "spindle: at most %d --%s values\n", CLI_MAX_LIST, f->name);
            return -1;
        }
        l->v[l->n++] = value;
        return 0;
    }
    c->values[i] = value;
    c->sources[i] = source;
    return 0;
}

/* A file's or the environment's row for the other command: skipped, said. */
static int other_command(const cli_config *c, const flag *f, const char *where) {
    if (f->role & c->role)
        return 0;
    log_msg(LOG_WARNING, "%s: %s applies to %s only; skipped", where, f->name,
            cli_role_name(f->role));
    return 1;
}

/* Splits one "name = value" line in place: 0, or -1 when it has no '='. */
static int split_line(char *p, char **value, size_t *vlen) {
    char *eq = strchr(p, '=');
    if (!eq)
        return -1;
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
    *value = v;
    *vlen = vl;
    return 0;
}

/* Reads name = value lines. 0, or -1 with a message naming file and line. */
static int read_file(cli_config *c, const char *path) {
    FILE *fp = fopen(path, "r");
    if (!fp) {
        fprintf(stderr, "spindle: cannot read the config file %s: %s\n", path, strerror(errno));
        return -1;
    }
    char line[4096], where[4200];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, fp)) {
        lineno++;
        char *p = line, *v;
        size_t vl;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '#' || *p == '\n' || *p == '\0')
            continue;
        if (split_line(p, &v, &vl) < 0) {
            fprintf(stderr, "spindle: %s:%d: want 'name = value'\n", path, lineno);
            rc = -1;
            break;
        }
        const flag *f = cli_find_flag(p);
        if (!f || f->kind == K_META) {
            /* Aliases stay on the command line; here a near name is only named. */
            char hint[1024];
            int near = cli_hint(p, c->role, 0, hint, sizeof hint) == 0;
            fprintf(stderr,
                    "spindle: %s:%d: unknown setting '%s' (the names are the flags of "
                    "--help, without --)%s%s%s\n",
                    path, lineno, p, near ? "; did you mean " : "", near ? hint : "",
                    near ? "?" : "");
            rc = -1;
            break;
        }
        snprintf(where, sizeof where, "%s:%d", path, lineno);
        if (other_command(c, f, where))
            continue;
        const char *val = keep(c, v, vl);
        if (!val || set_value(c, f, val, SRC_FILE) < 0)
            rc = -1;
    }
    fclose(fp);
    return rc;
}

/* A repeatable row's variable (SPINDLE_BIND, SPINDLE_STATIC_MAP): several
 * values, separated by spaces or commas. */
static int env_list(cli_config *c, const flag *f, const char *v) {
    const char *p = v;
    while (*p) {
        size_t len = strcspn(p, " ,");
        if (len) {
            const char *val = keep(c, p, len);
            if (!val || set_value(c, f, val, SRC_ENV) < 0)
                return -1;
        }
        p += len;
        p += strspn(p, " ,");
    }
    return 0;
}

/* SPINDLE_NAME=value: the flag's name upper-cased, '-' as '_'. */
static int read_env(cli_config *c) {
    for (size_t i = 0; i < cli_nflags; i++) {
        const flag *f = &cli_flags[i];
        if (f->kind == K_META)
            continue;
        char key[64] = "SPINDLE_";
        size_t n = 8;
        for (const char *p = f->name; *p && n < sizeof key - 1; p++)
            key[n++] = *p == '-' ? '_' : (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
        key[n] = '\0';
        const char *v = getenv(key);
        if (!v || other_command(c, f, key))
            continue;
        if (f->kind == K_LIST ? env_list(c, f, v) < 0 : set_value(c, f, v, SRC_ENV) < 0)
            return -1;
    }
    return 0;
}

static void print_config(const cli_config *c) {
    for (size_t i = 0; i < cli_nflags; i++) {
        const flag *f = &cli_flags[i];
        if (f->kind == K_META || !(f->role & c->role))
            continue;
        const cli_list *l = f->kind == K_LIST ? cli_list_of(c, f) : NULL;
        if (l && (l->n || f->def)) {
            if (!l->n)
                printf("%s = %s  # default\n", f->name, f->def);
            for (int b = 0; b < l->n; b++)
                printf("%s = %s  # %s\n", f->name, l->v[b], source_names[l->source]);
            continue;
        }
        if (c->values[i])
            printf("%s = %s  # %s\n", f->name, c->values[i], source_names[c->sources[i]]);
        else
            printf("# %s: default%s%s%s\n", f->name, f->def ? " (" : "", f->def ? f->def : "",
                   f->def ? ")" : "");
    }
}

void cli_free(cli_config *c) {
    for (int i = 0; i < c->nowned; i++)
        free(c->owned[i]);
    c->nowned = 0;
}

/* A flag of the other command: refused (exit 2). */
static void refuse(const flag *f) {
    if (strcmp(f->name, "app") == 0)
        fprintf(stderr, "spindle: --app loads C modules into the spindle binary; here the "
                        "application is the WSGI callable named first\n");
    else
        fprintf(stderr, "spindle: --%s applies to %s only\n", f->name, cli_role_name(f->role));
}

/* The Makefile (from the VERSION file and `git describe`) and setup.py pass
 * these; the number has no other source. */
#ifndef SPINDLE_VERSION
#error "build with -DSPINDLE_VERSION='\"X.Y\"' (the Makefile and setup.py read VERSION)"
#endif
#ifndef SPINDLE_GIT_REV
#define SPINDLE_GIT_REV ""
#endif

/* --version: the number, the revision built from, and what this build is
 * made of (the switch and the backend name themselves). */
const char *cli_version(void) {
    return SPINDLE_VERSION;
}

static void print_version(void) {
    printf("spindle %s (API %d)\n", SPINDLE_VERSION, SPINDLE_API_VERSION);
    printf("git revision: %s\n",
           SPINDLE_GIT_REV[0] ? SPINDLE_GIT_REV : "none (not built from git)");
    printf("coroutine switch: %s\n", coro_switch_name);
    printf("event loop: auto (default) = %s, falling back to %s where io_uring is missing or "
           "forbidden; --io-backend epoll or uring to choose\n",
           backend_kind_auto() == BACKEND_KIND_URING ? backend_uring_ops.name
                                                     : backend_epoll_ops.name,
           backend_epoll_ops.name);
    printf("session stores built against: SQLite %s, hiredis %d.%d.%d\n", SQLITE_VERSION,
           HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH);
    printf("TLS: %s (built against %s)\n", OpenSSL_version(OPENSSL_VERSION), OPENSSL_VERSION_TEXT);
    printf("HTTP/2 built against: nghttp2 %s (running %s)\n", NGHTTP2_VERSION,
           nghttp2_version(0)->version_str);
}

typedef struct flag_args {
    const char *vals[CLI_MAX_ARGS];
    const flag *defs[CLI_MAX_ARGS];
    int n, print;
    const char *config;
    const char *host, *port; /* uvicorn's --host and --port: one bind */
    const flag_alias *host_row, *port_row;
    const flag_alias *weak[8]; /* AL_DEFAULT rows: applied if nothing else sets them */
    int nweak;
} flag_args;

/* Whether a word after a flag that wants a value is a flag instead: --x
 * (and --) or a dash and a letter (-b); "-" (stdout) and "-1" are values. */
static int looks_like_flag(const char *s) {
    return s[0] == '-' &&
           (s[1] == '-' || (s[1] >= 'a' && s[1] <= 'z') || (s[1] >= 'A' && s[1] <= 'Z'));
}

/* How the flag list is reached from this command. */
static const char *help_cmd(const cli_config *c) {
    return c->role == ROLE_PY ? "python3 -m spindle --help" : "spindle --help";
}

/* An unknown flag: refused, with a near miss named (never applied). */
static void unknown(const cli_config *c, const char *name) {
    char hint[1024];
    if (cli_hint(name, c->role, 1, hint, sizeof hint) == 0)
        fprintf(stderr, "spindle: unknown flag %s; did you mean %s?\n", name, hint);
    else
        fprintf(stderr, "spindle: unknown flag %s\n", name);
    fprintf(stderr, "spindle: %s lists the flags\n", help_cmd(c));
}

/* One flag, kept aside in a; value NULL for those that take none. 0 to go
 * on, 1 when --help or --version was printed, -1 on an error. */
static int take_flag(cli_config *c, flag_args *a, const flag *f, const char *value) {
    if (!(f->role & c->role)) {
        refuse(f);
        return -1;
    }
    if (!strcmp(f->name, "help")) {
        cli_usage(stdout, c->prog);
        return 1;
    }
    if (!strcmp(f->name, "version")) {
        print_version();
        return 1;
    }
    if (!strcmp(f->name, "print-man")) {
        cli_man(stdout, SPINDLE_VERSION);
        return 1;
    }
    if (!strcmp(f->name, "print-reference")) {
        cli_reference(stdout);
        return 1;
    }
    if (!strcmp(f->name, "check-config"))
        c->check_config = 1; /* known now: a bad setting below exits 1 */
    if (!strcmp(f->name, "config"))
        a->config = value;
    else if (!strcmp(f->name, "print-config"))
        a->print = 1;
    else if (a->n == CLI_MAX_ARGS) {
        fprintf(stderr, "spindle: too many flags\n");
        return -1;
    } else {
        a->defs[a->n] = f;
        a->vals[a->n++] = f->kind == K_FLAG ? "true" : value;
    }
    return 0;
}

/* An alias's flag, its value mapped as its row says. */
static int take_alias(cli_config *c, flag_args *a, const flag_alias *al, const char *written,
                      const char *value) {
    if (al->kind == AL_ANSWER) {
        fprintf(stderr, "spindle: %s (%s): %s\n", written, al->from, al->text);
        return -1;
    }
    const flag *f = cli_find_flag(al->to);
    switch (al->kind) {
    case AL_PREFIX: {
        char buf[4096];
        snprintf(buf, sizeof buf, "%s%s", al->text, value);
        value = keep(c, buf, strlen(buf));
        if (!value) {
            fprintf(stderr, "spindle: out of memory\n");
            return -1;
        }
        break;
    }
    case AL_HOST:
        a->host = value, a->host_row = al;
        return 0;
    case AL_PORT:
        a->port = value, a->port_row = al;
        return 0;
    case AL_DEFAULT:
        if (a->nweak < (int)(sizeof a->weak / sizeof a->weak[0]))
            a->weak[a->nweak++] = al;
        return 0;
    default:
        break;
    }
    return take_flag(c, a, f, value);
}

/* uvicorn's --host and --port, either alone with the other's default: one
 * more --bind HOST:PORT ([V6]:PORT for a v6 host, as --bind writes it). */
static int host_port_bind(cli_config *c, flag_args *a) {
    if (!a->host_row && !a->port_row)
        return 0;
    const flag_alias *h = a->host_row ? a->host_row : cli_find_alias("--host");
    const flag_alias *p = a->port_row ? a->port_row : cli_find_alias("--port");
    const char *host = a->host ? a->host : h->text, *port = a->port ? a->port : p->text;
    int v6 = strchr(host, ':') && host[0] != '[';
    char buf[512];
    snprintf(buf, sizeof buf, "%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port);
    const char *bind = keep(c, buf, strlen(buf));
    if (!bind) {
        fprintf(stderr, "spindle: out of memory\n");
        return -1;
    }
    return take_flag(c, a, cli_find_flag("bind"), bind);
}

/* First pass: the flags, kept aside in a (they win over everything). Only
 * whole names: --name, --name=value, --name value, the short and long
 * aliases; -- ends the flags (no positional argument follows: the Python
 * command takes MODULE:CALLABLE off before). 0 to go on, 1 when --help or
 * --version was printed, -1 on an error. */
static int read_flags(cli_config *c, int argc, char **argv, flag_args *a) {
    int i = 1;
    for (; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--")) {
            i++;
            break;
        }
        if (arg[0] != '-' || !arg[1])
            break; /* a positional argument: refused below */
        /* The name as written (--name or -x) and a value written with it. */
        char name[80];
        const char *value = NULL;
        size_t len;
        if (arg[1] == '-') {
            const char *eq = strchr(arg, '=');
            len = eq ? (size_t)(eq - arg) : strlen(arg);
            value = eq ? eq + 1 : NULL;
        } else {
            len = 2; /* -b ADDR, -bADDR, -b=ADDR */
            value = arg[2] ? arg + 2 + (arg[2] == '=') : NULL;
        }
        if (len >= sizeof name) {
            unknown(c, arg);
            return -1;
        }
        memcpy(name, arg, len);
        name[len] = '\0';
        const flag *f = arg[1] == '-' ? cli_find_flag(name + 2) : NULL;
        const flag_alias *al = f ? NULL : cli_find_alias(name);
        if (!f && !al) {
            unknown(c, name);
            return -1;
        }
        if (al && al->kind == AL_ANSWER)
            return take_alias(c, a, al, name, NULL);
        /* Whether it takes a value: the row's, or the alias's own. */
        const flag *to = f ? f : cli_find_flag(al->to);
        int wants = al && al->kind != AL_SAME ? al->kind != AL_DEFAULT : to->arg != NULL;
        const char *what = al && al->arg ? al->arg : to->arg;
        if (arg[1] != '-' && arg[2] && arg[2] != '=' && (cli_find_flag(arg + 1) || !wants)) {
            unknown(c, arg); /* -workers, -help: a long name with one dash */
            return -1;
        }
        if (!wants && value) {
            fprintf(stderr, "spindle: %s takes no value (%s given)\n", name, arg);
            return -1;
        }
        if (wants && !value) {
            if (i + 1 == argc) {
                fprintf(stderr, "spindle: %s needs a value (%s)\n", name, what);
                return -1;
            }
            if (looks_like_flag(argv[i + 1])) {
                fprintf(stderr,
                        "spindle: %s needs a value (%s), not the flag %s after it; a value "
                        "that begins with - is written %s=%s\n",
                        name, what, argv[i + 1], name, argv[i + 1]);
                return -1;
            }
            value = argv[++i];
        }
        int rc = al ? take_alias(c, a, al, name, value) : take_flag(c, a, f, value);
        if (rc != 0)
            return rc;
    }
    if (i < argc) {
        /* MODULE:APP given to the C binary: the pip command of the same name
         * takes it, and a user whose PATH found this one should hear how. */
        if (c->role == ROLE_BIN && strchr(argv[i], ':') && argv[i][0] != '/' && argv[i][0] != '-')
            fprintf(stderr,
                    "spindle: '%s' looks like a Python application: this spindle is the C "
                    "server (C handlers: --app MODULE.so). Serve Python apps with "
                    "python3 -m spindle %s, or the spindle command that `pip install` puts "
                    "in a virtual environment\n",
                    argv[i], argv[i]);
        else
            fprintf(stderr, "spindle: unexpected argument '%s'; %s lists the flags\n", argv[i],
                    help_cmd(c));
        return -1;
    }
    return host_port_bind(c, a);
}

static void defaults(cli_config *c) {
    sp_server_options_init(&c->o);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    c->mo = (master_options){.workers = ncpu > 0 ? (int)ncpu : 1,
                             .worker_timeout_ms = 30000,
                             .graceful_timeout_ms = 30000};
    c->io_backend = BACKEND_KIND_AUTO;
}

int cli_parse(int argc, char **argv, cli_config *c) {
    const char *prog = c->prog;
    cli_free(c);
    *c = (cli_config){.prog = prog, .role = prog ? ROLE_PY : ROLE_BIN, .argc = argc, .argv = argv};
    defaults(c);
    flag_args *a = calloc(1, sizeof *a);
    if (!a) {
        fprintf(stderr, "spindle: out of memory\n");
        return -1;
    }
    a->config = getenv("SPINDLE_CONFIG");
    int rc = read_flags(c, argc, argv, a);
    if (rc != 0)
        goto out;
    rc = -1;
    c->config_file = a->config;
    if ((a->config && read_file(c, a->config) < 0) || read_env(c) < 0)
        goto out;
    for (int i = 0; i < a->n; i++)
        if (set_value(c, a->defs[i], a->vals[i], SRC_FLAG) < 0)
            goto out;
    /* --proxy-headers & co.: their value only where no source set one. */
    for (int i = 0; i < a->nweak; i++) {
        const flag *f = cli_find_flag(a->weak[i]->to);
        if (!c->values[f - cli_flags] && set_value(c, f, a->weak[i]->text, SRC_FLAG) < 0)
            goto out;
    }
    if (a->print) {
        print_config(c);
        cli_tls_print(c);
        rc = 1;
        goto out;
    }
    for (size_t i = 0; i < cli_nflags; i++)
        if (c->values[i] && cli_apply(c, &cli_flags[i], c->values[i]) < 0)
            goto out;
    for (size_t i = 0; i < cli_nflags; i++) {
        const cli_list *l = cli_flags[i].kind == K_LIST ? cli_list_of(c, &cli_flags[i]) : NULL;
        for (int b = 0; l && b < l->n; b++)
            if (cli_apply(c, &cli_flags[i], l->v[b]) < 0)
                goto out;
    }
    const flag *bind = cli_find_flag("bind");
    if (c->nbinds == 0)
        c->binds[c->nbinds++] = bind->def;
    rc = 0;
out:
    free(a);
    return rc;
}
