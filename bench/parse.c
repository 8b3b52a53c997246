/* bench/parse.c — time per request of the head parser on a short GET and on
 * a 15-field browser request: nanoseconds from the clock, and instructions
 * from the CPU counter when perf_event_open is allowed. For exact counts run
 * it under callgrind with two iteration counts and take the difference:
 *   valgrind --tool=callgrind --callgrind-out-file=cg.N build/bench/parse N browser
 * for N = 1000 and 11000: (total(11000) - total(1000)) / 10000 is the cost of
 * one parse with its loop. Usage: parse [iterations [short|ab|browser]];
 * SPINDLE_HTTP_NO_AVX2=1 measures the baseline copy. */
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "http/http_parse.h"

static const char short_get[] = "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n";

/* What ab -k sends: the request of bench/run's instructions workload. */
static const char ab_get[] = "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\nHost: 127.0.0.1:40000\r\n"
                             "User-Agent: ApacheBench/2.3\r\nAccept: */*\r\n\r\n";

/* 15 fields, as a browser sends them (the shape of picohttpparser's bench). */
static const char browser[] =
    "GET /wp-content/uploads/2010/03/hello-kitty-darth-vader-pink.jpg HTTP/1.1\r\n"
    "Host: www.kittyhell.com\r\n"
    "User-Agent: Mozilla/5.0 (Macintosh; U; Intel Mac OS X 10.6; ja-JP-mac; rv:1.9.2.3) "
    "Gecko/20100401 Firefox/3.6.3 Pathtraq/0.9\r\n"
    "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n"
    "Accept-Language: ja,en-us;q=0.7,en;q=0.3\r\n"
    "Accept-Encoding: gzip,deflate\r\n"
    "Accept-Charset: Shift_JIS,utf-8;q=0.7,*;q=0.7\r\n"
    "Keep-Alive: 115\r\n"
    "Connection: keep-alive\r\n"
    "Cache-Control: max-age=0\r\n"
    "Upgrade-Insecure-Requests: 1\r\n"
    "Sec-Fetch-Dest: document\r\n"
    "Sec-Fetch-Mode: navigate\r\n"
    "Sec-Fetch-Site: none\r\n"
    "Referer: http://www.kittyhell.com/\r\n"
    "Cookie: wp_ozh_wsa_visits=2; wp_ozh_wsa_visit_lasttime=xxxxxxxxxx; "
    "__utma=xxxxxxxxx.xxxxxxxxxx.xxxxxxxxxx.xxxxxxxxxx.xxxxxxxxxx.x; "
    "__utmz=xxxxxxxxx.xxxxxxxxxx.x.x.utmccn=(referral)|utmcsr=reader.livedoor.com|"
    "utmcct=/reader/|utmcmd=referral\r\n"
    "\r\n";

static int perf_open(void) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.type = PERF_TYPE_HARDWARE;
    a.size = sizeof a;
    a.config = PERF_COUNT_HW_INSTRUCTIONS;
    a.disabled = 1;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
}

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void run(const char *name, const char *req, long iters, int pfd) {
    size_t len = strlen(req);
    http_field fields[100];
    http_request r = {.fields = fields, .fields_cap = 100};
    long sink = 0;
    uint64_t ins = 0;
    if (pfd >= 0) {
        ioctl(pfd, PERF_EVENT_IOC_RESET, 0);
        ioctl(pfd, PERF_EVENT_IOC_ENABLE, 0);
    }
    double t0 = now_ns();
    for (long i = 0; i < iters; i++) {
        /* The compiler must not hoist the call: the buffer "changes". */
        __asm__ volatile("" : : "r"(req) : "memory");
        sink += http_parse_request(req, len, 0, &r, NULL);
    }
    double t1 = now_ns();
    if (pfd >= 0) {
        ioctl(pfd, PERF_EVENT_IOC_DISABLE, 0);
        if (read(pfd, &ins, sizeof ins) != sizeof ins)
            ins = 0;
    }
    if (sink != (long)len * iters) {
        fprintf(stderr, "parse: %s: unexpected verdict\n", name);
        exit(1);
    }
    printf("%-8s %4zu bytes %3zu fields  %7.1f ns/req", name, len, r.nfields,
           (t1 - t0) / (double)iters);
    if (ins)
        printf("  %7.1f instructions/req (loop included)", (double)ins / (double)iters);
    printf("\n");
}

int main(int argc, char **argv) {
    long iters = argc > 1 ? atol(argv[1]) : 2000000;
    int pfd = perf_open();
    const char *only = argc > 2 ? argv[2] : NULL; /* "short", "ab" or "browser" */
    if (!only || strcmp(only, "short") == 0)
        run("short", short_get, iters, pfd);
    if (!only || strcmp(only, "ab") == 0)
        run("ab", ab_get, iters, pfd);
    if (!only || strcmp(only, "browser") == 0)
        run("browser", browser, iters, pfd);
    return 0;
}
