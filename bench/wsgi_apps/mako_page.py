"""A Mako template page (Mako, from build/venv), as in the articles' template
benchmark: a title, the client's address and a 10-item list rendered per
request from a template compiled once at import."""
from mako.template import Template

PAGE = Template("""<!DOCTYPE html>
<html><head><title>${title}</title></head>
<body><h1>${title}</h1><p>Hello, ${ip}.</p>
<ul>
% for item in items:
<li>${item}</li>
% endfor
</ul></body></html>
""")
ITEMS = ["item %d" % i for i in range(10)]


def application(environ, start_response):
    body = PAGE.render(title="Mako", ip=environ.get("REMOTE_ADDR", ""), items=ITEMS).encode()
    start_response("200 OK", [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(body)))])
    return [body]
