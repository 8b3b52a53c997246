"""_load.py — finding the application: MODULE:ATTR, MODULE:factory() (the
call form) and --factory; and saying in one line why it could not be loaded
(the user's file and line, not this loader's frames). The C side calls
these from each worker's import, --preload's and --check-config's."""

import ast
import importlib
import inspect
import os
import sys

from ._dev import _library_dirs


class LoadError(Exception):
    """A failure of the spec itself (an attribute missing, not callable):
    said without a type, as the loader's own words."""


def _split(spec):
    module_name, _, attr = spec.partition(":")
    return module_name, (attr or "application").strip()


def _call_form(attr):
    """'create_app()' or 'create_app("prod", debug=True)': (name, args,
    kwargs) with literal arguments only (gunicorn's form); None otherwise."""
    if not attr.endswith(")"):
        return None
    try:
        node = ast.parse(attr, mode="eval").body
    except SyntaxError:
        raise LoadError("%r is not NAME or NAME(literal arguments)" % attr) from None
    if not isinstance(node, ast.Call):
        raise LoadError("%r is not NAME or NAME(literal arguments)" % attr)
    try:
        args = [ast.literal_eval(a) for a in node.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
    except ValueError:
        raise LoadError("the arguments of %r must be literals (strings, numbers...)"
                        % attr) from None
    return ast.unparse(node.func), args, kwargs


def _offer(obj):
    """What obj has that could have been meant: its public callables,
    without the functions and classes it only imported."""
    owner = getattr(obj, "__name__", None)
    names = []
    for name in sorted(dir(obj)):
        if name.startswith("_"):
            continue
        try:
            v = getattr(obj, name)
        except Exception:
            continue
        if not callable(v) or inspect.ismodule(v):
            continue
        if (inspect.isfunction(v) or inspect.isclass(v)) and inspect.ismodule(obj) \
                and getattr(v, "__module__", None) != owner:
            continue
        names.append(name)
    if not names:
        return " (it has no public callable)"
    more = ", ..." if len(names) > 12 else ""
    return "; it has: " + ", ".join(names[:12]) + more


def _a(word):
    return ("an " if word[:1] in "aeiou" else "a ") + word


def _what(obj):
    return "module %r" % obj.__name__ if inspect.ismodule(obj) else \
        "%r object" % type(obj).__name__


def load(spec):
    """Imports MODULE (from the working directory) and returns ATTR from it
    (default: application); ATTR(...) is called (the call form)."""
    module_name, attr = _split(spec)
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    obj = importlib.import_module(module_name)
    call = _call_form(attr)
    path = call[0] if call else attr
    for part in path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            # AttributeError (raised from here, so no user frame is named).
            raise AttributeError("%s has no attribute %r%s"
                                 % (_what(obj), part, _offer(obj))) from None
    if call:
        if not callable(obj):
            raise LoadError("%s is %s, which cannot be called" % (path, _a(type(obj).__name__)))
        obj = obj(*call[1], **call[2])
    return obj


def resolve(loader, app, factory):
    """The application: app, else loader()'s; with --factory, what calling
    that returns (unless the spec's call form called it already). Raises
    LoadError when it is not callable."""
    spec = getattr(loader, "spec", None)
    if app is None:
        app = loader()
    if factory and not (spec and _split(spec)[1].endswith(")")):
        if not callable(app):
            raise LoadError("--factory: the factory is %s, which cannot be called"
                            % _a(type(app).__name__))
        made = app()
        if not callable(made):
            raise LoadError("--factory: the factory returned %s, which is not callable"
                            % _a(type(made).__name__))
        return made
    if not callable(app):
        raise LoadError("it is %s, which is not callable" % _a(type(app).__name__))
    return app


def _where(exc):
    """(file, line) of the innermost frame in the user's code: not this
    loader, importlib or the libraries; a SyntaxError's own location."""
    libs = _library_dirs()
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        return exc.filename, exc.lineno
    found = None
    tb = exc.__traceback__
    while tb is not None:
        f = tb.tb_frame.f_code.co_filename
        if not f.startswith("<") and not os.path.realpath(f).startswith(libs):
            found = (f, tb.tb_lineno)
        tb = tb.tb_next
    return found


def _shown(path):
    """path relative to the working directory when under it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def failure(spec, exc, interface=None):
    """The one line: "cannot load the ASGI application 'app:app':
    ModuleNotFoundError: No module named 'x' (app.py, line 1)". interface
    is --interface's word (auto or None: not known yet)."""
    kind = {"asgi": "ASGI ", "wsgi": "WSGI "}.get(interface or "", "")
    head = "cannot load the %sapplication%s" % (kind, " %r" % spec if spec else "")
    if isinstance(exc, LoadError):
        return "%s: %s" % (head, exc)
    if isinstance(exc, SyntaxError):
        why = exc.msg or "invalid syntax"
    else:
        why = str(exc)
    t = type(exc)
    name = t.__qualname__ if t.__module__ in ("builtins", "__main__") else \
        "%s.%s" % (t.__module__, t.__qualname__)
    line = "%s: %s%s" % (head, name, ": " + why if why else "")
    where = _where(exc)
    if where:
        line += " (%s, line %d)" % (_shown(where[0]), where[1])
    return line


def traceback_text(exc):
    """The whole traceback (--log-level debug), without its last newline."""
    import traceback
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip("\n")


def apply_log_config(path):
    """--log-config: Python's logging.config.dictConfig from a JSON file
    (YAML when the name ends in .yaml or .yml and PyYAML imports). Raises
    LoadError naming the file on failure."""
    import logging.config
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise LoadError("--log-config %s: %s" % (path, e.strerror)) from None
    if path.endswith((".yaml", ".yml")):
        try:
            import yaml
        except ImportError:
            raise LoadError("--log-config %s: a YAML file needs PyYAML (pip install pyyaml); "
                            "or write it as JSON" % path) from None
        try:
            conf = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise LoadError("--log-config %s: %s" % (path, str(e).replace("\n", " "))) from None
    else:
        import json
        try:
            conf = json.loads(text)
        except ValueError as e:
            raise LoadError("--log-config %s: not JSON: %s" % (path, e)) from None
    if not isinstance(conf, dict):
        raise LoadError("--log-config %s: want a dictConfig mapping (with \"version\": 1)"
                        % path)
    try:
        logging.config.dictConfig(conf)
    except (ValueError, TypeError, AttributeError, ImportError) as e:
        raise LoadError("--log-config %s: %s" % (path, e)) from None
