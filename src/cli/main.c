/* main.c — the `spindle` command: flags (cli.c) into a server with the
 * demo routes or an --app module, then the master and its workers. */
#include "cli/app_module.h"
#include "cli/cli.h"
#include "base/log.h"
#include "process/master.h"
#include "spindle.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    static cli_config c; /* lives as long as the master: reload re-parses into it */
    int rc = cli_parse(argc, argv, &c);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    if (c.chdir && chdir(c.chdir) != 0) {
        fprintf(stderr, "spindle: --chdir %s: %s\n", c.chdir, strerror(errno));
        return 1;
    }
    sp_server *s = sp_server_new(&c.o);
    if (!s) {
        fprintf(stderr, "spindle: %s\n",
                errno == EINVAL ? "--forwarded-allow-ips: not a list of IPs and CIDRs"
                                : strerror(errno));
        return 1;
    }
    if (cli_setup_server(&c, s) < 0) {
        sp_server_free(s);
        return 2;
    }
    if (c.app) {
        char err[512];
        if (app_module_load(s, c.app, err, sizeof err) < 0) {
            fprintf(stderr, "spindle: --app: %s\n", err);
            sp_server_free(s);
            return 1;
        }
    } else if ((rc = sp_demo_routes(s)) < 0) {
        fprintf(stderr, "spindle: cannot add the demo routes: %s\n", strerror(-rc));
        sp_server_free(s);
        return 1;
    }
    if (cli_setup_sessions(&c, s) < 0) {
        sp_server_free(s);
        return 1;
    }
    /* Static files last: routes added before them win. */
    if (c.root && (rc = sp_static(s, "/", c.root)) < 0) {
        fprintf(stderr, "spindle: --root %s: %s\n", c.root, strerror(-rc));
        sp_server_free(s);
        return 1;
    }
    if (cli_listen(&c, s) < 0 || cli_drop_privileges(&c) < 0) {
        sp_server_free(s);
        return 1;
    }
    c.mo.reload = cli_reload;
    c.mo.reload_ud = &c;
    rc = master_run(s, &c.mo);
    sp_server_free(s);
    return rc;
}
