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

#endif
