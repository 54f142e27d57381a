/* SPDX-License-Identifier: MIT */
/*
 * sizes.c - the receiver's durations and byte counts on its command line
 * (-t; -w, -m, --store-max and the like; declared in args.h), checked in
 * full as args.c's numbers are.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "args.h"

/* lab3_parse_seconds: see args.h. */
int lab3_parse_seconds(const char *arg)
{
	return (int)lab3_parse_number(arg, 1, 3600);
}

/* lab3_parse_size: see args.h. */
int lab3_parse_size(const char *arg, uint64_t *out)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	if (arg[0] < '0' || arg[0] > '9')
		return -1;
	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno != 0)
		return -1;
	switch (*end) {
	case 'K': shift = 10; end++; break;
	case 'M': shift = 20; end++; break;
	case 'G': shift = 30; end++; break;
	}
	if (*end != '\0' || v > (1ULL << 62) >> shift)
		return -1;
	*out = v << shift;
	return 0;
}
