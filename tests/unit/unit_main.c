/* unit_main.c — runs the tests registered with TEST(): each in a forked
 * child with an alarm, stderr captured; death tests must die of the named
 * signal with the named message. Args: test names to run (default all). */
#include "unit.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define UNIT_MAX 512

typedef struct unit_case {
    const char *name;
    unit_fn fn;
    int timeout_s;
    int expect_signal;
    const char *expect_stderr;
} unit_case;

static unit_case cases[UNIT_MAX];
static int ncases;

void unit_register(const char *name, unit_fn fn, int timeout_s, int expect_signal,
                   const char *expect_stderr) {
    if (ncases == UNIT_MAX) {
        fprintf(stderr, "unit: more than %d tests in one binary; raise UNIT_MAX\n", UNIT_MAX);
        exit(2);
    }
    cases[ncases++] = (unit_case){name, fn, timeout_s, expect_signal, expect_stderr};
}

void unit_fail(const char *file, int line, const char *what) {
    fprintf(stderr, "  check failed at %s:%d: %s\n", file, line, what);
    fflush(stderr);
    _exit(1);
}

const void *unit_guarded(const void *src, size_t n) {
    static char *map;
    static size_t map_len;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t need = (n + pg - 1) / pg * pg + pg;
    if (need > map_len) {
        if (map)
            munmap(map, map_len);
        map = mmap(NULL, need, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (map == MAP_FAILED || mprotect(map + need - pg, pg, PROT_NONE) != 0)
            unit_fail(__FILE__, __LINE__, "mapping a guarded buffer");
        map_len = need;
    }
    char *dst = map + map_len - pg - n;
    memcpy(dst, src, n);
    return dst;
}

static int selected(const char *name, int argc, char **argv) {
    if (argc <= 1)
        return 1;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return 1;
    return 0;
}

/* Reads the child's stderr to EOF into buf (truncating), NUL-terminated. */
static void slurp(int fd, char *buf, size_t cap) {
    size_t len = 0;
    for (;;) {
        char tmp[4096];
        ssize_t n = read(fd, tmp, sizeof tmp);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        size_t take = (size_t)n < cap - 1 - len ? (size_t)n : cap - 1 - len;
        memcpy(buf + len, tmp, take);
        len += take;
    }
    buf[len] = '\0';
}

static int run_case(const unit_case *c) {
    int pipefd[2];
    if (pipe(pipefd) != 0) {
        perror("unit: pipe");
        return 0;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        perror("unit: fork");
        return 0;
    }
    if (pid == 0) {
        close(pipefd[0]);
        dup2(pipefd[1], STDERR_FILENO);
        close(pipefd[1]);
        signal(SIGALRM, SIG_DFL);
        alarm((unsigned)c->timeout_s);
        c->fn();
        fflush(stdout);
        fflush(stderr);
        _exit(0);
    }
    close(pipefd[1]);
    static char err[65536];
    slurp(pipefd[0], err, sizeof err);
    close(pipefd[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }

    int ok;
    const char *why = "";
    if (c->expect_signal) {
        ok = WIFSIGNALED(status) && WTERMSIG(status) == c->expect_signal;
        if (!ok)
            why = "did not die of the expected signal";
        else if (c->expect_stderr && !strstr(err, c->expect_stderr)) {
            ok = 0;
            why = "stderr lacks the expected message";
        }
    } else {
        ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (WIFSIGNALED(status))
            why = WTERMSIG(status) == SIGALRM ? "timed out" : strsignal(WTERMSIG(status));
        else if (!ok)
            why = "check failed";
    }
    if (ok) {
        printf("  ok   %s\n", c->name);
    } else {
        printf("  FAIL %s (%s)\n", c->name, why);
        if (err[0])
            printf("%s", err);
    }
    return ok;
}

int main(int argc, char **argv) {
    /* Death tests are skipped under valgrind (UNIT_NO_DEATH=1): valgrind
     * intercepts the faults they provoke. They run in the other builds. */
    int no_death = getenv("UNIT_NO_DEATH") != NULL;
    const char *self = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    int passed = 0, failed = 0, skipped = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 0; i < ncases; i++) {
        if (!selected(cases[i].name, argc, argv))
            continue;
        if (no_death && cases[i].expect_signal) {
            skipped++;
            continue;
        }
        if (run_case(&cases[i]))
            passed++;
        else
            failed++;
    }
    printf("%s: %d passed, %d failed", self, passed, failed);
    if (skipped)
        printf(", %d skipped", skipped);
    printf("\n");
    return failed ? 1 : 0;
}
