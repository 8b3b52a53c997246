/* clock.h — the monotonic clock in milliseconds, for the leaf helpers that
 * need time without the loop (log_ratelimited); loop_clock_ms is this. */
#ifndef SPINDLE_CLOCK_H
#define SPINDLE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t clock_mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
