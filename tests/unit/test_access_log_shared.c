/* test_access_log_shared.c — the access log on a buffer the caller owns
 * (server/access_log.h; the master's shared memory under workers): lines
 * are published whole, a flush empties the buffer (nothing written twice),
 * and a reader in another process sees only whole lines, before and after
 * the writer dies, and writes them out (access_buffer_salvage). */
#include "server/access_log.h"

#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static access_entry entry(int i) {
    static char target[32];
    int n = snprintf(target, sizeof target, "/line/%d", i);
    return (access_entry){.client = "10.0.0.1",
                          .method = "GET",
                          .method_len = 3,
                          .target = target,
                          .target_len = (size_t)n,
                          .minor_version = 1,
                          .status = 200,
                          .bytes = 5,
                          .time_ms = 1796121056123,
                          .pid = 42};
}

/* A buffer in MAP_SHARED memory, as slot_log.c makes them. */
static access_buffer *shared_buffer(size_t cap) {
    access_buffer *b =
        mmap(NULL, sizeof *b + cap, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(b != MAP_FAILED);
    b->cap = cap;
    return b;
}

static char log_path[64];

static access_log *open_on(access_buffer *b) {
    snprintf(log_path, sizeof log_path, "/tmp/spindle-test-alog.%d", (int)getpid());
    unlink(log_path);
    access_log_use_buffer(b);
    access_log *a = access_log_open(log_path, "%r %s");
    access_log_use_buffer(NULL);
    CHECK(a != NULL);
    return a;
}

static char file_text[1 << 20];

static const char *file_contents(void) {
    int fd = open(log_path, O_RDONLY);
    ssize_t n = fd < 0 ? 0 : read(fd, file_text, sizeof file_text - 1);
    if (fd >= 0)
        close(fd);
    file_text[n > 0 ? n : 0] = '\0';
    return file_text;
}

static int count_lines(const char *p, size_t len) {
    int n = 0;
    for (size_t i = 0; i < len; i++)
        n += p[i] == '\n';
    return n;
}

TEST(lines_are_published_whole_into_the_given_buffer) {
    access_buffer *b = shared_buffer(ACCESS_BUFFER_MIN);
    access_log *a = open_on(b);
    CHECK_STR(b->path, log_path); /* for whoever writes out what a crash left */
    CHECK_EQ(access_buffer_pending(b), 0);
    access_entry e = entry(1);
    access_log_write(a, &e);
    CHECK_MEM(b->base, access_buffer_pending(b), "GET /line/1 HTTP/1.1 200\n");
    e = entry(2);
    access_log_write(a, &e);
    CHECK_MEM(b->base, access_buffer_pending(b),
              "GET /line/1 HTTP/1.1 200\nGET /line/2 HTTP/1.1 200\n");
    CHECK_STR(file_contents(), ""); /* buffered: nothing written yet */
    access_log_close(a);
    unlink(log_path);
}

TEST(a_flush_writes_once_and_empties_the_buffer) {
    access_buffer *b = shared_buffer(ACCESS_BUFFER_MIN);
    access_log *a = open_on(b);
    access_entry e = entry(1);
    access_log_write(a, &e);
    access_log_flush(a);
    CHECK_EQ(access_buffer_pending(b), 0);
    CHECK_STR(file_contents(), "GET /line/1 HTTP/1.1 200\n");
    /* Nothing pending: a salvage after a clean exit writes nothing again. */
    CHECK_EQ(access_buffer_salvage(b), 0);
    e = entry(2);
    access_log_write(a, &e);
    access_log_close(a); /* flushes */
    CHECK_EQ(access_buffer_pending(b), 0);
    CHECK_STR(file_contents(), "GET /line/1 HTTP/1.1 200\nGET /line/2 HTTP/1.1 200\n");
    CHECK_EQ(access_buffer_salvage(b), 0);
    CHECK_STR(file_contents(), "GET /line/1 HTTP/1.1 200\nGET /line/2 HTTP/1.1 200\n");
    unlink(log_path);
}

TEST(a_full_buffer_flushes_whole_lines_only) {
    access_buffer *b = shared_buffer(ACCESS_BUFFER_MIN);
    access_log *a = open_on(b);
    for (int i = 0; i < 3000; i++) { /* ~90 KB: at least one flush on the way */
        access_entry e = entry(i);
        access_log_write(a, &e);
        size_t len = access_buffer_pending(b);
        CHECK(len > 0 && b->base[len - 1] == '\n');
    }
    size_t pending = access_buffer_pending(b);
    const char *f = file_contents();
    size_t flen = strlen(f);
    CHECK(flen > 0 && f[flen - 1] == '\n');
    CHECK_EQ(count_lines(f, flen) + count_lines(b->base, pending), 3000);
    access_log_close(a);
    f = file_contents();
    CHECK_EQ(count_lines(f, strlen(f)), 3000);
    unlink(log_path);
}

/* The writer dies (as a worker would, by a signal) with lines buffered: the
 * reader finds exactly those lines and writes them out, once. */
static void die_with_lines(access_buffer *b, int sig) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        access_log *a = open_on(b);
        for (int i = 0; i < 3; i++) {
            access_entry e = entry(i);
            access_log_write(a, &e);
        }
        signal(sig, SIG_DFL); /* a sanitizer's handler would exit instead */
        raise(sig);
        _exit(0);
    }
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == sig);
    snprintf(log_path, sizeof log_path, "/tmp/spindle-test-alog.%d", (int)pid);
}

TEST(a_dead_writers_lines_are_left_whole_for_the_reader) {
    int sigs[] = {SIGKILL, SIGSEGV, SIGABRT};
    for (int k = 0; k < 3; k++) {
        access_buffer *b = shared_buffer(ACCESS_BUFFER_MIN);
        die_with_lines(b, sigs[k]);
        CHECK_STR(file_contents(), ""); /* the writer never flushed */
        CHECK_STR(b->path, log_path);
        const char *want =
            "GET /line/0 HTTP/1.1 200\nGET /line/1 HTTP/1.1 200\nGET /line/2 HTTP/1.1 200\n";
        CHECK_MEM(b->base, access_buffer_pending(b), want);
        CHECK_EQ(access_buffer_salvage(b), (ssize_t)strlen(want));
        CHECK_EQ(access_buffer_pending(b), 0);
        CHECK_STR(file_contents(), want);
        CHECK_EQ(access_buffer_salvage(b), 0); /* not twice */
        CHECK_STR(file_contents(), want);
        unlink(log_path);
    }
}

/* A reader watching a live writer in another process: every length it
 * loads ends a line, and the bytes before it are whole lines in order. */
TEST(a_concurrent_reader_sees_only_whole_lines) {
    access_buffer *b = shared_buffer(ACCESS_BUFFER_MIN);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        access_log *a = open_on(b);
        for (int i = 0; i < 1000; i++) { /* ~27 KB: no flush */
            access_entry e = entry(i);
            access_log_write(a, &e);
        }
        _exit(0); /* no flush: the reader keeps what is there */
    }
    size_t last = 0;
    int done = 0;
    while (!done) {
        done = waitpid(pid, NULL, WNOHANG) == pid;
        size_t len = access_buffer_pending(b);
        CHECK(len >= last);
        if (len > last) { /* the newest line is whole: it ends the published bytes */
            CHECK_EQ(b->base[len - 1], '\n');
            int n = count_lines(b->base, len);
            char want[32];
            int wn = snprintf(want, sizeof want, "GET /line/%d HTTP/1.1 200\n", n - 1);
            CHECK(len >= (size_t)wn && memcmp(b->base + len - wn, want, (size_t)wn) == 0);
        }
        last = len;
    }
    size_t len = access_buffer_pending(b);
    CHECK_EQ(count_lines(b->base, len), 1000);
    char want[32];
    const char *p = b->base;
    for (int i = 0; i < 1000; i++) {
        int n = snprintf(want, sizeof want, "GET /line/%d HTTP/1.1 200\n", i);
        CHECK(memcmp(p, want, (size_t)n) == 0);
        p += n;
    }
    snprintf(log_path, sizeof log_path, "/tmp/spindle-test-alog.%d", (int)pid);
    unlink(log_path);
}

TEST(lines_left_in_a_buffer_are_kept_by_the_next_writer) {
    access_buffer *b = shared_buffer(ACCESS_BUFFER_MIN);
    memcpy(b->base, "left over\n", 10);
    atomic_store(&b->len, 10);
    access_log *a = open_on(b);
    access_entry e = entry(7);
    access_log_write(a, &e);
    access_log_flush(a);
    CHECK_STR(file_contents(), "left over\nGET /line/7 HTTP/1.1 200\n");
    access_log_close(a);
    unlink(log_path);
}

TEST(without_a_given_buffer_the_log_has_its_own) {
    access_buffer *small = shared_buffer(4096); /* too small: refused */
    access_log *a = open_on(small);
    access_entry e = entry(1);
    access_log_write(a, &e);
    CHECK_EQ(access_buffer_pending(small), 0);
    access_log_close(a);
    CHECK_STR(file_contents(), "GET /line/1 HTTP/1.1 200\n");
    unlink(log_path);
    a = open_on(NULL); /* --workers 0: as before */
    access_log_write(a, &e);
    access_log_close(a);
    CHECK_STR(file_contents(), "GET /line/1 HTTP/1.1 200\n");
    unlink(log_path);
}

TEST(a_salvage_that_cannot_open_the_log_keeps_the_lines) {
    access_buffer *b = shared_buffer(ACCESS_BUFFER_MIN);
    memcpy(b->base, "x\n", 2);
    atomic_store(&b->len, 2);
    strcpy(b->path, "/nonexistent-dir/a.log");
    CHECK_EQ(access_buffer_salvage(b), -ENOENT);
    CHECK_EQ(access_buffer_pending(b), 2); /* kept for the next writer */
    b->path[0] = '\0';
    CHECK_EQ(access_buffer_salvage(b), -ENAMETOOLONG);
}
