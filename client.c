/* SPDX-License-Identifier: MIT */
/*
 * client.c - the client side of a connection, which only the sender is
 * (declared in common.h), in the order a client calls it: resolve the
 * receiver's address and a route to it; build the connection on that
 * device, its queue pair on the cm_id, and connect; post an RDMA WRITE;
 * at the end, say why in an ERROR and disconnect.  And siw's nudge
 * (provider.c), posted here.  What both sides share is common.c; the
 * server's side is the receiver's own listener.
 *
 * These are the lab's own verbs.  In the students' kit of depth verbs,
 * their bodies here and common.c's verbs are theirs to write.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "conn_internal.h"
#include "explain.h"
#include "provider.h"

#define ERROR_WAIT_MS 1000	/* silence while our own ERROR goes out */
#define DISCONNECT_WAIT_MS 2000	/* how long to wait for DISCONNECTED */

#define RESOLVE_TIMEOUT_MS 5000	/* rdma_resolve_addr / _route budget */

/* ---- Resolve, route, connect ---- */

/* resolve_error: a failed rdma_resolve_addr() or rdma_resolve_route()
 * (CALL) for the address DST is the connection's error.  ENODEV gets
 * words of its own: it is what a user sees when the address is on no
 * RDMA device (and what siw means by its EINVAL for a loopback
 * address). */
static int resolve_error(struct lab3_conn *conn, const char *call,
			 const struct sockaddr *dst)
{
	int err = errno;

	if (err == ENODEV || siw_loopback_einval(err, dst))
		return conn_error(conn, -err, "%s", conn_no_device_msg);
	return conn_error(conn, -err, "%s: %s", call, strerror(err));
}

/* lab3_resolve: see common.h.  Each step's event comes through
 * lab3_wait(), which notes it in conn->cm_event. */
int lab3_resolve(struct lab3_conn *conn, const char *host, const char *port)
{
	char why[LAB3_ERR_LEN];
	int ret;

	conn->owns_cm_channel = 1;
	ret = conn_open_cm_id(&conn->cm_channel, &conn->id, conn, why,
			      sizeof(why));
	if (ret != 0)
		return conn_error(conn, ret, "%s", why);
	/* SOLUTION verbs the address and the route: Look HOST:PORT up with
	 * lab3_getaddrinfo() into a struct rdma_addrinfo *ADDR (hints: a
	 * struct rdma_addrinfo with ai_port_space RDMA_PS_TCP; its failure:
	 * return conn_error(conn, ret, "%s", why)).  Set conn->cm_event to
	 * LAB3_NO_CM_EVENT, then rdma_resolve_addr() on conn->id from any
	 * source (NULL) to ADDR->ai_dst_addr (a timeout of
	 * RESOLVE_TIMEOUT_MS); if it fails, ret = resolve_error() with the
	 * call's name and ADDR->ai_dst_addr.  Only after that,
	 * rdma_freeaddrinfo(ADDR), failed or not: resolve_error() reads
	 * ADDR's address, so freeing ADDR before it is a use after free.
	 * Then, while ret is 0, lab3_wait(conn, 0) until conn->cm_event is
	 * RDMA_CM_EVENT_ADDR_RESOLVED (a non-zero ret is the connection's
	 * error: return it).  Then the same for rdma_resolve_route()
	 * (RESOLVE_TIMEOUT_MS too; a failure's address is
	 * rdma_get_peer_addr(conn->id), nothing to free) and
	 * RDMA_CM_EVENT_ROUTE_RESOLVED. */
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP };
	struct rdma_addrinfo *addr;

	ret = lab3_getaddrinfo(host, port, &hints, &addr, why, sizeof(why));
	if (ret != 0)
		return conn_error(conn, ret, "%s", why);
	conn->cm_event = LAB3_NO_CM_EVENT;
	if (rdma_resolve_addr(conn->id, NULL, addr->ai_dst_addr,
			      RESOLVE_TIMEOUT_MS) != 0)
		ret = resolve_error(conn, "rdma_resolve_addr",
				    addr->ai_dst_addr);
	rdma_freeaddrinfo(addr);
	while (ret == 0 && conn->cm_event != RDMA_CM_EVENT_ADDR_RESOLVED)
		ret = lab3_wait(conn, 0);
	if (ret != 0)
		return ret;
	conn->cm_event = LAB3_NO_CM_EVENT;
	if (rdma_resolve_route(conn->id, RESOLVE_TIMEOUT_MS) != 0)
		return resolve_error(conn, "rdma_resolve_route",
				     rdma_get_peer_addr(conn->id));
	while (ret == 0 && conn->cm_event != RDMA_CM_EVENT_ROUTE_RESOLVED)
		ret = lab3_wait(conn, 0);
	return ret;
	/* END SOLUTION */
}

/* create_qp: the client's RC queue pair, made on its cm_id
 * (rdma_create_qp()), so that rdma_cm moves it through its states as the
 * connection is made. */
static int create_qp(struct lab3_conn *conn)
{
	/* SOLUTION verbs the queue pair: rdma_create_qp() on conn->id and
	 * conn->pd with the attributes conn_qp_attr(conn, &attr) fills in
	 * (a reliable-connected QP on the one CQ; read them in common.c).  It
	 * returns non-zero on failure: set errno to 0 before, and then
	 * return conn_errno(conn, "rdma_create_qp", ENOMEM).  Otherwise
	 * take the QP from conn->id->qp into conn->qp and return 0. */
	struct ibv_qp_init_attr attr;

	conn_qp_attr(conn, &attr);
	errno = 0;
	if (rdma_create_qp(conn->id, conn->pd, &attr) != 0)
		return conn_errno(conn, "rdma_create_qp", ENOMEM);
	conn->qp = conn->id->qp;
	return 0;
	/* END SOLUTION */
}

/* lab3_connect: see common.h. */
int lab3_connect(struct lab3_conn *conn)
{
	/* The resources first, in the slides' order: the PD, the
	 * completion channel and the CQ (conn_build_resources()), the queue
	 * pair, then the message buffers registered and the receives posted
	 * (conn_setup_msgs()): a receive must wait before the peer can send. */
	int ret = conn_build_resources(conn);

	if (ret == 0)
		ret = create_qp(conn);
	if (ret == 0)
		ret = conn_setup_msgs(conn);
	if (ret != 0)
		return ret;
	/* SOLUTION verbs the connection: Set conn->cm_event to
	 * LAB3_NO_CM_EVENT, rdma_connect() conn->id with the parameters
	 * conn_params(&param) fills in, and lab3_wait(conn, 0) until
	 * conn->cm_event is RDMA_CM_EVENT_ESTABLISHED (a non-zero return is
	 * the error).  A failed rdma_connect(): return conn_errno(conn,
	 * "rdma_connect", EIO) (iWARP's ECONNREFUSED, nobody listens, it
	 * says in words). */
	struct rdma_conn_param param;

	conn_params(&param);
	conn->cm_event = LAB3_NO_CM_EVENT;
	if (rdma_connect(conn->id, &param) != 0)
		return conn_errno(conn, "rdma_connect", EIO);
	while (ret == 0 && conn->cm_event != RDMA_CM_EVENT_ESTABLISHED)
		ret = lab3_wait(conn, 0);
	return ret;
	/* END SOLUTION */
}

/* ---- The RDMA WRITE ---- */

/* lab3_post_write: see common.h.  Post only: its completion comes back
 * through lab3_wait() like any other, and counts in
 * conn->sends_completed. */
int lab3_post_write(struct lab3_conn *conn, struct ibv_mr *mr,
		    const void *local, uint32_t len, uint64_t remote_addr,
		    uint32_t rkey)
{
	/* SOLUTION verbs the RDMA WRITE: One SGE for the LEN bytes at LOCAL
	 * (lkey: mr->lkey); one struct ibv_send_wr, opcode
	 * IBV_WR_RDMA_WRITE, its fields wr.rdma.remote_addr REMOTE_ADDR and
	 * wr.rdma.rkey RKEY (for a variable named wr: wr.wr.rdma.rkey), and
	 * wr_id WR_ID(WR_WRITE, 0), by which its completion is known.  Post
	 * it with conn_post_send(conn, &wr, 0) (common.c: it takes a send
	 * credit, and says -EAGAIN when the send queue is full), and return
	 * what that returns. */
	struct ibv_sge sge = {
		.addr = (uintptr_t)local,
		.length = len,
		.lkey = mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = WR_ID(WR_WRITE, 0),
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.wr.rdma = {
			.remote_addr = remote_addr,
			.rkey = rkey,
		},
	};

	return conn_post_send(conn, &wr, 0);
	/* END SOLUTION */
}

/* lab3_nudge: see common.h and "A nudge" in provider.c: the zero-length
 * RDMA WRITE (which places nothing and needs no rkey) that
 * siw_nudge_due() asks for. */
void lab3_nudge(struct lab3_conn *conn)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_RDMA_WRITE };

	wr.wr_id = WR_ID(WR_WRITE, 0);
	if (siw_nudge_due(conn, lab3_now_ms()))
		conn_post_send(conn, &wr, 0);
}

/* ---- The end ---- */

/* lab3_send_error: see common.h.  It goes out even when the connection
 * has failed (that is when it is needed): lab3_post_error() may post
 * then, and lab3_wait() waits on a failed connection for what comes
 * next. */
void lab3_send_error(struct lab3_conn *conn, enum lab3_error_code code,
		     const char *reason)
{
	long long give_up = lab3_now_ms() + ERROR_WAIT_MS;

	while (lab3_post_error(conn, code, reason) == -EAGAIN &&
	       lab3_now_ms() < give_up)
		lab3_wait(conn, ERROR_WAIT_MS);
	while (conn->credits < LAB3_SEND_DEPTH && conn->connected &&
	       !conn->disconnected && lab3_now_ms() < give_up)
		lab3_wait(conn, ERROR_WAIT_MS);
}

/* lab3_disconnect: see common.h; the wait is DISCONNECT_WAIT_MS at
 * most. */
void lab3_disconnect(struct lab3_conn *conn)
{
	long long give_up = lab3_now_ms() + DISCONNECT_WAIT_MS;

	if (!conn->connected)
		return;
	conn->connected = 0;
	rdma_disconnect(conn->id);
	while (!conn->disconnected && lab3_now_ms() < give_up)
		lab3_wait(conn, DISCONNECT_WAIT_MS);
}
