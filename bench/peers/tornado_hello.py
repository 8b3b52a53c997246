"""tornado_hello.py PORT [WORKERS] — Tornado's own HTTP server and a
RequestHandler answering the hello world on 127.0.0.1:PORT; with WORKERS > 1,
tornado.process.fork_processes shares the socket among that many processes."""
import sys

import tornado.httpserver
import tornado.ioloop
import tornado.netutil
import tornado.process
import tornado.web


class Hello(tornado.web.RequestHandler):
    def get(self):
        self.set_header("Content-Type", "text/plain")
        self.write("Hello world!")


def main():
    port = int(sys.argv[1])
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    sockets = tornado.netutil.bind_sockets(port, "127.0.0.1", backlog=1024)
    if workers > 1:
        tornado.process.fork_processes(workers, max_restarts=0)
    app = tornado.web.Application([(r"/", Hello)], log_function=lambda handler: None)
    server = tornado.httpserver.HTTPServer(app, idle_connection_timeout=120)
    server.add_sockets(sockets)
    tornado.ioloop.IOLoop.current().start()


if __name__ == "__main__":
    main()
