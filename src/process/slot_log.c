/* slot_log.c — the workers' access-log buffers (slot_log.h): one mapping
 * shared by the master and every worker, made before the first fork, a
 * header (access_buffer) and ACCESS_BUFFER_MIN bytes per slot. A worker
 * formats its lines there (server/access_log.c publishes each line whole);
 * a worker that dies leaves them for the master to write. */
#include "process/slot_log.h"

#include "base/log.h"
#include "server/access_log.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

static char *region;
static int nbufs;
static size_t region_bytes;

/* Each slot's header and lines, page-rounded: a slot never used costs no
 * page. */
#define STRIDE ((sizeof(access_buffer) + ACCESS_BUFFER_MIN + 4095) & ~(size_t)4095)

int slot_log_map(int n) {
    size_t bytes = (size_t)n * STRIDE;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED) {
        log_msg(LOG_ERROR, "cannot map the workers' access-log buffers: %s", strerror(errno));
        return -1;
    }
    region = p;
    nbufs = n;
    region_bytes = bytes;
    return 0;
}

void slot_log_unmap(void) {
    if (region)
        munmap(region, region_bytes);
    region = NULL;
    nbufs = 0;
}

static access_buffer *header(int i) {
    return region && i >= 0 && i < nbufs ? (access_buffer *)(void *)(region + (size_t)i * STRIDE)
                                         : NULL;
}

/* The master salvaged the previous worker's lines at its reap, so a new
 * one starts empty; what is still there (a salvage that failed) is kept and
 * written with the new worker's first flush. */
access_buffer *slot_log_buffer(int i) {
    access_buffer *b = header(i);
    if (!b)
        return NULL;
    b->cap = STRIDE - sizeof *b;
    return b;
}

void slot_log_salvage(int i, pid_t pid) {
    access_buffer *b = header(i);
    if (!b || !b->cap) /* never used by a worker */
        return;
    /* What a dying worker may have scribbled must not take us past its
     * buffer: the size and the path's end are ours to say. */
    b->cap = STRIDE - sizeof *b;
    b->path[sizeof b->path - 1] = '\0';
    ssize_t n = access_buffer_salvage(b);
    if (n > 0)
        log_msg(LOG_INFO, "worker %d: wrote the %zd bytes of access-log lines it left unwritten",
                (int)pid, n);
    else if (n < 0)
        log_msg(LOG_ERROR, "worker %d: cannot write the access-log lines it left to %s: %s",
                (int)pid, b->path[0] ? b->path : "(path too long)", strerror((int)-n));
}
