"""setup.py — builds and installs spindle's WSGI binding with setuptools, as
the distribution spindle-server (import name spindle; the version is the
VERSION file's):

    pip install --no-build-isolation .          # any CPython >= 3.9 with headers
    pip wheel --no-build-isolation --no-deps -w dist .   # a wheel (tests/suites/wheel.sh)

The extension is the one `make python` builds: python/_spindle/*.c plus every
library source src/*/**.c (not src/cli/main.c) and, on x86_64 and aarch64, the
context switch in assembly (src/coro/coro_switch_ARCH.S; elsewhere, or with
SPINDLE_CORO=ucontext in the environment, ucontext). greenlet's C API header
is found at build time through `import greenlet` (Debian's python3-greenlet
keeps greenlet.h next to the module; pip's greenlet also installs it under
the interpreter's include directories), so greenlet must be importable by the
interpreter that runs the build: hence --no-build-isolation, which also
means nothing is fetched from the network.

Intermediate files go to build/setuptools/ (git-ignored with the rest of
build/), not to the top of the tree.
"""

import glob
import os
import platform
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
if sys.version_info < (3, 9):
    sys.exit("spindle needs CPython 3.9 or later")


def rel(*parts):
    # setuptools wants paths relative to the setup.py directory.
    return os.path.join(*parts)


def greenlet_include_dirs():
    try:
        import greenlet
    except ImportError:
        sys.exit(
            "spindle: building the WSGI binding needs greenlet importable by %s "
            "(Debian: apt-get install python3-greenlet; then pip install "
            "--no-build-isolation .)" % sys.executable
        )
    candidates = [os.path.dirname(greenlet.__file__)]
    # pip-installed greenlet: headers under include/site/pythonX.Y/greenlet
    # or the interpreter's include directories.
    paths = sysconfig.get_paths()
    for key in ("include", "platinclude"):
        if paths.get(key):
            candidates.append(os.path.join(paths[key], "greenlet"))
            candidates.append(paths[key])
    candidates.append(
        os.path.join(sys.prefix, "include", "site", "python%d.%d" % sys.version_info[:2], "greenlet")
    )
    for d in candidates:
        if os.path.isfile(os.path.join(d, "greenlet.h")):
            return [d]
    sys.exit("spindle: greenlet is installed but its C header greenlet.h was not found (looked in %s)"
             % ", ".join(candidates))


def python_headers_present():
    inc = sysconfig.get_paths().get("include")
    if not inc or not os.path.isfile(os.path.join(inc, "Python.h")):
        sys.exit("spindle: Python.h not found in %r: install the interpreter's headers "
                 "(Debian: python3-dev)" % inc)


def version():
    """The VERSION file: the one source of the number (the Makefile and
    debian/ read it too)."""
    with open(os.path.join(HERE, "VERSION")) as f:
        return f.read().strip()


def git_revision():
    """`git describe --always --dirty` when this is a checkout of the tree
    (as the Makefile), else the REVISION file git archive filled in, else ""."""
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=HERE, capture_output=True,
                             text=True).stdout.strip()
        if top and os.path.realpath(top) == os.path.realpath(HERE):
            out = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=HERE,
                                 capture_output=True, text=True)
            if out.returncode == 0 and out.stdout.strip():
                return out.stdout.strip()
    except OSError:
        pass
    try:
        with open(os.path.join(HERE, "REVISION")) as f:
            rev = f.read().strip()
        return "" if "Format:" in rev else rev
    except OSError:
        return ""


def sources_and_macros():
    srcs = sorted(glob.glob(rel("python", "_spindle", "*.c")))
    srcs += sorted(s for s in glob.glob(rel("src", "**", "*.c"), recursive=True)
                   if s != rel("src", "cli", "main.c"))
    macros = [("_GNU_SOURCE", None), ("SPINDLE_VERSION", '"%s"' % version()),
              ("SPINDLE_GIT_REV", '"%s"' % git_revision())]
    arch = platform.machine()
    arch = {"amd64": "x86_64", "AMD64": "x86_64", "arm64": "aarch64"}.get(arch, arch)
    asm = rel("src", "coro", "coro_switch_%s.S" % arch)
    if os.environ.get("SPINDLE_CORO", "asm") != "ucontext" and os.path.isfile(os.path.join(HERE, asm)):
        srcs.append(asm)
    else:
        macros.append(("SP_CORO_UCONTEXT", None))
    if os.path.isfile("/usr/include/valgrind/valgrind.h"):
        # Stacks registered with valgrind so memcheck follows switches (as make).
        macros.append(("SP_HAVE_VALGRIND", None))
    return srcs, macros


class BuildExt(build_ext):
    """build_ext that also compiles the .S context switch (gcc/clang
    preprocess and assemble it) and checks the prerequisites first."""

    def build_extensions(self):
        python_headers_present()
        if ".S" not in self.compiler.src_extensions:
            self.compiler.src_extensions.append(".S")
        for ext in self.extensions:
            ext.include_dirs += greenlet_include_dirs()
        super().build_extensions()


os.chdir(HERE)  # the relative paths below (pip already runs from here)
os.makedirs(rel("build", "setuptools"), exist_ok=True)  # egg_info's egg_base must exist
sources, macros = sources_and_macros()

ext = Extension(
    "spindle._spindle",
    sources=sources,
    include_dirs=[rel("include"), rel("src"), rel("python", "_spindle")],
    define_macros=macros,
    extra_compile_args=[
        "-std=c11",
        "-fvisibility=hidden",
        "-fno-strict-aliasing",
        "-O2",
        "-Wno-unused-parameter",
        "-Wno-missing-field-initializers",
        "-Wno-cast-function-type",
    ],
    libraries=["ssl", "crypto", "pthread", "dl", "m", "sqlite3", "hiredis", "nghttp2", "uring"],  # the Makefile's LDLIBS_ALL
    depends=sorted(glob.glob(rel("src", "**", "*.h"), recursive=True) + glob.glob(rel("include", "*.h"))
                   + glob.glob(rel("python", "_spindle", "*.h"))),
)

# The distribution is spindle-server (the name spindle on PyPI is another
# project's); the import name and the command stay spindle.
setup(
    name="spindle-server",
    version=version(),
    description="A coroutine HTTP/1.1 server in C, serving WSGI applications (PEP 3333)",
    long_description=open(os.path.join(HERE, "README.md"), encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="no license granted yet: see the repository",
    keywords=["wsgi", "http", "server", "coroutine", "greenlet"],
    classifiers=[
        "Development Status :: 3 - Alpha",
        "Environment :: Web Environment",
        "Intended Audience :: Developers",
        "Intended Audience :: System Administrators",
        "Operating System :: POSIX :: Linux",
        "Programming Language :: C",
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: 3 :: Only",
        "Programming Language :: Python :: Implementation :: CPython",
        "Topic :: Internet :: WWW/HTTP :: HTTP Servers",
        "Topic :: Internet :: WWW/HTTP :: WSGI :: Server",
    ],
    python_requires=">=3.9",
    packages=["spindle"],
    package_dir={"spindle": rel("python", "spindle")},
    ext_modules=[ext],
    install_requires=["greenlet>=1.0"],
    cmdclass={"build_ext": BuildExt},
    zip_safe=False,
    options={
        "build": {"build_base": rel("build", "setuptools")},
        "build_ext": {"parallel": os.cpu_count() or 1},
        "egg_info": {"egg_base": rel("build", "setuptools")},
    },
)
