/* job_table.c — which pyjob a greenlet is serving, for hub_current_job
 * (spindle.websocket finds its request through it): a C hash table keyed by
 * the greenlet's address, so a request costs no Python dict entry and no int
 * object (linear probing, deletion by backward shift). */
#include "common/binding.h"

typedef struct job_slot {
    const void *g; /* the greenlet; NULL: empty */
    pyjob *j;
} job_slot;

static job_slot *tab;
static size_t cap, used; /* cap: a power of two, or 0 */

static size_t slot_of(const void *g) {
    return (size_t)(((uintptr_t)g >> 4) * 0x9e3779b97f4a7c15u >> 20) & (cap - 1);
}

static int grow(void) {
    size_t ncap = cap ? cap * 2 : 64;
    job_slot *n = calloc(ncap, sizeof *n);
    if (!n)
        return -1;
    job_slot *old = tab;
    size_t ocap = cap;
    tab = n;
    cap = ncap;
    for (size_t i = 0; i < ocap; i++) {
        if (!old[i].g)
            continue;
        size_t k = slot_of(old[i].g);
        while (tab[k].g)
            k = (k + 1) & (cap - 1);
        tab[k] = old[i];
    }
    free(old);
    return 0;
}

int job_table_put(const void *g, pyjob *j) {
    if ((used + 1) * 2 > cap && grow() < 0)
        return -1;
    size_t k = slot_of(g);
    while (tab[k].g && tab[k].g != g)
        k = (k + 1) & (cap - 1);
    used += !tab[k].g;
    tab[k] = (job_slot){g, j};
    return 0;
}

pyjob *job_table_get(const void *g) {
    if (!cap)
        return NULL;
    for (size_t k = slot_of(g); tab[k].g; k = (k + 1) & (cap - 1))
        if (tab[k].g == g)
            return tab[k].j;
    return NULL;
}

void job_table_del(const void *g) {
    if (!cap)
        return;
    size_t k = slot_of(g);
    while (tab[k].g != g) {
        if (!tab[k].g)
            return;
        k = (k + 1) & (cap - 1);
    }
    /* Backward shift: move up each later entry of the run that may fill
     * the hole (its home slot is not between the hole and it). */
    for (size_t i = (k + 1) & (cap - 1); tab[i].g; i = (i + 1) & (cap - 1)) {
        size_t home = slot_of(tab[i].g);
        if (((i - home) & (cap - 1)) >= ((i - k) & (cap - 1))) {
            tab[k] = tab[i];
            k = i;
        }
    }
    tab[k] = (job_slot){NULL, NULL};
    used--;
}
