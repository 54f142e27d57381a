/*
 * wire-fields: print every field of protocol.h's wire structs as
 * "lab3.MESSAGE.FIELD OFFSET SIZE", from offsetof() and sizeof(), for
 * tests/wire-fields.test to compare with the dissector's table
 * (scripts/lib/lab3.lua).  Each struct's fields must add up to its size:
 * a field added to protocol.h and not listed here fails the build's run.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "../protocol.h"

#define FIELD(msg, type, member) \
	{ "lab3." msg "." #member, offsetof(type, member), \
	  sizeof(((type *)0)->member) }

struct field {
	const char *name;
	size_t offset, size;
};

static const struct field fields[] = {
	FIELD("header", struct lab3_wire_header, magic),
	FIELD("header", struct lab3_wire_header, version),
	FIELD("header", struct lab3_wire_header, type),
	FIELD("header", struct lab3_wire_header, body_len),
	FIELD("file_info", struct lab3_wire_file_info, length),
	FIELD("file_info", struct lab3_wire_file_info, sha256),
	FIELD("file_info", struct lab3_wire_file_info, name_len),
	FIELD("file_info", struct lab3_wire_file_info, name),
	FIELD("region", struct lab3_wire_region, addr),
	FIELD("region", struct lab3_wire_region, length),
	FIELD("region", struct lab3_wire_region, offset),
	FIELD("region", struct lab3_wire_region, rkey),
	FIELD("region", struct lab3_wire_region, reserved),
	FIELD("done", struct lab3_wire_done, offset),
	FIELD("done", struct lab3_wire_done, bytes),
	FIELD("verdict", struct lab3_wire_verdict, verdict),
	FIELD("verdict", struct lab3_wire_verdict, reserved),
	FIELD("id", struct lab3_wire_id, id_len),
	FIELD("id", struct lab3_wire_id, id),
	FIELD("key", struct lab3_wire_key, key),
	FIELD("error", struct lab3_wire_error, code),
	FIELD("error", struct lab3_wire_error, reason_len),
	FIELD("error", struct lab3_wire_error, reason),
};

/* Each message's size, which its header and fields must fill. */
static const struct field messages[] = {
	{ "header", 0, sizeof(struct lab3_wire_header) },
	{ "file_info", 0, sizeof(struct lab3_wire_file_info) },
	{ "region", 0, sizeof(struct lab3_wire_region) },
	{ "done", 0, sizeof(struct lab3_wire_done) },
	{ "verdict", 0, sizeof(struct lab3_wire_verdict) },
	{ "id", 0, sizeof(struct lab3_wire_id) },
	{ "key", 0, sizeof(struct lab3_wire_key) },
	{ "error", 0, sizeof(struct lab3_wire_error) },
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* filled: the bytes MSG's listed fields take ("lab3.MSG." names). */
static size_t filled(const char *msg)
{
	char prefix[32];
	size_t total = 0, len;

	len = (size_t)snprintf(prefix, sizeof(prefix), "lab3.%s.", msg);
	for (size_t i = 0; i < COUNT(fields); i++)
		if (strncmp(fields[i].name, prefix, len) == 0)
			total += fields[i].size;
	return total;
}

int main(void)
{
	int status = 0;

	for (size_t i = 0; i < COUNT(fields); i++)
		printf("%s %zu %zu\n", fields[i].name, fields[i].offset,
		       fields[i].size);
	for (size_t i = 0; i < COUNT(messages); i++) {
		size_t want = messages[i].size -
			      (i == 0 ? 0 : sizeof(struct lab3_wire_header));

		if (filled(messages[i].name) != want) {
			fprintf(stderr, "wire-fields: struct lab3_wire_%s has "
				"%zu bytes of fields not listed here\n",
				messages[i].name, want - filled(messages[i].name));
			status = 1;
		}
	}
	return status;
}
