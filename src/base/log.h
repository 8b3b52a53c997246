/* log.h — the error log: leveled lines with a timestamp and the pid, to
 * stderr (or a file set with log_open), as text or JSON objects. Messages
 * say what is wrong and what to do. Flood-prone messages go through
 * log_ratelimited. */
#ifndef SPINDLE_LOG_H
#define SPINDLE_LOG_H

#include <stdint.h>

typedef enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_ERROR, LOG_CRITICAL } log_level;

/* --error-log: path (kept, not copied) is opened for appending onto fd 2,
 * so the log and whatever else writes to stderr (Python's tracebacks) go
 * there; NULL or "-" leaves stderr as it is. 0, or -errno. Called in the
 * master before the fork, so the workers inherit it. */
int log_open(const char *path);
/* Opens the path of log_open again onto fd 2 (after logrotate moved the
 * file; on USR1, in each process). A failure is logged to the old file. */
void log_reopen(void);
/* With --user, the master (root) opens and reopens the file for workers that
 * run as uid:gid: each open then hands the file to them (as nginx does), so
 * a worker's own reopen on USR1 can write it. -1, -1: no owner (default). */
void log_set_owner(long uid, long gid);

/* Lines below level are dropped (default LOG_INFO). */
void log_set_level(log_level level);
/* The level set (the binding prints whole tracebacks at LOG_DEBUG). */
log_level log_get_level(void);
/* --error-log-format json: each line one JSON object, {"time", "level",
 * "pid", "message"} (a multi-line message stays one line); 0: text,
 * "TIME [PID] LEVEL: message". */
void log_set_json(int on);
/* Parses "debug", "info", "warning", "error", "critical"; -1 if unknown. */
int log_parse_level(const char *name);

void log_msg(log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Logs at most once per second per *last (a caller-owned timestamp, ms),
 * counting what was suppressed in *suppressed. */
void log_ratelimited(int64_t *last, uint64_t *suppressed, log_level level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
