/*
 * client.c - the client side of a connection, which only the sender is
 * (declared in common.h): resolve the receiver's address and a route to
 * it, build the connection on that device and connect; post an RDMA
 * WRITE.  The server side is listener.c; what both sides share, common.c
 * (the cm_id and its events, the resources, registration, posting and
 * the completion wait), completion.c (what completions mean, and the
 * waits) and message.c (the lab's messages).
 *
 * These are the lab's own verbs, in the order a client calls them.  In
 * the students' kit of depth verbs, each function's body is theirs to
 * write, as are common.c's verbs regions.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "conn_internal.h"
#include "explain.h"
#include "provider.h"

#define RESOLVE_TIMEOUT_MS 5000	/* rdma_resolve_addr / _route budget */

/* ---- Resolve, route, connect ---- */

/* resolve_error: report a failed rdma_resolve_addr() or
 * rdma_resolve_route() (CALL) for the address DST.  ENODEV gets words of
 * its own: it is what a user sees when the address is on no RDMA device
 * (and what siw means by its EINVAL for a loopback address). */
static int resolve_error(struct lab3_conn *conn, const char *call,
			 const struct sockaddr *dst)
{
	int ret = -errno;

	if (errno == ENODEV || siw_loopback_einval(errno, dst))
		snprintf(conn->err, sizeof(conn->err), "%s",
			 conn_no_device_msg);
	else
		snprintf(conn->err, sizeof(conn->err), "%s: %s", call,
			 strerror(errno));
	return ret;
}

/* resolve_addr_and_route: look HOST:PORT up, then have rdma_cm resolve it
 * to a local RDMA device and a route to the peer, waiting for each step's
 * event: what must happen before the resources can be built on that
 * device. */
static int resolve_addr_and_route(struct lab3_conn *conn, const char *host,
				  const char *port)
{
	/* SOLUTION verbs the address and the route: Look HOST:PORT up with
	 * conn_get_addrinfo() (hints: ai_port_space RDMA_PS_TCP), then
	 * rdma_resolve_addr() on conn->id from any source (NULL) to its
	 * ai_dst_addr (a timeout of RESOLVE_TIMEOUT_MS) and
	 * conn_wait_cm_event() for RDMA_CM_EVENT_ADDR_RESOLVED; then
	 * rdma_resolve_route() (RESOLVE_TIMEOUT_MS too) and
	 * RDMA_CM_EVENT_ROUTE_RESOLVED.  A failed
	 * call: resolve_error() with the call's name and the address
	 * (ai_dst_addr; for the route, rdma_get_peer_addr(conn->id)).
	 * rdma_freeaddrinfo() what conn_get_addrinfo() gave. */
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP };
	struct rdma_addrinfo *addr;
	int ret;

	ret = conn_get_addrinfo(host, port, &hints, &addr, conn->err,
				sizeof(conn->err));
	if (ret != 0)
		return ret;
	ret = rdma_resolve_addr(conn->id, NULL, addr->ai_dst_addr,
				RESOLVE_TIMEOUT_MS);
	if (ret != 0)
		ret = resolve_error(conn, "rdma_resolve_addr",
				    addr->ai_dst_addr);
	rdma_freeaddrinfo(addr);
	if (ret != 0)
		return ret;
	ret = conn_wait_cm_event(conn, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (ret != 0)
		return ret;
	if (rdma_resolve_route(conn->id, RESOLVE_TIMEOUT_MS) != 0)
		return resolve_error(conn, "rdma_resolve_route",
				     rdma_get_peer_addr(conn->id));
	return conn_wait_cm_event(conn, RDMA_CM_EVENT_ROUTE_RESOLVED);
	/* END SOLUTION */
}

/* build_and_connect: on the device the address resolved to, build the
 * connection's resources (its queue pair on the cm_id) with its receives
 * posted, then connect and wait until the receiver has accepted. */
static int build_and_connect(struct lab3_conn *conn)
{
	/* SOLUTION verbs the connection: conn_build_resources(conn, 1) (the
	 * PD, the CQ and the QP on conn->id) and conn_setup_msgs() (the
	 * message buffers, the receives posted); then rdma_connect() with
	 * conn_params() and conn_wait_cm_event() for
	 * RDMA_CM_EVENT_ESTABLISHED.  A failed rdma_connect():
	 * conn_report_errno(conn, "rdma_connect", EIO) (rdma_connect()
	 * sets errno; conn_report_errno() reads it),
	 * but ECONNREFUSED (iWARP: nobody listens) is
	 * conn_error(conn, -ECONNREFUSED, "%s", conn_no_listener_msg). */
	struct rdma_conn_param param = conn_params();
	int ret = conn_build_resources(conn, 1);

	if (ret == 0)
		ret = conn_setup_msgs(conn);
	if (ret != 0)
		return ret;
	/* iWARP opens its TCP connection inside rdma_connect(): a port no
	 * one listens on fails the call itself, not with a REJECTED event
	 * as on InfiniBand and RoCE.  Both say the same. */
	if (rdma_connect(conn->id, &param) != 0)
		return errno == ECONNREFUSED ?
		       conn_error(conn, -ECONNREFUSED, "%s",
				  conn_no_listener_msg) :
		       conn_report_errno(conn, "rdma_connect", EIO);
	return conn_wait_cm_event(conn, RDMA_CM_EVENT_ESTABLISHED);
	/* END SOLUTION */
}

/* lab3_connect: the client's setup, in rdma_cm's order; see common.h. */
int lab3_connect(struct lab3_conn *conn, const char *host, const char *port)
{
	int ret;

	conn->owns_cm_channel = 1;
	ret = conn_open_cm_id(&conn->cm_channel, &conn->id, conn, conn->err,
			      sizeof(conn->err));
	if (ret == 0)
		ret = resolve_addr_and_route(conn, host, port);
	if (ret == 0)
		ret = build_and_connect(conn);
	if (ret == 0)
		siw_nudge_arm(conn, lab3_now_ms());	/* provider.h */
	return ret;
}

/* ---- The RDMA WRITE ---- */

/* lab3_post_write: see common.h.  Post only: the completion comes back
 * through lab3_poll() like any other, and to conn->sent with TAG. */
int lab3_post_write(struct lab3_conn *conn, struct ibv_mr *mr,
		    const void *local, uint32_t len, uint64_t remote_addr,
		    uint32_t rkey, uint64_t tag)
{
	/* SOLUTION verbs the RDMA WRITE: One SGE for the LEN bytes at LOCAL
	 * (lkey: mr->lkey); one struct ibv_send_wr, opcode
	 * IBV_WR_RDMA_WRITE, its fields wr.rdma.remote_addr REMOTE_ADDR and
	 * wr.rdma.rkey RKEY (for a variable named wr: wr.wr.rdma.rkey), and
	 * wr_id WR_ID(WR_WRITE, tag), by which lab3_poll() knows its
	 * completion.  Take a send credit first (conn_take_credit(): its
	 * -EAGAIN says the send queue is full), then post it with
	 * conn_post_send_wr(), your own. */
	struct ibv_sge sge = {
		.addr = (uintptr_t)local,
		.length = len,
		.lkey = mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = WR_ID(WR_WRITE, tag),
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.wr.rdma = {
			.remote_addr = remote_addr,
			.rkey = rkey,
		},
	};
	int ret = conn_take_credit(conn);

	return ret != 0 ? ret : conn_post_send_wr(conn, &wr);
	/* END SOLUTION */
}
