/*
 * receiver.c - Lab 3's receiver: take files into memory by RDMA WRITE,
 * check their SHA-256, and give each sender whose file arrived intact the
 * secret key for its ID.
 *
 *   ./receiver [-a ADDR] [-p PORT] [-o DIR] [-m MAX_BYTES] [-k SECRET_FILE]
 *              [-t SECONDS] [-l LEDGER] [-c SESSIONS] [-w SIZE] [-n N] [-v]
 *   ./receiver [-k SECRET_FILE] --key-for ID
 *   ./receiver --ledger-summary LEDGER
 *
 * It serves many sessions at once (-c), in one thread, until SIGINT or
 * SIGTERM.  Each session follows the lab's sequence (see protocol.h), one function per state; the
 * state is derived from the receiver's rules (lab3_rx_step() at the end of
 * protocol.h), which also say which message each state may take:
 *
 *   RECV_FILE_INFO   1. length, SHA-256, name; refuse what is too large;
 *                       set up the windows
 *   SEND_REGION      2. register a window for the next chunk, send its
 *                       addr/len/rkey/offset (one per free window)
 *   RECV_DONE        3. the sender RDMA-WRITEs a chunk, then says DONE
 *   STORE_CHUNK         deregister its window (no more remote access),
 *                       hash the chunk, append it to the temporary file;
 *                       back to SEND_REGION while chunks remain
 *   SEND_VERDICT     4. compare the whole file's hash, sync the file if
 *                       good, send good or bad
 *   RECV_ID          5. the student's ID
 *   SEND_KEY         6. HMAC-SHA256(secret, ID), after a good verdict
 *                       only; then the file gets its final name
 *   WAIT_DISCONNECT     the sender hangs up (bad verdicts come here from 4)
 *
 * A file that fits in one window passes through SEND_REGION, RECV_DONE and
 * STORE_CHUNK once: the lab's sequence exactly.  A larger one loops, and
 * since a REGION goes out for every free window, the sender writes the
 * next chunk while this single thread hashes and stores the last one.
 *
 * A step never waits for its sender.  When it must (for a message, or for
 * room in its send queue), it says so (STEP_WAIT), and the serving loop
 * (serve_loop(), at the end) runs the session's steps again when its
 * connection moves: one wait watches the connection manager and every
 * session's completions, so a slow, silent or hostile sender holds up
 * only its own session.  Nor does a step work long: it sends one REGION,
 * or stores 1 MiB of a chunk, and yields (STEP_YIELD) if it has more.
 * (What a step still does at once is local: registering a window, writing
 * and syncing the file, the ledger.)
 *
 * A session that fails sends ERROR to the sender when it still can, and
 * its summary line says why.  Either way the receiver goes on serving.
 *
 * With -l, each session also leaves one record in a ledger for grading
 * (see "The grading ledger" below; the format is in ledger.h).
 *
 * The file reads top down: one session's state machine, its states in
 * the lab's order, then the helpers they use; the serving loop, the
 * command line and main() come last.
 */
#define _GNU_SOURCE	/* sync_file_range() */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
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
#include "secret.h"
#include "ledger.h"

#define DEFAULT_MAX_BYTES (64ULL << 30)	/* 64 GiB */
#define DEFAULT_WINDOW_SIZE (16u << 20)	/* 16 MiB */
#define DEFAULT_WINDOWS 4
#define WINDOW_SIZE_MIN (64u << 10)
#define DEFAULT_SECRET ".lab3-secret"	/* in $HOME */
#define DEFAULT_MAX_SESSIONS 16		/* -c */
#define MAX_SESSIONS_MAX 64
#define CLOSE_WAIT_MS 1000	/* for a failed session's ERROR to go */
#define DISCONNECT_WAIT_MS 2000	/* for the sender's DISCONNECTED */
#define STOPPING_REASON "the receiver is stopping"
#define TAG_KEY 1		/* the KEY's SEND: see key_went_out() */
#define CM_EVENTS_PER_TURN 64	/* see take_cm_events() */
#define STORE_SLICE (1u << 20)	/* bytes of a chunk stored per turn */

/* The limits that keep one sender from holding a session (and so a place
 * of -c) for long without doing its part.  No honest sender on any RDMA
 * link comes near them; each names itself when it ends a session. */
#define HANDSHAKE_S 10		/* FILE_INFO within this of connecting */
#define RATE_FLOOR (1u << 20)	/* bytes a second the file must average, */
#define RATE_GRACE_S 30		/* counted from FILE_INFO, after this */
#define IDLE_EVICT_MS 1000	/* a full receiver ends a session that has
				 * sent no FILE_INFO for this long, to take
				 * a new sender */

/* The receiver's settings, from the command line. */
struct options {
	const char *addr;
	const char *port;
	const char *out_dir;
	uint64_t max_bytes;
	uint64_t window_size;
	int window_size_given;
	int windows;
	const char *secret_path;
	const char *key_for;
	const char *ledger;		/* -l */
	const char *ledger_summary;	/* --ledger-summary */
	int timeout_s;
	int max_sessions;		/* -c */
	uint64_t budget;		/* -b: window memory, all sessions */
	int budget_given;
	int verbose;
};

/* One window: registered memory that one chunk of the file is written
 * into, then hashed and stored from. */
struct window {
	uint8_t *buf;
	struct ibv_mr *mr;		/* NULL: the sender may not write */
	uint64_t offset;		/* file offset of its current chunk */
	uint64_t length;		/* and that chunk's length */
	uint64_t stored;		/* bytes of it hashed and stored */
	int held;			/* it holds its bytes of the budget */
};

/* The budget of window memory that all sessions share (-b): a window
 * holds its bytes of it while a chunk is in it, and sessions that find
 * it spent wait their turn, first come first served. */
struct window_budget {
	uint64_t bytes;			/* -b */
	uint64_t used;
	struct session *queue[2 * MAX_SESSIONS_MAX];	/* waiting, oldest 1st */
	int nqueue;
};

/* A session's life around the lab's steps, in the serving loop. */
enum session_life {
	LIFE_ACCEPTING,		/* accepted, waiting for ESTABLISHED */
	LIFE_RUNNING,		/* the lab's steps (run_session()) */
	LIFE_CLOSING,		/* its last message (an ERROR) going out */
	LIFE_DISCONNECTING,	/* waiting for the DISCONNECTED */
};

/* The limit a session is under besides the silence of -t. */
enum session_limit {
	LIMIT_NONE,
	LIMIT_HANDSHAKE,	/* FILE_INFO within HANDSHAKE_S */
	LIMIT_RATE,		/* the file within its RATE_FLOOR time */
};

/* One session: one sender, from connection to disconnection. */
struct session {
	const struct options *opt;
	struct window_budget *budget;		/* the receiver's */
	const uint8_t *secret;
	struct lab3_conn conn;
	unsigned number;
	char peer[64];
	struct timespec start;

	/* The protocol's rules and counters (rules.h): the length, the
	 * chunks, how many were offered, done and stored, the verdict. */
	struct lab3_rx rx;
	int has_file_info;			/* FILE_INFO arrived */
	uint8_t sha256[LAB3_SHA256_LEN];	/* from FILE_INFO */
	char name[LAB3_NAME_MAX + 1];

	/* Chunk k (file offset k * window size) goes through window
	 * k % rx.nwindows. */
	struct window windows[LAB3_WINDOWS_MAX];
	struct lab3_sha256 hash;		/* of the chunks stored */
	int tmp_fd;				/* -o: the file being built */
	char tmp_path[PATH_MAX];

	int has_verdict;
	char id[LAB3_ID_MAX + 1];
	int key_sent;
	char saved_as[3 * LAB3_ID_MAX + LAB3_NAME_MAX + 2];	/* ID/NAME */
	char error[LAB3_ERR_LEN];		/* why the session failed */

	int ledger_fd;				/* -l, or -1 */
	int recorded;				/* its record was written */

	/* Where the serving loop has it (see serve_loop()). */
	enum session_life life;
	long long deadline;		/* ms: its wait runs out; 0: none */
	int wait_ms;			/* that wait's silence, in ms */
	int waiting;			/* its step said STEP_WAIT */
	int room_wait;			/* ... for room in the send queue */
	long long connected_at;		/* ms: the connection was made (or
					 * requested, while LIFE_ACCEPTING) */
	long long limit_at;		/* ms: its limit runs out; 0: none */
	enum session_limit limit;	/* which limit that is */
	int woken;			/* its connection moved */
	int key_posted;			/* step 6's KEY is on its way */
	int key_completed;		/* and its SEND has completed */
	int early;			/* messages in before the VERDICT */
};

static volatile sig_atomic_t stop_requested;

/* on_stop_signal: the SIGINT and SIGTERM handler: ask the serving loop to
 * stop; the wait it interrupts returns -EINTR. */
static void on_stop_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* What a step returns: 0 when it is done, or one of these.  A step never
 * waits for its sender: when it must, it says so, and the serving loop
 * runs it again once the connection moves (or its time is up).  Nor
 * does it work long: a step with more to do than one REGION or one
 * STORE_SLICE yields, and the loop runs it again on its next turn, after
 * the other sessions have had theirs. */
enum {
	STEP_FAILED = -1,	/* the session has failed: s->error says why */
	STEP_WAIT = 1,		/* waiting for the sender */
	STEP_OVER = 2,		/* the sender hung up after the end */
	STEP_YIELD = 3,		/* more to do, on the loop's next turn */
};

/* The states of a session, one function each, in the lab's order. */
static int recv_file_info(struct session *s);	/* step 1 */
static int send_region(struct session *s);	/* step 2 */
static int recv_done(struct session *s);	/* step 3 */
static int store_chunk(struct session *s);	/*   and store the chunk */
static int send_verdict(struct session *s);	/* step 4 */
static int recv_id(struct session *s);		/* step 5 */
static int send_key(struct session *s);		/* step 6 */
static void key_went_out(void *owner, uint64_t tag);
static int wait_disconnect(struct session *s);	/* the end */

/* The helpers, defined after the states that use them. */
static int receive(struct session *s, struct lab3_msg *msg, int wait_ms);
static int receive_any(struct session *s, struct lab3_msg *msg, int wait_ms);
static int post(struct session *s, const struct lab3_msg *msg, uint64_t tag);
static int wait_for_peer(struct session *s, int wait_ms);
static int wait_for_room(struct session *s);
static int may_send(struct session *s);
static void set_deadline(struct session *s);
static int judge(struct session *s, const struct lab3_msg *msg);
static int conn_failed(struct session *s, int ret);
static int give_up(struct session *s, enum lab3_error_code code,
		   const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static struct window *chunk_window(struct session *s, uint64_t chunk);
static uint64_t window_bytes(const struct session *s);
static int take_budget(struct session *s, uint64_t bytes);
static int wait_for_budget(struct session *s);
static void give_back(struct session *s, struct window *w);
static void leave_queue(struct session *s);
static void join_queue(struct session *s);
static int setup_windows(struct session *s);
static int write_all(int fd, const uint8_t *buf, uint64_t len);
static int sync_file(struct session *s);
static int keep_file(struct session *s);
static void id_dir_name(const char *id, char out[3 * LAB3_ID_MAX + 1]);
static int record_session(struct session *s, int key_sent, char *err,
			  size_t err_len);

/* ---- One session: the state machine ---- */

/* run_session: the state machine of one session.  Its state is derived
 * from the rules (lab3_rx_step() in rules.h); each step does its work
 * and tells the rules, until a step must wait for the sender
 * (STEP_WAIT: the serving loop calls run_session() again when the
 * connection moves) or yields (STEP_YIELD: the loop calls it again on its
 * next turn), the sender hangs up (STEP_OVER) or a step fails
 * (STEP_FAILED).  The table says which function does each step. */
static int run_session(struct session *s)
{
	static int (*const do_step[])(struct session *s) = {
		[LAB3_RX_RECV_FILE_INFO] = recv_file_info,
		[LAB3_RX_SEND_REGION] = send_region,
		[LAB3_RX_RECV_DONE] = recv_done,
		[LAB3_RX_STORE_CHUNK] = store_chunk,
		[LAB3_RX_SEND_VERDICT] = send_verdict,
		[LAB3_RX_RECV_ID] = recv_id,
		[LAB3_RX_SEND_KEY] = send_key,
		[LAB3_RX_WAIT_DISCONNECT] = wait_disconnect,
	};
	enum lab3_rx_step step;
	int ret = 0;

	while (ret == 0 && (step = lab3_rx_step(&s->rx)) != LAB3_RX_NO_STEP) {
		if (s->opt->verbose && !s->waiting)
			fprintf(stderr, "receiver: session %u: state %s\n",
				s->number, lab3_rx_step_name(step));
		ret = do_step[step](s);
		if (ret == STEP_YIELD) {
			s->woken = 1;	/* its next turn comes at once */
			s->room_wait = 0;
			ret = STEP_WAIT;
		}
		s->waiting = ret == STEP_WAIT;
		s->room_wait &= s->waiting;
		if (ret == 0)
			s->deadline = 0;
	}
	return ret;
}

/* ---- The states, in the lab's order ---- */

/* recv_file_info: step 1, FILE_INFO: keep the hash and name (for the
 * ledger, even if the file is refused); the rules refuse a file over the
 * limit before anything is allocated, and choose its chunks.  Then set up
 * the windows. */
static int recv_file_info(struct session *s)
{
	struct lab3_msg msg;
	int ret = receive_any(s, &msg, 0);

	if (ret != 0)
		return ret;
	if (msg.type == LAB3_MSG_FILE_INFO) {
		s->has_file_info = 1;
		memcpy(s->sha256, msg.file_info.sha256, LAB3_SHA256_LEN);
		snprintf(s->name, sizeof(s->name), "%s", msg.file_info.name);
	}
	if (judge(s, &msg) != 0)
		return -1;
	/* From now on the file's bytes must keep coming (RATE_FLOOR). */
	s->limit = LIMIT_RATE;
	s->limit_at = lab3_now_ms() + RATE_GRACE_S * 1000LL +
		      (long long)(s->rx.length / (RATE_FLOOR / 1000));
	return setup_windows(s);
}

/* send_region: step 2, REGION: register the window of the next chunk for
 * remote write and send its descriptor, for every chunk that has a free
 * window (at the start, one per window; later, the window just stored),
 * one a turn.  Each registration is new, so its rkey is, too.  A
 * zero-length file gets one empty descriptor: there is nothing to
 * write. */
static int send_region(struct session *s)
{
	uint64_t offset = 0, length = 0;
	int ret = may_send(s);

	if (ret != 0)
		return ret;
	while (s->conn.credits > 0 && lab3_rx_may_offer(&s->rx)) {
		struct window *w = chunk_window(s, s->rx.offered);
		struct lab3_msg msg = { .type = LAB3_MSG_REGION };

		if (!w->held && !take_budget(s, window_bytes(s))) {
			/* No window memory free: wait for it, and meanwhile
			 * take in the chunks already in flight, whose stores
			 * give memory back. */
			if (s->rx.offered > s->rx.stored) {
				join_queue(s);
				return recv_done(s);
			}
			return wait_for_budget(s);
		}
		w->held = 1;
		lab3_rx_next_region(&s->rx, &offset, &length);

		w->offset = offset;
		w->length = length;
		if (w->length > 0) {
			ret = lab3_reg_mr(&s->conn, w->buf, w->length,
					  IBV_ACCESS_LOCAL_WRITE |
					  IBV_ACCESS_REMOTE_WRITE, &w->mr);
			if (ret != 0)
				return give_up(s, LAB3_ERR_RESOURCES, "%s",
					       s->conn.err);
			msg.region.addr = (uintptr_t)w->buf;
			msg.region.rkey = w->mr->rkey;
		}
		msg.region.length = w->length;
		msg.region.offset = w->offset;
		ret = post(s, &msg, 0);
		if (ret != 0)
			return ret;
		if (lab3_rx_may_offer(&s->rx) && s->conn.credits > 0)
			return STEP_YIELD;	/* the next window next turn */
	}
	/* With the send queue full, come back when it has room. */
	return lab3_rx_may_offer(&s->rx) ? may_send(s) : 0;
}

/* recv_done: step 3: wait out the sender's RDMA WRITEs into the oldest
 * window for its DONE, which must name that window's chunk (the rules
 * check it). */
static int recv_done(struct session *s)
{
	struct window *w = chunk_window(s, s->rx.stored);
	struct lab3_msg msg;
	int wait_ms;

	/* The RDMA WRITEs come first, silently: allow for their time. */
	wait_ms = lab3_wait_for_bytes(&s->conn, w->length);
	return receive(s, &msg, wait_ms);
}

/* store_chunk: revoke the sender's access to the chunk's window, then
 * hash the chunk and append it to the file being built, STORE_SLICE bytes
 * a turn (a DONE costs the sender nothing, and the chunk may be a GiB: the
 * other sessions' turns come between the slices).  Deregistering first
 * means no RDMA WRITE can change the bytes after they were checked. */
static int store_chunk(struct session *s)
{
	struct window *w = chunk_window(s, s->rx.stored);
	uint64_t len = w->length - w->stored;
	uint8_t *at = w->buf + w->stored;

	if (s->conn.error != 0)		/* nothing it stores would count */
		return conn_failed(s, s->conn.error);
	if (w->mr != NULL) {
		ibv_dereg_mr(w->mr);
		w->mr = NULL;
	}
	if (len > STORE_SLICE)
		len = STORE_SLICE;
	if (lab3_sha256_add(&s->hash, at, len) != 0)
		return give_up(s, LAB3_ERR_INTERNAL, "cannot compute SHA-256");
	if (s->tmp_fd >= 0 && write_all(s->tmp_fd, at, len) != 0)
		return give_up(s, LAB3_ERR_INTERNAL, "cannot write %.120s: %s",
			       s->tmp_path, strerror(errno));
	/* Start writing it to disk now, so the fsync at the end is short. */
	if (s->tmp_fd >= 0)
		sync_file_range(s->tmp_fd, (off64_t)(w->offset + w->stored),
				(off64_t)len, SYNC_FILE_RANGE_WRITE);
	w->stored += len;
	if (w->stored < w->length)
		return STEP_YIELD;
	w->stored = 0;
	if (lab3_rx_stored(&s->rx))
		s->limit = LIMIT_NONE;	/* every byte is in */
	/* Its window's memory goes back to the budget when another session
	 * waits for it (so that windows go round), or when no chunk is left
	 * for it. */
	if (s->budget->nqueue > 0 ||
	    s->rx.stored - 1 + s->rx.nwindows >= s->rx.nchunks)
		give_back(s, w);
	return 0;
}

/* send_verdict: step 4, VERDICT: compare the hash of every chunk stored
 * with the sender's, and if they match make sure the file is on disk
 * (it gets its final name after step 6). */
static int send_verdict(struct session *s)
{
	struct lab3_msg msg = { .type = LAB3_MSG_VERDICT };
	uint8_t sha256[LAB3_SHA256_LEN];
	enum lab3_verdict verdict;
	int ret;

	/* Deciding moves the session on: first make sure it can go. */
	ret = may_send(s);
	if (ret != 0)
		return ret;
	if (lab3_sha256_end(&s->hash, sha256) != 0)
		return give_up(s, LAB3_ERR_INTERNAL, "cannot compute SHA-256");
	verdict = memcmp(sha256, s->sha256, LAB3_SHA256_LEN) == 0 ?
		  LAB3_VERDICT_GOOD : LAB3_VERDICT_BAD;
	lab3_rx_decide(&s->rx, verdict);
	s->has_verdict = 1;
	if (verdict == LAB3_VERDICT_GOOD && s->tmp_fd >= 0 &&
	    sync_file(s) != 0) {
		lab3_post_error(&s->conn, LAB3_ERR_INTERNAL,
				"the receiver could not save the file");
		return -1;
	}
	msg.verdict.verdict = verdict;
	/* What has come by now, the sender sent before it could know the
	 * verdict: an ID among it is out of order (recv_id()). */
	lab3_poll(&s->conn);
	s->early = s->conn.ninbox;
	return post(s, &msg, 0);
}

/* recv_id: step 5, ID: the student's ID, after a good verdict, and sent
 * after it: one that had come before the verdict went out is refused. */
static int recv_id(struct session *s)
{
	struct lab3_msg msg;
	int ret = receive(s, &msg, 0);

	if (ret != 0)
		return ret;
	if (s->early > 0)
		return give_up(s, LAB3_ERR_PROTOCOL, "protocol error: ID "
			       "before the VERDICT (it came before the verdict "
			       "was sent)");
	snprintf(s->id, sizeof(s->id), "%s", msg.id.id);
	return 0;
}

/* send_key: step 6, KEY: HMAC-SHA256(secret, ID) for the ID just received.
 * With -l, the ledger's record of the session is written and synced first:
 * a crash in between may lose a key that the ledger lists, but can never
 * release one that it does not.  No record, no key. */
static int send_key(struct session *s)
{
	struct lab3_msg msg = { .type = LAB3_MSG_KEY };
	int ret;

	if (!s->key_posted) {
		/* The record is written once: first make sure the KEY can
		 * go. */
		ret = may_send(s);
		if (ret != 0)
			return ret;
		if (lab3_key_for_id(s->secret, s->id, msg.key.key) != 0)
			return give_up(s, LAB3_ERR_INTERNAL,
				       "cannot compute the key");
		if (s->ledger_fd >= 0 &&
		    record_session(s, 1, s->error, sizeof(s->error)) != 0) {
			lab3_post_error(&s->conn, LAB3_ERR_INTERNAL, "the "
					"receiver could not record the session");
			return -1;
		}
		ret = post(s, &msg, TAG_KEY);
		if (ret != 0)
			return ret;
		s->key_posted = 1;
	}
	/* "key sent" only once it has gone: its completion says so
	 * (key_went_out()).  The connection may end right after, which does
	 * not undo it: over iWARP a SEND completes once it is on the wire,
	 * and a sender that has its key may hang up before the receiver
	 * sees that completion.  Then the session is over. */
	ret = lab3_try_flush(&s->conn);
	if (ret == -EAGAIN)
		return wait_for_peer(s, 0);
	if (ret != 0 && !s->key_completed)
		return conn_failed(s, ret);
	s->key_sent = 1;
	lab3_rx_key_sent(&s->rx);
	if (s->tmp_fd >= 0 && keep_file(s) != 0)
		return -1;
	return ret != 0 ? STEP_OVER : 0;
}

/* key_went_out: the session's conn.sent: a SEND posted with a tag has
 * completed successfully; the KEY is the only one. */
static void key_went_out(void *owner, uint64_t tag)
{
	struct session *s = owner;

	if (tag == TAG_KEY)
		s->key_completed = 1;
}

/* wait_disconnect: after step 6 (or a bad verdict at step 4): the
 * session's work is done; the sender hangs up, which ends the session
 * (returns 1).  Any message instead is refused by the rules: after a bad
 * verdict, an ID gets no key. */
static int wait_disconnect(struct session *s)
{
	struct lab3_msg msg;
	int ret = lab3_try_recv_msg(&s->conn, &msg);

	if (ret == -ECONNRESET)
		return STEP_OVER;
	if (ret == -EAGAIN)
		return wait_for_peer(s, 0);
	if (ret != 0)
		return conn_failed(s, ret);
	judge(s, &msg);		/* the rules refuse anything now */
	return -1;
}

/* ---- Receiving, and ending a session that fails ---- */

/* receive: wait up to WAIT_MS for the next message, which the rules
 * judge.  Returns 0 when it is the one the session expects, or -1. */
static int receive(struct session *s, struct lab3_msg *msg, int wait_ms)
{
	int ret = receive_any(s, msg, wait_ms);

	return ret != 0 ? ret : judge(s, msg);
}

/* receive_any: the next message, whatever it is, if one has come:
 * 0, STEP_WAIT (up to WAIT_MS of silence; 0: the timeout), or -1 when
 * the session has failed. */
static int receive_any(struct session *s, struct lab3_msg *msg, int wait_ms)
{
	int ret = lab3_try_recv_msg(&s->conn, msg);

	if (ret == -EAGAIN)
		return wait_for_peer(s, wait_ms);
	return ret != 0 ? conn_failed(s, ret) : 0;
}

/* post: send MSG, without waiting for it to go; TAG (or 0) comes back to
 * key_went_out() when it has gone.  0, STEP_WAIT when the send queue is
 * full (the steps that post check conn.credits before anything they
 * cannot do twice), or -1. */
static int post(struct session *s, const struct lab3_msg *msg, uint64_t tag)
{
	int ret = lab3_try_post_msg(&s->conn, msg, tag);

	if (ret == -EAGAIN)
		return s->conn.credits == 0 ? wait_for_room(s) :
		       wait_for_peer(s, 0);
	return ret != 0 ? conn_failed(s, ret) : 0;
}

/* wait_for_peer: the step cannot finish before the connection moves:
 * the serving loop comes back to it then, or when WAIT_MS (0: the
 * timeout) have passed in silence.  Returns STEP_WAIT. */
static int wait_for_peer(struct session *s, int wait_ms)
{
	s->room_wait = 0;
	s->wait_ms = wait_ms > 0 ? wait_ms : s->conn.timeout_ms;
	if (s->deadline == 0)
		set_deadline(s);
	return STEP_WAIT;
}

/* wait_for_room: the send queue is full: the sender has not taken our
 * last LAB3_SEND_DEPTH messages (a sender that posts no receive for them:
 * its device answers "receiver not ready", and ours tries again, a few
 * seconds at most).  The serving loop comes back when a send completes.
 * Nothing else the sender does makes this wait shorter or longer (see
 * wake()): without room for -t, the session times out (expire()).
 * Returns STEP_WAIT. */
static int wait_for_room(struct session *s)
{
	int again = s->room_wait;
	int ret = wait_for_peer(s, 0);

	if (s->opt->verbose && !again)
		fprintf(stderr, "receiver: session %u: the send queue is full: "
			"waiting for the sender to take our messages\n",
			s->number);
	s->room_wait = 1;
	return ret;
}

/* may_send: whether a step may post a message now: 0; STEP_WAIT while the
 * connection settles (see lab3_settling()) or when the send queue is full
 * (wait_for_room()); or -1 when the connection has failed, or the sender
 * has hung up.  The steps that send ask first, before anything they
 * cannot undo (the verdict, the ledger's record) or need not do (pin a
 * window). */
static int may_send(struct session *s)
{
	if (lab3_settling(&s->conn))
		return wait_for_peer(s, 0);
	if (s->conn.error != 0)
		return conn_failed(s, s->conn.error);
	if (s->conn.disconnected) {
		snprintf(s->error, sizeof(s->error), "the peer disconnected");
		return -1;
	}
	return s->conn.credits == 0 ? wait_for_room(s) : 0;
}

/* set_deadline: when the session's wait runs out: after its silence
 * (wait_ms from now), or at its limit if that comes first. */
static void set_deadline(struct session *s)
{
	s->deadline = lab3_now_ms() + s->wait_ms;
	if (s->limit != LIMIT_NONE && s->limit_at < s->deadline)
		s->deadline = s->limit_at;
}

/* judge: let the protocol's rules (lab3_rx_accept) judge MSG.  Returns 0
 * when it is the message the session expects now, or -1. */
static int judge(struct session *s, const struct lab3_msg *msg)
{
	char why[LAB3_ERR_LEN];
	int ret = lab3_rx_accept(&s->rx, msg, why, sizeof(why));

	if (ret != 0)
		return give_up(s, (enum lab3_error_code)ret, "%s", why);
	return 0;
}

/* conn_failed: a message could not be sent or received; conn.err says why.
 * The sender's ERROR (-EREMOTEIO from the common layer) means it gave up;
 * a malformed message is its protocol error, which it is told of. */
static int conn_failed(struct session *s, int ret)
{
	if (ret == -EREMOTEIO)
		snprintf(s->error, sizeof(s->error), "the sender gave up: "
			 "%.*s", LAB3_REASON_MAX, s->conn.err);
	else if (ret == -EPROTO)
		return give_up(s, LAB3_ERR_PROTOCOL, "%s", s->conn.err);
	else
		snprintf(s->error, sizeof(s->error), "%s", s->conn.err);
	return -1;
}

/* give_up: end the session: record why (for the summary line) and tell
 * the sender with an ERROR of CODE, when the connection still allows
 * (the serving loop lets it go before it disconnects).
 * (The sender's fail() only prints: the receiver has a peer to tell.) */
static int give_up(struct session *s, enum lab3_error_code code,
		   const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->error, sizeof(s->error), fmt, ap);
	va_end(ap);
	lab3_post_error(&s->conn, code, s->error);
	return -1;
}

/* ---- Windows and the file being built ---- */

/* take_budget: BYTES of the window budget for S, if they are free and
 * no session waits before it.  Returns 1 when S has them. */
static int take_budget(struct session *s, uint64_t bytes)
{
	struct window_budget *b = s->budget;

	if ((b->nqueue > 0 && b->queue[0] != s) || b->used + bytes > b->bytes)
		return 0;
	b->used += bytes;
	leave_queue(s);
	return 1;
}

/* wait_for_budget: S waits, in the queue, for window memory: it is not
 * waiting for its sender, so only its limit can end the wait.  Returns
 * STEP_WAIT. */
static int wait_for_budget(struct session *s)
{
	join_queue(s);
	s->waiting = 1;
	s->room_wait = 0;
	s->deadline = s->limit != LIMIT_NONE ? s->limit_at : 0;
	return STEP_WAIT;
}

/* give_back: W's chunk is stored (or its session over): let go of its
 * pages and return its bytes to the budget; the session first in the
 * queue gets its turn. */
static void give_back(struct session *s, struct window *w)
{
	struct window_budget *b = s->budget;

	if (!w->held)
		return;
	w->held = 0;
	b->used -= window_bytes(s);
	if (w->buf != NULL)
		madvise(w->buf, window_bytes(s), MADV_DONTNEED);
	if (b->nqueue > 0)
		b->queue[0]->woken = 1;
}

/* join_queue: S waits for window memory, after those already waiting. */
static void join_queue(struct session *s)
{
	struct window_budget *b = s->budget;
	int i;

	for (i = 0; i < b->nqueue && b->queue[i] != s; i++)
		;
	if (i == b->nqueue)
		b->queue[b->nqueue++] = s;
}

/* leave_queue: S no longer waits for window memory. */
static void leave_queue(struct session *s)
{
	struct window_budget *b = s->budget;

	for (int i = 0; i < b->nqueue; i++)
		if (b->queue[i] == s) {
			b->nqueue--;
			memmove(&b->queue[i], &b->queue[i + 1],
				(size_t)(b->nqueue - i) * sizeof(b->queue[0]));
			if (i == 0 && b->nqueue > 0)
				b->queue[0]->woken = 1;
			return;
		}
}

/* chunk_window: the window that chunk CHUNK goes through. */
static struct window *chunk_window(struct session *s, uint64_t chunk)
{
	return &s->windows[chunk % s->rx.nwindows];
}

/* write_all: write LEN bytes at BUF to FD, or return -1. */
static int write_all(int fd, const uint8_t *buf, uint64_t len)
{
	while (len > 0) {
		size_t piece = len > (1u << 30) ? (1u << 30) : (size_t)len;
		ssize_t n = write(fd, buf, piece);

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			errno = EIO;	/* a short write without a reason */
		if (n <= 0)
			return -1;
		buf += n;
		len -= (uint64_t)n;
	}
	return 0;
}

/* open_tmp_file: with -o, create the hidden temporary file the chunks are
 * appended to; it gets its final name only after a good verdict. */
static int open_tmp_file(struct session *s)
{
	const char *dir = s->opt->out_dir;

	if (snprintf(s->tmp_path, sizeof(s->tmp_path),
		     "%s/.lab3-partial-XXXXXX", dir) >=
	    (int)sizeof(s->tmp_path)) {
		give_up(s, LAB3_ERR_INTERNAL, "%.120s: path too long", dir);
		return -1;
	}
	s->tmp_fd = mkstemp(s->tmp_path);
	if (s->tmp_fd < 0) {
		give_up(s, LAB3_ERR_INTERNAL, "cannot save into %.120s: %s",
			dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* window_bytes: the size of each window of this session: a window, or
 * the whole file when it is smaller. */
static uint64_t window_bytes(const struct session *s)
{
	return s->rx.length < s->rx.window_size ? s->rx.length :
	       s->rx.window_size;
}

/* setup_windows: allocate the file's windows (the rules chose how many:
 * no more than it has chunks), start the hash and, with -o, the
 * temporary file. */
static int setup_windows(struct session *s)
{
	uint64_t size = window_bytes(s);

	for (uint32_t i = 0; i < s->rx.nwindows && size > 0; i++) {
		void *buf = mmap(NULL, size, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (buf == MAP_FAILED) {
			give_up(s, LAB3_ERR_RESOURCES, "cannot allocate a "
				"window of %llu bytes",
				(unsigned long long)size);
			return -1;
		}
		s->windows[i].buf = buf;
	}
	if (lab3_sha256_begin(&s->hash) != 0) {
		give_up(s, LAB3_ERR_INTERNAL, "cannot start SHA-256");
		return -1;
	}
	if (s->opt->out_dir != NULL)
		return open_tmp_file(s);
	return 0;
}

/* free_windows: deregister and free the windows, drop the hash and any
 * temporary file that did not become the saved file. */
static void free_windows(struct session *s)
{
	uint64_t size = window_bytes(s);

	for (uint32_t i = 0; i < s->rx.nwindows; i++) {
		if (s->windows[i].mr != NULL)
			ibv_dereg_mr(s->windows[i].mr);
		give_back(s, &s->windows[i]);
		if (s->windows[i].buf != NULL)
			munmap(s->windows[i].buf, size);
	}
	leave_queue(s);
	lab3_sha256_free(&s->hash);
	if (s->tmp_fd >= 0) {
		close(s->tmp_fd);
		unlink(s->tmp_path);
	}
}

/* sync_file: before the verdict, make sure every byte of the verified
 * temporary file is on disk, so that a failing disk is an ERROR instead of
 * a good verdict. */
static int sync_file(struct session *s)
{
	if (fchmod(s->tmp_fd, 0644) == 0 && fsync(s->tmp_fd) == 0)
		return 0;
	snprintf(s->error, sizeof(s->error), "cannot save %.120s: %s",
		 s->tmp_path, strerror(errno));
	return -1;
}

/* keep_file: once the session has completed (its key sent), give the
 * verified, synced temporary file its final name, ID/NAME in the -o
 * directory: one directory per student (id_dir_name()), so that two
 * students' files of the same name never meet; NAME is the sender's base
 * name, or sha256-HASHPREFIX without one.  Rename it there and fsync the
 * directories.  A session that fails at any step keeps nothing. */
static int keep_file(struct session *s)
{
	char final[PATH_MAX], id_dir[3 * LAB3_ID_MAX + 1];
	char hex[2 * LAB3_SHA256_LEN + 1];
	int fd = s->tmp_fd, err;

	s->tmp_fd = -1;
	id_dir_name(s->id, id_dir);
	lab3_hex(s->sha256, LAB3_SHA256_LEN, hex);
	snprintf(s->saved_as, sizeof(s->saved_as), s->name[0] ? "%s/%s" :
		 "%s/sha256-%.16s", id_dir, s->name[0] ? s->name : hex);
	if (snprintf(final, sizeof(final), "%s/%s", s->opt->out_dir,
		     s->saved_as) >= (int)sizeof(final)) {
		err = ENAMETOOLONG;
		goto out_close;
	}
	if (close(fd) != 0) {
		err = errno;
		goto out_unlink;
	}
	/* The student's directory, made durable before the file goes in. */
	*strrchr(final, '/') = '\0';
	if (mkdir(final, 0755) != 0 && errno != EEXIST) {
		err = errno;
		goto out_unlink;
	}
	lab3_fsync_parent(final, NULL, 0);
	final[strlen(final)] = '/';
	if (rename(s->tmp_path, final) != 0) {
		err = errno;
		goto out_unlink;
	}
	lab3_fsync_parent(final, NULL, 0);
	return 0;

out_close:
	close(fd);
out_unlink:
	unlink(s->tmp_path);
	snprintf(s->error, sizeof(s->error), "cannot save %.120s: %s",
		 s->saved_as, strerror(err));
	s->saved_as[0] = '\0';
	return -1;
}

/* id_dir_name: the directory of DIR that the files of the student ID go
 * into: ID itself, but for any byte other than a letter, a digit, '-',
 * '_' or a '.' that does not begin it, written as %XX (so "a/b" is
 * "a%2Fb" and ".." is "%2E."): never a path, never hidden, and two IDs
 * never share one. */
static void id_dir_name(const char *id, char out[3 * LAB3_ID_MAX + 1])
{
	for (size_t i = 0; id[i] != '\0'; i++) {
		unsigned char c = (unsigned char)id[i];

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		    (c == '.' && i > 0))
			*out++ = (char)c;
		else
			out += sprintf(out, "%%%02X", c);
	}
	*out = '\0';
}

/* ---- The grading ledger (-l) ---- */

/* record_session: append the session's record to the ledger, KEY_SENT
 * saying whether its key is released.  A session has one record: written
 * just before its key goes out, or else when it ends.  Returns 0, or -1
 * with ERR saying why. */
static int record_session(struct session *s, int key_sent, char *err,
			  size_t err_len)
{
	struct lab3_ledger_record rec = {
		.time = time(NULL),
		.peer = s->peer,
		.id = s->id,
		.has_file_info = s->has_file_info,
		.file = s->name,
		.bytes = s->rx.length,
		.sha256 = s->sha256,
		.verdict = s->has_verdict ? s->rx.verdict : -1,
		.key_sent = key_sent,
		.error = s->error,
	};
	int ret;

	s->recorded = 1;
	ret = lab3_ledger_append(s->ledger_fd, &rec);
	if (ret != 0) {
		snprintf(err, err_len, "cannot write ledger %.120s: %s",
			 s->opt->ledger, strerror(-ret));
		return -1;
	}
	return 0;
}

/* ledger_summary: --ledger-summary: for each ID in the ledger at PATH, in
 * ID order, the time of its first success (a good verdict and the key
 * sent) or "never", and its attempts (records with that ID); then how many
 * records there were and how many lines could not be read (a record cut
 * short by a crash, say), which are skipped. */
static int ledger_summary(const char *path)
{
	struct lab3_ledger_summary sum;
	FILE *in = fopen(path, "re");
	int ret;

	if (in == NULL) {
		fprintf(stderr, "receiver: --ledger-summary %s: %s\n", path,
			strerror(errno));
		return LAB3_EXIT_LOCAL;
	}
	ret = lab3_ledger_summarize(in, &sum);
	fclose(in);
	if (ret != 0) {
		lab3_ledger_summary_free(&sum);
		fprintf(stderr, "receiver: --ledger-summary %s: %s\n", path,
			strerror(-ret));
		return LAB3_EXIT_LOCAL;
	}
	printf("ID\tFIRST SUCCESS\tATTEMPTS\n");
	for (size_t i = 0; i < sum.nids; i++) {
		const struct lab3_ledger_id *id = &sum.ids[i];

		printf("%s\t%s\t%lu\n", id->id, id->first_success[0] ?
		       id->first_success : "never", id->attempts);
	}
	printf("records: %lu, without an ID: %lu, unreadable lines "
	       "skipped: %lu\n", sum.records, sum.without_id,
	       sum.unreadable);
	lab3_ledger_summary_free(&sum);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "receiver: --ledger-summary: cannot write the "
			"summary: %s\n", strerror(errno));
		return LAB3_EXIT_LOCAL;
	}
	return LAB3_EXIT_OK;
}

/* ---- Serving ---- */

/* print_summary: the session's one line on stdout. */
static void print_summary(const struct session *s)
{
	const char *verdict = !s->has_verdict ? "none" :
			      s->rx.verdict == LAB3_VERDICT_GOOD ? "good" :
			      "bad";
	struct timespec end;
	double seconds;

	clock_gettime(CLOCK_MONOTONIC, &end);
	seconds = (double)(end.tv_sec - s->start.tv_sec) +
		  (double)(end.tv_nsec - s->start.tv_nsec) / 1e9;
	printf("session %u from %s: id %s, %llu bytes, verdict %s",
	       s->number, s->peer, s->id[0] ? s->id : "-",
	       (unsigned long long)s->rx.length, verdict);
	if (s->key_sent)
		printf(", key sent");
	if (s->saved_as[0])
		printf(", saved as %s", s->saved_as);
	printf(", %.2f s", seconds);
	if (s->error[0])
		printf(", failed: %s", s->error);
	printf("\n");
	fflush(stdout);
}

/* ---- Serving: many sessions, one thread ---- */

struct server;
static void advance(struct server *srv, struct session *s);
static void end_early(struct session *s, const char *why);
static void refuse(struct server *srv, struct rdma_cm_id *id, const char *why);
static void stop_sessions(struct server *srv);

/* The receiver while it serves: its listener, whose rdma_cm channel all
 * its connections share, and the sessions in progress (-c at most). */
struct server {
	const struct options *opt;
	const uint8_t *secret;
	int ledger_fd;
	struct lab3_listener listener;
	struct window_budget budget;		/* -b */
	struct session *sessions[2 * MAX_SESSIONS_MAX];	/* and closing */
	int nsessions;
	unsigned number;		/* sessions accepted so far */
	int stopping;			/* a stop signal came */
};

/* finish_session: the session is over and its connection down: free
 * what it holds, write its ledger record if it has none yet, print its
 * summary line, and forget it. */
static void finish_session(struct server *srv, struct session *s)
{
	char err[LAB3_ERR_LEN];
	int i;

	free_windows(s);
	lab3_conn_destroy(&s->conn);
	if (s->ledger_fd >= 0 && !s->recorded &&
	    record_session(s, s->key_sent, err, sizeof(err)) != 0)
		fprintf(stderr, "receiver: session %u: %s\n", s->number, err);
	print_summary(s);
	for (i = 0; srv->sessions[i] != s; i++)
		;
	srv->nsessions--;
	memmove(&srv->sessions[i], &srv->sessions[i + 1],
		(size_t)(srv->nsessions - i) * sizeof(srv->sessions[0]));
	free(s);
}

/* in_progress: the sessions that count against -c: all but those that
 * are over, closing or only settling what ended them (a sender that hung
 * up, a connection that failed: see lab3_settling()). */
static int in_progress(const struct server *srv)
{
	int n = 0;

	for (int i = 0; i < srv->nsessions; i++) {
		const struct session *s = srv->sessions[i];

		n += s->life < LIFE_CLOSING && s->conn.error == 0 &&
		     !s->conn.disconnected;
	}
	return n;
}

/* refuse_busy: a connection request while -c sessions are in progress:
 * turn it away at once, saying so (LAB3_BUSY_REASON: try later). */
static void refuse_busy(struct server *srv, struct rdma_cm_id *id)
{
	char why[64];

	if (srv->opt->max_sessions == 1)
		snprintf(why, sizeof(why), "%s with another session",
			 LAB3_BUSY_REASON);
	else
		snprintf(why, sizeof(why), "%s with %d other sessions",
			 LAB3_BUSY_REASON, in_progress(srv));
	refuse(srv, id, why);
}

/* refuse: turn the connection request ID away, saying WHY. */
static void refuse(struct server *srv, struct rdma_cm_id *id, const char *why)
{
	if (srv->opt->verbose)
		fprintf(stderr, "receiver: refusing a connection: %s\n", why);
	lab3_reject(id, why);
	rdma_destroy_id(id);
}

/* make_room: the receiver is full and a sender asks to connect: end the
 * session that has gone longest without sending FILE_INFO (counted from
 * its request while its connection is still being made), if that is at
 * least IDLE_EVICT_MS, so that idle connections cannot keep the others
 * out.  Returns 1 if it ended one. */
static int make_room(struct server *srv)
{
	long long now = lab3_now_ms();
	struct session *idle = NULL;
	char why[LAB3_REASON_MAX + 1];

	for (int i = 0; i < srv->nsessions; i++) {
		struct session *s = srv->sessions[i];

		if ((s->life == LIFE_ACCEPTING ||
		     (s->life == LIFE_RUNNING && s->limit == LIMIT_HANDSHAKE)) &&
		    now - s->connected_at >= IDLE_EVICT_MS &&
		    (idle == NULL || s->connected_at < idle->connected_at))
			idle = s;
	}
	if (idle == NULL)
		return 0;
	snprintf(why, sizeof(why), "ended to make room for another sender: "
		 "no FILE_INFO in %.1f s while the receiver was full (the "
		 "idle limit)", (double)(now - idle->connected_at) / 1000);
	end_early(idle, why);
	advance(srv, idle);
	return 1;
}

/* new_session: a connection request: accept it as a new session, or
 * refuse it when -c sessions are in progress and none can make room. */
static void new_session(struct server *srv, struct rdma_cm_id *id)
{
	struct session *s;

	if (srv->stopping) {
		refuse(srv, id, STOPPING_REASON);
		return;
	}
	if ((in_progress(srv) >= srv->opt->max_sessions && !make_room(srv)) ||
	    srv->nsessions == 2 * MAX_SESSIONS_MAX ||
	    (s = calloc(1, sizeof(*s))) == NULL) {
		refuse_busy(srv, id);
		return;
	}
	*s = (struct session) {
		.opt = srv->opt,
		.budget = &srv->budget,
		.secret = srv->secret,
		.number = ++srv->number,
		.tmp_fd = -1,
		.ledger_fd = srv->ledger_fd,
		.conn = {
			.prog = "receiver",
			.verbose = srv->opt->verbose,
			.timeout_ms = srv->opt->timeout_s * 1000,
			.sent = key_went_out,
			.owner = s,
		},
		.life = LIFE_ACCEPTING,
	};
	srv->sessions[srv->nsessions++] = s;
	clock_gettime(CLOCK_MONOTONIC, &s->start);
	lab3_addr_name(id, 1, s->peer, sizeof(s->peer));
	if (lab3_accept_request(&srv->listener, id, &s->conn) != 0) {
		snprintf(s->error, sizeof(s->error), "%s", s->conn.err);
		finish_session(srv, s);
		return;
	}
	s->connected_at = lab3_now_ms();	/* until it is, the request */
	s->deadline = s->connected_at + s->conn.timeout_ms;
	s->wait_ms = s->conn.timeout_ms;
}

/* close_session: after the lab's steps: let the session's last message
 * (an ERROR) go, then disconnect and wait for the sender's DISCONNECTED,
 * each for a bounded time; then finish it.  Returns 1 while it waits. */
static int close_session(struct server *srv, struct session *s,
			 long long now)
{
	if (s->life == LIFE_CLOSING) {
		if (lab3_try_flush(&s->conn) == -EAGAIN && now < s->deadline)
			return 1;
		s->life = LIFE_DISCONNECTING;
		s->deadline = now + DISCONNECT_WAIT_MS;
		if (!lab3_disconnect_start(&s->conn))
			s->deadline = now;
	}
	if (!s->conn.disconnected && now < s->deadline)
		return 1;
	finish_session(srv, s);
	return 0;
}

/* advance: move session S on as far as it goes now: from its connection
 * to its steps, from its steps to its closing.  S may be finished (and
 * freed) on the way. */
static void advance(struct server *srv, struct session *s)
{
	long long now = lab3_now_ms();

	if (s->life == LIFE_ACCEPTING) {
		if (s->conn.error == 0 && !s->conn.disconnected &&
		    !s->conn.connected)
			return;
		if (s->conn.connected && s->conn.error == 0) {
			s->life = LIFE_RUNNING;
			s->deadline = 0;
			s->connected_at = now;
			s->limit = LIMIT_HANDSHAKE;
			s->limit_at = now + HANDSHAKE_S * 1000LL;
			lab3_rx_begin(&s->rx, s->opt->max_bytes,
				      s->opt->window_size,
				      (uint32_t)s->opt->windows);
		} else {
			snprintf(s->error, sizeof(s->error), "%s",
				 s->conn.error ? s->conn.err :
				 "the peer disconnected");
			s->life = LIFE_CLOSING;
		}
	}
	if (s->life == LIFE_RUNNING) {
		if (lab3_settling(&s->conn)) {
			s->deadline = s->conn.settle_until;
			return;
		}
		if (run_session(s) == STEP_WAIT)
			return;
		s->life = LIFE_CLOSING;
		s->deadline = now + CLOSE_WAIT_MS;
	}
	close_session(srv, s, now);
}

/* wake: something happened on S's connection: its silence is over (its
 * wait starts again), and it moves on.  A wait for room in the send queue
 * starts again only when a send has completed: messages from a sender
 * that takes none of ours do not keep its session alive. */
static void wake(struct server *srv, struct session *s)
{
	if (s->deadline != 0 && s->life == LIFE_RUNNING && s->waiting &&
	    !(s->room_wait && s->conn.credits == 0))
		set_deadline(s);
	advance(srv, s);
}

/* end_by_limit: S ran into its limit (end_early()). */
static void end_by_limit(struct session *s)
{
	char why[LAB3_REASON_MAX + 1];
	double seconds = (double)(lab3_now_ms() - s->connected_at) / 1000;

	if (s->limit == LIMIT_HANDSHAKE)
		snprintf(why, sizeof(why), "no FILE_INFO within %d s of "
			 "connecting (the handshake limit)", HANDSHAKE_S);
	else
		snprintf(why, sizeof(why), "too slow: %llu of %llu bytes in "
			 "%.0f s (the rate floor: 1 MiB/s after %d s)",
			 (unsigned long long)(s->rx.stored *
					      s->rx.window_size),
			 (unsigned long long)s->rx.length, seconds,
			 RATE_GRACE_S);
	end_early(s, why);
}

/* end_early: a limit ends S before its sender is done: WHY is the
 * connection's error, and the sender is told (ERROR, code RESOURCES: the
 * receiver will not hold the session any longer). */
static void end_early(struct session *s, const char *why)
{
	if (s->conn.error != 0)		/* it has ended already */
		return;
	lab3_post_error(&s->conn, LAB3_ERR_RESOURCES, why);
	lab3_time_out(&s->conn, 0);
	snprintf(s->conn.err, sizeof(s->conn.err), "%s", why);
}

/* room_timeout: why S ends when its send queue stayed full for its
 * timeout (wait_for_room()). */
static const char *room_timeout(struct session *s)
{
	static char why[LAB3_REASON_MAX + 1];

	snprintf(why, sizeof(why), "timed out after %d s with the send queue "
		 "full: the sender took none of our last %d messages",
		 (s->wait_ms + 999) / 1000, LAB3_SEND_DEPTH);
	return why;
}

/* expire: S's deadline has passed: a silent sender times out; a closing
 * session stops waiting. */
static void expire(struct server *srv, struct session *s)
{
	if (s->life == LIFE_RUNNING && s->limit != LIMIT_NONE &&
	    lab3_now_ms() >= s->limit_at && s->conn.error == 0)
		end_by_limit(s);
	else if (s->life == LIFE_RUNNING && s->room_wait &&
		 s->conn.credits == 0 && s->conn.error == 0 &&
		 !s->conn.disconnected)
		end_early(s, room_timeout(s));
	else if ((s->life == LIFE_ACCEPTING ||
		  (s->life == LIFE_RUNNING && s->waiting)) &&
		 !lab3_settling(&s->conn))
		lab3_time_out(&s->conn, s->wait_ms);
	advance(srv, s);
}

/* find_session: the session whose connection is ID, or NULL. */
static struct session *find_session(struct server *srv, struct rdma_cm_id *id)
{
	for (int i = 0; i < srv->nsessions; i++)
		if (srv->sessions[i]->conn.id == id)
			return srv->sessions[i];
	return NULL;
}

/* take_cm_events: the events waiting on the listener's channel, up to
 * CM_EVENTS_PER_TURN (a flood of connection requests then waits for the
 * next turn, after the sessions): a connection request becomes a session
 * (or is refused as busy); any other event goes to its session, which
 * moves on at once, so that a session that has ended makes room before
 * the next request is seen.  Returns 0, or -1 when the listener's channel
 * failed. */
static int take_cm_events(struct server *srv)
{
	struct rdma_cm_event *event;
	int ret = 0, taken = 0;

	while (taken++ < CM_EVENTS_PER_TURN &&
	       (ret = lab3_listener_event(&srv->listener, &event)) == 0) {
		struct rdma_cm_id *id = event->id;
		struct session *s;

		if (event->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			rdma_ack_cm_event(event);
			new_session(srv, id);
			continue;
		}
		s = find_session(srv, id);
		if (s != NULL)
			lab3_conn_event(&s->conn, event);
		rdma_ack_cm_event(event);	/* before S may destroy ID */
		if (s != NULL) {
			lab3_poll(&s->conn);	/* messages before hang-up */
			wake(srv, s);
		}
	}
	if (ret == 0 || ret == -EAGAIN)
		return 0;
	fprintf(stderr, "receiver: %s\n", srv->listener.err);
	return -1;
}

/* wait_for_events: the one blocking wait: poll() the listener's channel
 * and every session's completion channel, until something happens or
 * the earliest deadline, with the stop signals let in (WAIT_MASK): the
 * only place they are.  Then take what happened: completions, and
 * rdma_cm events.  Returns 0, or -1 when the listener failed. */
static int wait_for_events(struct server *srv, const sigset_t *wait_mask)
{
	struct pollfd fds[1 + 2 * MAX_SESSIONS_MAX];
	struct timespec ts, *timeout = NULL;
	long long next = -1, now = lab3_now_ms();
	int n = srv->nsessions;

	fds[0] = (struct pollfd){ .fd = srv->listener.cm_channel->fd,
				  .events = POLLIN };
	for (int i = 0; i < n; i++) {
		struct session *s = srv->sessions[i];

		fds[1 + i] = (struct pollfd){ .fd = lab3_conn_fd(&s->conn),
					      .events = POLLIN };
		if (s->deadline != 0 && (next < 0 || s->deadline < next))
			next = s->deadline;
		if (s->woken)
			next = now;	/* its turn came: do not sleep */
	}
	if (next >= 0) {
		next = next > now ? next - now : 0;
		ts = (struct timespec){ .tv_sec = next / 1000,
					.tv_nsec = next % 1000 * 1000000 };
		timeout = &ts;
	}
	if (ppoll(fds, (nfds_t)(1 + n), timeout, wait_mask) < 0) {
		if (errno == EINTR)
			return 0;	/* serve_loop() sees stop_requested */
		fprintf(stderr, "receiver: poll: %s\n", strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++)
		if (fds[1 + i].revents & POLLIN) {
			lab3_conn_ready(&srv->sessions[i]->conn);
			srv->sessions[i]->woken = 1;
		}
	if ((fds[0].revents & POLLIN) && take_cm_events(srv) != 0)
		return -1;
	return 0;
}

/* take_pending_stop: a stop signal that is pending is taken here, on
 * every turn.  The stop signals are let in only while ppoll() sleeps, and
 * it does not sleep, nor let a pending one in, while some descriptor is
 * always ready (a flood of connection requests, say). */
static void take_pending_stop(void)
{
	static const struct timespec now = { 0, 0 };
	sigset_t stop_signals;

	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGINT);
	sigaddset(&stop_signals, SIGTERM);
	if (sigtimedwait(&stop_signals, NULL, &now) > 0)
		stop_requested = 1;
}

/* serve_loop: serve until a stop signal or a failed listener: wait for
 * events, then move on every session that they woke or whose deadline
 * has passed.  No step blocks, so every turn comes back here, where a
 * stop signal is seen: the sessions in progress are ended
 * (stop_sessions()) and the loop goes on until they have closed, a few
 * seconds at most; a second signal ends them at once.  Returns the exit
 * status. */
static int serve_loop(struct server *srv, const sigset_t *wait_mask)
{
	int status = LAB3_EXIT_OK;

	for (;;) {
		struct session *now_serving[2 * MAX_SESSIONS_MAX];
		int n;

		take_pending_stop();
		if (stop_requested) {
			stop_requested = 0;	/* to see a second one */
			if (srv->stopping)
				break;
			stop_sessions(srv);
		}
		if (srv->stopping && srv->nsessions == 0)
			break;
		if (wait_for_events(srv, wait_mask) != 0) {
			status = LAB3_EXIT_CONNECTION;
			break;
		}
		/* A copy: advance() may finish (and free) its session. */
		n = srv->nsessions;
		memcpy(now_serving, srv->sessions, (size_t)n * sizeof(*now_serving));
		for (int i = 0; i < n; i++) {
			struct session *s = now_serving[i];

			if (s->woken) {
				s->woken = 0;
				wake(srv, s);
			} else if (s->deadline != 0 &&
				   lab3_now_ms() >= s->deadline) {
				expire(srv, s);
			}
		}
	}
	while (srv->nsessions > 0)
		finish_session(srv, srv->sessions[0]);
	return status;
}

/* stop_sessions: a stop signal came: refuse new senders from now on, and
 * end every session in progress as a failed one ends: its sender is told
 * (ERROR, code RESOURCES), then all disconnect at once, each waiting a
 * bounded time (close_session()). */
static void stop_sessions(struct server *srv)
{
	long long now = lab3_now_ms();

	srv->stopping = 1;
	for (int i = 0; i < srv->nsessions; i++) {
		struct session *s = srv->sessions[i];

		if (s->life >= LIFE_CLOSING)
			continue;
		if (s->error[0] == '\0')
			snprintf(s->error, sizeof(s->error),
				 "interrupted by a signal");
		if (s->life == LIFE_RUNNING)
			lab3_post_error(&s->conn, LAB3_ERR_RESOURCES,
					STOPPING_REASON);
		s->life = LIFE_CLOSING;
		s->deadline = now + CLOSE_WAIT_MS;
		s->woken = 1;
	}
}

/* ---- Command line ---- */

/* The help text, one source line per output line; usage() fills in the
 * default port, secret file and timeout. */
static const char usage_text[] =
"usage: receiver [-v] [-a ADDR] [-p PORT] [-o DIR] [-m MAX_BYTES] [-l LEDGER]\n"
"                [-c SESSIONS] [-w WINDOW_SIZE] [-n WINDOWS] [-b BUDGET]\n"
"                [-k SECRET_FILE] [-t SECONDS]\n"
"       receiver [-k SECRET_FILE] --key-for ID\n"
"       receiver --ledger-summary LEDGER | --version | -h | --help\n"
"\n"
"Serve Lab 3 senders, several at once, until SIGINT or SIGTERM.\n"
"\n"
"  -a ADDR, -p PORT  listen on ADDR (default: all), PORT (default %d; 0: any)\n"
"  -o DIR          save each verified file into DIR, under its base name\n"
"  -m MAX_BYTES    refuse larger files; K, M, G suffixes (default 64G)\n"
"  -c SESSIONS     senders served at once, 1 to %d; more are busy (default %d)\n"
"  -w WINDOW_SIZE, -n WINDOWS  each session's windows: 64K to 1G (default\n"
"                  16M, less to fit ulimit -l), 2 to %d in flight (default %d)\n"
"  -b BUDGET       window memory of all sessions together (default 2 x -n x -w)\n"
"  -k SECRET_FILE  the secret the keys derive from (default ~/%s)\n"
"  -t SECONDS      end a session after SECONDS of silence (default %d)\n"
"  -l LEDGER       append one JSON line per session to LEDGER, for grading\n"
"  -v              trace each state and each work completion on stderr\n"
"  --key-for ID    print the key a session with ID receives\n"
"  --ledger-summary LEDGER  print each ID's first success and attempts\n"

"\n"
"Exit status: 0 stopped by a signal, or printed; 1 usage error; 2 local\n"
"error (secret file, -o directory, ledger); 3 cannot listen or accept.\n";

/* usage: command-line help on stderr, for -h and for a bad command line;
 * the caller picks the exit status. */
static void usage(void)
{
	fprintf(stderr, usage_text, LAB3_DEFAULT_PORT, MAX_SESSIONS_MAX,
		DEFAULT_MAX_SESSIONS, LAB3_WINDOWS_MAX,
		DEFAULT_WINDOWS, DEFAULT_SECRET, LAB3_DEFAULT_TIMEOUT);
}

/* parse_number_option: -p, -m, -w, -n or -t (OPT_CHAR) with ARG into
 * OPT, with its range checked; -1 after saying what is wrong. */
static int parse_number_option(struct options *opt, int opt_char,
			       const char *arg)
{
	switch (opt_char) {
	case 'p':
		if (lab3_parse_number(arg, 0, 65535) >= 0) {
			opt->port = arg;
			return 0;
		}
		fprintf(stderr, "receiver: -p %s: not a port number\n", arg);
		return -1;
	case 'm':
		if (lab3_parse_size(arg, &opt->max_bytes) == 0)
			return 0;
		fprintf(stderr, "receiver: -m %s: not a byte count\n", arg);
		return -1;
	case 'w':
		opt->window_size_given = 1;
		if (lab3_parse_size(arg, &opt->window_size) == 0 &&
		    opt->window_size >= WINDOW_SIZE_MIN &&
		    opt->window_size <= LAB3_WINDOW_BYTES_MAX &&
		    opt->window_size % 4096 == 0)
			return 0;
		fprintf(stderr, "receiver: -w %s: not a window size from 64K "
			"to 1G, in pages\n", arg);
		return -1;
	case 'b':
		opt->budget_given = 1;
		if (lab3_parse_size(arg, &opt->budget) == 0 &&
		    opt->budget >= WINDOW_SIZE_MIN)
			return 0;
		fprintf(stderr, "receiver: -b %s: not a byte count of 64K or "
			"more\n", arg);
		return -1;
	case 'c':
		opt->max_sessions = (int)lab3_parse_number(arg, 1,
							   MAX_SESSIONS_MAX);
		if (opt->max_sessions >= 0)
			return 0;
		fprintf(stderr, "receiver: -c %s: not a number of sessions "
			"from 1 to %d\n", arg, MAX_SESSIONS_MAX);
		return -1;
	case 'n':
		opt->windows = (int)lab3_parse_number(arg, 2, LAB3_WINDOWS_MAX);
		if (opt->windows >= 0)
			return 0;
		fprintf(stderr, "receiver: -n %s: not a number of windows "
			"from 2 to %d\n", arg, LAB3_WINDOWS_MAX);
		return -1;
	default:	/* 't' */
		opt->timeout_s = lab3_parse_seconds(arg);
		if (opt->timeout_s >= 0)
			return 0;
		fprintf(stderr, "receiver: -t %s: not a number of seconds "
			"from 1 to 3600\n", arg);
		return -1;
	}
}

/* check_modes: refuse serving options next to --key-for (only -k goes
 * with it), and any option next to --ledger-summary. */
static int check_modes(const struct options *opt, int serving_options)
{
	if (opt->key_for != NULL && serving_options) {
		fprintf(stderr, "receiver: --key-for takes no option but -k\n");
		return -1;
	}
	if (opt->ledger_summary != NULL && (serving_options ||
	    opt->key_for != NULL || opt->secret_path != NULL)) {
		fprintf(stderr, "receiver: --ledger-summary takes no other "
			"option\n");
		return -1;
	}
	return 0;
}

/* parse_args: the command line into OPT, then check_modes().  --help and
 * --version answer at once. */
static int parse_args(struct options *opt, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "key-for", required_argument, NULL, 'K' },
		{ "ledger-summary", required_argument, NULL, 'L' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int opt_char, serving_options = 0;

	while ((opt_char = getopt_long(argc, argv, "a:b:c:hk:l:m:n:o:p:t:vw:",
				       longopts, NULL)) != -1) {
		if (strchr("almnoptvw", opt_char) != NULL)
			serving_options = 1;
		switch (opt_char) {
		case 'a': opt->addr = optarg; break;
		case 'k': opt->secret_path = optarg; break;
		case 'l': opt->ledger = optarg; break;
		case 'o': opt->out_dir = optarg; break;
		case 'K': opt->key_for = optarg; break;
		case 'L': opt->ledger_summary = optarg; break;
		case 'v': opt->verbose = 1; break;
		case 'p': case 'm': case 'w': case 'n': case 't': case 'c':
		case 'b':
			if (parse_number_option(opt, opt_char, optarg) != 0)
				return -1;
			break;
		case 'h':
			usage();
			exit(LAB3_EXIT_OK);
		case 'V':
			printf("receiver %s (Lab 3 protocol version %d)\n",
			       LAB3_RELEASE, LAB3_VERSION);
			exit(LAB3_EXIT_OK);
		default:
			usage();
			return -1;
		}
	}
	if (optind != argc) {
		usage();
		return -1;
	}
	return check_modes(opt, serving_options);
}

/* set_budget: the window memory all sessions share (-b): by default
 * twice one session's (-n times -w), within `ulimit -l` if there is one;
 * it must hold one window of -w, and a -b given must fit `ulimit -l`
 * (less LAB3_MEMLOCK_RESERVE), or no session could register it all. */
static int set_budget(struct options *opt)
{
	uint64_t one = opt->window_size * (uint64_t)opt->windows;
	uint64_t limit;
	int limited = lab3_memlock_limit(&limit);

	if (!opt->budget_given) {
		opt->budget = 2 * one;
		if (limited && opt->budget + LAB3_MEMLOCK_RESERVE > limit)
			opt->budget = one;	/* fit_memlock() made it fit */
	}
	if (opt->budget < opt->window_size) {
		fprintf(stderr, "receiver: -b %llu KiB cannot hold one window "
			"of -w %llu KiB\n",
			(unsigned long long)opt->budget >> 10,
			(unsigned long long)opt->window_size >> 10);
		return -1;
	}
	if (limited && opt->budget + LAB3_MEMLOCK_RESERVE > limit) {
		fprintf(stderr, "receiver: -b %llu KiB of windows needs %llu "
			"KiB of locked memory, but `ulimit -l` allows %llu KiB; "
			"raise it, or use a smaller -b\n",
			(unsigned long long)opt->budget >> 10,
			(unsigned long long)(opt->budget +
					     LAB3_MEMLOCK_RESERVE) >> 10,
			(unsigned long long)limit >> 10);
		return -1;
	}
	return 0;
}

/* fit_memlock: the windows are registered memory, which counts against
 * `ulimit -l` (root lifts it: lab3_memlock_limit()), less
 * LAB3_MEMLOCK_RESERVE (common.h).
 * Unless -w was given, shrink the windows to fit the limit; if they still
 * cannot fit, refuse to start, saying so, rather than fail every session
 * later. */
static int fit_memlock(struct options *opt, int window_size_given)
{
	uint64_t need = opt->window_size * (uint64_t)opt->windows +
		       LAB3_MEMLOCK_RESERVE;
	uint64_t fit, limit;

	if (!lab3_memlock_limit(&limit) || limit >= need)
		return 0;
	fit = limit > LAB3_MEMLOCK_RESERVE ?
	      (limit - LAB3_MEMLOCK_RESERVE) / (uint64_t)opt->windows : 0;
	fit &= ~(uint64_t)4095;
	if (!window_size_given && fit >= WINDOW_SIZE_MIN) {
		opt->window_size = fit;
		return 0;
	}
	fprintf(stderr, "receiver: %d windows of %llu KiB need %llu KiB of "
		"locked memory, but `ulimit -l` allows %llu KiB; raise it, or "
		"use a smaller -w or -n\n", opt->windows,
		(unsigned long long)opt->window_size >> 10,
		(unsigned long long)need >> 10,
		(unsigned long long)limit >> 10);
	return -1;
}

/* key_for: print the key a session with ID receives (--key-for). */
static int key_for(const char *id, const uint8_t *secret)
{
	uint8_t key[LAB3_KEY_LEN];
	char hex[2 * LAB3_KEY_LEN + 1], why[128];

	if (lab3_check_id(id, strlen(id), why, sizeof(why)) != 0) {
		fprintf(stderr, "receiver: --key-for: %s\n", why);
		return LAB3_EXIT_USAGE;
	}
	if (lab3_key_for_id(secret, id, key) != 0) {
		fprintf(stderr, "receiver: cannot compute the key\n");
		return LAB3_EXIT_LOCAL;
	}
	lab3_hex(key, LAB3_KEY_LEN, hex);
	printf("%s\n", hex);
	return LAB3_EXIT_OK;
}

/* install_stop_handlers: SIGINT and SIGTERM end the serving loop.  They
 * stay blocked except while the receiver waits (see struct lab3_listener),
 * so that one arriving between two waits is not lost: the next wait
 * returns at once.  ORIG receives the mask to wait with. */
static void install_stop_handlers(sigset_t *orig)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };
	sigset_t stop_signals;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGINT);
	sigaddset(&stop_signals, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop_signals, orig);
	sigdelset(orig, SIGINT);
	sigdelset(orig, SIGTERM);
}

/* load_secret: the secret the keys derive from: -k, or ~/.lab3-secret,
 * created on first use.  Returns 0, or an exit status after saying why. */
static int load_secret(struct options *opt, uint8_t secret[LAB3_SECRET_LEN])
{
	static char path[PATH_MAX];
	char err[LAB3_ERR_LEN];

	if (opt->secret_path == NULL) {
		const char *home = getenv("HOME");

		if (home == NULL) {
			fprintf(stderr, "receiver: HOME is not set; give the "
				"secret file with -k\n");
			return LAB3_EXIT_USAGE;
		}
		snprintf(path, sizeof(path), "%s/%s", home, DEFAULT_SECRET);
		opt->secret_path = path;
	}
	if (lab3_load_secret(opt->secret_path, secret, err, sizeof(err)) != 0) {
		fprintf(stderr, "receiver: %s\n", err);
		return LAB3_EXIT_LOCAL;
	}
	return 0;
}

/* serve: listen, then serve one session after another until a stop
 * signal; the exit status. */
static int serve(struct options *opt, const uint8_t *secret, int ledger_fd)
{
	struct server srv = {
		.opt = opt,
		.secret = secret,
		.ledger_fd = ledger_fd,
		.budget = { .bytes = opt->budget },
	};
	struct lab3_listener *listener = &srv.listener;
	char port[8], where[64];
	sigset_t wait_mask;
	uint16_t bound_port;
	int status;

	if (opt->port[0] == '\0') {
		snprintf(port, sizeof(port), "%d", LAB3_DEFAULT_PORT);
		opt->port = port;
	}
	install_stop_handlers(&wait_mask);
	listener->wait_sigmask = &wait_mask;
	if (lab3_listen(listener, opt->addr, opt->port, &bound_port) != 0) {
		fprintf(stderr, "receiver: listen on %s:%s: %s\n",
			opt->addr ? opt->addr : "*", opt->port, listener->err);
		lab3_listener_destroy(listener);
		return LAB3_EXIT_CONNECTION;
	}
	printf("listening on %s\n",
	       lab3_addr_name(listener->id, 0, where, sizeof(where)));
	fflush(stdout);
	status = serve_loop(&srv, &wait_mask);
	lab3_listener_destroy(listener);
	return status;
}

/* main: the command line, the secret, then --key-for's one answer or
 * serving until a stop signal; enum lab3_exit says how it ended. */
int main(int argc, char **argv)
{
	struct options opt = {
		.port = "",
		.max_bytes = DEFAULT_MAX_BYTES,
		.window_size = DEFAULT_WINDOW_SIZE,
		.windows = DEFAULT_WINDOWS,
		.max_sessions = DEFAULT_MAX_SESSIONS,
		.timeout_s = LAB3_DEFAULT_TIMEOUT,
	};
	uint8_t secret[LAB3_SECRET_LEN];
	char err[LAB3_ERR_LEN];
	int ledger_fd = -1;
	int status;

	if (parse_args(&opt, argc, argv) != 0)
		return LAB3_EXIT_USAGE;
	if (opt.ledger_summary != NULL)
		return ledger_summary(opt.ledger_summary);
	status = load_secret(&opt, secret);
	if (status != 0)
		return status;
	if (opt.key_for != NULL)
		return key_for(opt.key_for, secret);

	if (opt.out_dir != NULL && access(opt.out_dir, W_OK | X_OK) != 0) {
		fprintf(stderr, "receiver: -o %s: %s\n", opt.out_dir,
			strerror(errno));
		return LAB3_EXIT_LOCAL;
	}
	if (opt.ledger != NULL) {
		ledger_fd = lab3_ledger_open(opt.ledger, err, sizeof(err));
		if (ledger_fd < 0) {
			fprintf(stderr, "receiver: %s\n", err);
			return LAB3_EXIT_LOCAL;
		}
	}
	if (fit_memlock(&opt, opt.window_size_given) != 0 ||
	    set_budget(&opt) != 0)
		status = LAB3_EXIT_LOCAL;
	else
		status = serve(&opt, secret, ledger_fd);
	if (ledger_fd >= 0)
		close(ledger_fd);
	return status;
}
