/* SPDX-License-Identifier: MIT */
/*
 * args.h - the numbers of the programs' command lines (args.c).
 */
#ifndef LAB3_ARGS_H
#define LAB3_ARGS_H

#include <stdint.h>

/* This release of the pair, for --version (the wire protocol has its own
 * number, LAB3_VERSION in protocol.h).  The Makefile passes it, read from
 * the top line of debian/changelog, the one place it is written. */
#ifndef LAB3_RELEASE
#define LAB3_RELEASE "unknown"
#endif

/* A decimal number from MIN to MAX (MIN >= 0), or -1 if ARG is not that. */
long lab3_parse_number(const char *arg, long min, long max);

/* A -t argument: 1 to 3600 seconds, or -1 if ARG is not that. */
int lab3_parse_seconds(const char *arg);

/* A byte count with an optional K, M or G suffix (powers of 1024) into
 * *OUT; -1 if ARG is not that. */
int lab3_parse_size(const char *arg, uint64_t *out);

#endif /* LAB3_ARGS_H */
