/* flag_values.c — a value from a flag, a config file or the environment
 * into its row's field, by the row's kind: seconds (fractions, as ms),
 * sizes with k/m/g, whole numbers with their bounds, strings; or the row's
 * own setter. */
#include "cli/flags.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parses "1.5" seconds into ms; -1 on error. */
static long parse_seconds(const char *s) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || v < 0 || v > 86400 * 365)
        return -1;
    return (long)(v * 1000 + 0.5);
}

static long long parse_size(const char *s) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || v < 0)
        return -1;
    int shift = 0;
    switch (*end) {
    case 'k':
    case 'K':
        shift = 10;
        break;
    case 'm':
    case 'M':
        shift = 20;
        break;
    case 'g':
    case 'G':
        shift = 30;
        break;
    default:
        return *end ? -1 : v;
    }
    return end[1] ? -1 : v << shift;
}

/* The text as a number by f's kind: 0, or -1 with a message naming it. */
static int parse_number(const flag *f, const char *arg, unsigned long long *out) {
    const char *name = f->name;
    switch (f->kind) {
    case K_SECONDS: {
        long v = parse_seconds(arg);
        if (v < 0 || v > 0x7fffffff) {
            fprintf(stderr, "spindle: --%s wants seconds (e.g. 10 or 0.5), not '%s'\n", name, arg);
            return -1;
        }
        *out = (unsigned long long)v;
        return 0;
    }
    case K_INT:
    case K_INT0: {
        char *end;
        long v = strtol(arg, &end, 10), min = f->kind == K_INT0 ? 0 : 1;
        if (end == arg || *end || v < min || v > 10000000) {
            fprintf(stderr, "spindle: --%s wants a whole number from %ld up, not '%s'\n", name, min,
                    arg);
            return -1;
        }
        *out = (unsigned long long)v;
        return 0;
    }
    case K_SIZE: {
        long long v = parse_size(arg);
        if (v < 0) {
            fprintf(stderr, "spindle: --%s wants a size in bytes (e.g. 8192, 64k, 1m), not '%s'\n",
                    name, arg);
            return -1;
        }
        *out = (unsigned long long)v;
        return 0;
    }
    case K_FLAG:
        if (strcmp(arg, "true") != 0 && strcmp(arg, "false") != 0) {
            fprintf(stderr, "spindle: %s is true or false, not '%s'\n", name, arg);
            return -1;
        }
        *out = strcmp(arg, "true") == 0;
        return 0;
    default:
        return -1;
    }
}

int cli_apply(cli_config *c, const flag *f, const char *text) {
    if (f->set)
        return f->set(c, text);
    char *at = (char *)c + f->off;
    if (f->type == T_STR) {
        *(const char **)at = text;
        return 0;
    }
    unsigned long long v;
    if (parse_number(f, text, &v) < 0)
        return -1;
    switch (f->type) {
    case T_INT:
        *(int *)at = (int)v;
        break;
    case T_SIZE:
        *(size_t *)at = (size_t)v;
        break;
    case T_U64:
        *(uint64_t *)at = (uint64_t)v;
        break;
    default:
        break;
    }
    return 0;
}
