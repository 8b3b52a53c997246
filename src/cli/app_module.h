/* app_module.h — loading a C application from a shared object (--app). */
#ifndef SPINDLE_APP_MODULE_H
#define SPINDLE_APP_MODULE_H

#include "spindle.h"

#include <stddef.h>

/* dlopens path, checks the API version it declares and calls its init
 * function on s. 0, or -1 with a message for people in err. */
int app_module_load(sp_server *s, const char *path, char *err, size_t cap);

#endif
