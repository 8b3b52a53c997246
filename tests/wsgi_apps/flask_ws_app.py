"""A Flask view holding a WebSocket through spindle.websocket (the upgrade
does not go through Flask's response: the view returns an empty body)."""
from flask import Flask, request

import spindle

app = Flask(__name__)


@app.route("/ws/<name>", websocket=True)  # Werkzeug routes upgrades only to these
def ws_view(name):
    ws = spindle.websocket(request.environ)
    for msg in ws:
        ws.send("%s: %s" % (name, msg))
    return ""
