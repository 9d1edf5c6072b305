# packaging/: `make install` (PREFIX, DESTDIR, and the directories below), `make uninstall`,
# `make deb` (build/nvme-emu_<version>_<arch>.deb, packaging/mkdeb.sh) and the man pages, which
# tools/mangen writes from the programs' option tables and docs/man/*.in (built with `all`).

VERSION := $(shell sed -n 's/^\#define APP_VERSION "\(.*\)"$$/\1/p' app/app_internal.h)
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
DOCDIR ?= $(DATADIR)/doc/nvme-emu
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
DESTDIR ?=
# The pages' date: the last commit's (reproducible), else today.
MAN_DATE := $(shell git log -1 --format=%cs 2>/dev/null || date -u +%F)

MAN_PAGES := $(BUILD)/man/nvme-emu.8 $(BUILD)/man/nvme-emu-rpc.8 $(BUILD)/man/nvme-emu-perf.1
$(BUILD)/man/%: docs/man/%.in $(BUILD)/bin/mangen
	@mkdir -p $(@D)
	$(BUILD)/bin/mangen $(basename $*) $< $(MAN_DATE) $(VERSION) $@
all: $(MAN_PAGES)

INSTALL_BINS := $(BUILD)/bin/nvme-emu $(BUILD)/bin/nvme-emu-rpc $(BUILD)/bin/nvme-emu-perf

.PHONY: install uninstall deb man
man: $(MAN_PAGES)

install: $(INSTALL_BINS) $(MAN_PAGES)
	install -d -m 0755 $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(SYSCONFDIR)/nvme-emu \
		$(DESTDIR)$(SYSCONFDIR)/default $(DESTDIR)$(DATADIR)/nvme-emu \
		$(DESTDIR)$(DOCDIR)/examples
	install -m 0755 $(BUILD)/bin/nvme-emu $(BUILD)/bin/nvme-emu-rpc $(DESTDIR)$(SBINDIR)/
	install -m 0755 $(BUILD)/bin/nvme-emu-perf $(DESTDIR)$(BINDIR)/
	install -m 0644 $(BUILD)/man/nvme-emu.8 $(BUILD)/man/nvme-emu-rpc.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 0644 $(BUILD)/man/nvme-emu-perf.1 $(DESTDIR)$(MANDIR)/man1/
	sed -e 's|/usr/sbin/|$(SBINDIR)/|g' -e 's|/etc/nvme-emu|$(SYSCONFDIR)/nvme-emu|g' \
		-e 's|/etc/default/|$(SYSCONFDIR)/default/|g' packaging/systemd/nvme-emu@.service \
		> $(DESTDIR)$(SYSTEMDUNITDIR)/nvme-emu@.service
	chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/nvme-emu@.service
	install -m 0644 packaging/default-nvme-emu $(DESTDIR)$(SYSCONFDIR)/default/nvme-emu
	install -m 0644 scripts/rpc_nvmf_doca.py docs/grafana/nvme-emu-dashboard.json \
		$(DESTDIR)$(DATADIR)/nvme-emu/
	install -m 0644 docs/service.md $(DESTDIR)$(DOCDIR)/
	install -m 0644 packaging/examples/example.json $(DESTDIR)$(DOCDIR)/examples/

uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/nvme-emu $(DESTDIR)$(SBINDIR)/nvme-emu-rpc \
		$(DESTDIR)$(BINDIR)/nvme-emu-perf $(DESTDIR)$(MANDIR)/man8/nvme-emu.8 \
		$(DESTDIR)$(MANDIR)/man8/nvme-emu-rpc.8 $(DESTDIR)$(MANDIR)/man1/nvme-emu-perf.1 \
		$(DESTDIR)$(SYSTEMDUNITDIR)/nvme-emu@.service \
		$(DESTDIR)$(DATADIR)/nvme-emu/rpc_nvmf_doca.py \
		$(DESTDIR)$(DATADIR)/nvme-emu/nvme-emu-dashboard.json \
		$(DESTDIR)$(DOCDIR)/service.md $(DESTDIR)$(DOCDIR)/examples/example.json
	@# The configuration (SYSCONFDIR/default/nvme-emu, SYSCONFDIR/nvme-emu/) is the user's: kept.
	-rmdir $(DESTDIR)$(DATADIR)/nvme-emu $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(DOCDIR) 2>/dev/null

# The Debian package: a hardened build of its own (dpkg-buildflags) in build-deb/, installed into
# a staging root, Depends computed by dpkg-shlibdeps, assembled by dpkg-deb.
deb:
	@packaging/mkdeb.sh "$(VERSION)"
