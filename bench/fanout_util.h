/* fanout_util.h — bench/fanout.c's helpers that know nothing of its
 * protocols: the clocks (monotonic, its own CPU time, a CPU's busy ticks),
 * a non-blocking loopback dial and a number after a key in a payload.
 * Included by fanout.c alone (the Makefile builds one file per program). */
#ifndef FANOUT_UTIL_H
#define FANOUT_UTIL_H

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* CPU cpu's busy and total ticks from /proc/stat: how busy the servers' CPU
 * was during a phase (is the server or this generator the limit?). */
static void cpu_ticks(int cpu, long long *busy, long long *total) {
    char want[16], line[256];
    snprintf(want, sizeof want, "cpu%d ", cpu);
    *busy = *total = 0;
    FILE *f = fopen("/proc/stat", "r");
    while (f && fgets(line, sizeof line, f)) {
        long long v[8] = {0};
        if (strncmp(line, want, strlen(want)) != 0)
            continue;
        sscanf(line + strlen(want), "%lld %lld %lld %lld %lld %lld %lld %lld", &v[0], &v[1], &v[2],
               &v[3], &v[4], &v[5], &v[6], &v[7]);
        for (int i = 0; i < 8; i++)
            *total += v[i];
        *busy = *total - v[3] - v[4];
    }
    if (f)
        fclose(f);
}

static int cmp64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int dial(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(0x7f000001);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

static long num_after(const char *p, size_t n, const char *key) {
    const char *k = memmem(p, n, key, strlen(key));
    if (!k)
        return -1;
    const char *end = p + n;
    k += strlen(key);
    while (k < end && (*k < '0' || *k > '9'))
        k++;
    long v = 0;
    int any = 0;
    for (; k < end && *k >= '0' && *k <= '9'; k++, any = 1)
        v = v * 10 + (*k - '0');
    return any ? v : -1;
}

#endif
