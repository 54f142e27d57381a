# The Lab 3 RDMA file transfer pair.  `make test` runs every test over a
# real Soft-RoCE device (scripts/rxe-run, scripts/rxe-pair).

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

.PHONY: all deps test clean

all:

deps:
	@scripts/install-deps

test: deps all
	tests/run

clean:
	rm -rf tests/logs
