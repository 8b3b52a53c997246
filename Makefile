# spindle's build. `make` builds the optimized tree in build/; `make MODE=asan`
# builds the same with AddressSanitizer + UBSan in build/asan/. `make test`
# installs what is missing, builds both and runs every test; `make run`
# starts the demo server. Header dependencies are tracked with -MMD.

MODE ?= release
ARCH ?= $(shell uname -m)
# The binding is built for the test environment's Python, build/venv (made by
# scripts/deps.sh from the python3 on PATH), else Debian's /usr/bin/python3;
# `make python-system` builds it for Debian's into build/python-system too.
VENV_PY := build/venv/bin/python
PYTHON ?= $(if $(wildcard $(VENV_PY)),$(VENV_PY),/usr/bin/python3)

ifeq ($(MODE),release)
B := $(or $(BUILD),build)
MODE_CFLAGS := -O2 -g
MODE_LDFLAGS :=
else ifeq ($(MODE),asan)
B := $(or $(BUILD),build/asan)
MODE_CFLAGS := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
MODE_LDFLAGS := -fsanitize=address,undefined
else
$(error MODE must be release or asan, not '$(MODE)')
endif

# Context switch: our own assembly where we have it, ucontext elsewhere or
# when asked (make CORO=ucontext).
ifeq ($(filter $(ARCH),x86_64 aarch64),)
CORO ?= ucontext
else
CORO ?= asm
endif
ifeq ($(CORO),ucontext)
CORO_DEFS := -DSP_CORO_UCONTEXT
CORO_ASM :=
else
CORO_DEFS :=
CORO_ASM := src/coro/coro_switch_$(ARCH).S
endif

# valgrind.h lets stacks be registered so memcheck follows switches.
ifneq ($(wildcard /usr/include/valgrind/valgrind.h),)
VG_DEFS := -DSP_HAVE_VALGRIND
endif

# The version: the VERSION file is its one source (setup.py and debian/
# read it too); the git revision when built from a checkout of this tree,
# else the REVISION file that `git archive` fills in (export-subst).
VERSION := $(shell cat VERSION)
SO_MAJOR := $(word 1,$(subst ., ,$(VERSION)))
SO_MINOR := $(word 2,$(subst ., ,$(VERSION)))
GIT_REV := $(shell [ "$$(git rev-parse --show-toplevel 2>/dev/null)" = "$(CURDIR)" ] && \
  git describe --always --dirty 2>/dev/null)
GIT_REV := $(or $(GIT_REV),$(shell grep -v 'Format:' REVISION 2>/dev/null))
VERSION_DEFS := -DSPINDLE_VERSION='"$(VERSION)"' -DSPINDLE_GIT_REV='"$(GIT_REV)"'

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
CFLAGS_ALL := $(CPPFLAGS) -std=c11 -D_GNU_SOURCE -fvisibility=hidden -fno-strict-aliasing -Iinclude -Isrc \
  $(WARN) $(MODE_CFLAGS) $(CORO_DEFS) $(VG_DEFS) $(CFLAGS)
LDLIBS_ALL := -lssl -lcrypto -lpthread -ldl -lm -lsqlite3 -lhiredis -lnghttp2 -luring -lz

# ONLY='src/coro/%' limits the library to some sources (work on one module
# while others are mid-change); BUILD=dir puts the tree elsewhere.
LIB_C := $(filter-out src/cli/main.c,$(sort $(wildcard src/*/*.c src/*/*/*.c)))
ifneq ($(ONLY),)
LIB_C := $(filter $(ONLY),$(LIB_C))
endif
LIB_ASM := $(filter $(or $(ONLY),%),$(CORO_ASM))
LIB_OBJS := $(patsubst src/%.c,$(B)/obj/%.o,$(LIB_C)) $(patsubst src/%.S,$(B)/obj/%.o,$(LIB_ASM))
LIB := $(B)/libspindle.a

BIN := $(if $(wildcard src/cli/main.c),$(B)/spindle)
EXAMPLES := $(patsubst examples/%.c,$(B)/examples/%,$(filter-out examples/app_%,$(wildcard examples/*.c)))
EXAMPLES += $(B)/examples/chat $(B)/examples/chat.so
# Applications loaded with --app: shared objects, resolved against the binary.
APP_MODULES := $(patsubst examples/%.c,$(B)/examples/%.so,$(wildcard examples/app_*.c)) \
  $(patsubst tests/fixtures/c/%.c,$(B)/tests/fixtures/c/%.so,$(wildcard tests/fixtures/c/*.c))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRCS))
BENCH_BINS := $(patsubst bench/%.c,$(B)/bench/%,$(wildcard bench/*.c))
# Helpers the integration tests run (tests/tools/no_uring: io_uring forbidden).
TOOL_BINS := $(patsubst tests/tools/%.c,$(B)/tests/tools/%,$(wildcard tests/tools/*.c))

.PHONY: all lib unit test run format format-check clean fuzz-build cross-aarch64 deps
all: lib $(BIN) $(EXAMPLES) $(APP_MODULES) unit $(BENCH_BINS) $(TOOL_BINS)
lib: $(LIB)
unit: $(UNIT_BINS)

$(B)/obj/%.o: src/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@
$(B)/obj/%.o: src/%.S
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

# The list of objects, rewritten only when it changes: the archive (and the
# extension) is rebuilt when a source is removed, not only when one changes,
# so a deleted file's symbols never linger in it.
$(B)/objs.list: FORCE
	@mkdir -p $(@D)
	@echo '$(LIB_OBJS)' | cmp -s - $@ || echo '$(LIB_OBJS)' >$@
.PHONY: FORCE
FORCE:
# Only parse.c says the version: it alone is rebuilt when the revision moves.
$(B)/version.txt: FORCE
	@mkdir -p $(@D)
	@echo '$(VERSION_DEFS)' | cmp -s - $@ || echo '$(VERSION_DEFS)' >$@
$(B)/obj/cli/parse.o build/pic/cli/parse.o: $(B)/version.txt
$(B)/obj/cli/parse.o: CFLAGS_ALL += $(VERSION_DEFS)
build/pic/cli/parse.o: PY_CFLAGS += $(VERSION_DEFS)

$(LIB): $(LIB_OBJS) $(B)/objs.list
	@rm -f $@
	$(AR) rcs $@ $(LIB_OBJS)

# The binary exports the public API (-rdynamic; everything else is hidden)
# so --app modules can call it: the whole library is linked in, not only
# what main() uses.
$(B)/spindle: $(B)/obj/cli/main.o $(LIB)
	$(CC) $(MODE_LDFLAGS) $(LDFLAGS) -rdynamic -o $@ $(B)/obj/cli/main.o -Wl,--whole-archive $(LIB) \
	  -Wl,--no-whole-archive $(LDLIBS_ALL)
$(B)/obj/cli/main.o: src/cli/main.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(B)/examples/%: examples/%.c $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -MMD -MP -o $@ $< $(LIB) $(MODE_LDFLAGS) $(LDLIBS_ALL)

$(B)/examples/chat: $(wildcard examples/chat/*.c examples/chat/*.h) include/spindle.h $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $(filter %.c,$^) $(LIB) $(MODE_LDFLAGS) $(LDLIBS_ALL)
# The chat as an --app module (any number of workers): chat_main.c is the program's.
$(B)/examples/chat.so: $(filter-out examples/chat/chat_main.c,$(wildcard examples/chat/*.c)) \
  $(wildcard examples/chat/*.h) $(wildcard include/*.h)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -fPIC -shared -o $@ $(filter %.c,$^)
$(B)/examples/%.so: examples/%.c $(wildcard include/*.h)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -fPIC -shared -o $@ $<
$(B)/tests/fixtures/c/%.so: tests/fixtures/c/%.c $(wildcard include/*.h)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -fPIC -shared -o $@ $<

$(B)/tests/tools/%: tests/tools/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $<
$(B)/tests/unit_main.o: tests/unit/unit_main.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -Itests/unit -MMD -MP -c $< -o $@
$(B)/tests/test_%: tests/unit/test_%.c $(B)/tests/unit_main.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -Itests/unit -MMD -MP -o $@ $< $(B)/tests/unit_main.o $(LIB) \
	  $(MODE_LDFLAGS) $(LDLIBS_ALL)

$(B)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -MMD -MP -o $@ $< $(LIB) $(MODE_LDFLAGS) $(LDLIBS_ALL)

# Fuzz targets: clang + libFuzzer + ASan/UBSan, every library source rebuilt.
FUZZ_B := $(or $(BUILD),build)/fuzz
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -Iinclude -Isrc -g -O1 -fsanitize=fuzzer-no-link,address,undefined \
  -fno-sanitize-recover=all $(CORO_DEFS)
FUZZ_OBJS := $(patsubst src/%.c,$(FUZZ_B)/obj/%.o,$(LIB_C)) $(patsubst src/%.S,$(FUZZ_B)/obj/%.o,$(LIB_ASM))
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(FUZZ_B)/%,$(wildcard tests/fuzz/fuzz_*.c))
$(FUZZ_B)/obj/%.o: src/%.c
	@mkdir -p $(@D)
	clang $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@
$(FUZZ_B)/obj/%.o: src/%.S
	@mkdir -p $(@D)
	clang $(FUZZ_CFLAGS) -c $< -o $@
$(FUZZ_B)/%: tests/fuzz/%.c $(FUZZ_OBJS)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS_ALL)
$(FUZZ_B)/obj/cli/parse.o: FUZZ_CFLAGS += $(VERSION_DEFS)
$(FUZZ_B)/obj/cli/parse.o: $(B)/version.txt
fuzz-build: $(FUZZ_BINS)

# make fuzz FUZZ_SECONDS=N: every target for N seconds, corpus kept in build/fuzz/corpus/,
# seeded (read only) with the checked-in regression corpus tests/fuzz/corpus/TARGET/.
FUZZ_SECONDS ?= 60
.PHONY: fuzz soak
fuzz: fuzz-build
	@for t in $(FUZZ_BINS); do echo "== $$t"; mkdir -p build/fuzz/corpus/$$(basename $$t); \
	  $$t -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -artifact_prefix=build/fuzz/ \
	  build/fuzz/corpus/$$(basename $$t) tests/fuzz/corpus/$$(basename $$t) || exit 1; done

# make soak: 30 minutes of mixed load on 2 workers (not in make test; a
# 60-second version is, in tests/suites/soak_short.sh).
soak: all
	$(VENV_PY) tests/soak/soak.py --duration 1800 --sample 10 --workers 2 --json build/soak.json

# aarch64: the coroutine unit test cross-built (static) and run under qemu.
CROSS_CC := aarch64-linux-gnu-gcc
CROSS_SRCS := $(wildcard src/coro/*.c) src/coro/coro_switch_aarch64.S tests/unit/test_coro.c tests/unit/unit_main.c
build/aarch64/test_coro: $(CROSS_SRCS) $(wildcard src/coro/*.h src/base/*.h) tests/unit/unit.h
	@mkdir -p $(@D)
	$(CROSS_CC) -std=c11 -D_GNU_SOURCE -Iinclude -Isrc -Itests/unit -O2 -g $(WARN) -static -o $@ $(CROSS_SRCS) -lpthread
cross-aarch64: build/aarch64/test_coro

# scripts/deps.sh PURPOSE installs what is missing for one purpose: `make
# deps` the build's packages; make test and make bench their own.
deps:
	@scripts/deps.sh build

test:
	@scripts/deps.sh test
	@$(MAKE) --no-print-directory -j2 MODE=release all
	@$(MAKE) --no-print-directory -j2 MODE=asan unit build/asan/spindle build/asan/tests/fixtures/c/app_bus.so build/asan/tests/fixtures/c/app_http_edge.so build/asan/tests/fixtures/c/app_ws.so
	@$(MAKE) --no-print-directory -j2 python-system
	@scripts/test.sh

# make run: the build's packages, the binary alone, and the demo on :8080.
run:
	@scripts/deps.sh build
	@$(MAKE) --no-print-directory -j2 MODE=release $(B)/spindle
	./build/spindle --bind 127.0.0.1:8080

# make bench: spindle side by side with nginx, node, tornado, gunicorn,
# uWSGI, gevent and eventlet (bench/run installs the missing peers; method
# and options in bench/README.md). QUICK=1: the short run, under 10 minutes.
# BENCH_ARGS: more bench/run options, e.g. BENCH_ARGS="--servers spindle,nginx".
.PHONY: bench
bench:
	@scripts/deps.sh bench
	@$(MAKE) --no-print-directory -j2 MODE=release all
	$(VENV_PY) bench/run $(if $(filter-out 0,$(QUICK)),--quick) $(BENCH_ARGS)

FORMAT_FILES = $(wildcard include/*.h src/*/*.[ch] src/*/*/*.[ch] tests/unit/*.c tests/unit/*.h tests/tools/*.c tests/fuzz/*.c \
  tests/diff/*.c tests/fixtures/c/*.c examples/*.c examples/chat/*.c bench/*.c python/_spindle/*.c \
  python/_spindle/*/*.[ch])
format:
	clang-format -i $(FORMAT_FILES)
format-check:
	@clang-format --dry-run --Werror $(FORMAT_FILES)

clean:
	rm -rf build

# The shared library, spindle.pc, the manual page, make install / uninstall.
include mk/install.mk

-include $(shell find build -name '*.d' 2>/dev/null)

# ---- The Python binding: a CPython extension built from the same core -----
# For $(PYTHON) into $(PY_OUT) (build/python by default), so that
# PYTHONPATH=build/python $(PYTHON) -m spindle app:application works. The
# binding's own objects go in $(PY_OBJ), one folder per interpreter (they see
# its headers and greenlet's); the core's PIC objects are shared.
PY_OUT ?= build/python
PY_OBJ ?= build/pic/py
PY_INCLUDE = $(shell $(PYTHON) -c "import sysconfig; print(sysconfig.get_paths()['include'])" 2>/dev/null)
PY_SUFFIX = $(shell $(PYTHON) -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))" 2>/dev/null)
GREENLET_INCLUDE = $(shell $(PYTHON) -c "import greenlet, os; print(os.path.dirname(greenlet.__file__))" 2>/dev/null)
PY_EXT = $(PY_OUT)/spindle/_spindle$(PY_SUFFIX)
PY_SRCS := $(wildcard python/_spindle/*.c python/_spindle/*/*.c)
PY_PKG := $(patsubst python/spindle/%,$(PY_OUT)/spindle/%,$(wildcard python/spindle/*.py python/spindle/green/*.py))
PIC_OBJS := $(patsubst src/%.c,build/pic/%.o,$(LIB_C)) $(patsubst src/%.S,build/pic/%.o,$(LIB_ASM))
PY_OBJS := $(patsubst python/_spindle/%.c,$(PY_OBJ)/%.o,$(PY_SRCS))
PY_CFLAGS = -std=c11 -D_GNU_SOURCE -fPIC -fvisibility=hidden -fno-strict-aliasing -O2 -g \
  -Iinclude -Isrc -Ipython/_spindle -I$(PY_INCLUDE) -I$(GREENLET_INCLUDE) -Wall -Wextra -Werror \
  -Wno-unused-parameter -Wno-missing-field-initializers -Wno-cast-function-type $(CORO_DEFS) $(VG_DEFS)

.PHONY: python python-system
python: $(PY_EXT) $(PY_PKG)
all: python
python-system:
	@$(MAKE) --no-print-directory python PYTHON=/usr/bin/python3 PY_OUT=build/python-system PY_OBJ=build/pic/py-system

# Which interpreter the objects in $(PY_OBJ) were built for, rewritten only
# when it changes, so that switching interpreters rebuilds them.
$(PY_OBJ)/python.txt: FORCE
	@mkdir -p $(@D)
	@echo '$(PYTHON) $(PY_INCLUDE) $(GREENLET_INCLUDE)' | cmp -s - $@ || \
	  echo '$(PYTHON) $(PY_INCLUDE) $(GREENLET_INCLUDE)' >$@

build/pic/%.o: src/%.c
	@mkdir -p $(@D)
	$(CC) $(PY_CFLAGS) -MMD -MP -c $< -o $@
build/pic/%.o: src/%.S
	@mkdir -p $(@D)
	$(CC) $(PY_CFLAGS) -c $< -o $@
$(PY_OBJ)/%.o: python/_spindle/%.c $(PY_OBJ)/python.txt
	@mkdir -p $(@D)
	@test -n "$(PY_INCLUDE)" -a -f "$(GREENLET_INCLUDE)/greenlet.h" || { echo "spindle: the Python binding needs $(PYTHON) with its headers (python3-dev) and greenlet: run scripts/deps.sh test (it makes build/venv)"; exit 1; }
	$(CC) $(PY_CFLAGS) -MMD -MP -c $< -o $@
$(PY_EXT): $(PY_OBJS) $(PIC_OBJS) $(B)/objs.list
	@mkdir -p $(@D)
	$(CC) -shared -o $@ $(PY_OBJS) $(PIC_OBJS) $(LDLIBS_ALL)
$(PY_OUT)/spindle/%.py: python/spindle/%.py
	@mkdir -p $(@D)
	cp $< $@
