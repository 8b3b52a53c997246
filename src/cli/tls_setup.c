/* tls_setup.c — TLS from the command line: the https:// and http:// forms
 * of --bind, the contexts built from --certfile/--keyfile and the other TLS
 * flags in the master before the fork (an error names the file and
 * OpenSSL's reason), given to the listeners that speak TLS; rebuilt on HUP
 * (a bad certificate keeps the old ones); and --print-config's lines. */
#include "cli/flags.h"

#include "base/log.h"
#include "net/tls_ctx.h"
#include "server/server.h"

#include <stdio.h>
#include <string.h>

int cli_bind_scheme(const char **spec) {
    if (strncmp(*spec, "https://", 8) == 0) {
        *spec += 8;
        return CLI_BIND_HTTPS;
    }
    if (strncmp(*spec, "http://", 7) == 0) {
        *spec += 7;
        return CLI_BIND_HTTP;
    }
    return CLI_BIND_ANY;
}

/* The tls_config of c. 0, or -1 with err filled. */
static int config_of(const cli_config *c, tls_config *t, char *err, size_t cap) {
    *t = (tls_config){.ca_certs = c->ca_certs,
                      .cert_reqs = c->cert_reqs,
                      .ciphers = c->ciphers,
                      .min_version = c->tls_min_version ? c->tls_min_version : 12};
    if (c->nkeyfiles && c->nkeyfiles != c->ncertfiles) {
        snprintf(err, cap,
                 "%d --certfile but %d --keyfile: give one --keyfile per --certfile, in the "
                 "same order (or none, when each certfile holds its key too)",
                 c->ncertfiles, c->nkeyfiles);
        return -1;
    }
    if (c->ncertfiles > TLS_MAX_CERTS) {
        snprintf(err, cap, "at most %d --certfile", TLS_MAX_CERTS);
        return -1;
    }
    for (int i = 0; i < c->ncertfiles; i++) {
        t->certfiles[i] = c->certfiles[i];
        t->keyfiles[i] = c->nkeyfiles ? c->keyfiles[i] : NULL;
    }
    t->ncerts = c->ncertfiles;
    return 0;
}

static tls_ctx *build(const cli_config *c, char *err, size_t cap) {
    tls_config cfg;
    if (config_of(c, &cfg, err, cap) < 0)
        return NULL;
    return tls_ctx_build(&cfg, err, cap);
}

/* Whether listener i speaks TLS, by what the --bind lines said. */
static int wants_tls(const cli_config *c, int i, int any_https, const sp_server *s) {
    int scheme = i < (int)sizeof c->listener_scheme ? c->listener_scheme[i] : CLI_BIND_SIDE;
    if (any_https)
        return scheme == CLI_BIND_HTTPS;
    return scheme == CLI_BIND_ANY && c->ncertfiles > 0;
}

int cli_tls_setup(cli_config *c, sp_server *s) {
    int n = server_nlisteners(s), any_https = 0, ntls = 0;
    for (int i = 0; i < n && i < (int)sizeof c->listener_scheme; i++)
        any_https |= c->listener_scheme[i] == CLI_BIND_HTTPS;
    if (any_https && !c->ncertfiles) {
        fprintf(stderr, "spindle: --bind https:// needs --certfile FILE (and --keyfile FILE "
                        "unless the key is in it)\n");
        return -1;
    }
    if (!c->ncertfiles)
        return 0;
    if (c->o.proxy_protocol) {
        fprintf(stderr, "spindle: --proxy-protocol with TLS listeners is not supported: the "
                        "PROXY header would have to come before the handshake; bind the "
                        "proxied address as http:// or proxy://\n");
        return -1;
    }
    char err[1024];
    c->tls = build(c, err, sizeof err);
    if (!c->tls) {
        fprintf(stderr, "spindle: %s\n", err);
        return -1;
    }
    server_set_tls_handshake_timeout(s, c->tls_handshake_timeout_ms);
    for (int i = 0; i < n; i++)
        if (wants_tls(c, i, any_https, s)) {
            server_set_listener_tls(s, i, c->tls);
            ntls++;
        }
    if (!ntls)
        log_msg(LOG_WARNING, "--certfile is given but no listener speaks TLS (every --bind is "
                             "http:// or proxy://)");
    log_msg(LOG_INFO, "TLS on %d listener(s) with %d certificate(s), TLS %s and newer", ntls,
            c->ncertfiles, c->tls_min_version == 13 ? "1.3" : "1.2");
    return 0;
}

int cli_tls_reload_build(const cli_config *c, const cli_config *fresh, tls_ctx **out) {
    *out = NULL;
    if (!c->tls) {
        if (fresh->ncertfiles)
            log_msg(LOG_WARNING, "--certfile added: it takes a restart to turn TLS on");
        return 0;
    }
    if (!fresh->ncertfiles) {
        log_msg(LOG_WARNING, "--certfile removed: it takes a restart to turn TLS off; the "
                             "TLS listeners keep their certificates");
        return 0;
    }
    char err[1024];
    *out = build(fresh, err, sizeof err);
    if (!*out) {
        log_msg(LOG_ERROR, "reload: %s", err);
        return -1;
    }
    return 0;
}

void cli_tls_reload_install(cli_config *c, const cli_config *fresh, sp_server *s, tls_ctx *t) {
    if (!t)
        return;
    int n = server_nlisteners(s);
    for (int i = 0; i < n; i++)
        if (server_listener_tls(s, i) == c->tls)
            server_set_listener_tls(s, i, t);
    /* The workers forked before keep their own copy of the old ones; the
     * master itself holds no connection (HUP reloads only with workers), so
     * no SSL of its own points into what is freed. */
    tls_ctx_free(c->tls);
    c->tls = t;
    memcpy(c->certfiles, fresh->certfiles, sizeof c->certfiles);
    memcpy(c->keyfiles, fresh->keyfiles, sizeof c->keyfiles);
    c->ncertfiles = fresh->ncertfiles;
    c->nkeyfiles = fresh->nkeyfiles;
    server_set_tls_handshake_timeout(s, fresh->tls_handshake_timeout_ms);
    log_msg(LOG_INFO, "reload: TLS certificates reread (%d); new workers use them",
            fresh->ncertfiles);
}

int cli_tls_check(const cli_config *c) {
    if (!c->ncertfiles)
        return 0;
    char err[1024];
    tls_ctx *t = build(c, err, sizeof err);
    if (!t) {
        fprintf(stderr, "spindle: %s\n", err);
        return -1;
    }
    tls_ctx_free(t);
    return 0;
}

void cli_tls_print(const cli_config *c) {
    /* --print-config runs before the values are applied: apply the TLS rows
     * to a scratch copy. */
    static const char *const rows[] = {"certfile",  "keyfile", "ca-certs",
                                       "cert-reqs", "ciphers", "tls-min-version"};
    cli_config tmp = *c;
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        const flag *f = cli_find_flag(rows[r]);
        if (f->kind == K_LIST) {
            const cli_list *l = cli_list_of(c, f);
            for (int k = 0; k < l->n; k++)
                if (cli_apply(&tmp, f, l->v[k]) < 0)
                    return;
        } else if (c->values[f - cli_flags] && cli_apply(&tmp, f, c->values[f - cli_flags]) < 0)
            return;
    }
    if (!tmp.ncertfiles)
        return;
    char err[1024];
    tls_ctx *t = build(&tmp, err, sizeof err);
    if (!t) {
        printf("# certificates: %s\n", err);
        return;
    }
    tls_ctx_describe(t, stdout, "# certificate ");
    tls_ctx_free(t);
}
