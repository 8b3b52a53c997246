/* main.c — the `spindle` command: the flags (parse.c) into the start-up
 * sequence (startup.c) with an --app module or the demo routes. */
#include "cli/app_module.h"
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

/* The application's routes: the --app module's, or the demo routes. */
static int add_routes(sp_server *s, cli_config *c, void *ud) {
    if (c->app) {
        char err[512];
        if (app_module_load(s, c->app, err, sizeof err) < 0) {
            fprintf(stderr, "spindle: --app: %s\n", err);
            return 1;
        }
        return 0;
    }
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
