/* SPDX-License-Identifier: MIT */
/*
 * receiver.c - Lab 3's receiver: take files into memory by RDMA WRITE,
 * check their SHA-256, and give each sender whose file arrived intact the
 * secret key for its ID.
 *
 * It serves many sessions at once (-c), in one thread, until SIGINT or
 * SIGTERM.  This file is one session's part of the lab: its steps, in the
 * lab's order (see protocol.h).  One function per state; the state is
 * derived from the receiver's rules (lab3_rx_next_step() in rules.h), which
 * also say which message each state may take:
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
 * room in its send queue), it says so (STEP_WAIT), and the class server
 * (server.c) runs the session's steps again when its connection moves:
 * one wait watches the connection manager and every session's
 * completions, so a slow, silent or hostile sender holds up only its own
 * session.  Nor does a step work long: it sends one REGION, or stores
 * 1 MiB of a chunk, and yields (STEP_YIELD) if it has more.  (What a step
 * still does at once is local: registering a window, writing and syncing
 * the file, the ledger.)
 *
 * A session that fails sends ERROR to the sender when it still can, and
 * its summary line says why.  Either way the receiver goes on serving.
 *
 * The machinery is elsewhere: server.c (the class server), store.c (the
 * file and ledger record a session keeps), receiver_cli.c (the command
 * line), session.h (what they share).  This file reads top down: the
 * state machine, its states in the lab's order, then their helpers.
 */
#define _GNU_SOURCE	/* sync_file_range() */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include "common.h"
#include "listener.h"
#include "rules.h"
#include "secret.h"
#include "session.h"

/* A session's steps never block (see run_session()): the calls that can
 * are poisoned here, so that using one does not compile. */
#pragma GCC poison lab3_wait lab3_nudge lab3_resolve lab3_connect
#pragma GCC poison lab3_send_msg lab3_send_error lab3_disconnect

#define STORE_SLICE (1u << 20)	/* bytes of a chunk stored per turn */
#define CANARY_STRIDE 4096u	/* a canary in each piece of a chunk */

/* The states of a session, one function each, in the lab's order. */
static int recv_file_info(struct session *s);	/* step 1 */
static int send_region(struct session *s);	/* step 2 */
static int recv_done(struct session *s);	/* step 3 */
static int store_chunk(struct session *s);	/*   and store the chunk */
static int send_verdict(struct session *s);	/* step 4 */
static int recv_id(struct session *s);		/* step 5 */
static int send_key(struct session *s);		/* step 6 */
static int wait_disconnect(struct session *s);	/* the end */

/* The helpers, defined after the states that use them. */
static int receive(struct session *s, struct lab3_msg *msg, int wait_ms);
static int receive_any(struct session *s, struct lab3_msg *msg, int wait_ms);
static int post(struct session *s, const struct lab3_msg *msg);
static int may_send(struct session *s);
static int judge(struct session *s, const struct lab3_msg *msg);
static int conn_failed(struct session *s, int ret);
static int give_up(struct session *s, enum lab3_error_code code,
		   const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int tell_error(struct session *s, enum lab3_error_code code);
static void trace(const struct session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static struct window *chunk_window(struct session *s, uint64_t chunk);
static int unwritten_chunk(struct session *s, const struct window *w);
static int store_slice(struct session *s, const struct window *w,
		       uint64_t len);
static int setup_windows(struct session *s);
static void plant_canaries(struct session *s, struct window *w);
static uint64_t find_canary(const struct session *s,
			    const struct window *w, uint64_t *at,
			    uint64_t *checked);

/* ---- One session: the state machine ---- */

/* run_session: the state machine of one session.  Its state is derived
 * from the rules (lab3_rx_next_step() in rules.h); each step does its work
 * and tells the rules, until a step must wait for the sender
 * (STEP_WAIT: the serving loop calls run_session() again when the
 * connection moves) or yields (STEP_YIELD: the loop calls it again on its
 * next turn), the sender hangs up (STEP_OVER) or a step fails
 * (STEP_FAILED).  The table says which function does each step. */
int run_session(struct session *s)
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

	while (ret == 0 && (step = lab3_rx_next_step(&s->rx)) != LAB3_RX_NO_STEP) {
		if (s->opt->verbose && !s->waiting)
			fprintf(stderr, "receiver: session %u: state %s\n",
				s->number, lab3_rx_step_name(step));
		lab3_rx_awaiting(&s->rx, step, s->conn.awaiting,
				 sizeof(s->conn.awaiting));
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
	start_rate_floor(s);	/* from now on the bytes must keep coming */
	return setup_windows(s);
}

/* send_region: step 2, REGION: hide canaries in the window of the next
 * chunk, register it for remote write and send its descriptor, for every
 * chunk that has a free window (at the start, one per window; later, the
 * window just stored), one a turn.  Each registration is new, so its
 * rkey is, too.  A zero-length file gets one empty descriptor: there is
 * nothing to write. */
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
			long long t = cpu_now();

			ret = lab3_reg_mr(&s->conn, w->buf, w->length,
					  IBV_ACCESS_LOCAL_WRITE |
					  IBV_ACCESS_REMOTE_WRITE, &w->mr);
			cpu_add(&s->cpu.windows, t);
			if (ret != 0)
				return give_up(s, LAB3_ERR_RESOURCES, "%s",
					       s->conn.err);
			msg.region.addr = (uintptr_t)w->buf;
			msg.region.rkey = w->mr->rkey;
		}
		/* After the registration, which has brought the window's
		 * pages in (give_back() dropped them) in one call: planted
		 * first, each page was a fault of its own. */
		plant_canaries(s, w);
		msg.region.length = w->length;
		msg.region.offset = w->offset;
		ret = post(s, &msg);
		if (ret != 0)
			return ret;
		trace(s, "chunk %llu (offset %llu, %llu bytes) in window %u",
		      (unsigned long long)s->rx.offered - 1,
		      (unsigned long long)offset, (unsigned long long)length,
		      (unsigned)(w - s->windows));
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
	wait_ms = lab3_ms_for_bytes(&s->conn, w->length);
	return receive(s, &msg, wait_ms);
}

/* store_chunk: revoke the sender's access to the chunk's window, make
 * sure that the sender did write it (no canary left whole), then hash the
 * chunk and append it to the file being built, STORE_SLICE bytes a turn
 * (a DONE costs the sender nothing, and the chunk may be a GiB: the
 * other sessions' turns come between the slices).  Deregistering first
 * means no RDMA WRITE can change the bytes after they were checked. */
static int store_chunk(struct session *s)
{
	struct window *w = chunk_window(s, s->rx.stored);
	uint64_t len = w->length - w->stored;
	long long t;

	if (s->conn.error != 0)		/* nothing it stores would count */
		return conn_failed(s, s->conn.error);
	if (w->mr != NULL) {
		t = cpu_now();
		ibv_dereg_mr(w->mr);
		w->mr = NULL;
		cpu_add(&s->cpu.windows, t);
	}
	if (w->stored == 0 && unwritten_chunk(s, w) != 0)
		return -1;
	if (len > STORE_SLICE)
		len = STORE_SLICE;
	if (store_slice(s, w, len) != 0)
		return -1;
	w->stored += len;
	s->bytes_stored += len;
	if (w->stored < w->length)
		return STEP_YIELD;
	w->stored = 0;
	if (lab3_rx_stored(&s->rx))
		s->limit = LIMIT_NONE;	/* every byte is in */
	/* Its window's memory goes back to the budget when another session
	 * waits for it (so that windows go round), or when no chunk is left
	 * for it. */
	if (s->budget->nqueue > 0 ||
	    s->rx.stored - 1 + s->rx.nwindows >= s->rx.nchunks) {
		t = cpu_now();
		give_back(s, w);
		cpu_add(&s->cpu.windows, t);
	}
	return 0;
}

/* unwritten_chunk: -1 (and the session ends, saying where) if a canary
 * is left whole in W's chunk: a DONE for bytes that no WRITE reached.
 * All of them left: the sender most likely wrote nothing there.  (Each
 * text fits an ERROR's LAB3_REASON_MAX bytes for any chunk of a file
 * under a TiB.) */
static int unwritten_chunk(struct session *s, const struct window *w)
{
	long long t = cpu_now();
	uint64_t at = 0, checked, whole = find_canary(s, w, &at, &checked);

	cpu_add(&s->cpu.canaries, t);
	trace(s, "chunk %llu (offset %llu, %llu bytes) checked: %llu of %llu "
	      "places written", (unsigned long long)s->rx.stored,
	      (unsigned long long)w->offset, (unsigned long long)w->length,
	      (unsigned long long)(checked - whole),
	      (unsigned long long)checked);
	if (whole == 0)
		return 0;
	if (whole == checked)
		return give_up(s, LAB3_ERR_PROTOCOL, "chunk at offset %llu: "
			       "none of its %llu place%s checked was written "
			       "(a DONE before its RDMA WRITEs, or none?)",
			       (unsigned long long)w->offset,
			       (unsigned long long)checked,
			       checked == 1 ? "" : "s");
	return give_up(s, LAB3_ERR_PROTOCOL, "chunk at offset %llu: nothing "
		       "was written at window offset %llu (a WRITE too short, "
		       "or misplaced?)", (unsigned long long)w->offset,
		       (unsigned long long)at);
}

/* store_slice: the next LEN bytes of W's chunk: hash them and, with -o,
 * append them to the file and start writing them to disk, so that the
 * fsync at the end is short.  Each counts in its phase of the session's
 * CPU.  0, or -1 (give_up()). */
static int store_slice(struct session *s, const struct window *w,
		       uint64_t len)
{
	const uint8_t *at = w->buf + w->stored;
	long long t = cpu_now();

	if (lab3_sha256_add(&s->hash, at, len) != 0)
		return give_up(s, LAB3_ERR_INTERNAL, "cannot compute SHA-256");
	t = cpu_add(&s->cpu.hash, t);
	if (s->tmp_fd < 0)
		return 0;
	if (append_to_file(s, at, len) != 0)
		return give_up(s, LAB3_ERR_INTERNAL, "cannot write %.120s: %s",
			       s->tmp_path, strerror(errno));
	t = cpu_add(&s->cpu.copy, t);
	sync_file_range(s->tmp_fd, (off64_t)(w->offset + w->stored),
			(off64_t)len, SYNC_FILE_RANGE_WRITE);
	cpu_add(&s->cpu.fsync, t);
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
	long long t;
	int ret;

	/* Deciding moves the session on: first make sure it can go. */
	ret = may_send(s);
	if (ret != 0)
		return ret;
	t = cpu_now();
	ret = lab3_sha256_end(&s->hash, sha256);
	cpu_add(&s->cpu.hash, t);
	if (ret != 0)
		return give_up(s, LAB3_ERR_INTERNAL, "cannot compute SHA-256");
	verdict = memcmp(sha256, s->sha256, LAB3_SHA256_LEN) == 0 ?
		  LAB3_VERDICT_GOOD : LAB3_VERDICT_BAD;
	lab3_rx_decide(&s->rx, verdict);
	if (verdict == LAB3_VERDICT_GOOD && s->tmp_fd >= 0 &&
	    sync_file(s) != 0) {
		lab3_post_error(&s->conn, LAB3_ERR_INTERNAL,
				"the receiver could not save the file");
		return -1;
	}
	msg.verdict.verdict = verdict;
	/* What has come by now, the sender sent before it could know the
	 * verdict: an ID among it is out of order (recv_id()). */
	lab3_take_news(&s->conn);
	s->early = s->conn.ninbox;
	ret = post(s, &msg);
	s->has_verdict = ret == 0;	/* the summary's: one that went out */
	return ret;
}

/* recv_id: step 5, ID: the student's ID, after a good verdict, and sent
 * after it: one that had come before the verdict went out is refused, as
 * is one that is not on the class's roster (-r), if there is one. */
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
	if (s->roster != NULL && !lab3_roster_has(s->roster, s->id))
		return give_up(s, LAB3_ERR_NO_KEY, "ID '%s' is not on this "
			       "class's roster", s->id);
	return 0;
}

/* send_key: step 6, KEY: HMAC-SHA256(secret, ID) for the ID just received.
 * With -o, the verified file gets its final name first (the record names
 * it); with -l, the ledger's record of the session is written and synced
 * then: a crash in between may lose a key that the ledger lists, but can
 * never release one that it does not.  No saved file, no record: no key;
 * nor past the ledger's keys for this ID from this address this hour
 * (key_admitted()). */
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
		/* (From here to the record, nothing waits: no other session
		 * of this ID can slip in between the count and the check.) */
		if (key_admitted(s) != 0)
			return tell_error(s, LAB3_ERR_RESOURCES);
		if (lab3_key_for_id(s->secret, s->id, msg.key.key) != 0)
			return give_up(s, LAB3_ERR_INTERNAL,
				       "cannot compute the key");
		if (s->tmp_fd >= 0 && keep_file(s) != 0) {
			lab3_post_error(&s->conn, LAB3_ERR_INTERNAL, "the "
					"receiver could not save the file");
			return -1;
		}
		if (s->ledger_fd >= 0 &&
		    record_session(s, 1, s->error, sizeof(s->error)) != 0) {
			lab3_post_error(&s->conn, LAB3_ERR_INTERNAL, "the "
					"receiver could not record the session");
			return -1;
		}
		ret = post(s, &msg);
		if (ret != 0)
			return ret;
		s->key_posted = 1;
		s->key_send = s->conn.sends_posted;
	}
	/* "key sent" only once it has gone: its completion says so
	 * (conn.sends_completed reaches it).  The connection may end right
	 * after, which does not undo it: over iWARP a SEND completes once it
	 * is on the wire, and a sender that has its key may hang up before
	 * the receiver sees that completion, or as the KEY goes out (the
	 * common layer counts it sent then: see "A SEND cut short" in
	 * provider.c).  Then the session is over. */
	ret = lab3_sends_completed(&s->conn);
	if (ret == -EAGAIN)
		return wait_for_peer(s, 0);
	if (ret != 0 && s->conn.sends_completed < s->key_send)
		return conn_failed(s, ret);
	s->key_sent = 1;
	lab3_rx_key_sent(&s->rx);
	return ret != 0 ? STEP_OVER : 0;
}

/* wait_disconnect: after step 6 (or a bad verdict at step 4): the
 * session's work is done; the sender hangs up, which ends the session
 * (returns 1).  Any message instead is refused by the rules: after a bad
 * verdict, an ID gets no key. */
static int wait_disconnect(struct session *s)
{
	struct lab3_msg msg;
	int ret = lab3_take_msg(&s->conn, &msg);

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
	int ret = lab3_take_msg(&s->conn, msg);

	if (ret == -EAGAIN)
		return wait_for_peer(s, wait_ms);
	return ret != 0 ? conn_failed(s, ret) : 0;
}

/* post: send MSG, without waiting for it to go.  0, STEP_WAIT when the
 * send queue is full (the steps that post check conn.credits before
 * anything they cannot do twice), or -1. */
static int post(struct session *s, const struct lab3_msg *msg)
{
	int ret = lab3_post_msg(&s->conn, msg);

	if (ret == -EAGAIN)
		return s->conn.credits == 0 ? wait_for_room(s) :
		       wait_for_peer(s, 0);
	return ret != 0 ? conn_failed(s, ret) : 0;
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

/* trace: under -v, one line about session S for its student ("receiver:
 * session 1: chunk 0 ..."). */
static void trace(const struct session *s, const char *fmt, ...)
{
	va_list ap;

	if (!s->opt->verbose)
		return;
	fprintf(stderr, "receiver: session %u: ", s->number);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* tell_error: the session has failed for the reason in s->error (the
 * file's store said it): tell the sender, with CODE.  Returns -1. */
static int tell_error(struct session *s, enum lab3_error_code code)
{
	lab3_post_error(&s->conn, code, s->error);
	return -1;
}

/* ---- Windows and the file being built ---- */

/* chunk_window: the window that chunk CHUNK goes through. */
static struct window *chunk_window(struct session *s, uint64_t chunk)
{
	return &s->windows[chunk % s->rx.nwindows];
}

/* setup_windows: make sure the file is within the class's limits (room
 * on disk, the quotas, the ledger's share: admit_file()); allocate
 * the file's windows (the rules chose how many: no more than it has
 * chunks), start the hash and, with -o, the temporary file. */
static int setup_windows(struct session *s)
{
	uint64_t size = window_bytes(s);
	long long t;
	int ret;

	if (admit_file(s) != 0)
		return tell_error(s, LAB3_ERR_RESOURCES);

	t = cpu_now();
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
	cpu_add(&s->cpu.windows, t);
	if (getrandom(&s->canary_key, sizeof(s->canary_key), 0) !=
	    sizeof(s->canary_key)) {
		give_up(s, LAB3_ERR_INTERNAL, "cannot get random bytes: %s",
			strerror(errno));
		return -1;
	}
	t = cpu_now();
	ret = lab3_sha256_begin(&s->hash);
	cpu_add(&s->cpu.hash, t);
	if (ret != 0) {
		give_up(s, LAB3_ERR_INTERNAL, "cannot start SHA-256");
		return -1;
	}
	if (s->opt->out_dir != NULL && open_tmp_file(s) != 0)
		return tell_error(s, LAB3_ERR_INTERNAL);
	return 0;
}

/* free_windows: deregister and free the windows, drop the hash and any
 * temporary file that did not become the saved file (drop_tmp_file()). */
void free_windows(struct session *s)
{
	uint64_t size = window_bytes(s);
	long long t = cpu_now();

	for (uint32_t i = 0; i < s->rx.nwindows; i++) {
		if (s->windows[i].mr != NULL)
			ibv_dereg_mr(s->windows[i].mr);
		give_back(s, &s->windows[i]);
		if (s->windows[i].buf != NULL)
			munmap(s->windows[i].buf, size);
	}
	cpu_add(&s->cpu.windows, t);
	leave_queue(s);
	lab3_sha256_free(&s->hash);
	drop_tmp_file(s);
}

/* ---- Canaries: a DONE must follow real RDMA WRITEs ---- */

/* A chunk is cut into pieces of CANARY_STRIDE bytes (the last one takes
 * the rest, so none is shorter than the stride unless the chunk is).  In
 * each piece the receiver hides a canary: CANARY_LEN random bytes at a
 * random place, both drawn from the session's key, which the sender
 * never sees and cannot read back (a window is for remote write only).
 * The canary runs from its place round to the piece's start when it
 * reaches the end, so each byte of a piece is as likely as any other to
 * hold one.  Two things follow:
 *   - at DONE, a canary still whole says that its place was never
 *     written: the session ends then, naming it (find_canary());
 *   - a canary that a sender only partly wrote, or one of a chunk
 *     shorter than CANARY_LEN (it is filled with random bytes whole),
 *     is in the bytes hashed: the SHA-256 the sender announced at
 *     FILE_INFO, before the key was drawn, matches them only if the
 *     bytes left happen to be what the sender's file holds there: 1 in
 *     2^(8k) for k bytes.
 * So a sender that leaves a gap of g bytes in a piece of p is caught
 * (g + 15) times in p: one that writes only part of each piece (the
 * rest of a new window is zeros, which a file of zeros would not need
 * to write) fails at once; a byte left out of every piece gets through
 * 1 time in 3 at 1 MiB, and 1 in 10^28 at 64 MiB.  An honest sender,
 * which writes every byte, fails only where its file holds a canary's 16
 * bytes at their very place: 1 in 2^128 a piece. */
#define CANARY_LEN 16u

/* canary_word: the Nth 64-bit word drawn for the piece at file offset
 * OFFSET: splitmix64 (a published 64-bit mixer, a bijection) of the
 * session's random key and (OFFSET, N).  A key is the session's alone,
 * drawn once (setup_windows()), so whatever a session learns of its
 * canaries is no use to the next. */
static uint64_t canary_word(uint64_t key, uint64_t offset, uint64_t n)
{
	uint64_t z = key ^ (offset * 4 + n);

	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A piece's canary: its piece (start and length in the chunk), its
 * place in the piece, its length and its bytes.  Its bytes run from
 * there round to the piece's start when they reach its end, so that every
 * byte of a piece is as likely as any other to hold one. */
struct canary {
	uint64_t start;
	uint64_t piece;
	uint64_t at;
	uint32_t len;
	uint8_t bytes[CANARY_LEN];
};

/* canary_of: the canary of piece I of W's chunk, into C. */
static void canary_of(const struct session *s, const struct window *w,
		      uint64_t i, struct canary *c)
{
	uint64_t words[2];

	c->start = i * CANARY_STRIDE;
	c->piece = w->length - c->start;
	if (c->piece >= 2 * CANARY_STRIDE)
		c->piece = CANARY_STRIDE;  /* (the last piece takes the rest) */
	c->len = c->piece < CANARY_LEN ? (uint32_t)c->piece : CANARY_LEN;
	c->at = canary_word(s->canary_key, w->offset + c->start, 0) %
		c->piece;
	words[0] = canary_word(s->canary_key, w->offset + c->start, 1);
	words[1] = canary_word(s->canary_key, w->offset + c->start, 2);
	memcpy(c->bytes, words, CANARY_LEN);
}

/* canary_byte: where byte J of canary C lies in its window. */
static uint8_t *canary_byte(const struct window *w, const struct canary *c,
			    uint32_t j)
{
	return w->buf + c->start + (c->at + j) % c->piece;
}

/* pieces: how many canaries a chunk of LENGTH bytes holds. */
static uint64_t pieces(uint64_t length)
{
	return length < CANARY_STRIDE ? (length > 0) : length / CANARY_STRIDE;
}

/* plant_canaries: before W is offered for its chunk, hide a canary in
 * each of its pieces.  Its WRITEs replace them; the rest of the window
 * keeps what it held.  (Its CPU counts as the canaries', as does
 * find_canary()'s, in unwritten_chunk().) */
static void plant_canaries(struct session *s, struct window *w)
{
	long long t = cpu_now();
	struct canary c;

	for (uint64_t i = 0; i < pieces(w->length); i++) {
		canary_of(s, w, i, &c);
		for (uint32_t j = 0; j < c.len; j++)
			*canary_byte(w, &c, j) = c.bytes[j];
	}
	cpu_add(&s->cpu.canaries, t);
}

/* canary_whole: whether canary C is still whole in W. */
static int canary_whole(const struct window *w, const struct canary *c)
{
	for (uint32_t j = 0; j < c->len; j++)
		if (*canary_byte(w, c, j) != c->bytes[j])
			return 0;
	return 1;
}

/* find_canary: after W's DONE, count the canaries of CANARY_LEN bytes
 * still whole in its chunk (places that no WRITE reached), with the
 * window offset of the first in *AT, and the places checked in *CHECKED.
 * (A chunk shorter than that is left to the verdict: its few bytes are
 * too likely to be written with the same values.) */
static uint64_t find_canary(const struct session *s, const struct window *w,
			    uint64_t *at, uint64_t *checked)
{
	uint64_t whole = 0;
	struct canary c;

	*checked = 0;
	for (uint64_t i = 0; i < pieces(w->length); i++) {
		canary_of(s, w, i, &c);
		if (c.len < CANARY_LEN)
			continue;
		++*checked;
		if (canary_whole(w, &c) && whole++ == 0)
			*at = c.start + c.at;
	}
	return whole;
}
