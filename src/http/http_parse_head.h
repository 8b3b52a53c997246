/* http_parse_head.h — the body of http_parse_request, included twice by
 * http_parse.c: once on the baseline scanners (SSE2, or the portable ones)
 * and once, on x86-64, inside target("avx2") with the 32-octet field and
 * target scans. PARSE_FN names the copy, PARSE_ATTR is its attribute, and
 * SCAN_SETUP, SCAN_FIELD, SCAN_TARGET, HOST_OK (a Host value's octets)
 * and FIELD_RUN (a run of usual field lines, or nothing) are its scanners;
 * every rule is the same text. */

PARSE_ATTR static int PARSE_FN(const char *buf, size_t len, size_t prev_checked, http_request *r,
                               const http_limits *lim) {
    SCAN_SETUP;
    size_t head_max = lim && lim->head_max ? lim->head_max : HTTP_HEAD_MAX_DEFAULT;
    size_t target_max = lim && lim->target_max ? lim->target_max : HTTP_TARGET_MAX_DEFAULT;
    size_t fields_max = lim && lim->fields_max ? lim->fields_max : HTTP_FIELDS_MAX_DEFAULT;
    if (head_max > 0x7fffffff)
        head_max = 0x7fffffff; /* the head length is returned as an int */
    if (fields_max > r->fields_cap)
        fields_max = r->fields_cap;
    if (prev_checked && prev_checked < len && !worth_parsing(buf, len, prev_checked, head_max))
        return HTTP_NEED_MORE;

    /* Past head_max, running out of head means the head is too large. The
     * scanners may read anywhere in [buf, end), never past it. */
    const char *p = buf, *end = buf + (len < head_max ? len : head_max);
    const int more = len >= head_max ? -431 : HTTP_NEED_MORE;
    head_state st = {0};
    int k;

    r->nfields = 0;
    r->framing = HTTP_BODY_NONE;
    r->content_length = 0;
    r->host = NULL;
    r->host_len = 0;
    r->keep_alive = r->conn_close = r->conn_upgrade = r->expect_continue = r->host_from_target =
        r->websocket_connect = 0;

    /* RFC 9112 §2.2: a server SHOULD ignore empty lines before the request. */
    while ((k = crlf(p, end)) == 2)
        p += 2;
    if (k == 0)
        return more;

    /* request-line = method SP request-target SP HTTP-version (§3), with
     * exactly one SP between parts: no other whitespace is accepted. */
    r->method = p;
    if (end - p >= 4 && load4(p) == load4("GET ")) {
        p += 3; /* the usual method, without the scan and the lookup */
        r->method_len = 3;
        r->method_id = HTTP_M_GET;
    } else {
        p = http_scan_token_in(buf, p, end, ' ');
        /* §3: a method longer than any the server implements → 501, as soon
         * as it is seen; not 431 after head_max octets of it. */
        if ((size_t)(p - r->method) > HTTP_METHOD_MAX)
            return -501;
        if (p == end)
            return more;
        if (p == r->method || *p != ' ')
            return -400;
        r->method_len = (size_t)(p - r->method);
        r->method_id = method_id(r->method, r->method_len);
    }

    r->target = ++p;
    p = SCAN_TARGET(buf, p, end);
    r->target_len = (size_t)(p - r->target);
    if (r->target_len > target_max)
        return -414; /* §3: a target longer than the server will parse → 414 */
    if (p == end)
        return more;
    if (r->target_len == 0 || *p != ' ' ||
        !target_form_ok(r->method_id, r->target, r->target_len, r))
        return -400;
    p++;

    if ((k = version(p, end, &r->minor_version)) <= 0)
        return k == 0 ? more : k;
    p += 10;

    /* field-line = field-name ":" OWS field-value OWS (§5), one pass: the
     * name scan stops at the colon (or the CR of the blank line that ends the
     * head), the value scan at the CR. */
    http_field *const fields = r->fields;
    size_t nf = 0;
    for (;;) {
        p = FIELD_RUN(p, nf, k);
        if (k < 0)
            return k;
        if (p < end && *p == '\r')
            break; /* the blank line (or a CR alone, which crlf() refuses below) */
        const char *name = p, *v;
        size_t name_len;
        const char *cr = SCAN_FIELD(buf, p, end, &name_len);
        if (cr) {
            v = name + name_len + 1;
            p = cr;
        } else {
            p = http_scan_token_in(buf, p, end, ':');
            if (p == end)
                return more;
            if (*p != ':' || p == name) {
                if (p == name && *p == '\r')
                    break;
                /* §5.1: no whitespace before the colon; a line starting with
                 * SP or HTAB is obs-fold (§5.2) or whitespace after the
                 * start-line (§2.2), refused alike; an empty name is no token. */
                return -400;
            }
            name_len = (size_t)(p - name);
            v = ++p;
            /* §5.5: NUL, CR, LF and other controls in a value → 400. */
            p = http_scan_value_in(buf, p, end, '\r');
        }
        if (end - p < 2 || load2(p) != load2("\r\n")) {
            k = crlf(p, end);
            return k == 0 ? more : -400;
        }
        /* OWS around the value: the only octets <= SP left in [v, p) are SP
         * and HTAB; the usual one SP is stepped over without a loop. Reading
         * ve[-1] is safe, the colon being there at worst. */
        v += *v == ' ';
        while ((unsigned char)*v <= ' ' && v < p)
            v++;
        const char *ve = p;
        while ((unsigned char)ve[-1] <= ' ' && ve > v)
            ve--;
        p += 2;
        if (nf == fields_max)
            return -431;
        http_field *f = &fields[nf++];
        *f = (http_field){name, name_len, v, (size_t)(ve - v)};
        if (name_len < sizeof special_first && special_first[name_len] == (name[0] | 0x20) &&
            (k = note_field(&st, r, f)) != 0 && (k < 0 || !HOST_OK(buf, f->value, f->value_len)))
            return k < 0 ? k : -400;
    }
    if ((k = crlf(p, end)) <= 0)
        return k == 0 ? more : k;
    p += 2;
    r->nfields = nf;
    if ((k = judge(&st, r)) < 0)
        return k;
    return (int)(p - buf);
}
