/*
 * common.h - what the sender and the receiver share: rdma_cm connection
 * setup, the verbs resources of one connection and registration
 * (common.c), one model of completions with one blocking wait
 * (completion.c), message (message.c) and RDMA WRITE (client.c) helpers,
 * the one clock (util.c), and the lab's hashes (hash.c).
 *
 * Conventions: every function returns 0 or a negative errno.  On failure it
 * fills conn->err (or the ERR buffer it is given) with one line saying what
 * failed and why; main() alone prints it and decides the exit status.
 * Nothing here calls exit().
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

/* Exit statuses of both programs, as documented in --help and docs/usage.md. */
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

/* This release of the pair, for --version (the wire protocol has its own
 * number, LAB3_VERSION in protocol.h). */
#define LAB3_RELEASE "1.0"

/* Receive buffers posted at any time: room for a REGION (or DONE) per
 * window, an ERROR, and one spare. */
#define LAB3_RECV_DEPTH (LAB3_WINDOWS_MAX + 2)
#define LAB3_SEND_DEPTH 16	/* RDMA WRITEs and SENDs in flight at once */

/* Locked memory (`ulimit -l`) that the sender's file pieces and the
 * receiver's windows leave free: the message buffers take
 * (LAB3_RECV_DEPTH + LAB3_SEND_DEPTH) * 304 bytes, about 8 KiB; the rest
 * is a margin for what the verbs library pins of its own. */
#define LAB3_MEMLOCK_RESERVE (1u << 20)
#define LAB3_ERR_LEN 256

/* Called by lab3_poll() when a send-queue work request that was posted
 * with a non-zero TAG has completed successfully, in the order they were
 * posted (the send queue completes in order). */
typedef void lab3_sent_fn(void *owner, uint64_t tag);

/*
 * One RDMA connection and everything it owns, in the order it is built:
 * event channel, cm_id, protection domain, completion channel, completion
 * queue, queue pair, message buffers.  lab3_conn_destroy() takes it down in
 * the reverse order and accepts a connection built only part of the way.
 *
 * The completion model.  All work requests complete on the one CQ.
 * lab3_poll() takes every completion there is, without blocking:
 *   - a received message is checked, decoded and put in the inbox, and its
 *     buffer is posted again at once (unless the connection has failed);
 *   - a send-queue completion (a SEND or an RDMA WRITE) gives back its
 *     credit, and calls SENT if it was posted with a tag;
 *   - a peer's ERROR, a failed completion or a malformed message becomes
 *     the connection's error.
 * lab3_wait() is the one blocking wait; the helpers that receive a message
 * or wait for sends to complete are built on it.  The first error stays:
 * every helper returns it from then on.
 */
struct lab3_conn {
	/* Settings, filled in by the caller before use. */
	const char *prog;		/* program name for -v traces */
	int verbose;			/* trace every completion */
	int timeout_ms;			/* longest silence from the peer */
	const sigset_t *wait_sigmask;	/* signal mask while blocked, or
					 * NULL; see lab3_listener */
	lab3_sent_fn *sent;		/* or NULL: no tags */
	void *owner;			/* SENT's first argument */
	char awaiting[96];		/* what we wait for, in words, for the
					 * error a silence or hang-up leaves */

	struct rdma_event_channel *cm_channel;
	int owns_cm_channel;		/* 0 when it is the listener's */
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *comp_channel;
	struct ibv_cq *cq;		/* its context is the connection */
	struct ibv_qp *qp;		/* the queue pair: a client's is on
					 * its cm_id, a server's its own (see
					 * move_server_qp() in listener.c) */
	uint8_t link_layer;		/* the port's, IBV_LINK_LAYER_* */
	union lab3_wire_msg *msgs;	/* LAB3_RECV_DEPTH receive buffers,
					 * then LAB3_SEND_DEPTH send ones */
	struct ibv_mr *msgs_mr;
	uint32_t max_msg_size;		/* the port's largest message */

	/* The send queue: LAB3_SEND_DEPTH credits, one taken by each SEND
	 * or WRITE posted and given back by its completion. */
	int credits;
	unsigned next_send;		/* SENDs posted: the next send buffer */

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

/* ---- Connection setup and teardown ---- */

/* The client's (client.c): resolve HOST:PORT, build the resources,
 * connect. */
int lab3_connect(struct lab3_conn *conn, const char *host, const char *port);

/* Disconnect and wait (bounded) for the CM to confirm it. */
void lab3_disconnect(struct lab3_conn *conn);

/* Free everything CONN owns, in the reverse order of setup; CONN may be
 * built only part of the way, and can be destroyed again afterwards. */
void lab3_conn_destroy(struct lab3_conn *conn);

/* How long to wait for a step whose length grows with BYTES: the timeout
 * plus one second for every 4 MiB (a floor under any real link's speed). */
int lab3_wait_for_bytes(const struct lab3_conn *conn, uint64_t bytes);

/* ---- Completions: the connection's one model (see struct lab3_conn) ---- */

/* Take every completion waiting on the CQ, without blocking, and leave it
 * armed.  Returns how many were taken (0: none), or a negative errno if
 * the CQ itself failed.  Whatever the completions were, their effect is in
 * CONN: the inbox, the credits, conn->error. */
int lab3_poll(struct lab3_conn *conn);

/* Block until something happens on the connection (completions, which
 * lab3_poll() takes, or an rdma_cm event), for WAIT_MS at most (0: the
 * connection's timeout).  A connection's one blocking wait: it watches the
 * completion channel and the rdma_cm channel together, with the signal mask
 * conn->wait_sigmask.  Returns 0, or the connection's error: its own
 * (timed out, interrupted by a signal) or one lab3_poll() found. */
int lab3_wait(struct lab3_conn *conn, int wait_ms);

/* The next message from the inbox, waiting up to WAIT_MS (0: the
 * connection's timeout) of silence for one.  A peer's ERROR is never
 * returned as a message: it is the connection's error, -EREMOTEIO, with
 * its reason in conn->err.  -ECONNRESET when the peer hung up, once the
 * messages it sent before have been taken. */
int lab3_recv_msg(struct lab3_conn *conn, struct lab3_msg *msg, int wait_ms);

/* Wait until all the send-queue work posted so far has completed, with at
 * most WAIT_MS (0: the connection's timeout) of silence in between. */
int lab3_flush(struct lab3_conn *conn, int wait_ms);

/* The programs' one clock: monotonic, in microseconds (for the times
 * they report), and the same in milliseconds (for deadlines). */
long long lab3_now_us(void);
long long lab3_now_ms(void);

/* ---- Messages, memory and RDMA WRITE ---- */

/* Block until the send queue has room for one more SEND or WRITE (a
 * credit: LAB3_SEND_DEPTH of them, one taken by each work request posted
 * and given back by its completion), with at most WAIT_MS (0: the
 * connection's timeout) of silence.  Returns 0, or the connection's
 * error. */
int lab3_wait_for_room(struct lab3_conn *conn, int wait_ms);

/* Encode MSG and post a SEND of it, without waiting for it to complete;
 * TAG (or 0) is passed to conn->sent when it has.  Never blocks: it takes
 * a credit, and says -EAGAIN when there is none (the send queue is full:
 * lab3_wait_for_room() first) or while the connection settles
 * (lab3_settling() in listener.h); else 0 or the connection's error. */
int lab3_post_msg(struct lab3_conn *conn, const struct lab3_msg *msg,
		  uint64_t tag);

/* Wait for room, encode MSG, SEND it and wait until the send queue is
 * empty. */
int lab3_send_msg(struct lab3_conn *conn, const struct lab3_msg *msg);

/* Tell the peer why the connection ends: an ERROR with CODE and REASON,
 * sent behind any work still on the send queue and waited for, with at
 * most a second of silence.  Best effort, and never in answer to the
 * peer's own ERROR; keeps conn->error and conn->err. */
void lab3_send_error(struct lab3_conn *conn, enum lab3_error_code code,
		     const char *reason);

/* Register LEN bytes at ADDR with ACCESS flags on the connection's PD
 * (none for what an RDMA WRITE only reads).  A failure is said in
 * conn->err; it is not the connection's error. */
int lab3_reg_mr(struct lab3_conn *conn, void *addr, size_t len, int access,
		struct ibv_mr **mr);

/* The client's (client.c): post one RDMA WRITE of LEN bytes from MR at
 * LOCAL to REMOTE_ADDR/RKEY, without waiting for it; TAG, the credit and
 * -EAGAIN as for lab3_post_msg(). */
int lab3_post_write(struct lab3_conn *conn, struct ibv_mr *mr,
		    const void *local, uint32_t len, uint64_t remote_addr,
		    uint32_t rkey, uint64_t tag);

/* ---- SHA-256 and hex ---- */

/* SHA-256 of data that comes in pieces: begin, add each piece, end.
 * lab3_sha256_end() and lab3_sha256_free() release the context. */
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
