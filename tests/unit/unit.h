/* unit.h — the unit-test harness: TEST(name) registers a test; the runner
 * (unit_main.c) runs each in a forked child with a timeout, so one crash
 * or hang cannot take the run down, and prints "N passed, N failed". */
#ifndef SPINDLE_UNIT_H
#define SPINDLE_UNIT_H

#include <stdio.h>
#include <string.h>

typedef void (*unit_fn)(void);

/* expect_signal: 0 for a normal test, else the signal the child must die
 * of; expect_stderr: text the child's stderr must contain (or NULL). */
void unit_register(const char *name, unit_fn fn, int timeout_s, int expect_signal,
                   const char *expect_stderr);
_Noreturn void unit_fail(const char *file, int line, const char *what);

/* A copy of src[0..n) that ends exactly where a PROT_NONE page begins, so a
 * parser reading one byte too far faults. Valid until the next call. */
const void *unit_guarded(const void *src, size_t n);

#define UNIT_REG(name, timeout, sig, msg)                                                          \
    static void name(void);                                                                        \
    __attribute__((constructor)) static void unit_reg_##name(void) {                               \
        unit_register(#name, name, timeout, sig, msg);                                             \
    }                                                                                              \
    static void name(void)

/* A test that must finish within 10 s (TEST_T: a timeout of its own). */
#define TEST(name)        UNIT_REG(name, 10, 0, NULL)
#define TEST_T(name, sec) UNIT_REG(name, sec, 0, NULL)
/* A test whose child must die of signal sig with msg on stderr. */
#define TEST_DEATH(name, sig, msg) UNIT_REG(name, 10, sig, msg)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            unit_fail(__FILE__, __LINE__, #cond);                                                  \
    } while (0)

#define CHECK_EQ(a, b)                                                                             \
    do {                                                                                           \
        long long unit_a_ = (long long)(a), unit_b_ = (long long)(b);                              \
        if (unit_a_ != unit_b_) {                                                                  \
            fprintf(stderr, "  %s = %lld, %s = %lld\n", #a, unit_a_, #b, unit_b_);                 \
            unit_fail(__FILE__, __LINE__, #a " == " #b);                                           \
        }                                                                                          \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *unit_a_ = (a), *unit_b_ = (b);                                                 \
        if (strcmp(unit_a_, unit_b_) != 0) {                                                       \
            fprintf(stderr, "  %s = \"%s\"\n  %s = \"%s\"\n", #a, unit_a_, #b, unit_b_);           \
            unit_fail(__FILE__, __LINE__, #a " == " #b);                                           \
        }                                                                                          \
    } while (0)

/* Compares a (pointer, length) slice with a C string. */
#define CHECK_MEM(ptr, len, str)                                                                   \
    do {                                                                                           \
        size_t unit_l_ = (size_t)(len);                                                            \
        if (unit_l_ != strlen(str) || memcmp((ptr), (str), unit_l_) != 0) {                        \
            fprintf(stderr, "  got \"%.*s\"\n  want \"%s\"\n", (int)unit_l_, (const char *)(ptr),  \
                    (str));                                                                        \
            unit_fail(__FILE__, __LINE__, #ptr " == " #str);                                       \
        }                                                                                          \
    } while (0)

#endif
