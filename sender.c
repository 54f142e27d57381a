/*
 * sender.c - Lab 3's sender: send one file into a receiver's memory with
 * RDMA WRITE, and trade a student ID for the secret key that proves it.
 *
 *   ./sender [-i ID] [-q] [-v] [-t SECONDS] [--json] <ip> <port> <file>
 *   ./sender --version
 *
 * Before any connection, the file is opened, hashed and mapped, so a
 * missing or unreadable file is reported at once.  Then the lab's sequence
 * (see protocol.h) is a line of states, one function each; the states and
 * which message each may take are the sender's rules, lab3_tx_* at the end
 * of protocol.h:
 *
 *   CONNECT         resolve the receiver's address and route, connect
 *   SEND_FILE_INFO  1. the file's length, SHA-256 and name
 *   RECV_REGION     2. a window of the receiver's: addr, length, rkey, and
 *                      the file offset of the chunk it is for
 *   WRITE_CHUNK     3. RDMA WRITE that chunk of the file into it ...
 *   SEND_DONE          ... then say DONE; back to RECV_REGION while the
 *                      file has chunks left
 *   RECV_VERDICT    4. good, or bad (exit 5)
 *   SEND_ID         5. the student's ID
 *   RECV_KEY        6. the secret key, printed as "secret key: HEX"
 *
 * A file that fits in the receiver's window is one REGION, its WRITEs and
 * one DONE.  A larger one loops, and the loop never waits for its WRITEs
 * or DONEs to complete: it posts them and moves on to the next REGION,
 * which the receiver usually sent long before.  Their completions come
 * back through the common layer whenever the sender waits anyway (see
 * "The completion model" in common.h): each finished WRITE releases its
 * piece of the file, each finished DONE counts its chunk (sent()).  So
 * the link stays busy while the receiver hashes and stores the previous
 * chunk.
 *
 * The file reads top down: main(), the state machine, one function per
 * state in the lab's order, then the helpers they use.
 *
 * Any failure ends the run with one line on stderr and the exit status
 * that names its kind (enum lab3_exit in common.h).  With --json, the run
 * ends, however it ends, with one JSON object on stdout instead of the
 * key (print_json()).
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "common.h"
#include "rules.h"
#include "json.h"

#define WRITE_PIECE_MAX (8u << 20)	/* bytes in one RDMA WRITE, at most */
#define HASH_BLOCK (1u << 20)		/* bytes read at a time to hash */
#define PROGRESS_AFTER 1.0		/* seconds before a progress bar */
#define ERROR_LINE_MAX 8192		/* bytes of the one-line error, at most */
#define NOT_MEASURED (-1.0)		/* a phase that never completed */

/* Long options without a short form. */
enum long_option {
	OPT_JSON = 256,
	OPT_VERSION,
	OPT_WAIT,
};

/* What the sender tags its send-queue work with, so that the common
 * layer can say which of it has completed (sent()). */
enum send_tag {
	TAG_WRITE = 1,			/* an RDMA WRITE of a piece of the file */
	TAG_DONE,			/* a chunk's DONE */
};

/* A piece of the file in flight: an RDMA WRITE, whose registration is
 * held until it completes; or a chunk whose DONE has not completed. */
struct piece {
	struct ibv_mr *mr;		/* a WRITE's; NULL for a DONE */
	uint64_t offset;
	uint64_t length;
};

struct sender {
	/* Command line. */
	const char *host;
	const char *port;
	char where[300];	/* "host:port", "[IPv6]:port", for messages */
	const char *path;
	char id[LAB3_ID_MAX + 1];
	int verbose;
	int quiet;
	int json;			/* --json: one JSON object at the end */
	int timeout_s;
	int wait_s;			/* --wait: how long to wait for a turn */

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
	struct piece writes[LAB3_SEND_DEPTH];	/* WRITEs posted, oldest 1st */
	int nwrites;
	struct piece sent[LAB3_SEND_DEPTH];	/* DONEs posted, oldest first */
	int nsent;
	uint64_t pinned;		/* bytes registered for WRITEs now */
	uint64_t pin_budget;		/* at most, under `ulimit -l` */
	uint32_t piece_max;		/* bytes in one WRITE, at most */
	uint64_t bytes_done;		/* in chunks whose DONE completed */

	/* Timings, for the summary line and the progress bar. */
	double t_start, t_hashed, t_first_region, t_written, t_verdict;
	double t_progress;
	int progress_shown;

	const char *verdict;		/* "good" or "bad" once it came */
	uint8_t key[LAB3_KEY_LEN];
	int has_key;
	enum lab3_exit exit_status;	/* why the run FAILED */
	char error[ERROR_LINE_MAX];	/* and the line that said so */
};

/* The time of each phase of a run, in seconds, and the transfer's goodput,
 * as the summary line and --json give them; NOT_MEASURED for what did
 * not happen. */
struct phase_times {
	double hash;			/* opening and hashing the file */
	double transfer;		/* first REGION to last DONE's completion */
	double verify;			/* then until the verdict came */
	double total;			/* the whole run, so far */
	double goodput;			/* MB/s (10^6 bytes) over the transfer */
};

/* The state machine and its states, one function each, in the lab's
 * order; each returns 0, or -1 after saying why the run failed. */
static enum lab3_exit run(struct sender *s);
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
static int wait_for_turn(struct sender *s, double give_up_at, int tries);
static int send_step(struct sender *s, const struct lab3_msg *msg);
static int receive(struct sender *s, struct lab3_msg *msg, int wait_ms);
static int fail(struct sender *s, enum lab3_exit status, const char *fmt,
		...)
	__attribute__((format(printf, 3, 4)));
static int fail_conn(struct sender *s, int ret);
static int protocol_error(struct sender *s, const char *why);
static int post_write_piece(struct sender *s, uint64_t offset, uint32_t len,
			    uint64_t remote_addr, uint32_t rkey, int wait_ms);
static void sent(void *owner, uint64_t tag);
static void show_progress(struct sender *s, int final);
static void release_pieces(struct sender *s);
static double now_s(void);
static int open_file(struct sender *s);
static int check_file_size(struct sender *s);
static void set_pin_budget(struct sender *s);
static void print_summary(const struct sender *s);
static void print_json(const struct sender *s, enum lab3_exit status);
static int parse_args(struct sender *s, int argc, char **argv);

/* ---- The run ---- */

/* main: the whole run: the command line, the file, the lab's steps, the
 * key on stdout (or, with --json, the JSON object, however the run
 * ended); the exit status says how it ended (enum lab3_exit). */
int main(int argc, char **argv)
{
	struct sender s = {
		.fd = -1,
		.timeout_s = LAB3_DEFAULT_TIMEOUT,
		.t_start = now_s(),
	};
	char key_hex[2 * LAB3_KEY_LEN + 1];
	enum lab3_exit status;

	if (parse_args(&s, argc, argv) != 0)
		return LAB3_EXIT_USAGE;
	set_pin_budget(&s);
	srandom((unsigned)getpid() ^ (unsigned)time(NULL));	/* --wait */

	if (open_file(&s) != 0) {
		status = s.exit_status;
		goto out_close;
	}
	lab3_tx_begin(&s.tx, s.size);
	status = run(&s);
	if (status == LAB3_EXIT_OK && !s.json) {
		lab3_hex(s.key, LAB3_KEY_LEN, key_hex);
		printf("secret key: %s\n", key_hex);
		fflush(stdout);
		print_summary(&s);
	}
	show_progress(&s, 1);

	lab3_disconnect(&s.conn);
	release_pieces(&s);
	lab3_conn_destroy(&s.conn);
out_close:
	if (s.data != NULL)
		munmap(s.data, s.size);
	if (s.fd >= 0)
		close(s.fd);
	if (s.json)
		print_json(&s, status);
	return status;
}

/* run: the state machine.  The state is the rules' (struct lab3_tx in
 * rules.h): each step does its work, and the rules say which comes
 * next, until the key has come or a step has failed. */
static enum lab3_exit run(struct sender *s)
{
	int ret = 0;

	while (ret == 0 && s->tx.state != LAB3_TX_FINISHED) {
		if (s->verbose)
			fprintf(stderr, "sender: state %s\n",
				lab3_tx_state_name(s->tx.state));
		switch (s->tx.state) {
		case LAB3_TX_CONNECT:	ret = connect_to_receiver(s); break;
		case LAB3_TX_SEND_FILE_INFO: ret = send_file_info(s); break;
		case LAB3_TX_RECV_REGION: ret = recv_region(s); break;
		case LAB3_TX_WRITE_CHUNK: ret = write_chunk(s); break;
		case LAB3_TX_SEND_DONE:	ret = send_done(s); break;
		case LAB3_TX_RECV_VERDICT: ret = recv_verdict(s); break;
		case LAB3_TX_SEND_ID:	ret = send_id(s); break;
		case LAB3_TX_RECV_KEY:	ret = recv_key(s); break;
		default:		/* FINISHED, or ENDED: never here */
			ret = fail(s, LAB3_EXIT_PROTOCOL, "internal error: "
				   "no step for state %s",
				   lab3_tx_state_name(s->tx.state));
			break;
		}
	}
	return ret == 0 ? LAB3_EXIT_OK : s->exit_status;
}

/* ---- The states, in the lab's order ---- */

/* connect_to_receiver: CONNECT, before step 1: resolve the receiver's
 * address and route, and connect.  A receiver busy with other sessions
 * refuses at once (exit 4); with --wait, the sender asks again after a
 * pause (wait_for_turn()) until its wait is over. */
static int connect_to_receiver(struct sender *s)
{
	double give_up_at = now_s() + s->wait_s;
	int ret, tries = 0;

	do {
		init_conn(s);
		ret = lab3_connect(&s->conn, s->host, s->port);
	} while (ret != 0 && s->conn.refused_busy &&
		 wait_for_turn(s, give_up_at, ++tries) == 0);

	/* Out of memory or locked memory is a local error. */
	if (ret == -ENOMEM || ret == -EPERM || ret == -EAGAIN)
		return fail(s, LAB3_EXIT_LOCAL, "connect to %s: %s",
			    s->where, s->conn.err);
	if (s->conn.refused)
		return fail(s, LAB3_EXIT_REFUSED, "connect to %s: %s%s",
			    s->where, s->conn.err, s->conn.refused_busy &&
			    s->wait_s > 0 ? " (still, at the end of --wait)" :
			    "");
	if (ret != 0)
		return fail(s, LAB3_EXIT_CONNECTION, "connect to %s: %s",
			    s->where, s->conn.err);
	lab3_tx_sent(&s->tx);
	return 0;
}

/* send_file_info: step 1, FILE_INFO: the file's length, SHA-256 and name. */
static int send_file_info(struct sender *s)
{
	/* SOLUTION step 1: Fill a struct lab3_msg of type LAB3_MSG_FILE_INFO
	 * (protocol.h) with s->size, s->sha256 and s->name, and send it with
	 * send_step(), which also moves the state machine on. */
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
	/* SOLUTION step 2: Wait for the next message with receive(), allowing
	 * lab3_wait_for_bytes() of the last window's length (common.h); the
	 * rules keep the REGION in s->tx.region.  Note s->t_first_region
	 * the first time. */
	const struct lab3_msg *r = &s->tx.region;
	struct lab3_msg msg;
	int wait_ms;

	/* The receiver sends it once it has stored the chunk that was in
	 * that window: allow for one chunk's worth of its time. */
	wait_ms = lab3_wait_for_bytes(&s->conn, r->region.length);
	if (receive(s, &msg, wait_ms) != 0)
		return -1;
	if (s->t_first_region == 0)
		s->t_first_region = now_s();
	if (s->verbose)
		fprintf(stderr, "sender: region addr=0x%llx length=%llu "
			"rkey=0x%x offset=%llu\n",
			(unsigned long long)r->region.addr,
			(unsigned long long)r->region.length,
			r->region.rkey, (unsigned long long)r->region.offset);
	return 0;
	/* END SOLUTION */
}

/* write_chunk: step 3, RDMA WRITE: post WRITEs of the chunk into the
 * window, in pieces no larger than the device's largest message nor
 * piece_max, without waiting for them.  Each piece is registered from
 * the file's mapping on its own (read access only: the NIC reads it,
 * nobody writes it) and released when its WRITE completes. */
static int write_chunk(struct sender *s)
{
	/* SOLUTION step 3: RDMA-WRITE the chunk s->tx.region names
	 * (region.offset into the file, region.length bytes, to region.addr
	 * under region.rkey) in pieces of at most min(s->conn.max_msg_size,
	 * s->piece_max) bytes, each with post_write_piece(); do not wait for
	 * them.  Then lab3_tx_sent(&s->tx). */
	const struct lab3_msg *r = &s->tx.region;
	uint64_t offset = r->region.offset, length = r->region.length;
	uint32_t piece = s->conn.max_msg_size < s->piece_max ?
			 s->conn.max_msg_size : s->piece_max;
	int wait_ms = lab3_wait_for_bytes(&s->conn, piece);
	int ret;

	if (length > 0 && check_file_size(s) != 0)
		return -1;
	for (uint64_t done = 0; done < length; ) {
		uint32_t len = length - done < piece ?
			       (uint32_t)(length - done) : piece;

		ret = post_write_piece(s, offset + done, len,
				       r->region.addr + done, r->region.rkey,
				       wait_ms);
		if (ret == -ENOMEM || ret == -EPERM || ret == -EAGAIN) {
			fail(s, LAB3_EXIT_LOCAL, "%s: %s", s->path,
			     s->conn.err);
			lab3_send_error(&s->conn, LAB3_ERR_INTERNAL,
					"the sender cannot register its file");
			return -1;
		}
		if (ret != 0)
			return fail_conn(s, ret);
		done += len;
	}
	lab3_tx_sent(&s->tx);
	return 0;
	/* END SOLUTION */
}

/* send_done: step 3, DONE: announce the chunk just written.  It follows
 * the chunk's WRITEs on the same queue pair, so it lands after them; its
 * completion counts the chunk as sent (chunk_done()).  Then the rules
 * move on: to the next REGION, or after the last chunk to the verdict. */
static int send_done(struct sender *s)
{
	/* SOLUTION step 3: Post a DONE for the chunk just written with
	 * lab3_post_msg(..., TAG_DONE) (common.h), without waiting: it
	 * follows the WRITEs on the same queue pair.  Remember it in s->sent
	 * (chunk_done() counts it when it completes), then lab3_tx_sent(). */
	struct lab3_msg msg = { .type = LAB3_MSG_DONE };
	int ret;

	msg.done.offset = s->tx.region.region.offset;
	msg.done.bytes = s->tx.region.region.length;
	ret = lab3_post_msg(&s->conn, &msg, TAG_DONE);
	if (ret != 0)
		return fail_conn(s, ret);
	s->sent[s->nsent++] = (struct piece) {
		.offset = msg.done.offset,
		.length = msg.done.bytes,
	};
	lab3_tx_sent(&s->tx);
	return 0;
	/* END SOLUTION */
}

/* recv_verdict: step 4, VERDICT: good, or bad (exit 5).  Before acting
 * on it, let every WRITE and DONE of ours complete. */
static int recv_verdict(struct sender *s)
{
	/* SOLUTION step 4: receive() the VERDICT, allowing for the
	 * receiver storing a chunk in every window; lab3_flush() so that
	 * every WRITE and DONE has completed; a bad verdict is
	 * LAB3_EXIT_BAD_VERDICT (use fail()). */
	uint64_t last = s->tx.region.region.length;
	uint64_t behind = (uint64_t)LAB3_WINDOWS_MAX * last;
	struct lab3_msg msg;
	int wait_ms, ret;

	/* The receiver may still have to store a chunk in every window,
	 * then sync the file. */
	wait_ms = lab3_wait_for_bytes(&s->conn,
				      behind < s->size ? behind : s->size);
	if (receive(s, &msg, wait_ms) != 0)
		return -1;
	s->t_verdict = now_s();
	s->verdict = msg.verdict.verdict == LAB3_VERDICT_GOOD ? "good" : "bad";
	ret = lab3_flush(&s->conn, 0);
	if (ret != 0)
		return fail_conn(s, ret);
	show_progress(s, 1);
	if (check_file_size(s) != 0)
		return -1;
	if (msg.verdict.verdict != LAB3_VERDICT_GOOD)
		return fail(s, LAB3_EXIT_BAD_VERDICT, "%s: verdict bad: the "
			    "receiver's SHA-256 of the %llu bytes differs",
			    s->path, (unsigned long long)s->size);
	return 0;
	/* END SOLUTION */
}

/* send_id: step 5, ID: the student's ID. */
static int send_id(struct sender *s)
{
	/* SOLUTION step 5: Send a LAB3_MSG_ID with s->id, with send_step(). */
	struct lab3_msg msg = { .type = LAB3_MSG_ID };

	snprintf(msg.id.id, sizeof(msg.id.id), "%s", s->id);
	return send_step(s, &msg);
	/* END SOLUTION */
}

/* recv_key: step 6, KEY: keep the secret key for main() to print. */
static int recv_key(struct sender *s)
{
	/* SOLUTION step 6: receive() the KEY and keep it in s->key, setting
	 * s->has_key. */
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
 * the one before it, if any, is taken down first. */
static void init_conn(struct sender *s)
{
	lab3_conn_destroy(&s->conn);
	s->conn = (struct lab3_conn) {
		.prog = "sender",
		.verbose = s->verbose,
		.timeout_ms = s->timeout_s * 1000,
		.sent = sent,
		.owner = s,
	};
}

/* wait_for_turn: the receiver was busy.  Unless the --wait that ends at
 * GIVE_UP_AT is over, say so (the first time, after TRIES refusals), and
 * sleep before the next try: 0.25 s, doubling up to 4 s, each pause drawn
 * between half and all of that so that senders refused together do not
 * come back together.  Returns 0 to try again, or -1. */
static int wait_for_turn(struct sender *s, double give_up_at, int tries)
{
	double left = give_up_at - now_s();
	double pause = 0.25 * (double)(1u << (tries < 5 ? tries - 1 : 4));
	struct timespec ts;

	if (left <= 0)
		return -1;
	if (tries == 1)
		fprintf(stderr, "sender: %s: %s; waiting up to %d s for a "
			"turn (--wait)\n", s->where, s->conn.err, s->wait_s);
	pause *= 0.5 + 0.5 * (double)random() / RAND_MAX;
	if (pause > left)
		pause = left;
	ts.tv_sec = (time_t)pause;
	ts.tv_nsec = (long)((pause - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	return 0;
}

/* send_step: the whole work of a state that sends one message: send
 * MSG, wait for it to go, and let the rules move on. */
static int send_step(struct sender *s, const struct lab3_msg *msg)
{
	int ret = lab3_send_msg(&s->conn, msg);

	if (ret != 0)
		return fail_conn(s, ret);
	lab3_tx_sent(&s->tx);
	return 0;
}

/* receive: the next message, waiting up to WAIT_MS of silence for it,
 * judged by the rules (lab3_tx_accept): it must be the one the current
 * state expects.  Returns 0, or -1 after reporting why and recording the
 * exit status. */
static int receive(struct sender *s, struct lab3_msg *msg, int wait_ms)
{
	char why[LAB3_ERR_LEN];
	int ret = lab3_recv_msg(&s->conn, msg, wait_ms);

	if (ret != 0)
		return fail_conn(s, ret);
	if (lab3_tx_accept(&s->tx, msg, why, sizeof(why)) != 0)
		return protocol_error(s, why);
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
	fprintf(stderr, "sender: %s\n", s->error);
	s->exit_status = status;
	return -1;
}

/* fail_conn: the connection failed with RET; conn.err says how.  The
 * receiver's ERROR (the common layer makes it -EREMOTEIO, whatever else
 * went wrong with it) is a refusal, and its reason is what the user
 * needs.  A malformed message is a protocol error, which the receiver is
 * told of.  Anything else (timeouts, a lost peer, transport errors) is a
 * connection error. */
static int fail_conn(struct sender *s, int ret)
{
	if (ret == -EREMOTEIO)
		return fail(s, LAB3_EXIT_REFUSED, "the receiver refused: %s",
			    s->conn.err);
	if (ret == -EPROTO) {
		lab3_send_error(&s->conn, LAB3_ERR_PROTOCOL, s->conn.err);
		return fail(s, LAB3_EXIT_PROTOCOL, "%s: %s", s->where,
			    s->conn.err);
	}
	return fail(s, LAB3_EXIT_CONNECTION, "%s: %s", s->where, s->conn.err);
}

/* protocol_error: the receiver's message broke the rules: tell it, behind
 * any WRITEs and DONEs still in flight, and fail. */
static int protocol_error(struct sender *s, const char *why)
{
	lab3_send_error(&s->conn, LAB3_ERR_PROTOCOL, why);
	return fail(s, LAB3_EXIT_PROTOCOL, "%s: protocol error: %s",
		    s->where, why);
}

/* ---- The transfer: pieces in flight ---- */

/* post_write_piece: register LEN bytes of the file at OFFSET and post
 * an RDMA WRITE of them to REMOTE_ADDR/RKEY.  First, while the send queue
 * is full or the piece would take the registered bytes over pin_budget,
 * wait (up to WAIT_MS of silence each time) for WRITEs to complete and
 * release theirs. */
static int post_write_piece(struct sender *s, uint64_t offset, uint32_t len,
			    uint64_t remote_addr, uint32_t rkey, int wait_ms)
{
	uint8_t *src = (uint8_t *)s->data + offset;
	struct ibv_mr *mr;
	int ret;

	while (s->conn.credits == 0 ||
	       (s->nwrites > 0 && s->pinned + len > s->pin_budget)) {
		ret = lab3_wait(&s->conn, wait_ms);
		if (ret != 0)
			return ret;
	}
	ret = lab3_reg_mr(&s->conn, src, len, 0, &mr);
	if (ret != 0)
		return ret;
	ret = lab3_post_write(&s->conn, mr, src, len, remote_addr, rkey,
			      TAG_WRITE);
	if (ret != 0) {
		ibv_dereg_mr(mr);
		return ret;
	}
	s->writes[s->nwrites++] = (struct piece) {
		.mr = mr, .offset = offset, .length = len,
	};
	s->pinned += len;
	return 0;
}

/* pop_piece: take the oldest entry of a FIFO of pieces. */
static struct piece pop_piece(struct piece *fifo, int *n)
{
	struct piece p = fifo[0];

	(*n)--;
	memmove(&fifo[0], &fifo[1], *n * sizeof(fifo[0]));
	return p;
}

/* write_done: the oldest WRITE has completed: release its registration
 * and, since the NIC is done with them, its pages. */
static void write_done(struct sender *s)
{
	struct piece p = pop_piece(s->writes, &s->nwrites);

	ibv_dereg_mr(p.mr);
	s->pinned -= p.length;
	madvise((uint8_t *)s->data + p.offset, p.length, MADV_DONTNEED);
}

/* chunk_done: the oldest DONE has completed, so the whole chunk has
 * landed: count it. */
static void chunk_done(struct sender *s)
{
	struct piece c = pop_piece(s->sent, &s->nsent);

	s->bytes_done += c.length;
	if (s->bytes_done == s->size && s->tx.next_offset == s->size)
		s->t_written = now_s();
	show_progress(s, 0);
}

/* sent: the common layer's word that a tagged WRITE or DONE has
 * completed.  The send queue completes in order, so it is the oldest of
 * its kind. */
static void sent(void *owner, uint64_t tag)
{
	struct sender *s = owner;

	if (tag == TAG_WRITE && s->nwrites > 0)
		write_done(s);
	else if (tag == TAG_DONE && s->nsent > 0)
		chunk_done(s);
}

/* show_progress: on a terminal, unless -q, once the transfer has taken a
 * while: bytes, rate and time left, redrawn in place at most 5 times a
 * second.  FINAL erases the bar. */
static void show_progress(struct sender *s, int final)
{
	double now = now_s(), elapsed = now - s->t_first_region, rate;

	if (final) {
		if (s->progress_shown)
			fprintf(stderr, "\r\033[K");
		return;
	}
	if (s->quiet || s->json || !isatty(STDERR_FILENO) ||
	    elapsed < PROGRESS_AFTER || now - s->t_progress < 0.2)
		return;
	s->t_progress = now;
	s->progress_shown = 1;
	rate = (double)s->bytes_done / elapsed;
	fprintf(stderr, "\r%s: %.1f of %.1f MiB, %.1f MB/s, %.0f s left\033[K",
		s->name[0] ? s->name : "file",
		(double)s->bytes_done / (1 << 20), (double)s->size / (1 << 20),
		rate / 1e6, rate > 0 ?
		(double)(s->size - s->bytes_done) / rate : 0.0);
}

/* release_pieces: deregister what a failed run left registered, before
 * the protection domain goes. */
static void release_pieces(struct sender *s)
{
	for (int i = 0; i < s->nwrites; i++)
		ibv_dereg_mr(s->writes[i].mr);
	s->nwrites = 0;
}

/* ---- Before connecting: the file and the ID ---- */

/* now_s: a monotonic clock in seconds, for timings. */
static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* hash_file: SHA-256 of the file in one streaming pass of read()s, the
 * hash that step 1 sends.  read() rather than the mapping: a file cut
 * short meanwhile is then an error, not a SIGBUS. */
static int hash_file(struct sender *s)
{
	/* SOLUTION the file hash: SHA-256 of the whole file into s->sha256,
	 * reading s->fd with read() in blocks of HASH_BLOCK and feeding
	 * lab3_sha256_begin/add/end (common.h); a read error is fail(s,
	 * LAB3_EXIT_LOCAL, ...). */
	struct lab3_sha256 h;
	uint64_t total = 0;
	uint8_t *buf;
	ssize_t n;

	buf = malloc(HASH_BLOCK);
	if (buf == NULL || lab3_sha256_begin(&h) != 0) {
		free(buf);
		fail(s, LAB3_EXIT_LOCAL, "%s: out of memory", s->path);
		return -1;
	}
	while ((n = read(s->fd, buf, HASH_BLOCK)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || lab3_sha256_add(&h, buf, (size_t)n) != 0) {
			fail(s, LAB3_EXIT_LOCAL, "%s: %s", s->path,
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
		     s->path);
		return -1;
	}
	return 0;
	/* END SOLUTION */
}

/* open_file: open, hash and map the file, and take its base name.  The
 * mapping is the RDMA source later: no copy of the data is ever made. */
static int open_file(struct sender *s)
{
	const char *base = strrchr(s->path, '/');
	struct stat st;
	char why[128];

	s->fd = open(s->path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0 || fstat(s->fd, &st) != 0) {
		fail(s, LAB3_EXIT_LOCAL, "%s: %s", s->path, strerror(errno));
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		fail(s, LAB3_EXIT_LOCAL, "%s: is a directory", s->path);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		fail(s, LAB3_EXIT_LOCAL, "%s: not a regular file", s->path);
		return -1;
	}
	s->size = (uint64_t)st.st_size;
	s->size_known = 1;
	if (hash_file(s) != 0)
		return -1;
	s->t_hashed = now_s();

	if (s->size > 0) {
		/* MAP_PRIVATE: rxe cannot pin a shared mapping of a tmpfs
		 * file; read-only, the private mapping is the file all the
		 * same.  Only the chunk being written is ever pinned. */
		s->data = mmap(NULL, s->size, PROT_READ, MAP_PRIVATE, s->fd, 0);
		if (s->data == MAP_FAILED) {
			s->data = NULL;
			fail(s, LAB3_EXIT_LOCAL, "%s: mmap: %s", s->path,
			     strerror(errno));
			return -1;
		}
		madvise(s->data, s->size, MADV_SEQUENTIAL);
	}

	/* Send the base name only if the receiver would accept it. */
	base = base ? base + 1 : s->path;
	if (lab3_check_name(base, strlen(base), why, sizeof(why)) == 0)
		snprintf(s->name, sizeof(s->name), "%s", base);
	return 0;
}

/* check_file_size: fail if the file no longer has the size it was hashed
 * at, before any more of it is sent. */
static int check_file_size(struct sender *s)
{
	struct stat st;

	if (fstat(s->fd, &st) == 0 && (uint64_t)st.st_size == s->size)
		return 0;
	fail(s, LAB3_EXIT_LOCAL, "%s: changed size while being sent "
	     "(%llu bytes when hashed)", s->path, (unsigned long long)s->size);
	return -1;
}

/* set_pin_budget: how many bytes of the file may be registered at once,
 * and so how large a WRITE may be: without limit for root (which lifts
 * it) or under an unlimited `ulimit -l`, else the limit less
 * LAB3_MEMLOCK_RESERVE (half the limit under a tiny one), with pieces
 * small enough that two fit. */
static void set_pin_budget(struct sender *s)
{
	uint64_t limit, piece;

	s->pin_budget = UINT64_MAX;
	s->piece_max = WRITE_PIECE_MAX;
	if (!lab3_memlock_limit(&limit))
		return;
	s->pin_budget = limit > 2 * LAB3_MEMLOCK_RESERVE ?
			limit - LAB3_MEMLOCK_RESERVE : limit / 2;
	piece = s->pin_budget / 2 & ~(uint64_t)4095;
	if (piece < 4096)
		piece = 4096;
	if (piece < s->piece_max)
		s->piece_max = (uint32_t)piece;
}

/* default_id: the login name, the ID used when -i is not given. */
static const char *default_id(void)
{
	struct passwd *pw = getpwuid(geteuid());

	if (pw != NULL)
		return pw->pw_name;
	return getenv("USER");
}

/* ---- The end ---- */

/* phase_times: how long each phase of the run took, for the summary line
 * and --json: hashing the file (from the start of the run), the transfer
 * from the first REGION to the last DONE's completion, and the receiver's
 * verification after it (0 if the verdict overtook the last DONE's
 * completion); the goodput is the file's bytes over the transfer time. */
static struct phase_times phase_times(const struct sender *s)
{
	struct phase_times t = {
		.hash = NOT_MEASURED,
		.transfer = NOT_MEASURED,
		.verify = NOT_MEASURED,
		.total = now_s() - s->t_start,
		.goodput = NOT_MEASURED,
	};

	if (s->t_hashed > 0)
		t.hash = s->t_hashed - s->t_start;
	if (s->t_written > 0) {
		t.transfer = s->t_written - s->t_first_region;
		t.goodput = t.transfer > 0 ?
			    (double)s->size / t.transfer / 1e6 : 0.0;
	}
	if (s->t_written > 0 && s->t_verdict > 0)
		t.verify = s->t_verdict > s->t_written ?
			   s->t_verdict - s->t_written : 0.0;
	return t;
}

/* print_summary: the one line on stderr after a good run: the time of each
 * phase and the transfer's goodput (see phase_times()). */
static void print_summary(const struct sender *s)
{
	struct phase_times t = phase_times(s);

	fprintf(stderr, "sender: %s: %llu bytes to %s, verdict good; "
		"hash %.2f s, transfer %.2f s, verify %.2f s, %.1f MB/s\n",
		s->path, (unsigned long long)s->size, s->where,
		t.hash, t.transfer, t.verify, t.goodput);
}

/* print_json_string: STR as a JSON string on stdout (lab3_json_string
 * says how), or null for NULL. */
static void print_json_string(const char *str)
{
	size_t len = lab3_json_string(str, NULL, 0);
	char *buf = malloc(len + 1);

	if (buf == NULL) {
		fputs("null", stdout);
		return;
	}
	lab3_json_string(str, buf, len + 1);
	fputs(buf, stdout);
	free(buf);
}

/* print_json_number: the field `, "NAME": VALUE` with DIGITS decimals, or
 * null for NOT_MEASURED. */
static void print_json_number(const char *name, double value, int digits)
{
	if (value == NOT_MEASURED)
		printf(", \"%s\": null", name);
	else
		printf(", \"%s\": %.*f", name, digits, value);
}

/* print_json: --json's one line on stdout, a JSON object that tells how
 * the run ended, whichever way it ended once the command line had been
 * accepted.  The fields are documented in the README ("--json"); the
 * error is the one-line error without its "sender: ". */
static void print_json(const struct sender *s, enum lab3_exit status)
{
	struct phase_times t = phase_times(s);
	char key_hex[2 * LAB3_KEY_LEN + 1];
	long port = -1;

	fputs("{\"verdict\": ", stdout);
	print_json_string(s->verdict);
	fputs(", \"key\": ", stdout);
	if (s->has_key)
		lab3_hex(s->key, LAB3_KEY_LEN, key_hex);
	print_json_string(s->has_key ? key_hex : NULL);
	fputs(", \"file\": ", stdout);
	print_json_string(s->path);
	if (s->size_known)
		printf(", \"bytes\": %llu", (unsigned long long)s->size);
	else
		fputs(", \"bytes\": null", stdout);
	fputs(", \"receiver\": ", stdout);
	print_json_string(s->host);
	/* A port given as a service name stays a string. */
	fputs(", \"port\": ", stdout);
	if (s->port[0] >= '0' && s->port[0] <= '9')
		port = lab3_parse_number(s->port, 0, 65535);
	if (port >= 0)
		printf("%ld", port);
	else
		print_json_string(s->port);
	fputs(", \"id\": ", stdout);
	print_json_string(s->id);
	print_json_number("hash_seconds", t.hash, 3);
	print_json_number("transfer_seconds", t.transfer, 3);
	print_json_number("verify_seconds", t.verify, 3);
	print_json_number("total_seconds", t.total, 3);
	print_json_number("goodput_mb_per_s", t.goodput, 2);
	if (status != LAB3_EXIT_OK) {
		fputs(", \"error\": ", stdout);
		print_json_string(s->error);
	}
	printf(", \"exit_status\": %d}\n", (int)status);
	fflush(stdout);
}

/* ---- Command line ---- */

/* The help text, one source line per output line; usage() fills in the
 * longest ID and the default timeout. */
static const char usage_text[] =
"usage: sender [-qv] [--json] [-i ID] [-t SECONDS] [--wait SECONDS]\n"
"              <ip> <port> <file>\n"
"       sender --version\n"
"\n"
"Send <file> to the Lab 3 receiver at <ip> <port> with RDMA WRITE,\n"
"then trade ID for the secret key, printed as 'secret key: HEX'.\n"
"\n"
"  -i ID       student ID, 1-%d printable characters (default: login name)\n"
"  -t SECONDS  give up after SECONDS of silence from the receiver\n"
"              (default %d)\n"
"  -q          no progress bar (shown on a terminal for long transfers)\n"
"  -v          trace each state and each work completion on stderr\n"
"  --json      at the end, print one JSON object on stdout instead of the\n"
"              key: verdict, key, timings, error, exit_status (see README)\n"
"  --wait SECONDS\n"
"              when the receiver is busy with other sessions, try again\n"
"              (with growing pauses) for up to SECONDS (default 0: no)\n"
"  --version   print the version and exit\n"
"  -h, --help  show this help\n"
"\n"
"Exit status: 0 key received; 1 usage error; 2 local error (file, memory);\n"
"3 connection or transport error, or timeout; 4 refused by the receiver;\n"
"5 bad verdict (the receiver's hash differs); 6 protocol error.\n";

/* usage: command-line help on stderr, for -h and for a bad command line;
 * the caller picks the exit status. */
static void usage(void)
{
	fprintf(stderr, usage_text, LAB3_ID_MAX, LAB3_DEFAULT_TIMEOUT);
}

/* take_id: the student's ID: ID (from -i) or else the login name,
 * checked as the receiver will check it. */
static int take_id(struct sender *s, const char *id)
{
	char why[128];

	if (id == NULL)
		id = default_id();
	if (id == NULL) {
		fprintf(stderr, "sender: cannot tell the login name; "
			"give an ID with -i\n");
		return -1;
	}
	if (lab3_check_id(id, strlen(id), why, sizeof(why)) != 0) {
		fprintf(stderr, "sender: -i: %s\n", why);
		return -1;
	}
	snprintf(s->id, sizeof(s->id), "%s", id);
	return 0;
}

/* take_operands: <ip> <port> <file> from ARGV, and "ip:port" for
 * messages; an IPv6 address goes in brackets, so its port stands
 * apart. */
static void take_operands(struct sender *s, char **argv)
{
	s->host = argv[0];
	s->port = argv[1];
	snprintf(s->where, sizeof(s->where),
		 strchr(s->host, ':') && s->host[0] != '[' ? "[%.*s]:%.*s" :
		 "%.*s:%.*s", 200, s->host, 20, s->port);
	s->path = argv[2];
}

/* seconds_option: option NAME's ARG, a number of seconds from MIN to
 * MAX, into *OUT; 0, or -1 after saying what is wrong with it. */
static int seconds_option(const char *name, const char *arg, long min,
			  long max, int *out)
{
	long seconds = lab3_parse_number(arg, min, max);

	if (seconds < 0) {
		fprintf(stderr, "sender: %s %s: not a number of seconds from "
			"%ld to %ld\n", name, arg, min, max);
		return -1;
	}
	*out = (int)seconds;
	return 0;
}

/* parse_args: the command line: options, <ip> <port> <file>, and the ID
 * (the login name without -i), checked before anything else happens. */
static int parse_args(struct sender *s, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ "wait", required_argument, NULL, OPT_WAIT },
		{ NULL, 0, NULL, 0 },
	};
	const char *id = NULL;
	int opt;

	while ((opt = getopt_long(argc, argv, "hi:qt:v", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 'i':
			id = optarg;
			break;
		case 't':
			if (seconds_option("-t", optarg, 1, 3600,
					   &s->timeout_s) != 0)
				return -1;
			break;
		case 'q':
			s->quiet = 1;
			break;
		case 'v':
			s->verbose = 1;
			break;
		case OPT_JSON:
			s->json = 1;
			break;
		case OPT_WAIT:
			if (seconds_option("--wait", optarg, 0, 86400,
					   &s->wait_s) != 0)
				return -1;
			break;
		case 'h':
			usage();
			exit(LAB3_EXIT_OK);
		case OPT_VERSION:
			printf("sender %s (Lab 3 protocol version %d)\n",
			       LAB3_RELEASE, LAB3_VERSION);
			exit(LAB3_EXIT_OK);
		default:
			usage();
			return -1;
		}
	}
	if (argc - optind != 3) {
		usage();
		return -1;
	}
	take_operands(s, &argv[optind]);
	return take_id(s, id);
}
