/* stats_page.c — the --stats endpoint: served by whichever worker the
 * client reached, it sums every worker's slot in the master's shared memory
 * plus the retired workers' totals, so any worker answers for the whole
 * server; Prometheus text, or at PATH?html a page that draws it. On the
 * server's routes, or (--stats-bind) on one listener's own. */
#include "process/master.h"
#include "server/handler.h"
#include "server/server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct totals {
    worker_stats sum;
    uint64_t open;
    int workers;
} totals;

static void gather(const worker_board *b, totals *t) {
    memset(t, 0, sizeof *t);
    if (b->retired)
        worker_stats_fold(&t->sum, b->retired);
    for (int i = 0; i < worker_board_used(b); i++) {
        const worker_slot *w = &b->slots[i];
        if (!w->pid)
            continue;
        worker_stats_fold(&t->sum, (const worker_stats *)&w->st);
        t->open += w->st.conns_open;
        t->workers++;
    }
}

/* About 4 KB of totals and up to 256 per-worker lines of ~60 bytes. */
#define OUT_CAP 32768

static int prometheus(const worker_board *board, sp_req *req, sp_res *res) {
    /* The request's own buffer: a send that parks must not see it change
     * under another request. */
    char *out = malloc(OUT_CAP);
    if (!out || req_defer(req, free, out) < 0) {
        free(out);
        return res_send_error(res, 503, 0, NULL);
    }
    totals t;
    gather(board, &t);
    size_t n = 0;
#define P(...) n += (size_t)snprintf(out + n, n < OUT_CAP ? OUT_CAP - n : 0, __VA_ARGS__)
    P("# HELP spindle_requests_total Requests answered, by status class; client_closed: the "
      "client left before its answer (a 499 in the access log).\n"
      "# TYPE spindle_requests_total counter\n");
    static const char *const cls[WORKER_CLASSES] = {"none", "1xx", "2xx",          "3xx",
                                                    "4xx",  "5xx", "client_closed"};
    for (int i = 0; i < WORKER_CLASSES; i++)
        P("spindle_requests_total{class=\"%s\"} %llu\n", cls[i],
          (unsigned long long)t.sum.by_class[i]);
    P("# HELP spindle_received_bytes_total Request bytes read (heads and bodies).\n"
      "# TYPE spindle_received_bytes_total counter\nspindle_received_bytes_total %llu\n",
      (unsigned long long)t.sum.bytes_in);
    P("# HELP spindle_sent_bytes_total Response body bytes sent.\n"
      "# TYPE spindle_sent_bytes_total counter\nspindle_sent_bytes_total %llu\n",
      (unsigned long long)t.sum.bytes_out);
    P("# HELP spindle_http2_streams_total HTTP/2 streams begun.\n"
      "# TYPE spindle_http2_streams_total counter\nspindle_http2_streams_total %llu\n",
      (unsigned long long)t.sum.h2_streams);
    P("# HELP spindle_http2_resets_total HTTP/2 RST_STREAM frames, received and sent.\n"
      "# TYPE spindle_http2_resets_total counter\nspindle_http2_resets_total %llu\n",
      (unsigned long long)t.sum.h2_resets);
    P("# HELP spindle_http2_goaways_total HTTP/2 GOAWAY frames sent.\n"
      "# TYPE spindle_http2_goaways_total counter\nspindle_http2_goaways_total %llu\n",
      (unsigned long long)t.sum.h2_goaways);
    P("# HELP spindle_accept_step_asides_total Times a worker holding well over its share of "
      "connections left new clients to the other workers for 5 ms.\n"
      "# TYPE spindle_accept_step_asides_total counter\nspindle_accept_step_asides_total %llu\n",
      (unsigned long long)t.sum.accept[0]);
    P("# HELP spindle_accept_kicks_total Times a worker woke for clients another stepped aside "
      "from.\n"
      "# TYPE spindle_accept_kicks_total counter\nspindle_accept_kicks_total %llu\n",
      (unsigned long long)t.sum.accept[1]);
    P("# HELP spindle_open_connections Connections open now, all workers.\n"
      "# TYPE spindle_open_connections gauge\nspindle_open_connections %llu\n",
      (unsigned long long)t.open);
    P("# HELP spindle_tls_handshakes_total TLS handshakes: full, resumed (a session ticket), "
      "failed (refused, garbled, timed out, plain HTTP on a TLS port).\n"
      "# TYPE spindle_tls_handshakes_total counter\n");
    static const char *const tls_kind[] = {"full", "resumed", "failed"};
    for (int i = 0; i < 3; i++)
        P("spindle_tls_handshakes_total{kind=\"%s\"} %llu\n", tls_kind[i],
          (unsigned long long)t.sum.tls[i]);
    P("# HELP spindle_worker_restarts_total Workers the master started again, by how the old one "
      "ended: crashed (a signal), exited (a non-zero status), recycled (--max-requests), "
      "watchdog (its loop stalled past --worker-timeout), memory (--max-worker-memory).\n"
      "# TYPE spindle_worker_restarts_total counter\n");
    for (int i = 0; i < RESTART_CAUSES; i++)
        P("spindle_worker_restarts_total{cause=\"%s\"} %llu\n", worker_restart_names[i],
          (unsigned long long)(board->restarts ? board->restarts[i] : 0));
    P("# HELP spindle_workers Workers running.\n# TYPE spindle_workers gauge\nspindle_workers %d\n",
      t.workers);
    P("# HELP spindle_worker_requests_total Requests served, per worker.\n"
      "# TYPE spindle_worker_requests_total counter\n");
    for (int i = 0; i < worker_board_used(board); i++)
        if (board->slots[i].pid)
            P("spindle_worker_requests_total{pid=\"%d\"} %llu\n", (int)board->slots[i].pid,
              (unsigned long long)board->slots[i].requests);
    P("# HELP spindle_request_duration_seconds Time from a complete head to the end of the "
      "response.\n# TYPE spindle_request_duration_seconds histogram\n");
    uint64_t cum = 0;
    for (int b = 0; b < STATS_BUCKETS; b++) {
        cum += t.sum.latency[b];
        P("spindle_request_duration_seconds_bucket{le=\"%g\"} %llu\n",
          (double)stats_bucket_us[b] / 1e6, (unsigned long long)cum);
    }
    cum += t.sum.latency[STATS_BUCKETS];
    P("spindle_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
    P("spindle_request_duration_seconds_sum %.6f\n", (double)t.sum.latency_sum_us / 1e6);
    P("spindle_request_duration_seconds_count %llu\n", (unsigned long long)cum);
#undef P
    if (n >= OUT_CAP)
        n = OUT_CAP - 1;
    sp_res_header(res, "Cache-Control", "no-store");
    return sp_res_send(res, 200, "text/plain; version=0.0.4", out, n);
}

/* A page a person can open: it fetches the counters every two seconds and
 * draws them; plain HTML and a little JavaScript, nothing from elsewhere. */
static const char status_page[] =
    "<!doctype html><html><head><meta charset=\"utf-8\"><title>spindle status</title>\n"
    "<style>body{font:14px system-ui,sans-serif;margin:2em;color:#222}"
    "table{border-collapse:collapse}td,th{padding:4px 12px;border-bottom:1px solid #ddd;"
    "text-align:right}th{text-align:left}h1{font-size:20px}#err{color:#b00}</style></head>\n"
    "<body><h1>spindle status</h1><p id=\"when\">loading&hellip;</p><p id=\"err\"></p>\n"
    "<table id=\"t\"></table>\n<script>\n"
    "const url=location.pathname;let prev=null,prevT=0;\n"
    "function parse(txt){const m={};for(const l of txt.split('\\n')){if(!l||l[0]==='#')continue;"
    "const i=l.lastIndexOf(' ');m[l.slice(0,i)]=parseFloat(l.slice(i+1));}return m;}\n"
    "function row(k,v){return '<tr><th>'+k+'</th><td>'+v+'</td></tr>';}\n"
    "async function tick(){try{const r=await fetch(url,{cache:'no-store'});const m=parse(await "
    "r.text());const now=Date.now();let total=0;for(const c of ['1xx','2xx','3xx','4xx','5xx'])"
    "total+=m['spindle_requests_total{class=\"'+c+'\"}']||0;\n"
    "const rate=prev?((total-prev)*1000/(now-prevT)).toFixed(1):'-';prev=total;prevT=now;\n"
    "let h=row('requests',total)+row('requests/s',rate);\n"
    "for(const c of "
    "['2xx','3xx','4xx','5xx','client_closed'])h+=row(c,m['spindle_requests_total{class=\"'+c+"
    "'\"}']||0);\n"
    "h+=row('open connections',m['spindle_open_connections'])+row('workers',m['spindle_workers'])"
    "+row('bytes in',m['spindle_received_bytes_total'])+row('bytes out',"
    "m['spindle_sent_bytes_total']);\n"
    "const cnt=m['spindle_request_duration_seconds_count'];if(cnt)h+=row('mean latency (ms)',"
    "(m['spindle_request_duration_seconds_sum']*1000/cnt).toFixed(3));\n"
    "for(const t of ['full','resumed','failed']){const v=m['spindle_tls_handshakes_total{kind=\"'"
    "+t+'\"}'];if(v)h+=row('TLS handshakes, '+t,v);}\n"
    "for(const k in m)if(k.startsWith('spindle_worker_requests_total'))h+=row('worker '+"
    "k.split('\"')[1],m[k]);\n"
    "document.getElementById('t').innerHTML=h;document.getElementById('err').textContent='';\n"
    "document.getElementById('when').textContent='updated '+new Date().toLocaleTimeString();}\n"
    "catch(e){document.getElementById('err').textContent='cannot reach the server: '+e;}}\n"
    "tick();setInterval(tick,2000);\n</script></body></html>\n";

static int stats_handler(sp_req *req, sp_res *res, void *ud) {
    const worker_board *b = ud;
    sp_str q = sp_req_query(req);
    if (q.len >= 4 && memcmp(q.ptr, "html", 4) == 0 && (q.len == 4 || q.ptr[4] == '&')) {
        sp_res_header(res, "Cache-Control", "no-store");
        return sp_res_send(res, 200, "text/html; charset=utf-8", status_page,
                           sizeof status_page - 1);
    }
    return prometheus(b, req, res);
}

int stats_page_add_route(sp_server *s, const char *path, const worker_board *board) {
    return sp_route(s, "GET", path, stats_handler, (void *)board);
}

int stats_page_add_listener_route(sp_server *s, int li, const char *path,
                                  const worker_board *board) {
    return server_listener_route(s, li, "GET", path, stats_handler, (void *)board);
}
