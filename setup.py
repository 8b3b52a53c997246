"""setup.py — builds and installs spindle (the C core and its CPython
extension, WSGI and ASGI) as the distribution spindle-server: import name
spindle, the `spindle` command, the version from the VERSION file.

    pip install .                     # from a clone: fetches setuptools, wheel, greenlet
    python -m build                   # dist/spindle_server-V.tar.gz and -V-cpXY-...whl
    pip install --no-build-isolation .   # Debian's pybuild, or offline with greenlet present

The extension is the one `make python` builds: python/_spindle/*.c plus every
library source src/*/**.c (not src/cli/main.c) and, on x86_64 and aarch64, the
context switch in assembly (src/coro/coro_switch_ARCH.S; elsewhere, or with
SPINDLE_CORO=ucontext in the environment, ucontext). It compiles against
greenlet's C header (pyproject.toml's build requirements put greenlet in the
isolated build environment) and links the system's OpenSSL 3, nghttp2,
hiredis, SQLite, liburing and zlib: a small probe names the Debian -dev package
that is missing before anything is compiled. The ~100 sources compile
MAX_JOBS at a time (default: the number of CPUs).

The metadata stays here rather than in pyproject.toml's [project]: Debian
12's setuptools (66) builds python3-spindle from this file too, and cannot
read the SPDX licence string that PEP 639 setuptools (77+) wants.
Intermediate files go to build/setuptools/ (git-ignored with the rest of
build/), not to the top of the tree.
"""

import glob
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from concurrent.futures import ThreadPoolExecutor

import setuptools
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.sdist import sdist

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
        # Only without build isolation: pyproject.toml otherwise installs it.
        sys.exit(
            "spindle: building the extension needs greenlet importable by %s "
            "(pip install greenlet, or Debian: apt-get install python3-greenlet; "
            "or let pip isolate the build: pip install .)" % sys.executable
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
    srcs = sorted(glob.glob(rel("python", "_spindle", "**", "*.c"), recursive=True))
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


# The system libraries the core links (the Makefile's LDLIBS_ALL), each with
# a header it includes and the Debian package that has both.
SYSTEM_LIBS = [
    # src/ uses OpenSSL 3's API (core_names.h, EVP_KDF): 1.1 is not enough.
    ("ssl", ["openssl/ssl.h", "openssl/core_names.h"], "libssl-dev"),
    ("crypto", ["openssl/evp.h"], "libssl-dev"),
    ("nghttp2", ["nghttp2/nghttp2.h"], "libnghttp2-dev"),
    ("hiredis", ["hiredis/hiredis.h"], "libhiredis-dev"),
    ("sqlite3", ["sqlite3.h"], "libsqlite3-dev"),
    ("uring", ["liburing.h"], "liburing-dev"),
    ("z", ["zlib.h"], "zlib1g-dev"),
]


def probe_system_libs(compiler, include_dirs, library_dirs):
    """Compiles and links one tiny program per library: a missing -dev
    package is named here, not found later as a header or linker error in
    the middle of a hundred compiler lines."""
    exe = compiler.compiler_so[0] if getattr(compiler, "compiler_so", None) else None
    if exe and not shutil.which(exe):
        sys.exit("spindle: no C compiler (%s) found: install one (Debian: apt-get install "
                 "build-essential)" % exe)
    missing = []
    with tempfile.TemporaryDirectory(prefix="spindle-probe-") as tmp:
        for lib, headers, pkg in SYSTEM_LIBS:
            src = os.path.join(tmp, "probe_%s.c" % lib)
            with open(src, "w") as f:
                f.write("".join("#include <%s>\n" % h for h in headers) + "int main(void) { return 0; }\n")
            try:
                # Quiet: the failure is reported below, in one sentence.
                with open(os.devnull, "w") as null:
                    saved = os.dup(2)
                    os.dup2(null.fileno(), 2)
                    try:
                        objs = compiler.compile([src], output_dir=tmp, include_dirs=include_dirs)
                        compiler.link_executable(objs, "probe_%s" % lib, output_dir=tmp,
                                                 libraries=[lib], library_dirs=library_dirs)
                    finally:
                        os.dup2(saved, 2)
                        os.close(saved)
            except Exception as e:  # CompileError, LinkError (distutils' or setuptools')
                why = "cannot link -l%s" % lib if "Link" in type(e).__name__ else "header not found or too old"
                missing.append((lib, headers, pkg, why))
    if missing:
        pkgs = sorted({m[2] for m in missing})
        sys.exit("spindle: the build needs these system libraries and their headers:\n"
                 + "".join("  %s with <%s>: %s\n" % (lib, ">, <".join(h), why)
                           for lib, h, _, why in missing)
                 + "install them (Debian/Ubuntu): sudo apt-get install %s" % " ".join(pkgs))


def build_jobs():
    """MAX_JOBS (as PyTorch's and others' setup.py read it), else the CPUs."""
    try:
        return max(1, int(os.environ.get("MAX_JOBS", "")))
    except ValueError:
        return os.cpu_count() or 1


def parallel_compile(compiler, jobs):
    """Makes compiler.compile() run `jobs` compilers at once: build_ext's own
    --parallel builds several extensions side by side, and spindle is one
    extension of ~100 sources."""
    def compile(sources, output_dir=None, macros=None, include_dirs=None, debug=0,
                extra_preargs=None, extra_postargs=None, depends=None):
        macros, objects, extra_postargs, pp_opts, build = compiler._setup_compile(
            output_dir, macros, include_dirs, sources, depends, extra_postargs)
        cc_args = compiler._get_cc_args(pp_opts, debug, extra_preargs)

        def one(item):
            obj, (src, ext) = item
            compiler._compile(obj, src, ext, cc_args, extra_postargs, pp_opts)
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(one, build.items()))  # list(): re-raises the first failure
        return objects
    compiler.compile = compile


class BuildExt(build_ext):
    """build_ext that checks the prerequisites first (Python.h, the system
    libraries), also compiles the .S context switch (gcc/clang preprocess
    and assemble it) and compiles in parallel."""

    def build_extensions(self):
        python_headers_present()
        probe_system_libs(self.compiler, self.include_dirs, self.library_dirs)
        if ".S" not in self.compiler.src_extensions:
            self.compiler.src_extensions.append(".S")
        for ext in self.extensions:
            ext.include_dirs += greenlet_include_dirs()
        jobs = build_jobs()
        print("Building spindle._spindle with %d jobs (MAX_JOBS)" % jobs)
        if jobs > 1:
            parallel_compile(self.compiler, jobs)
        super().build_extensions()


class Sdist(sdist):
    """sdist whose REVISION says the commit it was made from (as git
    archive's export-subst does), so a wheel built from it has
    `spindle --version` name the revision too."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        rev = git_revision()
        if rev:
            target = os.path.join(base_dir, "REVISION")
            if os.path.exists(target):
                os.unlink(target)  # a hard link to the checkout's file: do not write through it
            with open(target, "w") as f:
                f.write(rev + "\n")


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
    libraries=["ssl", "crypto", "pthread", "dl", "m", "sqlite3", "hiredis", "nghttp2", "uring", "z"],  # the Makefile's LDLIBS_ALL
    depends=sorted(glob.glob(rel("src", "**", "*.h"), recursive=True) + glob.glob(rel("include", "*.h"))
                   + glob.glob(rel("python", "_spindle", "**", "*.h"), recursive=True)),
)



def license_metadata():
    """MIT, said the way the running setuptools understands: an SPDX
    License-Expression (PEP 639, setuptools 77+, which then refuses a licence
    classifier), else the License field and the classifier (Debian 12's 66)."""
    try:
        major = int(setuptools.__version__.split(".")[0])
    except ValueError:
        major = 0
    if major >= 77:
        return {"license_expression": "MIT"}, []
    return {"license": "MIT"}, ["License :: OSI Approved :: MIT License"]


license_kw, license_classifiers = license_metadata()


def console_scripts():
    """`spindle MODULE:APP [flags]`: the same main() as `python -m spindle`.
    Not when Debian's pybuild builds python3-spindle (debian/rules exports
    PYBUILD_NAME): there the package spindle owns /usr/bin/spindle, the C
    server, and python3-spindle keeps to `python3 -m spindle`. SPINDLE_COMMAND=0
    leaves it out elsewhere too."""
    if os.environ.get("PYBUILD_NAME") or os.environ.get("SPINDLE_COMMAND") == "0":
        return []
    return ["spindle = spindle._cli:main"]

# The distribution is spindle-server (the name spindle on PyPI is another
# project's); the import name and the command stay spindle.
setup(
    name="spindle-server",
    version=version(),
    description="A coroutine HTTP/1.1 and HTTP/2 server in C, serving WSGI and ASGI applications",
    long_description=open(os.path.join(HERE, "README.md"), encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    **license_kw,
    keywords=["wsgi", "asgi", "http", "server", "coroutine", "greenlet"],
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
    ] + license_classifiers,
    python_requires=">=3.9",
    packages=["spindle", "spindle.green"],
    package_dir={"spindle": rel("python", "spindle"), "spindle.green": rel("python", "spindle", "green")},
    ext_modules=[ext],
    install_requires=["greenlet>=1.0"],
    entry_points={"console_scripts": console_scripts()},
    cmdclass={"build_ext": BuildExt, "sdist": Sdist},
    zip_safe=False,
    options={
        "build": {"build_base": rel("build", "setuptools")},
        "egg_info": {"egg_base": rel("build", "setuptools")},
    },
)
