/*
 * listener.h - the server side of a connection, and what a loop that
 * serves many connections at once needs: listening, accepting, and the
 * calls that never block (the receiver's class server, server.c).  A
 * sender needs none of it; common.h is the one connection that both sides
 * share.  Defined in listener.c (listening, accepting, lab3_addr_name(),
 * lab3_conn_fd()), common.c (a CM event, starting a disconnect),
 * completion.c and message.c (the calls that never block), and util.c
 * (lab3_wait_fds(), the one ppoll).
 */
#ifndef LAB3_LISTENER_H
#define LAB3_LISTENER_H

#include <poll.h>

#include "common.h"

/* A receiver's listening endpoint.  A receiver that stops on signals blocks
 * them and sets wait_sigmask to a mask that unblocks them: then they are
 * delivered only while it waits, and every wait returns -EINTR for them.
 * Listening on every address takes two cm_ids on the one channel: id for
 * IPv6 and id4 for IPv4 (see lab3_listen()); otherwise id4 is NULL. */
struct lab3_listener {
	const sigset_t *wait_sigmask;
	struct rdma_event_channel *cm_channel;
	struct rdma_cm_id *id;		/* its address names the listener */
	struct rdma_cm_id *id4;
	char err[LAB3_ERR_LEN];
};

/* ---- Listening and accepting ---- */

/* Server: bind to ADDR:PORT (ADDR NULL for all: IPv6 and IPv4), listen,
 * and store the port actually bound (useful with port 0) in *BOUND_PORT. */
int lab3_listen(struct lab3_listener *listener, const char *addr,
		const char *port, uint16_t *bound_port);

/* Server, for a loop that serves many connections: the next event on the
 * listener's channel (which its connections share) into *EVENT, without
 * waiting; -EAGAIN when there is none.  The caller acknowledges it
 * (rdma_ack_cm_event) before it destroys the event's cm_id. */
int lab3_listener_event(struct lab3_listener *listener,
			struct rdma_cm_event **event);

/* Server: accept the connection request ID (a CONNECT_REQUEST's) into
 * CONN: build its resources and rdma_accept, without waiting for
 * ESTABLISHED.  On failure the caller destroys CONN (and so ID). */
int lab3_accept_request(struct lab3_listener *listener, struct rdma_cm_id *id,
			struct lab3_conn *conn);

/* Server: turn away the connection request ID, saying REASON (see
 * LAB3_BUSY_REASON in protocol.h); the caller destroys ID. */
void lab3_reject(struct rdma_cm_id *id, const char *reason);

/* Free the listener's cm_ids and event channel; as safe on a half-built
 * listener as lab3_conn_destroy(). */
void lab3_listener_destroy(struct lab3_listener *listener);

/* "ADDR:PORT" of the connection's peer (PEER 1) or of our own end
 * (PEER 0), for messages. */
const char *lab3_addr_name(struct rdma_cm_id *id, int peer, char *buf,
			   size_t len);

/* ---- Serving many connections without blocking ---- */

/* The programs' one poll(): wait on the NFDS descriptors of FDS (a
 * listener's CM channel, connections' lab3_conn_fd()) for up to
 * TIMEOUT_MS (-1: no limit), with the signal mask SIGMASK while blocked,
 * if it is not NULL.  A program that blocks its stop signals elsewhere
 * and passes a mask that unblocks them cannot lose a signal that arrives
 * just before the wait.  ppoll()'s result: -1 with errno on failure. */
int lab3_wait_fds(struct pollfd *fds, nfds_t nfds, long long timeout_ms,
		  const sigset_t *sigmask);

/* lab3_recv_msg() and lab3_flush() without waiting, for a loop that serves
 * many connections (server.c): -EAGAIN when there is nothing yet.  The
 * loop waits on lab3_conn_fd() of each connection, calls lab3_conn_ready()
 * when it is readable, and gives a connection that stays silent too long
 * lab3_time_out(). */
int lab3_try_recv_msg(struct lab3_conn *conn, struct lab3_msg *msg);
int lab3_try_flush(struct lab3_conn *conn);

/* lab3_send_error()'s ERROR, posted without waiting (lab3_try_flush()
 * sees it go): 0, -EAGAIN when the send queue is full, or another
 * negative errno when it may not or cannot go out. */
int lab3_post_error(struct lab3_conn *conn, enum lab3_error_code code,
		    const char *reason);

/* Whether the connection has ended but what ended with it is not all
 * known yet (until conn->settle_until): after a failed completion, the
 * peer's ERROR may still turn out to be its cause; after a failure or a
 * hang-up, a SEND's completion may still say whether it went out.
 * Meanwhile lab3_try_flush() says -EAGAIN, and so does lab3_try_recv_msg()
 * after a failure (after a hang-up it returns the messages that came
 * before, then -ECONNRESET). */
int lab3_settling(const struct lab3_conn *conn);

/* The connection's completion channel, to poll() (-1 before it has one). */
int lab3_conn_fd(const struct lab3_conn *conn);

/* Its completion channel is readable: take the event, then lab3_poll(). */
int lab3_conn_ready(struct lab3_conn *conn);

/* The connection has been silent for WAIT_MS: that is its error now
 * ("timed out after N s waiting for" conn->awaiting, or "without word
 * from the peer"; or, if the peer has hung up, "the peer disconnected
 * while we waited for" it).  Returns it. */
int lab3_time_out(struct lab3_conn *conn, int wait_ms);

/* Apply EVENT, an rdma_cm event for the connection's cm_id: ESTABLISHED,
 * DISCONNECTED, or one that ends it (its error).  Returns 1, or the
 * connection's error.  The caller acknowledges the event. */
int lab3_conn_event(struct lab3_conn *conn, const struct rdma_cm_event *event);

/* Disconnect without waiting; returns 1 when the peer's DISCONNECTED is
 * still to come (conn->disconnected, through lab3_conn_event()). */
int lab3_disconnect_start(struct lab3_conn *conn);

#endif /* LAB3_LISTENER_H */
