# The Lab 3 RDMA file transfer pair.
#
#   make            build ./sender and ./receiver
#   make test       every test, over a real Soft-RoCE device (scripts/rxe-run)
#   make test-long  the longer suites, which CI runs too (tests/long/)
#   make test-slow  the slowest, not in CI (tests/slow/: the grader graded)
#   make demo       one transfer over the bed, showing the verdict and key
#   make handout    the students' kit: lab3-handout/ and lab3-handout.tar.gz
#                   (a sender.c skeleton from this one, the framework, the
#                   provided receiver, the bed); DEPTH=verbs leaves the
#                   lab's verbs in client.c to the student too
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
#   make install    build, then install the programs and their man pages
#                   under $(DESTDIR)$(PREFIX) (PREFIX defaults to /usr/local);
#                   SERVICE=1 adds the receiver's systemd service
#   make uninstall  remove exactly what `make install` installed
#
# WERROR=1 turns warnings into errors (CI does); SANITIZE=1 builds with
# AddressSanitizer and UBSan.

CC ?= cc
CFLAGS ?= -O2 -g
WARNINGS = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wformat=2
ifeq ($(WERROR),1)
WARNINGS += -Werror
endif
ifeq ($(SANITIZE),1)
CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer
LDFLAGS += -fsanitize=address,undefined
endif

PKGS = librdmacm libibverbs libcrypto
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

# The lab stands at the top; what it calls stands in folders named for
# their role: server/ (the class server), cli/ (the command lines), lib/
# (helpers below the connection).  A source includes any header by its
# bare name; objects go to build/, flat (no two sources share a name).
SRC_DIRS = server cli lib
vpath %.c $(SRC_DIRS)
INCLUDES = -I. $(addprefix -I,$(SRC_DIRS))
ALL_CFLAGS = -std=gnu11 $(WARNINGS) $(INCLUDES) $(PKG_CFLAGS) $(CFLAGS)

PROGRAMS = sender receiver
FUZZERS = tests/fuzz_decode tests/fuzz_receiver tests/fuzz_sender
# make test builds on every core: the clang fuzzers alone take seconds.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
TEST_PROGRAMS = tests/unit $(FUZZERS) tests/evil-sender tests/evil-receiver

.PHONY: all deps test test-long test-slow demo wire handout grade bench fuzz soak valgrind sparse \
	install uninstall clean autograder

all: $(PROGRAMS)

# Objects remember the flags they were built with, so that switching
# SANITIZE or WERROR rebuilds everything.
BUILD_FLAGS = $(CC) $(ALL_CFLAGS) $(LDFLAGS)
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

SENDER_OBJS = build/sender.o build/sender_cli.o build/client.o \
	$(CONN_OBJS) build/json.o build/args.o
sender: $(SENDER_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

# The receiver: one session's steps (receiver.c), the class server that
# runs many (server/server.c), what the steps ask of it
# (server/session.c), what a session keeps (server/store.c), the command
# line (cli/receiver_cli.c).
RECEIVER_OBJS = build/receiver.o build/receiver_cli.o build/server.o \
	build/session.o build/store.o $(CONN_OBJS) build/listener.o \
	build/json.o build/ledger.o build/roster.o build/args.o build/sizes.o \
	build/secret.o
receiver: $(RECEIVER_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

tests/unit: build/tests/unit.o build/tests/testlib.o $(CONN_OBJS) \
		build/listener.o build/json.o build/ledger.o build/roster.o \
		build/args.o build/sizes.o build/secret.o build/session.o \
		build/client.o
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

tests/evil-sender: build/tests/evil-sender.o build/tests/testlib.o \
		$(CONN_OBJS) build/client.o build/listener.o build/args.o \
		build/sizes.o
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

build/tests/evil-sender.o build/tests/evil-receiver.o: tests/evil.h
build/tests/unit.o build/tests/testlib.o build/tests/evil-sender.o \
	build/tests/evil-receiver.o: tests/testlib.h

tests/evil-receiver: build/tests/evil-receiver.o build/tests/testlib.o \
		$(CONN_OBJS) build/listener.o build/args.o build/client.o
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

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

# The slowest suites, not in CI: tests/slow/*.test (the grader graded on
# eighteen senders, the Gradescope package, every hostile submission, the
# kit's make check and demo, the pair on a second kernel series): about
# 70 minutes.  Run it after changing scripts/grade, scripts/lib/,
# scripts/handout/, tests/hostile/ or the bed's kernels.
test-slow: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all $(TEST_PROGRAMS)
	@$(PREPARE_BED)
	TEST_TIMEOUT=1500 tests/run tests/slow/*.test

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
	DEPTH=$(DEPTH) scripts/handout/build lab3-handout

autograder: deps
	DEPTH=$(DEPTH) scripts/autograder/build lab3-autograder.zip

grade: deps
	@test -n "$(SENDER)" || { echo "usage: make grade SENDER=path" >&2; exit 2; }
	scripts/grade $(SENDER)

# The installed files: $(BINDIR)/sender, $(BINDIR)/receiver,
# $(MAN1DIR)/sender.1, $(MAN1DIR)/receiver.1 (tests/man.test checks it).
PREFIX ?= /usr/local
BINDIR = $(PREFIX)/bin
MAN1DIR = $(PREFIX)/share/man/man1
MANPAGES = man/sender.1 man/receiver.1

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
ifeq ($(patsubst %/,%,$(PREFIX)),/usr)
# systemd_var NAME: the variable NAME of systemd's pkg-config file, or
# nothing without pkg-config or the file.
systemd_var = $(shell pkg-config --variable=$(1) systemd 2>/dev/null)
UNITDIR ?= $(or $(call systemd_var,systemdsystemunitdir),/usr/lib/systemd/system)
SYSUSERSDIR ?= $(or $(call systemd_var,sysusersdir),/usr/lib/sysusers.d)
else
UNITDIR ?= $(SYSCONFDIR)/systemd/system
SYSUSERSDIR ?= $(SYSCONFDIR)/sysusers.d
endif
CONFFILE = $(SYSCONFDIR)/lab3-receiver.conf
SERVICE_SUBST = sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@CONFFILE@|$(CONFFILE)|g'

install: $(PROGRAMS)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MAN1DIR)
	install -m 0755 $(PROGRAMS) $(DESTDIR)$(BINDIR)/
	install -m 0644 $(MANPAGES) $(DESTDIR)$(MAN1DIR)/
ifeq ($(SERVICE),1)
	install -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) \
		$(DESTDIR)$(SYSCONFDIR)
	$(SERVICE_SUBST) scripts/service/lab3-receiver.service.in \
		>$(DESTDIR)$(UNITDIR)/lab3-receiver.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/lab3-receiver.service
	install -m 0644 scripts/service/lab3-receiver.sysusers \
		$(DESTDIR)$(SYSUSERSDIR)/lab3-receiver.conf
	test -e $(DESTDIR)$(CONFFILE) || { \
		$(SERVICE_SUBST) scripts/service/lab3-receiver.conf \
			>$(DESTDIR)$(CONFFILE) && chmod 0644 $(DESTDIR)$(CONFFILE); }
	if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then \
		systemd-sysusers $(SYSUSERSDIR)/lab3-receiver.conf && \
		systemctl daemon-reload; fi
endif

uninstall:
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(PROGRAMS)) \
		$(addprefix $(DESTDIR)$(MAN1DIR)/,$(notdir $(MANPAGES)))
ifeq ($(SERVICE),1)
	if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then \
		systemctl disable --now lab3-receiver.service || true; fi
	rm -f $(DESTDIR)$(UNITDIR)/lab3-receiver.service \
		$(DESTDIR)$(SYSUSERSDIR)/lab3-receiver.conf
	if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then \
		systemctl daemon-reload; fi
endif

clean:
	rm -f $(PROGRAMS) $(TEST_PROGRAMS) $(VALGRIND_PROGRAMS)
	rm -rf build tests/logs lab3-handout lab3-handout.tar.gz grade-results \
		lab3-autograder.zip
