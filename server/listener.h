/* SPDX-License-Identifier: MIT */
/*
 * listener.h - the server side of a connection (listener.c): listening,
 * accepting with the server's own queue pair, disconnecting without
 * waiting, and taking that queue pair down.  A sender needs none of it;
 * common.h is the one connection that both sides share, and the class
 * server serves many at once with lab3_wait()'s LAB3_NO_WAIT and the one
 * ppoll() (util.h).
 */
#ifndef LAB3_LISTENER_H
#define LAB3_LISTENER_H

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
 * ESTABLISHED.  On failure the caller destroys CONN (and so ID) with
 * lab3_server_conn_destroy(). */
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

/* ---- A connection the server accepted ---- */

/* Take what has come on the connection (its completion channel is
 * readable, or the server looks anyway): lab3_wait() that never sleeps,
 * the class server's one way to it (the receiver's session and its
 * server poison the blocking calls). */
static inline int lab3_take_news(struct lab3_conn *conn)
{
	return lab3_wait(conn, LAB3_NO_WAIT);
}

/* The connection's completion channel, to poll() (-1 before it has one). */
int lab3_conn_fd(const struct lab3_conn *conn);

/* Disconnect without waiting; returns 1 when the peer's DISCONNECTED is
 * still to come (conn->disconnected, through lab3_apply_cm_event()). */
int lab3_disconnect_start(struct lab3_conn *conn);

/* lab3_conn_destroy() for a connection lab3_accept_request() built: its
 * queue pair, the server's own, first. */
void lab3_server_conn_destroy(struct lab3_conn *conn);

#endif /* LAB3_LISTENER_H */
