/* uring_reg.c — the io_uring backend's fd-indexed registration table with
 * generations (see uring_reg.h). */
#include "loop/uring_reg.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int grow(uring_reg *r, int fd) {
    if ((size_t)fd < r->cap)
        return 0;
    size_t cap = r->cap ? r->cap : 256;
    while (cap <= (size_t)fd)
        cap *= 2;
    uring_entry *e = realloc(r->e, cap * sizeof *e);
    if (!e)
        return -ENOMEM;
    memset(e + r->cap, 0, (cap - r->cap) * sizeof *e);
    r->e = e;
    r->cap = cap;
    return 0;
}

int uring_reg_add(uring_reg *r, int fd, uint8_t mode, void *data) {
    if (fd < 0)
        return -EBADF;
    if (grow(r, fd) < 0)
        return -ENOMEM;
    uring_entry *e = &r->e[fd];
    if (e->live)
        return -EEXIST;
    e->gen = (e->gen + 1) & URING_GEN_MASK;
    e->live = 1;
    e->mode = mode;
    e->rearm = 0;
    e->data = data;
    return 0;
}

uint64_t uring_reg_tag(const uring_reg *r, int fd) {
    return (uint64_t)r->e[fd].gen << 32 | (uint32_t)fd;
}

const uring_entry *uring_reg_get(const uring_reg *r, int fd) {
    return &r->e[fd];
}

int uring_reg_del_tag(uring_reg *r, int fd, uint64_t *tag) {
    if (fd < 0 || (size_t)fd >= r->cap || !r->e[fd].live)
        return -ENOENT;
    *tag = uring_reg_tag(r, fd);
    uring_entry *e = &r->e[fd];
    e->live = 0;
    e->rearm = 0;
    e->data = NULL;
    e->gen = (e->gen + 1) & URING_GEN_MASK; /* every CQE in flight for the old poll is stale */
    return 0;
}

int uring_reg_del(uring_reg *r, int fd) {
    uint64_t tag;
    return uring_reg_del_tag(r, fd, &tag);
}

uring_entry *uring_reg_lookup(uring_reg *r, uint64_t tag, int *fd) {
    uint32_t f = (uint32_t)tag, gen = (uint32_t)(tag >> 32);
    if (tag == URING_TAG_IGNORE || (tag & URING_TAG_OP) || f >= r->cap)
        return NULL;
    uring_entry *e = &r->e[f];
    if (!e->live || e->gen != gen)
        return NULL;
    *fd = (int)f;
    return e;
}

void uring_reg_want_rearm(uring_reg *r, int fd) {
    uring_entry *e = &r->e[fd];
    if (e->rearm)
        return;
    if (r->nrearm == r->caprearm) {
        size_t cap = r->caprearm ? r->caprearm * 2 : 64;
        int *a = realloc(r->rearm, cap * sizeof *a);
        if (!a)
            return; /* the watch goes deaf; only under memory exhaustion */
        r->rearm = a;
        r->caprearm = cap;
    }
    e->rearm = 1;
    r->rearm[r->nrearm++] = fd;
}

int uring_reg_next_rearm(uring_reg *r) {
    while (r->nrearm) {
        int fd = r->rearm[--r->nrearm];
        uring_entry *e = &r->e[fd];
        if (e->live && e->rearm) {
            e->rearm = 0;
            return fd;
        }
    }
    return -1;
}

void uring_reg_free(uring_reg *r) {
    free(r->e);
    free(r->rearm);
    *r = (uring_reg){0};
}
