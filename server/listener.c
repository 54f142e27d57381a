/* SPDX-License-Identifier: MIT */
/*
 * listener.c - the server side of a connection (declared in listener.h):
 * bind and listen (on IPv6 and IPv4 at once where no address is given),
 * take connection requests, make the server's own queue pair, ready it
 * and accept, or reject with a reason; start a disconnect without
 * waiting, and take the queue pair down.  The rest of the connection is
 * common.c's, as the client's is.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include <arpa/inet.h>

#include "common.h"
#include "conn_internal.h"
#include "listener.h"

/* bind_to: look ADDR:PORT up (in address FAMILY, or any) and bind ID
 * there.  An IPv6 wildcard is made IPv6-only explicitly, whatever
 * net.ipv6.bindv6only says: IPv4 has a listener of its own (see
 * bind_listener()). */
static int bind_to(struct lab3_listener *listener, struct rdma_cm_id *id,
		   const char *addr, const char *port, int family)
{
	struct rdma_addrinfo hints = {
		.ai_flags = RAI_PASSIVE,
		.ai_family = family,
		.ai_port_space = RDMA_PS_TCP,
	};
	struct rdma_addrinfo *res;
	int afonly = 1;
	int ret;

	ret = lab3_getaddrinfo(addr, port, &hints, &res, listener->err,
			       sizeof(listener->err));
	if (ret != 0)
		return ret;
	ret = 0;
	if (addr == NULL && family == AF_INET6)
		ret = rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY,
				      &afonly, sizeof(afonly));
	if (ret == 0)
		ret = rdma_bind_addr(id, res->ai_src_addr);
	rdma_freeaddrinfo(res);
	if (ret != 0) {
		ret = -errno;
		snprintf(listener->err, sizeof(listener->err), "%s%s",
			 errno == EADDRNOTAVAIL || errno == ENODEV ?
			 "no RDMA device has that address: " :
			 "rdma_bind_addr: ", strerror(errno));
		return ret;
	}
	return 0;
}

/* bind_listener: bind to ADDR, or with no ADDR to every address: the IPv6
 * wildcard on listener->id and the IPv4 wildcard, on the same port, on
 * listener->id4 (or the IPv4 wildcard alone where IPv6 is off).
 *
 * Not one dual-stack IPv6 wildcard, which RoCE and InfiniBand would
 * accept: iWARP requires a listener of the connection's own family.  Its
 * connection manager takes an IPv4 connection on an IPv6 listener with
 * the IPv4-mapped IPv6 address (::ffff:a.b.c.d), finds no RDMA device
 * with that address and drops the connection, so every IPv4 sender would
 * fail (seen with siw on Debian's 6.1 kernel). */
static int bind_listener(struct lab3_listener *listener, const char *addr,
			 const char *port)
{
	char bound[8];
	int ret;

	if (addr != NULL)
		return bind_to(listener, listener->id, addr, port, AF_UNSPEC);
	if (bind_to(listener, listener->id, NULL, port, AF_INET6) != 0)
		return bind_to(listener, listener->id, NULL, port, AF_INET);
	if (rdma_create_id(listener->cm_channel, &listener->id4, NULL,
			   RDMA_PS_TCP) != 0) {
		ret = -errno;
		snprintf(listener->err, sizeof(listener->err),
			 "rdma_create_id: %s", strerror(errno));
		return ret;
	}
	/* With port 0 the first bind chose one: IPv4 gets the same. */
	snprintf(bound, sizeof(bound), "%u",
		 lab3_be16toh(rdma_get_src_port(listener->id)));
	return bind_to(listener, listener->id4, NULL, bound, AF_INET);
}

/* How many connection requests may wait for the server to take them
 * (rdma_get_cm_event).  The kernel's rdma_ucm drops a request that finds
 * this many waiting (up to its net.rdma_ucm.max_backlog, default 1024),
 * and the sender's CM only sends it again after a timeout of several
 * seconds: with a backlog of 4, a class of 16 senders starting at once
 * waited 6 s more in the bed.  A server that is full still takes each
 * request, to refuse it at once with a reason (lab3_reject). */
#define LISTEN_BACKLOG 256

/* lab3_listen: the server's bind and listen; see listener.h. */
int lab3_listen(struct lab3_listener *listener, const char *addr,
		const char *port, uint16_t *bound_port)
{
	int ret;

	ret = conn_open_cm_id(&listener->cm_channel, &listener->id, NULL,
			      listener->err, sizeof(listener->err));
	if (ret != 0)
		return ret;
	ret = bind_listener(listener, addr, port);
	if (ret != 0)
		return ret;
	if (rdma_listen(listener->id, LISTEN_BACKLOG) != 0 ||
	    (listener->id4 != NULL &&
	     rdma_listen(listener->id4, LISTEN_BACKLOG) != 0)) {
		ret = -errno;
		snprintf(listener->err, sizeof(listener->err),
			 "rdma_listen: %s", strerror(errno));
		return ret;
	}
	*bound_port = lab3_be16toh(rdma_get_src_port(listener->id));
	return 0;
}

/* lab3_listener_event: see listener.h. */
int lab3_listener_event(struct lab3_listener *listener,
			struct rdma_cm_event **event)
{
	if (rdma_get_cm_event(listener->cm_channel, event) == 0)
		return 0;
	if (errno == EAGAIN)
		return -EAGAIN;
	snprintf(listener->err, sizeof(listener->err), "rdma_get_cm_event: %s",
		 strerror(errno));
	return -EIO;
}

/*
 * move_server_qp: move the server's queue pair to STATE with the
 * attributes rdma_cm has for this connection (rdma_init_qp_attr), as
 * rdma_accept() does for a queue pair made on the cm_id, but for the RNR
 * retry count, which it bounds.
 *
 * That count says how often our SENDs are tried again while the peer has
 * no receive posted, and rdma_cm takes it from the connection request:
 * the peer chooses it, and 7 means forever.  A sender that asks for 7 and
 * then posts no receive keeps our SENDs, and with them the send queue,
 * stuck for as long as the connection lasts.  The count can be set only
 * on the way to RTS, inside rdma_accept() for a queue pair on the cm_id:
 * so the server's queue pair is its own, and it takes at most RNR_RETRY.
 * A SEND the peer does not take within about 3.9 s then fails ("RNR
 * retries exhausted"), which ends the session.  (iWARP has no RNR: a
 * SEND that finds no receive breaks the connection at once.)  The ACK
 * timeout is the peer's choice too (its request's Local ACK Timeout), up
 * to 2^31 x 4.096 us, over two hours a try: the server takes at most
 * ACK_TIMEOUT_MAX, so a peer whose device stops answering fails our
 * sends within about 30 s.  (The serving loop does not wait for them
 * anyway: see the receiver session's wait_for_room().)
 */
static int move_server_qp(struct lab3_conn *conn, enum ibv_qp_state state)
{
	static const char *const names[] = {
		[IBV_QPS_INIT] = "INIT", [IBV_QPS_RTR] = "RTR",
		[IBV_QPS_RTS] = "RTS",
	};
	struct ibv_qp_attr attr = { .qp_state = state };
	int mask, ret;

	errno = 0;
	if (rdma_init_qp_attr(conn->id, &attr, &mask) != 0)
		return conn_errno(conn, "rdma_init_qp_attr", EINVAL);
	/* As librdmacm does: bits 21-23 of the mask are RoCE's in some
	 * kernels, which InfiniBand refuses. */
	if (conn->link_layer == IBV_LINK_LAYER_INFINIBAND)
		mask &= ~0xe00000;
	attr.max_dest_rd_atomic = 0;	/* as conn_params(): no RDMA READ */
	attr.max_rd_atomic = 0;
	if (attr.rnr_retry > RNR_RETRY)
		attr.rnr_retry = RNR_RETRY;
	if (attr.timeout > ACK_TIMEOUT_MAX)
		attr.timeout = ACK_TIMEOUT_MAX;
	ret = ibv_modify_qp(conn->qp, &attr, mask);
	if (ret != 0)
		return conn_error(conn, -ret, "ibv_modify_qp to %s: %s",
				  names[state], strerror(ret));
	return 0;
}

/* create_server_qp: the server's own RC queue pair (not on the cm_id:
 * see move_server_qp()), with what common.c makes every queue pair
 * with. */
static int create_server_qp(struct lab3_conn *conn)
{
	struct ibv_qp_init_attr attr;

	conn_qp_attr(conn, &attr);
	errno = 0;
	conn->qp = ibv_create_qp(conn->pd, &attr);
	return conn->qp != NULL ? 0 : conn_errno(conn, "ibv_create_qp", ENOMEM);
}

/* lab3_accept_request: see listener.h.  The queue pair is readied to RTS
 * (move_server_qp()) before rdma_accept() names it: the sender may send as
 * soon as it has the answer. */
int lab3_accept_request(struct lab3_listener *listener, struct rdma_cm_id *id,
			struct lab3_conn *conn)
{
	struct rdma_conn_param param;
	int ret;

	conn_params(&param);
	conn->cm_channel = listener->cm_channel;
	conn->owns_cm_channel = 0;
	conn->wait_sigmask = listener->wait_sigmask;
	conn->id = id;
	id->context = conn;
	ret = conn_build_resources(conn);
	if (ret == 0)
		ret = create_server_qp(conn);
	if (ret == 0)
		ret = move_server_qp(conn, IBV_QPS_INIT);
	if (ret == 0)
		ret = conn_setup_msgs(conn);
	if (ret == 0)
		ret = move_server_qp(conn, IBV_QPS_RTR);
	if (ret == 0)
		ret = move_server_qp(conn, IBV_QPS_RTS);
	if (ret != 0) {
		lab3_reject(id, "receiver out of resources");
		return ret;
	}
	param.qp_num = conn->qp->qp_num;
	if (rdma_accept(id, &param) != 0)
		return conn_errno(conn, "rdma_accept", EIO);
	return 0;
}

/* lab3_reject: see listener.h. */
void lab3_reject(struct rdma_cm_id *id, const char *reason)
{
	rdma_reject(id, reason, (uint8_t)(strlen(reason) + 1));
}

/* lab3_listener_destroy: see listener.h. */
void lab3_listener_destroy(struct lab3_listener *listener)
{
	if (listener->id4 != NULL)
		rdma_destroy_id(listener->id4);
	if (listener->id != NULL)
		rdma_destroy_id(listener->id);
	if (listener->cm_channel != NULL)
		rdma_destroy_event_channel(listener->cm_channel);
	listener->id4 = NULL;
	listener->id = NULL;
	listener->cm_channel = NULL;
}

/* lab3_addr_name: "ADDR:PORT", IPv6 in brackets; see listener.h. */
const char *lab3_addr_name(struct rdma_cm_id *id, int peer, char *buf,
			   size_t len)
{
	struct sockaddr *sa;
	char host[INET6_ADDRSTRLEN] = "?";
	uint16_t port;

	if (id == NULL) {
		snprintf(buf, len, "?");
		return buf;
	}
	sa = peer ? rdma_get_peer_addr(id) : rdma_get_local_addr(id);
	port = lab3_be16toh(peer ? rdma_get_dst_port(id) :
			    rdma_get_src_port(id));
	if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr,
			  host, sizeof(host));
	else if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr,
			  host, sizeof(host));
	if (sa->sa_family == AF_INET6)
		snprintf(buf, len, "[%s]:%u", host, port);
	else
		snprintf(buf, len, "%s:%u", host, port);
	return buf;
}

/* lab3_conn_fd: see listener.h. */
int lab3_conn_fd(const struct lab3_conn *conn)
{
	return conn->comp_channel != NULL ? conn->comp_channel->fd : -1;
}

/* shut_qp: what rdma_disconnect() does first to a queue pair on the
 * cm_id, done to the server's own: the error state on InfiniBand and
 * RoCE, which ends every work request still outstanding (a SEND the peer
 * never takes, say) with a flush; SQD on iWARP, whose connection manager
 * then closes the connection itself. */
static void shut_qp(struct lab3_conn *conn)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };

	if (conn->qp == NULL)
		return;
	if (conn->id->verbs->device->transport_type == IBV_TRANSPORT_IWARP)
		attr.qp_state = IBV_QPS_SQD;
	ibv_modify_qp(conn->qp, &attr, IBV_QP_STATE);
}

/* lab3_disconnect_start: see listener.h. */
int lab3_disconnect_start(struct lab3_conn *conn)
{
	if (!conn->connected)
		return 0;
	conn->connected = 0;
	shut_qp(conn);
	rdma_disconnect(conn->id);
	return !conn->disconnected;
}

/* lab3_server_conn_destroy: see listener.h. */
void lab3_server_conn_destroy(struct lab3_conn *conn)
{
	if (conn->qp != NULL)
		ibv_destroy_qp(conn->qp);
	conn->qp = NULL;
	lab3_conn_destroy(conn);
}
