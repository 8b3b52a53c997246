/* test_cli_args.c — cli_parse's argv walk: whole flag names only, --name=value,
 * --, a value flag never taking the next flag, unknown flags refused with a
 * hint that is never applied, and the alias table (uvicorn's and gunicorn's
 * spellings: mapped, or answered with spindle's way). */
#include "cli/flags.h"

#include "unit.h"

#include <stdlib.h>
#include <unistd.h>

extern char **environ;

static cli_config C;
static char err[16384], out[1 << 17];

/* A test's settings come from its words alone, not the caller's SPINDLE_*. */
__attribute__((constructor)) static void clear_env(void) {
    for (int again = 1; again;) {
        again = 0;
        for (char **e = environ; *e; e++)
            if (strncmp(*e, "SPINDLE_", 8) == 0) {
                char name[256];
                size_t n = strcspn(*e, "=");
                snprintf(name, sizeof name, "%.*s", (int)n, *e);
                unsetenv(name);
                again = 1;
                break;
            }
    }
}

static void slurp(FILE *f, char *buf, size_t n) {
    rewind(f);
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = '\0';
    fclose(f);
}

/* cli_parse of words (NULL-terminated) as prog's command (NULL: the
 * binary's), its stderr in err and stdout in out. */
static int parse_as(const char *prog, const char *const *words) {
    static char *argv[64];
    int argc = 0;
    argv[argc++] = (char *)"spindle";
    for (int i = 0; words[i]; i++)
        argv[argc++] = (char *)words[i];
    argv[argc] = NULL;
    FILE *e = tmpfile(), *o = tmpfile();
    CHECK(e && o);
    fflush(stdout);
    int se = dup(2), so = dup(1);
    dup2(fileno(e), 2);
    dup2(fileno(o), 1);
    C.prog = prog;
    int rc = cli_parse(argc, argv, &C);
    fflush(stdout);
    fflush(stderr);
    dup2(se, 2);
    dup2(so, 1);
    close(se);
    close(so);
    slurp(e, err, sizeof err);
    slurp(o, out, sizeof out);
    return rc;
}

#define PARSE(...)    parse_as(NULL, (const char *[]){__VA_ARGS__, NULL})
#define PARSE_PY(...) parse_as("python3 -m spindle", (const char *[]){__VA_ARGS__, NULL})
#define ERR_HAS(s)                                                                                 \
    do {                                                                                           \
        if (!strstr(err, s)) {                                                                     \
            fprintf(stderr, "  stderr was: %s", err);                                              \
            unit_fail(__FILE__, __LINE__, "stderr has " #s);                                       \
        }                                                                                          \
    } while (0)

/* --- whole names only --------------------------------------------------- */

TEST(a_prefix_is_refused_with_a_hint_never_applied) {
    CHECK_EQ(PARSE("--max", "5"), -1);
    ERR_HAS("spindle: unknown flag --max; did you mean --max-requests, --max-requests-jitter, ");
    ERR_HAS("spindle: spindle --help lists the flags\n");
    CHECK_EQ(PARSE("--max-request", "5"), -1); /* one slip: the one name */
    CHECK_STR(err, "spindle: unknown flag --max-request; did you mean --max-requests?\n"
                   "spindle: spindle --help lists the flags\n");
    CHECK_EQ(PARSE("--work", "2"), -1); /* the names it begins */
    ERR_HAS("did you mean --workers, --worker-timeout or --worker-connections?");
    CHECK_EQ(PARSE("--bnd", "x"), -1);
    ERR_HAS("did you mean --bind?");
    CHECK_EQ(PARSE("--keepalive", "3"), -1); /* near an alias: its flag's own name */
    ERR_HAS("did you mean --keepalive-timeout?");
}

TEST(an_unknown_flag_without_a_near_name_has_no_hint) {
    CHECK_EQ(PARSE("--zzqqxxyy"), -1);
    CHECK_STR(err, "spindle: unknown flag --zzqqxxyy\nspindle: spindle --help lists the flags\n");
    CHECK_EQ(PARSE("-x"), -1);
    CHECK_STR(err, "spindle: unknown flag -x\nspindle: spindle --help lists the flags\n");
    CHECK_EQ(PARSE("--max=5"), -1); /* named without its value */
    ERR_HAS("unknown flag --max;");
}

TEST(a_long_name_with_one_dash_is_unknown_and_hinted) {
    CHECK_EQ(PARSE("-workers", "2"), -1);
    ERR_HAS("spindle: unknown flag -workers; did you mean --workers?");
    CHECK_EQ(PARSE("-help"), -1);
    ERR_HAS("spindle: unknown flag -help; did you mean --help?");
}

TEST(the_python_command_hints_its_own_rows_and_help) {
    CHECK_EQ(PARSE_PY("--roo-path", "/x"), -1);
    CHECK_STR(err, "spindle: unknown flag --roo-path; did you mean --root-path?\n"
                   "spindle: python3 -m spindle --help lists the flags\n");
    CHECK_EQ(PARSE_PY("--root-path", "/x"), 0);
    CHECK_STR(C.root_path, "/x");
}

/* --- each row's default, as --help says it -------------------------------- */

/* --help, the man page and docs/cli.md print each row's default from the
 * table, while the values an empty command line gets come from parse.c's
 * defaults() and sp_server_options_init: a row whose printed default parses
 * must give what no flag gives. Left out: descriptions ("one per CPU";
 * "none" for an unset string), and the fields an empty command line leaves
 * 0 for the layer below to read as its own default, named here. */
static const char lower_default[] = " tls-min-version tls-handshake-timeout http2-max-streams "
                                    "ws-max-message ws-deflate-window ws-deflate-mem-level "
                                    "blocking-threads ";
TEST(each_printed_default_is_what_no_flag_gives) {
    int checked = 0, wrong = 0;
    for (size_t i = 0; i < cli_nflags; i++) {
        const flag *f = &cli_flags[i];
        if (!f->def || f->kind == K_LIST || f->kind == K_META || f->type == T_NONE)
            continue;
        const char *prog = f->role & ROLE_BIN ? NULL : "python3 -m spindle";
        CHECK_EQ(parse_as(prog, (const char *[]){NULL}), 0);
        unsigned char none[64];
        const char *none_str = NULL;
        size_t n = cli_field_size(f);
        CHECK(n <= sizeof none);
        memcpy(none, (char *)&C + f->off, n);
        if (f->type == T_STR && *(const char **)none) {
            static char kept[256];
            snprintf(kept, sizeof kept, "%s", *(const char **)none);
            none_str = kept;
        }
        char name[96];
        snprintf(name, sizeof name, "--%s", f->name);
        if (parse_as(prog, (const char *[]){name, f->def, NULL}) != 0)
            continue; /* a description, not a value */
        if (f->type == T_STR && !none_str)
            continue; /* unset: the printed word ("none") says so */
        static const unsigned char zero[64];
        char key[96];
        snprintf(key, sizeof key, " %s ", f->name);
        if (strstr(lower_default, key)) {
            CHECK(memcmp(none, zero, n) == 0);
            continue;
        }
        const char *now = (char *)&C + f->off;
        if (f->type == T_STR ? strcmp(none_str, *(const char **)now) != 0
                             : memcmp(none, now, n) != 0) {
            fprintf(stderr,
                    "  --%s: --help says its default is '%s', but no flag gives something else\n",
                    f->name, f->def);
            wrong++;
        }
        checked++;
    }
    CHECK_EQ(wrong, 0);
    CHECK(checked >= 16);
}

/* --- values --------------------------------------------------------------- */

TEST(name_equals_value_and_name_space_value) {
    CHECK_EQ(PARSE("--max-requests=5", "--workers", "2", "--access-log=--weird", "--stats="), 0);
    CHECK_EQ(C.mo.max_requests, 5);
    CHECK_EQ(C.mo.workers, 2);
    CHECK_STR(C.access_log, "--weird"); /* = takes anything, a leading -- too */
    CHECK_STR(C.stats, "");
}

TEST(a_missing_value_at_the_end_is_named) {
    CHECK_EQ(PARSE("--workers"), -1);
    CHECK_STR(err, "spindle: --workers needs a value (N)\n");
    CHECK_EQ(PARSE("-b"), -1);
    CHECK_STR(err, "spindle: -b needs a value (ADDR)\n");
}

TEST(a_value_flag_never_takes_the_next_flag) {
    CHECK_EQ(PARSE("--access-log", "--check-config"), -1);
    CHECK_STR(err, "spindle: --access-log needs a value (FILE), not the flag --check-config "
                   "after it; a value that begins with - is written "
                   "--access-log=--check-config\n");
    CHECK_EQ(C.check_config, 0); /* not taken as a flag either */
    CHECK_EQ(PARSE("--access-log", "-w", "2"), -1);
    ERR_HAS("--access-log needs a value (FILE), not the flag -w after it");
    CHECK_EQ(PARSE("--access-log", "--"), -1);
    ERR_HAS("--access-log needs a value (FILE), not the flag -- after it");
}

TEST(a_dash_and_a_negative_number_are_values) {
    CHECK_EQ(PARSE("--access-log", "-"), 0);
    CHECK_STR(C.access_log, "-");
    /* -1 is taken as the value, then refused by the row's kind, named. */
    CHECK_EQ(PARSE("--header-timeout", "-1"), -1);
    CHECK_STR(err, "spindle: --header-timeout wants seconds (e.g. 10 or 0.5), not '-1'\n");
}

TEST(a_flag_without_a_value_refuses_one) {
    CHECK_EQ(PARSE("--reload=1"), -1);
    CHECK_STR(err, "spindle: --reload takes no value (--reload=1 given)\n");
    CHECK_EQ(PARSE("--reload", "--reuse-port"), 0);
    CHECK_EQ(C.reload, 1);
    CHECK_EQ(C.mo.reuse_port, 1);
}

TEST(double_dash_ends_the_flags_and_positionals_are_refused) {
    CHECK_EQ(PARSE("--workers", "2", "--"), 0);
    CHECK_EQ(C.mo.workers, 2);
    CHECK_EQ(PARSE("--", "--workers", "2"), -1);
    CHECK_STR(err, "spindle: unexpected argument '--workers'; spindle --help lists the flags\n");
    CHECK_EQ(PARSE("--workers", "2", "stray"), -1);
    ERR_HAS("unexpected argument 'stray'");
    CHECK_EQ(PARSE("-"), -1);
    ERR_HAS("unexpected argument '-'");
}

/* --- aliases -------------------------------------------------------------- */

TEST(gunicorn_and_uvicorn_spellings_map_onto_spindles_flags) {
    CHECK_EQ(PARSE("-b", "127.0.0.1:9001", "-w", "3", "--keep-alive", "7", "--timeout", "12",
                   "--ssl-certfile", "c.pem", "--ssl-keyfile", "k.pem", "--access-logfile", "-",
                   "--error-logfile", "-", "--timeout-graceful-shutdown", "4",
                   "--limit-max-requests", "9", "--worker-connections", "50",
                   "--limit-request-fields", "20", "--ssl-cert-reqs", "2", "--ws-max-size", "65536",
                   "-u", "nobody", "-g", "nogroup"),
             0);
    CHECK_EQ(C.nbinds, 1);
    CHECK_STR(C.binds[0], "127.0.0.1:9001");
    CHECK_EQ(C.mo.workers, 3);
    CHECK_EQ(C.o.keepalive_timeout_ms, 7000);
    CHECK_EQ(C.mo.worker_timeout_ms, 12000);
    CHECK_EQ(C.ncertfiles, 1);
    CHECK_STR(C.certfiles[0], "c.pem");
    CHECK_STR(C.keyfiles[0], "k.pem");
    CHECK_STR(C.access_log, "-");
    CHECK_STR(C.error_log, "-");
    CHECK_EQ(C.mo.graceful_timeout_ms, 4000);
    CHECK_EQ(C.mo.max_requests, 9);
    CHECK_EQ(C.o.max_connections, 50);
    CHECK_EQ(C.o.fields_max, 20);
    CHECK_EQ(C.cert_reqs, 2);
    CHECK_EQ(C.ws_max_message, 65536);
    CHECK_STR(C.user, "nobody");
    CHECK_STR(C.group, "nogroup");
}

TEST(short_aliases_take_attached_values) {
    CHECK_EQ(PARSE("-w4", "-b=127.0.0.1:9004", "-t", "5"), 0);
    CHECK_EQ(C.mo.workers, 4);
    CHECK_STR(C.binds[0], "127.0.0.1:9004");
    CHECK_EQ(C.mo.worker_timeout_ms, 5000);
}

TEST(host_and_port_make_one_bind_each_with_the_others_default) {
    CHECK_EQ(PARSE("--host", "0.0.0.0", "--port", "9002"), 0);
    CHECK_EQ(C.nbinds, 1);
    CHECK_STR(C.binds[0], "0.0.0.0:9002");
    CHECK_EQ(PARSE("--port", "9003"), 0);
    CHECK_STR(C.binds[0], "127.0.0.1:9003");
    CHECK_EQ(PARSE("--host", "10.0.0.1"), 0);
    CHECK_STR(C.binds[0], "10.0.0.1:8000");
    CHECK_EQ(PARSE("--host", "::1", "--port", "9005"), 0);
    CHECK_STR(C.binds[0], "[::1]:9005");
    CHECK_EQ(PARSE("--port=9006", "--host=127.0.0.2"), 0); /* either order, = too */
    CHECK_STR(C.binds[0], "127.0.0.2:9006");
    /* Beside --bind: one more listener, as both were asked for. */
    CHECK_EQ(PARSE("--bind", "127.0.0.1:9007", "--port", "9008"), 0);
    CHECK_EQ(C.nbinds, 2);
    CHECK_STR(C.binds[0], "127.0.0.1:9007");
    CHECK_STR(C.binds[1], "127.0.0.1:9008");
    CHECK_EQ(PARSE("--uds", "/tmp/s.sock"), 0);
    CHECK_STR(C.binds[0], "unix:/tmp/s.sock");
    CHECK_EQ(PARSE("--port"), -1);
    CHECK_STR(err, "spindle: --port needs a value (PORT)\n");
}

TEST(host_and_port_survive_a_second_parse) {
    /* HUP parses the same argv again into a fresh config. */
    CHECK_EQ(PARSE("--host", "127.0.0.1", "--port", "9010"), 0);
    char **argv = C.argv;
    int argc = C.argc;
    CHECK_EQ(cli_parse(argc, argv, &C), 0);
    CHECK_EQ(C.nbinds, 1);
    CHECK_STR(C.binds[0], "127.0.0.1:9010");
}

TEST(proxy_headers_trusts_localhost_unless_a_list_is_given) {
    CHECK_EQ(PARSE("--proxy-headers"), 0);
    CHECK_STR(C.o.forwarded_allow_ips, "127.0.0.1");
    CHECK_EQ(PARSE("--proxy-headers", "--forwarded-allow-ips", "10.0.0.1"), 0);
    CHECK_STR(C.o.forwarded_allow_ips, "10.0.0.1");
    CHECK_EQ(PARSE("--forwarded-allow-ips", "10.0.0.1", "--proxy-headers"), 0);
    CHECK_STR(C.o.forwarded_allow_ips, "10.0.0.1");
    setenv("SPINDLE_FORWARDED_ALLOW_IPS", "10.0.0.2", 1);
    CHECK_EQ(PARSE("--proxy-headers"), 0);
    CHECK_STR(C.o.forwarded_allow_ips, "10.0.0.2");
    unsetenv("SPINDLE_FORWARDED_ALLOW_IPS");
    CHECK_EQ(PARSE("--proxy-headers=yes"), -1);
    ERR_HAS("--proxy-headers takes no value");
}

TEST(dash_h_and_v_are_help_and_version) {
    CHECK_EQ(PARSE("-h"), 1);
    CHECK(strncmp(out, "usage: spindle", 14) == 0);
    CHECK_EQ(PARSE_PY("-h"), 1);
    CHECK(strncmp(out, "usage: python3 -m spindle", 25) == 0);
    CHECK_EQ(PARSE("-v"), 1);
    CHECK(strncmp(out, "spindle ", 8) == 0);
}

TEST(every_answered_row_is_refused_with_its_answer) {
    int n = 0;
    for (size_t i = 0; i < cli_naliases; i++) {
        const flag_alias *a = &cli_aliases[i];
        if (a->kind != AL_ANSWER)
            continue;
        n++;
        char want[1024];
        snprintf(want, sizeof want, "spindle: %s (%s): %s\n", a->name, a->from, a->text);
        CHECK_EQ(PARSE(a->name, "x"), -1);
        CHECK_STR(err, want);
    }
    CHECK(n >= 10);
    CHECK_EQ(PARSE("--http", "h11"), -1);
    ERR_HAS("spindle: --http (uvicorn): spindle parses HTTP/1.1 itself");
    ERR_HAS("--http2 on|off");
    CHECK_EQ(PARSE("--ws", "websockets"), -1);
    ERR_HAS("spindle: --ws (uvicorn): spindle speaks WebSocket itself");
    CHECK_EQ(PARSE("-k", "gevent"), -1);
    ERR_HAS("spindle: -k (gunicorn): spindle has one kind of worker");
    CHECK_EQ(PARSE("--http=h11"), -1); /* = too */
    ERR_HAS("--http (uvicorn)");
}

TEST(the_alias_table_names_real_flags_once) {
    for (size_t i = 0; i < cli_naliases; i++) {
        const flag_alias *a = &cli_aliases[i];
        CHECK(a->name[0] == '-' && a->from && (a->name[1] == '-' || !a->name[2]));
        CHECK(a->name[1] != '-' || !cli_find_flag(a->name + 2)); /* no flag shadowed */
        CHECK(cli_find_alias(a->name) == a);                     /* each spelling once */
        if (a->kind == AL_ANSWER)
            CHECK(!a->to && a->text);
        else
            CHECK(cli_find_flag(a->to) != NULL);
    }
}

TEST(help_lists_each_alias_under_its_flag) {
    CHECK_EQ(PARSE("--help"), 1);
    const char *bind = strstr(out, "\n  --bind ADDR"), *next = strstr(out, "\n  --certfile FILE");
    const char *b = strstr(out, "also -b ADDR (gunicorn)");
    CHECK(bind && next && b && bind < b && b < next);
    CHECK(strstr(out, "also --host HOST (uvicorn;") && strstr(out, "also --uds PATH (uvicorn"));
    CHECK(strstr(out, "also --keep-alive SEC (gunicorn)"));
    CHECK(strstr(out, "also -h (gunicorn)"));
    CHECK(strstr(out, "answered with\nspindle's way (exit 2):"));
    CHECK(strstr(out, " --http --loop --ws "));
}

/* --- the config file keeps spindle's names -------------------------------- */

TEST(aliases_are_not_read_from_a_config_file) {
    char path[] = "/tmp/spindle-cli-args-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(write(fd, "keep-alive = 3\n", 15) == 15);
    close(fd);
    CHECK_EQ(PARSE("--config", path), -1);
    ERR_HAS(":1: unknown setting 'keep-alive' (the names are the flags of --help, without --); "
            "did you mean keepalive-timeout?");
    unlink(path);
}
