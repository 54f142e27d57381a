# SPDX-License-Identifier: MIT
# The Lab 3 RDMA file transfer pair.
#
#   make            build ./sender and ./receiver
#   make test       every test, over a real Soft-RoCE device (scripts/rxe-run)
#   make test-long  the longer suites, which CI runs too (tests/long/)
#   make test-slow  the slowest (tests/slow/: the grader graded); SLOW_GROUP=N, a third
#   make demo       one transfer over the bed, showing the verdict and key
#   make handout    the students' kit: lab3-handout/ and lab3-handout.tar.gz
#                   (a sender.c skeleton from this one, the framework, the
#                   provided receiver, the bed); DEPTH=verbs leaves the
#                   lab's verbs in client.c and common.c to the student
#                   too; HINTS=steps gives step-by-step hints, not the
#                   goals (HINTS=goal)
#   make grade SENDER=path
#                   score any sender through the lab's checks (scripts/grade;
#                   given a folder of submissions, a class's gradebook)
#   make autograder the Gradescope autograder: lab3-autograder.zip, built
#                   at DEPTH (default messages)
#   make bench      the pair against ib_write_bw, rcopy and sha256sum:
#                   medians of BENCH_REPS (5) interleaved runs, one host
#                   and two (about 50 minutes); bench/RESULTS.md
#   make fuzz       fuzz the protocol decoder and both sides' rules for
#                   FUZZ_SECONDS in all (default 60)
#   make soak       SOAK_SESSIONS (default 300) mixed sessions one by one,
#                   then SOAK_WAVES (default 10) waves of 16 at once, no growth;
#                   then `make valgrind`
#   make valgrind   one good session under valgrind's memcheck, each side
#   make sparse     check the wire format's byte order with sparse
#   make check      the tests a package build may run: no root, no network,
#                   no VM (unit tests, the fuzzers' corpus, the man pages,
#                   the static checks); see docs/packaging.md
#   make install    build, then install lab3-sender and lab3-receiver, their
#                   man pages, the docs and the Wireshark dissector under
#                   $(DESTDIR)$(PREFIX) (PREFIX defaults to /usr/local);
#                   SERVICE=1 adds the receiver's systemd service
#   make uninstall  remove exactly what `make install` installed (and what
#                   an install before 1.1 left under the old names)
#   make dist       lab3-VERSION.tar.gz, the sources of the last commit,
#                   the same bytes at every run
#   make deb        the Debian packages, checked (scripts/deb)
#
# WERROR=1 turns warnings into errors (CI does); SANITIZE=1 builds with
# AddressSanitizer and UBSan.  The build takes the usual variables from the
# environment or the command line: CC, CPPFLAGS, CFLAGS, LDFLAGS, LDLIBS,
# PKG_CONFIG, DESTDIR, PREFIX, BINDIR, MANDIR, SYSCONFDIR.

CC ?= cc
CFLAGS ?= -O2 -g
PKG_CONFIG ?= pkg-config

# The version is written in one place: the top line of debian/changelog,
# "lab3 (1.1) unstable; ...".  --version, the man pages, the Debian
# packages and `make dist`'s tarball read it from there; its date is the
# man pages' date.  (A copy of the sources without debian/ says
# "unknown".)
VERSION := $(or $(shell sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' \
	debian/changelog 2>/dev/null),unknown)
RELEASE_DATE := $(or $(shell sed -n 's/^ -- .*>  //p' debian/changelog \
	2>/dev/null | head -n 1 | xargs -r -I{} date -u -d {} +%Y-%m-%d \
	2>/dev/null),unknown)
WARNINGS = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wformat=2
ifeq ($(WERROR),1)
WARNINGS += -Werror
endif
# The sanitizers' flags have a variable of their own, so that a CFLAGS
# given on the command line does not drop them.
ifeq ($(SANITIZE),1)
SANITIZE_CFLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer
SANITIZE_LDFLAGS = -fsanitize=address,undefined
endif

# Hardening, on by default (HARDEN=0 leaves it off): the receiver parses
# whatever any student sends it.  These flags come after CPPFLAGS and
# CFLAGS, so a distribution's own flags meet them, not the other way
# round; _FORTIFY_SOURCE=3 only where neither sets _FORTIFY_SOURCE (a
# distribution's =2 stays =2) and where CFLAGS optimise (glibc's
# fortification needs it, and warns otherwise).  -fcf-protection is x86's.
HARDEN ?= 1
ifeq ($(HARDEN),1)
HARDEN_CFLAGS = -fstack-protector-strong -fstack-clash-protection -fPIE
ifneq ($(filter x86_64% i%86 amd64,$(shell $(CC) -dumpmachine 2>/dev/null)),)
HARDEN_CFLAGS += -fcf-protection
endif
# (Not under the sanitizers: fortified calls would bypass ASan's checks.)
ifeq ($(findstring _FORTIFY_SOURCE,$(CPPFLAGS) $(CFLAGS))$(filter 1,$(SANITIZE)),)
ifneq ($(filter -O1 -O2 -O3 -Os -Og -Ofast -Oz,$(CFLAGS)),)
HARDEN_CFLAGS += -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=3
endif
endif
HARDEN_LDFLAGS = -pie -Wl,-z,relro,-z,now
endif

PKGS = librdmacm libibverbs libcrypto
PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)

# The lab stands at the top; what it calls stands in folders named for
# their role: server/ (the class server), cli/ (the command lines), lib/
# (helpers below the connection).  A source includes any header by its
# bare name; objects go to build/, flat (no two sources share a name).
SRC_DIRS = server cli lib
vpath %.c $(SRC_DIRS)
INCLUDES = -I. $(addprefix -I,$(SRC_DIRS))
ALL_CFLAGS = -std=gnu11 $(WARNINGS) $(INCLUDES) $(PKG_CFLAGS) \
	-DLAB3_RELEASE='"$(VERSION)"' $(CPPFLAGS) $(CFLAGS) $(HARDEN_CFLAGS) \
	$(SANITIZE_CFLAGS)
# A program's link: the compiler's flags too (-fsanitize, -flto and the
# like need them there), then the objects, then the libraries.
LINK = $(CC) $(CFLAGS) $(HARDEN_CFLAGS) $(SANITIZE_CFLAGS) $(LDFLAGS) \
	$(HARDEN_LDFLAGS) $(SANITIZE_LDFLAGS) -o $@ $(filter %.o,$^) $(LDLIBS) \
	$(PKG_LIBS)

PROGRAMS = sender receiver
# Their man pages, built from man/*.1.in; `man -l build/man/lab3-sender.1`
# reads one in the tree.
MANPAGES = build/man/lab3-sender.1 build/man/lab3-receiver.1
FUZZERS = tests/fuzz_decode tests/fuzz_receiver tests/fuzz_sender
# make test builds on every core: the clang fuzzers alone take seconds.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
TEST_PROGRAMS = tests/unit tests/store_unit $(FUZZERS) tests/evil-sender \
	tests/evil-receiver

.PHONY: all deps test test-long test-slow demo wire handout grade bench fuzz soak valgrind sparse \
	check dist deb \
	install uninstall clean autograder

all: $(PROGRAMS) $(MANPAGES)

# Objects remember the flags they were built with, so that switching
# SANITIZE or WERROR rebuilds everything.
BUILD_FLAGS = $(CC) $(ALL_CFLAGS) $(LDFLAGS) $(HARDEN_LDFLAGS) \
	$(SANITIZE_LDFLAGS) $(LDLIBS)
build/.build-flags: FORCE
	@mkdir -p $(@D)
	@echo '$(BUILD_FLAGS)' | cmp -s - $@ || echo '$(BUILD_FLAGS)' > $@
.PHONY: FORCE

# Every object depends on every header of the top level and the folders:
# few enough to need no finer list.  build/NAME.o comes from NAME.c at
# the top or in a folder (vpath), build/tests/NAME.o from tests/NAME.c.
HEADERS := $(wildcard *.h $(addsuffix /*.h,$(SRC_DIRS)))
build/%.o: %.c $(HEADERS) build/.build-flags
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# One connection, as both programs use it: its verbs, messages and the one
# wait (common.c), what its completions mean (completion.c), failures in
# words (lib/explain.c), the system's clock and poll
# (lib/util.c), what particular RDMA providers need (lib/provider.c); the
# hashes (lib/hash.c).
CONN_OBJS = build/common.o build/completion.o \
	build/explain.o build/util.o build/provider.o build/hash.o

# The sender: the lab's steps (sender.c), the client's side of the
# connection (client.c), its file in flight (lib/pieces.c), the command
# line and the report (cli/sender_cli.c).
SENDER_OBJS = build/sender.o build/sender_cli.o build/client.o \
	build/pieces.o $(CONN_OBJS) build/json.o build/args.o
sender: $(SENDER_OBJS)
	$(LINK)

# The receiver: one session's steps (receiver.c), the class server that
# runs many (server/server.c), what the steps ask of it
# (server/session.c), what a session keeps (server/store.c), what each
# address and ID may keep (server/quota.c), the command line
# (cli/receiver_cli.c).
RECEIVER_OBJS = build/receiver.o build/receiver_cli.o build/server.o \
	build/session.o build/store.o build/quota.o $(CONN_OBJS) build/listener.o \
	build/json.o build/ledger.o build/roster.o build/args.o build/sizes.o \
	build/secret.o
receiver: $(RECEIVER_OBJS)
	$(LINK)

tests/unit: build/tests/unit.o build/tests/testlib.o $(CONN_OBJS) \
		build/listener.o build/json.o build/ledger.o build/roster.o \
		build/args.o build/sizes.o build/secret.o build/session.o \
		build/client.o build/pieces.o
	$(LINK)

# The class receiver's limits on what is kept (tests/store.test): its
# store and quotas, and what they call, without the serving loop.
tests/store_unit: build/tests/store_unit.o build/store.o build/quota.o \
		build/session.o build/ledger.o build/roster.o build/json.o \
		build/secret.o $(CONN_OBJS)
	$(LINK)

tests/evil-sender: build/tests/evil-sender.o build/tests/testlib.o \
		$(CONN_OBJS) build/client.o build/listener.o build/args.o \
		build/sizes.o
	$(LINK)

build/tests/evil-sender.o build/tests/evil-receiver.o: tests/evil.h
build/tests/unit.o build/tests/testlib.o build/tests/evil-sender.o \
	build/tests/evil-receiver.o: tests/testlib.h

tests/evil-receiver: build/tests/evil-receiver.o build/tests/testlib.o \
		$(CONN_OBJS) build/listener.o build/args.o build/client.o
	$(LINK)

# Plain builds of the pair for valgrind (tests/valgrind.test), which
# cannot run sanitized binaries: no SANITIZE flags, whatever the rest uses.
# (Their sources are found as the objects' are: $^ holds their paths.)
VALGRIND_PROGRAMS = tests/vg-sender tests/vg-receiver
tests/vg-sender: $(SENDER_OBJS:build/%.o=%.c) $(HEADERS)
	$(CC) -std=gnu11 $(WARNINGS) $(INCLUDES) $(PKG_CFLAGS) -O1 -g -o $@ \
		$(filter %.c,$^) $(PKG_LIBS)

tests/vg-receiver: $(RECEIVER_OBJS:build/%.o=%.c) $(HEADERS)
	$(CC) -std=gnu11 $(WARNINGS) $(INCLUDES) $(PKG_CFLAGS) -O1 -g -o $@ \
		$(filter %.c,$^) $(PKG_LIBS)

# The fuzzer needs clang's libFuzzer; it always runs with ASan and UBSan.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
tests/fuzz_%: tests/fuzz_%.c tests/fuzz.h protocol.h rules.h
	$(FUZZ_CC) -std=gnu11 -g -O1 $(WARNINGS) \
		-fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined -o $@ $<

fuzz: deps $(FUZZERS)
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash tests/fuzz.test

soak: deps
	@$(MAKE) --no-print-directory all tests/evil-sender
	RXE_TIMEOUT=3000 scripts/rxe-run bash tests/e2e/soak.sh
	@$(MAKE) --no-print-directory valgrind

# Longer than `make test` can afford (about 45 s under TCG), so it runs
# with the soak.
valgrind: deps
	@$(MAKE) --no-print-directory $(VALGRIND_PROGRAMS)
	scripts/rxe-run bash tests/e2e/valgrind.sh

# sparse checks the byte order of the wire format: no __be16/__be32/__be64
# field of protocol.h is read or written without its conversion.
SPARSE_SOURCES = $(wildcard *.c $(addsuffix /*.c,$(SRC_DIRS)))
sparse:
	@for f in $(SPARSE_SOURCES); do \
		sparse -Wbitwise -Wsparse-error -std=gnu11 $(INCLUDES) \
			$(PKG_CFLAGS) $$f || exit 1; \
	done

deps:
	@scripts/install-deps

# A fresh machine fetches the bed's kernel and builds siw.ko first, once
# (bounded), rather than inside whichever test boots the bed first.
PREPARE_BED = timeout 1200 scripts/rxe-run --prepare && \
	RXE_PROVIDER=siw timeout 1200 scripts/rxe-run --prepare

test: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all $(TEST_PROGRAMS)
	@$(PREPARE_BED)
	tests/run

# The longer suites, in CI after `make test`: tests/long/*.test (the
# class server's behaviour, iWARP, the hostage limits waited out, a file
# larger than the VM's memory, the two-host bed, a class folder graded,
# the bed's own behaviour): about 20 minutes.  Each may take up to 25.
# LONG_TESTS picks some of them (CI runs the class server's and iWARP's
# under SANITIZE=1 too).
LONG_TESTS ?= tests/long/*.test
test-long: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all $(TEST_PROGRAMS)
	@$(PREPARE_BED)
	TEST_TIMEOUT=1500 tests/run $(LONG_TESTS)

# The slowest suites: tests/slow/*.test (the grader graded on the
# reference, the skeleton and eighteen mutants, the Gradescope package,
# every hostile submission, the kit's make check and demo, the pair on a
# second kernel series): about 60 minutes, in three groups of at most 25
# (each test's "# slow-group: N" line).  SLOW_GROUP=N runs group N only:
# CI runs group `git rev-list --count HEAD` mod 3: a landing of one
# commit takes the next group, so over three landings each runs (one of
# several commits may skip a group: so run it all before landing a
# change to the grader, the kit or the bed).  Run it all after changing scripts/grade,
# scripts/lib/, scripts/handout/, tests/hostile/ or the bed's kernels.
# Each test may take up to an hour.
SLOW_GROUP ?=
SLOW_TESTS = $(if $(SLOW_GROUP),$(shell grep -lx '[#] slow-group: $(SLOW_GROUP)' \
	tests/slow/*.test),tests/slow/*.test)
test-slow: deps
	@case '$(SLOW_GROUP)' in ''|[012]) ;; *) echo "make test-slow: SLOW_GROUP must be 0, 1 or 2, not '$(SLOW_GROUP)'" >&2; exit 2 ;; esac
	@[ -n '$(strip $(SLOW_TESTS))' ] || { echo "make test-slow: no test in tests/slow/ says '# slow-group: $(SLOW_GROUP)'" >&2; exit 2; }
	@$(MAKE) --no-print-directory -j$(JOBS) all $(TEST_PROGRAMS)
	@$(PREPARE_BED)
	TEST_TIMEOUT=3600 tests/run $(SLOW_TESTS)

demo: deps
	@$(MAKE) --no-print-directory all
	DEMO_VERBOSE=$(V) scripts/demo

# One session captured on the bed's link and printed packet by packet;
# e.g. make wire WIRE="-s 1000000 -w 256K" (see scripts/wire).
wire: deps
	@$(MAKE) --no-print-directory all tests/evil-sender
	scripts/wire $(WIRE)

bench: deps
	@$(MAKE) --no-print-directory all
	scripts/bench

handout:
	DEPTH=$(DEPTH) HINTS=$(HINTS) scripts/handout/build lab3-handout

autograder: deps
	DEPTH=$(DEPTH) scripts/autograder/build lab3-autograder.zip

grade: deps
	@test -n "$(SENDER)" || { echo "usage: make grade SENDER=path" >&2; exit 2; }
	scripts/grade $(SENDER)

# The man pages, with the version and its date from debian/changelog
# (MANPAGES, above): build/man/lab3-sender.1 from man/lab3-sender.1.in.
build/man/%.1: man/%.1.in $(wildcard debian/changelog)
	@mkdir -p $(@D)
	sed -e 's/@VERSION@/$(VERSION)/g' -e 's/@DATE@/$(RELEASE_DATE)/g' $< >$@

# What `make install` installs, under $(DESTDIR):
#   $(BINDIR)/lab3-sender, $(BINDIR)/lab3-receiver      ./sender, ./receiver
#   $(MAN1DIR)/lab3-sender.1, $(MAN1DIR)/lab3-receiver.1
#   $(DOCDIR)/: README.md, NEWS.md, LICENSE and docs/
#   $(LUA_PLUGINDIR)/lab3.lua: the Wireshark dissector (scripts/lib/lab3.lua),
#       where a Wireshark of the same PREFIX looks for Lua plugins
#       (a package gives LIBDIR=/usr/lib/<triplet>; elsewhere, copy it to
#       ~/.local/lib/wireshark/plugins)
# (tests/man.test checks it).  The installed names carry the lab's prefix,
# so that they cannot collide with another package's "sender"; in the
# tree and the kit the programs stay ./sender and ./receiver, as the lab
# calls them.  Every directory can be set from the environment or the
# command line.
PREFIX ?= /usr/local
# PREFIX=/usr/ is /usr.
override PREFIX := $(patsubst %/,%,$(PREFIX))
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
MAN1DIR ?= $(MANDIR)/man1
DOCDIR ?= $(DATADIR)/doc/lab3
LUA_PLUGINDIR ?= $(LIBDIR)/wireshark/plugins
DOCS = README.md NEWS.md LICENSE
DOC_PAGES = $(wildcard docs/*.md docs/*.png)

# With SERVICE=1, also the receiver as a systemd service
# (docs/instructor.md, "The receiver as a service"; tests/service.test
# checks it): the unit in $(UNITDIR), its user's entry in $(SYSUSERSDIR),
# and its options file $(CONFFILE), which is never overwritten, nor
# removed by uninstall.  Where the unit and the entry go follows PREFIX.
# A distribution's package (PREFIX=/usr, staged in DESTDIR) puts them
# with the system's own, where systemd's pkg-config file says
# (systemdsystemunitdir, sysusersdir: on Debian 12 /lib/systemd/system
# and /usr/lib/sysusers.d), or where systemd looks by default without
# one.  An administrator's own install (any other PREFIX: /usr/local by
# default) puts them in /etc, which is the administrator's.  UNITDIR=
# and SYSUSERSDIR= choose otherwise.  The options file is the
# administrator's either way: SYSCONFDIR.
SYSCONFDIR ?= /etc
ifeq ($(PREFIX),/usr)
# systemd_var NAME: the variable NAME of systemd's pkg-config file, or
# nothing without pkg-config or the file.
systemd_var = $(shell $(PKG_CONFIG) --variable=$(1) systemd 2>/dev/null)
UNITDIR ?= $(or $(call systemd_var,systemdsystemunitdir),/usr/lib/systemd/system)
SYSUSERSDIR ?= $(or $(call systemd_var,sysusersdir),/usr/lib/sysusers.d)
else
UNITDIR ?= $(SYSCONFDIR)/systemd/system
SYSUSERSDIR ?= $(SYSCONFDIR)/sysusers.d
endif
CONFFILE = $(SYSCONFDIR)/lab3-receiver.conf
SERVICE_SUBST = sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@CONFFILE@|$(CONFFILE)|g'

# The programs `make install` puts in: both, but with SERVICE=1 (a class
# host) the receiver alone: a reference sender on the class's host would
# get any student a key (docs/instructor.md, "What a key proves").  A
# distribution's build, which splits them into two packages, names both.
ifeq ($(SERVICE),1)
INSTALL_PROGRAMS ?= receiver
else
INSTALL_PROGRAMS ?= sender receiver
endif

# Install only: the programs and pages were built by `make` with the same
# variables, so nothing is compiled here (tests/man.test checks that).
install: $(PROGRAMS) $(MANPAGES)
	install -d "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(MAN1DIR)" \
		"$(DESTDIR)$(DOCDIR)/docs" "$(DESTDIR)$(LUA_PLUGINDIR)"
	for p in $(INSTALL_PROGRAMS); do \
		install -m 0755 $$p "$(DESTDIR)$(BINDIR)/lab3-$$p" && \
		install -m 0644 build/man/lab3-$$p.1 "$(DESTDIR)$(MAN1DIR)/" || \
		exit 1; done
	install -m 0644 $(DOCS) "$(DESTDIR)$(DOCDIR)/"
	install -m 0644 $(DOC_PAGES) "$(DESTDIR)$(DOCDIR)/docs/"
	install -m 0644 scripts/lib/lab3.lua "$(DESTDIR)$(LUA_PLUGINDIR)/"
ifeq ($(SERVICE),1)
	install -d "$(DESTDIR)$(UNITDIR)" "$(DESTDIR)$(SYSUSERSDIR)" \
		"$(DESTDIR)$(SYSCONFDIR)"
	$(SERVICE_SUBST) scripts/service/lab3-receiver.service.in \
		>"$(DESTDIR)$(UNITDIR)/lab3-receiver.service"
	chmod 0644 "$(DESTDIR)$(UNITDIR)/lab3-receiver.service"
	install -m 0644 scripts/service/lab3-receiver.sysusers \
		"$(DESTDIR)$(SYSUSERSDIR)/lab3-receiver.conf"
	test -e "$(DESTDIR)$(CONFFILE)" || { \
		$(SERVICE_SUBST) scripts/service/lab3-receiver.conf \
			>"$(DESTDIR)$(CONFFILE)" && \
		chmod 0644 "$(DESTDIR)$(CONFFILE)"; }
	if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then \
		systemd-sysusers "$(SYSUSERSDIR)/lab3-receiver.conf" && \
		systemctl daemon-reload; fi
endif

# Before 1.1, `make install` put the programs and pages in as sender,
# receiver, sender.1 and receiver.1.  uninstall removes those too, but
# only where they are Lab 3's (the programs print "Lab 3" in --version,
# the pages name it in their title line), and says which it removed.
# (Every path is quoted: a DESTDIR with a space is one path.)
uninstall:
	rm -f "$(DESTDIR)$(BINDIR)/lab3-sender" \
		"$(DESTDIR)$(BINDIR)/lab3-receiver" \
		"$(DESTDIR)$(LUA_PLUGINDIR)/lab3.lua"
	for f in $(notdir $(MANPAGES)); do \
		rm -f "$(DESTDIR)$(MAN1DIR)/$$f" || exit 1; done
	for f in $(DOCS) $(DOC_PAGES); do \
		rm -f "$(DESTDIR)$(DOCDIR)/$$f" || exit 1; done
	-rmdir "$(DESTDIR)$(DOCDIR)/docs" "$(DESTDIR)$(DOCDIR)" 2>/dev/null
	@for old in "$(DESTDIR)$(BINDIR)/sender" "$(DESTDIR)$(BINDIR)/receiver" \
		"$(DESTDIR)$(MAN1DIR)/sender.1" "$(DESTDIR)$(MAN1DIR)/receiver.1"; do \
		[ -f "$$old" ] || continue; \
		case $$old in \
		*.1) head -n 20 "$$old" | grep -q '^\.TH .*"Lab 3' ;; \
		*) grep -q 'Lab 3 protocol version' "$$old" ;; \
		esac || { echo "uninstall: kept $$old: not Lab 3's"; continue; }; \
		rm -f "$$old" && echo "uninstall: removed $$old, installed" \
			"by a Lab 3 before 1.1 (now lab3-$${old##*/})"; \
	done
ifeq ($(SERVICE),1)
	if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then \
		systemctl disable --now lab3-receiver.service || true; fi
	rm -f "$(DESTDIR)$(UNITDIR)/lab3-receiver.service" \
		"$(DESTDIR)$(SYSUSERSDIR)/lab3-receiver.conf"
	if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then \
		systemctl daemon-reload; fi
endif

# The tests a package build may run (debian/rules runs it): no root, no
# network, no VM, no RDMA device.  The unit tests, the fuzzers over
# their corpus alone (FUZZ_CORPUS_ONLY), the man pages, the licence of
# every file, the hardened build, and the static checks of the code's
# shape.  The rest of `make test` needs the bed.
CHECK_TESTS = tests/unit.test tests/store.test tests/man.test \
	tests/licence.test tests/hardening.test tests/structure.test \
	tests/receiver-cli.test
check: all tests/unit tests/store_unit $(FUZZERS)
	FUZZ_CORPUS_ONLY=1 tests/run $(CHECK_TESTS) tests/fuzz.test

# The release tarball: the sources of the last commit (git archive), in
# lab3-$(VERSION)/, with the commit's time on every file and gzip's
# name and time left out, so that two runs give the same bytes.
dist:
	@git rev-parse --git-dir >/dev/null 2>&1 || { \
		echo "make dist: needs a git checkout (it packs the last commit)" >&2; \
		exit 1; }
	@git diff --quiet HEAD -- || echo "make dist: uncommitted changes" \
		"are not in the tarball: it packs HEAD" >&2
	git archive --format=tar --prefix=lab3-$(VERSION)/ \
		-o lab3-$(VERSION).tar.tmp HEAD
	gzip -n -9 <lab3-$(VERSION).tar.tmp >lab3-$(VERSION).tar.gz.tmp
	rm -f lab3-$(VERSION).tar.tmp
	mv lab3-$(VERSION).tar.gz.tmp lab3-$(VERSION).tar.gz
	@echo "make dist: lab3-$(VERSION).tar.gz"

# The Debian packages, built from a copy of the tree's tracked and new
# files (committed or not) and checked: lintian, blhc, hardening-check
# (scripts/deb).
deb: deps
	scripts/deb

clean:
	rm -f $(PROGRAMS) $(TEST_PROGRAMS) $(VALGRIND_PROGRAMS)
	rm -rf build tests/logs lab3-handout lab3-handout.tar.gz grade-results \
		lab3-autograder.zip lab3-*.tar.gz lab3-*.tar.gz.tmp lab3-*.tar.tmp
