/* SPDX-License-Identifier: MIT */
/*
 * common.h - what the sender and the receiver share: one RDMA connection
 * (common.c: rdma_cm setup, the verbs resources, registration, posting,
 * the lab's messages and the one blocking wait), what its completions
 * mean (completion.c), the client's side (client.c), the one clock
 * (lib/util.c) and the lab's hashes (lib/hash.c).
 *
 * Conventions: every function returns 0 or a negative errno (-EAGAIN:
 * not yet, try again after lab3_wait()), but for a yes/no question,
 * whose name asks it (lab3_settling(): whether ...), a count (how many,
 * or a negative errno), and void ones.  None returns a struct: a helper
 * that makes one fills in the caller's (conn_qp_attr(conn, &attr)).  On
 * failure it records the connection's first error (conn->error,
 * conn->err saying what failed and why; a later failure changes
 * nothing); main() alone prints it and decides the exit status.  Nothing
 * here calls exit().
 */
#ifndef LAB3_COMMON_H
#define LAB3_COMMON_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "protocol.h"

/* Exit statuses of both programs, as each one's --help lists them. */
enum lab3_exit {
	LAB3_EXIT_OK = 0,
	LAB3_EXIT_USAGE = 1,		/* bad command line */
	LAB3_EXIT_LOCAL = 2,		/* file, memory, secret file */
	LAB3_EXIT_CONNECTION = 3,	/* connection or transport, timeouts */
	LAB3_EXIT_REFUSED = 4,		/* the receiver refused (ERROR) */
	LAB3_EXIT_BAD_VERDICT = 5,	/* the receiver's hash did not match */
	LAB3_EXIT_PROTOCOL = 6,		/* the peer broke the protocol */
};

#define LAB3_DEFAULT_TIMEOUT 30	/* seconds of silence before giving up */

/* Receive buffers posted at any time: room for a REGION (or DONE) per
 * window, an ERROR, and one spare. */
#define LAB3_RECV_DEPTH (LAB3_WINDOWS_MAX + 2)
#define LAB3_SEND_DEPTH 16	/* RDMA WRITEs and SENDs in flight at once */
/* Completions the one CQ must hold: every send and receive that can be
 * outstanding at once. */
#define LAB3_CQ_DEPTH (LAB3_SEND_DEPTH + LAB3_RECV_DEPTH)

/* Locked memory (`ulimit -l`) left beside the file pieces and windows:
 * the message buffers (about 8 KiB) and what the verbs library pins. */
#define LAB3_MEMLOCK_RESERVE (1u << 20)
#define LAB3_ERR_LEN 256

/* lab3_wait()'s WAIT_MS for a look that never sleeps (the class server,
 * which waits for all its connections at once). */
#define LAB3_NO_WAIT (-1)

/*
 * One RDMA connection and everything it owns, in the order it is built:
 * event channel, cm_id, protection domain, completion channel, completion
 * queue, queue pair, message buffers.  lab3_conn_destroy() takes it down in
 * the reverse order and accepts a connection built only part of the way.
 *
 * The completion model.  All work requests complete on the one CQ, and
 * lab3_wait() is the one place they are taken (completion.c says what each
 * means):
 *   - a received message is checked, decoded and put in the inbox, and its
 *     buffer is posted again at once (unless the connection has failed);
 *     lab3_take_msg() hands them out, oldest first;
 *   - a send-queue completion (a SEND or an RDMA WRITE) gives back its
 *     credit and counts in sends_completed: the send queue completes in
 *     the order it was posted, so the Nth send posted (sends_posted was N
 *     after it) has completed once sends_completed reaches N;
 *   - a peer's ERROR, a failed completion or a malformed message becomes
 *     the connection's error.
 * The programs' loops take what they need, and wait while it is not there:
 *
 *	while ((ret = lab3_take_msg(conn, &msg)) == -EAGAIN)
 *		lab3_wait(conn, wait_ms);
 *
 * The first error stays: every call returns it from then on.
 */
struct lab3_conn {
	/* Settings, filled in by the caller before use. */
	const char *prog;		/* program name for -v traces */
	int verbose;			/* trace every completion */
	int timeout_ms;			/* longest silence from the peer */
	const sigset_t *wait_sigmask;	/* signal mask while blocked, or
					 * NULL; see lab3_listener */
	char awaiting[96];		/* what we wait for, in words, for the
					 * error a silence or hang-up leaves */

	struct rdma_event_channel *cm_channel;
	int owns_cm_channel;		/* 0 when it is the listener's */
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *comp_channel;
	struct ibv_cq *cq;		/* its context is the connection */
	struct ibv_qp *qp;		/* the queue pair: a client's is on
					 * its cm_id, the class server's its
					 * own (the receiver's listener) */
	uint8_t link_layer;		/* the port's, IBV_LINK_LAYER_* */
	union lab3_wire_msg *msgs;	/* LAB3_RECV_DEPTH receive buffers,
					 * then LAB3_SEND_DEPTH send ones */
	struct ibv_mr *msgs_mr;
	uint32_t max_msg_size;		/* the port's largest message */

	/* The send queue: LAB3_SEND_DEPTH credits, one taken by each SEND
	 * or WRITE posted and given back by its completion. */
	int credits;
	unsigned next_send;		/* SENDs posted: the next send buffer */
	uint64_t sends_posted;		/* SENDs and WRITEs posted, ever */
	uint64_t sends_completed;	/* ... and completed successfully */

	/* Messages received and not yet taken, oldest first. */
	struct lab3_msg inbox[LAB3_RECV_DEPTH];
	int ninbox;
	int heard;			/* a message has come */

	/* Over iWARP, the zero-length WRITEs that may still go while
	 * nothing has been heard (see "A nudge" in provider.c). */
	int nudges;
	long long nudge_at;		/* ms: the next one */

	/* What rdma_cm said of this connection. */
	enum rdma_cm_event_type cm_event;	/* the last event for it */
	int connected;			/* ESTABLISHED was seen, and we
					 * have not started to disconnect */
	int established;		/* ESTABLISHED was seen, ever */
	int disconnected;		/* the peer's DISCONNECTED was seen */
	int refused;			/* the peer rejected the connection
					 * and said why (conn->err) */
	int refused_busy;		/* ... with LAB3_BUSY_REASON */

	/* The connection's first error (a negative errno; -EREMOTEIO: the
	 * peer's ERROR), with err saying what it was. */
	int error;
	int peer_code;			/* with -EREMOTEIO: the ERROR's code */
	int error_from_wc;		/* a failed completion: a peer's ERROR
					 * that comes after still explains it */
	int recv_flushed;		/* a receive was flushed: every
					 * message before it has been seen */
	long long settle_until;		/* until then, see what ended with
					 * it (lab3_settling()) */

	char err[LAB3_ERR_LEN];
};

/* ---- The client's setup (client.c), in rdma_cm's order ---- */

/* Open the connection's event channel and cm_id, look HOST:PORT up, and
 * have rdma_cm resolve it to a local RDMA device (ADDR_RESOLVED) and a
 * route to the peer (ROUTE_RESOLVED), each within the timeout. */
int lab3_resolve(struct lab3_conn *conn, const char *host, const char *port);

/* On that device: the PD, the completion channel, the CQ, the queue pair
 * on the cm_id and the message buffers with their receives posted; then
 * rdma_connect() and wait until the peer has accepted (ESTABLISHED). */
int lab3_connect(struct lab3_conn *conn);

/* ---- The one wait, and what it brings (common.c, completion.c) ---- */

/* Block until something happens on the connection (completions, taken as
 * the model above says; an rdma_cm event for it; a new error), for WAIT_MS
 * of silence at most (0: the connection's timeout; then lab3_time_out()),
 * on both channels, with the signal mask conn->wait_sigmask; a failure is
 * let settle first.  Returns 0, or the connection's error (-ECONNRESET
 * after a hang-up).  LAB3_NO_WAIT: take what has come, never sleep. */
int lab3_wait(struct lab3_conn *conn, int wait_ms);

/* The next message from the inbox, without waiting: 0; -EAGAIN when none
 * has come yet.  A peer's ERROR is never returned as a message: it is the
 * connection's error, -EREMOTEIO, with its reason in conn->err, handed
 * out after the messages that came before it.  -ECONNRESET when the peer
 * hung up, once the messages it sent before have been taken. */
int lab3_take_msg(struct lab3_conn *conn, struct lab3_msg *msg);

/* Whether every SEND and WRITE posted has completed, without waiting: 0,
 * -EAGAIN while some have not, or the connection's error. */
int lab3_sends_completed(struct lab3_conn *conn);

/* Whether what ended the connection is not all known yet (the peer's
 * ERROR, our last SEND's completion may still come, for 200 ms at most):
 * meanwhile takes and posts say -EAGAIN, and lab3_wait() waits it out. */
int lab3_settling(const struct lab3_conn *conn);

/* The connection has been silent for WAIT_MS: that is its error now,
 * naming conn->awaiting (or the peer's hang-up, if it came).  Returns it. */
int lab3_time_out(struct lab3_conn *conn, int wait_ms);

/* Apply EVENT, an rdma_cm event for the connection's cm_id: ESTABLISHED,
 * DISCONNECTED, or one that ends it (its error).  Returns 0, or the
 * connection's error.  The caller acknowledges the event.  (lab3_wait()
 * reads a client's own events; the class server reads the listener's.) */
int lab3_apply_cm_event(struct lab3_conn *conn,
		       const struct rdma_cm_event *event);

/* How long, in ms, to wait for a step whose length grows with BYTES: the
 * timeout plus one second for every 4 MiB (a floor under any real link's
 * speed).  It waits for nothing itself. */
int lab3_ms_for_bytes(const struct lab3_conn *conn, uint64_t bytes);

/* ---- Memory, messages and RDMA WRITE: posted, never waited for ---- */

/* Register LEN bytes at ADDR with ACCESS flags on the connection's PD
 * (none for what an RDMA WRITE only reads). */
int lab3_reg_mr(struct lab3_conn *conn, void *addr, size_t len, int access,
		struct ibv_mr **mr);

/* Encode MSG and post a SEND of it.  Never blocks: it takes a send credit
 * (LAB3_SEND_DEPTH of them, one taken by each SEND or WRITE posted and
 * given back by its completion), and says -EAGAIN when there is none (the
 * send queue is full: lab3_wait(), then try again) or while the connection
 * settles; else 0 (posted) or the connection's error (nothing posted). */
int lab3_post_msg(struct lab3_conn *conn, const struct lab3_msg *msg);

/* The client's (client.c): post one RDMA WRITE of LEN bytes from MR at
 * LOCAL to REMOTE_ADDR/RKEY; the credit and -EAGAIN as for
 * lab3_post_msg(). */
int lab3_post_write(struct lab3_conn *conn, struct ibv_mr *mr,
		    const void *local, uint32_t len, uint64_t remote_addr,
		    uint32_t rkey);

/* The ERROR that tells the peer why the connection ends, with CODE and
 * REASON, posted even on a connection that has failed: 0, -EAGAIN when
 * the send queue is full, or another negative errno when it may not go
 * out (before the connection is up, after the peer's own ERROR or
 * hang-up, or once a failed completion has broken the queue pair). */
int lab3_post_error(struct lab3_conn *conn, enum lab3_error_code code,
		    const char *reason);

/* ---- The client's end (client.c) ---- */

/* siw's nudge (provider.c): while the client has heard nothing since it
 * connected over iWARP, post a zero-length RDMA WRITE when one is due
 * (lab3_wait() returns when it is).  Nothing on any other provider. */
void lab3_nudge(struct lab3_conn *conn);

/* lab3_post_error(), then wait (a second at most) until it has gone. */
void lab3_send_error(struct lab3_conn *conn, enum lab3_error_code code,
		     const char *reason);

/* Disconnect, and wait (bounded) for the CM to confirm it. */
void lab3_disconnect(struct lab3_conn *conn);

/* Free everything CONN owns, in the reverse order of setup; CONN may be
 * built only part of the way, and can be destroyed again afterwards. */
void lab3_conn_destroy(struct lab3_conn *conn);

/* The programs' one clock: monotonic, in microseconds (for the times
 * they report), and the same in milliseconds (for deadlines). */
long long lab3_now_us(void);
long long lab3_now_ms(void);

/* ---- SHA-256 and hex ---- */

/* SHA-256 of data that comes in pieces: begin, add each piece, end.  Each
 * returns 0, or a negative errno (-ENOMEM: no context; -EIO: OpenSSL
 * failed).  lab3_sha256_end() and lab3_sha256_free() release the
 * context: after a failed add, free it. */
struct lab3_sha256 {
	void *ctx;		/* OpenSSL's EVP_MD_CTX */
};
int lab3_sha256_begin(struct lab3_sha256 *h);
int lab3_sha256_add(struct lab3_sha256 *h, const void *data, size_t len);
int lab3_sha256_end(struct lab3_sha256 *h, uint8_t out[LAB3_SHA256_LEN]);
void lab3_sha256_free(struct lab3_sha256 *h);

/* Write LEN bytes at IN as 2*LEN lowercase hex digits and a NUL to OUT. */
void lab3_hex(const uint8_t *in, size_t len, char *out);

#endif /* LAB3_COMMON_H */
