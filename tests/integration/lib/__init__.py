"""The integration tests' helpers, a module per job, imported as lib.NAME
(pytest puts tests/integration on sys.path; conftest.py holds only fixtures).
client: the one raw HTTP/1.x client. proctools: ports, processes, the one
server launcher. server: the spindle binary (BIN, Server). procutil, opsutil:
spindle masters and their workers. wsgiutil, asgiutil, asgi_pair: the Python
binding. h2util, tlsutil, chatutil, faultutil, greenutil, sessutil, pgutil,
ws_client, zclient, socket_launcher, chat_browser: one feature's tools each.
The applications the tests serve are in tests/fixtures/."""
