/* SPDX-License-Identifier: MIT */
/*
 * fuzz.h - what the rules' fuzz harnesses (tests/fuzz_receiver.c,
 * tests/fuzz_sender.c) share: the input read as numbers, and CHECK.
 */
#ifndef LAB3_FUZZ_H
#define LAB3_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* CHECK: a rule that must hold; abort with its text when it does not. */
#define CHECK(cond)                                                        \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "broken rule: %s (line %d)\n",      \
				#cond, __LINE__);                          \
			abort();                                           \
		}                                                          \
	} while (0)

/* The fuzzer's bytes, read front to back; zeros once they run out. */
struct input {
	const uint8_t *p;
	size_t n;
};

/* take: the next BYTES (up to 8) bytes of IN as a little-endian number. */
static inline uint64_t take(struct input *in, int bytes)
{
	uint64_t v = 0;

	for (int i = 0; i < bytes && in->n > 0; i++, in->p++, in->n--)
		v |= (uint64_t)*in->p << (8 * i);
	return v;
}

#endif /* LAB3_FUZZ_H */
