"""The web.py "your IP" application (web.py, from build/venv), as benchmarked by the
people who compared coroutine servers: GET / answers the client's address."""
import web

web.config.debug = False

urls = ("/", "index")


class index:
    def GET(self):
        return web.ctx.ip


app = web.application(urls, globals(), autoreload=False)
application = app.wsgifunc()
