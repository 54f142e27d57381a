/* SPDX-License-Identifier: MIT */
/*
 * args.c - the numbers of the programs' command lines (-t, -m, -w, -n,
 * -p and the like), each checked in full: a number that does not parse,
 * or does not fit, is refused rather than cut short.  The receiver's
 * durations and byte counts are built on it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "args.h"

/* lab3_parse_number: strtol() with every check; see args.h. */
long lab3_parse_number(const char *arg, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno != 0 || end == arg || *end != '\0' || v < min || v > max)
		return -1;
	return v;
}
