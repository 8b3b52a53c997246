"""A Bottle application (python3-bottle, unmodified)."""
import hashlib

import bottle

app = bottle.Bottle()


@app.route("/")
def index():
    return "Hello from Bottle"


@app.route("/hello/<name>")
def hello(name):
    return bottle.template("<b>Hello {{name}}</b>, q={{q}}", name=name,
                           q=bottle.request.query.get("q", ""))


@app.route("/json")
def json_route():
    return {"framework": "bottle", "numbers": [1, 2, 3]}


@app.post("/form")
def form():
    return "got %s and %s" % (bottle.request.forms.get("a"), bottle.request.forms.get("b"))


@app.post("/upload")
def upload():
    up = bottle.request.files.get("file")
    data = up.file.read()
    return {"name": up.raw_filename, "size": len(data), "sha": hashlib.sha256(data).hexdigest()}


@app.route("/cookie")
def cookie():
    seen = bottle.request.get_cookie("visits", "0")
    bottle.response.set_cookie("visits", str(int(seen) + 1))
    return "visits was " + seen


@app.route("/stream")
def stream():
    bottle.response.content_type = "text/plain"
    for i in range(4):
        yield "chunk %d\n" % i


@app.route("/redirect")
def go():
    bottle.redirect("/hello/there")


@app.route("/error")
def error():
    bottle.abort(401, "Access denied.")


application = app
