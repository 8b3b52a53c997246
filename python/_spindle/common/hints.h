/* hints.h — 103 Early Hints for both interfaces (hints.c): the links
 * checked into a C array over bytes a list keeps, and WSGI's callable. */
#ifndef SPINDLE_PY_HINTS_H
#define SPINDLE_PY_HINTS_H

#include <Python.h>

#define HINTS_MAX_LINKS 16 /* sp_res_early_hints's limit */

typedef struct hints_list {
    PyObject *keep; /* a list of the bytes v points into */
    const char **v; /* PyMem */
    size_t n;
} hints_list;

/* links (an iterable of bytes or str) checked into out: 0, or -1 with
 * TypeError/ValueError raised (nothing to release). */
int hints_collect(PyObject *links, hints_list *out);
void hints_release(hints_list *l);
/* spindle.early_hints, one object for the module and every environ (a
 * borrowed reference; NULL when out of memory). */
PyObject *hints_function(void);

#endif
