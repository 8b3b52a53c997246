"""spindle.green — the standard library's blocking calls made cooperative
for spindle.patch() (as eventlet's eventlet.green): socket (and
CooperativeSocket), ssl, dns (name resolution on resolver threads), select
(select, poll, selectors), psycopg (psycopg2's wait callback), lock
(threading locks made after patch) and local (threading.local per
greenlet). Each module's install() is called by spindle.patch()."""
