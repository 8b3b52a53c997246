"""A Flask application (Flask, from build/venv): one route, a plain-text answer built
through Flask's request/response machinery (routing, request context,
Response object)."""
from flask import Flask

app = Flask(__name__)


@app.route("/")
def index():
    return "Hello world!", 200, {"Content-Type": "text/plain"}


application = app
