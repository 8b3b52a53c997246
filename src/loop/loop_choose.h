/* loop_choose.h — which backend new loops get (--io-backend), and opening
 * it with the fallback to epoll where io_uring is missing or forbidden. */
#ifndef SPINDLE_LOOP_CHOOSE_H
#define SPINDLE_LOOP_CHOOSE_H

#include "loop/loop_backend.h"

/* Sets the backend of the loops made from now on (before sp_loop_new; the
 * default is auto). Not part of sp_loop_options: its size is ABI. */
void loop_set_default_backend(backend_kind kind);
backend_kind loop_default_backend(void);

/* Opens the chosen backend into *b and returns its ops; io_uring failing
 * to open (ENOSYS, EPERM from seccomp, kernel.io_uring_disabled) logs one
 * line saying why and gives epoll. NULL (errno set) if epoll fails too. */
const backend_ops *backend_open_chosen(void **b);

/* The backend a loop opened now would get for KIND (auto resolved, io_uring
 * tried): BACKEND_KIND_EPOLL or BACKEND_KIND_URING. */
backend_kind backend_kind_effective(backend_kind kind);

#endif
