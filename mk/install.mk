# mk/install.mk — included by the Makefile: the shared library (the library's
# sources again as PIC, soname libspindle.so.MAJOR, only sp_* exported), the
# manual page from `spindle --print-man`, and `make install` / `uninstall`
# into the GNU directories under PREFIX, staged under DESTDIR.

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
DOCDIR ?= $(PREFIX)/share/doc/spindle
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
INSTALL ?= install

SONAME := libspindle.so.$(SO_MAJOR)
SO := $(B)/libspindle.so.$(SO_MAJOR).$(SO_MINOR)
SO_OBJS := $(patsubst $(B)/obj/%,$(B)/obj-pic/%,$(LIB_OBJS))
MAN := $(B)/spindle.1
# A symbol the library needs and does not have fails the link, not the user's.
NO_UNDEFINED := -Wl,--no-undefined
SO_LDFLAGS := -shared -Wl,-soname,$(SONAME) -Wl,--version-script=mk/libspindle.map \
  $(if $(filter release,$(MODE)),$(NO_UNDEFINED))

.PHONY: shared man install uninstall
shared: $(SO)
man: $(MAN)
lib: $(SO)
all: $(if $(BIN),$(MAN))

$(B)/obj-pic/%.o: src/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -fPIC -MMD -MP -c $< -o $@
$(B)/obj-pic/%.o: src/%.S
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -fPIC -MMD -MP -c $< -o $@
$(B)/obj-pic/cli/parse.o: CFLAGS_ALL += $(VERSION_DEFS)
$(B)/obj-pic/cli/parse.o: $(B)/version.txt

$(SO): $(SO_OBJS) $(B)/objs.list mk/libspindle.map
	$(CC) $(SO_LDFLAGS) $(MODE_LDFLAGS) $(LDFLAGS) -o $@ $(SO_OBJS) $(LDLIBS_ALL)
	ln -sf $(notdir $@) $(B)/$(SONAME)
	ln -sf $(SONAME) $(B)/libspindle.so

# The page is what the binary prints: the flag table cannot drift from it.
$(MAN): $(BIN)
	$(BIN) --print-man >$@.tmp && mv $@.tmp $@

# Paths are written into spindle.pc and the unit at install time, so
# `make` then `make install PREFIX=/usr` is right.
PC_SED := -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
  -e 's|@VERSION@|$(VERSION)|' -e 's|@LIBS_PRIVATE@|$(LDLIBS_ALL)|'
D := $(DESTDIR)
install: $(BIN) $(LIB) $(SO) $(MAN)
	$(INSTALL) -d $(D)$(BINDIR) $(D)$(LIBDIR) $(D)$(PKGCONFIGDIR) $(D)$(INCLUDEDIR) \
	  $(D)$(MANDIR)/man1 $(D)$(DOCDIR)/examples $(D)$(SYSTEMDUNITDIR)
	$(INSTALL) -m 755 $(BIN) $(D)$(BINDIR)/spindle
	$(INSTALL) -m 644 $(LIB) $(SO) $(D)$(LIBDIR)/
	ln -sf $(notdir $(SO)) $(D)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(D)$(LIBDIR)/libspindle.so
	$(INSTALL) -m 644 include/spindle.h include/spindle_bus.h include/spindle_features.h \
	  $(D)$(INCLUDEDIR)/
	sed $(PC_SED) mk/spindle.pc.in >$(D)$(PKGCONFIGDIR)/spindle.pc
	$(INSTALL) -m 644 $(MAN) $(D)$(MANDIR)/man1/spindle.1
	sed 's|/usr/local/bin/spindle|$(BINDIR)/spindle|' contrib/spindle.service \
	  >$(D)$(SYSTEMDUNITDIR)/spindle.service
	$(INSTALL) -m 644 contrib/spindle.socket $(D)$(SYSTEMDUNITDIR)/
	$(INSTALL) -m 644 contrib/spindle.conf $(D)$(DOCDIR)/examples/
	$(INSTALL) -m 644 README.md $(D)$(DOCDIR)/
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then ldconfig; fi

uninstall:
	rm -f $(D)$(BINDIR)/spindle $(D)$(LIBDIR)/libspindle.a $(D)$(LIBDIR)/$(notdir $(SO)) \
	  $(D)$(LIBDIR)/$(SONAME) $(D)$(LIBDIR)/libspindle.so $(D)$(INCLUDEDIR)/spindle.h \
	  $(D)$(INCLUDEDIR)/spindle_bus.h $(D)$(INCLUDEDIR)/spindle_features.h \
	  $(D)$(PKGCONFIGDIR)/spindle.pc \
	  $(D)$(MANDIR)/man1/spindle.1 $(D)$(SYSTEMDUNITDIR)/spindle.service \
	  $(D)$(SYSTEMDUNITDIR)/spindle.socket $(D)$(DOCDIR)/examples/spindle.conf $(D)$(DOCDIR)/README.md
	-rmdir $(D)$(DOCDIR)/examples $(D)$(DOCDIR) 2>/dev/null
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then ldconfig; fi
