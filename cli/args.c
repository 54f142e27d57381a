/*
 * args.c - the numbers of the programs' command lines (-t, -m, -w, -n,
 * -p and the like), each checked in full: a number that does not parse,
 * or does not fit, is refused rather than cut short.
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
