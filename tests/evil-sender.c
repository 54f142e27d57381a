/*
 * evil-sender.c - a sender that breaks the Lab 3 protocol on purpose, for
 * the robustness tests (tests/e2e/evil.sh).  Test-only; built from the
 * project's common layer.
 *
 *   tests/evil-sender MODE HOST PORT
 *
 * It connects like ./sender, then misbehaves as MODE says (see the table
 * at the end), and prints one line saying what it did and what came back.
 * Its exit status is 0 when it could carry out the misbehaviour, whatever
 * the receiver answered: judging the receiver's reaction is the test's
 * job.  Exit 1 means a usage error, 2 that it could not even misbehave.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common.h"

#define EVIL_BYTES 8192			/* the file it pretends to send */
#define EVIL_ID "evil"

/* The evil sender's connection and the one buffer it writes from. */
struct evil {
	struct lab3_conn conn;
	uint8_t data[EVIL_BYTES];
	struct ibv_mr *mr;
	struct lab3_msg region;		/* the last REGION received */
};

/* say: print the one line of this run and return STATUS. */
static int say(const char *what, const struct evil *e, int status)
{
	printf("evil-sender: %s%s%s\n", what, e->conn.err[0] ? ": " : "",
	       e->conn.err);
	return status;
}

/* send_msg: encode MSG, then let PATCH (if not NULL) spoil the wire bytes
 * and LEN_DELTA change its length, and send it. */
static int send_msg(struct evil *e, const struct lab3_msg *msg,
		    void (*patch)(union lab3_wire_msg *), int len_delta)
{
	union lab3_wire_msg wire = { 0 };
	size_t len = lab3_encode(msg, &wire);

	if (patch != NULL)
		patch(&wire);
	return lab3_send_bytes(&e->conn, &wire, len + (size_t)len_delta);
}

/* send_info: FILE_INFO for LENGTH bytes of e->data (hash of those). */
static int send_info(struct evil *e, uint64_t length)
{
	struct lab3_msg msg = { .type = LAB3_MSG_FILE_INFO };

	msg.file_info.length = length;
	lab3_sha256(e->data, length < EVIL_BYTES ? length : EVIL_BYTES,
		    msg.file_info.sha256);
	snprintf(msg.file_info.name, sizeof(msg.file_info.name), "evil.bin");
	return send_msg(e, &msg, NULL, 0);
}

/* recv_type: receive the next message and require type WANT. */
static int recv_type(struct evil *e, enum lab3_msg_type want,
		     struct lab3_msg *msg)
{
	int ret = lab3_recv_msg(&e->conn, msg, 0);

	if (ret != 0)
		return ret;
	if (msg->type != want) {
		snprintf(e->conn.err, sizeof(e->conn.err), "got %s%s%s",
			 lab3_msg_type_name(msg->type),
			 msg->type == LAB3_MSG_ERROR ? ": " : "",
			 msg->type == LAB3_MSG_ERROR ? msg->error.reason : "");
		return -EPROTO;
	}
	return 0;
}

/* write_bytes: RDMA WRITE LEN bytes of e->data to the last REGION, at
 * OFFSET into it, and wait for the write to complete. */
static int write_bytes(struct evil *e, uint64_t offset, uint32_t len)
{
	int ret = lab3_post_rdma_write(&e->conn, e->mr, e->data, len,
				       e->region.region.addr + offset,
				       e->region.region.rkey);

	return ret ? ret : lab3_wait_send(&e->conn, LAB3_WR_WRITE, 0);
}

/* send_done: DONE for the last REGION's chunk, saying BYTES. */
static int send_done(struct evil *e, uint64_t bytes)
{
	struct lab3_msg msg = { .type = LAB3_MSG_DONE };

	msg.done.offset = e->region.region.offset;
	msg.done.bytes = bytes;
	return send_msg(e, &msg, NULL, 0);
}

/* send_id: the ID message for ID (printable or not), sent raw. */
static int send_id(struct evil *e, const char *id, size_t len)
{
	struct lab3_msg msg = { .type = LAB3_MSG_ID };
	union lab3_wire_msg wire = { 0 };
	size_t size = lab3_encode(&msg, &wire);

	wire.id.id_len = (uint8_t)len;
	memcpy(wire.id.id, id, len < LAB3_ID_MAX ? len : LAB3_ID_MAX);
	return lab3_send_bytes(&e->conn, &wire, size);
}

/* honest_until_written: FILE_INFO, REGION and the WRITE of a whole
 * EVIL_BYTES file, as a good sender would. */
static int honest_until_written(struct evil *e)
{
	int ret = send_info(e, EVIL_BYTES);

	if (ret == 0)
		ret = recv_type(e, LAB3_MSG_REGION, &e->region);
	if (ret == 0)
		ret = write_bytes(e, 0, EVIL_BYTES);
	return ret;
}

/* honest_until_done: the same, then DONE. */
static int honest_until_done(struct evil *e)
{
	int ret = honest_until_written(e);

	return ret ? ret : send_done(e, EVIL_BYTES);
}

/* ---- The misbehaviours ---- */

static void spoil_magic(union lab3_wire_msg *w) { w->hdr.magic ^= 0xff; }
static void spoil_version(union lab3_wire_msg *w) { w->hdr.version = 1; }

/* The first message with a wrong magic, version or length. */
static int bad_magic(struct evil *e)
{
	struct lab3_msg msg = { .type = LAB3_MSG_FILE_INFO };

	return send_msg(e, &msg, spoil_magic, 0);
}

static int bad_version(struct evil *e)
{
	struct lab3_msg msg = { .type = LAB3_MSG_FILE_INFO };

	return send_msg(e, &msg, spoil_version, 0);
}

static int bad_length(struct evil *e)
{
	struct lab3_msg msg = { .type = LAB3_MSG_FILE_INFO };

	return send_msg(e, &msg, NULL, -1);
}

/* A message out of order: DONE before anything else. */
static int out_of_order(struct evil *e)
{
	return send_done(e, 0);
}

/* A length over any limit. */
static int over_limit(struct evil *e)
{
	return send_info(e, 1ULL << 50);
}

/* Length 0, then a WRITE anyway into the empty REGION. */
static int zero_then_write(struct evil *e)
{
	int ret = send_info(e, 0);

	if (ret == 0)
		ret = recv_type(e, LAB3_MSG_REGION, &e->region);
	if (ret == 0)
		ret = write_bytes(e, 0, 4096);
	return ret;
}

/* A WRITE past the end of the advertised region. */
static int write_past_region(struct evil *e)
{
	int ret = send_info(e, EVIL_BYTES / 2);

	if (ret == 0)
		ret = recv_type(e, LAB3_MSG_REGION, &e->region);
	if (ret == 0)
		ret = write_bytes(e, 0, EVIL_BYTES);
	return ret;
}

/* A WRITE into the region after DONE. */
static int write_after_done(struct evil *e)
{
	int ret = honest_until_done(e);

	return ret ? ret : write_bytes(e, 0, EVIL_BYTES);
}

/* DONE twice. */
static int done_twice(struct evil *e)
{
	int ret = honest_until_done(e);

	return ret ? ret : send_done(e, EVIL_BYTES);
}

/* The ID before the verdict came: right after the WRITE, where DONE
 * belongs.  (An ID sent right after DONE could arrive after the verdict
 * left the receiver, which no receiver can tell from an honest sender.) */
static int id_before_verdict(struct evil *e)
{
	int ret = honest_until_written(e);

	return ret ? ret : send_id(e, EVIL_ID, strlen(EVIL_ID));
}

/* IDs with a control character, or too long, after a good verdict. */
static int id_after_verdict(struct evil *e, const char *id, size_t len)
{
	struct lab3_msg msg;
	int ret = honest_until_done(e);

	if (ret == 0)
		ret = recv_type(e, LAB3_MSG_VERDICT, &msg);
	if (ret == 0)
		ret = send_id(e, id, len);
	return ret;
}

static int id_control(struct evil *e)
{
	return id_after_verdict(e, "ev\til", 5);
}

static int id_too_long(struct evil *e)
{
	char id[LAB3_ID_MAX + 1];

	memset(id, 'x', sizeof(id));
	return id_after_verdict(e, id, sizeof(id));
}

/* Connected, then silent until the receiver gives up on us. */
static int silent(struct evil *e)
{
	struct lab3_msg msg;
	int ret = lab3_recv_msg(&e->conn, &msg, 120 * 1000);

	return ret == -ECONNRESET ? 0 : ret ? ret : -EPROTO;
}

/* Half the WRITEs, then gone without DONE. */
static int stop_mid_write(struct evil *e)
{
	int ret = send_info(e, EVIL_BYTES);

	if (ret == 0)
		ret = recv_type(e, LAB3_MSG_REGION, &e->region);
	return ret ? ret : write_bytes(e, 0, EVIL_BYTES / 2);
}

/* Gone after each step. */
static int gone_after_info(struct evil *e)
{
	return send_info(e, EVIL_BYTES);
}

static int gone_after_region(struct evil *e)
{
	int ret = send_info(e, EVIL_BYTES);

	return ret ? ret : recv_type(e, LAB3_MSG_REGION, &e->region);
}

static int gone_after_done(struct evil *e)
{
	return honest_until_done(e);
}

static int gone_after_verdict(struct evil *e)
{
	struct lab3_msg msg;
	int ret = honest_until_done(e);

	return ret ? ret : recv_type(e, LAB3_MSG_VERDICT, &msg);
}

static const struct {
	const char *name;
	int (*run)(struct evil *e);
} modes[] = {
	{ "bad-magic", bad_magic },
	{ "bad-version", bad_version },
	{ "bad-length", bad_length },
	{ "out-of-order", out_of_order },
	{ "over-limit", over_limit },
	{ "zero-then-write", zero_then_write },
	{ "write-past-region", write_past_region },
	{ "write-after-done", write_after_done },
	{ "done-twice", done_twice },
	{ "id-before-verdict", id_before_verdict },
	{ "id-control", id_control },
	{ "id-too-long", id_too_long },
	{ "silent", silent },
	{ "stop-mid-write", stop_mid_write },
	{ "gone-after-info", gone_after_info },
	{ "gone-after-region", gone_after_region },
	{ "gone-after-done", gone_after_done },
	{ "gone-after-verdict", gone_after_verdict },
};

/* main: connect, misbehave, report; the receiver's reaction is the test's
 * to judge. */
int main(int argc, char **argv)
{
	static struct evil e = {
		.conn = { .prog = "evil-sender", .timeout_ms = 10000 },
	};
	int (*run)(struct evil *e) = NULL;
	int ret;

	for (size_t i = 0; argc == 4 && i < sizeof(modes) / sizeof(modes[0]);
	     i++)
		if (strcmp(argv[1], modes[i].name) == 0)
			run = modes[i].run;
	if (run == NULL) {
		fprintf(stderr, "usage: evil-sender MODE HOST PORT; modes:");
		for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
			fprintf(stderr, " %s", modes[i].name);
		fprintf(stderr, "\n");
		return 1;
	}
	memset(e.data, 0xe5, sizeof(e.data));
	if (lab3_connect(&e.conn, argv[2], argv[3]) != 0 ||
	    lab3_reg_mr(&e.conn, e.data, sizeof(e.data), 0, &e.mr) != 0) {
		ret = say("cannot connect", &e, 2);
		goto out_destroy;
	}
	ret = run(&e);
	ret = say(ret == 0 ? argv[1] : "the receiver stopped it", &e, 0);
out_destroy:
	lab3_disconnect(&e.conn);
	if (e.mr != NULL)
		ibv_dereg_mr(e.mr);
	lab3_conn_destroy(&e.conn);
	return ret;
}
