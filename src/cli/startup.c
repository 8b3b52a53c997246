/* startup.c — cli_serve, the one start-up sequence of `spindle` and
 * `python3 -m spindle`: --chdir, the server, its access log and --stats,
 * the caller's application, --sessions, --root, the listeners (inherited or
 * new), --user/--group (the workers' switch, or this process's with
 * --workers 0), the session store's first open (as that user), the
 * banner saying where to point a browser, then the master with the reload
 * hook. */
#include "cli/flags.h"

#include "base/log.h"
#include "loop/loop_backend.h"
#include "loop/loop_choose.h"
#include "process/listen_fds.h"
#include "server/access_log.h"
#include "server/server.h"
#include "server/session/session.h"
#include "server/static/static.h"
#include "server/ws/ws_limits.h"

#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROXY_SCHEME "proxy://" /* --bind proxy://ADDR: ADDR takes PROXY headers */

static int same_addr(const net_addr *a, const net_addr *b) {
    if (a->u.sa.sa_family != b->u.sa.sa_family)
        return 0;
    switch (a->u.sa.sa_family) {
    case AF_INET:
        return a->u.in.sin_port == b->u.in.sin_port &&
               a->u.in.sin_addr.s_addr == b->u.in.sin_addr.s_addr;
    case AF_INET6:
        return a->u.in6.sin6_port == b->u.in6.sin6_port &&
               memcmp(&a->u.in6.sin6_addr, &b->u.in6.sin6_addr, 16) == 0;
    case AF_UNIX:
        return strcmp(a->u.un.sun_path, b->u.un.sun_path) == 0;
    default:
        return 0;
    }
}

/* Listens on spec: a socket inherited from systemd or an upgrading master
 * when one matches (marked in used), else a new one. 0, or -1 with a
 * message printed. */
static int listen_on(sp_server *s, const char *spec, const int *fds, int *used, int n) {
    if (strncmp(spec, PROXY_SCHEME, strlen(PROXY_SCHEME)) == 0) {
        /* proxy://ADDR: ADDR, behind a PROXY protocol proxy. */
        int rc = listen_on(s, spec + strlen(PROXY_SCHEME), fds, used, n);
        if (rc == 0)
            server_set_listener_proxy(s, server_nlisteners(s) - 1);
        return rc;
    }
    net_addr want;
    if (net_parse_addr(spec, &want) == 0) {
        for (int i = 0; i < n; i++) {
            net_addr have;
            have.len = sizeof have.u;
            if (used[i] || getsockname(fds[i], &have.u.sa, &have.len) != 0 ||
                !same_addr(&want, &have))
                continue;
            if (server_adopt_listener(s, fds[i]) < 0)
                break;
            used[i] = 1;
            log_msg(LOG_INFO, "listening on %s (socket inherited)", spec);
            return 0;
        }
    }
    int rc = sp_server_listen(s, spec);
    if (rc < 0) {
        fprintf(stderr, "spindle: cannot listen on %s: %s%s\n", spec, strerror(-rc),
                rc == -EADDRINUSE ? " (another server uses that port; pick another with --bind)"
                : rc == -EINVAL   ? " (write HOST:PORT, [V6]:PORT or unix:/path)"
                                  : "");
        return -1;
    }
    log_msg(LOG_INFO, "listening on %s", spec);
    return 0;
}

/* Every --bind address on s (with socket activation and no --bind, exactly
 * the sockets systemd passed), then --stats-bind, last, with its own route
 * table holding only the --stats page. 0, or -1 with a message printed. */
static int listen_all(cli_config *c, sp_server *s) {
    int fds[LISTEN_FDS_MAX], used[LISTEN_FDS_MAX] = {0}, systemd;
    int n = listen_fds_inherited(fds, LISTEN_FDS_MAX, &systemd);
    int rc = 0;
    if (systemd && cli_list_of(c, cli_find_flag("bind"))->n == 0) {
        /* Socket activation without --bind: serve exactly what systemd passed. */
        for (int i = 0; i < n && rc == 0; i++) {
            rc = server_adopt_listener(s, fds[i]);
            used[i] = rc == 0;
        } /* each CLI_BIND_ANY: TLS with --certfile */
        log_msg(LOG_INFO, "serving %d socket(s) passed by systemd", n);
    } else {
        for (int b = 0; b < c->nbinds && rc == 0; b++) {
            const char *spec = c->binds[b];
            int scheme = cli_bind_scheme(&spec);
            int scheme_at = server_nlisteners(s);
            if (strncmp(spec, PROXY_SCHEME, strlen(PROXY_SCHEME)) == 0 && scheme == CLI_BIND_ANY)
                scheme = CLI_BIND_HTTP; /* behind a proxy: plain unless it says https:// */
            rc = listen_on(s, spec, fds, used, n);
            if (rc == 0 && scheme_at < (int)sizeof c->listener_scheme)
                c->listener_scheme[scheme_at] = (unsigned char)scheme;
        }
    }
    if (c->stats_bind && server_nlisteners(s) < (int)sizeof c->listener_scheme)
        c->listener_scheme[server_nlisteners(s)] = CLI_BIND_SIDE; /* plain: a side door */
    if (rc == 0 && c->stats_bind && (rc = listen_on(s, c->stats_bind, fds, used, n)) == 0) {
        rc = stats_page_add_listener_route(s, server_nlisteners(s) - 1, c->stats, &c->mo.board);
        if (rc < 0)
            fprintf(stderr, "spindle: --stats-bind %s: %s\n", c->stats_bind, strerror(-rc));
    }
    for (int i = 0; i < n; i++)
        if (!used[i])
            close(fds[i]); /* inherited but no longer asked for */
    return rc < 0 ? -1 : 0;
}

/* The access log, --stats route and request timing on s (before the
 * application's routes, so the stats path wins). 0, or -1 with a message. */
static int setup_server(cli_config *c, sp_server *s) {
    if (c->access_log_format) {
        char bad;
        if (access_log_check_format(c->access_log_format, &bad) < 0) {
            fprintf(stderr,
                    "spindle: --access-log-format: unknown field %%%c (the fields are listed in "
                    "--help; headers are %%{Name}i and %%{Name}o)\n",
                    bad);
            return -1;
        }
    }
    server_set_access_log(s, c->access_log, c->access_log_format);
    int proxied = c->o.proxy_protocol;
    for (int b = 0; b < c->nbinds; b++)
        proxied |= strncmp(c->binds[b], PROXY_SCHEME, strlen(PROXY_SCHEME)) == 0;
    if (proxied && (!c->o.forwarded_allow_ips || !c->o.forwarded_allow_ips[0])) {
        fprintf(stderr,
                "spindle: %s needs --forwarded-allow-ips naming the proxies that send "
                "the PROXY header (their addresses or networks, or unix); without it "
                "every connection would be closed\n",
                c->o.proxy_protocol ? "--proxy-protocol" : "--bind proxy://");
        return -1;
    }
    if (c->stats_bind && !c->stats) {
        fprintf(stderr, "spindle: --stats-bind needs --stats PATH (the path the counters are "
                        "served at on that address)\n");
        return -1;
    }
    if (c->stats) {
        /* With --stats-bind the page is only on that listener (listen_all). */
        int rc = c->stats[0] != '/' ? -EINVAL
                 : c->stats_bind    ? 0
                                    : stats_page_add_route(s, c->stats, &c->mo.board);
        if (rc < 0) {
            fprintf(stderr, "spindle: --stats %s: %s\n", c->stats,
                    rc == -EINVAL ? "want a path starting with /" : strerror(-rc));
            return -1;
        }
    }
    server_set_timed(s, c->access_log || c->stats);
    return 0;
}

/* The length of a --static-map's prefix, its trailing '/' not counted. */
static size_t map_prefix_len(const char *spec) {
    size_t n = strcspn(spec, "=");
    return n > 1 && spec[n - 1] == '/' ? n - 1 : n;
}

/* --static-map PREFIX=DIR, each an exclusive mount, longest prefix first
 * (the router takes the first prefix route that matches, so a map under
 * another map's prefix must come before it). 0, or -1 with a message. */
static int setup_static_maps(const cli_config *c, sp_server *s) {
    const char *order[MAX_STATIC_MAPS];
    int n = c->nstatic_maps;
    for (int i = 0; i < n; i++) {
        int j = i;
        for (; j > 0 && map_prefix_len(order[j - 1]) < map_prefix_len(c->static_maps[i]); j--)
            order[j] = order[j - 1];
        order[j] = c->static_maps[i];
    }
    for (int i = 0; i < n; i++) {
        const char *spec = order[i], *dir = strchr(spec, '=') + 1;
        char *prefix = strndup(spec, (size_t)(dir - 1 - spec));
        int rc = prefix ? static_mount_exclusive(s, prefix, dir) : -ENOMEM;
        free(prefix);
        if (rc < 0) {
            fprintf(stderr, "spindle: --static-map %s: %s%s\n", spec,
                    rc == -EINVAL ? "PREFIX is not a plain URL path" : strerror(-rc),
                    rc == -EINVAL ? " (start with /; no //, . or .. segments, no * { } ? # %)"
                    : rc == -ENOENT || rc == -ENOTDIR ? " (DIR must be an existing directory)"
                                                      : "");
            return -1;
        }
    }
    return 0;
}

/* --sessions / --session-secret-file, after the application's routes (so
 * the flags override its choice). Under python3 -m spindle the same store
 * serves spindle.session (python/_spindle/common/session.c). 0, or -1 with a
 * message. */
static int setup_sessions(const cli_config *c, sp_server *s) {
    if (c->session_cookie_secure && !c->sessions && !c->session_secret) {
        /* The application's own sessions (configured by its init). */
        if (sp_sessions_cookie_secure(s, 1) < 0) {
            fprintf(stderr, "spindle: --session-cookie-secure: no sessions are configured "
                            "(add --sessions STORE)\n");
            return -1;
        }
        return 0;
    }
    if (!c->sessions && !c->session_secret)
        return 0;
    /* Memory sessions live in one worker: with several, a visitor's next
     * request can land on a worker that never saw its session, and its
     * values would be gone without a word. Refused, never silently split. */
    if ((!c->sessions || strcmp(c->sessions, "memory") == 0) && c->mo.workers > 1) {
        fprintf(stderr,
                "spindle: --sessions memory (the default store) keeps each session in one "
                "worker's memory, and "
                "--workers is %d: a visitor's next request could reach a worker that never saw "
                "its session. Use --sessions sqlite:PATH (the workers of one machine share the "
                "file) or --sessions redis://HOST:PORT (many machines), or --workers 1\n",
                c->mo.workers);
        return -1;
    }
    if (sp_sessions_configure(s, c->sessions, c->session_secret) < 0) {
        fprintf(stderr, "spindle: --sessions %s: see the error above\n",
                c->sessions ? c->sessions : "memory");
        return -1;
    }
    if (c->session_cookie_secure)
        sp_sessions_cookie_secure(s, 1); /* configured just above: cannot fail */
    return 0;
}

/* --bus: topics, configured in the master before the fork, so a memory
 * bus's ring is shared by every worker it forks. Without the flag it is
 * memory: topics work out of the box, on every worker of the machine (the
 * ring's pages cost nothing until a message is written); off turns it off. */
static int setup_bus(const cli_config *c, sp_server *s) {
    if (c->bus && strcmp(c->bus, "off") == 0)
        return 0;
    if (sp_bus_configure(s, c->bus ? c->bus : "memory") < 0) {
        fprintf(stderr, "spindle: --bus %s: see the error above\n", c->bus ? c->bus : "memory");
        return -1;
    }
    return 0;
}

/* Settings that cannot work together, refused before anything starts. 0,
 * or -1 with a message. */
static int check_combinations(const cli_config *c) {
    /* --preload imports the application in the master, which keeps root's
     * rights under --user (to reread root-only keys on HUP): its code would
     * run as root there. Refused rather than dropping the master's rights,
     * which would bring back the world-readable key this model removes. */
    if (c->preload && !c->reload && (c->user || c->group)) {
        fprintf(stderr, "spindle: --preload with --user/--group would import the application "
                        "in the master, which keeps root's rights (to reread root-only TLS keys "
                        "on HUP); leave out --preload (each worker imports it after switching "
                        "to the user), or start spindle as that user without --user\n");
        return -1;
    }
    if (c->group && !c->user && geteuid() == 0) {
        fprintf(stderr, "spindle: --group without --user would keep running as root (uid 0); "
                        "add --user NAME (the group then defaults to that user's)\n");
        return -1;
    }
    return 0;
}

/* --check-config: what setup would bind, switch to or serve from, checked
 * without doing it. 0, or 1 with a message per problem. */
static int check_only(const cli_config *c) {
    int bad = 0;
    for (int b = 0; b < c->nbinds; b++) {
        net_addr a;
        const char *spec = c->binds[b];
        cli_bind_scheme(&spec);
        if (strncmp(spec, PROXY_SCHEME, strlen(PROXY_SCHEME)) == 0)
            spec += strlen(PROXY_SCHEME);
        if (net_parse_addr(spec, &a) < 0) {
            fprintf(stderr, "spindle: --bind %s: write HOST:PORT, [V6]:PORT or unix:/path\n",
                    c->binds[b]);
            bad = 1;
        }
    }
    if (c->user && !getpwnam(c->user)) {
        fprintf(stderr, "spindle: --user %s: no such user\n", c->user);
        bad = 1;
    }
    if (cli_tls_check(c) < 0)
        bad = 1;
    if (c->group && !getgrnam(c->group)) {
        fprintf(stderr, "spindle: --group %s: no such group\n", c->group);
        bad = 1;
    }
    if (!bad)
        fprintf(stderr, "spindle: --check-config: the configuration and the application load; "
                        "nothing wrong found\n");
    return bad;
}

/* --reload: the watch opened, with the --reload-extra-file files and
 * (the binary) the --app module, which is reloaded by re-executing the
 * master: it loaded the module before the workers forked. The workers add
 * their Python modules' files as they import them. */
static void setup_reload(cli_config *c) {
    if (!c->reload)
        return;
    if (c->mo.workers <= 0) {
        log_msg(LOG_WARNING, "--reload needs a master: it is ignored with --workers 0");
        return;
    }
    if (reload_watch_open() < 0)
        return;
    c->mo.reload_on_change = 1;
    c->mo.exec_on_change = c->role == ROLE_BIN && c->app != NULL;
    for (int i = 0; i < c->nreload_extra; i++) {
        const char *f = c->reload_extra[i];
        char *full = realpath(f, NULL);
        if (!full)
            log_msg(LOG_WARNING, "--reload-extra-file %s: %s; not watched", f, strerror(errno));
        else
            reload_watch_add(full);
        free(full);
    }
    char *app = c->mo.exec_on_change ? realpath(c->app, NULL) : NULL;
    if (app)
        reload_watch_add(app);
    free(app);
}

/* Listener i as a browser (or curl) would be pointed at it: http:// or
 * https:// with the address bound (the port the kernel chose for :0), or
 * unix:PATH. */
static void listener_url(const sp_server *s, int i, char *out, size_t n) {
    net_addr a;
    a.len = sizeof a.u;
    if (getsockname(server_listener_fd(s, i), &a.u.sa, &a.len) != 0)
        a = *server_listener_addr(s, i);
    const char *scheme = s->listeners[i].tls ? "https" : "http";
    char host[INET6_ADDRSTRLEN] = "?";
    switch (a.u.sa.sa_family) {
    case AF_UNIX:
        snprintf(out, n, "unix:%s", a.u.un.sun_path);
        break;
    case AF_INET6:
        inet_ntop(AF_INET6, &a.u.in6.sin6_addr, host, sizeof host);
        snprintf(out, n, "%s://[%s]:%d", scheme, host, ntohs(a.u.in6.sin6_port));
        break;
    default:
        inet_ntop(AF_INET, &a.u.in.sin_addr, host, sizeof host);
        snprintf(out, n, "%s://%s:%d", scheme, host, ntohs(a.u.in.sin_port));
        break;
    }
    if (s->listeners[i].proxy && strlen(out) + 18 < n)
        strcat(out, " (PROXY protocol)");
}

/* What the binary serves (main.c's choice): its --app module, the files
 * of --root, or the demo routes. */
static void describe_binary(const cli_config *c, char *out, size_t n) {
    int site = c->root != NULL;
    for (int i = 0; i < c->nstatic_maps; i++)
        site |= strncmp(c->static_maps[i], "/=", 2) == 0;
    if (c->app)
        snprintf(out, n, "%s (C)", c->app);
    else if (site && !c->demo)
        snprintf(out, n, "the files of %s (static)", c->root ? c->root : "--static-map /");
    else
        snprintf(out, n, "the demo routes (C)");
}

/* The start-up banner, once, in the master, at info: "spindle 0.1 serving
 * app:app (ASGI) on http://127.0.0.1:8000 with 2 workers, epoll". */
static void banner(const cli_config *c, const cli_app *app, const sp_server *s) {
    char what[512], urls[1024] = "", url[300];
    if (app->describe)
        app->describe(c, app->ud, what, sizeof what);
    else
        describe_binary(c, what, sizeof what);
    int n = server_nlisteners(s), shown = 0;
    for (int i = 0; i < n; i++) {
        if (i < (int)sizeof c->listener_scheme && c->listener_scheme[i] == CLI_BIND_SIDE)
            continue; /* --stats-bind: a side door, not the site */
        listener_url(s, i, url, sizeof url);
        size_t len = strlen(urls);
        snprintf(urls + len, sizeof urls - len, "%s%s", shown ? ", " : "", url);
        shown++;
    }
    backend_kind k = backend_kind_effective((backend_kind)c->io_backend);
    const char *backend = k == BACKEND_KIND_URING ? backend_uring_ops.name : backend_epoll_ops.name;
    char workers[64];
    if (c->mo.workers > 0)
        snprintf(workers, sizeof workers, "with %d worker%s", c->mo.workers,
                 c->mo.workers == 1 ? "" : "s");
    else
        snprintf(workers, sizeof workers, "in this process (--workers 0)");
    log_msg(LOG_INFO, "spindle %s serving %s on %s %s, %s", cli_version(), what,
            shown ? urls : "no listener", workers, backend);
}

/* Everything before the master: 0, or the exit status. */
static int setup(cli_config *c, const cli_app *app, sp_server *s) {
    int rc;
    if (check_combinations(c) < 0)
        return 2;
    if (setup_server(c, s) < 0)
        return 2;
    if (ws_set_default_max_message(s, c->ws_max_message) < 0) /* --ws-max-message */
        return 1;
    int bits = c->ws_deflate_off ? 0 : c->ws_deflate_window ? c->ws_deflate_window : 12;
    if ((rc = sp_ws_deflate(s, bits, c->ws_deflate_mem)) < 0) { /* --ws-deflate* */
        fprintf(stderr, "spindle: %s\n",
                rc == -EINVAL ? "--ws-deflate-window is 9..15, --ws-deflate-mem-level 1..9"
                              : strerror(-rc));
        return 2;
    }
    /* Before the application's routes: under a PREFIX only the files answer. */
    if (setup_static_maps(c, s) < 0)
        return 1;
    if (app->setup && (rc = app->setup(s, c, app->ud)) != 0)
        return rc;
    if (setup_sessions(c, s) < 0 || setup_bus(c, s) < 0)
        return 1;
    /* Static files after the application's routes: those win. A fallback
     * (the WSGI catch-all) comes after them and takes what names no file. */
    if (c->root && (rc = static_mount_fallback(s, "/", c->root, app->fallback, app->ud)) < 0) {
        fprintf(stderr, "spindle: --root %s: %s\n", c->root, strerror(-rc));
        return 1;
    }
    if (app->fallback && (rc = sp_route(s, NULL, "/*", app->fallback, app->ud)) < 0) {
        fprintf(stderr, "spindle: cannot route to the application: %s\n", strerror(-rc));
        return 1;
    }
    if (c->check_config)
        return check_only(c);
    if (listen_all(c, s) < 0)
        return 1;
    /* Before any switch: keys are often readable by root only. */
    if (cli_tls_setup(c, s) < 0)
        return 2;
    return cli_switch_user(c, s);
}

int cli_serve(cli_config *c, const cli_app *app) {
    if (c->chdir && chdir(c->chdir) != 0) {
        fprintf(stderr, "spindle: --chdir %s: %s\n", c->chdir, strerror(errno));
        return 1;
    }
    /* After --chdir, like the access log; before the fork, so the workers
     * share the file (and the start-up lines land in it). */
    int lrc = log_open(c->error_log);
    if (lrc < 0) {
        fprintf(stderr,
                "spindle: --error-log %s: %s (make its directory writable, or use - for "
                "stderr)\n",
                c->error_log, strerror(-lrc));
        return 1;
    }
    loop_set_default_backend((backend_kind)c->io_backend); /* before any loop */
    sp_server *s = sp_server_new(&c->o);
    if (s)
        server_set_http2(s, c->http2_off, c->http2_max_streams);
    if (!s) {
        fprintf(stderr, "spindle: %s\n",
                errno == EINVAL ? "--forwarded-allow-ips: not a list of IPs, CIDRs, unix or *"
                                : strerror(errno));
        return 1;
    }
    int rc = setup(c, app, s);
    if (c->check_config)
        rc = rc != 0; /* checked, never served: 0 or 1 */
    else if (rc == 0) {
        c->mo.reload = cli_reload;
        c->mo.reload_ud = c;
        setup_reload(c);
        banner(c, app, s);
        rc = master_run(s, &c->mo);
    }
    sp_server_free(s);
    return rc;
}
