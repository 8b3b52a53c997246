/* static.h — a static mount with a fallback: sp_static (spindle.h) whose
 * requests for paths that name no file go to another handler instead of a
 * 404 (--root beside the WSGI application). */
#ifndef SPINDLE_STATIC_H
#define SPINDLE_STATIC_H

#include "spindle.h"

/* As sp_static, but a GET or HEAD for a path under prefix that names no
 * file (nor a directory with index.html) is handed to fallback(req, res,
 * fallback_ud) untouched; fallback NULL is sp_static. */
int static_mount_fallback(sp_server *s, const char *prefix, const char *dir, sp_handler fallback,
                          void *fallback_ud);

/* sp_static whose prefix belongs to the files alone: every method but GET
 * and HEAD under it is answered 405 (OPTIONS: 204 with Allow), so a route
 * or catch-all added later never sees a request there. 0 or -errno, as
 * sp_static (-ENAMETOOLONG for a prefix past STATIC_PATH_MAX). */
int static_mount_exclusive(sp_server *s, const char *prefix, const char *dir);

#endif
