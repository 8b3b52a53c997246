/* failmalloc.c — an LD_PRELOAD shim that makes allocations fail on command.
 *
 * Build: cc -shared -fPIC -O1 -o failmalloc.so tests/fault/failmalloc.c
 * Use:   FAILMALLOC_CTL=/path/ctl LD_PRELOAD=./failmalloc.so program ...
 *
 * The control file (created by the caller, at least 32 bytes) is mapped
 * shared, so a test changes the mode of a running process by writing to it:
 *   offset 0  int32  every: 0 = allocations succeed; N = every Nth call of
 *                    malloc/calloc/realloc/posix_memalign/aligned_alloc/
 *                    memalign/valloc and anonymous mmap fails (1 = all)
 *   offset 4  int32  flags: 1 = also fail anonymous mmap (coroutine stacks)
 *   offset 8  uint64 calls seen while every != 0 (written by the shim)
 *   offset 16 uint64 calls failed (written by the shim)
 * Without FAILMALLOC_CTL, FAILMALLOC_NTH=N fails exactly the Nth allocation
 * call (counted from process start) and FAILMALLOC_AFTER=N fails every call
 * after the Nth: the simple modes for one-shot runs.
 *
 * The real functions are glibc's __libc_* ones (no dlsym, which allocates),
 * and mmap is the raw system call. Single counters without locks: a race
 * between threads only shifts which call fails. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

struct ctl {
    volatile int32_t every;
    volatile int32_t flags;
    volatile uint64_t calls;
    volatile uint64_t failed;
};

static struct ctl *ctl;
static int inited;
static uint64_t nth, after, count;

static long env_num(const char *name) {
    const char *v = getenv(name);
    return v ? strtol(v, NULL, 10) : 0;
}

static void init(void) {
    if (inited)
        return;
    inited = 1;
    const char *path = getenv("FAILMALLOC_CTL");
    if (path) {
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd >= 0) {
            void *m = (void *)syscall(SYS_mmap, NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if ((long)m != -1)
                ctl = m;
            close(fd);
        }
    }
    nth = (uint64_t)env_num("FAILMALLOC_NTH");
    after = (uint64_t)env_num("FAILMALLOC_AFTER");
}

__attribute__((constructor)) static void failmalloc_init(void) {
    init();
}

static int should_fail(int is_mmap) {
    if (!inited)
        return 0; /* before the constructor (the loader's own calls) */
    if (ctl) {
        int32_t every = ctl->every;
        if (every <= 0 || (is_mmap && !(ctl->flags & 1)))
            return 0;
        uint64_t n = ++ctl->calls;
        if (n % (uint64_t)every == 0) {
            ctl->failed++;
            return 1;
        }
        return 0;
    }
    count++;
    if (nth && count == nth)
        return 1;
    if (after && count > after)
        return 1;
    return 0;
}

void *malloc(size_t n) {
    if (should_fail(0)) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_malloc(n);
}

void *calloc(size_t a, size_t b) {
    if (should_fail(0)) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n) {
    if (n && should_fail(0)) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_realloc(p, n);
}

int posix_memalign(void **out, size_t align, size_t n) {
    if (should_fail(0))
        return ENOMEM;
    void *p = __libc_memalign(align, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

void *aligned_alloc(size_t align, size_t n) {
    if (should_fail(0)) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_memalign(align, n);
}

void *memalign(size_t align, size_t n) {
    if (should_fail(0)) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_memalign(align, n);
}

void *valloc(size_t n) {
    if (should_fail(0)) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_memalign((size_t)sysconf(_SC_PAGESIZE), n);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    if ((flags & MAP_ANONYMOUS) && should_fail(1)) {
        errno = ENOMEM;
        return MAP_FAILED;
    }
    long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    if (r < 0 && r > -4096) {
        errno = (int)-r;
        return MAP_FAILED;
    }
    return (void *)r;
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    return mmap(addr, len, prot, flags, fd, off);
}
