/* SPDX-License-Identifier: MIT */
/*
 * wire-fields: print every field of protocol.h's wire structs as
 * "lab3.MESSAGE.FIELD OFFSET SIZE", from offsetof() and sizeof(), then
 * every message type as "type NUMBER NAME SIZE", for
 * tests/wire-fields.test to compare with the dissector's table
 * (scripts/lib/lab3.lua).  Each struct's fields must add up to its size:
 * a field added to protocol.h and not listed here makes it fail.
 *
 * wire-fields --pcap FILE: write a capture of RoCE v2 SENDs, one per
 * message encoded by lab3_encode() (FILE_INFO, REGION, DONE, VERDICT, ID,
 * KEY, ERROR), then eight that the decoder refuses (a wrong version, a
 * wrong body length, a reserved byte set, an unknown type, a verdict and
 * an error code that do not exist, a file name with a leading '.', an ID
 * with a newline), for the test to decode with the dissector.
 */
#include <stdint.h>
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

/* put_frame: one Ethernet + IPv4 + UDP (port 4791) + BTH (RC SEND Only)
 * frame carrying PAYLOAD, with its pcap record header, into OUT.  The
 * checksums and the invariant CRC are zero: the dissectors do not check
 * them by default. */
static void put_frame(FILE *out, unsigned n, const void *payload, size_t len)
{
	uint8_t f[14 + 20 + 8 + 12 + sizeof(union lab3_wire_msg) + 4] = {
		0x52, 0x54, 0, 0x72, 0x78, 0x01, 0x52, 0x54, 0, 0x72, 0x78,
		0x02, 0x08, 0x00,			/* Ethernet, IPv4 */
		0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, 17, 0, 0,
		198, 18, 0, 2, 198, 18, 0, 1,		/* IPv4, UDP */
		0xc0, 0x00, 0x12, 0xb7, 0, 0, 0, 0,	/* UDP to 4791 */
		0x04, 0x40, 0xff, 0xff, 0, 0, 0, 0x11,	/* BTH: SEND Only */
		0x80, 0, 0, 0,				/* ... PSN 0 */
	};
	size_t ip_len = 20 + 8 + 12 + len + 4, total = 14 + ip_len;
	uint32_t rec[4] = { n, 0, (uint32_t)total, (uint32_t)total };

	f[16] = (uint8_t)(ip_len >> 8);
	f[17] = (uint8_t)ip_len;
	f[38] = (uint8_t)((ip_len - 20) >> 8);
	f[39] = (uint8_t)(ip_len - 20);
	f[53] = (uint8_t)n;
	memcpy(f + 54, payload, len);
	fwrite(rec, sizeof(rec), 1, out);
	fwrite(f, total, 1, out);
}

/* write_pcap: see the top. */
static int write_pcap(const char *path)
{
	static const uint32_t pcap_header[6] = { 0xa1b2c3d4, 0x00040002, 0, 0,
						 65535, 1 };
	struct lab3_msg msgs[7] = {
		{ .type = LAB3_MSG_FILE_INFO, .file_info = { .length = 3000000,
		  .name = "f.bin" } },
		{ .type = LAB3_MSG_REGION, .region = { .addr = 0x7f0000001000,
		  .length = 1048576, .offset = 2097152, .rkey = 0x1234 } },
		{ .type = LAB3_MSG_DONE, .done = { .offset = 2097152,
		  .bytes = 1048576 } },
		{ .type = LAB3_MSG_VERDICT, .verdict = { LAB3_VERDICT_GOOD } },
		{ .type = LAB3_MSG_ID, .id = { "alice" } },
		{ .type = LAB3_MSG_KEY },
		{ .type = LAB3_MSG_ERROR, .error = { LAB3_ERR_RESOURCES,
		  "busy" } },
	};
	union lab3_wire_msg wire;
	unsigned n = 0;
	size_t len;
	FILE *out = fopen(path, "wb");

	if (out == NULL) {
		perror(path);
		return 1;
	}
	for (int i = 0; i < LAB3_SHA256_LEN; i++)
		msgs[0].file_info.sha256[i] = (uint8_t)i;
	for (int i = 0; i < LAB3_KEY_LEN; i++)
		msgs[5].key.key[i] = (uint8_t)(0xa0 + i);
	fwrite(pcap_header, sizeof(pcap_header), 1, out);
	for (int i = 0; i < 7; i++) {
		len = lab3_encode(&msgs[i], &wire);
		put_frame(out, ++n, &wire, len);
	}
	len = lab3_encode(&msgs[1], &wire);
	wire.hdr.version = 1;				/* wrong version */
	put_frame(out, ++n, &wire, len);
	len = lab3_encode(&msgs[2], &wire);
	wire.hdr.body_len = lab3_htobe16(99);		/* wrong length */
	put_frame(out, ++n, &wire, len);
	len = lab3_encode(&msgs[3], &wire);
	wire.verdict.reserved[3] = 1;			/* reserved set */
	put_frame(out, ++n, &wire, len);
	len = lab3_encode(&msgs[3], &wire);
	wire.hdr.type = 9;				/* unknown type */
	put_frame(out, ++n, &wire, len);
	len = lab3_encode(&msgs[3], &wire);
	wire.verdict.verdict = 7;			/* no such verdict */
	put_frame(out, ++n, &wire, len);
	len = lab3_encode(&msgs[6], &wire);
	wire.error.code = 0;				/* no such code */
	put_frame(out, ++n, &wire, len);
	len = lab3_encode(&msgs[0], &wire);
	wire.file_info.name[0] = '.';			/* a hidden file */
	put_frame(out, ++n, &wire, len);
	len = lab3_encode(&msgs[4], &wire);
	wire.id.id[1] = '\n';				/* not printable */
	put_frame(out, ++n, &wire, len);
	if (ferror(out)) {
		perror(path);
		fclose(out);
		return 1;
	}
	return fclose(out) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	int status = 0;

	if (argc == 3 && strcmp(argv[1], "--pcap") == 0)
		return write_pcap(argv[2]);

	for (size_t i = 0; i < COUNT(fields); i++)
		printf("%s %zu %zu\n", fields[i].name, fields[i].offset,
		       fields[i].size);
	for (int type = 0; type < 256; type++)
		if (lab3_wire_size(type) != 0)
			printf("type %d %s %zu\n", type,
			       lab3_msg_type_name(type), lab3_wire_size(type));
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
