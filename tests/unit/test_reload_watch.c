/* test_reload_watch.c — --reload's file watch (process/reload_watch.c): a
 * reported path is watched, a write, a rename over it (an editor's save)
 * and a touch are seen, a sibling file and repeated reports are not. */
#include "process/master.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
}

TEST(reload_watch_sees_writes_renames_and_only_watched_files) {
    char dir[] = "/tmp/spindle-rw-XXXXXX", mod[128], other[128], tmp[128];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(mod, sizeof mod, "%s/app.py", dir);
    snprintf(other, sizeof other, "%s/other.py", dir);
    snprintf(tmp, sizeof tmp, "%s/app.py.swp", dir);
    write_file(mod, "a = 1\n");
    CHECK_EQ(reload_watch_open(), 0);
    CHECK(reload_watch_changed() == NULL);
    /* As a worker reports it (twice: every worker does). */
    reload_watch_report(mod);
    reload_watch_report(mod);
    CHECK(reload_watch_changed() == NULL);

    write_file(other, "b = 1\n");
    CHECK(reload_watch_changed() == NULL); /* not watched */
    write_file(mod, "a = 2\n");
    const char *hit = reload_watch_changed();
    CHECK(hit != NULL);
    CHECK_STR(hit, mod);
    CHECK(reload_watch_changed() == NULL); /* drained */

    write_file(tmp, "a = 3\n");
    CHECK_EQ(rename(tmp, mod), 0);
    hit = reload_watch_changed();
    CHECK(hit != NULL);
    CHECK_STR(hit, mod);

    unlink(mod);
    unlink(other);
    rmdir(dir);
}
