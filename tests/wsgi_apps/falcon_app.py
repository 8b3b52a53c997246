"""A Falcon application (python3-falcon, unmodified)."""
import falcon


class Things:
    def on_get(self, req, resp):
        resp.media = {"things": ["a", "b"], "limit": req.get_param_as_int("limit") or 0}

    def on_post(self, req, resp):
        data = req.get_media()
        resp.status = falcon.HTTP_201
        resp.location = "/things/%s" % data.get("id", "new")
        resp.media = {"created": data}


class Thing:
    def on_get(self, req, resp, thing_id):
        if thing_id == "missing":
            raise falcon.HTTPNotFound(title="no such thing")
        resp.content_type = falcon.MEDIA_TEXT
        resp.text = "thing %s, ua=%s" % (thing_id, req.get_header("X-Test") or "-")
        resp.set_header("X-Thing", thing_id)

    def on_put(self, req, resp, thing_id):
        body = req.bounded_stream.read()
        resp.content_type = falcon.MEDIA_TEXT
        resp.text = "put %s: %d bytes" % (thing_id, len(body))


class Stream:
    def on_get(self, req, resp):
        resp.content_type = falcon.MEDIA_TEXT
        resp.stream = iter([b"falcon ", b"streams ", b"bytes"])


app = falcon.App()
app.add_route("/things", Things())
app.add_route("/things/{thing_id}", Thing())
app.add_route("/stream", Stream())
application = app
