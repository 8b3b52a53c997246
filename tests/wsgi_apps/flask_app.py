"""A Flask application (python3-flask, unmodified): routes, JSON, form POST,
file upload, cookies, a streamed response."""
import hashlib

from flask import Flask, Response, jsonify, make_response, redirect, request, stream_with_context

app = Flask(__name__)


@app.route("/")
def index():
    return "Hello from Flask"


@app.route("/user/<name>")
def user(name):
    return "user %s, page %s" % (name, request.args.get("page", "1"))


@app.route("/json", methods=["GET", "POST"])
def json_route():
    if request.method == "POST":
        data = request.get_json()
        return jsonify(echo=data, method=request.method, n=len(data))
    return jsonify(a=1, list=[1, 2, 3], text="caf\u00e9")


@app.route("/form", methods=["POST"])
def form():
    return "name=%s age=%s multi=%s" % (request.form["name"], request.form.get("age"),
                                        ",".join(request.form.getlist("multi")))


@app.route("/upload", methods=["POST"])
def upload():
    f = request.files["file"]
    data = f.read()
    return jsonify(filename=f.filename, size=len(data), sha=hashlib.sha256(data).hexdigest(),
                   mimetype=f.mimetype, note=request.form.get("note"))


@app.route("/setcookie")
def setcookie():
    r = make_response("cookies set")
    r.set_cookie("flavour", "oatmeal", path="/")
    r.set_cookie("session_id", "abc123", httponly=True)
    return r


@app.route("/getcookie")
def getcookie():
    return "flavour=%s session_id=%s" % (request.cookies.get("flavour"),
                                         request.cookies.get("session_id"))


@app.route("/stream")
def stream():
    n = int(request.args.get("n", "5"))

    def generate():
        for i in range(n):
            yield "line %d of %s\n" % (i, request.args.get("tag", "t"))
    return Response(stream_with_context(generate()), mimetype="text/plain")


@app.route("/redirect")
def go():
    return redirect("/user/redirected")


@app.route("/abort")
def abort_route():
    from flask import abort
    abort(418)


@app.route("/head-and-put", methods=["PUT", "DELETE"])
def put():
    return "%s %d" % (request.method, len(request.get_data()))


application = app
