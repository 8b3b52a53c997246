"""setup.py — builds and installs spindle's WSGI binding with setuptools.

    pip install --no-build-isolation .          # any CPython >= 3.9 with headers

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


def sources_and_macros():
    srcs = sorted(glob.glob(rel("python", "_spindle", "*.c")))
    srcs += sorted(s for s in glob.glob(rel("src", "**", "*.c"), recursive=True)
                   if s != rel("src", "cli", "main.c"))
    macros = [("_GNU_SOURCE", None)]
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
    libraries=["pthread", "dl", "m"],
    depends=sorted(glob.glob(rel("src", "**", "*.h"), recursive=True) + glob.glob(rel("include", "*.h"))
                   + glob.glob(rel("python", "_spindle", "*.h"))),
)

setup(
    name="spindle",
    version="0.1",
    description="A coroutine HTTP/1.1 server in C, serving WSGI applications (PEP 3333)",
    license="see the repository",
    python_requires=">=3.9",
    packages=["spindle"],
    package_dir={"spindle": rel("python", "spindle")},
    ext_modules=[ext],
    install_requires=["greenlet"],
    cmdclass={"build_ext": BuildExt},
    zip_safe=False,
    options={
        "build": {"build_base": rel("build", "setuptools")},
        "egg_info": {"egg_base": rel("build", "setuptools")},
    },
)
