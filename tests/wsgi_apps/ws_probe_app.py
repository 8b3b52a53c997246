"""For test_py_websocket_memory: ws_app's room, plus GET /probe, which says
what the worker holds now: the bytes tracemalloc traces (run with
PYTHONTRACEMALLOC=1), the environ dicts alive, and the worker's RSS."""
import gc
import json
import tracemalloc

import ws_app


def _rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def application(environ, start_response):
    if environ["PATH_INFO"] != "/probe":
        return ws_app.application(environ, start_response)
    gc.collect()
    environs = sum(1 for o in gc.get_objects() if type(o) is dict and "REQUEST_METHOD" in o)
    body = json.dumps({"traced": tracemalloc.get_traced_memory()[0], "environs": environs,
                       "rss": _rss()}).encode()
    start_response("200 OK", [("Content-Type", "application/json")])
    return [body]
