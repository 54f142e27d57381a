/*
 * common.c - one RDMA connection, as both programs make and use it, in
 * the slides' order: event channel, cm_id and their events; protection
 * domain, completion channel, CQ and QP; memory registration; posting
 * receives and sends; connecting; completions, in the one blocking wait;
 * disconnect and teardown.  Read it after protocol.h, beside the slides.
 *
 * Built on it: what completions mean, and the waits (completion.c);
 * messages (message.c); the client's and the server's side (client.c,
 * listener.c).  Beside it: failures in words (explain.c), providers'
 * quirks (provider.c), the system (util.c), the hashes (hash.c).
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "conn_internal.h"
#include "explain.h"
#include "listener.h"

/* ---- Errors ---- */

/* conn_error: the connection has failed with RET (a negative errno), FMT
 * saying why.  The first failure stays: a later one changes nothing (but
 * see take_peer_error() in completion.c).  Returns the connection's error. */
int conn_error(struct lab3_conn *conn, int ret, const char *fmt, ...)
{
	va_list ap;

	if (conn->error != 0)
		return conn->error;
	conn->error = ret;
	va_start(ap, fmt);
	vsnprintf(conn->err, sizeof(conn->err), fmt, ap);
	va_end(ap);
	return ret;
}

/* conn_report_errno: fill conn->err with "CALL: reason" for a call that has
 * just failed, and return the negative errno.  The verbs calls that return
 * NULL do not all promise to set errno, so callers clear it before the call
 * and FALLBACK stands in if it is still 0. */
int conn_report_errno(struct lab3_conn *conn, const char *call,
		      int fallback)
{
	int err = errno != 0 ? errno : fallback;

	snprintf(conn->err, sizeof(conn->err), "%s: %s", call, strerror(err));
	return -err;
}

/* ---- The event channel, the cm_id and their events ---- */

/* conn_open_cm_id: open an rdma_cm event channel (non-blocking, so that a read
 * after poll() never blocks) into *CHANNEL and a TCP-like cm_id on it into
 * *ID, with CONTEXT.  The caller destroys both, also after a failure. */
int conn_open_cm_id(struct rdma_event_channel **channel,
		    struct rdma_cm_id **id, void *context, char *err,
		    size_t err_len)
{
	int ret;

	*channel = rdma_create_event_channel();
	if (*channel == NULL) {
		snprintf(err, err_len, "cannot open the RDMA connection "
			 "manager (%s); is rdma_ucm loaded?", strerror(errno));
		return -ENODEV;
	}
	ret = conn_set_nonblocking((*channel)->fd, err, err_len);
	if (ret != 0)
		return ret;
	if (rdma_create_id(*channel, id, context, RDMA_PS_TCP) != 0) {
		ret = -errno;
		snprintf(err, err_len, "rdma_create_id: %s", strerror(errno));
		return ret;
	}
	return 0;
}

/* cm_event_error: an rdma_cm event that ends the connection (or the
 * attempt to make one) is the connection's error. */
static int cm_event_error(struct lab3_conn *conn,
			  const struct rdma_cm_event *event)
{
	char why[LAB3_ERR_LEN];
	const char *reason = lab3_rejection_reason(event);
	int ret = lab3_cm_event_meaning(event, why, sizeof(why));

	if (event->event == RDMA_CM_EVENT_REJECTED && reason != NULL) {
		conn->refused = 1;
		conn->refused_busy = strncmp(reason, LAB3_BUSY_REASON,
					     strlen(LAB3_BUSY_REASON)) == 0;
	}
	return conn_error(conn, ret, "%s", why);
}

/* lab3_conn_event: see listener.h. */
int lab3_conn_event(struct lab3_conn *conn, const struct rdma_cm_event *event)
{
	if (conn->verbose)
		fprintf(stderr, "%s: cm event: %s\n", conn->prog,
			rdma_event_str(event->event));
	switch (event->event) {
	case RDMA_CM_EVENT_ESTABLISHED:
		conn->connected = 1;
		conn->established = 1;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		conn->disconnected = 1;
		if (conn->settle_until == 0)
			conn->settle_until = lab3_now_ms() + CONN_SETTLE_MS;
		break;
	case RDMA_CM_EVENT_ADDR_RESOLVED:
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		break;
	default:
		return cm_event_error(conn, event);
	}
	conn->cm_event = event->event;
	return 1;
}

/* handle_cm_event: read one event from the connection's CM channel and
 * note what it says of our cm_id (lab3_conn_event()).  Returns 1 when it
 * was for our cm_id, 0 when there was none for it, or the connection's
 * error if the event ends it.  The channel is the connection's own: a
 * connection that shares the listener's (the class server's) never
 * waits here. */
static int handle_cm_event(struct lab3_conn *conn)
{
	/* SOLUTION verbs the CM event: Take one event from conn->cm_channel
	 * with rdma_get_cm_event().  The channel is non-blocking (the wait
	 * that calls this has poll()ed its fd): with no event there, the
	 * call returns -1 with errno EAGAIN, and you return 0.  Another
	 * failure: return conn_error(conn, -errno, "rdma_get_cm_event: %s",
	 * strerror(errno)).  An event for another cm_id than conn->id counts
	 * as none (0; under conn->verbose print its rdma_event_str()); one
	 * for conn->id goes to lab3_conn_event(), whose result you return.
	 * Either way rdma_ack_cm_event() it when you are done with it:
	 * rdma_destroy_id() waits until every event of its cm_id has been
	 * acknowledged. */
	struct rdma_cm_event *event;
	int ret = 1;

	if (rdma_get_cm_event(conn->cm_channel, &event) != 0) {
		int err = errno;

		if (err == EAGAIN)
			return 0;
		return conn_error(conn, -err, "rdma_get_cm_event: %s",
				  strerror(err));
	}
	if (event->id != conn->id) {
		if (conn->verbose)
			fprintf(stderr, "%s: cm event: %s\n", conn->prog,
				rdma_event_str(event->event));
		ret = 0;
	} else {
		ret = lab3_conn_event(conn, event);
	}
	rdma_ack_cm_event(event);
	return ret;
	/* END SOLUTION */
}

/* ---- The verbs resources of one connection ---- */

/* alloc_pd: the protection domain, on the device the cm_id resolved to:
 * what the QP and every memory registration of the connection belong to. */
static int alloc_pd(struct lab3_conn *conn)
{
	/* SOLUTION verbs the protection domain: ibv_alloc_pd() on
	 * conn->id->verbs into conn->pd.  It returns NULL on failure and
	 * need not set errno: set errno to 0 before, and on NULL return
	 * conn_report_errno(conn, "ibv_alloc_pd", ENOMEM); else 0. */
	errno = 0;
	conn->pd = ibv_alloc_pd(conn->id->verbs);
	return conn->pd != NULL ? 0 :
	       conn_report_errno(conn, "ibv_alloc_pd", ENOMEM);
	/* END SOLUTION */
}

/* create_cq: the completion channel (non-blocking, for conn_wait_channels()'s
 * ppoll()) and the one CQ for sends and receives, which notifies it. */
static int create_cq(struct lab3_conn *conn)
{
	/* SOLUTION verbs the completion channel and the CQ: On
	 * conn->id->verbs, the device the cm_id resolved to: a completion
	 * channel, ibv_create_comp_channel(), into conn->comp_channel, made
	 * non-blocking with conn_set_nonblocking(conn->comp_channel->fd,
	 * conn->err, sizeof(conn->err)) (if that returns an error, return
	 * it): the waits poll() it first.  Then the one CQ for sends and
	 * receives, ibv_create_cq() of LAB3_SEND_DEPTH + LAB3_RECV_DEPTH
	 * entries, context conn, that channel, vector 0, into conn->cq.
	 * Both return NULL on failure and need not set errno: set errno to 0
	 * before each, and on NULL return conn_report_errno(conn, "CALL",
	 * ENOMEM) with CALL the call's name.  Else return 0. */
	struct ibv_context *verbs = conn->id->verbs;
	int ret;

	errno = 0;
	conn->comp_channel = ibv_create_comp_channel(verbs);
	if (conn->comp_channel == NULL)
		return conn_report_errno(conn, "ibv_create_comp_channel",
					 ENOMEM);
	ret = conn_set_nonblocking(conn->comp_channel->fd, conn->err,
				   sizeof(conn->err));
	if (ret != 0)
		return ret;
	errno = 0;
	conn->cq = ibv_create_cq(verbs, LAB3_SEND_DEPTH + LAB3_RECV_DEPTH,
				 conn, conn->comp_channel, 0);
	if (conn->cq == NULL)
		return conn_report_errno(conn, "ibv_create_cq", ENOMEM);
	return 0;
	/* END SOLUTION */
}

/* create_qp: the RC queue pair.  A client's is made on its cm_id, so that
 * rdma_cm moves it through its states as the connection is made.  A
 * server's (ON_ID 0) is its own, which lab3_accept_request() readies
 * itself (move_server_qp()). */
static int create_qp(struct lab3_conn *conn, int on_id)
{
	/* SOLUTION verbs the queue pair: A struct ibv_qp_init_attr for a
	 * reliable-connected QP: qp_type IBV_QPT_RC; send_cq and recv_cq
	 * conn->cq; cap.max_send_wr LAB3_SEND_DEPTH, cap.max_recv_wr
	 * LAB3_RECV_DEPTH, cap.max_send_sge and cap.max_recv_sge 1; and
	 * sq_sig_all 0 (a send completes only if posted IBV_SEND_SIGNALED).
	 * With ON_ID (a client), make it with rdma_create_qp() on conn->id
	 * and conn->pd (non-zero on failure), and take it from conn->id->qp;
	 * rdma_cm then moves it through its states as the connection is
	 * made.  Otherwise ibv_create_qp() on conn->pd (NULL on failure).
	 * Into conn->qp.  Set errno to 0 before the call; on failure return
	 * conn_report_errno(conn, "CALL", ENOMEM) with CALL its name; else
	 * 0. */
	struct ibv_qp_init_attr qp_attr = {
		.send_cq = conn->cq,
		.recv_cq = conn->cq,
		.cap = {
			.max_send_wr = LAB3_SEND_DEPTH,
			.max_recv_wr = LAB3_RECV_DEPTH,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.qp_type = IBV_QPT_RC,
		/* A send completes only if posted IBV_SEND_SIGNALED; ours
		 * all are, since a completion gives the credit back. */
		.sq_sig_all = 0,
	};

	errno = 0;
	if (!on_id) {
		conn->qp = ibv_create_qp(conn->pd, &qp_attr);
		return conn->qp != NULL ? 0 :
		       conn_report_errno(conn, "ibv_create_qp", ENOMEM);
	}
	if (rdma_create_qp(conn->id, conn->pd, &qp_attr) != 0)
		return conn_report_errno(conn, "rdma_create_qp", ENOMEM);
	conn->qp = conn->id->qp;
	return 0;
	/* END SOLUTION */
}

/* query_max_msg_size: learn the port's largest message, which bounds the
 * length of one RDMA WRITE. */
static int query_max_msg_size(struct lab3_conn *conn)
{
	struct ibv_port_attr port_attr;
	int ret;

	/* ibv_query_port() returns the errno itself, not -1. */
	ret = ibv_query_port(conn->id->verbs, conn->id->port_num, &port_attr);
	if (ret != 0) {
		ret = ret > 0 ? ret : EIO;
		snprintf(conn->err, sizeof(conn->err), "ibv_query_port: %s",
			 strerror(ret));
		return -ret;
	}
	if (port_attr.max_msg_sz == 0) {
		snprintf(conn->err, sizeof(conn->err),
			 "ibv_query_port: the port's max_msg_sz is 0");
		return -EIO;
	}
	conn->max_msg_size = port_attr.max_msg_sz;
	conn->link_layer = port_attr.link_layer;
	return 0;
}

/* conn_build_resources: the protection domain, completion channel, CQ
 * and QP (on the cm_id if QP_ON_ID) of one connection, each stored as it
 * is made, so that lab3_conn_destroy() can undo a partial build.
 * conn_setup_msgs() comes next, once the QP is in INIT (where
 * rdma_create_qp() leaves one on the cm_id; the server moves its own). */
int conn_build_resources(struct lab3_conn *conn, int qp_on_id)
{
	int ret = alloc_pd(conn);

	if (ret == 0)
		ret = create_cq(conn);
	if (ret == 0)
		ret = create_qp(conn, qp_on_id);
	if (ret == 0)
		ret = query_max_msg_size(conn);
	return ret;
}

/* ---- Memory registration ---- */

/* lab3_reg_mr: see common.h. */
int lab3_reg_mr(struct lab3_conn *conn, void *addr, size_t len, int access,
		struct ibv_mr **mr)
{
	/* SOLUTION verbs the registration: Register the LEN bytes at ADDR
	 * on conn->pd with ibv_reg_mr() and the caller's ACCESS flags
	 * (IBV_ACCESS_LOCAL_WRITE where the NIC writes, such as receive
	 * buffers; IBV_ACCESS_REMOTE_WRITE too for a window a peer WRITEs
	 * into; none for what a WRITE only reads), into *MR.  ibv_reg_mr()
	 * returns NULL on failure: set errno to 0 before it, and on NULL
	 * return conn_reg_error(conn, len), which reads errno; else 0. */
	errno = 0;
	*mr = ibv_reg_mr(conn->pd, addr, len, access);
	return *mr != NULL ? 0 : conn_reg_error(conn, len);
	/* END SOLUTION */
}

/* conn_reg_error: ibv_reg_mr() of LEN bytes has just failed: say why in
 * conn->err (lab3_reg_meaning()) and return the negative errno. */
int conn_reg_error(struct lab3_conn *conn, size_t len)
{
	int err = errno != 0 ? errno : ENOMEM;

	lab3_reg_meaning(len, err, conn->err, sizeof(conn->err));
	return -err;
}

/* ---- Posting receives and sends ---- */

/* conn_post_recv: hand receive buffer SLOT to the hardware for the next
 * incoming SEND.  Buffers must be posted before the peer can send. */
int conn_post_recv(struct lab3_conn *conn, int slot)
{
	/* SOLUTION verbs posting a receive: One SGE for receive buffer
	 * SLOT, conn->msgs[slot] (all sizeof(conn->msgs[slot]) bytes of it),
	 * under conn->msgs_mr's lkey; one struct ibv_recv_wr with it and
	 * wr_id WR_ID(WR_RECV, slot) (completion.c's take_wc() tells a
	 * receive by it, and finds its buffer by the slot); ibv_post_recv() on
	 * conn->qp.  That call returns the errno itself, not -1: if it is
	 * not 0, return conn_error(conn, -ret, "ibv_post_recv: %s",
	 * strerror(ret)). */
	struct ibv_sge sge = {
		.addr = (uintptr_t)&conn->msgs[slot],
		.length = sizeof(conn->msgs[slot]),
		.lkey = conn->msgs_mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = WR_ID(WR_RECV, (uint64_t)slot),
		.sg_list = &sge,
		.num_sge = 1,
	};
	struct ibv_recv_wr *bad_wr;
	int ret = ibv_post_recv(conn->qp, &wr, &bad_wr);

	if (ret != 0)
		return conn_error(conn, -ret, "ibv_post_recv: %s",
				  strerror(ret));
	return 0;
	/* END SOLUTION */
}

/* conn_setup_msgs: allocate and register the message buffers (LAB3_RECV_DEPTH
 * receive buffers, then LAB3_SEND_DEPTH send buffers) and post every
 * receive buffer, so that the peer may send as soon as the connection is
 * up. */
int conn_setup_msgs(struct lab3_conn *conn)
{
	int ret;

	conn->msgs = calloc(LAB3_RECV_DEPTH + LAB3_SEND_DEPTH,
			    sizeof(*conn->msgs));
	if (conn->msgs == NULL) {
		snprintf(conn->err, sizeof(conn->err), "out of memory");
		return -ENOMEM;
	}
	ret = lab3_reg_mr(conn, conn->msgs,
			  (LAB3_RECV_DEPTH + LAB3_SEND_DEPTH) *
			  sizeof(*conn->msgs),
			  IBV_ACCESS_LOCAL_WRITE, &conn->msgs_mr);
	if (ret != 0)
		return ret;
	conn->credits = LAB3_SEND_DEPTH;
	for (int slot = 0; slot < LAB3_RECV_DEPTH; slot++) {
		ret = conn_post_recv(conn, slot);
		if (ret != 0)
			return ret;
	}
	return 0;
}

/* conn_post_send_wr: post WR on the send queue, signaled, under a credit the
 * caller has taken (conn_posted()). */
int conn_post_send_wr(struct lab3_conn *conn, struct ibv_send_wr *wr)
{
	/* SOLUTION verbs posting a send: Set WR's send_flags to
	 * IBV_SEND_SIGNALED (with sq_sig_all 0 an unsignaled send never
	 * completes, and its credit never comes back), post it on conn->qp
	 * with ibv_post_send(), and return conn_posted() of its result. */
	struct ibv_send_wr *bad_wr;

	wr->send_flags = IBV_SEND_SIGNALED;
	return conn_posted(conn, ibv_post_send(conn->qp, wr, &bad_wr));
	/* END SOLUTION */
}

/* conn_posted: what ibv_post_send() returned (RET) for a work request
 * posted under a credit: 0, or the credit comes back and the error is the
 * connection's. */
int conn_posted(struct lab3_conn *conn, int ret)
{
	if (ret == 0)
		return 0;
	conn->credits++;
	return conn_error(conn, -ret, "ibv_post_send: %s", strerror(ret));
}

/* ---- Connecting (client.c and listener.c) ---- */

/* conn_params: the parameters of rdma_connect() and rdma_accept().  The
 * retry counts are what we ask of the peer's queue pair. */
struct rdma_conn_param conn_params(void)
{
	struct rdma_conn_param param = {
		.responder_resources = 0,	/* we never RDMA READ */
		.initiator_depth = 0,
		.retry_count = 7,		/* transport retries */
		.rnr_retry_count = RNR_RETRY,	/* a finite wait for RECVs */
	};
	return param;
}

/* ---- Completions: the one blocking wait ---- */

/* conn_poll_cq: take up to MAX completions from the CQ into WC, without
 * blocking.  When there are none, the CQ is armed for one notification
 * and looked at again: a completion may have slipped in before the
 * arming, and would not wake the completion channel.  Returns how many
 * were taken (0: none, and the CQ is armed), or the connection's error. */
int conn_poll_cq(struct lab3_conn *conn, struct ibv_wc *wc, int max)
{
	/* SOLUTION verbs polling completions: With no conn->cq yet, return
	 * 0.  Otherwise take up to MAX completions into WC with
	 * ibv_poll_cq() on conn->cq.  If it found none, arm the CQ with
	 * ibv_req_notify_cq(conn->cq, 0), which returns the errno itself
	 * (not 0: return conn_error(conn, -ret, "ibv_req_notify_cq: %s",
	 * strerror(ret))), and poll once more: a completion that came
	 * before the arming would not wake the completion channel.  Return
	 * how many the last poll took, or, if it failed (a negative
	 * result), conn_error(conn, -EIO, "ibv_poll_cq failed"). */
	int n;

	if (conn->cq == NULL)
		return 0;
	n = ibv_poll_cq(conn->cq, max, wc);
	if (n == 0) {
		int ret = ibv_req_notify_cq(conn->cq, 0);

		if (ret != 0)
			return conn_error(conn, -ret, "ibv_req_notify_cq: %s",
					  strerror(ret));
		n = ibv_poll_cq(conn->cq, max, wc);
	}
	return n >= 0 ? n : conn_error(conn, -EIO, "ibv_poll_cq failed");
	/* END SOLUTION */
}

/* conn_take_cq_event: the completion channel is readable: take its event
 * and acknowledge it.  The event only says that the CQ has completions
 * (conn_poll_cq() takes them), and it disarmed the CQ.  Returns 1 when
 * there was an event, 0 when none. */
int conn_take_cq_event(struct lab3_conn *conn)
{
	/* SOLUTION verbs the completion event: With conn->comp_channel
	 * NULL, return 0.  Otherwise take its event with ibv_get_cq_event()
	 * into a local struct ibv_cq * and void *.  The channel is
	 * non-blocking: with no event it fails (errno EAGAIN); any failure
	 * returns 0 here, the caller polls the CQ all the same.  Acknowledge
	 * the event at once, ibv_ack_cq_events(that cq, 1): ibv_destroy_cq()
	 * waits until every event has been acknowledged.  Return 1. */
	struct ibv_cq *cq;
	void *cq_context;

	if (conn->comp_channel == NULL ||
	    ibv_get_cq_event(conn->comp_channel, &cq, &cq_context) != 0)
		return 0;
	ibv_ack_cq_events(cq, 1);
	return 1;
	/* END SOLUTION */
}

/* conn_wait_channels: the one ppoll() on both channels (completion and
 * CM), LEFT ms at most, under conn->wait_sigmask.  Takes what woke us,
 * completion channel first, and returns it: CONN_WOKE_CQ (conn_poll_cq()
 * next) and CONN_WOKE_CM (an event for our cm_id), or'ed; 0 (nothing); or
 * the connection's error.  After a CM event the caller polls the CQ: a
 * peer's last message is taken before its hang-up is believed. */
int conn_wait_channels(struct lab3_conn *conn, long long left)
{
	struct pollfd fds[2] = {
		{ .fd = conn->cm_channel->fd, .events = POLLIN },
		{ .fd = conn->comp_channel ? conn->comp_channel->fd : -1,
		  .events = POLLIN },
	};
	int woke, ret;

	if (lab3_wait_fds(fds, 2, left, conn->wait_sigmask) < 0) {
		int err = errno;

		return conn_error(conn, -err, "%s", err == EINTR ?
				  "interrupted by a signal" : strerror(err));
	}
	ret = (fds[1].revents & POLLIN) ? conn_take_cq_event(conn) : 0;
	if (ret < 0)		/* a kit's step not yet written */
		return ret;
	woke = ret > 0 ? CONN_WOKE_CQ : 0;
	ret = (fds[0].revents & POLLIN) ? handle_cm_event(conn) : 0;
	return ret < 0 ? ret : ret > 0 ? (woke | CONN_WOKE_CM) : woke;
}

/* ---- Teardown ---- */

/* qp_on_id: whether the connection's queue pair is its cm_id's, as a
 * client's is, which rdma_cm moves and destroys; a server's is its own
 * (see create_qp()). */
static int qp_on_id(const struct lab3_conn *conn)
{
	return conn->qp == conn->id->qp;
}

/* shut_server_qp: what rdma_disconnect() does first to a queue pair on
 * the cm_id, done to the server's own: the error state on InfiniBand and
 * RoCE, which ends every work request still outstanding (a SEND the peer
 * never takes, say) with a flush; SQD on iWARP, whose connection manager
 * then closes the connection itself. */
static void shut_server_qp(struct lab3_conn *conn)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };

	if (conn->qp == NULL || qp_on_id(conn))
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
	shut_server_qp(conn);
	rdma_disconnect(conn->id);
	return !conn->disconnected;
}

/* lab3_conn_destroy: see common.h. */
void lab3_conn_destroy(struct lab3_conn *conn)
{
	if (conn->msgs_mr != NULL)
		ibv_dereg_mr(conn->msgs_mr);
	free(conn->msgs);
	if (conn->qp != NULL && qp_on_id(conn))
		rdma_destroy_qp(conn->id);
	else if (conn->qp != NULL)
		ibv_destroy_qp(conn->qp);
	if (conn->cq != NULL)
		ibv_destroy_cq(conn->cq);
	if (conn->comp_channel != NULL)
		ibv_destroy_comp_channel(conn->comp_channel);
	if (conn->pd != NULL)
		ibv_dealloc_pd(conn->pd);
	if (conn->id != NULL)
		rdma_destroy_id(conn->id);
	if (conn->owns_cm_channel && conn->cm_channel != NULL)
		rdma_destroy_event_channel(conn->cm_channel);
	conn->msgs_mr = NULL;
	conn->msgs = NULL;
	conn->qp = NULL;
	conn->cq = NULL;
	conn->comp_channel = NULL;
	conn->pd = NULL;
	conn->id = NULL;
	conn->cm_channel = NULL;
}
