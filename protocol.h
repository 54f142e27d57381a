/* SPDX-License-Identifier: MIT */
/*
 * protocol.h - the Lab 3 wire protocol: the specification of every message
 * the sender and the receiver exchange.
 *
 * The message sequence.  Each arrow is one RDMA SEND (a two-sided message,
 * consumed by a RECV the peer posted in advance), except step 3's RDMA
 * WRITEs, which place the file straight into the receiver's memory without
 * involving its CPU.
 *
 *   sender                                            receiver
 *     |  rdma_cm: resolve address and route, connect     |
 *     |------------------------------------------------->|  accept
 *   1 |  FILE_INFO  (length, SHA-256, base name)         |
 *     |------------------------------------------------->|  check the length,
 *     |                                                  |  register a window
 *   2 |  REGION     (addr, length, file offset, rkey)    |
 *     |<-------------------------------------------------|
 *   3 |  RDMA WRITE ... RDMA WRITE  (the file's bytes)   |
 *     |=================================================>|
 *     |  DONE       (file offset, bytes written)         |
 *     |------------------------------------------------->|  deregister, then
 *   4 |  VERDICT    (good or bad)                        |  hash what arrived
 *     |<-------------------------------------------------|
 *   5 |  ID         (the student's ID)                   |
 *     |------------------------------------------------->|
 *   6 |  KEY        (HMAC-SHA256(secret, ID))            |  good verdicts only
 *     |<-------------------------------------------------|
 *     |  rdma_disconnect                                 |
 *
 * Files larger than one window.  The receiver keeps a few windows (at most
 * LAB3_WINDOWS_MAX) of a size it chooses, and the file travels in chunks of
 * that size, chunk k at file offset k * window size (the last chunk is
 * what is left of the file).  Steps 2 and 3 then repeat, once per chunk:
 *
 *     REGION(chunk 0), REGION(chunk 1), ...  one per window, at the start
 *     WRITEs + DONE(chunk 0)                 into chunk 0's window
 *     WRITEs + DONE(chunk 1)                 meanwhile the receiver revokes
 *     REGION(chunk W)                        window 0, hashes and stores
 *     WRITEs + DONE(chunk 2) ...             chunk 0, registers it again
 *
 * REGIONs come in file order, one chunk each, and the sender answers each
 * with its WRITEs and one DONE naming the same offset and length.  A
 * sender takes a REGION only if its offset is where the last chunk ended
 * (0 at first) and its length is at least 1 (0 only for an empty file)
 * and no more than what is left of the file; else it is out of place.  Each
 * DONE follows its WRITEs on the same queue pair, so it arrives only after
 * they have landed.  The receiver deregisters a window before it hashes the
 * chunk in it, and hands it out again only under a new registration, so
 * no WRITE can change bytes after they were checked.  A file that fits in
 * one window has exactly the lab's sequence: one REGION, the WRITEs, one
 * DONE.  An empty file has one REGION of length 0 (addr and rkey 0), no
 * WRITE, and DONE(0, 0).  No REGION is longer than LAB3_WINDOW_BYTES_MAX,
 * and no more than LAB3_WINDOWS_MAX are outstanding at once.  The VERDICT
 * covers the whole file.
 *
 * Receives.  Every message is a SEND, which consumes a receive its peer
 * posted before it arrived.  A receiver sends a REGION for every window it
 * has free (up to LAB3_WINDOWS_MAX at once) without waiting, and an ERROR
 * may follow any message, so a sender keeps at least LAB3_WINDOWS_MAX + 1
 * receives posted from the moment it connects, and posts each one again
 * as soon as it has taken its message.  A SEND that finds no receive is
 * tried again by the sender's device ("receiver not ready", RNR), but a
 * receiver does so for a few seconds at most (6 retries, whatever the
 * connection request asks for: 7 would mean forever), then ends the
 * session: a peer that takes none of its messages cannot hold its send
 * queue.
 *
 * Either side may send ERROR instead of its next message.  It carries a code
 * and a short printable reason for the peer to show, and ends the session
 * (a file too large, for example, gets ERROR instead of REGION).
 *
 * A receiver that cannot take a session at all rejects the connection
 * request (rdma_reject) with a printable reason and its NUL as the private
 * data.  A reason that begins with LAB3_BUSY_REASON means "not now": the
 * sender may try again later (sender --wait does).
 *
 * Transport rules, for any peer to interoperate:
 *   - rdma_cm over RDMA_PS_TCP (a reliable connection), port
 *     LAB3_DEFAULT_PORT unless told otherwise, no RDMA READ or atomics
 *     (responder resources and initiator depth 0); both sides ask for
 *     retry_count 7 and rnr_retry_count 6.
 *   - One WRITE is at most the port's max_msg_sz (ibv_query_port()): a
 *     longer chunk goes in several WRITEs, all posted before its DONE.
 *   - A refusal is a REJECTED event whose private data is printable text
 *     ending in a NUL: show it.  REJECTED without such data (none, or
 *     data that starts with a NUL: InfiniBand and RoCE pad it with zeros;
 *     or, over iWARP, rdma_connect() failing with ECONNREFUSED) means
 *     that nobody listens on that port.
 *   - Each side gives up after -t seconds of silence (default 30): of no
 *     completion at all, so each WRITE or SEND of its own that completes
 *     starts the wait again, as a message does.  A wait that grows with
 *     the data allows one more second per whole 4 MiB of it: the
 *     receiver's for a DONE (the chunk's length), the sender's for a
 *     REGION (the last REGION's length) and for the VERDICT
 *     (LAB3_WINDOWS_MAX times that, or the file's length if less).
 *   - A side that breaks off sends ERROR first when it still can: the
 *     receiver for a file too large (TOO_LARGE), no room now (RESOURCES),
 *     a message out of place (PROTOCOL), an ID after a bad verdict or
 *     one it gives no key (NO_KEY: not on its class's roster, say), a
 *     silence past its limit (RESOURCES, naming the message it waited
 *     for) and its own failures (INTERNAL); the sender for a
 *     message out of place (PROTOCOL) and its own failures (INTERNAL).
 *     Never in answer to the peer's ERROR; a sender that gives up on
 *     silence just disconnects.
 *   - An ERROR wins over the failure that follows it: after a failed
 *     completion, a side looks for the peer's ERROR for up to 200 ms,
 *     until a receive has been flushed (receives complete in order), and
 *     reports its reason rather than the broken connection.
 *
 * Every message begins with the same header: magic, version, type and the
 * length of the body that follows.  Each type has one fixed size, so the
 * receiving side checks the completion's byte_len against it before it looks
 * at any field.  All integers are big-endian, and no host pointer, no
 * struct ibv_mr and no int or enum ever goes on the wire: the REGION message
 * carries the region's address and rkey as plain 64- and 32-bit numbers.
 *
 * The helpers at the end turn a decoded message (struct lab3_msg, host byte
 * order) into its wire form and back.  lab3_decode() checks everything a
 * message can get wrong on its own; which message a side may receive next
 * is for its state machine to check.
 */
#ifndef LAB3_PROTOCOL_H
#define LAB3_PROTOCOL_H

#include <endian.h>
#include <linux/types.h>	/* __be16, __be32, __be64 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define LAB3_MAGIC 0x4c414233u		/* "LAB3" */
#define LAB3_VERSION 2			/* 2: REGION and DONE carry offsets */
#define LAB3_DEFAULT_PORT 7471

#define LAB3_WINDOWS_MAX 8		/* REGIONs outstanding, at most */
#define LAB3_WINDOW_BYTES_MAX (1u << 30)  /* longest REGION */

#define LAB3_SHA256_LEN 32
#define LAB3_KEY_LEN 32
#define LAB3_NAME_MAX 255		/* longest file base name */
#define LAB3_ID_MAX 63			/* longest student ID */
#define LAB3_REASON_MAX 118		/* longest ERROR reason */
#define LAB3_BUSY_REASON "receiver busy"	/* a rejection: try later */

enum lab3_msg_type {
	LAB3_MSG_FILE_INFO = 1,
	LAB3_MSG_REGION = 2,
	LAB3_MSG_DONE = 3,
	LAB3_MSG_VERDICT = 4,
	LAB3_MSG_ID = 5,
	LAB3_MSG_KEY = 6,
	LAB3_MSG_ERROR = 7,
};

enum lab3_verdict {
	LAB3_VERDICT_BAD = 0,
	LAB3_VERDICT_GOOD = 1,
};

/* Why a side sent ERROR. */
enum lab3_error_code {
	LAB3_ERR_PROTOCOL = 1,		/* a message broke this protocol */
	LAB3_ERR_TOO_LARGE = 2,		/* file outside the receiver's limits
					 * (over -m, or under --min-size) */
	LAB3_ERR_RESOURCES = 3,		/* receiver can't hold the file now */
	LAB3_ERR_NO_KEY = 4,		/* a bad verdict, an unknown ID */
	LAB3_ERR_INTERNAL = 5,		/* the peer failed on its own side */
};
#define LAB3_ERR_LAST LAB3_ERR_INTERNAL

/* ---- Wire format: big-endian fields, one fixed size per type ----
 *
 * Multi-byte fields are __be16/__be32/__be64 (linux/types.h): big-endian
 * on the wire, read and written only through be*toh()/htobe*(), as sparse
 * (`make sparse`) checks. */

struct lab3_wire_header {
	__be32 magic;			/* LAB3_MAGIC */
	uint8_t version;		/* LAB3_VERSION */
	uint8_t type;			/* enum lab3_msg_type */
	__be16 body_len;		/* bytes after this header */
};

struct lab3_wire_file_info {		/* step 1, sender -> receiver */
	struct lab3_wire_header hdr;
	__be64 length;			/* file length in bytes */
	uint8_t sha256[LAB3_SHA256_LEN];	/* of the whole file */
	uint8_t name_len;		/* 0: no name given */
	char name[LAB3_NAME_MAX];	/* base name, not NUL-terminated */
};

struct lab3_wire_region {		/* step 2, receiver -> sender */
	struct lab3_wire_header hdr;
	__be64 addr;			/* remote address for RDMA WRITE */
	__be64 length;			/* bytes writable from addr */
	__be64 offset;			/* file offset of the chunk */
	__be32 rkey;			/* remote key of the region */
	__be32 reserved;		/* zero */
};

struct lab3_wire_done {			/* step 3, sender -> receiver */
	struct lab3_wire_header hdr;
	__be64 offset;			/* the chunk's file offset */
	__be64 bytes;			/* bytes written into it */
};

struct lab3_wire_verdict {		/* step 4, receiver -> sender */
	struct lab3_wire_header hdr;
	uint8_t verdict;		/* enum lab3_verdict */
	uint8_t reserved[7];		/* zero */
};

struct lab3_wire_id {			/* step 5, sender -> receiver */
	struct lab3_wire_header hdr;
	uint8_t id_len;			/* 1 .. LAB3_ID_MAX */
	char id[LAB3_ID_MAX];		/* printable ASCII, unterminated */
};

struct lab3_wire_key {			/* step 6, receiver -> sender */
	struct lab3_wire_header hdr;
	uint8_t key[LAB3_KEY_LEN];	/* HMAC-SHA256(secret, ID) */
};

struct lab3_wire_error {		/* either way, ends the session */
	struct lab3_wire_header hdr;
	uint8_t code;			/* enum lab3_error_code */
	uint8_t reason_len;		/* 0 .. LAB3_REASON_MAX */
	char reason[LAB3_REASON_MAX];	/* printable ASCII */
};

_Static_assert(sizeof(struct lab3_wire_header) == 8, "header size");
_Static_assert(sizeof(struct lab3_wire_file_info) == 304, "FILE_INFO size");
_Static_assert(sizeof(struct lab3_wire_region) == 40, "REGION size");
_Static_assert(sizeof(struct lab3_wire_done) == 24, "DONE size");
_Static_assert(sizeof(struct lab3_wire_verdict) == 16, "VERDICT size");
_Static_assert(sizeof(struct lab3_wire_id) == 72, "ID size");
_Static_assert(sizeof(struct lab3_wire_key) == 40, "KEY size");
_Static_assert(sizeof(struct lab3_wire_error) == 128, "ERROR size");

/* Room for any one message: the size of every send and receive buffer. */
union lab3_wire_msg {
	struct lab3_wire_header hdr;
	struct lab3_wire_file_info file_info;
	struct lab3_wire_region region;
	struct lab3_wire_done done;
	struct lab3_wire_verdict verdict;
	struct lab3_wire_id id;
	struct lab3_wire_key key;
	struct lab3_wire_error error;
};

/* ---- Decoded messages, host byte order, strings NUL-terminated ---- */

/* A REGION's: a window of the receiver's memory (its address, length and
 * rkey) for the chunk of the file at OFFSET. */
struct lab3_region {
	uint64_t addr;
	uint64_t length;
	uint64_t offset;
	uint32_t rkey;
};

struct lab3_msg {
	enum lab3_msg_type type;
	union {
		struct {
			uint64_t length;
			uint8_t sha256[LAB3_SHA256_LEN];
			char name[LAB3_NAME_MAX + 1];	/* "" if none */
		} file_info;
		struct lab3_region region;
		struct {
			uint64_t offset;
			uint64_t bytes;
		} done;
		struct {
			enum lab3_verdict verdict;
		} verdict;
		struct {
			char id[LAB3_ID_MAX + 1];
		} id;
		struct {
			uint8_t key[LAB3_KEY_LEN];
		} key;
		struct {
			enum lab3_error_code code;
			char reason[LAB3_REASON_MAX + 1];
		} error;
	};
};

/* Byte order.  htobe64() and its kin take and return plain integers;
 * these wrappers say in their types which side is big-endian, so that
 * sparse (`make sparse`) reports any wire field used without conversion.
 * (force tells sparse that the cast between the two is meant.) */
#ifdef __CHECKER__
#define LAB3_FORCE __attribute__((force))
#else
#define LAB3_FORCE
#endif

static inline __be16 lab3_htobe16(uint16_t v)
{
	return (LAB3_FORCE __be16)htobe16(v);
}

static inline __be32 lab3_htobe32(uint32_t v)
{
	return (LAB3_FORCE __be32)htobe32(v);
}

static inline __be64 lab3_htobe64(uint64_t v)
{
	return (LAB3_FORCE __be64)htobe64(v);
}

static inline uint16_t lab3_be16toh(__be16 v)
{
	return be16toh((LAB3_FORCE uint16_t)v);
}

static inline uint32_t lab3_be32toh(__be32 v)
{
	return be32toh((LAB3_FORCE uint32_t)v);
}

static inline uint64_t lab3_be64toh(__be64 v)
{
	return be64toh((LAB3_FORCE uint64_t)v);
}

/* lab3_msg_type_name: the name of a message type, for messages and traces. */
static inline const char *lab3_msg_type_name(int type)
{
	switch (type) {
	case LAB3_MSG_FILE_INFO:	return "FILE_INFO";
	case LAB3_MSG_REGION:		return "REGION";
	case LAB3_MSG_DONE:		return "DONE";
	case LAB3_MSG_VERDICT:		return "VERDICT";
	case LAB3_MSG_ID:		return "ID";
	case LAB3_MSG_KEY:		return "KEY";
	case LAB3_MSG_ERROR:		return "ERROR";
	default:			return "unknown";
	}
}

/* lab3_wire_size: the one size a message of TYPE has, or 0 if TYPE is not a
 * message type. */
static inline size_t lab3_wire_size(int type)
{
	static const size_t sizes[LAB3_MSG_ERROR + 1] = {
		[LAB3_MSG_FILE_INFO] = sizeof(struct lab3_wire_file_info),
		[LAB3_MSG_REGION] = sizeof(struct lab3_wire_region),
		[LAB3_MSG_DONE] = sizeof(struct lab3_wire_done),
		[LAB3_MSG_VERDICT] = sizeof(struct lab3_wire_verdict),
		[LAB3_MSG_ID] = sizeof(struct lab3_wire_id),
		[LAB3_MSG_KEY] = sizeof(struct lab3_wire_key),
		[LAB3_MSG_ERROR] = sizeof(struct lab3_wire_error),
	};

	return type >= 0 && type <= LAB3_MSG_ERROR ? sizes[type] : 0;
}

/* lab3_check_text: 0 if the LEN bytes at S are printable ASCII (space to
 * '~'), else -1.  IDs and ERROR reasons must be. */
static inline int lab3_check_text(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return -1;
	return 0;
}

/* lab3_check_name: 0 if the LEN bytes at NAME are an acceptable file base
 * name, else -1 with WHY filled in.  The name comes from the network and
 * becomes a file name in the receiver's output directory, so: 1 to
 * LAB3_NAME_MAX printable ASCII characters, no '/', no leading '.'. */
static inline int lab3_check_name(const char *name, size_t len,
				  char *why, size_t why_len)
{
	if (len == 0 || len > LAB3_NAME_MAX) {
		snprintf(why, why_len,
			 "file name of %zu bytes (1 to %d allowed)",
			 len, LAB3_NAME_MAX);
		return -1;
	}
	if (lab3_check_text(name, len) != 0) {
		snprintf(why, why_len,
			 "file name has a non-printable character");
		return -1;
	}
	if (memchr(name, '/', len) != NULL) {
		snprintf(why, why_len, "file name contains '/'");
		return -1;
	}
	if (name[0] == '.') {
		snprintf(why, why_len, "file name starts with '.'");
		return -1;
	}
	return 0;
}

/* lab3_check_id: 0 if the LEN bytes at ID are an acceptable student ID
 * (1 to LAB3_ID_MAX printable ASCII characters), else -1 with WHY. */
static inline int lab3_check_id(const char *id, size_t len,
				char *why, size_t why_len)
{
	if (len == 0 || len > LAB3_ID_MAX) {
		snprintf(why, why_len, "ID of %zu characters (1 to %d allowed)",
			 len, LAB3_ID_MAX);
		return -1;
	}
	if (lab3_check_text(id, len) != 0) {
		snprintf(why, why_len, "ID has a non-printable character");
		return -1;
	}
	return 0;
}

/* lab3_all_zero: 1 if the LEN bytes at P are all zero. */
static inline int lab3_all_zero(const void *p, size_t len)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < len; i++)
		if (b[i] != 0)
			return 0;
	return 1;
}

/* lab3_encode_file_info: the body of FILE_INFO; -1 if the name is too
 * long. */
static inline int lab3_encode_file_info(const struct lab3_msg *msg,
					struct lab3_wire_file_info *wire)
{
	size_t len = strnlen(msg->file_info.name, sizeof(msg->file_info.name));

	if (len > LAB3_NAME_MAX)
		return -1;
	wire->length = lab3_htobe64(msg->file_info.length);
	memcpy(wire->sha256, msg->file_info.sha256, LAB3_SHA256_LEN);
	wire->name_len = (uint8_t)len;
	memcpy(wire->name, msg->file_info.name, len);
	return 0;
}

/* lab3_encode: write MSG in wire form into WIRE and return its size, or 0
 * if MSG cannot be encoded (unknown type, or a string too long).  Unused
 * bytes are zero, so nothing of this process's memory leaks out. */
static inline size_t lab3_encode(const struct lab3_msg *msg,
				 union lab3_wire_msg *wire)
{
	size_t size = lab3_wire_size(msg->type);
	size_t len;

	if (size == 0)
		return 0;
	memset(wire, 0, sizeof(*wire));
	wire->hdr.magic = lab3_htobe32(LAB3_MAGIC);
	wire->hdr.version = LAB3_VERSION;
	wire->hdr.type = (uint8_t)msg->type;
	wire->hdr.body_len = lab3_htobe16((uint16_t)(size - sizeof(wire->hdr)));

	switch (msg->type) {
	case LAB3_MSG_FILE_INFO:
		if (lab3_encode_file_info(msg, &wire->file_info) != 0)
			return 0;
		break;
	case LAB3_MSG_REGION:
		wire->region.addr = lab3_htobe64(msg->region.addr);
		wire->region.length = lab3_htobe64(msg->region.length);
		wire->region.offset = lab3_htobe64(msg->region.offset);
		wire->region.rkey = lab3_htobe32(msg->region.rkey);
		break;
	case LAB3_MSG_DONE:
		wire->done.offset = lab3_htobe64(msg->done.offset);
		wire->done.bytes = lab3_htobe64(msg->done.bytes);
		break;
	case LAB3_MSG_VERDICT:
		wire->verdict.verdict = (uint8_t)msg->verdict.verdict;
		break;
	case LAB3_MSG_ID:
		len = strnlen(msg->id.id, sizeof(msg->id.id));
		if (len > LAB3_ID_MAX)
			return 0;
		wire->id.id_len = (uint8_t)len;
		memcpy(wire->id.id, msg->id.id, len);
		break;
	case LAB3_MSG_KEY:
		memcpy(wire->key.key, msg->key.key, LAB3_KEY_LEN);
		break;
	case LAB3_MSG_ERROR:
		len = strnlen(msg->error.reason,
			      sizeof(msg->error.reason));
		if (len > LAB3_REASON_MAX)
			len = LAB3_REASON_MAX;	/* a reason may be cut short */
		wire->error.code = (uint8_t)msg->error.code;
		wire->error.reason_len = (uint8_t)len;
		memcpy(wire->error.reason, msg->error.reason, len);
		break;
	}
	return size;
}

/* lab3_decode_verdict: VERDICT's body: good or bad, reserved bytes zero. */
static inline int lab3_decode_verdict(const struct lab3_wire_verdict *wire,
				      struct lab3_msg *msg,
				      char *why, size_t why_len)
{
	if (wire->verdict != LAB3_VERDICT_BAD &&
	    wire->verdict != LAB3_VERDICT_GOOD) {
		snprintf(why, why_len, "verdict %u is neither good nor bad",
			 wire->verdict);
		return -1;
	}
	if (!lab3_all_zero(wire->reserved, sizeof(wire->reserved))) {
		snprintf(why, why_len, "VERDICT reserved bytes not zero");
		return -1;
	}
	msg->verdict.verdict = (enum lab3_verdict)wire->verdict;
	return 0;
}

/* lab3_decode_error: ERROR's body: a known code, a printable reason. */
static inline int lab3_decode_error(const struct lab3_wire_error *wire,
				    struct lab3_msg *msg,
				    char *why, size_t why_len)
{
	size_t len = wire->reason_len;

	if (wire->code < 1 || wire->code > LAB3_ERR_LAST) {
		snprintf(why, why_len, "ERROR code %u is unknown", wire->code);
		return -1;
	}
	if (len > LAB3_REASON_MAX ||
	    lab3_check_text(wire->reason, len) != 0) {
		snprintf(why, why_len, "ERROR reason is not printable text");
		return -1;
	}
	msg->error.code = (enum lab3_error_code)wire->code;
	memcpy(msg->error.reason, wire->reason, len);
	msg->error.reason[len] = '\0';
	return 0;
}

/* lab3_decode_body: decode the body of a message whose header and size
 * lab3_decode() has already checked. */
static inline int lab3_decode_body(const union lab3_wire_msg *wire,
				   struct lab3_msg *msg,
				   char *why, size_t why_len)
{
	size_t len;

	switch (msg->type) {
	case LAB3_MSG_FILE_INFO:
		msg->file_info.length = lab3_be64toh(wire->file_info.length);
		memcpy(msg->file_info.sha256, wire->file_info.sha256,
		       LAB3_SHA256_LEN);
		len = wire->file_info.name_len;
		if (len > 0 && lab3_check_name(wire->file_info.name, len,
					       why, why_len) != 0)
			return -1;
		memcpy(msg->file_info.name, wire->file_info.name, len);
		msg->file_info.name[len] = '\0';
		return 0;
	case LAB3_MSG_REGION:
		if (wire->region.reserved != 0) {
			snprintf(why, why_len,
				 "REGION reserved field not zero");
			return -1;
		}
		msg->region.addr = lab3_be64toh(wire->region.addr);
		msg->region.length = lab3_be64toh(wire->region.length);
		msg->region.offset = lab3_be64toh(wire->region.offset);
		msg->region.rkey = lab3_be32toh(wire->region.rkey);
		return 0;
	case LAB3_MSG_DONE:
		msg->done.offset = lab3_be64toh(wire->done.offset);
		msg->done.bytes = lab3_be64toh(wire->done.bytes);
		return 0;
	case LAB3_MSG_VERDICT:
		return lab3_decode_verdict(&wire->verdict, msg, why, why_len);
	case LAB3_MSG_ID:
		len = wire->id.id_len;
		if (lab3_check_id(wire->id.id, len, why, why_len) != 0)
			return -1;
		memcpy(msg->id.id, wire->id.id, len);
		msg->id.id[len] = '\0';
		return 0;
	case LAB3_MSG_KEY:
		memcpy(msg->key.key, wire->key.key, LAB3_KEY_LEN);
		return 0;
	case LAB3_MSG_ERROR:
		return lab3_decode_error(&wire->error, msg, why, why_len);
	}
	snprintf(why, why_len, "message type %d is unknown", (int)msg->type);
	return -1;
}

/* lab3_decode: check the BYTE_LEN bytes received at BUF and decode them into
 * MSG.  Returns 0, or -1 with WHY saying what was wrong: a short message, a
 * wrong magic, version, type or length, or a field out of range. */
static inline int lab3_decode(const void *buf, size_t byte_len,
			      struct lab3_msg *msg, char *why, size_t why_len)
{
	union lab3_wire_msg wire;
	size_t size;

	if (byte_len < sizeof(wire.hdr)) {
		snprintf(why, why_len, "message of %zu bytes is shorter than "
			 "a header", byte_len);
		return -1;
	}
	if (byte_len > sizeof(wire)) {
		snprintf(why, why_len, "message of %zu bytes is longer than "
			 "any message", byte_len);
		return -1;
	}
	memset(&wire, 0, sizeof(wire));
	memcpy(&wire, buf, byte_len);
	if (lab3_be32toh(wire.hdr.magic) != LAB3_MAGIC) {
		snprintf(why, why_len, "bad magic 0x%08x (not a Lab 3 peer?)",
			 lab3_be32toh(wire.hdr.magic));
		return -1;
	}
	if (wire.hdr.version != LAB3_VERSION) {
		snprintf(why, why_len, "peer speaks protocol version %u, "
			 "this is version %d", wire.hdr.version, LAB3_VERSION);
		return -1;
	}
	size = lab3_wire_size(wire.hdr.type);
	if (size == 0) {
		snprintf(why, why_len, "message type %u is unknown",
			 wire.hdr.type);
		return -1;
	}
	if (byte_len != size ||
	    lab3_be16toh(wire.hdr.body_len) != size - sizeof(wire.hdr)) {
		snprintf(why, why_len, "%s message of %zu bytes (body %u), "
			 "expected %zu", lab3_msg_type_name(wire.hdr.type),
			 byte_len, lab3_be16toh(wire.hdr.body_len), size);
		return -1;
	}
	memset(msg, 0, sizeof(*msg));
	msg->type = (enum lab3_msg_type)wire.hdr.type;
	return lab3_decode_body(&wire, msg, why, why_len);
}

#endif /* LAB3_PROTOCOL_H */
