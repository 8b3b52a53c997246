"""SQLAlchemy apps (SQLAlchemy, from build/venv) on the database at $BENCH_DB_URL
(SQLite or PostgreSQL through psycopg2), as in the articles' database
benchmarks: row_application reads one row by random primary key through the
ORM; page_application reads 10 rows and renders them with a Mako template.
seed(URL) creates and fills the table; bench/run calls it before any server
starts, so the servers only read. BENCH_SPINDLE_PATCH=1 (bench/run's
spindle-patched) calls spindle.patch() first: psycopg2 waits cooperatively."""
import os
import random

if os.environ.get("BENCH_SPINDLE_PATCH") == "1":
    import spindle

    spindle.patch()

from sqlalchemy import Column, Integer, String, create_engine, select
from sqlalchemy.orm import Session, declarative_base

ROWS = 1000
Base = declarative_base()


class Item(Base):
    __tablename__ = "bench_item"
    id = Column(Integer, primary_key=True)
    name = Column(String(64), nullable=False)


_engine = None


def engine():
    # Made at the first request, after any fork: pooled connections are
    # never shared between processes.
    global _engine
    if _engine is None:
        url = os.environ["BENCH_DB_URL"]
        # SQLite keeps SQLAlchemy's default pool, as a default deployment
        # gets it (QueuePool for a file in 2.x; NullPool, a connection per
        # session, in 1.4).
        pool = {} if url.startswith("sqlite") else {"pool_size": 10, "max_overflow": 20}
        _engine = create_engine(url, **pool)
    return _engine


def seed(url):
    e = create_engine(url)
    Base.metadata.drop_all(e)
    Base.metadata.create_all(e)
    with Session(e) as s:
        s.add_all([Item(id=i, name="row %d" % i) for i in range(1, ROWS + 1)])
        s.commit()
    e.dispose()


def row_application(environ, start_response):
    with Session(engine()) as s:
        item = s.get(Item, random.randint(1, ROWS))
        body = ("%d %s" % (item.id, item.name)).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


_page = None


def page_application(environ, start_response):
    global _page
    if _page is None:
        from mako.template import Template
        _page = Template("""<!DOCTYPE html>
<html><head><title>Items</title></head><body><table>
% for item in items:
<tr><td>${item.id}</td><td>${item.name}</td></tr>
% endfor
</table></body></html>
""")
    start = random.randint(1, ROWS - 10)
    with Session(engine()) as s:
        items = s.scalars(select(Item).where(Item.id >= start).order_by(Item.id).limit(10)).all()
        body = _page.render(items=items).encode()
    start_response("200 OK", [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(body)))])
    return [body]
