/* embed.h — what a binding that drives the server's loop itself may use
 * (the Python hub) beside handler.h: serving in steps, and the hooks a
 * binding installs (who drives the loop, start-up in each worker, the
 * fork). Nothing else of the server is reached from a binding. */
#ifndef SPINDLE_EMBED_H
#define SPINDLE_EMBED_H

#include "server/handler.h"

/* Serving on loop l, in steps: start (listeners on, connection table),
 * then the caller turns the loop until server_done, then finish. */
int server_start(sp_server *s, loop *l);
int server_done(const sp_server *s);
void server_finish(sp_server *s);

/* Who drives the loop in sp_server_run: NULL for the plain loop, or a
 * binding's own (the Python hub), which calls server_start/done/finish. */
void server_set_drive(sp_server *s, int (*drive)(sp_server *s, void *ud), void *ud);
/* Called in each worker process after the fork, before serving (the
 * Python binding imports the application there). fn returns 0 or -errno. */
void server_set_worker_init(sp_server *s, int (*fn)(sp_server *s, void *ud), void *ud);
int server_worker_init(sp_server *s);
/* Around the master's fork (the Python binding tells the interpreter):
 * FORK_BEFORE, then FORK_PARENT in the master or FORK_CHILD in the new
 * worker. */
enum { FORK_BEFORE, FORK_PARENT, FORK_CHILD };
void server_set_fork_hook(sp_server *s, void (*fn)(int phase, void *ud), void *ud);
void server_fork_hook(sp_server *s, int phase);

/* Serves an already connected socket as if just accepted (fuzzing and
 * tests drive the real connection code through a socketpair). The server
 * must be started (server_start). 0 or -errno. */
int server_adopt_conn(sp_server *s, int fd);

#endif
