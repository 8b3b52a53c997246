/* slot_log.h — the workers' access-log buffers in the master's shared
 * memory (one per worker slot), so the lines a worker formatted reach the
 * log however it dies: the master writes out what a dead one left. */
#ifndef SPINDLE_SLOT_LOG_H
#define SPINDLE_SLOT_LOG_H

#include <sys/types.h>

struct access_buffer;

/* Maps n buffers (before any fork; pages are touched only when used).
 * 0, or -1 logged. */
int slot_log_map(int n);
void slot_log_unmap(void);
/* Slot i's buffer, made ready for a worker (its own side, after the fork);
 * NULL if not mapped. */
struct access_buffer *slot_log_buffer(int i);
/* The master, after reaping slot i's worker pid: appends the lines it had
 * published but not written (none after a clean exit) to the access log,
 * before the slot is reused. */
void slot_log_salvage(int i, pid_t pid);

#endif
