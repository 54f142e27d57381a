/* SPDX-License-Identifier: MIT */
/*
 * sender.c - an independently written solution of the kit's TODOs
 * (default depth), written from the kit, docs/protocol.md and
 * docs/student.md, without the reference: tests/similarity.test's honest
 * submission, which the similarity check must not flag.
 */
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
 * releases its piece of the file, each finished DONE counts its chunk.
 * So the link stays busy while the receiver hashes and stores the
 * previous chunk.
 *
 * Every wait has one shape: take what is needed (a message, a credit, the
 * end of our sends); while it is not there, lab3_wait().  The file reads
 * top down as it runs: main(), run() (the file, the lab, teardown),
 * run_lab(), one function per state, then their helpers.  Any failure is
 * one line on stderr and an exit status of its kind (enum lab3_exit).
 * framework/cli/sender_cli.c holds the command line, the pin budget, --wait, the
 * progress bar and the report (the key, the summary line, or --json).
 */

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "rules.h"
#include "sender_cli.h"

/* The helpers below are yours to use in the steps you write; until
 * a step uses them, the compiler would call them (and a step's
 * parameters) unused. */
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"

#define HASH_BLOCK (1u << 20)		/* bytes read at a time to hash */
#define ERROR_LINE_MAX 8192		/* bytes of the one-line error, at most */

/* A WRITE or a DONE in flight, oldest first in struct sender's
 * inflight: a WRITE holds its piece of the file registered until it
 * completes; a DONE's chunk counts once it completes.  The send queue
 * completes in the order it was posted: the entry has completed once the
 * connection's sends_completed has reached its COMPLETE_AT. */
struct piece {
	struct ibv_mr *mr;		/* a WRITE's; NULL for a DONE */
	uint64_t offset;
	uint64_t length;
	uint64_t complete_at;		/* conn.sends_posted once posted */
};

struct sender {
	struct sender_options opt;	/* the command line (sender_cli.h) */

	/* The file, mapped read-only: the source of the RDMA WRITEs. */
	int fd;
	uint64_t size;
	int size_known;			/* size is known: a regular file */
	void *data;
	char name[LAB3_NAME_MAX + 1];
	uint8_t sha256[LAB3_SHA256_LEN];

	struct lab3_conn conn;

	/* The lab's state machine and its rules (rules.h): the state,
	 * the REGION being written, where the next one must start. */
	struct lab3_tx tx;

	/* The transfer: what is in flight, and what has landed. */
	struct piece inflight[LAB3_SEND_DEPTH];	/* oldest first */
	int ninflight;
	uint64_t pinned;		/* bytes registered for WRITEs now */
	uint64_t pin_budget;		/* at most, under `ulimit -l` */
	uint32_t piece_max;		/* bytes in one WRITE, at most */
	uint64_t bytes_landed;		/* in chunks whose DONE completed */

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
static int receive(struct sender *s, struct lab3_msg *msg, int wait_ms);
static int fail(struct sender *s, enum lab3_exit status, const char *fmt,
		...)
	__attribute__((format(printf, 3, 4)));
static int fail_conn(struct sender *s, int ret);
static int protocol_error(struct sender *s, const char *why);
static int post_write_piece(struct sender *s, uint64_t offset, uint32_t len,
			    uint64_t remote_addr, uint32_t rkey, int wait_ms);
static void remember(struct sender *s, struct piece p);
static void reap(struct sender *s);
static void release_pieces(struct sender *s);
static void show_progress(struct sender *s, int final);
static int check_file_size(struct sender *s);

/* not_implemented: a step still to write says so, and the run fails. */
static int not_implemented(struct sender *s, const char *step)
{
	return fail(s, LAB3_EXIT_LOCAL, "%s not implemented", step);
}

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
	sender_pin_budget(&s.pin_budget, &s.piece_max);
	run(&s);
	sender_report(&s.opt, &s.times, &(struct sender_outcome) {
		.verdict = s.verdict, .key = s.has_key ? s.key : NULL,
		.size = s.size, .size_known = s.size_known,
		.error = s.error, .error_after_key = s.error_after_key,
		.status = s.exit_status });
	return s.exit_status;
}

/* run: the file (opened, hashed and mapped before any connection, so that
 * a missing or unreadable one is said at once), the lab over one
 * connection, and teardown in the reverse order of setup. */
static void run(struct sender *s)
{
	if (open_file(s) == 0)
		run_lab(s);
	show_progress(s, 1);
	lab3_disconnect(&s->conn);
	release_pieces(s);
	lab3_conn_destroy(&s->conn);
	if (s->data != NULL)
		munmap(s->data, s->size);
	if (s->fd >= 0)
		close(s->fd);
}

/* ---- Before connecting: the file ---- */

/* open_file: open, hash and map the file, and take its base name.  The
 * mapping is the RDMA source later: no copy of the data is ever made. */
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

	if (s->size > 0) {
		/* MAP_PRIVATE: on some kernels (Debian 12's 6.1) a shared
		 * read-only mapping cannot be registered (EFAULT); read-only,
		 * the private mapping is the file all the same.  Only the
		 * chunk being written is ever pinned. */
		s->data = mmap(NULL, s->size, PROT_READ, MAP_PRIVATE, s->fd, 0);
		if (s->data == MAP_FAILED) {
			s->data = NULL;
			fail(s, LAB3_EXIT_LOCAL, "%s: mmap: %s", s->opt.path,
			     strerror(errno));
			return -1;
		}
		madvise(s->data, s->size, MADV_SEQUENTIAL);
	}

	/* Send the base name only if the receiver would accept it. */
	base = base ? base + 1 : s->opt.path;
	if (lab3_check_name(base, strlen(base), why, sizeof(why)) == 0)
		snprintf(s->name, sizeof(s->name), "%s", base);
	return 0;
}

/* hash_file: SHA-256 of the file in one streaming pass of read()s, the
 * hash that step 1 sends.  read() rather than the mapping: a file cut
 * short meanwhile is then an error, not a SIGBUS. */
static int hash_file(struct sender *s)
{
	/* the file hash: SHA-256 of the whole file into s->sha256,
	 * reading s->fd with read() in blocks of HASH_BLOCK and feeding
	 * lab3_sha256_begin/add/end (common.h), the block malloc()ed.  A read
	 * error is fail(s, LAB3_EXIT_LOCAL, ...); so is a total of bytes
	 * read other than s->size (the file changed size meanwhile). */
	struct lab3_sha256 digest;
	uint8_t *block;
	uint64_t seen = 0;
	ssize_t n;
	int rc;

	block = malloc(HASH_BLOCK);
	if (block == NULL)
		return fail(s, LAB3_EXIT_LOCAL, "%s: no memory to hash it",
			    s->opt.path);
	if (lab3_sha256_begin(&digest) != 0) {
		free(block);
		return fail(s, LAB3_EXIT_LOCAL, "%s: cannot start SHA-256",
			    s->opt.path);
	}

	/* Read to the end of file, but stop early if it has grown. */
	while (seen <= s->size) {
		n = read(s->fd, block, HASH_BLOCK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fail(s, LAB3_EXIT_LOCAL, "%s: read: %s", s->opt.path,
			     strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		if (lab3_sha256_add(&digest, block, (size_t)n) != 0) {
			fail(s, LAB3_EXIT_LOCAL, "%s: SHA-256 failed",
			     s->opt.path);
			goto out;
		}
		seen += (uint64_t)n;
	}
	if (seen != s->size) {
		fail(s, LAB3_EXIT_LOCAL, "%s: changed size while being hashed "
		     "(%llu bytes at open, %s%llu read)", s->opt.path,
		     (unsigned long long)s->size, seen > s->size ? "at least " : "",
		     (unsigned long long)seen);
		goto out;
	}
	free(block);
	rc = lab3_sha256_end(&digest, s->sha256);	/* frees the context */
	if (rc != 0)
		return fail(s, LAB3_EXIT_LOCAL, "%s: SHA-256 failed",
			    s->opt.path);
	return 0;

out:
	lab3_sha256_free(&digest);
	free(block);
	return -1;
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
	/* step 1: Fill a struct lab3_msg of type LAB3_MSG_FILE_INFO
	 * (protocol.h) with s->size, s->sha256 and s->name, and send it with
	 * send_step(), which moves the state machine on, or says why not and
	 * returns -1. */
	struct lab3_msg info = { .type = LAB3_MSG_FILE_INFO };

	_Static_assert(sizeof(info.file_info.name) == sizeof(s->name),
		       "the name fits as it is");
	info.file_info.length = s->size;
	memcpy(info.file_info.sha256, s->sha256, LAB3_SHA256_LEN);
	memcpy(info.file_info.name, s->name, sizeof(info.file_info.name));
	return send_step(s, &info);
}

/* recv_region: step 2, REGION: a window for the next chunk of the file.
 * The rules check that it starts where the last chunk ended and stays
 * within the file. */
static int recv_region(struct sender *s)
{
	/* step 2: Wait for the REGION with receive(), allowing
	 * wait_ms = lab3_wait_for_bytes() (common.h) of the last REGION's
	 * length, s->tx.region.length (0 before the first).  The rules check
	 * it and keep it in s->tx.region; receive() says why not and returns
	 * -1. */
	struct lab3_msg region;
	int patience = lab3_wait_for_bytes(&s->conn, s->tx.region.length);

	/* receive() has the rules check it and keep it in s->tx.region. */
	return receive(s, &region, patience);
}

/* write_chunk: step 3, RDMA WRITE: post WRITEs of the chunk into the
 * window, in pieces no larger than the device's largest message nor
 * piece_max, without waiting for them.  Each piece is registered from
 * the file's mapping on its own (read access only: the NIC reads it,
 * nobody writes it) and released when its WRITE completes (reap()). */
static int write_chunk(struct sender *s)
{
	/* step 3, the WRITEs: RDMA-WRITE the chunk s->tx.region names (its
	 * length bytes of the file from its offset, under its rkey) in
	 * pieces of at most min(s->conn.max_msg_size, s->piece_max) bytes:
	 * the piece that starts WRITTEN bytes into the chunk goes from file
	 * offset offset + WRITTEN to the remote address addr + WRITTEN (not
	 * to addr each time: only a chunk of many pieces shows that
	 * mistake), under the chunk's rkey.  Post each with post_write_piece(), whose wait_ms is
	 * lab3_wait_for_bytes() of one piece; do not wait for them.  First
	 * check_file_size() if the chunk is not empty.  post_write_piece()'s
	 * -ENOMEM, -EPERM or -EAGAIN (the piece could not be registered:
	 * conn.err says why): first fail(s, LAB3_EXIT_LOCAL, "%s: %s",
	 * s->opt.path, s->conn.err), then lab3_send_error(&s->conn,
	 * LAB3_ERR_INTERNAL, "the sender cannot register its file"); any
	 * other error: fail_conn().  Then lab3_tx_advance(&s->tx). */
	const struct lab3_region win = s->tx.region;
	uint64_t most = s->piece_max, sent;
	int ret;

	if (s->conn.max_msg_size > 0 && s->conn.max_msg_size < most)
		most = s->conn.max_msg_size;
	if (win.length > 0 && check_file_size(s) != 0)
		return -1;

	for (sent = 0; sent < win.length; ) {
		uint64_t left = win.length - sent;
		uint32_t len = (uint32_t)(left < most ? left : most);

		ret = post_write_piece(s, win.offset + sent, len,
				       win.addr + sent, win.rkey,
				       lab3_wait_for_bytes(&s->conn, len));
		if (ret == -ENOMEM || ret == -EPERM || ret == -EAGAIN) {
			/* the piece could not be registered */
			fail(s, LAB3_EXIT_LOCAL, "%s: %s", s->opt.path,
			     s->conn.err);
			lab3_send_error(&s->conn, LAB3_ERR_INTERNAL,
					"the sender cannot register its file");
			return -1;
		}
		if (ret != 0)
			return fail_conn(s, ret);
		sent += len;
	}
	lab3_tx_advance(&s->tx);
	return 0;
}

/* send_done: step 3, DONE: announce the chunk just written.  It follows
 * the chunk's WRITEs on the same queue pair, so it lands after them; its
 * completion counts the chunk as landed (reap()).  Then the rules move
 * on: to the next REGION, or after the last chunk to the verdict. */
static int send_done(struct sender *s)
{
	/* step 3, the DONE: Post a DONE for the chunk just written with
	 * lab3_post_msg() (common.h), without waiting for it to complete:
	 * it follows the WRITEs on the same queue pair.  While the WRITEs
	 * fill the send queue it says -EAGAIN: then lab3_wait(&s->conn, 0),
	 * reap(s) (what completed meanwhile) and try again.  Another error:
	 * fail_conn().  remember() the chunk (a struct piece with no mr,
	 * complete_at s->conn.sends_posted: reap() counts it when its DONE
	 * completes), then lab3_tx_advance(). */
	struct lab3_msg done = { .type = LAB3_MSG_DONE };
	int ret;

	done.done.offset = s->tx.region.offset;
	done.done.bytes = s->tx.region.length;

	/* Queued behind this chunk's WRITEs; wait only for room to post. */
	for (;;) {
		ret = lab3_post_msg(&s->conn, &done);
		if (ret != -EAGAIN)
			break;
		lab3_wait(&s->conn, 0);
		reap(s);
	}
	if (ret != 0)
		return fail_conn(s, ret);

	remember(s, (struct piece) {
		.mr = NULL,
		.offset = done.done.offset,
		.length = done.done.bytes,
		.complete_at = s->conn.sends_posted,
	});
	lab3_tx_advance(&s->tx);
	return 0;
}

/* recv_verdict: step 4, VERDICT: good, or bad (exit 5).  Before acting
 * on it, let every WRITE and DONE of ours complete. */
static int recv_verdict(struct sender *s)
{
	/* step 4: receive() the VERDICT (which sets
	 * s->times.verdict), allowing lab3_wait_for_bytes() of
	 * LAB3_WINDOWS_MAX times the last REGION's length, or of the file if
	 * that is less: the receiver may have a chunk to store in each of its
	 * windows.  Set s->verdict to "good" or "bad"; then wait until every
	 * WRITE and DONE has completed: while lab3_sends_completed() says
	 * -EAGAIN, lab3_wait(&s->conn, 0); then reap(s) (another error:
	 * fail_conn()); check_file_size().  A bad verdict: fail(s, LAB3_EXIT_BAD_VERDICT,
	 * ...), which ends the run. */
	struct lab3_msg answer;
	uint64_t span = LAB3_WINDOWS_MAX * s->tx.region.length;
	int good, ret;

	if (span > s->size)
		span = s->size;
	if (receive(s, &answer, lab3_wait_for_bytes(&s->conn, span)) != 0)
		return -1;
	good = answer.verdict.verdict == LAB3_VERDICT_GOOD;
	s->verdict = good ? "good" : "bad";

	/* Let every WRITE and DONE of ours finish before going on. */
	while ((ret = lab3_sends_completed(&s->conn)) == -EAGAIN)
		lab3_wait(&s->conn, 0);
	reap(s);
	if (ret != 0)
		return fail_conn(s, ret);
	if (check_file_size(s) != 0)
		return -1;

	if (!good)
		return fail(s, LAB3_EXIT_BAD_VERDICT, "%s: verdict bad: what "
			    "arrived does not hash to %s's SHA-256",
			    s->opt.where, s->opt.path);
	return 0;
}

/* send_id: step 5, ID: the student's ID. */
static int send_id(struct sender *s)
{
	/* step 5: Send a LAB3_MSG_ID with s->opt.id, with
	 * send_step(). */
	struct lab3_msg who = { .type = LAB3_MSG_ID };

	_Static_assert(sizeof(who.id.id) == sizeof(s->opt.id),
		       "the ID fits as it is");
	memcpy(who.id.id, s->opt.id, sizeof(who.id.id));
	return send_step(s, &who);
}

/* recv_key: step 6, KEY: keep the secret key for main() to print. */
static int recv_key(struct sender *s)
{
	/* step 6: receive() the KEY (wait_ms 0: the timeout) and keep
	 * it in s->key, setting s->has_key; main() prints it. */
	struct lab3_msg reply;

	if (receive(s, &reply, 0) != 0)	/* 0: the connection's timeout */
		return -1;
	memcpy(s->key, reply.key.key, sizeof(s->key));
	s->has_key = 1;
	return 0;
}

/* ---- Connecting, sending, receiving, failing ---- */

/* init_conn: a new connection, not yet built, with the sender's settings;
 * the one before it, if any, is taken down first. */
static void init_conn(struct sender *s)
{
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
	if (ret == 0)
		while ((ret = lab3_sends_completed(&s->conn)) == -EAGAIN)
			lab3_wait(&s->conn, 0);
	reap(s);
	if (ret != 0)
		return fail_conn(s, ret);
	lab3_tx_advance(&s->tx);
	return 0;
}

/* receive: the next message, waiting up to WAIT_MS of silence for it,
 * judged by the rules (lab3_tx_accept): it must be the one the current
 * state expects.  Returns 0, or -1 after reporting why and recording the
 * exit status.  While it waits, siw's nudge goes out when it is due
 * (lab3_nudge(): nothing on other providers), and the WRITEs and DONEs
 * that complete meanwhile are reaped. */
static int receive(struct sender *s, struct lab3_msg *msg, int wait_ms)
{
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

/* fail_conn: the connection failed with RET; conn.err says how.  The
 * receiver's ERROR (the common layer makes it -EREMOTEIO, whatever else
 * went wrong with it) is a refusal, or with the protocol code a protocol
 * error of ours, and its reason is what the user needs.  A malformed
 * message is a protocol error, which the receiver is told of.  Anything
 * else (timeouts, a lost peer, transport errors) is a connection error. */
static int fail_conn(struct sender *s, int ret)
{
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

/* ---- The transfer: pieces in flight ---- */

/* post_write_piece: register LEN bytes of the file at OFFSET and post
 * an RDMA WRITE of them to REMOTE_ADDR/RKEY.  First, while the piece
 * would take the registered bytes over pin_budget, wait (up to WAIT_MS of
 * silence each time) for WRITEs to complete and release theirs; and
 * while the send queue is full, for room. */
static int post_write_piece(struct sender *s, uint64_t offset, uint32_t len,
			    uint64_t remote_addr, uint32_t rkey, int wait_ms)
{
	uint8_t *src = (uint8_t *)s->data + offset;
	struct ibv_mr *mr;
	int ret;

	while (s->pinned > 0 && s->pinned + len > s->pin_budget) {
		ret = lab3_sends_completed(&s->conn);
		if (ret == -EAGAIN)
			lab3_wait(&s->conn, wait_ms);
		else if (ret != 0)
			return ret;
		reap(s);
	}
	ret = lab3_reg_mr(&s->conn, src, len, 0, &mr);	/* read only */
	if (ret != 0)
		return ret;
	while ((ret = lab3_post_write(&s->conn, mr, src, len, remote_addr,
				      rkey)) == -EAGAIN) {
		lab3_wait(&s->conn, wait_ms);
		reap(s);
	}
	if (ret != 0) {
		ibv_dereg_mr(mr);
		return ret;
	}
	remember(s, (struct piece) {
		.mr = mr, .offset = offset, .length = len,
		.complete_at = s->conn.sends_posted,
	});
	s->pinned += len;
	return 0;
}

/* remember: P, just posted, is in flight: after the oldest, once those
 * that have completed are reaped (then, with one send-queue credit per
 * entry still in flight, there is room). */
static void remember(struct sender *s, struct piece p)
{
	reap(s);
	s->inflight[s->ninflight++] = p;
}

/* reap: the WRITEs and DONEs in flight that have completed, oldest first
 * (the send queue completes in order): a WRITE's registration is
 * released, and, since the NIC is done with them, its pages; a DONE's
 * chunk has landed, and counts. */
static void reap(struct sender *s)
{
	while (s->ninflight > 0 &&
	       s->inflight[0].complete_at <= s->conn.sends_completed) {
		struct piece p = s->inflight[0];

		s->ninflight--;
		memmove(&s->inflight[0], &s->inflight[1],
			s->ninflight * sizeof(s->inflight[0]));
		if (p.mr != NULL) {
			ibv_dereg_mr(p.mr);
			s->pinned -= p.length;
			madvise((uint8_t *)s->data + p.offset, p.length,
				MADV_DONTNEED);
			continue;
		}
		s->bytes_landed += p.length;
		if (s->bytes_landed == s->size &&
		    s->tx.next_offset == s->size)
			s->times.written = now_s();
		show_progress(s, 0);
	}
}

/* release_pieces: deregister what a failed run left registered, before
 * the protection domain goes. */
static void release_pieces(struct sender *s)
{
	for (int i = 0; i < s->ninflight; i++)
		if (s->inflight[i].mr != NULL)
			ibv_dereg_mr(s->inflight[i].mr);
	s->ninflight = 0;
}

/* show_progress: the progress bar, on a terminal unless -q
 * (sender_show_progress()); FINAL erases it. */
static void show_progress(struct sender *s, int final)
{
	sender_show_progress(&s->opt, &s->times, s->name, s->bytes_landed,
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
