/* SPDX-License-Identifier: MIT */
/*
 * tests/unit.c - unit tests of the wire protocol and the receiver's rules
 * (protocol.h) and of the hashes, the secret key, the command-line
 * parsers, the grading ledger, a connection's message bookkeeping
 * (completion.c, message.c) and the receiver's -v line of a session's
 * CPU by phase.  No RDMA device is used.
 *
 * Each case prints "ok - NAME" or "not ok - NAME: detail"; the last line is
 * "N passed, N failed", and the exit status is 1 when any case failed.
 *
 * Wire offsets are written out here as numbers, not taken from the structs
 * in protocol.h, so that a change of the struct layout shows up as a failure
 * instead of silently changing what is tested.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../cli/args.h"
#include "../cli/json.h"
#include "../common.h"
#include "../conn_internal.h"
#include "../lib/pieces.h"
#include "../rules.h"
#include "../server/ledger.h"
#include "../server/listener.h"
#include "../server/roster.h"
#include "../server/secret.h"
#include "../server/session.h"
#include "testlib.h"

/* Wire offsets, from the specification in protocol.h. */
enum {
	OFF_MAGIC = 0,
	OFF_VERSION = 4,
	OFF_TYPE = 5,
	OFF_BODY_LEN = 6,
	OFF_BODY = 8,

	OFF_FILE_INFO_LENGTH = 8,
	OFF_FILE_INFO_SHA256 = 16,
	OFF_FILE_INFO_NAME_LEN = 48,
	OFF_FILE_INFO_NAME = 49,

	OFF_REGION_ADDR = 8,
	OFF_REGION_LENGTH = 16,
	OFF_REGION_OFFSET = 24,
	OFF_REGION_RKEY = 32,
	OFF_REGION_RESERVED = 36,

	OFF_DONE_OFFSET = 8,
	OFF_DONE_BYTES = 16,

	OFF_VERDICT_VERDICT = 8,
	OFF_VERDICT_RESERVED = 9,

	OFF_ID_LEN = 8,
	OFF_ID = 9,

	OFF_KEY = 8,

	OFF_ERROR_CODE = 8,
	OFF_ERROR_REASON_LEN = 9,
	OFF_ERROR_REASON = 10,
};

#define NAME_LEN 128		/* room for a case name */
#define WHY_LEN 256		/* room for lab3_decode's reason */
#define PATH_LEN 256		/* room for a path in the scratch directory */

static int n_passed;
static int n_failed;

/* ---- Reporting ---- */

/* pass: count case NAME as passed and say so. */
static void pass(const char *name)
{
	printf("ok - %s\n", name);
	n_passed++;
}

/* fail: count case NAME as failed and say why, so that the one line is
 * enough to see what broke. */
static void fail(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void fail(const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("not ok - %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	n_failed++;
}

/* ---- Helpers ---- */

/* get_be16: read a big-endian 16-bit number byte by byte, to check the
 * wire form independently of the be16toh() the code uses. */
static uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* get_be32: the same for 32 bits. */
static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* get_be64: the same for 64 bits. */
static uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

/* put_be16: write V big-endian at P, to patch a header field. */
static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* from_hex: decode the hex digits HEX into OUT; returns the byte count.
 * The test vectors below are written in hex, as the RFCs print them. */
static size_t from_hex(const char *hex, uint8_t *out)
{
	size_t n = 0;
	unsigned int byte;

	while (hex[0] != '\0' && hex[1] != '\0' &&
	       sscanf(hex, "%2x", &byte) == 1) {
		out[n++] = (uint8_t)byte;
		hex += 2;
	}
	return n;
}

/* all_zero: 1 if the LEN bytes at P are zero.  Encode promises that unused
 * wire bytes are zero, so no process memory leaks onto the network. */
static int all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != 0)
			return 0;
	return 1;
}

/* ---- 1. Encode/decode round trips ---- */

/* encode_checked: encode MSG into WIRE and check the size and the header's
 * wire form: "LAB3", LAB3_VERSION, the type, and the big-endian body
 * length.
 * Returns 0, or -1 after reporting case NAME as failed. */
static int encode_checked(const char *name, const struct lab3_msg *msg,
			  union lab3_wire_msg *wire)
{
	size_t want = lab3_wire_size(msg->type);
	size_t got;
	const uint8_t *b = (const uint8_t *)wire;

	memset(wire, 0xa5, sizeof(*wire));
	got = lab3_encode(msg, wire);
	if (want == 0 || got != want) {
		fail(name, "lab3_encode returned %zu, expected %zu", got, want);
		return -1;
	}
	if (memcmp(b + OFF_MAGIC, "LAB3", 4) != 0) {
		fail(name, "magic bytes %02x %02x %02x %02x, expected 'LAB3'",
		     b[0], b[1], b[2], b[3]);
		return -1;
	}
	if (b[OFF_VERSION] != LAB3_VERSION || b[OFF_TYPE] != msg->type) {
		fail(name, "version %u type %u, expected %d and %d",
		     b[OFF_VERSION], b[OFF_TYPE], LAB3_VERSION,
		     (int)msg->type);
		return -1;
	}
	if (get_be16(b + OFF_BODY_LEN) != want - OFF_BODY) {
		fail(name, "body_len bytes %02x %02x, expected %zu big-endian",
		     b[OFF_BODY_LEN], b[OFF_BODY_LEN + 1], want - OFF_BODY);
		return -1;
	}
	return 0;
}

/* decode_checked: decode the SIZE bytes of WIRE into OUT and check that it
 * succeeds with the type encoded.  Returns 0, or -1 after reporting. */
static int decode_checked(const char *name, const union lab3_wire_msg *wire,
			  size_t size, enum lab3_msg_type type,
			  struct lab3_msg *out)
{
	char why[WHY_LEN] = "";
	int rc;

	memset(out, 0x5a, sizeof(*out));
	rc = lab3_decode(wire, size, out, why, sizeof(why));
	if (rc != 0) {
		fail(name, "lab3_decode returned %d: %s", rc, why);
		return -1;
	}
	if (out->type != type) {
		fail(name, "decoded type %d, expected %d", (int)out->type,
		     (int)type);
		return -1;
	}
	return 0;
}

/* roundtrip_file_info: FILE_INFO carries the length, hash and base name the
 * receiver checks; all three must survive the wire, the length big-endian
 * at offset 8, the name after its length byte, the rest zero. */
static void roundtrip_file_info(const char *name, uint64_t length,
				const char *fname)
{
	struct lab3_msg in, out;
	union lab3_wire_msg wire;
	const uint8_t *b = (const uint8_t *)&wire;
	size_t len = strlen(fname);

	memset(&in, 0, sizeof(in));
	in.type = LAB3_MSG_FILE_INFO;
	in.file_info.length = length;
	for (int i = 0; i < LAB3_SHA256_LEN; i++)
		in.file_info.sha256[i] = (uint8_t)(0xf0 ^ i);
	snprintf(in.file_info.name, sizeof(in.file_info.name), "%s", fname);

	if (encode_checked(name, &in, &wire) != 0)
		return;
	if (get_be64(b + OFF_FILE_INFO_LENGTH) != length) {
		fail(name, "wire length 0x%016llx, expected 0x%016llx",
		     (unsigned long long)get_be64(b + OFF_FILE_INFO_LENGTH),
		     (unsigned long long)length);
		return;
	}
	if (memcmp(b + OFF_FILE_INFO_SHA256, in.file_info.sha256,
		   LAB3_SHA256_LEN) != 0) {
		fail(name, "wire SHA-256 not at offset %d",
		     OFF_FILE_INFO_SHA256);
		return;
	}
	if (b[OFF_FILE_INFO_NAME_LEN] != len ||
	    memcmp(b + OFF_FILE_INFO_NAME, fname, len) != 0) {
		fail(name, "wire name_len %u or name bytes wrong, expected %zu",
		     b[OFF_FILE_INFO_NAME_LEN], len);
		return;
	}
	if (!all_zero(b + OFF_FILE_INFO_NAME + len,
		      LAB3_NAME_MAX - len)) {
		fail(name, "unused name bytes on the wire are not zero");
		return;
	}
	if (decode_checked(name, &wire, 304, LAB3_MSG_FILE_INFO, &out) != 0)
		return;
	if (out.file_info.length != length) {
		fail(name, "decoded length %llu, expected %llu",
		     (unsigned long long)out.file_info.length,
		     (unsigned long long)length);
		return;
	}
	if (memcmp(out.file_info.sha256, in.file_info.sha256,
		   LAB3_SHA256_LEN) != 0) {
		fail(name, "decoded SHA-256 differs");
		return;
	}
	if (strcmp(out.file_info.name, fname) != 0) {
		fail(name, "decoded name '%s', expected '%s'",
		     out.file_info.name, fname);
		return;
	}
	pass(name);
}

/* roundtrip_region: REGION carries a 64-bit address, length and file
 * offset and a 32-bit rkey; all must arrive whole, big-endian and in their
 * own places (addr 0x0102...08 is bytes 01 02 ... 08 at offset 8, length
 * 11 ... 18 at 16, offset 21 ... 28 at 24, rkey 31 ... 34 at 32), and
 * reserved must go out as zero.  Every byte differs, so a swapped or
 * misplaced field cannot pass. */
static void roundtrip_region(void)
{
	static const uint8_t want_addr[8] = {
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08
	};
	static const uint8_t want_length[8] = {
		0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18
	};
	static const uint8_t want_offset[8] = {
		0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28
	};
	static const uint8_t want_rkey[4] = { 0x31, 0x32, 0x33, 0x34 };
	const char *name = "round trip REGION, 64-bit addr, length, offset, "
			   "rkey";
	struct lab3_msg in, out;
	union lab3_wire_msg wire;
	const uint8_t *b = (const uint8_t *)&wire;

	memset(&in, 0, sizeof(in));
	in.type = LAB3_MSG_REGION;
	in.region.addr = 0x0102030405060708ull;
	in.region.length = 0x1112131415161718ull;
	in.region.offset = 0x2122232425262728ull;
	in.region.rkey = 0x31323334u;

	if (encode_checked(name, &in, &wire) != 0)
		return;
	if (memcmp(b + OFF_REGION_ADDR, want_addr, 8) != 0 ||
	    memcmp(b + OFF_REGION_LENGTH, want_length, 8) != 0 ||
	    memcmp(b + OFF_REGION_OFFSET, want_offset, 8) != 0 ||
	    memcmp(b + OFF_REGION_RKEY, want_rkey, 4) != 0) {
		fail(name, "wire addr/length/offset/rkey not big-endian at "
		     "8/16/24/32");
		return;
	}
	if (!all_zero(b + OFF_REGION_RESERVED, 4)) {
		fail(name, "reserved bytes on the wire are not zero");
		return;
	}
	if (decode_checked(name, &wire, 40, LAB3_MSG_REGION, &out) != 0)
		return;
	if (out.region.addr != in.region.addr ||
	    out.region.length != in.region.length ||
	    out.region.offset != in.region.offset ||
	    out.region.rkey != in.region.rkey) {
		fail(name, "decoded addr 0x%llx length 0x%llx offset 0x%llx "
		     "rkey 0x%x",
		     (unsigned long long)out.region.addr,
		     (unsigned long long)out.region.length,
		     (unsigned long long)out.region.offset,
		     out.region.rkey);
		return;
	}
	pass(name);
}

/* roundtrip_done: DONE carries the chunk's file offset and the byte count
 * the sender wrote into it, big-endian at offsets 8 and 16. */
static void roundtrip_done(void)
{
	const char *name = "round trip DONE, 64-bit offset and bytes";
	struct lab3_msg in, out;
	union lab3_wire_msg wire;
	const uint8_t *b = (const uint8_t *)&wire;

	memset(&in, 0, sizeof(in));
	in.type = LAB3_MSG_DONE;
	in.done.offset = 0x4142434445464748ull;
	in.done.bytes = 0x5152535455565758ull;

	if (encode_checked(name, &in, &wire) != 0)
		return;
	if (get_be64(b + OFF_DONE_OFFSET) != in.done.offset ||
	    get_be64(b + OFF_DONE_BYTES) != in.done.bytes) {
		fail(name, "wire offset 0x%016llx bytes 0x%016llx, not "
		     "big-endian at 8/16",
		     (unsigned long long)get_be64(b + OFF_DONE_OFFSET),
		     (unsigned long long)get_be64(b + OFF_DONE_BYTES));
		return;
	}
	if (decode_checked(name, &wire, 24, LAB3_MSG_DONE, &out) != 0)
		return;
	if (out.done.offset != in.done.offset ||
	    out.done.bytes != in.done.bytes) {
		fail(name, "decoded offset 0x%llx bytes 0x%llx",
		     (unsigned long long)out.done.offset,
		     (unsigned long long)out.done.bytes);
		return;
	}
	pass(name);
}

/* roundtrip_verdict: VERDICT is one byte, good or bad, and seven reserved
 * zero bytes. */
static void roundtrip_verdict(const char *name, enum lab3_verdict verdict)
{
	struct lab3_msg in, out;
	union lab3_wire_msg wire;
	const uint8_t *b = (const uint8_t *)&wire;

	memset(&in, 0, sizeof(in));
	in.type = LAB3_MSG_VERDICT;
	in.verdict.verdict = verdict;

	if (encode_checked(name, &in, &wire) != 0)
		return;
	if (b[OFF_VERDICT_VERDICT] != verdict ||
	    !all_zero(b + OFF_VERDICT_RESERVED, 7)) {
		fail(name, "wire verdict byte %u, expected %d and 7 zeros",
		     b[OFF_VERDICT_VERDICT], (int)verdict);
		return;
	}
	if (decode_checked(name, &wire, 16, LAB3_MSG_VERDICT, &out) != 0)
		return;
	if (out.verdict.verdict != verdict) {
		fail(name, "decoded verdict %d, expected %d",
		     (int)out.verdict.verdict, (int)verdict);
		return;
	}
	pass(name);
}

/* roundtrip_id: ID carries the student's ID, 1 to 63 characters, after its
 * length byte. */
static void roundtrip_id(const char *name, const char *id)
{
	struct lab3_msg in, out;
	union lab3_wire_msg wire;
	const uint8_t *b = (const uint8_t *)&wire;
	size_t len = strlen(id);

	memset(&in, 0, sizeof(in));
	in.type = LAB3_MSG_ID;
	snprintf(in.id.id, sizeof(in.id.id), "%s", id);

	if (encode_checked(name, &in, &wire) != 0)
		return;
	if (b[OFF_ID_LEN] != len || memcmp(b + OFF_ID, id, len) != 0 ||
	    !all_zero(b + OFF_ID + len, LAB3_ID_MAX - len)) {
		fail(name, "wire id_len %u or id bytes wrong, expected %zu",
		     b[OFF_ID_LEN], len);
		return;
	}
	if (decode_checked(name, &wire, 72, LAB3_MSG_ID, &out) != 0)
		return;
	if (strcmp(out.id.id, id) != 0) {
		fail(name, "decoded ID '%s', expected '%s'", out.id.id, id);
		return;
	}
	pass(name);
}

/* roundtrip_key: KEY carries the 32 key bytes unchanged. */
static void roundtrip_key(void)
{
	const char *name = "round trip KEY";
	struct lab3_msg in, out;
	union lab3_wire_msg wire;
	const uint8_t *b = (const uint8_t *)&wire;

	memset(&in, 0, sizeof(in));
	in.type = LAB3_MSG_KEY;
	for (int i = 0; i < LAB3_KEY_LEN; i++)
		in.key.key[i] = (uint8_t)(255 - 7 * i);

	if (encode_checked(name, &in, &wire) != 0)
		return;
	if (memcmp(b + OFF_KEY, in.key.key, LAB3_KEY_LEN) != 0) {
		fail(name, "wire key not at offset %d", OFF_KEY);
		return;
	}
	if (decode_checked(name, &wire, 40, LAB3_MSG_KEY, &out) != 0)
		return;
	if (memcmp(out.key.key, in.key.key, LAB3_KEY_LEN) != 0) {
		fail(name, "decoded key differs");
		return;
	}
	pass(name);
}

/* roundtrip_error: ERROR carries a code and a reason.  IN's reason may be
 * longer than LAB3_REASON_MAX (see roundtrip_error_cut); WANT is the reason
 * expected after the trip. */
static void roundtrip_error(const char *name, const struct lab3_msg *in,
			    const char *want)
{
	struct lab3_msg out;
	union lab3_wire_msg wire;
	const uint8_t *b = (const uint8_t *)&wire;
	size_t len = strlen(want);

	if (encode_checked(name, in, &wire) != 0)
		return;
	if (b[OFF_ERROR_CODE] != in->error.code ||
	    b[OFF_ERROR_REASON_LEN] != len ||
	    memcmp(b + OFF_ERROR_REASON, want, len) != 0 ||
	    !all_zero(b + OFF_ERROR_REASON + len, LAB3_REASON_MAX - len)) {
		fail(name, "wire code %u reason_len %u, expected %d and %zu",
		     b[OFF_ERROR_CODE], b[OFF_ERROR_REASON_LEN],
		     (int)in->error.code, len);
		return;
	}
	if (decode_checked(name, &wire, 128, LAB3_MSG_ERROR, &out) != 0)
		return;
	if (out.error.code != in->error.code ||
	    strcmp(out.error.reason, want) != 0) {
		fail(name, "decoded code %d reason '%s', expected %d '%s'",
		     (int)out.error.code, out.error.reason,
		     (int)in->error.code, want);
		return;
	}
	pass(name);
}

/* roundtrip_errors: every error code, an empty reason, a reason of exactly
 * LAB3_REASON_MAX characters. */
static void roundtrip_errors(void)
{
	struct lab3_msg in;
	char name[NAME_LEN];
	char longest[LAB3_REASON_MAX + 1];

	for (int code = 1; code <= LAB3_ERR_LAST; code++) {
		memset(&in, 0, sizeof(in));
		in.type = LAB3_MSG_ERROR;
		in.error.code = (enum lab3_error_code)code;
		snprintf(in.error.reason, sizeof(in.error.reason),
			 "reason for code %d: ~ printable !", code);
		snprintf(name, sizeof(name), "round trip ERROR code %d", code);
		roundtrip_error(name, &in, in.error.reason);
	}

	memset(&in, 0, sizeof(in));
	in.type = LAB3_MSG_ERROR;
	in.error.code = LAB3_ERR_PROTOCOL;
	roundtrip_error("round trip ERROR with an empty reason", &in, "");

	memset(longest, 'r', LAB3_REASON_MAX);
	longest[LAB3_REASON_MAX] = '\0';
	memset(&in, 0, sizeof(in));
	in.type = LAB3_MSG_ERROR;
	in.error.code = LAB3_ERR_NO_KEY;
	memcpy(in.error.reason, longest, sizeof(longest));
	roundtrip_error("round trip ERROR reason of LAB3_REASON_MAX chars",
			&in, longest);
}

/* roundtrip_error_cut: lab3_encode cuts a reason longer than
 * LAB3_REASON_MAX to LAB3_REASON_MAX.  struct lab3_msg has room for only
 * LAB3_REASON_MAX characters and a NUL, so the only way to hand encode a
 * longer reason is to fill the whole array without a NUL; the zeroed rest
 * of the union then ends the string one character later. */
static void roundtrip_error_cut(void)
{
	struct lab3_msg in;
	char want[LAB3_REASON_MAX + 1];

	memset(&in, 0, sizeof(in));
	in.type = LAB3_MSG_ERROR;
	in.error.code = LAB3_ERR_TOO_LARGE;
	memset(in.error.reason, 'c', sizeof(in.error.reason));
	memset(want, 'c', LAB3_REASON_MAX);
	want[LAB3_REASON_MAX] = '\0';
	roundtrip_error("round trip ERROR reason over LAB3_REASON_MAX is cut",
			&in, want);
}

/* encode_refuses: lab3_encode returns 0 for a message it cannot encode
 * (unknown type, or an ID longer than LAB3_ID_MAX: no NUL in the array,
 * as in roundtrip_error_cut), so that no malformed message is sent. */
static void encode_refuses(void)
{
	static const int bad_types[] = { 0, 8, 255 };
	struct lab3_msg in;
	union lab3_wire_msg wire;
	char name[NAME_LEN];
	size_t got;

	for (size_t i = 0; i < sizeof(bad_types) / sizeof(bad_types[0]); i++) {
		snprintf(name, sizeof(name), "encode refuses type %d",
			 bad_types[i]);
		memset(&in, 0, sizeof(in));
		in.type = (enum lab3_msg_type)bad_types[i];
		got = lab3_encode(&in, &wire);
		if (got != 0)
			fail(name, "lab3_encode returned %zu", got);
		else
			pass(name);
	}

	memset(&in, 0, sizeof(in));
	in.type = LAB3_MSG_ID;
	memset(in.id.id, 'i', sizeof(in.id.id));
	got = lab3_encode(&in, &wire);
	if (got != 0)
		fail("encode refuses an ID over LAB3_ID_MAX",
		     "lab3_encode returned %zu", got);
	else
		pass("encode refuses an ID over LAB3_ID_MAX");
}

/* test_roundtrips: case group 1. */
static void test_roundtrips(void)
{
	char longest_name[LAB3_NAME_MAX + 1];
	char longest_id[LAB3_ID_MAX + 1];

	roundtrip_file_info("round trip FILE_INFO with a name", 123456789,
			    "notes.txt");
	roundtrip_file_info("round trip FILE_INFO without a name",
			    0xfedcba9876543210ull, "");
	memset(longest_name, 'n', LAB3_NAME_MAX);
	longest_name[LAB3_NAME_MAX] = '\0';
	longest_name[100] = '.';
	roundtrip_file_info("round trip FILE_INFO with a 255-character name",
			    0x0102030405060708ull, longest_name);
	roundtrip_region();
	roundtrip_done();
	roundtrip_verdict("round trip VERDICT good", LAB3_VERDICT_GOOD);
	roundtrip_verdict("round trip VERDICT bad", LAB3_VERDICT_BAD);
	roundtrip_id("round trip ID of 1 character", "x");
	memset(longest_id, 'a', LAB3_ID_MAX);
	longest_id[LAB3_ID_MAX] = '\0';
	longest_id[0] = 'S';
	longest_id[LAB3_ID_MAX - 1] = '9';
	roundtrip_id("round trip ID of 63 characters", longest_id);
	roundtrip_key();
	roundtrip_errors();
	roundtrip_error_cut();
	encode_refuses();
}

/* ---- 2. Malformed messages ---- */

/* make_valid: encode a valid message of TYPE into the zeroed buffer BUF
 * (of at least sizeof(union lab3_wire_msg) bytes) and return its size.  Each rejection
 * case patches one field of it, so the rejection is for that field. */
static size_t make_valid(enum lab3_msg_type type, uint8_t *buf)
{
	struct lab3_msg msg;
	union lab3_wire_msg wire;
	size_t size;

	memset(&msg, 0, sizeof(msg));
	msg.type = type;
	switch (type) {
	case LAB3_MSG_FILE_INFO:
		msg.file_info.length = 4096;
		strcpy(msg.file_info.name, "notes.txt");
		break;
	case LAB3_MSG_REGION:
		msg.region.addr = 0x7f0000001000ull;
		msg.region.length = 4096;
		msg.region.offset = 8192;
		msg.region.rkey = 0x1234;
		break;
	case LAB3_MSG_DONE:
		msg.done.offset = 8192;
		msg.done.bytes = 4096;
		break;
	case LAB3_MSG_VERDICT:
		msg.verdict.verdict = LAB3_VERDICT_GOOD;
		break;
	case LAB3_MSG_ID:
		strcpy(msg.id.id, "s1234567");
		break;
	case LAB3_MSG_KEY:
		memset(msg.key.key, 0x42, LAB3_KEY_LEN);
		break;
	case LAB3_MSG_ERROR:
		msg.error.code = LAB3_ERR_TOO_LARGE;
		strcpy(msg.error.reason, "file too large");
		break;
	}
	size = lab3_encode(&msg, &wire);
	memcpy(buf, &wire, sizeof(wire));
	return size;
}

/* expect_reject: lab3_decode must refuse the LEN bytes at BUF with -1 and
 * say why, since the receiver reports that reason to its user. */
static void expect_reject(const char *name, const uint8_t *buf, size_t len)
{
	struct lab3_msg msg;
	char why[WHY_LEN] = "";
	int rc;

	rc = lab3_decode(buf, len, &msg, why, sizeof(why));
	if (rc != -1)
		fail(name, "lab3_decode returned %d, expected -1", rc);
	else if (why[0] == '\0')
		fail(name, "refused without a reason");
	else
		pass(name);
}

/* reject_patched: a valid message of TYPE with the byte at OFF set to
 * VAL must be refused. */
static void reject_patched(const char *name, enum lab3_msg_type type,
			   size_t off, uint8_t val)
{
	uint8_t buf[sizeof(union lab3_wire_msg) + 8] = { 0 };
	size_t size = make_valid(type, buf);

	buf[off] = val;
	expect_reject(name, buf, size);
}

/* reject_old_size: a message of TYPE in the shorter form it had before
 * the file offset was added, OLD_SIZE bytes with a body_len to match, as a
 * peer built from the old protocol.h would send it, must be refused. */
static void reject_old_size(const char *name, enum lab3_msg_type type,
			    size_t old_size)
{
	uint8_t buf[sizeof(union lab3_wire_msg) + 8] = { 0 };

	make_valid(type, buf);
	put_be16(buf + OFF_BODY_LEN, (uint16_t)(old_size - OFF_BODY));
	expect_reject(name, buf, old_size);
}

/* reject_old_sizes: REGION is 40 bytes and DONE 24 now; their old sizes,
 * 32 and 16, and the new sizes with the old body_len, are no message. */
static void reject_old_sizes(void)
{
	uint8_t buf[sizeof(union lab3_wire_msg) + 8];

	reject_old_size("reject REGION of 32 bytes (the size before offset)",
			LAB3_MSG_REGION, 32);
	reject_old_size("reject DONE of 16 bytes (the size before offset)",
			LAB3_MSG_DONE, 16);

	memset(buf, 0, sizeof(buf));
	make_valid(LAB3_MSG_REGION, buf);
	put_be16(buf + OFF_BODY_LEN, 32 - OFF_BODY);
	expect_reject("reject REGION of 40 bytes with body_len 24", buf, 40);
	memset(buf, 0, sizeof(buf));
	make_valid(LAB3_MSG_DONE, buf);
	put_be16(buf + OFF_BODY_LEN, 16 - OFF_BODY);
	expect_reject("reject DONE of 24 bytes with body_len 8", buf, 24);
}

/* reject_lengths: byte counts that are no message: empty, shorter than a
 * header, longer than any message, one off the type's size. */
static void reject_lengths(void)
{
	uint8_t buf[sizeof(union lab3_wire_msg) + 8] = { 0 };
	char name[NAME_LEN];
	size_t size;

	make_valid(LAB3_MSG_DONE, buf);
	expect_reject("reject byte_len 0", buf, 0);
	expect_reject("reject byte_len 7 (shorter than a header)", buf, 7);
	expect_reject("reject byte_len sizeof(union lab3_wire_msg) + 1", buf,
		      sizeof(union lab3_wire_msg) + 1);

	for (int type = LAB3_MSG_FILE_INFO; type <= LAB3_MSG_ERROR; type++) {
		memset(buf, 0, sizeof(buf));
		size = make_valid((enum lab3_msg_type)type, buf);
		snprintf(name, sizeof(name),
			 "reject %s of %zu bytes (one short)",
			 lab3_msg_type_name(type), size - 1);
		expect_reject(name, buf, size - 1);
		snprintf(name, sizeof(name),
			 "reject %s of %zu bytes (one over)",
			 lab3_msg_type_name(type), size + 1);
		expect_reject(name, buf, size + 1);
	}
	reject_old_sizes();
}

/* has_version: 1 if WHY says "version V" with no further digit after V,
 * so that "version 1" is not found in "version 12". */
static int has_version(const char *why, int v)
{
	char want[32];
	const char *p = why;
	size_t len;

	len = (size_t)snprintf(want, sizeof(want), "version %d", v);
	while ((p = strstr(p, want)) != NULL) {
		if (p[len] < '0' || p[len] > '9')
			return 1;
		p += len;
	}
	return 0;
}

/* reject_old_version: a DONE from a peer built from the version 1
 * protocol.h, whose REGION and DONE had no offsets, must be refused with a
 * reason that names both versions, so that its user sees at once that the
 * two programs are of different releases. */
static void reject_old_version(void)
{
	const char *name = "reject version 1 (the old protocol), naming both "
			   "versions";
	uint8_t buf[sizeof(union lab3_wire_msg) + 8] = { 0 };
	struct lab3_msg msg;
	char why[WHY_LEN] = "";
	size_t size = make_valid(LAB3_MSG_DONE, buf);
	int rc;

	buf[OFF_VERSION] = 1;
	rc = lab3_decode(buf, size, &msg, why, sizeof(why));
	if (rc != -1)
		fail(name, "lab3_decode returned %d, expected -1", rc);
	else if (!has_version(why, 1) || !has_version(why, LAB3_VERSION))
		fail(name, "reason '%s' does not say version 1 and version %d",
		     why, LAB3_VERSION);
	else
		pass(name);
}

/* reject_header: a wrong magic, version, type or body_len. */
static void reject_header(void)
{
	static const uint8_t bad_types[] = { 0, 8, 255 };
	uint8_t buf[sizeof(union lab3_wire_msg) + 8];
	char name[NAME_LEN];
	size_t size;

	reject_patched("reject wrong magic", LAB3_MSG_DONE, OFF_MAGIC, 'X');
	reject_patched("reject magic in little-endian order", LAB3_MSG_DONE,
		       OFF_MAGIC, '3');
	reject_patched("reject version 0", LAB3_MSG_DONE, OFF_VERSION, 0);
	reject_old_version();
	snprintf(name, sizeof(name), "reject version %d (a newer protocol)",
		 LAB3_VERSION + 1);
	reject_patched(name, LAB3_MSG_DONE, OFF_VERSION, LAB3_VERSION + 1);

	for (size_t i = 0; i < sizeof(bad_types); i++) {
		snprintf(name, sizeof(name), "reject unknown type %u",
			 bad_types[i]);
		reject_patched(name, LAB3_MSG_DONE, OFF_TYPE, bad_types[i]);
	}

	/* body_len that disagrees with a byte_len that is right. */
	for (int type = LAB3_MSG_FILE_INFO; type <= LAB3_MSG_ERROR; type++) {
		memset(buf, 0, sizeof(buf));
		size = make_valid((enum lab3_msg_type)type, buf);
		put_be16(buf + OFF_BODY_LEN, (uint16_t)(size - OFF_BODY + 1));
		snprintf(name, sizeof(name), "reject %s with body_len one over",
			 lab3_msg_type_name(type));
		expect_reject(name, buf, size);
		put_be16(buf + OFF_BODY_LEN, (uint16_t)(size - OFF_BODY - 1));
		snprintf(name, sizeof(name),
			 "reject %s with body_len one short",
			 lab3_msg_type_name(type));
		expect_reject(name, buf, size);
	}
	memset(buf, 0, sizeof(buf));
	size = make_valid(LAB3_MSG_DONE, buf);
	put_be16(buf + OFF_BODY_LEN, 0);
	expect_reject("reject DONE with body_len 0", buf, size);
	/* The body length in little-endian order: 16 as 10 00. */
	buf[OFF_BODY_LEN] = 16;
	buf[OFF_BODY_LEN + 1] = 0;
	expect_reject("reject DONE with body_len in little-endian order",
		      buf, size);
}

/* reject_file_info: a name the receiver must not turn into a file. */
static void reject_file_info(void)
{
	static const uint8_t controls[] = { 0x01, 0x1f, 0x7f, 0x80, 0xff };
	char name[NAME_LEN];

	reject_patched("reject FILE_INFO name containing '/'",
		       LAB3_MSG_FILE_INFO, OFF_FILE_INFO_NAME + 1, '/');
	reject_patched("reject FILE_INFO name ending in '/'",
		       LAB3_MSG_FILE_INFO, OFF_FILE_INFO_NAME + 8, '/');
	reject_patched("reject FILE_INFO name starting with '.'",
		       LAB3_MSG_FILE_INFO, OFF_FILE_INFO_NAME, '.');
	reject_patched("reject FILE_INFO name starting with '/'",
		       LAB3_MSG_FILE_INFO, OFF_FILE_INFO_NAME, '/');
	for (size_t i = 0; i < sizeof(controls); i++) {
		snprintf(name, sizeof(name),
			 "reject FILE_INFO name with byte 0x%02x",
			 controls[i]);
		reject_patched(name, LAB3_MSG_FILE_INFO,
			       OFF_FILE_INFO_NAME + 3, controls[i]);
	}
	/* "notes.txt" is 9 bytes; name_len 10 and 255 take in NULs. */
	reject_patched("reject FILE_INFO name_len covering a NUL",
		       LAB3_MSG_FILE_INFO, OFF_FILE_INFO_NAME_LEN, 10);
	reject_patched("reject FILE_INFO name_len 255 over a short name",
		       LAB3_MSG_FILE_INFO, OFF_FILE_INFO_NAME_LEN, 255);
}

/* reject_id: an ID that is empty, too long, or not printable. */
static void reject_id(void)
{
	reject_patched("reject ID with id_len 0", LAB3_MSG_ID, OFF_ID_LEN, 0);
	reject_patched("reject ID with id_len 64 (over LAB3_ID_MAX)",
		       LAB3_MSG_ID, OFF_ID_LEN, LAB3_ID_MAX + 1);
	reject_patched("reject ID with id_len 255", LAB3_MSG_ID, OFF_ID_LEN,
		       255);
	reject_patched("reject ID containing '\\n'", LAB3_MSG_ID, OFF_ID + 2,
		       '\n');
	reject_patched("reject ID containing '\\t'", LAB3_MSG_ID, OFF_ID + 2,
		       '\t');
	reject_patched("reject ID containing 0x7f", LAB3_MSG_ID, OFF_ID, 0x7f);
	reject_patched("reject ID containing 0x80", LAB3_MSG_ID, OFF_ID + 7,
		       0x80);
	/* "s1234567" is 8 bytes; id_len 9 takes in a NUL. */
	reject_patched("reject ID with id_len covering a NUL", LAB3_MSG_ID,
		       OFF_ID_LEN, 9);
}

/* reject_fields: out-of-range VERDICT, REGION and ERROR fields. */
static void reject_fields(void)
{
	reject_patched("reject VERDICT value 2", LAB3_MSG_VERDICT,
		       OFF_VERDICT_VERDICT, 2);
	reject_patched("reject VERDICT value 255", LAB3_MSG_VERDICT,
		       OFF_VERDICT_VERDICT, 255);
	reject_patched("reject VERDICT with first reserved byte nonzero",
		       LAB3_MSG_VERDICT, OFF_VERDICT_RESERVED, 1);
	reject_patched("reject VERDICT with last reserved byte nonzero",
		       LAB3_MSG_VERDICT, OFF_VERDICT_RESERVED + 6, 0x80);
	reject_patched("reject REGION with reserved byte 36 (first) nonzero",
		       LAB3_MSG_REGION, OFF_REGION_RESERVED, 1);
	reject_patched("reject REGION with reserved byte 39 (last) nonzero",
		       LAB3_MSG_REGION, OFF_REGION_RESERVED + 3, 1);
	reject_patched("reject ERROR code 0", LAB3_MSG_ERROR,
		       OFF_ERROR_CODE, 0);
	reject_patched("reject ERROR code 8", LAB3_MSG_ERROR,
		       OFF_ERROR_CODE, LAB3_ERR_LAST + 1);
	reject_patched("reject ERROR code 255", LAB3_MSG_ERROR,
		       OFF_ERROR_CODE, 255);
	reject_patched("reject ERROR reason with '\\n'", LAB3_MSG_ERROR,
		       OFF_ERROR_REASON + 4, '\n');
	reject_patched("reject ERROR reason with escape 0x1b",
		       LAB3_MSG_ERROR, OFF_ERROR_REASON, 0x1b);
	reject_patched("reject ERROR reason with 0xff", LAB3_MSG_ERROR,
		       OFF_ERROR_REASON + 13, 0xff);
	reject_patched("reject ERROR reason_len 119 (over LAB3_REASON_MAX)",
		       LAB3_MSG_ERROR, OFF_ERROR_REASON_LEN,
		       LAB3_REASON_MAX + 1);
	reject_patched("reject ERROR reason_len 255", LAB3_MSG_ERROR,
		       OFF_ERROR_REASON_LEN, 255);
	/* "file too large" is 14 bytes; reason_len 20 takes in NULs. */
	reject_patched("reject ERROR reason_len covering NULs",
		       LAB3_MSG_ERROR, OFF_ERROR_REASON_LEN, 20);
}

/* check_baselines: the valid messages the rejection cases start from must
 * decode, or the rejections would prove nothing. */
static void check_baselines(void)
{
	uint8_t buf[sizeof(union lab3_wire_msg) + 8];
	struct lab3_msg msg;
	char name[NAME_LEN];
	char why[WHY_LEN];
	size_t size;
	int rc;

	for (int type = LAB3_MSG_FILE_INFO; type <= LAB3_MSG_ERROR; type++) {
		snprintf(name, sizeof(name), "valid %s baseline decodes",
			 lab3_msg_type_name(type));
		memset(buf, 0, sizeof(buf));
		why[0] = '\0';
		size = make_valid((enum lab3_msg_type)type, buf);
		rc = lab3_decode(buf, size, &msg, why, sizeof(why));
		if (size != lab3_wire_size(type) || rc != 0)
			fail(name, "size %zu, lab3_decode %d: %s", size, rc,
			     why);
		else
			pass(name);
	}
}

/* test_rejections: case group 2. */
static void test_rejections(void)
{
	check_baselines();
	reject_lengths();
	reject_header();
	reject_file_info();
	reject_id();
	reject_fields();
}

/* ---- 3. lab3_check_name and lab3_check_id ---- */

/* expect_check: FN (lab3_check_name or lab3_check_id) on the LEN bytes at
 * S must return WANT, and say why when it refuses. */
static void expect_check(const char *name,
			 int (*fn)(const char *, size_t, char *, size_t),
			 const char *s, size_t len, int want)
{
	char why[WHY_LEN] = "";
	int rc = fn(s, len, why, sizeof(why));

	if (rc != want)
		fail(name, "returned %d, expected %d (%s)", rc, want, why);
	else if (rc != 0 && why[0] == '\0')
		fail(name, "refused without a reason");
	else
		pass(name);
}

/* test_checks: case group 3, the name and ID rules on their own. */
static void test_checks(void)
{
	char big[LAB3_NAME_MAX + 2];

	expect_check("check_name accepts \"notes.txt\"", lab3_check_name,
		     "notes.txt", 9, 0);
	expect_check("check_name accepts \"a\"", lab3_check_name, "a", 1, 0);
	expect_check("check_name accepts \"file-1_2.tar.gz\"",
		     lab3_check_name, "file-1_2.tar.gz", 15, 0);
	expect_check("check_name accepts \"a.\" and inner dots",
		     lab3_check_name, "a.", 2, 0);
	expect_check("check_name rejects \"...\" (leading '.')",
		     lab3_check_name, "...", 3, -1);
	expect_check("check_name rejects \".\"", lab3_check_name, ".", 1, -1);
	expect_check("check_name rejects \"..\"", lab3_check_name, "..", 2,
		     -1);
	expect_check("check_name rejects \".hidden\"", lab3_check_name,
		     ".hidden", 7, -1);
	expect_check("check_name rejects \"a/b\"", lab3_check_name, "a/b", 3,
		     -1);
	expect_check("check_name rejects \"/\"", lab3_check_name, "/", 1, -1);
	expect_check("check_name rejects the empty name", lab3_check_name,
		     "", 0, -1);
	expect_check("check_name rejects \"a\\nb\"", lab3_check_name, "a\nb",
		     3, -1);
	memset(big, 'b', sizeof(big));
	expect_check("check_name accepts 255 characters", lab3_check_name,
		     big, LAB3_NAME_MAX, 0);
	expect_check("check_name rejects 256 characters", lab3_check_name,
		     big, LAB3_NAME_MAX + 1, -1);

	expect_check("check_id accepts \"s1234567\"", lab3_check_id,
		     "s1234567", 8, 0);
	expect_check("check_id accepts \"a\"", lab3_check_id, "a", 1, 0);
	expect_check("check_id accepts \"Jane Doe ~!\"", lab3_check_id,
		     "Jane Doe ~!", 11, 0);
	expect_check("check_id accepts 63 characters", lab3_check_id, big,
		     LAB3_ID_MAX, 0);
	expect_check("check_id rejects 64 characters", lab3_check_id, big,
		     LAB3_ID_MAX + 1, -1);
	expect_check("check_id rejects the empty ID", lab3_check_id, "", 0,
		     -1);
	expect_check("check_id rejects \"a\\tb\"", lab3_check_id, "a\tb", 3,
		     -1);
	expect_check("check_id rejects \"ab\\n\"", lab3_check_id, "ab\n", 3,
		     -1);
}

/* ---- 4. SHA-256 ---- */

/* expect_sha256: lab3_sha256 of the LEN bytes at DATA must be the hex
 * digest WANT. */
static void expect_sha256(const char *name, const void *data, size_t len,
			  const char *want)
{
	uint8_t digest[LAB3_SHA256_LEN];
	char hex[2 * LAB3_SHA256_LEN + 1];
	int rc;

	rc = lab3_sha256(data, len, digest);
	if (rc != 0) {
		fail(name, "lab3_sha256 returned %d", rc);
		return;
	}
	lab3_hex(digest, sizeof(digest), hex);
	if (strcmp(hex, want) != 0)
		fail(name, "got %s, expected %s", hex, want);
	else
		pass(name);
}

/* test_hex: lab3_hex writes lowercase digits and a NUL, and nothing more;
 * every digest comparison below relies on it. */
static void test_hex(void)
{
	static const uint8_t in[4] = { 0x00, 0xab, 0x5f, 0xff };
	char out[16];

	memset(out, 'X', sizeof(out));
	lab3_hex(in, sizeof(in), out);
	if (memcmp(out, "00ab5fff", 9) != 0 || out[9] != 'X')
		fail("lab3_hex", "got '%.9s', expected '00ab5fff'", out);
	else
		pass("lab3_hex");
}

#define SHA256_ABC "ba7816bf8f01cfea414140de5dae2223" \
		   "b00361a396177a9cb410ff61f20015ad"
#define SHA256_EMPTY "e3b0c44298fc1c149afbf4c8996fb924" \
		     "27ae41e4649b934ca495991b7852b855"
#define SHA256_MILLION_A "cdc76e5c9914fb9281a1c7e284d73e67" \
			 "f1809a48a497200e046d39ccc7112cd0"

/* expect_sha256_pieces: the streaming SHA-256 of the bytes at DATA, fed as
 * N pieces of the lengths LENS one after the other, must be the hex digest
 * WANT.  The receiver hashes a file chunk by chunk this way, so the pieces'
 * boundaries must not change the digest. */
static void expect_sha256_pieces(const char *name, const uint8_t *data,
				 const size_t *lens, size_t n,
				 const char *want)
{
	struct lab3_sha256 h;
	uint8_t digest[LAB3_SHA256_LEN];
	char hex[2 * LAB3_SHA256_LEN + 1];
	size_t off = 0;
	int rc;

	rc = lab3_sha256_begin(&h);
	if (rc != 0) {
		fail(name, "lab3_sha256_begin returned %d", rc);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		rc = lab3_sha256_add(&h, data + off, lens[i]);
		if (rc != 0) {
			fail(name, "lab3_sha256_add of piece %zu (%zu bytes) "
			     "returned %d", i, lens[i], rc);
			lab3_sha256_free(&h);
			return;
		}
		off += lens[i];
	}
	rc = lab3_sha256_end(&h, digest);
	if (rc != 0) {
		fail(name, "lab3_sha256_end returned %d", rc);
		return;
	}
	lab3_hex(digest, sizeof(digest), hex);
	if (strcmp(hex, want) != 0)
		fail(name, "got %s, expected %s", hex, want);
	else
		pass(name);
}

/* sha256_started: begin H and feed it the string STR, as the cases below
 * all start; on a failure, say so under NAME (WHEN: "" or " after
 * free"), free H and return -1. */
static int sha256_started(const char *name, const char *when,
			  struct lab3_sha256 *h, const char *str)
{
	int rc = lab3_sha256_begin(h);

	if (rc != 0) {
		fail(name, "lab3_sha256_begin%s returned %d", when, rc);
		return -1;
	}
	if (lab3_sha256_add(h, str, strlen(str)) != 0) {
		fail(name, "lab3_sha256_add%s failed", when);
		lab3_sha256_free(h);
		return -1;
	}
	return 0;
}

/* test_sha256_free_after_end: lab3_sha256_end releases the context, so a
 * lab3_sha256_free after it, as a cleanup path that frees whatever it
 * holds would do, must free nothing twice (AddressSanitizer would report
 * a double free), and neither must a second free. */
static void test_sha256_free_after_end(void)
{
	const char *name = "sha256_free after sha256_end is harmless";
	struct lab3_sha256 h;
	uint8_t digest[LAB3_SHA256_LEN];
	char hex[2 * LAB3_SHA256_LEN + 1];
	int rc;

	if (sha256_started(name, "", &h, "abc") != 0)
		return;
	rc = lab3_sha256_end(&h, digest);
	lab3_sha256_free(&h);
	lab3_sha256_free(&h);
	lab3_hex(digest, sizeof(digest), hex);
	if (rc != 0)
		fail(name, "lab3_sha256_end returned %d", rc);
	else if (h.ctx != NULL)
		fail(name, "the context is still set after free");
	else if (strcmp(hex, SHA256_ABC) != 0)
		fail(name, "got %s, expected %s", hex, SHA256_ABC);
	else
		pass(name);
}

/* test_sha256_free_unfinished: lab3_sha256_free on a context that was
 * begun and fed but never ended, as when a transfer fails midway, must
 * release it (LeakSanitizer would report the leak at exit), and leave the
 * struct fit to begin again. */
static void test_sha256_free_unfinished(void)
{
	const char *name = "sha256_free releases a context never ended";
	struct lab3_sha256 h;
	uint8_t digest[LAB3_SHA256_LEN];
	char hex[2 * LAB3_SHA256_LEN + 1];
	int rc;

	if (sha256_started(name, "", &h, "xyz") != 0)
		return;
	lab3_sha256_free(&h);
	if (h.ctx != NULL) {
		fail(name, "the context is still set after free");
		return;
	}
	if (sha256_started(name, " after free", &h, "abc") != 0)
		return;
	rc = lab3_sha256_end(&h, digest);
	lab3_hex(digest, sizeof(digest), hex);
	if (rc != 0)
		fail(name, "lab3_sha256_end after free returned %d", rc);
	else if (strcmp(hex, SHA256_ABC) != 0)
		fail(name, "begun again, got %s, expected %s", hex,
		     SHA256_ABC);
	else
		pass(name);
}

/* test_sha256_stream: the streaming SHA-256 gives the FIPS 180-2 digests
 * whatever the pieces: empty ones, one byte, odd sizes, sizes across the
 * 64-byte block boundary, and no piece at all. */
static void test_sha256_stream(void)
{
	static const size_t abc_lens[] = { 1, 0, 2 };	/* "a", "", "bc" */
	const size_t million = 1000000;
	size_t million_lens[] = { 1, 7, 4096, 65536, 0 };
	uint8_t *a;

	expect_sha256_pieces("streaming SHA-256 of \"a\", \"\", \"bc\"",
			     (const uint8_t *)"abc", abc_lens, 3, SHA256_ABC);
	expect_sha256_pieces("streaming SHA-256 of nothing (begin, end)",
			     (const uint8_t *)"", NULL, 0, SHA256_EMPTY);
	test_sha256_free_after_end();
	test_sha256_free_unfinished();

	a = malloc(million);
	if (a == NULL) {
		fail("streaming SHA-256 of one million 'a'", "out of memory");
		return;
	}
	memset(a, 'a', million);
	million_lens[4] = million - (1 + 7 + 4096 + 65536);
	expect_sha256_pieces("streaming SHA-256 of one million 'a' in pieces "
			     "of 1, 7, 4096, 65536, rest",
			     a, million_lens, 5, SHA256_MILLION_A);
	free(a);
}

/* test_sha256: case group 4, the FIPS 180-2 examples, in one call and
 * streamed. */
static void test_sha256(void)
{
	const size_t million = 1000000;
	char *a;

	test_hex();
	expect_sha256("SHA-256 of \"\"", "", 0, SHA256_EMPTY);
	expect_sha256("SHA-256 of \"abc\"", "abc", 3, SHA256_ABC);
	expect_sha256("SHA-256 of the 448-bit message",
		      "abcdbcdecdefdefgefghfghighijhijk"
		      "ijkljklmklmnlmnomnopnopq", 56,
		      "248d6a61d20638b8e5c026930c3e6039"
		      "a33ce45964ff2167f6ecedd419db06c1");
	a = malloc(million);
	if (a == NULL) {
		fail("SHA-256 of one million 'a'", "out of memory");
	} else {
		memset(a, 'a', million);
		expect_sha256("SHA-256 of one million 'a'", a, million,
			      SHA256_MILLION_A);
		free(a);
	}
	test_sha256_stream();
}

/* ---- 5. HMAC-SHA256 ---- */

/*
 * An RFC 4231 test case.  The key is KEY_HEX, or KEY_LEN bytes of KEY_FILL
 * when KEY_HEX is NULL; the data is the text DATA, or DATA_LEN bytes of
 * DATA_FILL when DATA is NULL.
 */
struct hmac_vector {
	const char *name;
	const char *key_hex;
	uint8_t key_fill;
	size_t key_len;
	const char *data;
	uint8_t data_fill;
	size_t data_len;
	const char *mac;
};

static const struct hmac_vector hmac_vectors[] = {
	{
		.name = "HMAC-SHA256 RFC 4231 test case 1",
		.key_fill = 0x0b, .key_len = 20,
		.data = "Hi There",
		.mac = "b0344c61d8db38535ca8afceaf0bf12b"
		       "881dc200c9833da726e9376c2e32cff7",
	},
	{
		.name = "HMAC-SHA256 RFC 4231 test case 2",
		.key_hex = "4a656665",			/* "Jefe" */
		.data = "what do ya want for nothing?",
		.mac = "5bdcc146bf60754e6a042426089575c7"
		       "5a003f089d2739839dec58b964ec3843",
	},
	{
		.name = "HMAC-SHA256 RFC 4231 test case 3",
		.key_fill = 0xaa, .key_len = 20,
		.data_fill = 0xdd, .data_len = 50,
		.mac = "773ea91e36800e46854db8ebd09181a7"
		       "2959098b3ef8c122d9635514ced565fe",
	},
	{
		.name = "HMAC-SHA256 RFC 4231 test case 4",
		.key_hex = "0102030405060708090a0b0c0d0e0f10"
			   "111213141516171819",
		.data_fill = 0xcd, .data_len = 50,
		.mac = "82558a389a443c0ea4cc819899f2083a"
		       "85f0faa3e578f8077a2e3ff46729665b",
	},
	{
		.name = "HMAC-SHA256 RFC 4231 test case 6",
		.key_fill = 0xaa, .key_len = 131,
		.data = "Test Using Larger Than Block-Size Key - "
			"Hash Key First",
		.mac = "60e431591ee0b67f0d8a26aacbf5b77f"
		       "8e0bc6213728c5140546040f0ee37f54",
	},
	{
		.name = "HMAC-SHA256 RFC 4231 test case 7",
		.key_fill = 0xaa, .key_len = 131,
		.data = "This is a test using a larger than block-size "
			"key and a larger than block-size data. The key "
			"needs to be hashed before being used by the HMAC "
			"algorithm.",
		.mac = "9b09ffa71b942fcb27635fbcd5b0e944"
		       "bfdc63644f0713938a7f51535c3a35e2",
	},
};

/* expect_hmac: lab3_hmac_sha256 of vector V must be its MAC. */
static void expect_hmac(const struct hmac_vector *v)
{
	uint8_t key[256], data[256], mac[LAB3_KEY_LEN];
	char hex[2 * LAB3_KEY_LEN + 1];
	size_t key_len, data_len;
	int rc;

	if (v->key_hex != NULL) {
		key_len = from_hex(v->key_hex, key);
	} else {
		key_len = v->key_len;
		memset(key, v->key_fill, key_len);
	}
	if (v->data != NULL) {
		data_len = strlen(v->data);
		memcpy(data, v->data, data_len);
	} else {
		data_len = v->data_len;
		memset(data, v->data_fill, data_len);
	}
	rc = lab3_hmac_sha256(key, key_len, data, data_len, mac);
	if (rc != 0) {
		fail(v->name, "lab3_hmac_sha256 returned %d", rc);
		return;
	}
	lab3_hex(mac, sizeof(mac), hex);
	if (strcmp(hex, v->mac) != 0)
		fail(v->name, "got %s, expected %s", hex, v->mac);
	else
		pass(v->name);
}

/* test_hmac: case group 5.  RFC 4231 case 5 is truncated to 128 bits, so
 * it does not fit a function that gives the whole MAC. */
static void test_hmac(void)
{
	for (size_t i = 0; i < sizeof(hmac_vectors) / sizeof(hmac_vectors[0]);
	     i++)
		expect_hmac(&hmac_vectors[i]);
}

/* ---- 6. lab3_key_for_id ---- */

/* expect_key_for_id: the key for ID must be HMAC-SHA256(SECRET, ID) over
 * exactly the ID's characters, without its NUL. */
static void expect_key_for_id(const char *name, const uint8_t *secret,
			      const char *id)
{
	uint8_t key[LAB3_KEY_LEN], want[LAB3_KEY_LEN];
	int rc;

	rc = lab3_key_for_id(secret, id, key);
	if (rc != 0) {
		fail(name, "lab3_key_for_id returned %d", rc);
		return;
	}
	rc = lab3_hmac_sha256(secret, LAB3_SECRET_LEN, id, strlen(id), want);
	if (rc != 0) {
		fail(name, "lab3_hmac_sha256 returned %d", rc);
		return;
	}
	if (memcmp(key, want, LAB3_KEY_LEN) != 0)
		fail(name, "key differs from HMAC-SHA256(secret, id)");
	else
		pass(name);
}

/* test_key_for_id: case group 6, and one known answer (from openssl dgst
 * -sha256 -mac HMAC), so that key and secret cannot be swapped in both
 * functions alike. */
static void test_key_for_id(void)
{
	static const char *want = "7dbf4bc95c4df5d077779aa9a8e5c23e"
				  "c70a08f983d6f55628bf0869e6c9d27e";
	const char *name = "key_for_id known answer for \"s1234567\"";
	uint8_t secret[LAB3_SECRET_LEN];
	uint8_t key[LAB3_KEY_LEN];
	char hex[2 * LAB3_KEY_LEN + 1];
	char longest[LAB3_ID_MAX + 1];
	int rc;

	for (int i = 0; i < LAB3_SECRET_LEN; i++)
		secret[i] = (uint8_t)i;
	memset(longest, 'z', LAB3_ID_MAX);
	longest[LAB3_ID_MAX] = '\0';
	expect_key_for_id("key_for_id is HMAC(secret, \"s1234567\")", secret,
			  "s1234567");
	expect_key_for_id("key_for_id is HMAC(secret, \"a\")", secret, "a");
	expect_key_for_id("key_for_id is HMAC(secret, 63-char ID)", secret,
			  longest);

	rc = lab3_key_for_id(secret, "s1234567", key);
	lab3_hex(key, sizeof(key), hex);
	if (rc != 0)
		fail(name, "lab3_key_for_id returned %d", rc);
	else if (strcmp(hex, want) != 0)
		fail(name, "got %s, expected %s", hex, want);
	else
		pass(name);
}

/* ---- 7. lab3_load_secret ---- */

/* write_file: create PATH with the LEN bytes at TEXT; 0 or -1. */
static int write_file(const char *path, const char *text, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, len);
	if (close(fd) != 0 || n != (ssize_t)len)
		return -1;
	return 0;
}

/* load_checked: load the secret at PATH into SECRET, reporting case NAME
 * as failed if lab3_load_secret does.  Returns 0 or -1. */
static int load_checked(const char *name, const char *path, uint8_t *secret)
{
	char err[LAB3_ERR_LEN] = "";
	int rc;

	rc = lab3_load_secret(path, secret, err, sizeof(err));
	if (rc != 0) {
		fail(name, "lab3_load_secret returned %d: %s", rc, err);
		return -1;
	}
	return 0;
}

/* expect_load_refused: a secret file with the LEN bytes at TEXT must be
 * refused with an error, never read as a weak or partial key. */
static void expect_load_refused(const char *name, const char *dir,
				const char *text, size_t len)
{
	char path[PATH_LEN];
	char err[LAB3_ERR_LEN] = "";
	uint8_t secret[LAB3_SECRET_LEN];
	int rc;

	snprintf(path, sizeof(path), "%s/bad", dir);
	if (write_file(path, text, len) != 0) {
		fail(name, "cannot write %s: %s", path, strerror(errno));
		return;
	}
	rc = lab3_load_secret(path, secret, err, sizeof(err));
	if (rc == 0)
		fail(name, "lab3_load_secret accepted it");
	else if (err[0] == '\0')
		fail(name, "refused (%d) without a message", rc);
	else
		pass(name);
	unlink(path);
}

/* test_created_secret: a missing secret file is created, private to its
 * owner, and read back the same; another file holds another secret. */
static void test_created_secret(const char *dir)
{
	const char *name;
	char path[PATH_LEN], other[PATH_LEN];
	uint8_t first[LAB3_SECRET_LEN], again[LAB3_SECRET_LEN];
	uint8_t second[LAB3_SECRET_LEN];
	struct stat st;

	snprintf(path, sizeof(path), "%s/secret", dir);
	snprintf(other, sizeof(other), "%s/other-secret", dir);

	name = "load_secret creates a missing file with mode 0600";
	if (load_checked(name, path, first) != 0) {
		unlink(path);
		return;
	}
	if (stat(path, &st) != 0)
		fail(name, "stat %s: %s", path, strerror(errno));
	else if ((st.st_mode & 0777) != 0600)
		fail(name, "mode %04o, expected 0600",
		     (unsigned int)(st.st_mode & 0777));
	else if (!S_ISREG(st.st_mode))
		fail(name, "not a regular file");
	else
		pass(name);

	name = "load_secret gives the same secret twice";
	if (load_checked(name, path, again) == 0) {
		if (memcmp(first, again, LAB3_SECRET_LEN) != 0)
			fail(name, "second load differs from the first");
		else
			pass(name);
	}

	name = "load_secret creates a different secret for another file";
	if (load_checked(name, other, second) == 0) {
		if (memcmp(first, second, LAB3_SECRET_LEN) == 0)
			fail(name, "two new files hold the same secret");
		else if (all_zero(first, LAB3_SECRET_LEN))
			fail(name, "the secret is all zeros");
		else
			pass(name);
	}
	unlink(path);
	unlink(other);
}

/* test_written_secret: a file written by hand in the format
 * lab3_load_secret creates (64 lowercase hex digits, a newline) gives
 * exactly those bytes. */
static void test_written_secret(const char *dir)
{
	static const char text[] = "00112233445566778899aabbccddeeff"
				   "0f1e2d3c4b5a69788796a5b4c3d2e1f0\n";
	const char *name = "load_secret reads a hand-written file";
	char path[PATH_LEN];
	uint8_t want[LAB3_SECRET_LEN], got[LAB3_SECRET_LEN];
	char hex[2 * LAB3_SECRET_LEN + 1];

	snprintf(path, sizeof(path), "%s/written", dir);
	from_hex(text, want);
	if (write_file(path, text, sizeof(text) - 1) != 0) {
		fail(name, "cannot write %s: %s", path, strerror(errno));
		return;
	}
	if (load_checked(name, path, got) == 0) {
		lab3_hex(got, sizeof(got), hex);
		if (memcmp(got, want, LAB3_SECRET_LEN) != 0)
			fail(name, "got %s, expected %.64s", hex, text);
		else
			pass(name);
	}
	unlink(path);
}

/* test_shared_secret: a valid secret file that others may read is refused,
 * since anyone who reads it can make the key for any ID. */
static void test_shared_secret(const char *dir)
{
	static const char text[] = "00112233445566778899aabbccddeeff"
				   "0f1e2d3c4b5a69788796a5b4c3d2e1f0\n";
	const char *name = "load_secret refuses a file readable by others";
	char path[PATH_LEN];
	char err[LAB3_ERR_LEN] = "";
	uint8_t secret[LAB3_SECRET_LEN];
	int rc;

	snprintf(path, sizeof(path), "%s/shared", dir);
	if (write_file(path, text, sizeof(text) - 1) != 0 ||
	    chmod(path, 0644) != 0) {
		fail(name, "cannot write %s: %s", path, strerror(errno));
		unlink(path);
		return;
	}
	rc = lab3_load_secret(path, secret, err, sizeof(err));
	if (rc == 0)
		fail(name, "lab3_load_secret accepted mode 0644");
	else if (err[0] == '\0')
		fail(name, "refused (%d) without a message", rc);
	else
		pass(name);
	unlink(path);
}

/* test_foreign_secret: a valid secret file of mode 0600 that belongs to
 * another user is refused: its owner can read it, or make it readable.
 * (As root only, who can give it away.) */
static void test_foreign_secret(const char *dir)
{
	static const char text[] = "00112233445566778899aabbccddeeff"
				   "0f1e2d3c4b5a69788796a5b4c3d2e1f0\n";
	const char *name = "load_secret refuses a file another user owns";
	char path[PATH_LEN];
	char err[LAB3_ERR_LEN] = "";
	uint8_t secret[LAB3_SECRET_LEN];
	int rc;

	if (geteuid() != 0) {
		pass("load_secret refuses a file another user owns "
		     "(skipped: not root)");
		return;
	}
	snprintf(path, sizeof(path), "%s/foreign", dir);
	if (write_file(path, text, sizeof(text) - 1) != 0 ||
	    chown(path, 65534, 65534) != 0) {
		fail(name, "cannot write %s: %s", path, strerror(errno));
		unlink(path);
		return;
	}
	rc = lab3_load_secret(path, secret, err, sizeof(err));
	if (rc == 0)
		fail(name, "lab3_load_secret accepted uid 65534's file");
	else if (strstr(err, "belongs to uid 65534") == NULL)
		fail(name, "refused (%d) saying '%s'", rc, err);
	else
		pass(name);
	unlink(path);
}

/* test_load_secret: case group 7, in a scratch directory of its own that
 * must be empty again at the end (no temporary file left behind). */
static void test_load_secret(void)
{
	char dir[] = "/tmp/lab3-unit.XXXXXX";

	if (mkdtemp(dir) == NULL) {
		fail("load_secret scratch directory", "mkdtemp: %s",
		     strerror(errno));
		return;
	}
	test_created_secret(dir);
	test_written_secret(dir);
	test_shared_secret(dir);
	test_foreign_secret(dir);
	expect_load_refused("load_secret refuses \"hello\\n\"", dir,
			    "hello\n", 6);
	expect_load_refused("load_secret refuses an empty file", dir, "", 0);
	expect_load_refused("load_secret refuses 62 hex digits", dir,
			    "00112233445566778899aabbccddeeff"
			    "0f1e2d3c4b5a69788796a5b4c3d2e1\n", 63);
	expect_load_refused("load_secret refuses a non-hex digit", dir,
			    "00112233445566778899aabbccddeeff"
			    "0f1e2d3c4b5a69788796a5b4c3d2e1fg\n", 65);
	if (rmdir(dir) != 0)
		fail("load_secret leaves nothing behind", "rmdir %s: %s", dir,
		     strerror(errno));
	else
		pass("load_secret leaves nothing behind");
}

/* ---- 8. lab3_parse_size and lab3_parse_seconds ---- */

/* expect_size: lab3_parse_size of ARG must give 0 and WANT. */
static void expect_size(const char *arg, uint64_t want)
{
	char name[NAME_LEN];
	uint64_t got = 0x5a5a5a5a5a5a5a5aull;
	int rc;

	snprintf(name, sizeof(name), "parse_size \"%s\" is %llu", arg,
		 (unsigned long long)want);
	rc = lab3_parse_size(arg, &got);
	if (rc != 0)
		fail(name, "lab3_parse_size returned %d", rc);
	else if (got != want)
		fail(name, "got %llu", (unsigned long long)got);
	else
		pass(name);
}

/* expect_size_refused: lab3_parse_size must refuse ARG with -1; WHAT says
 * why it is no size. */
static void expect_size_refused(const char *arg, const char *what)
{
	char name[NAME_LEN];
	uint64_t got = 0;
	int rc;

	snprintf(name, sizeof(name), "parse_size rejects \"%s\" (%s)", arg,
		 what);
	rc = lab3_parse_size(arg, &got);
	if (rc != -1)
		fail(name, "lab3_parse_size returned %d (%llu), expected -1",
		     rc, (unsigned long long)got);
	else
		pass(name);
}

/* expect_seconds: lab3_parse_seconds of ARG must return WANT, -1 for an
 * argument that is not 1 to 3600 seconds. */
static void expect_seconds(const char *arg, int want)
{
	char name[NAME_LEN];
	int got = lab3_parse_seconds(arg);

	if (want < 0)
		snprintf(name, sizeof(name), "parse_seconds rejects \"%s\"",
			 arg);
	else
		snprintf(name, sizeof(name), "parse_seconds \"%s\" is %d",
			 arg, want);
	if (got != want)
		fail(name, "returned %d, expected %d", got, want);
	else
		pass(name);
}

/* test_parse: case group 8, the size and seconds arguments of the command
 * lines.  Sizes go up to 2^62 bytes, so that no size, nor a sum of two,
 * overflows; with a suffix the limit applies to the product. */
static void test_parse(void)
{
	expect_size("0", 0);
	expect_size("123", 123);
	expect_size("64K", 65536);
	expect_size("16M", 16777216);
	expect_size("1G", 1073741824);
	expect_size("4611686018427387904", 1ull << 62);
	expect_size("4294967296G", 1ull << 62);
	expect_size_refused("", "empty");
	expect_size_refused("16k", "lowercase suffix");
	expect_size_refused("M", "no digits");
	expect_size_refused("-1", "negative");
	expect_size_refused("1.5M", "not an integer");
	expect_size_refused("16MB", "text after the suffix");
	expect_size_refused("4611686018427387905", "2^62 + 1");
	expect_size_refused("4294967297G", "over 2^62 bytes");
	expect_size_refused("18446744073709551616", "over 2^64");

	expect_seconds("1", 1);
	expect_seconds("3600", 3600);
	expect_seconds("0", -1);
	expect_seconds("3601", -1);
	expect_seconds("", -1);
	expect_seconds("5s", -1);
}

/* ---- 9. The receiver's rules (lab3_rx_*) ---- */

/*
 * Most sessions below use windows of 4096 bytes and a limit of 1 MiB, so
 * that a file of ten chunks is a few kilobytes.  Offsets, lengths and
 * chunk counts are written out as numbers, never computed with
 * lab3_rx_chunk, so that a wrong rule cannot agree with itself.
 */
#define RX_WINDOW 4096
#define RX_MAX 1048576
#define RX_LOG_MAX 16		/* REGIONs one logged session may offer */

/* The ten chunks of a 37864-byte file in 4096-byte windows: nine full,
 * the last one 1000 bytes (37864 = 9 * 4096 + 1000). */
#define RX_TEN_LENGTH 37864
static const uint64_t rx_ten_offset[10] = {
	0, 4096, 8192, 12288, 16384, 20480, 24576, 28672, 32768, 36864
};
static const uint64_t rx_ten_length[10] = {
	4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 1000
};

/* rx_phase_name: PHASE as its name, for failure messages. */
static const char *rx_phase_name(enum lab3_rx_phase phase)
{
	switch (phase) {
	case LAB3_RX_FILE_INFO:	return "FILE_INFO";
	case LAB3_RX_CHUNKS:	return "CHUNKS";
	case LAB3_RX_VERDICT:	return "VERDICT";
	case LAB3_RX_ID:	return "ID";
	case LAB3_RX_HANG_UP:	return "HANG_UP";
	case LAB3_RX_ENDED:	return "ENDED";
	}
	return "unknown";
}

/* rx_file_info: MSG becomes the sender's FILE_INFO for LENGTH bytes. */
static void rx_file_info(struct lab3_msg *msg, uint64_t length)
{
	memset(msg, 0, sizeof(*msg));
	msg->type = LAB3_MSG_FILE_INFO;
	msg->file_info.length = length;
	snprintf(msg->file_info.name, sizeof(msg->file_info.name), "%s",
		 "notes.txt");
}

/* rx_done: MSG becomes the sender's DONE for BYTES at OFFSET. */
static void rx_done(struct lab3_msg *msg, uint64_t offset, uint64_t bytes)
{
	memset(msg, 0, sizeof(*msg));
	msg->type = LAB3_MSG_DONE;
	msg->done.offset = offset;
	msg->done.bytes = bytes;
}

/* rx_id: MSG becomes the sender's ID. */
static void rx_id(struct lab3_msg *msg)
{
	memset(msg, 0, sizeof(*msg));
	msg->type = LAB3_MSG_ID;
	snprintf(msg->id.id, sizeof(msg->id.id), "%s", "s1234567");
}

/* rx_error: MSG becomes the sender's ERROR, giving up with REASON. */
static void rx_error(struct lab3_msg *msg, const char *reason)
{
	memset(msg, 0, sizeof(*msg));
	msg->type = LAB3_MSG_ERROR;
	msg->error.code = LAB3_ERR_INTERNAL;
	snprintf(msg->error.reason, sizeof(msg->error.reason), "%s", reason);
}

/* rx_take: lab3_rx_accept must take MSG.  Returns 0, or -1 after
 * reporting case NAME as failed. */
static int rx_take(const char *name, struct lab3_rx *rx,
		   const struct lab3_msg *msg)
{
	char why[WHY_LEN] = "";
	int rc = lab3_rx_accept(rx, msg, why, sizeof(why));

	if (rc != 0) {
		fail(name, "%s refused with %d in phase %s: %s",
		     lab3_msg_type_name(msg->type), rc,
		     rx_phase_name(rx->phase), why);
		return -1;
	}
	return 0;
}

/* rx_phase_checked: RX must be in phase WANT; WHEN says after what.
 * Returns 0, or -1 after reporting case NAME as failed. */
static int rx_phase_checked(const char *name, const struct lab3_rx *rx,
			    enum lab3_rx_phase want, const char *when)
{
	if (rx->phase == want)
		return 0;
	fail(name, "phase %s %s, expected %s", rx_phase_name(rx->phase),
	     when, rx_phase_name(want));
	return -1;
}

/* rx_begin_file: a new session under MAX_BYTES, WINDOW_SIZE and WINDOWS
 * takes FILE_INFO for LENGTH bytes and cuts it into NCHUNKS chunks over
 * NWINDOWS windows.  Returns 0, or -1 after reporting case NAME. */
static int rx_begin_file(const char *name, struct lab3_rx *rx,
			 uint64_t max_bytes, uint64_t window_size,
			 uint32_t windows, uint64_t length, uint64_t nchunks,
			 uint32_t nwindows)
{
	struct lab3_msg msg;

	lab3_rx_begin(rx, max_bytes, window_size, windows);
	if (rx_phase_checked(name, rx, LAB3_RX_FILE_INFO, "at the start") != 0)
		return -1;
	rx_file_info(&msg, length);
	if (rx_take(name, rx, &msg) != 0 ||
	    rx_phase_checked(name, rx, LAB3_RX_CHUNKS, "after FILE_INFO") != 0)
		return -1;
	if (rx->length != length || rx->nchunks != nchunks ||
	    rx->nwindows != nwindows) {
		fail(name, "length %llu in %llu chunks over %u windows, "
		     "expected %llu in %llu over %u",
		     (unsigned long long)rx->length,
		     (unsigned long long)rx->nchunks, rx->nwindows,
		     (unsigned long long)length, (unsigned long long)nchunks,
		     nwindows);
		return -1;
	}
	return 0;
}

/* rx_offer_checked: lab3_rx_next_region must offer LENGTH bytes at
 * OFFSET.  Returns 0, or -1 after reporting case NAME as failed. */
static int rx_offer_checked(const char *name, struct lab3_rx *rx,
			    uint64_t offset, uint64_t length)
{
	uint64_t got_offset = 0x5a5a5a5a5a5a5a5aull;
	uint64_t got_length = 0x5a5a5a5a5a5a5a5aull;

	if (!lab3_rx_next_region(rx, &got_offset, &got_length)) {
		fail(name, "no REGION offered, expected %llu bytes at %llu",
		     (unsigned long long)length, (unsigned long long)offset);
		return -1;
	}
	if (got_offset != offset || got_length != length) {
		fail(name, "REGION of %llu bytes at %llu, expected %llu at "
		     "%llu", (unsigned long long)got_length,
		     (unsigned long long)got_offset,
		     (unsigned long long)length, (unsigned long long)offset);
		return -1;
	}
	return 0;
}

/* rx_no_offer_checked: lab3_rx_next_region must offer nothing now; WHEN
 * says after what.  Returns 0, or -1 after reporting case NAME. */
static int rx_no_offer_checked(const char *name, struct lab3_rx *rx,
			       const char *when)
{
	uint64_t offset, length;

	if (!lab3_rx_next_region(rx, &offset, &length))
		return 0;
	fail(name, "a REGION of %llu bytes at %llu offered %s",
	     (unsigned long long)length, (unsigned long long)offset, when);
	return -1;
}

/* rx_store_checked: the DONE for BYTES at OFFSET must be taken, and
 * storing its chunk must ask for the verdict exactly when LAST.  Returns
 * 0, or -1 after reporting case NAME as failed. */
static int rx_store_checked(const char *name, struct lab3_rx *rx,
			    uint64_t offset, uint64_t bytes, int last)
{
	struct lab3_msg msg;
	int rc;

	rx_done(&msg, offset, bytes);
	if (rx_take(name, rx, &msg) != 0)
		return -1;
	rc = lab3_rx_stored(rx);
	if (rc != last) {
		fail(name, "lab3_rx_stored returned %d for the chunk at %llu, "
		     "expected %d", rc, (unsigned long long)offset, last);
		return -1;
	}
	return 0;
}

/* rx_one_chunk: an honest session for a file of LENGTH bytes that fits
 * one window, up to its verdict: one REGION for the whole file, its
 * DONE, then nothing more to offer.  Returns 0, or -1 after reporting
 * case NAME as failed. */
static int rx_one_chunk(const char *name, struct lab3_rx *rx, uint64_t length)
{
	if (rx_begin_file(name, rx, RX_MAX, RX_WINDOW, 4, length, 1, 1) != 0 ||
	    rx_offer_checked(name, rx, 0, length) != 0 ||
	    rx_no_offer_checked(name, rx, "with the only chunk out") != 0 ||
	    rx_store_checked(name, rx, 0, length, 1) != 0 ||
	    rx_phase_checked(name, rx, LAB3_RX_VERDICT,
			     "after the only chunk was stored") != 0 ||
	    rx_no_offer_checked(name, rx, "after the last chunk") != 0)
		return -1;
	return 0;
}

/* rx_id_taken: after RX's verdict, a good one lets one ID in, which
 * leaves only the hang-up.  Returns 0, or -1 after reporting NAME. */
static int rx_id_taken(const char *name, struct lab3_rx *rx)
{
	struct lab3_msg msg;

	lab3_rx_decide(rx, LAB3_VERDICT_GOOD);
	if (rx_phase_checked(name, rx, LAB3_RX_ID,
			     "after a good verdict") != 0)
		return -1;
	rx_id(&msg);
	if (rx_take(name, rx, &msg) != 0 ||
	    rx_phase_checked(name, rx, LAB3_RX_HANG_UP, "after the ID") != 0)
		return -1;
	return 0;
}

/* rx_refused: lab3_rx_accept must refuse MSG with CODE, say why in WHY
 * (WHY_LEN bytes), and end the session: no REGION after it.  Returns 0,
 * or -1 after reporting case NAME as failed. */
static int rx_refused(const char *name, struct lab3_rx *rx,
		      const struct lab3_msg *msg, int code, char *why,
		      size_t why_len)
{
	int rc;

	why[0] = '\0';
	rc = lab3_rx_accept(rx, msg, why, why_len);
	if (rc != code) {
		fail(name, "lab3_rx_accept returned %d (%s), expected %d", rc,
		     why, code);
		return -1;
	}
	if (why[0] == '\0') {
		fail(name, "refused without a reason");
		return -1;
	}
	if (rx_phase_checked(name, rx, LAB3_RX_ENDED, "after it") != 0 ||
	    rx_no_offer_checked(name, rx, "after it") != 0)
		return -1;
	return 0;
}

/* rx_says: the reason WHY must contain WANT.  Returns 0, or -1 after
 * reporting case NAME as failed. */
static int rx_says(const char *name, const char *why, const char *want)
{
	if (strstr(why, want) != NULL)
		return 0;
	fail(name, "reason \"%s\" does not say \"%s\"", why, want);
	return -1;
}

/* expect_rx_refusal: case NAME: RX refuses MSG with CODE, for a reason
 * that contains WANT, and the session is over. */
static void expect_rx_refusal(const char *name, struct lab3_rx *rx,
			      const struct lab3_msg *msg, int code,
			      const char *want)
{
	char why[WHY_LEN];

	if (rx_refused(name, rx, msg, code, why, sizeof(why)) == 0 &&
	    rx_says(name, why, want) == 0)
		pass(name);
}

/* test_rx_one_window: a file that fits one window travels in one REGION
 * and one DONE; after a good verdict one ID is taken, and only one; an
 * empty file still gets its one (empty) REGION and DONE. */
static void test_rx_one_window(void)
{
	const char *name;
	struct lab3_rx rx;
	struct lab3_msg msg;

	name = "rx 3000-byte file in 4096-byte windows: one REGION, one "
	       "DONE, verdict";
	if (rx_one_chunk(name, &rx, 3000) == 0)
		pass(name);

	name = "rx good verdict, then the ID is taken: phase HANG_UP";
	if (rx_one_chunk(name, &rx, 3000) == 0 &&
	    rx_id_taken(name, &rx) == 0)
		pass(name);

	name = "rx refuses a second ID: protocol error after the session's "
	       "end";
	if (rx_one_chunk(name, &rx, 3000) == 0 &&
	    rx_id_taken(name, &rx) == 0) {
		rx_id(&msg);
		expect_rx_refusal(name, &rx, &msg, LAB3_ERR_PROTOCOL,
				  "ID after the session's end");
	}

	name = "rx empty file: one REGION of 0 bytes at 0, DONE(0, 0), "
	       "verdict";
	if (rx_one_chunk(name, &rx, 0) == 0)
		pass(name);
}

/* What a session of ten chunks in three windows offered, step by step. */
struct rx_log {
	uint64_t nchunks;
	uint32_t nwindows;
	uint64_t offset[RX_LOG_MAX];	/* REGIONs, in the order offered */
	uint64_t length[RX_LOG_MAX];
	unsigned regions;
	unsigned at_start;		/* REGIONs before the first DONE */
	unsigned after[RX_LOG_MAX];	/* new REGIONs after chunk k stored */
	uint64_t most_out;		/* offered - stored, at its highest */
	int verdict_after;		/* chunk whose storing asked for it */
	enum lab3_rx_phase phase;	/* at the end */
	char err[WHY_LEN];		/* why the session broke off, if so */
};

/* rx_log_offers: offer every REGION the rules allow now into LOG; returns
 * how many. */
static unsigned rx_log_offers(struct lab3_rx *rx, struct rx_log *log)
{
	unsigned n = 0;
	uint64_t offset, length;

	while (log->regions < RX_LOG_MAX &&
	       lab3_rx_next_region(rx, &offset, &length)) {
		log->offset[log->regions] = offset;
		log->length[log->regions] = length;
		log->regions++;
		n++;
		if (rx->offered - rx->stored > log->most_out)
			log->most_out = rx->offered - rx->stored;
	}
	return n;
}

/* rx_run_ten: play the 37864-byte file in three windows of 4096 bytes as
 * an honest sender would, each DONE naming the oldest REGION offered,
 * and log what the rules offered. */
static void rx_run_ten(struct rx_log *log)
{
	struct lab3_rx rx;
	struct lab3_msg msg;
	char why[WHY_LEN] = "";

	memset(log, 0, sizeof(*log));
	log->verdict_after = -1;
	lab3_rx_begin(&rx, RX_MAX, RX_WINDOW, 3);
	rx_file_info(&msg, RX_TEN_LENGTH);
	if (lab3_rx_accept(&rx, &msg, why, sizeof(why)) != 0) {
		snprintf(log->err, sizeof(log->err), "FILE_INFO refused: %s",
			 why);
		return;
	}
	log->nchunks = rx.nchunks;
	log->nwindows = rx.nwindows;
	log->at_start = rx_log_offers(&rx, log);
	for (unsigned k = 0; k < RX_LOG_MAX && rx.phase == LAB3_RX_CHUNKS;
	     k++) {
		if (k >= log->regions) {
			snprintf(log->err, sizeof(log->err), "no REGION out "
				 "for chunk %u, phase CHUNKS", k);
			return;
		}
		rx_done(&msg, log->offset[k], log->length[k]);
		if (lab3_rx_accept(&rx, &msg, why, sizeof(why)) != 0) {
			snprintf(log->err, sizeof(log->err), "DONE of chunk "
				 "%u refused: %s", k, why);
			return;
		}
		if (lab3_rx_stored(&rx) && log->verdict_after < 0)
			log->verdict_after = (int)k;
		log->after[k] = rx_log_offers(&rx, log);
	}
	log->phase = rx.phase;
}

/* test_rx_windows: ten chunks through three windows: three REGIONs at
 * the start, then one more for each chunk stored until all ten are out,
 * in file order, never more than three outstanding; and a file of fewer
 * chunks than windows uses only as many windows as it has chunks. */
static void test_rx_windows(void)
{
	const char *name;
	struct rx_log log;
	struct lab3_rx rx;
	unsigned k;

	rx_run_ten(&log);

	name = "rx 10 chunks in 3 windows: 3 REGIONs at the start";
	if (log.err[0] != '\0')
		fail(name, "%s", log.err);
	else if (log.nchunks != 10 || log.nwindows != 3)
		fail(name, "%llu chunks over %u windows, expected 10 over 3",
		     (unsigned long long)log.nchunks, log.nwindows);
	else if (log.at_start != 3)
		fail(name, "%u REGIONs offered at the start", log.at_start);
	else
		pass(name);

	name = "rx 10 chunks in 3 windows: 10 REGIONs in file order, the last "
	       "of 1000 bytes";
	for (k = 0; k < log.regions && k < 10; k++)
		if (log.offset[k] != rx_ten_offset[k] ||
		    log.length[k] != rx_ten_length[k])
			break;
	if (log.err[0] != '\0')
		fail(name, "%s", log.err);
	else if (k < log.regions && k < 10)
		fail(name, "REGION %u is %llu bytes at %llu, expected %llu at "
		     "%llu", k, (unsigned long long)log.length[k],
		     (unsigned long long)log.offset[k],
		     (unsigned long long)rx_ten_length[k],
		     (unsigned long long)rx_ten_offset[k]);
	else if (log.regions != 10)
		fail(name, "%u REGIONs offered in all", log.regions);
	else
		pass(name);

	name = "rx 10 chunks in 3 windows: one new REGION per chunk stored "
	       "while any is left";
	for (k = 0; k < 10; k++)
		if (log.after[k] != (k < 7 ? 1u : 0u))
			break;
	if (log.err[0] != '\0')
		fail(name, "%s", log.err);
	else if (k < 10)
		fail(name, "%u new REGIONs after chunk %u was stored, "
		     "expected %u", log.after[k], k, k < 7 ? 1u : 0u);
	else
		pass(name);

	name = "rx 10 chunks in 3 windows: never more than 3 outstanding";
	if (log.err[0] != '\0')
		fail(name, "%s", log.err);
	else if (log.most_out != 3)
		fail(name, "up to %llu REGIONs offered and not stored",
		     (unsigned long long)log.most_out);
	else
		pass(name);

	name = "rx 10 chunks in 3 windows: the verdict after the 10th chunk";
	if (log.err[0] != '\0')
		fail(name, "%s", log.err);
	else if (log.verdict_after != 9 || log.phase != LAB3_RX_VERDICT)
		fail(name, "lab3_rx_stored asked for it after chunk %d, phase "
		     "%s", log.verdict_after, rx_phase_name(log.phase));
	else
		pass(name);

	/* 5000 = 4096 + 904: two chunks, so two of the four windows. */
	name = "rx 2-chunk file with 4 windows uses 2";
	if (rx_begin_file(name, &rx, RX_MAX, RX_WINDOW, 4, 5000, 2, 2) == 0 &&
	    rx_offer_checked(name, &rx, 0, 4096) == 0 &&
	    rx_offer_checked(name, &rx, 4096, 904) == 0 &&
	    rx_no_offer_checked(name, &rx, "with both chunks out") == 0)
		pass(name);
}

/* rx_too_large: case NAME: a file of LENGTH bytes over the limit
 * MAX_BYTES is refused as too large, with both numbers in the reason, and
 * its length is kept for the record. */
static void rx_too_large(const char *name, uint64_t max_bytes,
			 uint64_t length, const char *length_text,
			 const char *max_text)
{
	struct lab3_rx rx;
	struct lab3_msg msg;
	char why[WHY_LEN];

	lab3_rx_begin(&rx, max_bytes, RX_WINDOW, 4);
	rx_file_info(&msg, length);
	if (rx_refused(name, &rx, &msg, LAB3_ERR_TOO_LARGE, why,
		       sizeof(why)) != 0 ||
	    rx_says(name, why, length_text) != 0 ||
	    rx_says(name, why, max_text) != 0)
		return;
	if (rx.length != length)
		fail(name, "rx.length %llu, expected %llu",
		     (unsigned long long)rx.length,
		     (unsigned long long)length);
	else
		pass(name);
}

/* rx_to_phase: bring RX, by an honest session of a 3000-byte file, to
 * PHASE; LAB3_RX_ENDED by a refused DONE before FILE_INFO.  Returns 0, or
 * -1 after reporting case NAME as failed. */
static int rx_to_phase(const char *name, struct lab3_rx *rx,
		       enum lab3_rx_phase phase)
{
	struct lab3_msg msg;
	char why[WHY_LEN];

	switch (phase) {
	case LAB3_RX_FILE_INFO:
		lab3_rx_begin(rx, RX_MAX, RX_WINDOW, 4);
		return 0;
	case LAB3_RX_CHUNKS:
		if (rx_begin_file(name, rx, RX_MAX, RX_WINDOW, 4, 3000, 1,
				  1) != 0)
			return -1;
		return rx_offer_checked(name, rx, 0, 3000);
	case LAB3_RX_VERDICT:
		return rx_one_chunk(name, rx, 3000);
	case LAB3_RX_ID:
		if (rx_one_chunk(name, rx, 3000) != 0)
			return -1;
		lab3_rx_decide(rx, LAB3_VERDICT_GOOD);
		return rx_phase_checked(name, rx, LAB3_RX_ID,
					"after a good verdict");
	case LAB3_RX_HANG_UP:
		if (rx_one_chunk(name, rx, 3000) != 0)
			return -1;
		return rx_id_taken(name, rx);
	case LAB3_RX_ENDED:
		lab3_rx_begin(rx, RX_MAX, RX_WINDOW, 4);
		rx_done(&msg, 0, 3000);
		return rx_refused(name, rx, &msg, LAB3_ERR_PROTOCOL, why,
				  sizeof(why));
	}
	fail(name, "no way to phase %d", (int)phase);
	return -1;
}

/* test_rx_refusals: what the rules refuse, each ending the session with a
 * reason and the error code the sender is sent; and an ERROR from the
 * sender, in any phase, ends it as given up. */
static void test_rx_refusals(void)
{
	static const enum lab3_rx_phase phases[] = {
		LAB3_RX_FILE_INFO, LAB3_RX_CHUNKS, LAB3_RX_VERDICT,
		LAB3_RX_ID, LAB3_RX_HANG_UP, LAB3_RX_ENDED,
	};
	char phase_name[NAME_LEN];
	const char *name;
	struct lab3_rx rx;
	struct lab3_msg msg;

	rx_too_large("rx refuses 1048577 bytes over a limit of 1048576: "
		     "too large", RX_MAX, 1048577, "1048577", "1048576");
	rx_too_large("rx refuses 2^64-1 bytes over a limit of 2^64-2: too "
		     "large", 0xfffffffffffffffeull, 0xffffffffffffffffull,
		     "18446744073709551615", "18446744073709551614");
	rx_too_large("rx refuses a 1-byte length sent in host byte order, "
		     "and says so", RX_MAX, 0x0100000000000000ull,
		     "72057594037927936", "byte-swapped: 1 (host byte order?)");

	name = "rx refuses 7 bytes under a --min-size of 8, and says so";
	lab3_rx_begin(&rx, RX_MAX, RX_WINDOW, 4);
	rx.min_bytes = 8;
	rx_file_info(&msg, 7);
	expect_rx_refusal(name, &rx, &msg, LAB3_ERR_TOO_LARGE,
			  "file of 7 bytes is under the receiver's minimum of "
			  "8 bytes");
	name = "rx takes 8 bytes with a --min-size of 8";
	lab3_rx_begin(&rx, RX_MAX, RX_WINDOW, 4);
	rx.min_bytes = 8;
	rx_file_info(&msg, 8);
	if (rx_take(name, &rx, &msg) == 0)
		pass(name);

	/* 1048576 = 256 * 4096. */
	name = "rx takes a file of exactly the limit, 1048576 bytes";
	if (rx_begin_file(name, &rx, RX_MAX, RX_WINDOW, 4, 1048576, 256,
			  4) == 0)
		pass(name);

	/* 12288 = 3 * 4096: three chunks, all offered at once. */
	name = "rx refuses a DONE at the wrong offset";
	if (rx_begin_file(name, &rx, RX_MAX, RX_WINDOW, 4, 12288, 3, 3) ==
	    0 && rx_offer_checked(name, &rx, 0, 4096) == 0 &&
	    rx_offer_checked(name, &rx, 4096, 4096) == 0) {
		rx_done(&msg, 4096, 4096);
		expect_rx_refusal(name, &rx, &msg, LAB3_ERR_PROTOCOL, "DONE");
	}

	name = "rx refuses a DONE with the wrong byte count";
	if (rx_begin_file(name, &rx, RX_MAX, RX_WINDOW, 4, 12288, 3, 3) ==
	    0 && rx_offer_checked(name, &rx, 0, 4096) == 0) {
		rx_done(&msg, 0, 4095);
		expect_rx_refusal(name, &rx, &msg, LAB3_ERR_PROTOCOL, "DONE");
	}

	name = "rx refuses DONE as the first message";
	lab3_rx_begin(&rx, RX_MAX, RX_WINDOW, 4);
	rx_done(&msg, 0, 0);
	expect_rx_refusal(name, &rx, &msg, LAB3_ERR_PROTOCOL,
			  "expected FILE_INFO, got DONE");

	name = "rx refuses an ID while chunks are outstanding";
	if (rx_to_phase(name, &rx, LAB3_RX_CHUNKS) == 0) {
		rx_id(&msg);
		expect_rx_refusal(name, &rx, &msg, LAB3_ERR_PROTOCOL,
				  "expected DONE, got ID");
	}

	name = "rx refuses an ID after a bad verdict: no key";
	if (rx_one_chunk(name, &rx, 3000) == 0) {
		lab3_rx_decide(&rx, LAB3_VERDICT_BAD);
		if (rx_phase_checked(name, &rx, LAB3_RX_HANG_UP,
				     "after a bad verdict") == 0) {
			rx_id(&msg);
			expect_rx_refusal(name, &rx, &msg, LAB3_ERR_NO_KEY,
					  "bad verdict");
		}
	}

	for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++) {
		snprintf(phase_name, sizeof(phase_name), "rx ERROR in phase "
			 "%s (the connection takes it first): refused as out "
			 "of place", rx_phase_name(phases[i]));
		if (rx_to_phase(phase_name, &rx, phases[i]) == 0) {
			rx_error(&msg, "gave up");
			expect_rx_refusal(phase_name, &rx, &msg,
					  LAB3_ERR_PROTOCOL, "ERROR");
		}
	}
}

/* expect_huge_last_chunk: a file of LENGTH bytes in the largest windows
 * has NCHUNKS chunks, the last one LAST_LENGTH bytes at LAST_OFFSET. */
static void expect_huge_last_chunk(const char *name, uint64_t length,
				   uint64_t nchunks, uint64_t last_offset,
				   uint64_t last_length)
{
	struct lab3_rx rx;
	uint64_t offset = 0, chunk_length = 0;

	if (rx_begin_file(name, &rx, UINT64_MAX, LAB3_WINDOW_BYTES_MAX, 8,
			  length, nchunks, 8) != 0)
		return;
	lab3_rx_chunk(&rx, nchunks - 1, &offset, &chunk_length);
	if (offset != last_offset || chunk_length != last_length)
		fail(name, "last chunk %llu bytes at 0x%llx",
		     (unsigned long long)chunk_length,
		     (unsigned long long)offset);
	else
		pass(name);
}

/* test_rx_huge: a file of nearly 2^64 bytes in the largest windows: the
 * chunk count and the last chunk come out right, with no overflow on the
 * way (a (length + window - 1) / window would wrap to 0). */
static void test_rx_huge(void)
{
	const char *name;
	struct lab3_rx rx;

	name = "rx LAB3_WINDOW_BYTES_MAX is 2^30, as the cases below assume";
	if (LAB3_WINDOW_BYTES_MAX != 1073741824)
		fail(name, "it is %llu",
		     (unsigned long long)LAB3_WINDOW_BYTES_MAX);
	else
		pass(name);

	/* 2^64 - 1 = (2^34 - 1) * 2^30 + (2^30 - 1): 2^34 - 1 full chunks
	 * and a last one of 2^30 - 1 bytes at 2^64 - 2^30. */
	expect_huge_last_chunk("rx 2^64-1 bytes in 2^30-byte windows: 2^34 "
			       "chunks, the last 2^30-1 bytes",
			       0xffffffffffffffffull, 17179869184ull,
			       0xffffffffc0000000ull, 1073741823);

	/* 2^64 - 2^30 = (2^34 - 1) * 2^30: all chunks full, the last at
	 * (2^34 - 2) * 2^30 = 2^64 - 2^31. */
	expect_huge_last_chunk("rx 2^64-2^30 bytes in 2^30-byte windows: "
			       "2^34-1 chunks, all full",
			       0xffffffffc0000000ull, 17179869183ull,
			       0xffffffff80000000ull, 1073741824);

	/* Skip the first 2^34 - 1 chunks by setting the counters as an
	 * honest session leaves them: all offered, done and stored. */
	name = "rx 2^64-1 bytes: the last REGION, its DONE, then the verdict";
	if (rx_begin_file(name, &rx, UINT64_MAX, LAB3_WINDOW_BYTES_MAX, 8,
			  0xffffffffffffffffull, 17179869184ull, 8) == 0) {
		rx.offered = rx.finished = rx.stored = 17179869183ull;
		if (rx_offer_checked(name, &rx, 0xffffffffc0000000ull,
				     1073741823) == 0 &&
		    rx_no_offer_checked(name, &rx, "after the last") == 0 &&
		    rx_store_checked(name, &rx, 0xffffffffc0000000ull,
				     1073741823, 1) == 0 &&
		    rx_phase_checked(name, &rx, LAB3_RX_VERDICT,
				     "after the last chunk") == 0)
			pass(name);
	}
}

/* test_rx: case group 9, the receiver's rules (rules.h) on their own,
 * played as receiver.c plays them: offer the REGIONs the rules allow,
 * store each chunk after its DONE, decide when all are stored. */
static void test_rx(void)
{
	test_rx_one_window();
	test_rx_windows();
	test_rx_refusals();
	test_rx_huge();
}

/* ---- 10. JSON strings and the grading ledger ---- */

/* expect_json: lab3_json_string of S must be exactly WANT, and return its
 * length. */
static void expect_json(const char *name, const char *s, const char *want)
{
	char out[128];
	size_t len;

	memset(out, 'X', sizeof(out));
	len = lab3_json_string(s, out, sizeof(out));
	if (strcmp(out, want) != 0)
		fail(name, "got '%s', expected '%s'", out, want);
	else if (len != strlen(want))
		fail(name, "returned %zu, expected %zu", len, strlen(want));
	else
		pass(name);
}

/* test_json_string: case group 10a.  Quotes and backslashes are escaped,
 * every other byte outside printable ASCII is \u00XX, NULL is null; a
 * buffer too small gets a terminated prefix and the length it needed. */
static void test_json_string(void)
{
	const char *name = "json_string too small a buffer: prefix, full length";
	char out[8];
	size_t len;

	expect_json("json_string plain text", "report.pdf", "\"report.pdf\"");
	expect_json("json_string empty", "", "\"\"");
	expect_json("json_string NULL is null", NULL, "null");
	expect_json("json_string escapes quote and backslash", "a\"b\\c",
		    "\"a\\\"b\\\\c\"");
	expect_json("json_string escapes control characters",
		    "\t\n\x01\x1f\x7f",
		    "\"\\u0009\\u000a\\u0001\\u001f\\u007f\"");
	expect_json("json_string keeps UTF-8, replaces what is not",
		    "caf\xc3\xa9 \xff \xc3", "\"caf\xc3\xa9 \\ufffd \\ufffd\"");
	expect_json("json_string keeps the rest of printable ASCII",
		    " !#/:{}~'", "\" !#/:{}~'\"");

	memset(out, 'X', sizeof(out));
	len = lab3_json_string("abc\"def", out, 4);
	if (len != 10)
		fail(name, "returned %zu, expected 10", len);
	else if (memcmp(out, "\"ab\0X", 5) != 0)
		fail(name, "wrote '%.4s'", out);
	else
		pass(name);
	name = "json_string with no buffer still counts";
	len = lab3_json_string("a\x01", NULL, 0);
	if (len != 9)
		fail(name, "returned %zu, expected 9", len);
	else
		pass(name);
}

/* 2026-11-22T20:31:05Z, and the SHA-256 of "abc". */
#define LEDGER_TIME ((time_t)1795379465)
#define LEDGER_TIME_TEXT "2026-11-22T20:31:05Z"

/* A good session, as the receiver records it just before its key. */
static const char ledger_good_line[] =
	"{\"time\":\"" LEDGER_TIME_TEXT "\",\"peer\":\"198.18.0.2:49152\","
	"\"id\":\"student42\",\"file\":\"report.pdf\",\"bytes\":4194304,"
	"\"sha256\":\"" SHA256_ABC "\",\"verdict\":\"good\","
	"\"key_sent\":true,\"error\":null,"
	"\"saved_as\":\"student42/report.pdf\"}";

/* ledger_good_record: the record ledger_good_line holds. */
static struct lab3_ledger_record ledger_good_record(uint8_t *sha256)
{
	struct lab3_ledger_record rec = {
		.time = LEDGER_TIME,
		.peer = "198.18.0.2:49152",
		.id = "student42",
		.has_file_info = 1,
		.file = "report.pdf",
		.bytes = 4194304,
		.sha256 = sha256,
		.verdict = LAB3_VERDICT_GOOD,
		.key_sent = 1,
		.error = "",
		.saved_as = "student42/report.pdf",
	};

	from_hex(SHA256_ABC, sha256);
	return rec;
}

/* expect_format: lab3_ledger_format of REC must be exactly WANT. */
static void expect_format(const char *name,
			  const struct lab3_ledger_record *rec,
			  const char *want)
{
	char line[LAB3_LEDGER_LINE_MAX];
	int len = lab3_ledger_format(rec, line, sizeof(line));

	if (len < 0)
		fail(name, "lab3_ledger_format returned %d", len);
	else if (strcmp(line, want) != 0)
		fail(name, "got\n    %s\n  expected\n    %s", line, want);
	else if ((size_t)len != strlen(want))
		fail(name, "returned %d for %zu bytes", len, strlen(want));
	else
		pass(name);
}

/* test_ledger_format: case group 10b, every field in its place, the
 * empty ones null, peer-controlled text escaped. */
static void test_ledger_format(void)
{
	uint8_t sha256[LAB3_SHA256_LEN];
	struct lab3_ledger_record rec = ledger_good_record(sha256);
	struct lab3_ledger_record early = {
		.time = LEDGER_TIME,
		.peer = "198.18.0.2:49153",
		.id = "",
		.has_file_info = 0,
		.file = "ignored.txt",
		.bytes = 12,
		.sha256 = sha256,
		.verdict = -1,
		.error = "the sender gave up: no",
	};
	const char *name = "ledger_format refuses a buffer too small";
	char line[64];

	expect_format("ledger_format of a good session", &rec,
		      ledger_good_line);
	expect_format("ledger_format before FILE_INFO: nulls", &early,
		      "{\"time\":\"" LEDGER_TIME_TEXT "\","
		      "\"peer\":\"198.18.0.2:49153\",\"id\":null,"
		      "\"file\":null,\"bytes\":null,\"sha256\":null,"
		      "\"verdict\":null,\"key_sent\":false,"
		      "\"error\":\"the sender gave up: no\",\"saved_as\":null}");

	rec.id = "a\"b\\c";
	rec.file = NULL;
	rec.bytes = 0;
	rec.verdict = LAB3_VERDICT_BAD;
	rec.key_sent = 0;
	rec.error = "cannot save /data/\x01\xe9";
	rec.saved_as = "";
	expect_format("ledger_format escapes ID and error, bad verdict",
		      &rec,
		      "{\"time\":\"" LEDGER_TIME_TEXT "\","
		      "\"peer\":\"198.18.0.2:49152\",\"id\":\"a\\\"b\\\\c\","
		      "\"file\":null,\"bytes\":0,"
		      "\"sha256\":\"" SHA256_ABC "\",\"verdict\":\"bad\","
		      "\"key_sent\":false,"
		      "\"error\":\"cannot save /data/\\u0001\\ufffd\","
		      "\"saved_as\":null}");

	if (lab3_ledger_format(&rec, line, sizeof(line)) != -1)
		fail(name, "it did not return -1");
	else
		pass(name);
}

/* expect_parse: lab3_ledger_parse must read LINE as a record with ID
 * (or "" for none), TIME, VERDICT and KEY_SENT. */
static void expect_parse(const char *name, const char *line, const char *id,
			 const char *time_text, int verdict, int key_sent)
{
	struct lab3_ledger_entry e;

	if (lab3_ledger_parse(line, strlen(line), &e) != 0)
		fail(name, "refused %s", line);
	else if (strcmp(e.id, id) != 0 || strcmp(e.time, time_text) != 0)
		fail(name, "id '%s' time '%s', expected '%s' '%s'", e.id,
		     e.time, id, time_text);
	else if (e.verdict != verdict || e.key_sent != key_sent)
		fail(name, "verdict %d key_sent %d, expected %d %d",
		     e.verdict, e.key_sent, verdict, key_sent);
	else
		pass(name);
}

/* expect_unreadable: lab3_ledger_parse must refuse the LEN bytes at
 * LINE. */
static void expect_unreadable(const char *name, const char *line,
			      size_t len)
{
	struct lab3_ledger_entry e;

	if (lab3_ledger_parse(line, len, &e) == 0)
		fail(name, "read '%.*s' as a record", (int)len, line);
	else
		pass(name);
}

/* ledger_patched: ledger_good_line with its first OLD replaced by NEW,
 * into OUT of LAB3_LEDGER_LINE_MAX bytes. */
static const char *ledger_patched(char *out, const char *old,
				  const char *new)
{
	const char *at = strstr(ledger_good_line, old);

	snprintf(out, LAB3_LEDGER_LINE_MAX, "%.*s%s%s",
		 (int)(at - ledger_good_line), ledger_good_line, new,
		 at + strlen(old));
	return out;
}

/* test_ledger_parse: case group 10c.  What the writer writes reads back;
 * a record cut short anywhere, another form of JSON, a field out of range
 * or contradicting another, and garbage are refused. */
static void test_ledger_parse(void)
{
	static const struct {
		const char *what, *old, *new;
	} patches[] = {
		{ "a space after a colon", "\"peer\":", "\"peer\": " },
		{ "fields in another order", "\"time\":\"" LEDGER_TIME_TEXT
		  "\",\"peer\":\"198.18.0.2:49152\"", "\"peer\":\"198.18.0.2:"
		  "49152\",\"time\":\"" LEDGER_TIME_TEXT "\"" },
		{ "an extra field", "pdf\"}", "pdf\",\"key\":\"00\"}" },
		{ "text after the object", "pdf\"}", "pdf\"} " },
		{ "saved_as before error", ",\"error\":null,\"saved_as\":"
		  "\"student42/report.pdf\"", ",\"saved_as\":\"student42/"
		  "report.pdf\",\"error\":null" },
		{ "saved_as as a number", "\"student42/report.pdf\"", "7" },
		{ "a time without seconds", ":05Z", "Z" },
		{ "a time that is a date", LEDGER_TIME_TEXT, "2026-11-22" },
		{ "an empty peer", "\"198.18.0.2:49152\"", "\"\"" },
		{ "an empty ID", "\"student42\"", "\"\"" },
		{ "an ID of 64 characters", "\"student42\"",
		  "\"0123456789012345678901234567890123456789"
		  "012345678901234567890123\"" },
		{ "an ID with an escaped tab", "student42", "student\\u0009" },
		{ "a raw tab in a string", "student42", "student\t2" },
		{ "an escaped NUL", "student42", "stu\\u0000dent" },
		{ "an escape the writer never writes", "student42",
		  "student\\n" },
		{ "a file name with a slash", "report.pdf", "a/report.pdf" },
		{ "a file name starting with a dot", "report.pdf", ".report" },
		{ "bytes with a leading zero", "4194304", "04194304" },
		{ "bytes over 2^64 - 1", "4194304", "18446744073709551616" },
		{ "negative bytes", "4194304", "-1" },
		{ "bytes as a string", "4194304", "\"4194304\"" },
		{ "bytes null with a hash", "4194304", "null" },
		{ "a hash of 63 digits", SHA256_ABC, SHA256_ABC + 1 },
		{ "a hash with a non-hex digit", "ba7816bf", "ba7816bg" },
		{ "a verdict neither good nor bad", "\"good\"", "\"fine\"" },
		{ "a verdict in capitals", "\"good\"", "\"GOOD\"" },
		{ "key_sent as a string", "true", "\"true\"" },
		{ "a key sent after a bad verdict", "\"good\"", "\"bad\"" },
		{ "a key sent without an ID", "\"student42\"", "null" },
		{ "error as a number", "\"error\":null", "\"error\":0" },
	};
	char line[LAB3_LEDGER_LINE_MAX], name[NAME_LEN];
	size_t len = strlen(ledger_good_line);
	size_t cut;

	expect_parse("ledger_parse reads a good session", ledger_good_line,
		     "student42", LEDGER_TIME_TEXT, LAB3_VERDICT_GOOD, 1);
	expect_parse("ledger_parse reads an older record, no saved_as",
		     ledger_patched(line, ",\"saved_as\":\"student42/"
				    "report.pdf\"", ""),
		     "student42", LEDGER_TIME_TEXT, LAB3_VERDICT_GOOD, 1);
	expect_parse("ledger_parse reads nulls",
		     "{\"time\":\"2026-01-02T03:04:05Z\",\"peer\":\"[::1]:7\","
		     "\"id\":null,\"file\":null,\"bytes\":null,"
		     "\"sha256\":null,\"verdict\":null,\"key_sent\":false,"
		     "\"error\":\"the sender gave up: \\\"x\\\\\\u00e9\"}",
		     "", "2026-01-02T03:04:05Z", -1, 0);
	expect_parse("ledger_parse reads UTF-8 and \\ufffd in an error",
		     "{\"time\":\"2026-01-02T03:04:05Z\",\"peer\":\"[::1]:7\","
		     "\"id\":null,\"file\":null,\"bytes\":null,"
		     "\"sha256\":null,\"verdict\":null,\"key_sent\":false,"
		     "\"error\":\"cannot save /caf\xc3\xa9/\\ufffd\"}",
		     "", "2026-01-02T03:04:05Z", -1, 0);
	expect_parse("ledger_parse decodes an escaped ID",
		     ledger_patched(line, "\"student42\"", "\"a\\\"b\\\\c\""),
		     "a\"b\\c", LEDGER_TIME_TEXT, LAB3_VERDICT_GOOD, 1);
	expect_parse("ledger_parse reads a bad verdict, no name",
		     ledger_patched(line, "\"report.pdf\",\"bytes\":4194304,"
				    "\"sha256\":\"" SHA256_ABC "\","
				    "\"verdict\":\"good\",\"key_sent\":true",
				    "null,\"bytes\":18446744073709551615,"
				    "\"sha256\":\"" SHA256_ABC "\","
				    "\"verdict\":\"bad\",\"key_sent\":false"),
		     "student42", LEDGER_TIME_TEXT, LAB3_VERDICT_BAD, 0);

	/* A crash can cut the last record anywhere. */
	for (cut = 0; cut < len; cut++) {
		struct lab3_ledger_entry e;

		if (lab3_ledger_parse(ledger_good_line, cut, &e) == 0)
			break;
	}
	if (cut < len)
		fail("ledger_parse refuses every cut-short record",
		     "read the first %zu of %zu bytes as a record", cut, len);
	else
		pass("ledger_parse refuses every cut-short record");

	for (size_t i = 0; i < sizeof(patches) / sizeof(patches[0]); i++) {
		snprintf(name, sizeof(name), "ledger_parse refuses %s",
			 patches[i].what);
		ledger_patched(line, patches[i].old, patches[i].new);
		expect_unreadable(name, line, strlen(line));
	}
	expect_unreadable("ledger_parse refuses an empty line", "", 0);
	expect_unreadable("ledger_parse refuses garbage", "hello world", 11);
	expect_unreadable("ledger_parse refuses {}", "{}", 2);
	memcpy(line, ledger_good_line, len);
	line[30] = '\0';
	expect_unreadable("ledger_parse refuses a NUL inside", line, len);
}

/* expect_summary_id: the summary's entry I must be ID, its first success
 * FIRST ("" for never) and ATTEMPTS. */
static int expect_summary_id(const char *name,
			     const struct lab3_ledger_summary *sum, size_t i,
			     const char *id, const char *first,
			     unsigned long attempts)
{
	const struct lab3_ledger_id *got = &sum->ids[i];

	if (i >= sum->nids) {
		fail(name, "only %zu IDs", sum->nids);
		return -1;
	}
	if (strcmp(got->id, id) != 0 ||
	    strcmp(got->first_success, first) != 0 ||
	    got->attempts != attempts) {
		fail(name, "ID %zu is '%s' '%s' %lu, expected '%s' '%s' %lu",
		     i, got->id, got->first_success, got->attempts, id, first,
		     attempts);
		return -1;
	}
	return 0;
}

/* summarize_text: lab3_ledger_summarize over the LEN bytes at TEXT, as a
 * file.  Returns 0, or -1 with case NAME failed. */
static int summarize_text(const char *name, const char *text, size_t len,
			  struct lab3_ledger_summary *sum)
{
	FILE *in = fmemopen((void *)text, len, "r");
	int rc;

	if (in == NULL) {
		fail(name, "fmemopen: %s", strerror(errno));
		return -1;
	}
	rc = lab3_ledger_summarize(in, sum);
	fclose(in);
	if (rc != 0) {
		fail(name, "lab3_ledger_summarize returned %d", rc);
		lab3_ledger_summary_free(sum);
		return -1;
	}
	return 0;
}

/* expect_counts: the summary's totals must be RECORDS, WITHOUT_ID and
 * UNREADABLE. */
static int expect_counts(const char *name,
			 const struct lab3_ledger_summary *sum,
			 unsigned long records, unsigned long without_id,
			 unsigned long unreadable)
{
	if (sum->records != records || sum->without_id != without_id ||
	    sum->unreadable != unreadable) {
		fail(name, "%lu records, %lu without ID, %lu unreadable; "
		     "expected %lu, %lu, %lu", sum->records, sum->without_id,
		     sum->unreadable, records, without_id, unreadable);
		return -1;
	}
	return 0;
}

/* A record of ID (JSON, or null) at second SS of 20:31, with VERDICT
 * (JSON) and KEY (true or false). */
#define REC(id, ss, verdict, key) \
	"{\"time\":\"2026-11-22T20:31:" ss "Z\",\"peer\":\"198.18.0.2:1\"," \
	"\"id\":" id ",\"file\":\"f\",\"bytes\":1,\"sha256\":\"" \
	SHA256_ABC "\",\"verdict\":" verdict ",\"key_sent\":" key \
	",\"error\":null}"

/* test_ledger_summary: case group 10d, a class's ledger: retries, IDs
 * that never succeed, sessions without an ID, garbage, a record cut short
 * in the middle (as after a crash: the receiver's next record starts on a
 * new line) and at the end, a line longer than any record. */
static void test_ledger_summary(void)
{
	static const char ledger[] =
		REC("\"carol\"", "01", "null", "false") "\n"
		REC("\"bob\"", "02", "\"good\"", "false") "\n"
		REC("null", "03", "\"bad\"", "false") "\n"
		"not a record\n"
		REC("\"bob\"", "04", "\"good\"", "true") "\n"
		"{\"time\":\"2026-11-22T20:31:05Z\",\"peer\":\"198.1\n"
		REC("\"alice\"", "06", "\"good\"", "true") "\n"
		"\n"
		REC("\"bob\"", "07", "\"good\"", "true") "\n"
		REC("\"alice\"", "00", "\"good\"", "true") "\n"
		REC("\"a\\\"b\"", "09", "\"good\"", "true") "\n"
		REC("null", "10", "null", "false") "\n"
		"{\"time\":\"2026-11-22T20:31:11Z\",\"peer\":\"198.18.0.2:1\","
		"\"id\":\"dave\",\"file\":\"f\",\"bytes\":1,\"sha";
	const char *name = "ledger_summary of a class's ledger";
	struct lab3_ledger_summary sum;
	char *big;
	size_t big_len = 2 * LAB3_LEDGER_LINE_MAX;

	if (summarize_text(name, ledger, sizeof(ledger) - 1, &sum) != 0)
		return;
	if (expect_counts(name, &sum, 9, 2, 4) == 0 && sum.nids != 4)
		fail(name, "%zu IDs, expected 4", sum.nids);
	else if (sum.nids == 4 &&
		 expect_summary_id(name, &sum, 0, "a\"b",
				   "2026-11-22T20:31:09Z", 1) == 0 &&
		 expect_summary_id(name, &sum, 1, "alice",
				   "2026-11-22T20:31:00Z", 2) == 0 &&
		 expect_summary_id(name, &sum, 2, "bob",
				   "2026-11-22T20:31:04Z", 3) == 0 &&
		 expect_summary_id(name, &sum, 3, "carol", "", 1) == 0)
		pass(name);
	lab3_ledger_summary_free(&sum);

	name = "ledger_summary of an empty ledger";
	if (summarize_text(name, "", 0, &sum) == 0) {
		if (expect_counts(name, &sum, 0, 0, 0) == 0 && sum.nids == 0)
			pass(name);
		lab3_ledger_summary_free(&sum);
	}

	name = "ledger_summary skips a line longer than any record";
	big = malloc(big_len + sizeof(ledger_good_line) + 1);
	if (big == NULL) {
		fail(name, "out of memory");
		return;
	}
	memset(big, '{', big_len);
	big[big_len] = '\n';
	memcpy(big + big_len + 1, ledger_good_line, sizeof(ledger_good_line));
	if (summarize_text(name, big, big_len + sizeof(ledger_good_line),
			   &sum) == 0) {
		if (expect_counts(name, &sum, 1, 0, 1) == 0 &&
		    expect_summary_id(name, &sum, 0, "student42",
				      LEDGER_TIME_TEXT, 1) == 0)
			pass(name);
		lab3_ledger_summary_free(&sum);
	}
	free(big);
}

/* A record of ID (JSON) from the sender at PEER (JSON text, unquoted)
 * at second SS of 20:31, with a good verdict and KEY (true or false). */
#define REC_AT(peer, id, ss, key) \
	"{\"time\":\"2026-11-22T20:31:" ss "Z\",\"peer\":\"" peer "\"," \
	"\"id\":" id ",\"file\":\"f\",\"bytes\":1,\"sha256\":\"" \
	SHA256_ABC "\",\"verdict\":\"good\",\"key_sent\":" key \
	",\"error\":null}\n"

/* expect_flags: case NAME: the ledger TEXT summed up, its flags
 * (lab3_ledger_write_flags()) must be exactly WANT, LINES lines. */
static void expect_flags(const char *name, const char *text,
			 const char *want, int lines)
{
	struct lab3_ledger_summary sum;
	char *got = NULL;
	size_t got_len = 0;
	FILE *out;
	int n;

	if (summarize_text(name, text, strlen(text), &sum) != 0)
		return;
	out = open_memstream(&got, &got_len);
	if (out == NULL) {
		fail(name, "open_memstream: %s", strerror(errno));
		lab3_ledger_summary_free(&sum);
		return;
	}
	n = lab3_ledger_write_flags(&sum, out);
	fclose(out);
	lab3_ledger_summary_free(&sum);
	if (n != lines || strcmp(got, want) != 0)
		fail(name, "%d lines '%s', expected %d lines '%s'", n, got,
		     lines, want);
	else
		pass(name);
	free(got);
}

/* test_ledger_flags: case group 10e, --ledger-summary's flags: an
 * address that got keys for several IDs, an ID that got keys at several
 * addresses (IPv4 or IPv6, whatever the port, or none as a ledger
 * written by hand may have it: bob and carol then share 198.18.0.4 too),
 * and none for a class
 * where each student keyed from a machine of their own (retries and
 * failures from elsewhere do not count: only keys).  What a peer
 * controls stays as today: an ID with a tab, a line end or a terminal
 * escape makes its record unreadable, a " or \ in an ID is escaped, and
 * a peer that is not an address takes no part. */
static void test_ledger_flags(void)
{
	expect_flags("ledger flags: one address, keys for two IDs",
		     REC_AT("198.18.0.2:40001", "\"alice\"", "01", "true")
		     REC_AT("198.18.0.2:40002", "\"bob\"", "02", "true")
		     REC_AT("198.18.0.2:40003", "\"alice\"", "03", "true"),
		     "flag: address 198.18.0.2 got keys for 2 IDs: \"alice\" "
		     "\"bob\"\n", 1);
	expect_flags("ledger flags: an ID keyed at two addresses",
		     REC_AT("198.18.0.3:1", "\"alice\"", "01", "true")
		     REC_AT("[fd00:198:18::2]:2", "\"alice\"", "02", "true")
		     REC_AT("198.18.0.4:1", "\"bob\"", "03", "true")
		     REC_AT("198.18.0.4", "\"carol\"", "04", "true")
		     REC_AT("fd00::5", "\"carol\"", "05", "true"),
		     "flag: address 198.18.0.4 got keys for 2 IDs: \"bob\" "
		     "\"carol\"\n"
		     "flag: ID \"alice\" got keys at 2 addresses: 198.18.0.3 "
		     "fd00:198:18::2\n"
		     "flag: ID \"carol\" got keys at 2 addresses: 198.18.0.4 "
		     "fd00::5\n", 3);
	expect_flags("ledger flags: none for a class of one machine each",
		     REC_AT("198.18.0.2:1", "\"alice\"", "01", "true")
		     REC_AT("198.18.0.2:2", "\"alice\"", "02", "true")
		     REC_AT("198.18.0.3:1", "\"bob\"", "03", "true")
		     REC_AT("198.18.0.2:3", "\"bob\"", "04", "false")
		     REC_AT("198.18.0.4:1", "\"carol\"", "05", "false")
		     REC_AT("198.18.0.5:1", "\"carol\"", "06", "true"),
		     "", 0);
	expect_flags("ledger flags: hostile IDs and peers stay escaped",
		     REC_AT("198.18.0.2:1", "\"a\\\"b\\\\c d\"", "01", "true")
		     REC_AT("198.18.0.2:2", "\"tab\\u0009x\"", "02", "true")
		     REC_AT("198.18.0.2:3", "\"nl\\u000ax\"", "03", "true")
		     REC_AT("198.18.0.2:4", "\"esc\\u001b[31mx\"", "04", "true")
		     REC_AT("198.18.0.2:5", "\"zed\"", "05", "true")
		     REC_AT("198.18.0.2\\u001b[31m:6", "\"a\\\"b\\\\c d\"",
			    "06", "true")
		     REC_AT("198.18.0.2\\u001b[31m:7", "\"zed\"", "07", "true")
		     REC_AT("\\u001b]0;x\\u0007:8", "\"zed\"", "08", "true")
		     REC_AT("\\u001b]0;x\\u0007:9", "\"a\\\"b\\\\c d\"",
			    "09", "true"),
		     "flag: address 198.18.0.2 got keys for 2 IDs: "
		     "\"a\\\"b\\\\c d\" \"zed\"\n", 1);
}

/* read_text: the first LEN - 1 bytes at most of the file PATH, as a
 * string in OUT; -1 if it cannot be read. */
static int read_text(const char *path, char *out, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, out, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	out[n] = '\0';
	return 0;
}

/* test_ledger_file: case group 10e, the ledger file itself: created 0600,
 * each record appended on a line of its own, and after a record cut short
 * (no newline at the end), the next one on a new line.  A path that
 * cannot be a ledger is refused with a message. */
static void test_ledger_file(void)
{
	char dir[] = "/tmp/lab3-unit.XXXXXX", path[PATH_LEN];
	char want[3 * LAB3_LEDGER_LINE_MAX], got[3 * LAB3_LEDGER_LINE_MAX];
	char err[LAB3_ERR_LEN] = "";
	uint8_t sha256[LAB3_SHA256_LEN];
	struct lab3_ledger_record rec = ledger_good_record(sha256);
	const char *name = "ledger_open creates the ledger with mode 0600";
	struct stat st;
	int fd;

	if (mkdtemp(dir) == NULL) {
		fail(name, "mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "%s/ledger", dir);
	fd = lab3_ledger_open(path, err, sizeof(err));
	if (fd < 0) {
		fail(name, "lab3_ledger_open returned %d: %s", fd, err);
		rmdir(dir);
		return;
	}
	if (fstat(fd, &st) != 0 || (st.st_mode & 0777) != 0600 ||
	    st.st_size != 0)
		fail(name, "mode %04o, %lld bytes",
		     (unsigned)(st.st_mode & 0777), (long long)st.st_size);
	else
		pass(name);

	name = "ledger_append writes one line per record";
	snprintf(want, sizeof(want), "%s\n%s\n", ledger_good_line,
		 ledger_good_line);
	if (lab3_ledger_append(fd, &rec) != 0 ||
	    lab3_ledger_append(fd, &rec) != 0)
		fail(name, "lab3_ledger_append failed");
	else if (read_text(path, got, sizeof(got)) != 0 ||
		 strcmp(got, want) != 0)
		fail(name, "the ledger holds '%s'", got);
	else
		pass(name);
	close(fd);

	name = "ledger_append after a cut-short record starts a new line";
	if (write_file(path, "{\"time\":\"2026", 13) != 0 ||
	    (fd = lab3_ledger_open(path, err, sizeof(err))) < 0) {
		fail(name, "cannot make a cut-short ledger: %s", err);
	} else {
		snprintf(want, sizeof(want), "{\"time\":\"2026\n%s\n",
			 ledger_good_line);
		if (lab3_ledger_append(fd, &rec) != 0)
			fail(name, "lab3_ledger_append failed");
		else if (read_text(path, got, sizeof(got)) != 0 ||
			 strcmp(got, want) != 0)
			fail(name, "the ledger holds '%s'", got);
		else
			pass(name);
		close(fd);
	}
	unlink(path);

	name = "ledger_open refuses a directory";
	fd = lab3_ledger_open(dir, err, sizeof(err));
	if (fd >= 0 || strstr(err, dir) == NULL)
		fail(name, "returned %d, message '%s'", fd, err);
	else
		pass(name);
	name = "ledger_open refuses a path in a missing directory";
	snprintf(path, sizeof(path), "%s/missing/ledger", dir);
	fd = lab3_ledger_open(path, err, sizeof(err));
	if (fd != -ENOENT || strstr(err, "No such file") == NULL)
		fail(name, "returned %d, message '%s'", fd, err);
	else
		pass(name);
	if (rmdir(dir) != 0)
		fail("ledger tests leave nothing behind", "rmdir %s: %s", dir,
		     strerror(errno));
}

/* test_ledger: case group 10, the receiver's -l and --ledger-summary
 * without the receiver. */
static void test_ledger(void)
{
	test_json_string();
	test_ledger_format();
	test_ledger_parse();
	test_ledger_summary();
	test_ledger_flags();
	test_ledger_file();
}

/* ---- 11. The roster (receiver -r) ---- */

/* expect_roster_refused: NAME: the roster file holding TEXT is refused,
 * with a message that holds WANT, and leaves the roster empty. */
static void expect_roster_refused(const char *name, const char *path,
				  const char *text, const char *want)
{
	struct lab3_roster roster = { 0 };
	char err[LAB3_ERR_LEN] = "";

	if (text != NULL && write_file(path, text, strlen(text)) != 0) {
		fail(name, "cannot write %s", path);
		return;
	}
	if (lab3_roster_load(path, &roster, err, sizeof(err)) == 0)
		fail(name, "loaded, %zu IDs", roster.n);
	else if (strstr(err, want) == NULL || strstr(err, path) == NULL)
		fail(name, "message '%s', expected it to name %s and hold '%s'",
		     err, path, want);
	else if (roster.n != 0 || roster.ids != NULL)
		fail(name, "left %zu IDs behind", roster.n);
	else
		pass(name);
	lab3_roster_free(&roster);
}

/* test_roster: case group 11: comments, blank lines, spaces and tabs
 * around an ID, CRLF line ends and repeats are read as a person means
 * them; an ID a sender could not send, an empty roster and a missing
 * file are refused, naming the file and the line. */
static void test_roster(void)
{
	static const char text[] =
		"\xef\xbb\xbf# class of 2026\n"
		"student42\n"
		"  alice   # she joined late\n"
		"\n"
		"\tbob\r\n"
		"student42\n"
		"with space\n";
	static const char *const on[] = { "student42", "alice", "bob",
					   "with space" };
	static const char *const off[] = { "stdent42", "", "# class of 2026",
					    "Alice", "alice ", "bo" };
	char dir[] = "/tmp/lab3-unit.XXXXXX", path[PATH_LEN];
	struct lab3_roster roster = { 0 };
	char err[LAB3_ERR_LEN] = "", long_id[LAB3_ID_MAX + 3];
	const char *name = "roster_load reads IDs as a person means them";
	int bad = 0;

	if (mkdtemp(dir) == NULL) {
		fail(name, "mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "%s/roster", dir);
	if (write_file(path, text, sizeof(text) - 1) != 0 ||
	    lab3_roster_load(path, &roster, err, sizeof(err)) != 0) {
		fail(name, "cannot load: %s", err);
	} else {
		for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++)
			bad += !lab3_roster_has(&roster, on[i]);
		for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++)
			bad += lab3_roster_has(&roster, off[i]);
		if (bad != 0 || roster.n != 4)
			fail(name, "%d lookups wrong, %zu IDs (expected 4)",
			     bad, roster.n);
		else
			pass(name);
	}
	lab3_roster_free(&roster);

	memset(long_id, 'x', LAB3_ID_MAX + 1);
	strcpy(long_id + LAB3_ID_MAX + 1, "\n");
	expect_roster_refused("roster_load refuses an ID too long, naming "
			      "its line", path, long_id, "line 1: ID of 64");
	expect_roster_refused("roster_load refuses a control character",
			      path, "alice\nb\x01ob\n", "line 2: ID has a "
			      "non-printable");
	expect_roster_refused("roster_load refuses a spreadsheet's row",
			      path, "bob\nalice,Alice Smith\n", "line 2: "
			      "'alice,Alice Smith' holds a comma");
	name = "roster_load refuses a NUL byte, naming its line";
	if (write_file(path, "alice\nbo\0b\n", 10) != 0 ||
	    lab3_roster_load(path, &roster, err, sizeof(err)) == 0 ||
	    strstr(err, "line 2: a NUL byte") == NULL)
		fail(name, "message '%s'", err);
	else
		pass(name);
	lab3_roster_free(&roster);
	expect_roster_refused("roster_load refuses a roster of no ID", path,
			      "# nobody yet\n\n", "holds no ID");
	unlink(path);
	expect_roster_refused("roster_load refuses a missing file", path,
			      NULL, "No such file");
	if (rmdir(dir) != 0)
		fail("roster tests leave nothing behind", "rmdir %s: %s", dir,
		     strerror(errno));
}

/* main: run every case group, then the summary line; exit 1 if any case
 * failed, so that tests/unit.test and CI see it. */
/* rx_step_is: case NAME passes when the receiver's next step is STEP. */
static void rx_step_is(const char *name, const struct lab3_rx *rx,
		       enum lab3_rx_step step)
{
	if (lab3_rx_next_step(rx) != step)
		fail(name, "step %s, expected %s",
		     lab3_rx_step_name(lab3_rx_next_step(rx)),
		     lab3_rx_step_name(step));
	else
		pass(name);
}

/* test_rx_steps: the receiver's states, derived from the rules, through
 * a session of three chunks in two windows, from FILE_INFO to the
 * hang-up. */
static void test_rx_steps(void)
{
	struct lab3_msg info = { .type = LAB3_MSG_FILE_INFO };
	struct lab3_msg done = { .type = LAB3_MSG_DONE };
	struct lab3_msg id = { .type = LAB3_MSG_ID };
	uint64_t offset, length;
	struct lab3_rx rx;
	char why[WHY_LEN];

	lab3_rx_begin(&rx, 1 << 20, 4096, 2);
	rx_step_is("rx step: a new session waits for FILE_INFO", &rx,
		   LAB3_RX_RECV_FILE_INFO);
	info.file_info.length = 3 * 4096 - 10;
	lab3_rx_accept(&rx, &info, why, sizeof(why));
	rx_step_is("rx step: FILE_INFO taken, REGIONs go out", &rx,
		   LAB3_RX_SEND_REGION);
	while (lab3_rx_next_region(&rx, &offset, &length))
		;
	rx_step_is("rx step: both windows offered, wait for DONE", &rx,
		   LAB3_RX_RECV_DONE);
	done.done.bytes = 4096;
	lab3_rx_accept(&rx, &done, why, sizeof(why));
	rx_step_is("rx step: a DONE taken, store its chunk", &rx,
		   LAB3_RX_STORE_CHUNK);
	lab3_rx_stored(&rx);
	rx_step_is("rx step: a window free, the third REGION", &rx,
		   LAB3_RX_SEND_REGION);
	lab3_rx_next_region(&rx, &offset, &length);
	for (uint64_t k = 1; k < 3; k++) {
		lab3_rx_chunk(&rx, k, &done.done.offset, &done.done.bytes);
		lab3_rx_accept(&rx, &done, why, sizeof(why));
		lab3_rx_stored(&rx);
	}
	rx_step_is("rx step: every chunk stored, the verdict", &rx,
		   LAB3_RX_SEND_VERDICT);
	lab3_rx_decide(&rx, LAB3_VERDICT_GOOD);
	rx_step_is("rx step: good verdict, wait for the ID", &rx,
		   LAB3_RX_RECV_ID);
	snprintf(id.id.id, sizeof(id.id.id), "student");
	lab3_rx_accept(&rx, &id, why, sizeof(why));
	rx_step_is("rx step: ID taken, send its key", &rx, LAB3_RX_SEND_KEY);
	lab3_rx_key_sent(&rx);
	rx_step_is("rx step: key sent, only the hang-up", &rx,
		   LAB3_RX_WAIT_DISCONNECT);
	lab3_rx_accept(&rx, &id, why, sizeof(why));
	rx_step_is("rx step: a refused message ends the session", &rx,
		   LAB3_RX_NO_STEP);
}

/* ---- The sender's rules (lab3_tx_*) ---- */

/* tx_region: a decoded REGION of LENGTH bytes at OFFSET. */
static struct lab3_msg tx_region(uint64_t offset, uint64_t length)
{
	struct lab3_msg m = { .type = LAB3_MSG_REGION };

	m.region.addr = 0x1000;
	m.region.rkey = 7;
	m.region.offset = offset;
	m.region.length = length;
	return m;
}

/* tx_expect: case NAME passes when the rules answered RET (0: taken),
 * and the run is now in STATE. */
static void tx_expect(const char *name, const struct lab3_tx *tx, int ret,
		      int want_ret, enum lab3_tx_state state)
{
	if (ret != want_ret || tx->state != state)
		fail(name, "returned %d in %s, expected %d in %s", ret,
		     lab3_tx_state_name(tx->state), want_ret,
		     lab3_tx_state_name(state));
	else
		pass(name);
}

/* tx_to_region: a run of SIZE bytes, connected and FILE_INFO sent. */
static void tx_to_region(struct lab3_tx *tx, uint64_t size)
{
	lab3_tx_begin(tx, size);
	lab3_tx_advance(tx);		/* connected */
	lab3_tx_advance(tx);		/* FILE_INFO */
}

/* test_tx_good: a file of two chunks from start to key, each state in
 * the lab's order. */
static void test_tx_good(void)
{
	struct lab3_msg m, verdict = { .type = LAB3_MSG_VERDICT };
	struct lab3_msg key = { .type = LAB3_MSG_KEY };
	struct lab3_tx tx;
	char why[WHY_LEN];
	int ret;

	tx_to_region(&tx, 6000);
	tx_expect("tx: FILE_INFO sent, REGION awaited", &tx, 0, 0,
		  LAB3_TX_RECV_REGION);
	m = tx_region(0, 4096);
	ret = lab3_tx_accept(&tx, &m, why, sizeof(why));
	tx_expect("tx: first REGION taken", &tx, ret, 0, LAB3_TX_WRITE_CHUNK);
	lab3_tx_advance(&tx);
	lab3_tx_advance(&tx);
	tx_expect("tx: after the first DONE, the next REGION", &tx, 0, 0,
		  LAB3_TX_RECV_REGION);
	m = tx_region(4096, 1904);
	ret = lab3_tx_accept(&tx, &m, why, sizeof(why));
	lab3_tx_advance(&tx);
	lab3_tx_advance(&tx);
	tx_expect("tx: after the last DONE, the verdict", &tx, ret, 0,
		  LAB3_TX_RECV_VERDICT);
	verdict.verdict.verdict = LAB3_VERDICT_GOOD;
	ret = lab3_tx_accept(&tx, &verdict, why, sizeof(why));
	tx_expect("tx: good verdict, then the ID", &tx, ret, 0,
		  LAB3_TX_SEND_ID);
	lab3_tx_advance(&tx);
	ret = lab3_tx_accept(&tx, &key, why, sizeof(why));
	tx_expect("tx: the KEY finishes the run", &tx, ret, 0,
		  LAB3_TX_FINISHED);
}

/* tx_refuses: case NAME: in a run of SIZE bytes waiting for its first
 * REGION, MSG is refused with a reason containing WANT. */
static void tx_refuses(const char *name, uint64_t size,
		       const struct lab3_msg *msg, const char *want)
{
	struct lab3_tx tx;
	char why[WHY_LEN] = "";
	int ret;

	tx_to_region(&tx, size);
	ret = lab3_tx_accept(&tx, msg, why, sizeof(why));
	tx_expect(name, &tx, ret, LAB3_ERR_PROTOCOL, LAB3_TX_ENDED);
	if (strstr(why, want) == NULL)
		fail(name, "reason '%s' does not say '%s'", why, want);
}

/* test_tx_refusals: REGIONs that break the rules, messages out of turn,
 * and a bad verdict, which ends the run without an ID. */
static void test_tx_refusals(void)
{
	struct lab3_msg m, verdict = { .type = LAB3_MSG_VERDICT };
	struct lab3_tx tx;
	char why[WHY_LEN];
	int ret;

	m = tx_region(4096, 100);
	tx_refuses("tx: REGION not at the next offset", 6000, &m,
		   "next offset 0");
	m = tx_region(0, 6001);
	tx_refuses("tx: REGION past the end of the file", 6000, &m,
		   "REGION of 6001 bytes");
	m = tx_region(0, 0);
	tx_refuses("tx: empty REGION for a file that is not", 6000, &m,
		   "REGION of 0 bytes");
	m = tx_region(0, (uint64_t)LAB3_WINDOW_BYTES_MAX + 1);
	tx_refuses("tx: REGION longer than any window", 1ULL << 40, &m,
		   "REGION of");
	verdict.verdict.verdict = LAB3_VERDICT_GOOD;
	tx_refuses("tx: VERDICT before any REGION", 6000, &verdict,
		   "expected REGION, got VERDICT");

	tx_to_region(&tx, 0);
	m = tx_region(0, 0);
	ret = lab3_tx_accept(&tx, &m, why, sizeof(why));
	lab3_tx_advance(&tx);
	lab3_tx_advance(&tx);
	tx_expect("tx: an empty file: one empty REGION, then the verdict",
		  &tx, ret, 0, LAB3_TX_RECV_VERDICT);
	verdict.verdict.verdict = LAB3_VERDICT_BAD;
	ret = lab3_tx_accept(&tx, &verdict, why, sizeof(why));
	tx_expect("tx: a bad verdict ends the run, no ID", &tx, ret, 0,
		  LAB3_TX_ENDED);
	ret = lab3_tx_accept(&tx, &m, why, sizeof(why));
	tx_expect("tx: nothing is taken after the end", &tx, ret,
		  LAB3_ERR_PROTOCOL, LAB3_TX_ENDED);
}

/* test_key_then_error: a peer that sends a KEY and at once an ERROR: the
 * ERROR's receive completion can come before the completion of our own
 * ID's SEND.  The connection (no device: only its bookkeeping) must give
 * the KEY first, flush must not fail on the ERROR meanwhile, and the
 * ERROR comes after the KEY. */
static void test_key_then_error(void)
{
	const char *name = "conn: a KEY, then the peer's ERROR, before our "
			   "SEND's completion: flush 0, the KEY, the ERROR";
	struct lab3_conn c = {
		.prog = "unit",
		.error = -EREMOTEIO,
		.ninbox = 1,
		.credits = LAB3_SEND_DEPTH - 1,
	};
	struct lab3_msg m;
	int flushed, got, after;

	c.inbox[0].type = LAB3_MSG_KEY;
	flushed = lab3_sends_completed(&c);
	got = lab3_take_msg(&c, &m);
	after = lab3_take_msg(&c, &m);
	if (flushed != 0 || got != 0 || m.type != LAB3_MSG_KEY ||
	    after != -EREMOTEIO)
		fail(name, "flush %d, first read %d (type %d), then %d; "
		     "expected 0, 0 (KEY), %d", flushed, got, m.type, after,
		     -EREMOTEIO);
	else
		pass(name);
	c.credits = LAB3_SEND_DEPTH - 1;
	flushed = lab3_sends_completed(&c);
	if (flushed != -EREMOTEIO)
		fail("conn: the peer's ERROR with nothing left to read fails "
		     "a flush", "flush %d, expected %d", flushed, -EREMOTEIO);
	else
		pass("conn: the peer's ERROR with nothing left to read fails "
		     "a flush");
}

/* send_failed: a send's completion of KIND with STATUS applied to a
 * connection on a device of TRANSPORT, five sends completed and one
 * outstanding; C is what it became. */
static void send_failed(struct lab3_conn *c, enum ibv_transport_type transport,
			enum wr_kind kind, enum ibv_wc_status status)
{
	static struct ibv_device dev;
	static struct ibv_context ctx;
	static struct rdma_cm_id id;
	struct ibv_wc wc = { .wr_id = WR_ID(kind, 0), .status = status };

	dev.transport_type = transport;
	ctx.device = &dev;
	id.verbs = &ctx;
	*c = (struct lab3_conn) {
		.prog = "unit", .id = &id, .established = 1, .heard = 1,
		.credits = LAB3_SEND_DEPTH - 1, .sends_completed = 5,
	};
	conn_apply_wc(c, &wc);
}

/* test_send_cut_by_hangup: siw completes a SEND that went out whole with
 * LOC_QP_OP_ERR when the peer hangs up as it goes (the receiver's KEY,
 * to a sender that exits at once): over iWARP such a SEND of the lab's
 * counts as sent and the connection's end is the hang-up.  Not over
 * RoCE, and not a WRITE (the student posts those: a bad lkey). */
static void test_send_cut_by_hangup(void)
{
	static const struct {
		const char *name;
		enum ibv_transport_type transport;
		enum wr_kind kind;
		uint64_t completed;
		int error;
	} cases[] = {
		{ "conn: iWARP, a SEND cut as the peer hangs up: it went out, "
		  "and the hang-up ends the connection",
		  IBV_TRANSPORT_IWARP, WR_SEND, 6, -ECONNRESET },
		{ "conn: RoCE, a SEND's LOC_QP_OP_ERR: not sent, the "
		  "connection's error",
		  IBV_TRANSPORT_IB, WR_SEND, 5, -EIO },
		{ "conn: iWARP, a WRITE's LOC_QP_OP_ERR: not sent, the "
		  "connection's error",
		  IBV_TRANSPORT_IWARP, WR_WRITE, 5, -EIO },
	};
	struct lab3_conn c;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		send_failed(&c, cases[i].transport, cases[i].kind,
			    IBV_WC_LOC_QP_OP_ERR);
		if (c.sends_completed != cases[i].completed ||
		    c.error != cases[i].error)
			fail(cases[i].name, "%llu sends completed, error %d "
			     "(%s); expected %llu, error %d",
			     (unsigned long long)c.sends_completed, c.error,
			     c.err, (unsigned long long)cases[i].completed,
			     cases[i].error);
		else
			pass(cases[i].name);
	}
	send_failed(&c, IBV_TRANSPORT_IWARP, WR_SEND, IBV_WC_WR_FLUSH_ERR);
	if (c.sends_completed != 5)
		fail("conn: iWARP, a flushed SEND is not sent",
		     "%llu sends completed; expected 5",
		     (unsigned long long)c.sends_completed);
	else
		pass("conn: iWARP, a flushed SEND is not sent");
}

/* received: a receive completion (status success, opcode RECV) of MSG,
 * encoded into receive buffer 0 of C (whose msgs is BUF): what
 * conn_apply_wc() says of it (1: post the buffer again). */
static int received(struct lab3_conn *c, union lab3_wire_msg *buf,
		    const struct lab3_msg *msg)
{
	struct ibv_wc wc = {
		.wr_id = WR_ID(WR_RECV, 0),
		.status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_RECV,
	};

	c->msgs = buf;
	wc.byte_len = (uint32_t)lab3_encode(msg, &buf[0]);
	return conn_apply_wc(c, &wc);
}

/* test_no_recv_after_error: a receive is posted again only while the
 * connection stands.  The peer's ERROR fails it: that buffer is not
 * posted again (a peer that goes on sending finds no receive), and
 * neither is one whose message arrives after a failure of ours. */
static void test_no_recv_after_error(void)
{
	union lab3_wire_msg buf[LAB3_RECV_DEPTH];
	struct lab3_msg region = { .type = LAB3_MSG_REGION };
	struct lab3_msg error = { .type = LAB3_MSG_ERROR };
	struct lab3_conn c = { .prog = "unit", .connected = 1 };
	int again;

	region.region.length = 4096;
	region.region.rkey = 1;
	again = received(&c, buf, &region);
	if (again != 1 || c.ninbox != 1)
		fail("conn: a REGION's receive is posted again", "%d, inbox "
		     "%d; expected 1, 1 (%s)", again, c.ninbox, c.err);
	else
		pass("conn: a REGION's receive is posted again");

	error.error.code = LAB3_ERR_RESOURCES;
	snprintf(error.error.reason, sizeof(error.error.reason), "no room");
	again = received(&c, buf, &error);
	if (again != 0 || c.error != -EREMOTEIO)
		fail("conn: the peer's ERROR's receive is not posted again",
		     "%d (error %d); expected 0 (error %d)", again, c.error,
		     -EREMOTEIO);
	else
		pass("conn: the peer's ERROR's receive is not posted again");

	c = (struct lab3_conn) { .prog = "unit", .error = -ETIMEDOUT };
	again = received(&c, buf, &region);
	if (again != 0)
		fail("conn: no receive is posted again once the connection "
		     "has failed", "%d; expected 0", again);
	else
		pass("conn: no receive is posted again once the connection "
		     "has failed");
}

/* A CQ of no device, for the wait's own logic: its completions come
 * from fake_cq_poll (one SEND's, once late_at has passed), and arming it
 * does nothing.  Its completion channel and the CM channel are pipes that
 * nothing writes: no completion event ever comes. */
static long long late_at;
static int late_left;

static int fake_cq_poll(struct ibv_cq *cq, int max, struct ibv_wc *wc)
{
	(void)cq;
	if (late_left == 0 || max < 1 || lab3_now_ms() < late_at)
		return 0;
	late_left--;
	wc[0] = (struct ibv_wc) { .wr_id = WR_ID(WR_SEND, 0),
				  .status = IBV_WC_SUCCESS,
				  .opcode = IBV_WC_SEND };
	return 1;
}

static int fake_cq_arm(struct ibv_cq *cq, int solicited_only)
{
	(void)cq;
	(void)solicited_only;
	return 0;
}

/* fake_cq_conn: C, connected, on that CQ and those channels; 0, or a
 * negative errno. */
static int fake_cq_conn(struct lab3_conn *c)
{
	static struct ibv_context ctx;
	static struct ibv_cq cq;
	static struct ibv_comp_channel comp;
	static struct rdma_event_channel cm;
	static int fds[2][2] = { { -1, -1 }, { -1, -1 } };

	if (fds[0][0] < 0 && (pipe(fds[0]) != 0 || pipe(fds[1]) != 0))
		return -errno;
	ctx.ops.poll_cq = fake_cq_poll;
	ctx.ops.req_notify_cq = fake_cq_arm;
	cq.context = &ctx;
	comp = (struct ibv_comp_channel) { .context = &ctx, .fd = fds[0][0] };
	cm.fd = fds[1][0];
	c->cq = &cq;
	c->comp_channel = &comp;
	c->cm_channel = &cm;
	c->owns_cm_channel = 1;
	c->connected = 1;
	return 0;
}

/* A queue pair of no device whose post "forgets" IBV_SEND_SIGNALED, as a
 * student's post_signaled() may: the work request is posted all the same. */
static int fake_posts;

static int fake_post_unsignaled(struct ibv_qp *qp, struct ibv_send_wr *wr,
				struct ibv_send_wr **bad_wr)
{
	(void)qp;
	(void)bad_wr;
	wr->send_flags = 0;
	fake_posts++;
	return 0;
}

/* test_unsignaled_is_posted: a WRITE posted without IBV_SEND_SIGNALED is
 * posted: the post says so (0, and counts it), so that its caller keeps
 * its registration until the queue pair is gone; the connection has
 * failed all the same, naming the flag, and says so at the next call. */
static void test_unsignaled_is_posted(void)
{
	const char *name = "post: a WRITE posted unsignaled is posted (0, "
			   "counted), and the connection's error names the flag";
	static struct ibv_context ctx;
	struct ibv_qp qp = { .context = &ctx };
	struct lab3_conn c = { .prog = "unit", .qp = &qp, .connected = 1,
			       .credits = LAB3_SEND_DEPTH };
	struct ibv_send_wr wr = { .wr_id = WR_ID(WR_WRITE, 0),
				  .opcode = IBV_WR_RDMA_WRITE };
	int ret, next;

	ctx.ops.post_send = fake_post_unsignaled;
	ret = conn_post_send(&c, &wr, 0);
	next = conn_post_send(&c, &wr, 0);
	if (ret != 0 || fake_posts != 1 || c.sends_posted != 1 ||
	    c.error != -EINVAL || strstr(c.err, "IBV_SEND_SIGNALED") == NULL ||
	    next != -EINVAL)
		fail(name, "%d, %d posted, %llu counted, error %d (%s), then "
		     "%d; expected 0, 1, 1, %d naming IBV_SEND_SIGNALED, then "
		     "%d", ret, fake_posts, (unsigned long long)c.sends_posted,
		     c.error, c.err, next, -EINVAL, -EINVAL);
	else
		pass(name);
}

/* test_pieces_bounded: no more WRITEs and DONEs are kept in flight than
 * the send queue holds: one more (a send posted without its credit) is
 * the connection's error, and overwrites nothing. */
static void test_pieces_bounded(void)
{
	const char *name = "pieces: one more DONE in flight than the send "
			   "queue holds is refused (-ENOBUFS)";
	struct {
		struct lab3_pieces p;
		int after;		/* what an overrun would write over */
	} t = { .after = 12345 };
	struct lab3_conn c = { .prog = "unit" };
	int ret = 0, i;

	for (i = 0; i <= LAB3_SEND_DEPTH && ret == 0; i++) {
		c.sends_posted++;
		ret = lab3_done_posted(&t.p, &c, (uint64_t)i * 10, 10);
	}
	if (ret != -ENOBUFS || i != LAB3_SEND_DEPTH + 1 ||
	    t.p.n != LAB3_SEND_DEPTH || t.after != 12345 || c.error != -ENOBUFS)
		fail(name, "%d at the %dth, %d in flight; expected %d at the "
		     "%dth, %d in flight", ret, i, t.p.n, -ENOBUFS,
		     LAB3_SEND_DEPTH + 1, LAB3_SEND_DEPTH);
	else
		pass(name);
	c.sends_completed = 2;
	if (lab3_reap_pieces(&t.p, &c) != 2 || t.p.landed != 20 ||
	    t.p.n != LAB3_SEND_DEPTH - 2)
		fail("pieces: completed DONEs land, oldest first", "%llu "
		     "landed, %d in flight; expected 20, %d",
		     (unsigned long long)t.p.landed, t.p.n, LAB3_SEND_DEPTH - 2);
	else
		pass("pieces: completed DONEs land, oldest first");
}

/* test_pieces_full_waits: with LAB3_SEND_DEPTH WRITEs and DONEs in
 * flight (every credit taken), the next piece waits for one of them to
 * complete: here none does, so the wait's silence ends it (-ETIMEDOUT),
 * not a refusal of the full queue (-ENOBUFS). */
static void test_pieces_full_waits(void)
{
	const char *name = "pieces: a WRITE with the queue full waits for "
			   "room (here: the timeout), not -ENOBUFS";
	static struct lab3_pieces p;
	struct lab3_conn c = { .prog = "unit", .timeout_ms = 100 };
	int ret = fake_cq_conn(&c);

	late_left = 0;			/* nothing completes */
	c.credits = 0;
	p.slot_size = 4096;
	for (int i = 0; i < LAB3_SEND_DEPTH; i++)
		p.inflight[p.n++] = (struct lab3_piece) {
			.offset = (uint64_t)i, .length = 1,
			.complete_at = ++c.sends_posted };
	if (ret == 0)
		ret = lab3_write_piece(&p, &c, 0, 10, 0, 0);
	if (ret != -ETIMEDOUT || p.n != LAB3_SEND_DEPTH || p.local_failure)
		fail(name, "%d (%s), %d in flight; expected %d, %d", ret, c.err,
		     p.n, -ETIMEDOUT, LAB3_SEND_DEPTH);
	else
		pass(name);
}

/* test_ring_sizes: the ring's slots (lab3_pieces_init()): LAB3_SLOT_MAX
 * for a big file, whatever the pin budget allows beyond it; the budget's
 * piece when it is smaller; a quarter of a small file, in whole pages;
 * a page for a tiny or empty one. */
static void test_ring_sizes(void)
{
	const char *name = "pieces: the ring's slots are LAB3_SLOT_MAX at "
			   "most, the pin budget's piece at most, a quarter "
			   "of a small file, a page at least";
	static const struct {
		uint64_t size;
		uint32_t piece_max, want;
	} cases[] = {
		{ 1ull << 30, 8u << 20, LAB3_SLOT_MAX },
		{ 1ull << 30, 1u << 20, 1u << 20 },
		{ 1ull << 30, 12288, 12288 },
		{ 3u << 20, 8u << 20, 786432 },		/* a quarter */
		{ 1000003, 8u << 20, 253952 },		/* 62 pages */
		{ 1, 8u << 20, 4096 },
		{ 0, 8u << 20, 4096 },
	};
	struct lab3_pieces p;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		lab3_pieces_init(&p, 3, cases[i].size, cases[i].piece_max);
		if (p.slot_size != cases[i].want) {
			fail(name, "%llu bytes, pieces of %u: slots of %u, "
			     "expected %u", (unsigned long long)cases[i].size,
			     cases[i].piece_max, p.slot_size, cases[i].want);
			return;
		}
	}
	pass(name);
}

/* A queue pair of no device that does at its post what the NIC does
 * later: it reads the WRITE's bytes (from the slot its SGE names, under
 * the ring's lkey) into fake_remote at the WRITE's remote address, and
 * notes the slot's address. */
static uint8_t fake_remote[64 << 10];
static uintptr_t fake_write_from[16];
static int fake_writes;

static int fake_post_write(struct ibv_qp *qp, struct ibv_send_wr *wr,
			   struct ibv_send_wr **bad_wr)
{
	(void)qp;
	(void)bad_wr;
	if (wr->opcode != IBV_WR_RDMA_WRITE || wr->num_sge != 1 ||
	    wr->sg_list[0].lkey != 0x5107 ||
	    wr->wr.rdma.remote_addr + wr->sg_list[0].length >
	    sizeof(fake_remote) || fake_writes == 16)
		return EINVAL;
	memcpy(fake_remote + wr->wr.rdma.remote_addr,
	       (const void *)(uintptr_t)wr->sg_list[0].addr,
	       wr->sg_list[0].length);
	fake_write_from[fake_writes++] = (uintptr_t)wr->sg_list[0].addr;
	return 0;
}

/* ring_fixture: a file of LEN bytes (a pattern) at FILE_PATH, open as
 * P's source, P's ring of slots of SLOT bytes with a registration of no
 * device, and C connected on a queue pair that posts with
 * fake_post_write; the file's bytes into WANT.  0, or a negative errno. */
static int ring_fixture(struct lab3_pieces *p, struct lab3_conn *c,
			uint8_t *want, size_t len, uint32_t slot)
{
	static struct ibv_context ctx;
	static struct ibv_qp qp = { .context = &ctx };
	static struct ibv_mr mr = { .lkey = 0x5107 };
	char path[] = "/tmp/lab3-unit-ring.XXXXXX";
	int fd = mkstemp(path);

	if (fd < 0)
		return -errno;
	unlink(path);
	for (size_t i = 0; i < len; i++)
		want[i] = (uint8_t)(i * 7 + i / 251);
	if (write(fd, want, len) != (ssize_t)len) {
		close(fd);
		return -EIO;
	}
	ctx.ops.post_send = fake_post_write;
	*c = (struct lab3_conn) { .prog = "unit", .qp = &qp, .connected = 1,
				  .credits = LAB3_SEND_DEPTH,
				  .timeout_ms = 100 };
	*p = (struct lab3_pieces) { .fd = fd, .slot_size = slot,
				    .ring_mr = &mr };
	p->ring = calloc(LAB3_RING_SLOTS, slot);
	memset(fake_remote, 0, sizeof(fake_remote));
	fake_writes = 0;
	return p->ring != NULL ? 0 : -ENOMEM;
}

/* test_ring_pieces: a piece longer than a slot goes as several WRITEs,
 * each from a slot of the ring to its own place, and the bytes are the
 * file's; the slots are taken in turn, and a slot is taken again only
 * after its WRITE has completed: with every slot taken, the next WRITE
 * waits (here until the silence's timeout) rather than overwrite one. */
static void test_ring_pieces(void)
{
	const char *name = "pieces: a piece of 2.5 slots goes as 3 WRITEs "
			   "from 3 slots, the file's bytes at their places";
	enum { SLOT = 4096, LEN = 5 * SLOT };
	static uint8_t want[LEN];
	struct lab3_pieces p;
	struct lab3_conn c;
	int ret = ring_fixture(&p, &c, want, LEN, SLOT);

	if (ret == 0)
		ret = lab3_write_piece(&p, &c, 0, SLOT * 5 / 2, 0, 0x77);
	if (ret != 0 || fake_writes != 3 || p.slots_taken != 3 ||
	    memcmp(fake_remote, want, SLOT * 5 / 2) != 0 ||
	    fake_write_from[0] != (uintptr_t)p.ring ||
	    fake_write_from[1] != (uintptr_t)p.ring + SLOT ||
	    fake_write_from[2] != (uintptr_t)p.ring + 2 * SLOT)
		fail(name, "%d (%s), %d WRITEs, %d slots taken, bytes %s; "
		     "expected 0, 3, 3, the file's", ret, c.err, fake_writes,
		     p.slots_taken, memcmp(fake_remote, want, SLOT * 5 / 2) ?
		     "not the file's" : "the file's");
	else
		pass(name);

	/* One more slot, then all four are taken: the fifth waits. */
	name = "pieces: with every slot in flight the next WRITE waits "
	       "(the timeout), taking none";
	ret = lab3_write_piece(&p, &c, SLOT * 5 / 2, SLOT, SLOT * 5 / 2, 0x77);
	if (ret == 0) {
		fake_cq_conn(&c);
		late_left = 0;			/* nothing completes */
		ret = lab3_write_piece(&p, &c, SLOT * 7 / 2, SLOT,
				       SLOT * 7 / 2, 0x77);
	}
	if (ret != -ETIMEDOUT || fake_writes != 4 || p.slots_taken != 4)
		fail(name, "%d (%s), %d WRITEs, %d slots taken; expected %d, "
		     "4, 4", ret, c.err, fake_writes, p.slots_taken,
		     -ETIMEDOUT);
	else
		pass(name);

	/* The first WRITE completes: its slot, the ring's first, is the
	 * one taken next, and the bytes are still the file's. */
	name = "pieces: a completed WRITE's slot is taken again, in turn";
	c.error = 0;
	c.err[0] = '\0';
	c.sends_completed = 1;
	c.credits = LAB3_SEND_DEPTH - 3;
	ret = lab3_write_piece(&p, &c, SLOT * 7 / 2, SLOT, SLOT * 7 / 2, 0x77);
	if (ret != 0 || fake_writes != 5 ||
	    fake_write_from[4] != (uintptr_t)p.ring ||
	    memcmp(fake_remote, want, SLOT * 9 / 2) != 0)
		fail(name, "%d (%s), %d WRITEs, the fifth from slot %ld, bytes "
		     "%s; expected 0, 5, slot 0, the file's", ret, c.err,
		     fake_writes, fake_writes == 5 ? (long)(fake_write_from[4] -
		     (uintptr_t)p.ring) / SLOT : -1L,
		     memcmp(fake_remote, want, SLOT * 9 / 2) ? "not the file's" :
		     "the file's");
	else
		pass(name);

	/* The receiver's ERROR is in, a REGION before it still unread,
	 * with every slot taken: nothing more completes, so the WRITE
	 * fails at once with the ERROR (it used to spin for ever). */
	name = "pieces: with every slot taken, the peer's ERROR behind an "
	       "unread message fails the WRITE at once";
	if (ret == 0 && p.slots_taken == LAB3_RING_SLOTS) {
		c.error = -EREMOTEIO;
		snprintf(c.err, sizeof(c.err), "%s", "the receiver: refused");
		c.ninbox = 1;
		alarm(10);		/* a spin is a failure, not a hang */
		ret = lab3_write_piece(&p, &c, SLOT * 9 / 2, 100, SLOT * 9 / 2,
				       0x77);
		alarm(0);
	}
	if (ret != -EREMOTEIO || fake_writes != 5)
		fail(name, "%d (%s), %d WRITEs; expected %d, 5", ret, c.err,
		     fake_writes, -EREMOTEIO);
	else
		pass(name);

	name = "pieces: a WRITE of 0 bytes is refused, naming its offset";
	c.error = 0;
	c.ninbox = 0;
	ret = lab3_write_piece(&p, &c, 77, 0, 77, 0x77);
	if (ret != -EINVAL || strstr(c.err, "0 bytes at file offset 77") ==
	    NULL)
		fail(name, "%d (%s); expected %d naming 0 bytes at offset 77",
		     ret, c.err, -EINVAL);
	else
		pass(name);
	close(p.fd);
	free(p.ring);
}

/* test_ring_cut_short: a file cut short since it was hashed is the
 * sender's own failure, named as such, and nothing is posted. */
static void test_ring_cut_short(void)
{
	const char *name = "pieces: a file cut short is a local failure "
			   "naming where it ends, nothing posted";
	enum { SLOT = 4096, LEN = SLOT + 100 };
	static uint8_t want[LEN];
	struct lab3_pieces p;
	struct lab3_conn c;
	int ret = ring_fixture(&p, &c, want, LEN, SLOT);

	p.size = LEN + 200;		/* as hashed, before it was cut */
	if (ret == 0)
		ret = lab3_write_piece(&p, &c, SLOT, 200, SLOT, 0x77);
	if (ret == 0 || !p.local_failure || fake_writes != 0 ||
	    p.slots_taken != 0 || strstr(c.err, "changed size while being "
					 "sent (4396 bytes when hashed, 4196 "
					 "now: no byte at offset 4196)") == NULL)
		fail(name, "%d (%s), local %d, %d WRITEs; expected an error "
		     "naming 4396 and 4196 bytes, local, no WRITE", ret, c.err,
		     p.local_failure, fake_writes);
	else
		pass(name);
	close(p.fd);
	free(p.ring);
}

/* The lag a completion's event is given behind its completion at a wake
 * without one (CQ_EVENT_LAG_MS, common.c): whether the wait gave it, or
 * not, is told from the time the wait took, with half of it as margin. */
#define EVENT_LAG_MS 2000

/* test_unarmed_at_silence: a completion that comes without its event
 * (an unarmed CQ) during a wait is found when the wait's own deadline
 * wakes it: the event is given its lag, none comes, and the wait names
 * the arming that was missed. */
static void test_unarmed_at_silence(void)
{
	const char *name = "wait: completions found at the wait's deadline "
			   "with no event wait for its lag, then name the "
			   "unarmed CQ";
	struct lab3_conn c = { .prog = "unit", .timeout_ms = 100,
			       .credits = LAB3_SEND_DEPTH - 1 };
	long long start = lab3_now_ms(), took;
	int ret = fake_cq_conn(&c);

	late_at = start + 30;
	late_left = 1;
	if (ret == 0)
		ret = lab3_wait(&c, 0);
	took = lab3_now_ms() - start;
	if (ret != -EIO || strstr(c.err, "ibv_req_notify_cq") == NULL ||
	    took < 100 + EVENT_LAG_MS / 2 || c.sends_completed != 1)
		fail(name, "%d (%s) after %lld ms, %llu completed; expected %d "
		     "naming ibv_req_notify_cq after the event's lag, 1 "
		     "completed", ret, c.err, took,
		     (unsigned long long)c.sends_completed, -EIO);
	else
		pass(name);
}

/* test_unannounced_not_judged: a wake that is neither the wait's
 * deadline nor a CM event that ended the connection (here: the end of
 * the settling window of a connection the peer had already hung up,
 * with our SEND in flight) finds that SEND's completion without its
 * event.  It is taken at once, with no wait for an event, and the
 * connection ends for what ended it: the hang-up. */
static void test_unannounced_not_judged(void)
{
	const char *name = "wait: a completion found without its event at a "
			   "wake that is not the deadline is taken, not judged";
	struct lab3_conn c = { .prog = "unit", .timeout_ms = 5000,
			       .credits = LAB3_SEND_DEPTH - 1,
			       .disconnected = 1 };
	long long start = lab3_now_ms(), took;
	int ret = fake_cq_conn(&c);

	c.settle_until = start + 100;
	late_at = start + 30;
	late_left = 1;
	if (ret == 0)
		ret = lab3_wait(&c, 0);
	took = lab3_now_ms() - start;
	if (ret != -ECONNRESET || strstr(c.err, "disconnected") == NULL ||
	    took >= EVENT_LAG_MS / 2 || c.sends_completed != 1 ||
	    c.credits != LAB3_SEND_DEPTH)
		fail(name, "%d (%s) after %lld ms, %llu completed; expected "
		     "%d (the hang-up) at once, 1 completed", ret, c.err, took,
		     (unsigned long long)c.sends_completed, -ECONNRESET);
	else
		pass(name);
}

/* ---- Quotas: the sources they count by, the files --keep drops ---- */

/* expect_source: peer_source() of PEER is WANT. */
static void expect_source(const char *peer, const char *want)
{
	char got[LAB3_SOURCE_LEN], name[128];

	snprintf(name, sizeof(name), "the source of %s", peer);
	peer_source(peer, got, sizeof(got));
	if (strcmp(got, want) == 0)
		pass(name);
	else
		fail(name, "'%s', expected '%s'", got, want);
}

/* test_sources: an IPv4 address is itself, an IPv6 one its /64 (so two
 * addresses of one host's /64 are one source), an IPv4-mapped one its
 * IPv4 address; anything else the name without its port. */
static void test_sources(void)
{
	expect_source("198.18.0.1:40152", "198.18.0.1");
	expect_source("[fd00:198:18::1]:7471", "fd00:198:18::/64");
	expect_source("[fd00:198:18:0:ffff:1:2:3]:1", "fd00:198:18::/64");
	expect_source("[fd00:198:18:1::1]:1", "fd00:198:18:1::/64");
	expect_source("[::ffff:10.0.0.1]:5", "10.0.0.1");
	expect_source("[fe80::1%eth0]:5", "[fe80::1%eth0]");
	if (same_host("[fd00::1]:1", "[fd00::2]:2") &&
	    !same_host("[fd00::1]:1", "[fd00:0:0:1::1]:1") &&
	    !same_host("198.18.0.1:1", "198.18.0.2:1"))
		pass("same_host compares sources");
	else
		fail("same_host compares sources", "wrong answer");
}

/* test_ledger_dropped: a record that dropped files lists them after
 * saved_as, and reads back, its peer and saved_as with it. */
static void test_ledger_dropped(void)
{
	static const char dropped[] = "student42/a.pdf\0student42/a.pdf.2";
	const char *name = "a record with dropped files";
	struct lab3_ledger_record rec = {
		.time = LEDGER_TIME,
		.peer = "198.18.0.2:49152",
		.id = "student42",
		.verdict = -1,
		.saved_as = "student42/a.pdf.3",
		.dropped = dropped,
		.dropped_len = sizeof(dropped),
	};
	struct lab3_ledger_entry e;
	char line[LAB3_LEDGER_LINE_MAX];
	int len = lab3_ledger_format(&rec, line, sizeof(line));
	const char *tail = ",\"saved_as\":\"student42/a.pdf.3\",\"dropped\":"
			   "[\"student42/a.pdf\",\"student42/a.pdf.2\"]}";

	if (len < 0 || (size_t)len < strlen(tail) ||
	    strcmp(line + len - strlen(tail), tail) != 0)
		fail(name, "written as %s", len < 0 ? "nothing" : line);
	else if (lab3_ledger_parse(line, (size_t)len, &e) != 0)
		fail(name, "not read back: %s", line);
	else if (strcmp(e.peer, rec.peer) != 0 ||
		 strcmp(e.saved_as, rec.saved_as) != 0)
		fail(name, "read back with peer '%s', saved_as '%s'", e.peer,
		     e.saved_as);
	else
		pass(name);
}

/* test_cpu_line: the receiver's -v line of a session's CPU by phase
 * (format_cpu()) gives each phase in seconds, in the order that
 * scripts/bench reads, and the rest of the session's CPU as "other"; and
 * cpu_add() adds the time since its start and returns the time now. */
static void test_cpu_line(void)
{
	static const char want[] = "windows 0.012000 s, canaries 0.020000 s, "
		"hash 9.600000 s, copy 0.000001 s, fsync 1.500000 s, "
		"other 0.300000 s";
	const char *name = "format_cpu gives the phases and the rest";
	struct session_cpu cpu = {
		.start = 5000000000LL,
		.windows = 12000000LL,
		.canaries = 20000000LL,
		.hash = 9600000000LL,
		.copy = 1000LL,
		.fsync = 1500000000LL,
	};
	long long end = cpu.start + cpu.windows + cpu.canaries + cpu.hash +
			cpu.copy + cpu.fsync + 300000000LL;
	long long phase = 7, start = cpu_now(), now;
	char line[192];
	int len = format_cpu(&cpu, end, line, sizeof(line));

	if (len < 0 || strcmp(line, want) != 0)
		fail(name, "expected '%s', got '%s'", want, line);
	else
		pass(name);
	now = cpu_add(&phase, start);
	name = "cpu_add adds the time since its start";
	if (start <= 0 || now < start || phase != 7 + (now - start))
		fail(name, "expected %lld + (%lld - %lld), got %lld", 7LL, now,
		     start, phase);
	else
		pass(name);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_roundtrips();
	test_rejections();
	test_checks();
	test_sha256();
	test_hmac();
	test_key_for_id();
	test_load_secret();
	test_parse();
	test_rx();
	test_rx_steps();
	test_tx_good();
	test_tx_refusals();
	test_ledger();
	test_ledger_dropped();
	test_sources();
	test_roster();
	test_key_then_error();
	test_send_cut_by_hangup();
	test_no_recv_after_error();
	test_unsignaled_is_posted();
	test_pieces_bounded();
	test_pieces_full_waits();
	test_ring_pieces();
	test_ring_sizes();
	test_ring_cut_short();
	test_unarmed_at_silence();
	test_unannounced_not_judged();
	test_cpu_line();
	printf("%d passed, %d failed\n", n_passed, n_failed);
	return n_failed == 0 ? 0 : 1;
}
