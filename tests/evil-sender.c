/* SPDX-License-Identifier: MIT */
/*
 * evil-sender.c - a sender that breaks the Lab 3 protocol on purpose, for
 * the robustness tests (tests/e2e/evil.sh, and a few cases of the other
 * scripts in tests/e2e/).  Test-only; built from the project's common
 * layer.
 *
 *   tests/evil-sender [-s SIZE] [-n NAME] [-i ID] MODE HOST PORT
 *
 * It connects like ./sender, then misbehaves as MODE says (see the table
 * at the end), and prints one line saying what it did and what came back.
 * The file it sends is SIZE bytes (default 8192, at most 1G; suffixes K,
 * M, G) of a fixed pattern, announced under the base name NAME (default
 * evil.bin); ID (default evil) is what id-before-verdict sends.  The modes
 * other than the two below put the file into one REGION, so for them SIZE
 * must fit one of the receiver's windows.
 *
 * Four modes send the whole file as an honest sender does, through every
 * window the receiver offers (REGIONs in file order, one per chunk; each
 * answered with the chunk's RDMA WRITEs and a DONE), and themselves check
 * the one answer the receiver must give:
 *
 *   bad-hash     FILE_INFO claims the file's SHA-256 with its first byte
 *                flipped.  The line gives the chunks, the hash claimed and
 *                the verdict, which must be bad.
 *   stale-write  The right hash, but when the receiver's first window comes
 *                round again (a REGION with the first REGION's addr, under
 *                a new rkey), an RDMA WRITE of 1 byte there under the first
 *                REGION's old rkey, before anything else.  The receiver's
 *                device must refuse it: the line then ends "remote access
 *                error" (InfiniBand, RoCE), or "the connection broke"
 *                (iWARP, where the refusal comes after the WRITE has
 *                completed).  The file must be larger than the receiver's
 *                windows together, or no window comes round.
 *   unwritten    No RDMA at all: FILE_INFO for SIZE bytes of zeros with
 *                their SHA-256 (what a window holds that nobody wrote),
 *                then a DONE for each REGION, and never a WRITE.  The
 *                receiver must end the session at the first DONE (the
 *                line then says "the receiver stopped it"; the
 *                receiver's summary line says why), or, for a file
 *                shorter than a canary, give a bad verdict; a good one
 *                is a let-through (exit 3).
 *   sparse       As unwritten, but for each REGION it writes 16 bytes
 *                of zeros at the start of each 4 KiB of the chunk: a
 *                store filler's cheap file, against canaries at fixed
 *                places.  The same answers are right and wrong.
 *   wrong-wr-id  The chunk's RDMA WRITE posted straight to the QP with
 *                wr_id 0, which names a receive: its own completion
 *                handling (lab3_wait()) must stop it with -EINVAL and
 *                blame the wr_id, not the receiver (the line then says
 *                "its own completion handling stopped it" and why; exit
 *                3 if it did not).
 *   dribble      Slowly: DRIBBLE_PAUSE_S seconds of nothing before each
 *                chunk's WRITEs and DONE: never silent for long, but far
 *                slower than any link.  A receiver's rate floor must end
 *                it (the line then says "the receiver stopped it" and why).
 *
 * One mode takes none of the receiver's messages (see starve() below):
 *
 *   starve       It learns the receiver's window size from a first
 *                session, then, on a connection that asks for endless RNR
 *                retries and has one receive posted, announces a file of
 *                LAB3_SEND_DEPTH + 1 windows and sends a DONE for each
 *                chunk without writing a byte.  The receiver's REGIONs
 *                after the first, and its ERROR or VERDICT, find no
 *                receive.  (Since the receiver's canaries, its first
 *                DONE ends the session: the send queue no longer fills.)  The
 *                line says how long the receiver took to end the session;
 *                if it still holds it after STARVE_END_S, the exit status
 *                is 3.  The mode never runs longer than STARVE_MAX_S.
 *
 * Exit status: 0 when it could carry out the misbehaviour, whatever the
 * receiver answered: judging the receiver's reaction is the test's job.
 * 1 means a usage error, 2 that it could not even misbehave, and 3 that
 * the receiver let bad-hash, stale-write, unwritten or sparse through (a good
 * verdict, a write accepted, a DONE taken for bytes never written).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_verbs.h>

#include "args.h"
#include "common.h"
#include "provider.h"
#include "evil.h"
#include "testlib.h"

#define EVIL_BYTES 8192			/* the file, unless -s says */
#define EVIL_MAX_BYTES (1ULL << 30)	/* the largest -s */
#define EVIL_ID "evil"
#define EVIL_EXIT_LET_THROUGH 3		/* the receiver let it through */
#define DRIBBLE_PAUSE_S 4		/* dribble: between a chunk and DONE */
#define STARVE_PROBE_BYTES (64u << 20)	/* starve: the probe's file, to learn
					 * windows up to this size */
#define STALE_WAIT_MS 2000		/* stale-write: for a refusal */
#define STARVE_PACE_MS 20		/* starve: between two DONEs */
#define STARVE_WAIT_MS 10000		/* starve: for a completion */
#define STARVE_END_S 60			/* starve: for the receiver to end it */
#define STARVE_MAX_S 120		/* starve: the whole mode, at most */
#define SPARSE_STRIDE 4096u		/* sparse: the bytes it writes, */
#define SPARSE_LEN 16u			/* these at the start of each */
#define STARVE_SENDS 4			/* starve: send buffers, used in turn */

/* The evil sender's connection, its file and what it has seen. */
struct evil {
	struct lab3_conn conn;
	const char *host, *port;	/* the receiver's */
	uint64_t size;			/* the file's length (-s) */
	const char *name;		/* its base name (-n) */
	const char *id;			/* the ID to send (-i) */
	uint8_t *data;			/* the file (and more, if it is */
	size_t data_len;		/* shorter than EVIL_BYTES) */
	struct ibv_mr *mr;		/* data, the source of every WRITE */
	struct lab3_msg region;		/* the last REGION received */
	unsigned chunks;		/* REGIONs answered with a DONE */

	/* stale-write: the first REGION, and the write into it again. */
	struct lab3_msg first_region;
	int stale_tried;
	int stale_ret;

	char what[LAB3_ERR_LEN];	/* the line, if a mode has more to
					 * say than its name */
	int status;			/* exit status when the mode ran */
};

/* plural: "s" after a count of N things, unless N is 1. */
static const char *plural(unsigned n)
{
	return n == 1 ? "" : "s";
}

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

/* file_info: FILE_INFO for LENGTH bytes named e->name, with the SHA-256
 * of the file's first LENGTH bytes (of all of it if LENGTH is more). */
static void file_info(const struct evil *e, uint64_t length,
		      struct lab3_msg *msg)
{
	*msg = (struct lab3_msg){ .type = LAB3_MSG_FILE_INFO };
	msg->file_info.length = length;
	lab3_sha256(e->data, length < e->size ? length : e->size,
		    msg->file_info.sha256);
	snprintf(msg->file_info.name, sizeof(msg->file_info.name), "%s",
		 e->name);
}

/* send_info: send file_info()'s FILE_INFO for LENGTH bytes. */
static int send_info(struct evil *e, uint64_t length)
{
	struct lab3_msg msg;

	file_info(e, length, &msg);
	return send_msg(e, &msg, NULL, 0);
}

/* recv_type: receive the next message and require type WANT. */
static int recv_type(struct evil *e, enum lab3_msg_type want,
		     struct lab3_msg *msg)
{
	return evil_recv_type(&e->conn, want, msg, 0);
}

/* write_piece: RDMA WRITE the LEN bytes of the file at FROM to ADDR under
 * RKEY, and wait for the write to complete. */
static int write_piece(struct evil *e, uint64_t from, uint32_t len,
		       uint64_t addr, uint32_t rkey)
{
	int ret = lab3_wait_for_credit(&e->conn, 0);

	if (ret == 0)
		ret = lab3_post_write(&e->conn, e->mr, e->data + from, len,
				      addr, rkey);

	return ret ? ret : lab3_wait_sends(&e->conn,
				      lab3_ms_for_bytes(&e->conn, len));
}

/* write_bytes: RDMA WRITE the file's first LEN bytes to the last REGION,
 * at OFFSET into it, and wait for the write to complete. */
static int write_bytes(struct evil *e, uint64_t offset, uint32_t len)
{
	return write_piece(e, 0, len, e->region.region.addr + offset,
			   e->region.region.rkey);
}

/* write_chunk: RDMA WRITE the last REGION's chunk of the file into it, in
 * pieces no longer than the connection's largest message. */
static int write_chunk(struct evil *e)
{
	const uint64_t length = e->region.region.length;
	uint64_t done = 0;
	int ret = 0;

	while (ret == 0 && done < length) {
		uint32_t piece = length - done < e->conn.max_msg_size ?
				 (uint32_t)(length - done) :
				 e->conn.max_msg_size;

		ret = write_piece(e, e->region.region.offset + done, piece,
				  e->region.region.addr + done,
				  e->region.region.rkey);
		done += piece;
	}
	return ret;
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

/* honest_until_written: FILE_INFO, REGION and the WRITE of the whole
 * file into that one REGION, as a good sender would. */
static int honest_until_written(struct evil *e)
{
	int ret = send_info(e, e->size);

	if (ret == 0)
		ret = recv_type(e, LAB3_MSG_REGION, &e->region);
	if (ret == 0)
		ret = write_bytes(e, 0, (uint32_t)e->size);
	return ret;
}

/* honest_until_done: the same, then DONE. */
static int honest_until_done(struct evil *e)
{
	int ret = honest_until_written(e);

	return ret ? ret : send_done(e, e->size);
}

/* recv_chunk_region: the REGION of the chunk at file offset OFFSET: it
 * must name that offset and lie within the file, and only an empty file
 * may get an empty one. */
static int recv_chunk_region(struct evil *e, uint64_t offset)
{
	int ret = recv_type(e, LAB3_MSG_REGION, &e->region);
	uint64_t at = e->region.region.offset;
	uint64_t length = e->region.region.length;

	if (ret != 0)
		return ret;
	if (at == offset && length <= e->size - offset &&
	    (length > 0 || e->size == 0))
		return 0;
	snprintf(e->conn.err, sizeof(e->conn.err), "REGION of %llu bytes at "
		 "offset %llu, expected offset %llu of %llu bytes",
		 (unsigned long long)length, (unsigned long long)at,
		 (unsigned long long)offset, (unsigned long long)e->size);
	return -EPROTO;
}

/* send_file: steps 1 to 4 of an honest sender, with INFO as FILE_INFO:
 * for each REGION, in file order, its chunk's WRITEs and DONE, until the
 * whole file is written; then the VERDICT into *VERDICT.  BEFORE, if not
 * NULL, runs on each REGION before its WRITEs; its non-zero return stops
 * the run there. */
static int send_file(struct evil *e, const struct lab3_msg *info,
		     int (*before)(struct evil *e), struct lab3_msg *verdict)
{
	uint64_t offset = 0;
	int ret = send_msg(e, info, NULL, 0);

	for (;;) {
		if (ret == 0)
			ret = recv_chunk_region(e, offset);
		if (ret == 0 && before != NULL)
			ret = before(e);
		if (ret == 0)
			ret = write_chunk(e);
		if (ret == 0)
			ret = send_done(e, e->region.region.length);
		if (ret != 0)
			return ret;
		e->chunks++;
		offset += e->region.region.length;
		if (offset == e->size)
			return recv_type(e, LAB3_MSG_VERDICT, verdict);
	}
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
	int ret = send_info(e, e->size / 2);

	if (ret == 0)
		ret = recv_type(e, LAB3_MSG_REGION, &e->region);
	if (ret == 0)
		ret = write_bytes(e, 0, (uint32_t)e->size);
	return ret;
}

/* A WRITE into the region after DONE. */
static int write_after_done(struct evil *e)
{
	int ret = honest_until_done(e);

	return ret ? ret : write_bytes(e, 0, (uint32_t)e->size);
}

/* DONE twice. */
static int done_twice(struct evil *e)
{
	int ret = honest_until_done(e);

	return ret ? ret : send_done(e, e->size);
}

/* The ID before the verdict came: right after the WRITE, where DONE
 * belongs.  (An ID sent right after DONE could arrive after the verdict
 * left the receiver, which no receiver can tell from an honest sender.) */
static int id_before_verdict(struct evil *e)
{
	int ret = honest_until_written(e);

	return ret ? ret : send_id(e, e->id, strlen(e->id));
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
	int ret = send_info(e, e->size);

	if (ret == 0)
		ret = recv_type(e, LAB3_MSG_REGION, &e->region);
	return ret ? ret : write_bytes(e, 0, (uint32_t)e->size / 2);
}

/* The chunk's WRITEs, then no DONE, and wait: the receiver's -t must end
 * the session and say so (its ERROR names the DONE it waited for). */
static int no_done(struct evil *e)
{
	struct lab3_msg msg;
	int ret = send_info(e, e->size);

	if (ret == 0)
		ret = recv_type(e, LAB3_MSG_REGION, &e->region);
	if (ret == 0)
		ret = write_bytes(e, 0, (uint32_t)e->size);
	return ret ? ret : lab3_recv_msg(&e->conn, &msg, 120 * 1000);
}

/* wrong_wr_id: the chunk's WRITE with a wr_id that names a receive,
 * posted as a student's sender might; then wait for a message, which
 * polls the completion. */
static int wrong_wr_id(struct evil *e)
{
	struct lab3_msg msg;
	struct ibv_send_wr *bad_wr;
	struct ibv_sge sge;
	struct ibv_send_wr wr = {
		.wr_id = 0,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
	};
	int ret = send_info(e, e->size);

	if (ret == 0)
		ret = recv_type(e, LAB3_MSG_REGION, &e->region);
	if (ret != 0)
		return ret;
	sge = (struct ibv_sge){
		.addr = (uintptr_t)e->data,
		.length = (uint32_t)e->region.region.length,
		.lkey = e->mr->lkey,
	};
	wr.wr.rdma.remote_addr = e->region.region.addr;
	wr.wr.rdma.rkey = e->region.region.rkey;
	ret = ibv_post_send(e->conn.qp, &wr, &bad_wr);
	if (ret != 0) {
		snprintf(e->conn.err, sizeof(e->conn.err),
			 "ibv_post_send: %s", strerror(ret));
		return -ret;
	}
	ret = lab3_recv_msg(&e->conn, &msg, 10 * 1000);
	snprintf(e->what, sizeof(e->what), "wrong-wr-id: %s",
		 ret == -EINVAL ? "its own completion handling stopped it" :
		 "its own completion handling let it through");
	e->status = ret == -EINVAL ? 0 : EVIL_EXIT_LET_THROUGH;
	return 0;
}

/* Gone after each step. */
static int gone_after_connect(struct evil *e)
{
	(void)e;
	return 0;
}

static int gone_after_info(struct evil *e)
{
	return send_info(e, e->size);
}

static int gone_after_region(struct evil *e)
{
	int ret = send_info(e, e->size);

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

/* A wrong hash: the whole file, honestly, under a SHA-256 whose first
 * byte is flipped.  The receiver must answer bad. */
static int bad_hash(struct evil *e)
{
	struct lab3_msg info, verdict;
	char hex[2 * LAB3_SHA256_LEN + 1];
	int good, ret;

	file_info(e, e->size, &info);
	info.file_info.sha256[0] ^= 0xff;
	ret = send_file(e, &info, NULL, &verdict);
	if (ret != 0)
		return ret;
	good = verdict.verdict.verdict == LAB3_VERDICT_GOOD;
	lab3_hex(info.file_info.sha256, LAB3_SHA256_LEN, hex);
	snprintf(e->what, sizeof(e->what), "bad-hash: %llu bytes in %u "
		 "chunk%s, claimed sha256 %s, verdict %s",
		 (unsigned long long)e->size, e->chunks, plural(e->chunks),
		 hex,
		 good ? "good: the receiver accepted a wrong hash" : "bad");
	e->status = good ? EVIL_EXIT_LET_THROUGH : 0;
	return 0;
}

/* fake_file: FILE_INFO for SIZE bytes of zeros with their SHA-256 (what
 * a new window holds where nobody wrote), then for each REGION, WRITE
 * (may be NULL) and a DONE.  The line says whether the receiver stopped
 * it (its ERROR: the test reads why from the summary line) or gave a
 * verdict: a good one for bytes never written is a let-through. */
static int fake_file(struct evil *e, const char *mode,
		     int (*write)(struct evil *e))
{
	struct lab3_msg info, verdict;
	uint64_t offset = 0;
	int good, ret;

	memset(e->data, 0, e->data_len);
	file_info(e, e->size, &info);
	ret = send_msg(e, &info, NULL, 0);
	while (ret == 0 && offset < e->size) {
		ret = recv_chunk_region(e, offset);
		if (ret == 0 && write != NULL)
			ret = write(e);
		if (ret == 0) {
			/* A DONE counts once posted: the receiver's ERROR
			 * may come before the DONE's own completion. */
			unsigned posted = e->conn.next_send;

			ret = send_done(e, e->region.region.length);
			if (e->conn.next_send != posted)
				e->chunks++;
		}
		offset += e->region.region.length;
	}
	if (ret == 0)
		ret = recv_type(e, LAB3_MSG_VERDICT, &verdict);
	if (ret == -EREMOTEIO) {	/* the receiver's ERROR */
		snprintf(e->what, sizeof(e->what), "%s: the receiver stopped "
			 "it after %u DONE%s", mode, e->chunks,
			 plural(e->chunks));
		return 0;
	}
	if (ret != 0)
		return ret;
	good = verdict.verdict.verdict == LAB3_VERDICT_GOOD;
	snprintf(e->what, sizeof(e->what), "%s: verdict %s after %u DONE%s",
		 mode, good ? "good" : "bad", e->chunks, plural(e->chunks));
	e->status = good ? EVIL_EXIT_LET_THROUGH : 0;
	return 0;
}

/* A DONE for each chunk, never a WRITE. */
static int unwritten(struct evil *e)
{
	return fake_file(e, "unwritten", NULL);
}

/* write_sparse: sparse's WRITEs: SPARSE_LEN bytes (of zeros) at the start
 * of each SPARSE_STRIDE bytes of the last REGION's chunk, where a
 * receiver that put its canaries at fixed places would have them. */
static int write_sparse(struct evil *e)
{
	const uint64_t length = e->region.region.length;
	int ret = 0;

	for (uint64_t at = 0; ret == 0 && at < length; at += SPARSE_STRIDE)
		ret = write_bytes(e, at, length - at < SPARSE_LEN ?
				  (uint32_t)(length - at) : SPARSE_LEN);
	return ret;
}

/* A store filler's cheap file: zeros, of which only SPARSE_LEN bytes in
 * each SPARSE_STRIDE are written. */
static int sparse(struct evil *e)
{
	return fake_file(e, "sparse", write_sparse);
}

/* await_refusal: after a WRITE that completed, 0 if the connection is
 * still up STALE_WAIT_MS later, else the error that ended it.  Over
 * InfiniBand and RoCE a WRITE completes when the peer acknowledges it, so
 * a refused one fails itself ("remote access error").  Over iWARP it
 * completes as soon as it is sent: the peer's refusal comes after, as a
 * TERMINATE that breaks the connection. */
static int await_refusal(struct evil *e)
{
	struct lab3_msg msg;
	int ret = lab3_recv_msg(&e->conn, &msg, STALE_WAIT_MS);

	if (ret == -ETIMEDOUT) {
		e->conn.err[0] = '\0';	/* silence is the answer */
		return 0;
	}
	return ret != 0 ? ret : -EPROTO;
}

/* write_stale: stale-write's step before each chunk.  Keep the first
 * REGION; when a later one is for the same window (same addr, a new
 * rkey), RDMA WRITE 1 byte there under the first REGION's rkey, which the
 * receiver took back, wait for it (and for a refusal after it:
 * await_refusal()), and stop the run whatever came of it. */
static int write_stale(struct evil *e)
{
	const struct lab3_msg *first = &e->first_region;

	if (first->type != LAB3_MSG_REGION) {
		e->first_region = e->region;
		return 0;
	}
	if (e->region.region.addr != first->region.addr)
		return 0;
	e->stale_tried = 1;
	e->stale_ret = write_piece(e, 0, 1, first->region.addr,
				   first->region.rkey);
	if (e->stale_ret == 0)
		e->stale_ret = await_refusal(e);
	return -ECANCELED;
}

/* pause_before_done: dribble's pause before each chunk. */
static int pause_before_done(struct evil *e)
{
	struct timespec ts = { .tv_sec = DRIBBLE_PAUSE_S };

	(void)e;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	return 0;
}

/* A slow sender: the whole file, honestly, but DRIBBLE_PAUSE_S seconds
 * after each chunk's WRITEs before its DONE (send_file()'s BEFORE runs
 * before the WRITEs, which land at once anyway: the pause before the
 * WRITEs is as slow).  The receiver must end it before it is done. */
static int dribble(struct evil *e)
{
	struct lab3_msg info, verdict;
	int ret;

	file_info(e, e->size, &info);
	ret = send_file(e, &info, pause_before_done, &verdict);
	if (ret != 0)
		return ret;
	snprintf(e->what, sizeof(e->what), "dribble: the whole file went "
		 "through, %u chunks, %d s apart", e->chunks,
		 DRIBBLE_PAUSE_S);
	e->status = EVIL_EXIT_LET_THROUGH;
	return 0;
}

/* A write into a window the receiver took back: the whole file, honestly,
 * but with write_stale() before each chunk.  The receiver's device must
 * refuse that write. */
static int stale_write(struct evil *e)
{
	struct lab3_msg info, verdict;
	int ret;

	file_info(e, e->size, &info);
	ret = send_file(e, &info, write_stale, &verdict);
	if (!e->stale_tried) {
		if (ret != 0)
			return ret;
		snprintf(e->what, sizeof(e->what), "stale-write: no window "
			 "came round again in %u chunk%s", e->chunks,
			 plural(e->chunks));
		e->status = 2;
		return 0;
	}
	if (e->stale_ret == 0) {
		snprintf(e->what, sizeof(e->what), "stale-write: the receiver "
			 "accepted a write into a window it had taken back");
		e->status = EVIL_EXIT_LET_THROUGH;
	} else {
		snprintf(e->what, sizeof(e->what), "stale-write: the write "
			 "under the old rkey failed");
	}
	return 0;
}

/* ---- starve: a sender that takes none of the receiver's messages ----
 *
 * The common layer posts every receive a connection may need and asks the
 * receiver for a finite RNR retry count, as every sender should.  starve
 * does neither, so it builds its connection by hand, with librdmacm's
 * synchronous calls (rdma_create_ep(), rdma_connect()).
 */

/* A connection of starve's own: one receive buffer, then send buffers. */
struct starve {
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	union lab3_wire_msg msgs[1 + STARVE_SENDS];
	unsigned sent;
};

/* starve_wc: the next completion on CQ, whose completion channel is
 * CHANNEL, into *WC, within STARVE_WAIT_MS: 0, or a negative errno. */
static int starve_wc(struct ibv_cq *cq, struct ibv_comp_channel *channel,
		     struct ibv_wc *wc)
{
	long long deadline = lab3_now_ms() + STARVE_WAIT_MS;

	for (;;) {
		struct pollfd pfd = { .fd = channel->fd, .events = POLLIN };
		long long left = deadline - lab3_now_ms();
		struct ibv_cq *ev_cq;
		void *ev_ctx;
		int n = ibv_poll_cq(cq, 1, wc);

		if (n == 0 && ibv_req_notify_cq(cq, 0) == 0)
			n = ibv_poll_cq(cq, 1, wc);	/* one that slipped in */
		if (n != 0)
			return n < 0 ? -EIO : 0;
		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return -ETIMEDOUT;
		if (ibv_get_cq_event(channel, &ev_cq, &ev_ctx) == 0)
			ibv_ack_cq_events(ev_cq, 1);
	}
}

/* starve_connect: connect to the receiver asking for endless RNR retries
 * (rnr_retry_count 7), with one receive posted, on buffer 0. */
static int starve_connect(struct evil *e, struct starve *st)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = STARVE_SENDS, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
	};
	struct rdma_conn_param param = { .retry_count = 7,
					 .rnr_retry_count = 7 };
	int ret;

	if (rdma_getaddrinfo(e->host, e->port, &hints, &res) != 0)
		return -EHOSTUNREACH;
	ret = rdma_create_ep(&st->id, res, NULL, &attr);
	rdma_freeaddrinfo(res);
	if (ret != 0)
		return -errno;
	st->mr = rdma_reg_msgs(st->id, st->msgs, sizeof(st->msgs));
	if (st->mr == NULL ||
	    rdma_post_recv(st->id, NULL, &st->msgs[0], sizeof(st->msgs[0]),
			   st->mr) != 0 ||
	    rdma_connect(st->id, &param) != 0)
		return -errno;
	return 0;
}

/* starve_send: SEND MSG and wait for it to complete. */
static int starve_send(struct starve *st, const struct lab3_msg *msg)
{
	union lab3_wire_msg *buf = &st->msgs[1 + st->sent++ % STARVE_SENDS];
	size_t len = lab3_encode(msg, buf);
	struct ibv_wc wc;
	int ret;

	if (rdma_post_send(st->id, NULL, buf, len, st->mr, 0) != 0)
		return -errno;
	ret = starve_wc(st->id->send_cq, st->id->send_cq_channel, &wc);
	return ret != 0 ? ret : wc.status == IBV_WC_SUCCESS ? 0 : -EIO;
}

/* starve_region: the first REGION, into the one receive buffer. */
static int starve_region(struct starve *st, struct lab3_msg *msg)
{
	char why[LAB3_ERR_LEN];
	struct ibv_wc wc;
	int ret = starve_wc(st->id->recv_cq, st->id->recv_cq_channel, &wc);

	if (ret != 0 || wc.status != IBV_WC_SUCCESS)
		return ret != 0 ? ret : -EIO;
	if (lab3_decode(&st->msgs[0], wc.byte_len, msg, why, sizeof(why)) != 0 ||
	    msg->type != LAB3_MSG_REGION)
		return -EPROTO;
	return 0;
}

/* starve_end: wait up to STARVE_END_S for the receiver to end the
 * connection (an rdma_cm event on it); 1 when it did, 0 if not. */
static int starve_end(struct starve *st)
{
	struct pollfd pfd = { .fd = st->id->channel->fd, .events = POLLIN };
	struct rdma_cm_event *event;

	if (poll(&pfd, 1, STARVE_END_S * 1000) <= 0 ||
	    rdma_get_cm_event(st->id->channel, &event) != 0)
		return 0;
	rdma_ack_cm_event(event);
	return 1;
}

/* starve_probe: learn the receiver's window size, on the connection
 * main() made: FILE_INFO of a file as long as the largest window, whose
 * first REGION is then one whole window; then hang up. */
static int starve_probe(struct evil *e, uint64_t *window)
{
	/* (Not a window of the largest size: a receiver with -o refuses a
	 * file its disk has no room for, and the tests' windows are far
	 * smaller.) */
	int ret = send_info(e, STARVE_PROBE_BYTES);

	if (ret == 0)
		ret = recv_type(e, LAB3_MSG_REGION, &e->region);
	if (ret != 0)
		return ret;
	*window = e->region.region.length;
	lab3_send_error(&e->conn, LAB3_ERR_INTERNAL, "a probe, nothing more");
	lab3_disconnect(&e->conn);
	return *window > 0 ? 0 : -EPROTO;
}

/* starve_dones: a DONE for each of the NCHUNKS chunks of WINDOW bytes,
 * STARVE_PACE_MS apart, with nothing written; the number sent. */
static unsigned starve_dones(struct starve *st, uint64_t window,
			     unsigned nchunks)
{
	struct timespec pace = { .tv_nsec = STARVE_PACE_MS * 1000000L };
	struct lab3_msg done = { .type = LAB3_MSG_DONE };
	unsigned k;

	for (k = 0; k < nchunks; k++) {
		nanosleep(&pace, NULL);
		done.done.offset = k * window;
		done.done.bytes = window;
		if (starve_send(st, &done) != 0)
			break;
	}
	return k;
}

/* The attack: see the table at the top.  FILE_INFO announces exactly
 * LAB3_SEND_DEPTH + 1 chunks: with its first REGION taken and every other
 * message left waiting, the receiver has a place in its send queue for
 * each REGION after the first, and none for the VERDICT. */
static int starve(struct evil *e)
{
	const unsigned nchunks = LAB3_SEND_DEPTH + 1;
	struct starve st = { 0 };
	struct lab3_msg info, region;
	uint64_t window;
	long long start;
	const char *step = "the probe";
	unsigned dones;
	int ended, ret;

	alarm(STARVE_MAX_S);	/* the default action ends the program */
	ret = starve_probe(e, &window);
	if (ret == 0) {
		e->conn.err[0] = '\0';		/* the probe's hang-up */
		step = "connecting";
		ret = starve_connect(e, &st);
	}
	if (ret == 0) {
		step = "FILE_INFO";
		file_info(e, window * nchunks, &info);
		ret = starve_send(&st, &info);
	}
	if (ret == 0) {
		step = "the first REGION";
		ret = starve_region(&st, &region);
	}
	if (ret == 0) {
		start = lab3_now_ms();
		dones = starve_dones(&st, window, nchunks);
		ended = starve_end(&st);
		snprintf(e->what, sizeof(e->what), "starve: window %llu bytes, "
			 "%u chunks, %u DONEs without a write, one receive "
			 "posted: %s after %.1f s",
			 (unsigned long long)window, nchunks, dones,
			 ended ? "the receiver ended the session" :
			 "the receiver still held the session",
			 (double)(lab3_now_ms() - start) / 1000);
		e->status = ended ? 0 : EVIL_EXIT_LET_THROUGH;
	} else if (e->conn.err[0] == '\0') {
		snprintf(e->conn.err, sizeof(e->conn.err), "starve: %s: %s",
			 step, strerror(-ret));
	}
	if (st.mr != NULL)
		rdma_dereg_mr(st.mr);
	if (st.id != NULL)
		rdma_destroy_ep(st.id);
	return ret;
}

static const struct evil_mode modes[] = {
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
	{ "no-done", no_done },
	{ "gone-after-connect", gone_after_connect },
	{ "gone-after-info", gone_after_info },
	{ "gone-after-region", gone_after_region },
	{ "gone-after-done", gone_after_done },
	{ "gone-after-verdict", gone_after_verdict },
	{ "bad-hash", bad_hash },
	{ "stale-write", stale_write },
	{ "unwritten", unwritten },
	{ "sparse", sparse },
	{ "wrong-wr-id", wrong_wr_id },
	{ "dribble", dribble },
	{ "starve", starve },
};
#define NMODES (sizeof(modes) / sizeof(modes[0]))

/* usage: the synopsis and the modes, on stderr; returns exit status 1. */
static int usage(void)
{
	return evil_usage("evil-sender [-s SIZE] [-n NAME] [-i ID] MODE HOST PORT", modes, NMODES);
}

/* parse_args: the options into E, and the index of the mode that
 * argv[optind] names into *MODE; 0, or -1 for a usage error. */
static int parse_args(struct evil *e, int argc, char **argv, size_t *mode)
{
	int opt;

	while ((opt = getopt(argc, argv, "+s:n:i:")) != -1) {
		switch (opt) {
		case 's':
			if (lab3_parse_size(optarg, &e->size) != 0 ||
			    e->size > EVIL_MAX_BYTES) {
				fprintf(stderr, "evil-sender: -s %s: not a "
					"size from 0 to 1G\n", optarg);
				return -1;
			}
			break;
		case 'n': e->name = optarg; break;
		case 'i': e->id = optarg; break;
		default: return -1;
		}
	}
	if (strlen(e->name) > LAB3_NAME_MAX || strlen(e->id) > LAB3_ID_MAX) {
		fprintf(stderr, "evil-sender: NAME or ID too long\n");
		return -1;
	}
	if (argc - optind != 3)
		return -1;
	return evil_find_mode(argv[optind], modes, NMODES, mode);
}

/* make_file: the file in memory: a pattern of period 251, a prime, so
 * that a chunk in a wrong place changes the hash; at least EVIL_BYTES of
 * it, for the modes that write that much whatever the file's size. */
static int make_file(struct evil *e)
{
	e->data_len = e->size > EVIL_BYTES ? e->size : EVIL_BYTES;
	e->data = malloc(e->data_len);
	if (e->data == NULL) {
		fprintf(stderr, "evil-sender: cannot allocate %zu bytes\n",
			e->data_len);
		return -1;
	}
	for (size_t i = 0; i < e->data_len; i++)
		e->data[i] = (uint8_t)(0xe5 ^ i % 251);
	return 0;
}

/* main: connect, misbehave, report; the receiver's reaction is the test's
 * to judge, but for what bad-hash and stale-write check themselves. */
int main(int argc, char **argv)
{
	struct evil e = {
		.conn = { .prog = "evil-sender", .timeout_ms = 10000 },
		.size = EVIL_BYTES,
		.name = "evil.bin",
		.id = EVIL_ID,
	};
	uint64_t memlock;
	size_t mode;
	int ret;

	if (parse_args(&e, argc, argv, &mode) != 0)
		return usage();
	e.host = argv[optind + 1];
	e.port = argv[optind + 2];
	if (make_file(&e) != 0)
		return 2;
	(void)lab3_memlock_limit(&memlock);	/* root: lift it, for siw */
	if (lab3_resolve(&e.conn, argv[optind + 1], argv[optind + 2]) != 0 ||
	    lab3_connect(&e.conn) != 0 ||
	    lab3_reg_mr(&e.conn, e.data, e.data_len, 0, &e.mr) != 0) {
		ret = say("cannot connect", &e, 2);
		goto out_destroy;
	}
	ret = modes[mode].run(&e);
	if (ret != 0)
		ret = say("the receiver stopped it", &e, 0);
	else
		ret = say(e.what[0] ? e.what : modes[mode].name, &e, e.status);
out_destroy:
	lab3_disconnect(&e.conn);
	if (e.mr != NULL)
		ibv_dereg_mr(e.mr);
	lab3_conn_destroy(&e.conn);
	free(e.data);
	return ret;
}
