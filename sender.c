/* SPDX-License-Identifier: MIT */
/*
 * sender.c - Lab 3's sender: send one file into a receiver's memory with
 * RDMA WRITE, and trade a student ID for the secret key that proves it.
 *
 * run_lab() takes the lab's sequence (protocol.h) one state after the
 * other, one function each; the rules (lab3_tx_* in rules.h) name the
 * state and judge every message the receiver sends:
 *
 *   CONNECT         resolve the receiver's address and route, connect
 *   SEND_FILE_INFO  1. the file's length, SHA-256 and name
 *   RECV_REGION     2. a window of the receiver's: addr, length, rkey, and
 *                      the file offset of the chunk it is for
 *   WRITE_CHUNK     3. RDMA WRITE that chunk of the file into it ...
 *   SEND_DONE          ... then say DONE; steps 2 and 3 again while
 *                      the file has chunks left
 *   RECV_VERDICT    4. good, or bad (exit 5)
 *   SEND_ID         5. the student's ID
 *   RECV_KEY        6. the secret key, printed as "secret key: HEX"
 *
 * A file that fits in the receiver's window is one REGION, its WRITEs and
 * one DONE.  A larger one loops, and the loop never waits for its WRITEs
 * or DONEs to complete: it posts them and moves on to the next REGION,
 * which the receiver usually sent long before.  Their completions come
 * back whenever the sender waits anyway (see "The completion model" in
 * common.h), and reap() takes the ones that have: each finished WRITE
 * frees its slot of the staging ring, each finished DONE counts its chunk.
 * So the link stays busy while the receiver hashes and stores the
 * previous chunk.
 *
 * Every wait has one shape: take what is needed (a message, a credit, the
 * end of our sends); while it is not there, lab3_wait().  The file reads
 * top down as it runs: main(), run() (the file, the lab, teardown),
 * run_lab(), one function per state, then their helpers.  Any failure is
 * one line on stderr and an exit status of its kind (enum lab3_exit).
 * cli/sender_cli.c holds the command line, the pin budget, --wait, the
 * progress bar and the report (the key, the summary line, or --json).
 */

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "pieces.h"
#include "rules.h"
#include "sender_cli.h"

#define HASH_BLOCK (1u << 20)		/* bytes read at a time to hash */
#define ERROR_LINE_MAX 8192		/* bytes of the one-line error, at most */

struct sender {
	struct sender_options opt;	/* the command line (sender_cli.h) */

	/* The file: hashed, then read piece by piece for the RDMA WRITEs. */
	int fd;
	uint64_t size;
	int size_known;			/* size is known: a regular file */
	char name[LAB3_NAME_MAX + 1];
	uint8_t sha256[LAB3_SHA256_LEN];

	struct lab3_conn conn;

	/* The lab's state machine and its rules (rules.h): the state,
	 * the REGION being written, where the next one must start. */
	struct lab3_tx tx;

	/* The transfer: the WRITEs and DONEs in flight, and what has
	 * landed (pieces.h). */
	struct lab3_pieces pieces;
	uint32_t piece_max;		/* bytes in one piece, at most */

	struct sender_times times;	/* for the summary line, --json and
					 * the progress bar (sender_cli.h) */

	const char *verdict;		/* "good" or "bad" once it came */
	uint8_t key[LAB3_KEY_LEN];
	int has_key;
	const char *error_after_key;	/* the receiver's ERROR after it */
	enum lab3_exit exit_status;	/* why the run FAILED */
	char error[ERROR_LINE_MAX];	/* and the line that said so */
};

/* The run: the file, the lab's sequence over one connection, teardown. */
static void run(struct sender *s);
static int open_file(struct sender *s);
static int hash_file(struct sender *s);
static void run_lab(struct sender *s);
static int run_state(struct sender *s, int (*state)(struct sender *s));

/* The lab's states, one function each, in the lab's order; each returns
 * 0, or -1 after saying why the run failed. */
static int connect_to_receiver(struct sender *s);	/* CONNECT */
static int send_file_info(struct sender *s);		/* step 1 */
static int recv_region(struct sender *s);		/* step 2 */
static int write_chunk(struct sender *s);		/* step 3 */
static int send_done(struct sender *s);			/* step 3 */
static int recv_verdict(struct sender *s);		/* step 4 */
static int send_id(struct sender *s);			/* step 5 */
static int recv_key(struct sender *s);			/* step 6 */

/* The helpers, defined after the states that use them. */
static void init_conn(struct sender *s);
static int send_step(struct sender *s, const struct lab3_msg *msg);
static int wait_sends(struct sender *s);
static int receive(struct sender *s, struct lab3_msg *msg, uint64_t bytes);
static int fail(struct sender *s, enum lab3_exit status, const char *fmt,
		...)
	__attribute__((format(printf, 3, 4)));
static int fail_conn(struct sender *s, int ret);
static int protocol_error(struct sender *s, const char *why);
static void reap(struct sender *s);
static void show_progress(struct sender *s, int final);
static int check_file_size(struct sender *s);

/* ---- The run ---- */

/* main: the command line, the run, and its report: the key on stdout (or
 * with --json the JSON object, however the run ended); the exit status
 * says how it ended (enum lab3_exit). */
int main(int argc, char **argv)
{
	struct sender s = {
		.fd = -1,
		.opt.timeout_s = LAB3_DEFAULT_TIMEOUT,
		.times.start = now_s(),
	};

	if (sender_parse_args(&s.opt, argc, argv) != 0)
		return LAB3_EXIT_USAGE;
	sender_pin_budget(LAB3_RING_SLOTS, &s.piece_max);
	run(&s);
	sender_report(&s.opt, &s.times, &(struct sender_outcome) {
		.verdict = s.verdict, .key = s.has_key ? s.key : NULL,
		.size = s.size, .size_known = s.size_known,
		.error = s.error, .error_after_key = s.error_after_key,
		.status = s.exit_status });
	return s.exit_status;
}

/* run: the file (opened and hashed before any connection, so that
 * a missing or unreadable one is said at once), the lab over one
 * connection, and teardown in the reverse order of setup. */
static void run(struct sender *s)
{
	if (open_file(s) == 0)
		run_lab(s);
	show_progress(s, 1);
	lab3_disconnect(&s->conn);
	lab3_release_pieces(&s->pieces);
	lab3_conn_destroy(&s->conn);
	if (s->fd >= 0)
		close(s->fd);
}

/* ---- Before connecting: the file ---- */

/* open_file: open and hash the file, and take its base name.  The WRITEs
 * read it again later, a piece at a time (pieces.h). */
static int open_file(struct sender *s)
{
	const char *base = strrchr(s->opt.path, '/');
	struct stat st;
	char why[128];

	s->fd = open(s->opt.path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0 || fstat(s->fd, &st) != 0) {
		fail(s, LAB3_EXIT_LOCAL, "%s: %s", s->opt.path,
		     strerror(errno));
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		fail(s, LAB3_EXIT_LOCAL, "%s: is a directory", s->opt.path);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		fail(s, LAB3_EXIT_LOCAL, "%s: not a regular file", s->opt.path);
		return -1;
	}
	s->size = (uint64_t)st.st_size;
	s->size_known = 1;
	if (hash_file(s) != 0)
		return -1;
	s->times.hashed = now_s();

	lab3_pieces_init(&s->pieces, s->fd, s->size, s->piece_max);
	posix_fadvise(s->fd, 0, 0, POSIX_FADV_SEQUENTIAL);

	/* Send the base name only if the receiver would accept it. */
	base = base ? base + 1 : s->opt.path;
	if (lab3_check_name(base, strlen(base), why, sizeof(why)) == 0)
		snprintf(s->name, sizeof(s->name), "%s", base);
	return 0;
}

/* hash_file: SHA-256 of the file in one streaming pass of read()s, the
 * hash that step 1 sends.  A file cut short meanwhile is an error. */
static int hash_file(struct sender *s)
{
	/* SOLUTION the file hash: SHA-256 of the whole file into s->sha256,
	 * reading s->fd with read() in blocks of HASH_BLOCK and feeding
	 * lab3_sha256_begin/add/end (common.h), the block malloc()ed.  A read
	 * error is fail(s, LAB3_EXIT_LOCAL, ...); so is a total of bytes
	 * read other than s->size (the file changed size meanwhile). */
	struct lab3_sha256 h;
	uint64_t total = 0;
	uint8_t *buf;
	ssize_t n;

	buf = malloc(HASH_BLOCK);
	if (buf == NULL || lab3_sha256_begin(&h) != 0) {
		free(buf);
		fail(s, LAB3_EXIT_LOCAL, "%s: out of memory", s->opt.path);
		return -1;
	}
	while ((n = read(s->fd, buf, HASH_BLOCK)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || lab3_sha256_add(&h, buf, (size_t)n) != 0) {
			fail(s, LAB3_EXIT_LOCAL, "%s: %s", s->opt.path,
			     n < 0 ? strerror(errno) : "SHA-256 failed");
			lab3_sha256_free(&h);
			free(buf);
			return -1;
		}
		total += (uint64_t)n;
	}
	free(buf);
	if (lab3_sha256_end(&h, s->sha256) != 0 || total != s->size) {
		fail(s, LAB3_EXIT_LOCAL, "%s: changed size while being read",
		     s->opt.path);
		return -1;
	}
	return 0;
	/* END SOLUTION */
}

/* ---- The lab's sequence ---- */

/* run_lab: the lab's sequence, one state after the other: connect; step
 * 1, FILE_INFO; then for each chunk of the file, step 2, its REGION, and
 * step 3, its RDMA WRITEs and its DONE; then steps 4 to 6: the VERDICT,
 * the ID and the KEY.  Each returns 0, or -1 after saying why the run
 * failed (s->exit_status); the rules (lab3_tx_* in rules.h) judge every
 * message the receiver sends and keep the REGION being written. */
static void run_lab(struct sender *s)
{
	lab3_tx_begin(&s->tx, s->size);
	if (run_state(s, connect_to_receiver) != 0 ||
	    run_state(s, send_file_info) != 0)
		return;
	do {
		if (run_state(s, recv_region) != 0 ||
		    run_state(s, write_chunk) != 0 ||
		    run_state(s, send_done) != 0)
			return;
	} while (s->tx.next_offset < s->size);
	if (run_state(s, recv_verdict) != 0)
		return;
	if (s->tx.state != LAB3_TX_SEND_ID) {	/* a bad verdict, and on */
		fail(s, LAB3_EXIT_PROTOCOL, "the run ended in state %s, yet "
		     "recv_verdict() returned 0 (after a bad verdict, it must "
		     "fail the run: exit %d)", lab3_tx_state_name(s->tx.state),
		     LAB3_EXIT_BAD_VERDICT);
		return;
	}
	if (run_state(s, send_id) != 0 || run_state(s, recv_key) != 0)
		return;
	s->exit_status = LAB3_EXIT_OK;
	if (s->conn.error == -EREMOTEIO)	/* the key came all the same */
		s->error_after_key = s->conn.err;
}

/* run_state: run the function of one state: with -v, say which state the
 * rules are in; and name what its waits are for, which a timeout's
 * message says. */
static int run_state(struct sender *s, int (*state)(struct sender *s))
{
	if (s->opt.verbose)
		fprintf(stderr, "sender: state %s\n",
			lab3_tx_state_name(s->tx.state));
	lab3_tx_awaiting(&s->tx, s->conn.awaiting, sizeof(s->conn.awaiting));
	return state(s);
}

/* ---- The states, in the lab's order ---- */

/* connect_to_receiver: CONNECT, before step 1, in rdma_cm's order:
 * resolve the receiver's address and a route to it, build the connection
 * on that device, and connect.  A receiver busy with other sessions
 * refuses at once (exit 4); with --wait, the sender asks again after a
 * pause (sender_wait_for_turn()) until its wait is over. */
static int connect_to_receiver(struct sender *s)
{
	double give_up_at = now_s() + s->opt.wait_s;
	int ret, tries = 0;

	do {
		init_conn(s);
		ret = lab3_resolve(&s->conn, s->opt.host, s->opt.port);
		if (ret == 0)
			ret = lab3_connect(&s->conn);
	} while (ret != 0 && s->conn.refused_busy &&
		 sender_wait_for_turn(&s->opt, s->conn.err, give_up_at,
				      ++tries) == 0);

	/* Out of memory or locked memory is a local error. */
	if (ret == -ENOMEM || ret == -EPERM || ret == -EAGAIN)
		return fail(s, LAB3_EXIT_LOCAL, "connect to %s: %s",
			    s->opt.where, s->conn.err);
	if (s->conn.refused)
		return fail(s, LAB3_EXIT_REFUSED, "connect to %s: %s%s",
			    s->opt.where, s->conn.err, s->conn.refused_busy &&
			    s->opt.wait_s > 0 ?
			    " (still, at the end of --wait)" : "");
	if (ret != 0)
		return fail(s, LAB3_EXIT_CONNECTION, "connect to %s: %s",
			    s->opt.where, s->conn.err);
	lab3_tx_advance(&s->tx);
	return 0;
}

/* send_file_info: step 1, FILE_INFO: the file's length, SHA-256 and name. */
static int send_file_info(struct sender *s)
{
	/* SOLUTION step 1: Fill a struct lab3_msg of type LAB3_MSG_FILE_INFO
	 * (protocol.h) with s->size, s->sha256 and s->name, and send it with
	 * send_step(), which moves the state machine on, or says why not and
	 * returns -1. */
	struct lab3_msg msg = { .type = LAB3_MSG_FILE_INFO };

	msg.file_info.length = s->size;
	memcpy(msg.file_info.sha256, s->sha256, LAB3_SHA256_LEN);
	snprintf(msg.file_info.name, sizeof(msg.file_info.name), "%s",
		 s->name);
	return send_step(s, &msg);
	/* END SOLUTION */
}

/* recv_region: step 2, REGION: a window for the next chunk of the file.
 * The rules check that it starts where the last chunk ended and stays
 * within the file. */
static int recv_region(struct sender *s)
{
	/* SOLUTION step 2: Wait for the REGION with receive(), allowing for
	 * the bytes of the last REGION, s->tx.region.length (0 before the
	 * first).  The rules check it and keep it in s->tx.region; receive()
	 * says why not and returns -1. */
	const struct lab3_region *r = &s->tx.region;
	struct lab3_msg msg;

	/* The receiver sends it once it has stored the chunk that was in
	 * that window: allow for one chunk's worth of its time. */
	if (receive(s, &msg, r->length) != 0)
		return -1;
	if (s->opt.verbose)
		fprintf(stderr, "sender: region addr=0x%llx length=%llu "
			"rkey=0x%x offset=%llu\n", (unsigned long long)r->addr,
			(unsigned long long)r->length, r->rkey,
			(unsigned long long)r->offset);
	return 0;
	/* END SOLUTION */
}

/* write_chunk: step 3, RDMA WRITE: post WRITEs of the chunk into the
 * window, in pieces no larger than the device's largest message nor
 * piece_max, without waiting for them.  Each piece is read into slots
 * of memory registered once (read access only: the NIC reads it, nobody
 * writes it), a WRITE a slot, each slot free again when its WRITE
 * completes (pieces.h). */
static int write_chunk(struct sender *s)
{
	/* SOLUTION step 3, the WRITEs: RDMA-WRITE the chunk s->tx.region names (its
	 * length bytes of the file from its offset, under its rkey) in
	 * pieces of at most min(s->conn.max_msg_size, s->piece_max) bytes:
	 * the piece that starts WRITTEN bytes into the chunk goes from file
	 * offset offset + WRITTEN to the remote address addr + WRITTEN (not
	 * to addr each time: only a chunk of many pieces shows that
	 * mistake), under the chunk's rkey.  Post each with
	 * lab3_write_piece(&s->pieces, &s->conn, ...) (pieces.h); do not
	 * wait for them.  First check_file_size() if the chunk is not empty.
	 * An error: fail_conn() (a piece that cannot be read or registered
	 * too: it knows).  Then lab3_tx_advance(&s->tx). */
	const struct lab3_region *r = &s->tx.region;
	uint64_t offset = r->offset, length = r->length;
	uint32_t piece = s->conn.max_msg_size < s->piece_max ?
			 s->conn.max_msg_size : s->piece_max;
	int ret;

	if (length > 0 && check_file_size(s) != 0)
		return -1;
	for (uint64_t written = 0; written < length; ) {
		uint32_t len = length - written < piece ?
			       (uint32_t)(length - written) : piece;

		ret = lab3_write_piece(&s->pieces, &s->conn, offset + written,
				       len, r->addr + written, r->rkey);
		if (ret != 0)
			return fail_conn(s, ret);
		written += len;
	}
	lab3_tx_advance(&s->tx);
	return 0;
	/* END SOLUTION */
}

/* send_done: step 3, DONE: announce the chunk just written.  It follows
 * the chunk's WRITEs on the same queue pair, so it lands after them; its
 * completion counts the chunk as landed (lab3_done_posted()).  Then the
 * rules move on: to the next REGION, or after the last chunk to the
 * verdict. */
static int send_done(struct sender *s)
{
	/* SOLUTION step 3, the DONE: Post a DONE for the chunk just written with
	 * lab3_post_msg() (common.h), without waiting for it to complete:
	 * it follows the WRITEs on the same queue pair.  While the WRITEs
	 * fill the send queue it says -EAGAIN: then lab3_wait(&s->conn, 0),
	 * reap(s) (what completed meanwhile) and try again.  Another error:
	 * fail_conn().  Then lab3_done_posted(&s->pieces, &s->conn, offset,
	 * bytes) (pieces.h: the chunk lands when its DONE completes; its
	 * error: fail_conn()), and lab3_tx_advance(). */
	struct lab3_msg msg = { .type = LAB3_MSG_DONE };
	int ret;

	msg.done.offset = s->tx.region.offset;
	msg.done.bytes = s->tx.region.length;
	while ((ret = lab3_post_msg(&s->conn, &msg)) == -EAGAIN) {
		lab3_wait(&s->conn, 0);
		reap(s);
	}
	if (ret == 0)
		ret = lab3_done_posted(&s->pieces, &s->conn, msg.done.offset,
				       msg.done.bytes);
	if (ret != 0)
		return fail_conn(s, ret);
	lab3_tx_advance(&s->tx);
	return 0;
	/* END SOLUTION */
}

/* recv_verdict: step 4, VERDICT: good, or bad (exit 5).  Before acting
 * on it, let every WRITE and DONE of ours complete. */
static int recv_verdict(struct sender *s)
{
	/* SOLUTION step 4: receive() the VERDICT (which sets
	 * s->times.verdict), allowing for LAB3_WINDOWS_MAX times the last
	 * REGION's length, or the file if that is less: the receiver may have
	 * a chunk to store in each of its windows.  Set s->verdict to "good"
	 * or "bad"; then wait_sends() until every WRITE and DONE has
	 * completed, and check_file_size().  A bad verdict: fail(s,
	 * LAB3_EXIT_BAD_VERDICT, ...), which ends the run. */
	uint64_t behind = (uint64_t)LAB3_WINDOWS_MAX * s->tx.region.length;
	struct lab3_msg msg;

	/* The receiver may still have to store a chunk in every window,
	 * then sync the file. */
	if (behind > s->size)
		behind = s->size;
	if (receive(s, &msg, behind) != 0)
		return -1;
	s->verdict = msg.verdict.verdict == LAB3_VERDICT_GOOD ? "good" : "bad";
	/* The VERDICT is in: what is left to wait for is our own sends. */
	snprintf(s->conn.awaiting, sizeof(s->conn.awaiting), "%s",
		 "our WRITEs and DONEs to complete");
	if (wait_sends(s) != 0 || check_file_size(s) != 0)
		return -1;
	if (msg.verdict.verdict != LAB3_VERDICT_GOOD)
		return fail(s, LAB3_EXIT_BAD_VERDICT, "%s: verdict bad: the "
			    "receiver's SHA-256 of the %llu bytes differs",
			    s->opt.path, (unsigned long long)s->size);
	return 0;
	/* END SOLUTION */
}

/* send_id: step 5, ID: the student's ID. */
static int send_id(struct sender *s)
{
	/* SOLUTION step 5: Send a LAB3_MSG_ID with s->opt.id, with
	 * send_step(). */
	struct lab3_msg msg = { .type = LAB3_MSG_ID };

	snprintf(msg.id.id, sizeof(msg.id.id), "%s", s->opt.id);
	return send_step(s, &msg);
	/* END SOLUTION */
}

/* recv_key: step 6, KEY: keep the secret key for main() to print. */
static int recv_key(struct sender *s)
{
	/* SOLUTION step 6: receive() the KEY (allowing for no bytes: the
	 * timeout) and keep it in s->key, setting s->has_key; main() prints
	 * it. */
	struct lab3_msg msg;

	if (receive(s, &msg, 0) != 0)
		return -1;
	memcpy(s->key, msg.key.key, LAB3_KEY_LEN);
	s->has_key = 1;
	return 0;
	/* END SOLUTION */
}

/* ---- Connecting, sending, receiving, failing ---- */

/* init_conn: a new connection, not yet built, with the sender's settings;
 * the one before it, if any, is taken down first, with what it had
 * registered for the file (pieces.h). */
static void init_conn(struct sender *s)
{
	lab3_release_pieces(&s->pieces);
	lab3_conn_destroy(&s->conn);
	s->conn = (struct lab3_conn) {
		.prog = "sender",
		.verbose = s->opt.verbose,
		.timeout_ms = s->opt.timeout_s * 1000,
	};
}

/* send_step: the whole work of a state that sends one message: post a
 * SEND of MSG (waiting while the send queue is full), wait until it and
 * everything before it has completed, and let the rules move on. */
static int send_step(struct sender *s, const struct lab3_msg *msg)
{
	int ret;

	while ((ret = lab3_post_msg(&s->conn, msg)) == -EAGAIN)
		lab3_wait(&s->conn, 0);
	if (ret != 0)
		return fail_conn(s, ret);
	if (wait_sends(s) != 0)
		return -1;
	lab3_tx_advance(&s->tx);
	return 0;
}

/* wait_sends: wait until every SEND and RDMA WRITE posted has completed,
 * reaping what completes (the send queue completes in order).  0, or -1
 * after saying why the run failed. */
static int wait_sends(struct sender *s)
{
	int ret;

	while ((ret = lab3_sends_completed(&s->conn)) == -EAGAIN)
		lab3_wait(&s->conn, 0);
	reap(s);
	return ret != 0 ? fail_conn(s, ret) : 0;
}

/* receive: the next message, waiting for it up to the timeout of
 * silence plus a second per 4 MiB of BYTES (what the receiver may have
 * to store before it answers: lab3_ms_for_bytes()), judged by the rules
 * (lab3_tx_accept): it must be the one the current state expects.  Returns 0, or -1 after reporting why and recording the
 * exit status.  While it waits, siw's nudge goes out when it is due
 * (lab3_nudge(): nothing on other providers), and the WRITEs and DONEs
 * that complete meanwhile are reaped. */
static int receive(struct sender *s, struct lab3_msg *msg, uint64_t bytes)
{
	int wait_ms = lab3_ms_for_bytes(&s->conn, bytes);
	char why[LAB3_ERR_LEN];
	int ret;

	while ((ret = lab3_take_msg(&s->conn, msg)) == -EAGAIN) {
		lab3_nudge(&s->conn);
		lab3_wait(&s->conn, wait_ms);
		reap(s);
	}
	if (ret != 0)
		return fail_conn(s, ret);
	if (lab3_tx_accept(&s->tx, msg, why, sizeof(why)) != 0)
		return protocol_error(s, why);
	if (msg->type == LAB3_MSG_REGION && s->times.first_region == 0)
		s->times.first_region = now_s();	/* the timings */
	else if (msg->type == LAB3_MSG_VERDICT) {
		s->times.verdict = now_s();
		show_progress(s, 1);	/* the transfer is over */
	}
	return 0;
}

/* fail: print one line "sender: CONTEXT: MESSAGE", record the exit status
 * and the line (for --json), and return -1, so a step can end with
 * `return fail(...)`. */
static int fail(struct sender *s, enum lab3_exit status, const char *fmt,
		...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->error, sizeof(s->error), fmt, ap);
	va_end(ap);
	show_progress(s, 1);
	fprintf(stderr, "sender: %s\n", s->error);
	s->exit_status = status;
	return -1;
}

/* fail_conn: the connection failed with RET; conn.err says how.  A piece
 * of the file that could not be read or registered (the file cut short,
 * out of memory or locked memory: s->pieces.local_failure) is the
 * sender's own failure, and the receiver is told.  The
 * receiver's ERROR (the common layer makes it -EREMOTEIO, whatever else
 * went wrong with it) is a refusal, or with the protocol code a protocol
 * error of ours, and its reason is what the user needs.  A malformed
 * message is a protocol error, which the receiver is told of.  Anything
 * else (timeouts, a lost peer, transport errors) is a connection error. */
static int fail_conn(struct sender *s, int ret)
{
	if (s->pieces.local_failure) {
		fail(s, LAB3_EXIT_LOCAL, "%s: %s", s->opt.path, s->conn.err);
		lab3_send_error(&s->conn, LAB3_ERR_INTERNAL,
				"the sender cannot read its file into "
				"registered memory");
		return -1;
	}
	if (ret == -EREMOTEIO && s->conn.peer_code == LAB3_ERR_PROTOCOL)
		return fail(s, LAB3_EXIT_PROTOCOL, "the receiver says: %s",
			    s->conn.err);
	if (ret == -EREMOTEIO)
		return fail(s, LAB3_EXIT_REFUSED, "the receiver refused: %s",
			    s->conn.err);
	if (ret == -EPROTO) {
		lab3_send_error(&s->conn, LAB3_ERR_PROTOCOL, s->conn.err);
		return fail(s, LAB3_EXIT_PROTOCOL, "%s: %s", s->opt.where,
			    s->conn.err);
	}
	return fail(s, LAB3_EXIT_CONNECTION, "%s: %s", s->opt.where,
		    s->conn.err);
}

/* protocol_error: the receiver's message broke the rules: tell it, behind
 * any WRITEs and DONEs still in flight, and fail. */
static int protocol_error(struct sender *s, const char *why)
{
	lab3_send_error(&s->conn, LAB3_ERR_PROTOCOL, why);
	return fail(s, LAB3_EXIT_PROTOCOL, "%s: protocol error: %s",
		    s->opt.where, why);
}

/* ---- The transfer ---- */

/* reap: the WRITEs and DONEs in flight that have completed
 * (lab3_reap_pieces(): a WRITE's slot is free again, a DONE's
 * chunk has landed); the progress bar and the timings follow what has
 * landed. */
static void reap(struct sender *s)
{
	if (!lab3_reap_pieces(&s->pieces, &s->conn))
		return;
	if (s->pieces.landed == s->size && s->tx.next_offset == s->size)
		s->times.written = now_s();
	show_progress(s, 0);
}

/* show_progress: the progress bar, on a terminal unless -q
 * (sender_show_progress()); FINAL erases it. */
static void show_progress(struct sender *s, int final)
{
	sender_show_progress(&s->opt, &s->times, s->name, s->pieces.landed,
			     s->size, final);
}

/* check_file_size: fail if the file no longer has the size it was hashed
 * at, before any more of it is sent. */
static int check_file_size(struct sender *s)
{
	struct stat st;

	if (fstat(s->fd, &st) == 0 && (uint64_t)st.st_size == s->size)
		return 0;
	fail(s, LAB3_EXIT_LOCAL, "%s: changed size while being sent "
	     "(%llu bytes when hashed)", s->opt.path, (unsigned long long)s->size);
	return -1;
}
