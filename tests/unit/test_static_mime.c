/* test_static_mime.c — the extension → Content-Type table: built-in types,
 * case-insensitive lookup, the default, and a mime.types file overriding
 * the built-in table (comments, junk lines, the last line winning). */
#include "server/static/static_mime.h"
#include "unit.h"

#include <stdlib.h>
#include <unistd.h>

static const char *look(const static_mime *m, const char *name) {
    return static_mime_lookup(m, name, strlen(name));
}

TEST(mime_builtin) {
    static_mime m;
    CHECK_EQ(static_mime_init(&m, NULL), 0);
    CHECK_STR(look(&m, "index.html"), "text/html");
    CHECK_STR(look(&m, "a/b/style.css"), "text/css");
    CHECK_STR(look(&m, "app.js"), "text/javascript");
    CHECK_STR(look(&m, "data.json"), "application/json");
    CHECK_STR(look(&m, "logo.PNG"), "image/png");
    CHECK_STR(look(&m, "photo.JpEg"), "image/jpeg");
    CHECK_STR(look(&m, "icon.svg"), "image/svg+xml");
    CHECK_STR(look(&m, "font.woff2"), "font/woff2");
    CHECK_STR(look(&m, "a.tar.gz"), "application/gzip");
    CHECK_STR(look(&m, "mod.wasm"), "application/wasm");
    CHECK_STR(look(&m, "readme.txt"), "text/plain");
    CHECK(m.n >= 60);
    static_mime_free(&m);
}

TEST(mime_default) {
    static_mime m;
    CHECK_EQ(static_mime_init(&m, NULL), 0);
    CHECK_STR(look(&m, "Makefile"), STATIC_MIME_DEFAULT);
    CHECK_STR(look(&m, "file."), STATIC_MIME_DEFAULT);
    CHECK_STR(look(&m, "file.unknownext"), STATIC_MIME_DEFAULT);
    CHECK_STR(look(&m, "dir.html/file"), STATIC_MIME_DEFAULT); /* the dot is in a directory */
    CHECK_STR(look(&m, "x.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), STATIC_MIME_DEFAULT);
    CHECK_STR(look(&m, ""), STATIC_MIME_DEFAULT);
    static_mime_free(&m);
}

static char *write_tmp(const char *text) {
    static char path[] = "/tmp/spindle-mime-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK_EQ(write(fd, text, strlen(text)), (long long)strlen(text));
    close(fd);
    return path;
}

TEST(mime_file_overrides) {
    char *p = write_tmp("# comment line\n"
                        "text/x-custom   foo  BAR\n"
                        "application/javascript js   # a comment after\n"
                        "\n"
                        "not-a-type zzz\n"
                        "a/b/c yyy\n"
                        "text/first dup\n"
                        "text/second dup\n"
                        "image/x-nolf\tnolf");
    static_mime m;
    CHECK_EQ(static_mime_init(&m, p), 0);
    unlink(p);
    CHECK_STR(look(&m, "x.foo"), "text/x-custom");
    CHECK_STR(look(&m, "x.bar"), "text/x-custom");
    CHECK_STR(look(&m, "x.js"), "application/javascript"); /* the file wins */
    CHECK_STR(look(&m, "x.css"), "text/css");              /* built-in kept */
    CHECK_STR(look(&m, "x.zzz"), STATIC_MIME_DEFAULT);
    CHECK_STR(look(&m, "x.yyy"), STATIC_MIME_DEFAULT);
    CHECK_STR(look(&m, "x.dup"), "text/second");
    CHECK_STR(look(&m, "x.nolf"), "image/x-nolf");
    static_mime_free(&m);
}

TEST(mime_compressed_types) {
    static_mime m;
    CHECK_EQ(static_mime_init(&m, NULL), 0);
    CHECK(static_mime_compressed(look(&m, "a.png")));
    CHECK(static_mime_compressed(look(&m, "a.JPG")));
    CHECK(static_mime_compressed(look(&m, "a.woff2")));
    CHECK(static_mime_compressed(look(&m, "a.tar.gz")));
    /* Text, SVG and the unknown still get their .gz looked for. */
    CHECK(!static_mime_compressed(look(&m, "a.js")));
    CHECK(!static_mime_compressed(look(&m, "a.svg")));
    CHECK(!static_mime_compressed(look(&m, "a.html")));
    CHECK(!static_mime_compressed(look(&m, "noext")));
    CHECK(!static_mime_compressed("image/png; x")); /* the whole type, not a prefix */
    /* The table's entries carry the answer, decided when it was built. */
    CHECK(static_mime_find(&m, "a.png", 5) && static_mime_find(&m, "a.png", 5)->compressed);
    CHECK(static_mime_find(&m, "a.js", 4) && !static_mime_find(&m, "a.js", 4)->compressed);
    CHECK(static_mime_find(&m, "noext", 5) == NULL);
    static_mime_free(&m);
}

TEST(mime_missing_file) {
    static_mime m;
    CHECK_EQ(static_mime_init(&m, "/nonexistent/mime.types"), 0);
    CHECK_STR(look(&m, "a.html"), "text/html");
    static_mime_free(&m);
}

TEST(mime_system_file) {
    if (access("/etc/mime.types", R_OK) != 0)
        return;
    static_mime m;
    CHECK_EQ(static_mime_init(&m, "/etc/mime.types"), 0);
    CHECK(m.n > 100);
    CHECK_STR(look(&m, "a.html"), "text/html");
    CHECK_STR(look(&m, "a.png"), "image/png");
    for (size_t i = 1; i < m.n; i++)
        CHECK(strcmp(m.v[i - 1].ext, m.v[i].ext) < 0);
    static_mime_free(&m);
}
