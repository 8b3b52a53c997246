/* main.c — the `spindle` command: the flags (parse.c) into the start-up
 * sequence (startup.c) with an --app module, the demo routes, or neither
 * when a static root is what was asked for. */
#include "cli/app_module.h"
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

/* Whether the flags serve a site at / (--root DIR, --static-map /=DIR): then
 * GET / is the site's index, not the demo's hello world. */
static int serves_a_site(const cli_config *c) {
    if (c->root)
        return 1;
    for (int i = 0; i < c->nstatic_maps; i++)
        if (strncmp(c->static_maps[i], "/=", 2) == 0)
            return 1;
    return 0;
}

/* The application's routes: the --app module's, or the demo routes when
 * nothing else was asked for. */
static int add_routes(sp_server *s, cli_config *c, void *ud) {
    if (c->app) {
        char err[512];
        if (app_module_load(s, c->app, err, sizeof err) < 0) {
            fprintf(stderr, "spindle: --app: %s\n", err);
            return 1;
        }
        return 0;
    }
    if (serves_a_site(c) && !c->demo)
        return 0;
    int rc = sp_demo_routes(s);
    if (rc < 0) {
        fprintf(stderr, "spindle: cannot add the demo routes: %s\n", strerror(-rc));
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    static cli_config c; /* lives as long as the master: reload re-parses into it */
    int rc = cli_parse(argc, argv, &c);
    if (rc != 0)
        return rc > 0 ? 0 : c.check_config ? 1 : 2;
    return cli_serve(&c, &(cli_app){.setup = add_routes});
}
