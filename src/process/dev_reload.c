/* dev_reload.c — the master's side of --reload: a watched file changed, so
 * a new generation of workers starts; the serving one is retired only once
 * every new worker serves, so a change that fails to load (its workers exit
 * MASTER_BOOT_FAILED) leaves the previous code serving until the next one. */
#include "process/master_int.h"

#include "base/log.h"

#include <signal.h>

void master_retire_others(master *m) {
    for (int i = 0; i < MAX_WORKERS; i++) {
        child *k = &m->kids[i];
        if (k->gen == m->gen || k->gen == RETIRING || (k->pid <= 0 && !k->restart_at))
            continue;
        if (k->pid > 0)
            kill(k->pid, SIGTERM);
        k->gen = RETIRING;
        k->restart_at = 0;
    }
}

static void retire_current(master *m) {
    for (int i = 0; i < MAX_WORKERS; i++) {
        child *k = &m->kids[i];
        if (k->gen != m->gen)
            continue;
        if (k->pid > 0)
            kill(k->pid, SIGTERM);
        k->gen = RETIRING;
        k->restart_at = 0;
    }
}

static void on_change(master *m, const char *file, int64_t now) {
    if (m->mo->exec_on_change) {
        log_msg(LOG_INFO, "reload: %s changed; re-executing the master", file);
        master_upgrade(m); /* if the new one fails, this one keeps serving */
        return;
    }
    log_msg(LOG_INFO, "reload: %s changed; starting new workers", file);
    if (m->mo->reload && m->mo->reload(m->s, m->mo, m->mo->reload_ud) < 0) {
        log_msg(LOG_ERROR, "reload: the configuration has errors (see above); keeping the "
                           "running workers");
        return;
    }
    if (m->dev_pending)
        retire_current(m); /* not serving yet, and already out of date */
    else
        m->good_gen = m->gen;
    m->gen++;
    m->dev_pending = 1;
    m->target = m->mo->workers > 0 ? m->mo->workers : 1;
    master_keep_count(m, now);
}

/* The new generation, once every worker of it serves, replaces the old. */
static void promote_when_ready(master *m) {
    if (!m->dev_pending)
        return;
    int ready = 0;
    for (int i = 0; i < MAX_WORKERS; i++) {
        const child *k = &m->kids[i];
        if (k->gen != m->gen)
            continue;
        if (k->pid <= 0 || !m->slots[i].heartbeat_ms)
            return; /* one still starting */
        ready++;
    }
    if (ready < m->target)
        return;
    m->dev_pending = 0;
    master_retire_others(m);
    log_msg(LOG_INFO, "reload: the new workers serve; the previous ones are draining");
}

void master_dev_tick(master *m, int64_t now) {
    /* Readiness first: a change seen in the same tick then replaces the
     * generation that serves, not the one before it. */
    promote_when_ready(m);
    const char *file = reload_watch_changed();
    if (file)
        on_change(m, file, now);
}

void master_dev_boot_failed(master *m, child *k, pid_t pid) {
    k->gen = 0; /* not restarted: it would fail the same way until a change */
    k->restart_at = 0;
    if (m->dev_pending) {
        log_msg(LOG_ERROR,
                "reload: worker %d could not load the changed code (see the "
                "traceback above); the previous workers keep serving until the "
                "next change",
                (int)pid);
        retire_current(m);
        m->gen = m->good_gen;
        m->dev_pending = 0;
        return;
    }
    log_msg(LOG_ERROR,
            "worker %d could not start (see above); --reload: waiting for a change "
            "to a watched file",
            (int)pid);
}
