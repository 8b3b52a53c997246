"""Which process imported the app, and which serves: /pid. /block blocks
the whole worker (a plain, unpatched sleep), so others must answer."""
import json
import os
import time
from urllib.parse import parse_qs

IMPORT_PID = os.getpid()


def application(environ, start_response):
    if environ["PATH_INFO"] == "/block":
        q = parse_qs(environ["QUERY_STRING"])
        time.sleep(float(q.get("s", ["0.5"])[0]))
    body = json.dumps({"import_pid": IMPORT_PID, "pid": os.getpid(),
                       "multiprocess": environ["wsgi.multiprocess"]}).encode()
    start_response("200 OK", [("Content-Type", "application/json")])
    return [body]
