/* SPDX-License-Identifier: MIT */
/*
 * fuzz_decode.c - a libFuzzer harness for the protocol decoder
 * (lab3_decode() in protocol.h), the code that reads every byte a peer
 * sends before anything else looks at it.
 *
 * For any input, lab3_decode() must either refuse it with a reason or
 * accept it; what it accepts must survive an encode/decode round trip
 * unchanged, and nothing may read out of bounds (AddressSanitizer) or
 * overflow (UBSan).  Built and run by `make fuzz`; a short run is part of
 * `make test`.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* same_msg: whether two decoded messages of the same type say the same. */
static int same_msg(const struct lab3_msg *a, const struct lab3_msg *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	union lab3_wire_msg wire;
	struct lab3_msg msg, again;
	char why[256] = "";
	size_t len;

	if (lab3_decode(data, size, &msg, why, sizeof(why)) != 0) {
		if (why[0] == '\0')
			abort();	/* a refusal must say why */
		return 0;
	}
	len = lab3_encode(&msg, &wire);
	if (len != size)
		abort();	/* accepted, so its size was the type's */
	why[0] = '\0';
	if (lab3_decode(&wire, len, &again, why, sizeof(why)) != 0 ||
	    !same_msg(&msg, &again))
		abort();	/* encode and decode disagree */
	return 0;
}
