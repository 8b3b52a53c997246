/* app_module.c — --app: a C application as a shared object. The module's
 * sp_app_api_version must equal ours (a mismatch would mean different
 * struct layouts or contracts), then its sp_app_init adds the routes. */
#include "cli/app_module.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int app_module_load(sp_server *s, const char *path, char *err, size_t cap) {
    /* dlopen searches the library path for a bare name: make it a path. */
    char full[4096];
    snprintf(full, sizeof full, "%s%s", strchr(path, '/') ? "" : "./", path);
    void *h = dlopen(full, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(err, cap, "cannot load %s: %s", path, dlerror());
        return -1;
    }
    const int *version = dlsym(h, "sp_app_api_version");
    sp_app_init_fn init;
    *(void **)&init = dlsym(h, "sp_app_init");
    if (!version || !init) {
        snprintf(err, cap,
                 "%s is not a spindle application: it lacks sp_app_api_version or sp_app_init "
                 "(declare them with SP_APP_MODULE(your_init) from spindle.h)",
                 path);
        dlclose(h);
        return -1;
    }
    if (*version != SPINDLE_API_VERSION) {
        snprintf(err, cap,
                 "%s was built against spindle API %d, but this spindle speaks API %d; rebuild it "
                 "against this spindle's include/spindle.h",
                 path, *version, SPINDLE_API_VERSION);
        dlclose(h);
        return -1;
    }
    int rc = init(s);
    if (rc < 0) {
        snprintf(err, cap, "%s: its init function failed: %s", path, strerror(-rc));
        return -1;
    }
    return 0; /* the module stays loaded for the life of the process */
}
