/* test_http_parse_lines.h — field lines where the scanners' steps and the
 * buffer's end fall: a bad octet at every position and offset, the field
 * limit on the shortest lines, both copies against each other on random
 * heads. Included by test_http_parse.c (so run on each copy), after its helpers. */

/* The field limit on runs of the shortest usual lines ("X: v", 6 octets
 * with CRLF, the size the AVX2 run counts its free slots by): every limit
 * from 1 to 40 with a field count one under, at, and up to 8 over it. */
TEST(field_limit_on_shortest_lines) {
    static char head[1024];
    for (size_t max = 1; max <= 40; max++) {
        for (size_t nf = max > 1 ? max - 1 : 1; nf <= max + 8; nf++) {
            size_t n = (size_t)sprintf(head, "GET / HTTP/1.1\r\nHost: h\r\n");
            for (size_t i = 1; i < nf; i++)
                n += (size_t)sprintf(head + n, "%c: v\r\n", (char)('a' + i % 26));
            n += (size_t)sprintf(head + n, "\r\n");
            http_limits lim = {0, 0, max};
            http_request r;
            int want = nf <= max ? (int)n : -431;
            int got = parse_n(head, n, 0, &r, &lim);
            if (got != want || (got > 0 && r.nfields != nf)) {
                fprintf(stderr, "  limit %zu, %zu fields: got %d, want %d\n", max, nf, got, want);
                CHECK(0);
            }
        }
    }
}

/* 63 octets of target padding: a line placed at each offset 0 to 63. */
static const char pad[] = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

/* Every octet of a field line that straddles the 16- and 32-octet steps of
 * the scanners, replaced in turn by each kind of bad octet, is refused;
 * the line is placed at every offset from 0 to 63 (the target's length
 * moves it), before a short and a long line, so each bad octet lands in
 * every lane of a step, in the last 32 octets of the buffer and out of
 * them. The good line is accepted at every offset with its exact slices. */
static void bad_octet_everywhere(const char *line, const char *next) {
    static const char bad[] = {'\0', '\x01', '\x1f', '\x7f', '\n', '\r'};
    static char head[512];
    size_t ll = strlen(line), colon = (size_t)(strchr(line, ':') - line);
    for (int shift = 0; shift < 64; shift++) {
        int n = snprintf(head, sizeof head, "GET /%.*s HTTP/1.1\r\nHost: h\r\n%s\r\n%s%s\r\n",
                         shift, pad, line, next, *next ? "\r\n" : "");
        size_t at = (size_t)(strstr(head, line) - head);
        http_request r;
        if (parse_n(head, (size_t)n, 0, &r, NULL) != n || r.nfields != (*next ? 3u : 2u) ||
            r.fields[1].name_len != colon ||
            r.fields[1].value != guarded(head, (size_t)n) + at + colon + 2 ||
            r.fields[1].value_len != ll - colon - 2) {
            fprintf(stderr, "  shift %d: good line \"%s\" misread\n", shift, line);
            CHECK(0);
            return;
        }
        for (size_t i = 0; i < ll; i++) {
            if (i == colon + 1)
                continue; /* the OWS after the colon: a control there is tested below */
            for (size_t b = 0; b < sizeof bad; b++) {
                char keep = head[at + i];
                head[at + i] = bad[b];
                int v = parse_n(head, (size_t)n, 0, &r, NULL);
                head[at + i] = keep;
                if (v != -400) {
                    fprintf(stderr, "  shift %d: octet %zu of \"%s\" = 0x%02x: got %d\n", shift, i,
                            line, (unsigned char)bad[b], v);
                    CHECK(0);
                    return;
                }
            }
        }
        /* In the name, a space, a separator or obs-text is refused too. */
        for (size_t i = 0; i < colon; i++) {
            for (const char *b = " (\"\x80"; *b; b++) {
                char keep = head[at + i];
                head[at + i] = *b;
                int v = parse_n(head, (size_t)n, 0, &r, NULL);
                head[at + i] = keep;
                if (v != -400) {
                    fprintf(stderr, "  shift %d: name octet %zu = 0x%02x: got %d\n", shift, i,
                            (unsigned char)*b, v);
                    CHECK(0);
                    return;
                }
            }
        }
        head[at + colon + 1] = '\x01'; /* a control where the OWS is */
        if (parse_n(head, (size_t)n, 0, &r, NULL) != -400) {
            fprintf(stderr, "  shift %d: control after the colon accepted\n", shift);
            CHECK(0);
        }
    }
}

TEST_T(bad_octet_at_every_offset, 30) {
    static const char *const lines[] = {
        "X: v",
        "Accept-Encoding: gzip,deflate",
        /* Its CR in the line's second 32 octets, which the AVX2 run tests in line. */
        "Accept-Language: ja,en-us;q=0.7,en;q=0.3,de;q=0.1",
        "User-Agent: Mozilla/5.0 (Macintosh; U; Intel Mac OS X 10.6; ja-JP-mac; rv:1.9.2.3)",
        "Sec-Fetch-Site-Sec-Fetch-Mode-Sec-Fetch-Dest: a-name-past-32-octets",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        bad_octet_everywhere(lines[i], "");
        bad_octet_everywhere(lines[i], "K: 1");
        bad_octet_everywhere(lines[i], "Cookie: a=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
    }
}

/* Names of 28 to 40 letters, the line at every offset, every prefix of the
 * head parsed at the end of a guarded buffer: the AVX2 run counts a name
 * that fills its 32-octet window as 32 and compares the ": " after it, two
 * octets past the window, so it must not take a line starting fewer than
 * 34 octets before the buffer's end (the general loop does). */
TEST(long_names_at_the_buffers_end) {
    static char head[256], name[41];
    for (size_t nl = 28; nl <= 40; nl++) {
        for (size_t i = 0; i < nl; i++)
            name[i] = "Sec-Fetch"[i % 9];
        name[nl] = 0;
        for (int shift = 0; shift < 64; shift++) {
            int n = snprintf(head, sizeof head, "GET /%.*s HTTP/1.1\r\nHost: h\r\n%s: v\r\n\r\n",
                             shift, pad, name);
            http_request r;
            if (verdict_lim(head, (size_t)n, NULL) != n ||
                parse_n(head, (size_t)n, 0, &r, NULL) != n || r.nfields != 2 ||
                r.fields[1].name_len != nl || r.fields[1].value_len != 1) {
                fprintf(stderr, "  name of %zu octets, shift %d: misread\n", nl, shift);
                CHECK(0);
                return;
            }
        }
    }
}

/* A random field line: mostly the usual shape, with the octets and lengths
 * where the 32-octet run must hand a line to the general loop (HTAB, extra
 * OWS, digits in names, controls, a CR or LF alone, lines crossing 32). */
static size_t random_line(char *o) {
    static const char nm[] = "abcXYZ-09_!";
    static const char val[] = "abc XYZ019;=,/\t\x80\xff\x7f\x01\r\n:";
    size_t n = 0, nl = (size_t)(rand() % 3 == 0 ? rand() % 40 : 1 + rand() % 12);
    for (size_t i = 0; i < nl; i++)
        o[n++] = rand() % 8 ? nm[rand() % 6] : nm[rand() % (sizeof nm - 1)];
    o[n++] = rand() % 30 ? ':' : ' ';
    for (int i = rand() % 3; i > 0; i--)
        o[n++] = rand() % 4 ? ' ' : '\t';
    size_t vl = (size_t)(rand() % 4 == 0 ? rand() % 90 : rand() % 30);
    for (size_t i = 0; i < vl; i++)
        o[n++] = rand() % 12 ? "abcdefgh,;= /"[rand() % 13] : val[rand() % (sizeof val - 1)];
    for (int i = rand() % 4 == 0 ? rand() % 3 : 0; i > 0; i--)
        o[n++] = rand() % 2 ? ' ' : '\t';
    o[n++] = '\r';
    o[n++] = rand() % 40 ? '\n' : 'x';
    return n;
}

static int same_request(const http_request *a, const http_request *b) {
    if (a->nfields != b->nfields || a->method != b->method || a->method_len != b->method_len ||
        a->method_id != b->method_id || a->target != b->target || a->target_len != b->target_len ||
        a->minor_version != b->minor_version || a->framing != b->framing ||
        a->content_length != b->content_length || a->host != b->host ||
        a->host_len != b->host_len || a->keep_alive != b->keep_alive ||
        a->conn_close != b->conn_close || a->conn_upgrade != b->conn_upgrade ||
        a->expect_continue != b->expect_continue || a->host_from_target != b->host_from_target)
        return 0;
    for (size_t i = 0; i < a->nfields; i++)
        if (a->fields[i].name != b->fields[i].name ||
            a->fields[i].name_len != b->fields[i].name_len ||
            a->fields[i].value != b->fields[i].value ||
            a->fields[i].value_len != b->fields[i].value_len)
            return 0;
    return 1;
}

/* Both copies of the parser give the same verdict and the same request on
 * random heads, whole and cut short (a no-op comparison without AVX2). */
TEST_T(copies_agree, 30) {
    static char head[8192];
    static http_field fa[128], fb[128];
    int avx2 = http_parse_set_avx2(1);
    if (avx2 < 0)
        return;
    srand(23);
    for (int round = 0; round < 20000; round++) {
        /* Host values of each kind: usual, bad octets, past 32 octets, empty. */
        static const char *const hosts[] = {
            "h",        "a b",   "www.example.com:8080",
            "[::1]:80", "a_b.c", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.com",
            "x\x7f",    ""};
        size_t n = (size_t)sprintf(head, "GET /%.*s HTTP/1.1\r\nHost: %s\r\n", rand() % 70,
                                   "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0"
                                   "123456789",
                                   hosts[rand() % 8]);
        for (int l = rand() % 20; l > 0 && n < sizeof head - 256; l--)
            n += random_line(head + n);
        memcpy(head + n, "\r\n", 2);
        n += 2;
        size_t cut = rand() % 4 ? n : (size_t)rand() % (n + 1);
        const char *s = guarded(head, cut);
        http_limits lim = {0, 0, (size_t)(rand() % 3 ? 0 : 1 + rand() % 10)};
        http_request a = {.fields = fa, .fields_cap = 128}, b = {.fields = fb, .fields_cap = 128};
        http_parse_set_avx2(1);
        int va = http_parse_request(s, cut, 0, &a, &lim);
        http_parse_set_avx2(0);
        int vb = http_parse_request(s, cut, 0, &b, &lim);
        if (va != vb || (va > 0 && !same_request(&a, &b))) {
            fprintf(stderr, "  round %d: avx2 %d, baseline %d on \"%.*s\"\n", round, va, vb,
                    (int)cut, head);
            CHECK(0);
        }
    }
    http_parse_set_avx2(avx2);
}
