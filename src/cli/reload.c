/* reload.c — cli_reload, the master's HUP hook: the same command line and
 * config file parsed again, the flag table's reloadable rows copied into
 * the running configuration, and a warning for every other row whose value
 * changed (it takes a restart). */
#include "cli/flags.h"

#include "base/log.h"
#include "server/server.h"

#include <stdlib.h>
#include <string.h>

static int strs_differ(const char *a, const char *b) {
    return a && b ? strcmp(a, b) != 0 : a != b;
}

/* Whether row f holds different values in a and b. */
static int row_differs(const cli_config *a, const cli_config *b, const flag *f) {
    if (f->kind == K_LIST) {
        const cli_list *la = cli_list_of(a, f), *lb = cli_list_of(b, f);
        if (la->n != lb->n)
            return 1;
        for (int i = 0; i < la->n; i++)
            if (strcmp(la->v[i], lb->v[i]) != 0)
                return 1;
        return 0;
    }
    if (f->type == T_NONE) { /* a setter: what was written */
        size_t i = (size_t)(f - cli_flags);
        return strs_differ(a->values[i], b->values[i]);
    }
    const char *pa = (const char *)a + f->off, *pb = (const char *)b + f->off;
    if (f->type == T_STR)
        return strs_differ(*(const char *const *)pa, *(const char *const *)pb);
    return memcmp(pa, pb, cli_field_size(f)) != 0;
}

/* The reloadable rows' fields from src into dst. Setter rows (the log
 * level) took effect as they were parsed. */
static void copy_reloadable(cli_config *dst, const cli_config *src) {
    for (size_t i = 0; i < cli_nflags; i++) {
        const flag *f = &cli_flags[i];
        if (f->reload && f->type != T_NONE)
            memcpy((char *)dst + f->off, (const char *)src + f->off, cli_field_size(f));
    }
}

int cli_reload(sp_server *s, master_options *mo, void *ud) {
    cli_config *c = ud; /* mo is &c->mo: what the master runs by */
    cli_config *fresh = calloc(1, sizeof *fresh), *next = malloc(sizeof *next);
    if (!fresh || !next)
        goto fail;
    fresh->prog = c->prog;
    if (cli_parse(c->argc, c->argv, fresh) != 0)
        goto fail;
    /* The certificates built aside, then the server's options on a copy: a
     * refusal of either applies nothing. */
    struct tls_ctx *tls;
    if (cli_tls_reload_build(c, fresh, &tls) < 0)
        goto fail;
    *next = *c;
    copy_reloadable(next, fresh);
    if (server_set_options(s, &next->o) < 0) {
        tls_ctx_free(tls);
        goto fail;
    }
    server_set_http2(s, next->http2_off, next->http2_max_streams);
    cli_tls_reload_install(c, fresh, s, tls);
    /* Into the running configuration, field by field: what the master holds
     * pointers into (mo.board, the reload hook, the pid file) stays. */
    copy_reloadable(c, fresh);
    for (size_t i = 0; i < cli_nflags; i++) {
        const flag *f = &cli_flags[i];
        if (!f->reload && f->kind != K_META && (f->role & c->role) && row_differs(c, fresh, f))
            log_msg(LOG_WARNING, "--%s changed: it takes a restart to apply", f->name);
    }
    /* fresh's own strings stay allocated: reloaded fields may point into
     * them (a small leak per reload). */
    free(next);
    free(fresh);
    return 0;
fail:
    if (fresh)
        cli_free(fresh);
    free(fresh);
    free(next);
    return -1;
}
