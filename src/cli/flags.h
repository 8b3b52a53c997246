/* flags.h — the flag table shared by the parser (parse.c), --help and the
 * reload (reload.c): one row per setting, saying how it parses, where in
 * cli_config it lands, which command takes it and whether HUP applies it. */
#ifndef SPINDLE_CLI_FLAGS_H
#define SPINDLE_CLI_FLAGS_H

#include "cli/cli.h"

#include <stddef.h>
#include <stdio.h>

typedef enum opt_kind {
    K_LIST,    /* repeatable: each occurrence a value (--bind, --static-map) */
    K_SECONDS, /* "1.5" seconds, stored as ms */
    K_INT,     /* a whole number from 1 */
    K_INT0,    /* a whole number from 0 */
    K_SIZE,    /* bytes, with k/m/g suffixes */
    K_FLAG,    /* no argument: true (files and the environment: true or false) */
    K_STR,     /* a string, kept as given */
    K_META,    /* --help, --version, --config, --print-config: not settings */
} opt_kind;

/* The C type of the cli_config field a row stores into. */
typedef enum field_type { T_NONE, T_INT, T_SIZE, T_U64, T_STR } field_type;

typedef struct flag {
    const char *name;
    const char *arg; /* the argument's name in --help; NULL: takes none */
    opt_kind kind;
    unsigned char role;   /* ROLE_* */
    unsigned char reload; /* applied again on HUP (else: a restart) */
    field_type type;
    size_t off;                                  /* of the field in cli_config */
    int (*set)(cli_config *c, const char *text); /* instead of a field: 0 or -1 */
    const char *def;                             /* the default as --help says it; NULL: none */
    const char *help;
} flag;

/* Where a row stores: the field's type is checked at compile time. */
#define FIELD_(t, ctype, field)                                                                    \
    t,                                                                                             \
        offsetof(cli_config, field) +                                                              \
            0 * sizeof(char[_Generic(((cli_config *)0)->field, ctype : 1, default                  \
                                     : -1)]),                                                      \
        NULL
#define INT(field)  FIELD_(T_INT, int, field)
#define SIZE(field) FIELD_(T_SIZE, size_t, field)
#define U64(field)  FIELD_(T_U64, uint64_t, field)
#define STR(field)  FIELD_(T_STR, const char *, field)
#define SET(fn)     T_NONE, 0, fn
#define NOWHERE     T_NONE, 0, NULL

extern const flag cli_flags[];
extern const size_t cli_nflags;

const flag *cli_find_flag(const char *name);

/* Parses text by f's kind into f's field (or calls its setter). 0, or -1
 * with a message naming the flag. */
int cli_apply(cli_config *c, const flag *f, const char *text);

/* The values written for the repeatable (K_LIST) row f. */
cli_list *cli_list_of(const cli_config *c, const flag *f);

/* The bytes of f's field (0 for setter rows). */
size_t cli_field_size(const flag *f);

/* "the spindle binary" or "python3 -m spindle": where a row applies. */
const char *cli_role_name(int role);

/* Other servers' spellings (aliases.c), command line only: how each maps
 * onto spindle's flag, or why it does not. Data, so --help (and later the
 * command-line reference) can be made from it. */
typedef enum alias_kind {
    AL_SAME,    /* the flag `to` under another name, its value as given */
    AL_PREFIX,  /* to's value is text + the value (--uds PATH: --bind unix:PATH) */
    AL_HOST,    /* uvicorn's --host: with --port, one --bind HOST:PORT; text its default */
    AL_PORT,    /* uvicorn's --port: the other half; text its default */
    AL_DEFAULT, /* takes no value: to is text unless a flag, file or variable sets it */
    AL_ANSWER,  /* a different meaning: refused (exit 2), text saying spindle's way */
} alias_kind;

typedef struct flag_alias {
    const char *name; /* as written: "-b", "--ssl-certfile" */
    const char *arg;  /* the argument's name in --help; NULL: to's own (or none) */
    alias_kind kind;
    const char *to;   /* spindle's flag (a cli_flags name); NULL for AL_ANSWER */
    const char *text; /* as the kind says; NULL for AL_SAME */
    const char *from; /* whose spelling: "gunicorn", "uvicorn" */
} flag_alias;

extern const flag_alias cli_aliases[];
extern const size_t cli_naliases;

/* The alias written exactly so ("-b", "--keep-alive"), or NULL. */
const flag_alias *cli_find_alias(const char *written);

/* A hint for an unknown flag (dashes or not: "--max", "max"): the accepted
 * names of role within a small edit distance of it, else those it begins,
 * written as "--a, --b or --c" into out (dashes: with them). 0, or -1 when
 * nothing is near. Never applied: only said. */
int cli_hint(const char *written, int role, int dashes, char *out, size_t n);

/* --help: a line "also -b ADDR (gunicorn)" under f's row for each alias. */
void cli_usage_aliases(FILE *out, const flag *f);

/* --help: the other servers' flags answered with spindle's way. */
void cli_usage_answered(FILE *out);

#endif
