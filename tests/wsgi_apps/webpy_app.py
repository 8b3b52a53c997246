"""The web.py "your IP" application (python3-webpy, unmodified)."""
import web

web.config.debug = False

urls = ("/", "index", "/hello/(.*)", "hello")


class index:
    def GET(self):
        return web.ctx.ip


class hello:
    def GET(self, name):
        web.header("Content-Type", "text/plain; charset=utf-8")
        i = web.input(times="1")
        return ("Hello, %s!\n" % (name or "world")) * int(i.times)

    def POST(self, name):
        data = web.data()
        return "%s posted %d bytes: %s" % (name, len(data), web.input().get("k", ""))


app = web.application(urls, globals(), autoreload=False)
application = app.wsgifunc()
