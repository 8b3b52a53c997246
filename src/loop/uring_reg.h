/* uring_reg.h — the io_uring backend's registration table, by fd: a CQE
 * carries (generation << 32 | fd), never a pointer, so a completion that
 * arrives after its watch was removed (or its fd closed and reused) is told
 * apart by its generation and dropped. Pure bookkeeping: no io_uring. */
#ifndef SPINDLE_LOOP_URING_REG_H
#define SPINDLE_LOOP_URING_REG_H

#include <stddef.h>
#include <stdint.h>

/* The user_data of requests whose completions carry nothing (removals,
 * closes): fd 0xffffffff is never a live entry. */
#define URING_TAG_IGNORE UINT64_MAX
/* Bit 63 marks a one-off operation's tag (a backend_op pointer); so a
 * generation has 31 bits. */
#define URING_TAG_OP   ((uint64_t)1 << 63)
#define URING_GEN_MASK 0x7fffffffu

typedef struct uring_entry {
    void *data;
    uint32_t gen;  /* bumped on every add and del */
    uint8_t live;  /* registered */
    uint8_t mode;  /* backend_mode */
    uint8_t rearm; /* its poll ended: arm again at the next wait */
} uring_entry;

typedef struct uring_reg {
    uring_entry *e;
    size_t cap;
    int *rearm; /* fds whose poll ended, to arm again (may hold stale ones) */
    size_t nrearm, caprearm;
} uring_reg;

/* Registers fd: 0, -EEXIST (already live), -ENOMEM, -EBADF (fd < 0). */
int uring_reg_add(uring_reg *r, int fd, uint8_t mode, void *data);
/* Unregisters fd: 0 or -ENOENT. uring_reg_del_tag also gives the tag the
 * entry had (the request to remove). */
int uring_reg_del(uring_reg *r, int fd);
int uring_reg_del_tag(uring_reg *r, int fd, uint64_t *tag);
/* The live entry of fd (fd must be live), and its current tag. */
const uring_entry *uring_reg_get(const uring_reg *r, int fd);
uint64_t uring_reg_tag(const uring_reg *r, int fd);
/* The live entry a completion's tag names, with its fd; NULL when stale. */
uring_entry *uring_reg_lookup(uring_reg *r, uint64_t tag, int *fd);
/* Marks fd's poll as ended; uring_reg_next_rearm hands out each live,
 * marked fd once (clearing the mark), then -1. */
void uring_reg_want_rearm(uring_reg *r, int fd);
int uring_reg_next_rearm(uring_reg *r);
void uring_reg_free(uring_reg *r);

#endif
