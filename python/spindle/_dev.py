"""_dev.py — what each worker sets up for the master's watchdog and for
--reload: the Python traceback dumped when the master finds the loop stalled
(faulthandler on its stall signal), and the application's own source files
(those of sys.modules outside the standard library and site-packages) that
--reload watches."""

import faulthandler
import os
import site
import sys
import sysconfig


def install_stall_dump(signum):
    """From a real signal handler, so it works while the loop is stuck in
    Python or in C. It replaces the C handler (whose C stack says nothing of
    Python): the master logged the request line and the hint just before."""
    faulthandler.register(signum, file=sys.stderr, all_threads=False)


def _library_dirs():
    dirs = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            dirs.add(os.path.realpath(p))
    try:
        dirs.update(os.path.realpath(p) for p in site.getsitepackages())
    except AttributeError:  # a virtualenv's old site.py
        pass
    user = getattr(site, "USER_SITE", None)
    if user:
        dirs.add(os.path.realpath(user))
    dirs.add(os.path.realpath(os.path.dirname(os.path.dirname(__file__))))  # spindle itself
    return tuple(d.rstrip(os.sep) + os.sep for d in dirs)


def module_files(exc=None):
    """The source files of the imported modules that are the application's,
    and those a failed import (exc) names: the file with the syntax error,
    the frames of its traceback."""
    libs = _library_dirs()
    names = [getattr(mod, "__file__", None) for mod in list(sys.modules.values())]
    if exc is not None:
        names.append(getattr(exc, "filename", None))
        tb = exc.__traceback__
        while tb is not None:
            names.append(tb.tb_frame.f_code.co_filename)
            tb = tb.tb_next
    out = set()
    for f in names:
        if not f or not isinstance(f, str) or f.startswith("<"):
            continue
        f = os.path.realpath(f)
        if f.endswith(".pyc") and "__pycache__" not in f:
            f = f[:-1]
        if os.path.isfile(f) and not f.startswith(libs):
            out.add(f)
    return sorted(out)
