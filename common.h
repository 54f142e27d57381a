/*
 * common.h - what the sender and the receiver share: rdma_cm connection
 * setup, the verbs resources of one connection, message and RDMA WRITE
 * helpers, a blocking wait for completions, command-line numbers, the
 * lab's hashes, the secret file and its keys.
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

/* Exit statuses of both programs, as documented in --help and the README. */
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

/* What a work request was for, kept in its wr_id. */
enum lab3_wr_kind {
	LAB3_WR_RECV = 0,	/* wr_id = LAB3_WR_RECV + receive buffer slot */
	LAB3_WR_SEND = 100,	/* a SEND from one of the send buffers */
	LAB3_WR_WRITE = 200,	/* an RDMA WRITE of file data */
};

/*
 * One RDMA connection and everything it owns, in the order it is built:
 * event channel, cm_id, protection domain, completion channel, completion
 * queue, queue pair, message buffers.  lab3_conn_destroy() takes it down in
 * the reverse order and accepts a connection built only part of the way.
 */
struct lab3_conn {
	/* Settings, filled in by the caller before use. */
	const char *prog;		/* program name for -v traces */
	int verbose;			/* trace every completion */
	int timeout_ms;			/* longest silence from the peer */
	const sigset_t *wait_sigmask;	/* signal mask while blocked, or
					 * NULL; see lab3_listener */

	struct rdma_event_channel *cm_channel;
	int owns_cm_channel;		/* 0 when it is the listener's */
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *comp_channel;
	struct ibv_cq *cq;
	int has_qp;
	union lab3_wire_msg *msgs;	/* LAB3_RECV_DEPTH receive buffers,
					 * then LAB3_SEND_DEPTH send ones */
	unsigned next_send;		/* sends posted so far */
	struct ibv_mr *msgs_mr;
	uint32_t max_msg_size;		/* the port's largest message */

	/* Receive completions that arrived while we waited for a send. */
	struct ibv_wc pending[LAB3_RECV_DEPTH];
	int npending;
	int connected;			/* ESTABLISHED was seen */
	int disconnected;		/* the peer's DISCONNECTED was seen */

	char err[LAB3_ERR_LEN];
};

/* A receiver's listening endpoint.  A receiver that stops on signals blocks
 * them and sets wait_sigmask to a mask that unblocks them: then they are
 * delivered only while it waits, and every wait returns -EINTR for them. */
struct lab3_listener {
	const sigset_t *wait_sigmask;
	struct rdma_event_channel *cm_channel;
	struct rdma_cm_id *id;
	char err[LAB3_ERR_LEN];
};

/* ---- Connection setup and teardown ---- */

/* Client: resolve HOST:PORT, build the resources, connect. */
int lab3_connect(struct lab3_conn *conn, const char *host, const char *port);

/* Server: bind to ADDR:PORT (ADDR NULL for all), listen, and store the
 * port actually bound (useful with port 0) in *BOUND_PORT. */
int lab3_listen(struct lab3_listener *listener, const char *addr,
		const char *port, uint16_t *bound_port);

/* Server: wait for one connection request, build its resources and accept
 * it.  Returns -EINTR when a signal arrives while waiting. */
int lab3_accept(struct lab3_listener *listener, struct lab3_conn *conn);

/* Disconnect and wait (bounded) for the CM to confirm it. */
void lab3_disconnect(struct lab3_conn *conn);

/* Free everything CONN owns, in the reverse order of setup; CONN may be
 * built only part of the way, and can be destroyed again afterwards. */
void lab3_conn_destroy(struct lab3_conn *conn);

/* Free the listener's cm_id and event channel; as safe on a half-built
 * listener as lab3_conn_destroy(). */
void lab3_listener_destroy(struct lab3_listener *listener);

/* "ADDR:PORT" of the connection's peer (PEER 1) or of our own end
 * (PEER 0), for messages. */
const char *lab3_addr_name(struct rdma_cm_id *id, int peer, char *buf,
			   size_t len);

/* How long to wait for a step whose length grows with BYTES: the timeout
 * plus one second for every 4 MiB (a floor under any real link's speed). */
int lab3_wait_for_bytes(const struct lab3_conn *conn, uint64_t bytes);

/* ---- Messages, memory and RDMA WRITE ---- */

/* Encode MSG and post a SEND of it, without waiting.  Its completion
 * (wr_id LAB3_WR_SEND) is the caller's to collect.  The caller must never
 * have more than LAB3_SEND_DEPTH work requests outstanding on the send
 * queue: the send buffers are used in turn, LAB3_SEND_DEPTH of them. */
int lab3_post_msg(struct lab3_conn *conn, const struct lab3_msg *msg);

/* SEND the LEN bytes at BYTES as they are, and wait for the send to
 * complete: for a tool that must send malformed messages on purpose
 * (tests/evil-sender).  Only when no other send-queue work is
 * outstanding. */
int lab3_send_bytes(struct lab3_conn *conn, const void *bytes, size_t len);

/* Encode MSG, SEND it and wait for the send to complete.  Only when no
 * other send-queue work is outstanding. */
int lab3_send_msg(struct lab3_conn *conn, const struct lab3_msg *msg);

/* Send an ERROR with CODE and REASON, if the connection still allows. */
void lab3_send_error(struct lab3_conn *conn, enum lab3_error_code code,
		     const char *reason);

/* Wait up to WAIT_MS (0: the connection's timeout) for the next work
 * completion of any kind, and check its status. */
int lab3_next_completion(struct lab3_conn *conn, struct ibv_wc *wc,
			 int wait_ms);

/* From the receive completion WC, check and decode the message, and post
 * its buffer again.  A malformed message is -EPROTO with conn->err saying
 * what was wrong; a completion that is not a receive is -EIO. */
int lab3_take_msg(struct lab3_conn *conn, const struct ibv_wc *wc,
		  struct lab3_msg *msg);

/* lab3_next_completion() then lab3_take_msg(): the next message, when no
 * send-queue work is outstanding. */
int lab3_recv_msg(struct lab3_conn *conn, struct lab3_msg *msg, int wait_ms);

/* Register LEN bytes at ADDR with ACCESS flags on the connection's PD. */
int lab3_reg_mr(struct lab3_conn *conn, void *addr, size_t len, int access,
		struct ibv_mr **mr);

/* Post one RDMA WRITE of LEN bytes from MR at LOCAL to REMOTE_ADDR/RKEY. */
int lab3_post_rdma_write(struct lab3_conn *conn, struct ibv_mr *mr,
			 const void *local, uint32_t len,
			 uint64_t remote_addr, uint32_t rkey);

/* Wait up to WAIT_MS (0: the connection's timeout) for the next completion
 * of a send-queue work request, which must be of KIND (LAB3_WR_SEND or
 * LAB3_WR_WRITE), and check its status.  Receive completions that come
 * first are kept for lab3_recv_msg() and lab3_next_completion(). */
int lab3_wait_send(struct lab3_conn *conn, enum lab3_wr_kind kind,
		   int wait_ms);

/* ---- Command lines ---- */

/* A decimal number from MIN to MAX (MIN >= 0), or -1 if ARG is not that. */
long lab3_parse_number(const char *arg, long min, long max);

/* A -t argument: 1 to 3600 seconds, or -1 if ARG is not that. */
int lab3_parse_seconds(const char *arg);

/* A byte count with an optional K, M or G suffix (powers of 1024) into
 * *OUT; -1 if ARG is not that. */
int lab3_parse_size(const char *arg, uint64_t *out);

/* ---- Hashes and the secret key ---- */

/* SHA-256 of data that comes in pieces: begin, add each piece, end.
 * lab3_sha256_end() and lab3_sha256_free() release the context. */
struct lab3_sha256 {
	void *ctx;		/* OpenSSL's EVP_MD_CTX */
};
int lab3_sha256_begin(struct lab3_sha256 *h);
int lab3_sha256_add(struct lab3_sha256 *h, const void *data, size_t len);
int lab3_sha256_end(struct lab3_sha256 *h, uint8_t out[LAB3_SHA256_LEN]);
void lab3_sha256_free(struct lab3_sha256 *h);

/* SHA-256 of the LEN bytes at DATA into OUT; 0, or -EIO if OpenSSL fails. */
int lab3_sha256(const void *data, size_t len, uint8_t out[LAB3_SHA256_LEN]);

/* HMAC-SHA256 with KEY of the LEN bytes at DATA into OUT; 0 or -EIO. */
int lab3_hmac_sha256(const uint8_t *key, size_t key_len,
		     const void *data, size_t len,
		     uint8_t out[LAB3_KEY_LEN]);

/* Write LEN bytes at IN as 2*LEN lowercase hex digits and a NUL to OUT. */
void lab3_hex(const uint8_t *in, size_t len, char *out);

/* Read 2*LEN hex digits (either case) at IN into LEN bytes at OUT; 0, or
 * -1 if any of them is not a hex digit. */
int lab3_parse_hex(const char *in, uint8_t *out, size_t len);

#define LAB3_SECRET_LEN 32

/* Read the secret from PATH, or create it (random, mode 0600) if it does
 * not exist. */
int lab3_load_secret(const char *path, uint8_t secret[LAB3_SECRET_LEN],
		     char *err, size_t err_len);

/* The key a session with ID receives: HMAC-SHA256(secret, ID). */
int lab3_key_for_id(const uint8_t secret[LAB3_SECRET_LEN], const char *id,
		    uint8_t key[LAB3_KEY_LEN]);

/* ---- Files ---- */

/* Make the directory entry of PATH durable (fsync its directory). */
int lab3_fsync_parent(const char *path, char *err, size_t err_len);

/* The end of opening WHAT (e.g. "ledger") at PATH: FD is what open()
 * returned; a failure, or a file that is not a regular one, is put in
 * words in ERR and FD closed.  Returns FD with its stat in *ST, or a
 * negative errno. */
struct stat;
int lab3_open_checked(int fd, const char *what, const char *path,
		      struct stat *st, char *err, size_t err_len);

#endif /* LAB3_COMMON_H */
