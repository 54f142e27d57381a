/* SPDX-License-Identifier: MIT */
/*
 * common.c - one RDMA connection, as both programs make and use it, in
 * the slides' order: the event channel and the cm_id; the protection
 * domain, completion channel and CQ; memory registration; posting
 * receives and sends; the lab's messages; the one blocking wait on the
 * completion channel, with the CM channel beside it; teardown.  Read it
 * after protocol.h, beside the slides.
 *
 * What each completion and each CM event means is completion.c's; the
 * wait hands them there.  Each side adds its own: the client resolves,
 * makes its queue pair on the cm_id and connects (client.c); the class
 * server listens, makes its own queue pair and accepts (the receiver's
 * listener).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "conn_internal.h"
#include "explain.h"
#include "provider.h"

/* How long a completion's event may lag behind the completion itself on
 * an armed CQ (it follows within microseconds, but a provider may raise
 * it from a deferred task, late on a machine short of memory). */
#define CQ_EVENT_LAG_MS 2000

/* ---- The event channel and the cm_id ---- */

/* conn_open_cm_id: open an rdma_cm event channel (non-blocking, so that a
 * read after poll() never blocks) into *CHANNEL and a TCP-like cm_id on it
 * into *ID, with CONTEXT.  The caller destroys both, also after a
 * failure. */
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
	ret = lab3_set_nonblocking((*channel)->fd, err, err_len);
	if (ret != 0)
		return ret;
	if (rdma_create_id(*channel, id, context, RDMA_PS_TCP) != 0) {
		ret = -errno;
		snprintf(err, err_len, "rdma_create_id: %s", strerror(errno));
		return ret;
	}
	return 0;
}

/* take_cm_event: read one event from the connection's own CM channel and
 * apply what it says of our cm_id (lab3_apply_cm_event() in
 * completion.c).  Returns 0 when one for our cm_id was taken, -EAGAIN
 * when there was none for it, or the connection's error if the event
 * ends it.  A connection of the class server shares the listener's
 * channel, and the server reads it. */
static int take_cm_event(struct lab3_conn *conn)
{
	/* SOLUTION verbs the CM event: Take one event from conn->cm_channel
	 * with rdma_get_cm_event().  The channel is non-blocking (the wait
	 * that calls this has poll()ed its fd): with no event there, the
	 * call returns -1 with errno EAGAIN, and you return -EAGAIN.  Another
	 * failure: return conn_error(conn, -errno, "rdma_get_cm_event: %s",
	 * strerror(errno)).  An event for another cm_id than conn->id counts
	 * as none (-EAGAIN); one for conn->id goes to lab3_apply_cm_event(),
	 * whose result (0, or the connection's error) you return.  Either
	 * way rdma_ack_cm_event() it when you are done with it:
	 * rdma_destroy_id() waits until every event of its cm_id has been
	 * acknowledged. */
	struct rdma_cm_event *event;
	int ret = -EAGAIN;

	if (rdma_get_cm_event(conn->cm_channel, &event) != 0) {
		int err = errno;

		if (err == EAGAIN)
			return -EAGAIN;
		return conn_error(conn, -err, "rdma_get_cm_event: %s",
				  strerror(err));
	}
	if (event->id == conn->id)
		ret = lab3_apply_cm_event(conn, event);
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
	 * conn_errno(conn, "ibv_alloc_pd", ENOMEM); else 0. */
	errno = 0;
	conn->pd = ibv_alloc_pd(conn->id->verbs);
	return conn->pd != NULL ? 0 : conn_errno(conn, "ibv_alloc_pd", ENOMEM);
	/* END SOLUTION */
}

/* create_cq: the completion channel and the one CQ for sends and
 * receives, which notifies it. */
static int create_cq(struct lab3_conn *conn)
{
	/* SOLUTION verbs the completion channel and the CQ: On
	 * conn->id->verbs, the device the cm_id resolved to: a completion
	 * channel, ibv_create_comp_channel(), into conn->comp_channel (the
	 * framework makes it non-blocking for the wait).  Then the one CQ
	 * for sends and receives, ibv_create_cq() of LAB3_CQ_DEPTH entries,
	 * context conn, that channel, vector 0, into conn->cq.  Both return
	 * NULL on failure and need not set errno: set errno to 0 before each,
	 * and on NULL return conn_errno(conn, "CALL", ENOMEM) with CALL the
	 * call's name.  Else return 0. */
	struct ibv_context *verbs = conn->id->verbs;

	errno = 0;
	conn->comp_channel = ibv_create_comp_channel(verbs);
	if (conn->comp_channel == NULL)
		return conn_errno(conn, "ibv_create_comp_channel", ENOMEM);
	errno = 0;
	conn->cq = ibv_create_cq(verbs, LAB3_CQ_DEPTH, conn,
				 conn->comp_channel, 0);
	if (conn->cq == NULL)
		return conn_errno(conn, "ibv_create_cq", ENOMEM);
	return 0;
	/* END SOLUTION */
}

/* query_max_msg_size: learn the port's largest message, which bounds the
 * length of one RDMA WRITE, and its link layer. */
static int query_max_msg_size(struct lab3_conn *conn)
{
	struct ibv_port_attr port_attr;
	int ret;

	/* ibv_query_port() returns the errno itself, not -1. */
	ret = ibv_query_port(conn->id->verbs, conn->id->port_num, &port_attr);
	if (ret != 0)
		return conn_error(conn, ret > 0 ? -ret : -EIO,
				  "ibv_query_port: %s",
				  strerror(ret > 0 ? ret : EIO));
	if (port_attr.max_msg_sz == 0)
		return conn_error(conn, -EIO, "ibv_query_port: the port's "
				  "max_msg_sz is 0");
	conn->max_msg_size = port_attr.max_msg_sz;
	conn->link_layer = port_attr.link_layer;
	return 0;
}

/* conn_build_resources: the protection domain, the completion channel
 * (made non-blocking, for lab3_wait()'s ppoll()) and the CQ of one
 * connection, each stored as it is made, so that lab3_conn_destroy() can
 * undo a partial build.  The queue pair comes next, each side's own way
 * (a client's on its cm_id, client.c; the class server's its own), with
 * conn_qp_attr(). */
int conn_build_resources(struct lab3_conn *conn)
{
	char why[LAB3_ERR_LEN];
	int ret = alloc_pd(conn);

	if (ret == 0)
		ret = create_cq(conn);
	if (ret == 0 && (ret = lab3_set_nonblocking(conn->comp_channel->fd,
						    why, sizeof(why))) != 0)
		ret = conn_error(conn, ret, "%s", why);
	if (ret == 0)
		ret = query_max_msg_size(conn);
	return ret;
}

/* conn_qp_attr: what the connection's RC queue pair is made with, into
 * *ATTR: the one CQ for sends and receives, room for LAB3_SEND_DEPTH
 * sends and LAB3_RECV_DEPTH receives of one SGE each, and only a send
 * posted IBV_SEND_SIGNALED gives a completion (ours all are: a completion
 * gives the credit back). */
void conn_qp_attr(const struct lab3_conn *conn, struct ibv_qp_init_attr *attr)
{
	*attr = (struct ibv_qp_init_attr) {
		.send_cq = conn->cq,
		.recv_cq = conn->cq,
		.cap = {
			.max_send_wr = LAB3_SEND_DEPTH,
			.max_recv_wr = LAB3_RECV_DEPTH,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 0,
	};
}

/* ---- Memory registration ---- */

/* reg_error: ibv_reg_mr() of LEN bytes has just failed: that is the
 * connection's error, in words that name the likely cause
 * (lab3_reg_meaning()). */
static int reg_error(struct lab3_conn *conn, size_t len)
{
	char why[LAB3_ERR_LEN];
	int err = errno != 0 ? errno : ENOMEM;

	lab3_reg_meaning(len, err, why, sizeof(why));
	/* EAGAIN (a limit) would read as "not yet" to every caller. */
	return conn_error(conn, err == EAGAIN ? -ENOMEM : -err, "%s", why);
}

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
	 * return reg_error(conn, len), which reads errno; else 0. */
	errno = 0;
	*mr = ibv_reg_mr(conn->pd, addr, len, access);
	return *mr != NULL ? 0 : reg_error(conn, len);
	/* END SOLUTION */
}

/* ---- Posting receives and sends ---- */

/* post_recv: hand receive buffer SLOT to the hardware for the next
 * incoming SEND.  Buffers must be posted before the peer can send. */
static int post_recv(struct lab3_conn *conn, int slot)
{
	/* SOLUTION verbs posting a receive: One SGE for receive buffer
	 * SLOT, conn->msgs[slot] (all sizeof(conn->msgs[slot]) bytes of it),
	 * under conn->msgs_mr's lkey; one struct ibv_recv_wr with it and
	 * wr_id WR_ID(WR_RECV, slot) (completion.c's conn_apply_wc() tells a
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

/* check_qp_cap: the queue pair must hold what the connection keeps
 * posted: LAB3_SEND_DEPTH sends (its credits) and LAB3_RECV_DEPTH
 * receives.  A smaller one fails a post (ENOMEM) only when that many are
 * outstanding at once, which a fast device may never show: say so now,
 * with the numbers. */
static int check_qp_cap(struct lab3_conn *conn)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	int ret = ibv_query_qp(conn->qp, &attr, IBV_QP_CAP, &init);

	if (ret != 0)
		return conn_error(conn, -ret, "ibv_query_qp: %s", strerror(ret));
	if (attr.cap.max_send_wr >= LAB3_SEND_DEPTH &&
	    attr.cap.max_recv_wr >= LAB3_RECV_DEPTH)
		return 0;
	return conn_error(conn, -EINVAL, "the queue pair holds %u sends "
			  "(cap.max_send_wr) and %u receives (max_recv_wr), "
			  "and the connection keeps up to %d sends "
			  "(LAB3_SEND_DEPTH) and %d receives (LAB3_RECV_DEPTH) "
			  "posted: is it made with conn_qp_attr()'s cap?",
			  attr.cap.max_send_wr, attr.cap.max_recv_wr,
			  LAB3_SEND_DEPTH, LAB3_RECV_DEPTH);
}

/* conn_setup_msgs: allocate and register the message buffers
 * (LAB3_RECV_DEPTH receive buffers, then LAB3_SEND_DEPTH send buffers)
 * and post every receive buffer, so that the peer may send as soon as
 * the connection is up.  The queue pair must be in INIT or beyond. */
int conn_setup_msgs(struct lab3_conn *conn)
{
	int ret = check_qp_cap(conn);

	if (ret != 0)
		return ret;
	conn->msgs = calloc(LAB3_RECV_DEPTH + LAB3_SEND_DEPTH,
			    sizeof(*conn->msgs));
	if (conn->msgs == NULL)
		return conn_error(conn, -ENOMEM, "out of memory");
	ret = lab3_reg_mr(conn, conn->msgs,
			  (LAB3_RECV_DEPTH + LAB3_SEND_DEPTH) *
			  sizeof(*conn->msgs),
			  IBV_ACCESS_LOCAL_WRITE, &conn->msgs_mr);
	if (ret != 0)
		return ret;
	conn->credits = LAB3_SEND_DEPTH;
	for (int slot = 0; slot < LAB3_RECV_DEPTH; slot++) {
		ret = post_recv(conn, slot);
		if (ret != 0)
			return ret;
	}
	return 0;
}

/* post_signaled: ibv_post_send() of WR, signaled: 0, or a negative
 * errno. */
static int post_signaled(struct lab3_conn *conn, struct ibv_send_wr *wr)
{
	/* SOLUTION verbs posting a send: Set WR's send_flags to
	 * IBV_SEND_SIGNALED (with sq_sig_all 0 an unsignaled send completes
	 * without a completion on the CQ, and its credit never comes back),
	 * post it on conn->qp with ibv_post_send(), which returns the errno
	 * itself (not -1), and return 0 or that errno negated. */
	struct ibv_send_wr *bad_wr;

	wr->send_flags = IBV_SEND_SIGNALED;
	return -ibv_post_send(conn->qp, wr, &bad_wr);
	/* END SOLUTION */
}

/* post_failed: ibv_post_send() has failed with RET (a negative errno):
 * the connection's error.  ENOMEM is a full send queue: a queue pair
 * made smaller than the sends in flight (-ENOBUFS, not a registration's
 * ENOMEM). */
static int post_failed(struct lab3_conn *conn, int ret)
{
	if (ret == -ENOMEM)
		return conn_error(conn, -ENOBUFS, "ibv_post_send: the send "
				  "queue is full (ENOMEM) with %d sends "
				  "outstanding: does the queue pair's "
				  "cap.max_send_wr hold LAB3_SEND_DEPTH (%d)?",
				  LAB3_SEND_DEPTH - conn->credits,
				  LAB3_SEND_DEPTH);
	return conn_error(conn, ret, "ibv_post_send: %s", strerror(-ret));
}

/* post_under_credit: post WR with post_signaled(), under a credit the
 * caller has taken, which comes back if the post fails; count it.  0
 * means posted: the caller keeps what the request uses (a WRITE's
 * registration) until it completes or the queue pair is gone.  A send
 * posted unsignaled is posted all the same, but it never completes, nor
 * gives its credit back: that is the connection's error at once (the
 * next call says it), not a wait to its timeout. */
static int post_under_credit(struct lab3_conn *conn, struct ibv_send_wr *wr)
{
	int ret = post_signaled(conn, wr);

	if (ret != 0) {
		conn_return_credit(conn);
		return post_failed(conn, ret);
	}
	conn->sends_posted++;
	if (!(wr->send_flags & IBV_SEND_SIGNALED))
		conn_error(conn, -EINVAL, "a send was posted without "
			   "IBV_SEND_SIGNALED in its send_flags: the queue "
			   "pair signals only those (sq_sig_all 0), so it "
			   "never completes");
	return 0;
}

/* conn_post_send: post WR on the send queue, signaled, under a credit it
 * uses (conn_use_credit(), with EVEN_FAILED).  0: posted (see
 * post_under_credit()); -EAGAIN when the send queue is full or the
 * connection settles; or the connection's error, and nothing posted. */
int conn_post_send(struct lab3_conn *conn, struct ibv_send_wr *wr,
		   int even_failed)
{
	int ret = conn_use_credit(conn, even_failed);

	return ret != 0 ? ret : post_under_credit(conn, wr);
}

/* ---- The lab's messages ---- */

/* post_encoded: use a credit (conn_use_credit(), with EVEN_FAILED),
 * then encode MSG into the next send buffer and post a SEND of it.  The
 * buffers are used in turn, and one comes round again only after
 * LAB3_SEND_DEPTH more sends: with a credit taken, no more than
 * LAB3_SEND_DEPTH - 1 other requests are outstanding, and the send queue
 * completes in order, so the SEND that last used it has completed. */
static int post_encoded(struct lab3_conn *conn, const struct lab3_msg *msg,
			int even_failed)
{
	union lab3_wire_msg *buf =
		&conn->msgs[LAB3_RECV_DEPTH + conn->next_send % LAB3_SEND_DEPTH];
	struct ibv_sge sge = { .addr = (uintptr_t)buf,
			       .lkey = conn->msgs_mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = WR_ID(WR_SEND, 0),
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
	};
	int ret = conn_use_credit(conn, even_failed);

	if (ret != 0)
		return ret;
	sge.length = (uint32_t)lab3_encode(msg, buf);
	if (sge.length == 0) {
		conn_return_credit(conn);
		return conn_error(conn, -EINVAL, "cannot encode a %s message",
				  lab3_msg_type_name(msg->type));
	}
	if (conn->verbose)
		conn_trace_msg(conn, "send", msg, sge.length);
	ret = post_under_credit(conn, &wr);
	if (ret == 0)
		conn->next_send++;
	return ret;
}

/* lab3_post_msg: see common.h. */
int lab3_post_msg(struct lab3_conn *conn, const struct lab3_msg *msg)
{
	return post_encoded(conn, msg, 0);
}

/* error_allowed: whether an ERROR may go out now: not before the
 * connection is up, after the peer has hung up or sent its own ERROR, or
 * once a failed completion has broken the queue pair. */
static int error_allowed(const struct lab3_conn *conn)
{
	return conn->id != NULL && conn->qp != NULL && conn->connected &&
	       !conn->disconnected && conn->error != -EREMOTEIO &&
	       !conn->error_from_wc;
}

/* lab3_post_error: see common.h. */
int lab3_post_error(struct lab3_conn *conn, enum lab3_error_code code,
		    const char *reason)
{
	struct lab3_msg msg = { .type = LAB3_MSG_ERROR };

	if (!error_allowed(conn))
		return -ENOTCONN;
	msg.error.code = code;
	snprintf(msg.error.reason, sizeof(msg.error.reason), "%s", reason);
	return post_encoded(conn, &msg, 1);
}

/* conn_params: the parameters of rdma_connect() and rdma_accept(), into
 * *PARAM.  The retry counts are what we ask of the peer's queue pair. */
void conn_params(struct rdma_conn_param *param)
{
	*param = (struct rdma_conn_param) {
		.responder_resources = 0,	/* we never RDMA READ */
		.initiator_depth = 0,
		.retry_count = 7,		/* transport retries */
		.rnr_retry_count = RNR_RETRY,	/* a finite wait for RECVs */
	};
}

/* lab3_ms_for_bytes: see common.h. */
int lab3_ms_for_bytes(const struct lab3_conn *conn, uint64_t bytes)
{
	uint64_t ms = (uint64_t)conn->timeout_ms + bytes / (4u << 20) * 1000;

	return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

/* ---- Completions, and the one blocking wait ---- */

/* poll_once: take up to MAX completions from the CQ into WC, without
 * blocking.  When there are none, the CQ is armed for one notification
 * and looked at again: a completion may have slipped in before the
 * arming, and would not wake the completion channel.  Returns how many
 * were taken (0: none, and the CQ is armed), or the connection's error. */
static int poll_once(struct lab3_conn *conn, struct ibv_wc *wc, int max)
{
	/* SOLUTION verbs polling completions: Take up to MAX completions
	 * into WC with ibv_poll_cq() on conn->cq.  If it found none, arm the
	 * CQ with ibv_req_notify_cq(conn->cq, 0), which returns the errno
	 * itself (not 0: return conn_error(conn, -ret, "ibv_req_notify_cq:
	 * %s", strerror(ret))), and poll once more: a completion that came
	 * before the arming would not wake the completion channel.  Return
	 * how many the last poll took, or, if it failed (a negative result),
	 * conn_error(conn, -EIO, "ibv_poll_cq failed"). */
	int n = ibv_poll_cq(conn->cq, max, wc);

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

/* took_cq_event: whether the completion channel held an event, which is
 * then taken and acknowledged.  The event only says that the CQ has
 * completions (poll_cq() takes them), and it disarmed the CQ.  1 when
 * there was an event, 0 when none. */
static int took_cq_event(struct lab3_conn *conn)
{
	/* SOLUTION verbs the completion event: Take the event of
	 * conn->comp_channel with ibv_get_cq_event() into a local struct
	 * ibv_cq * and void *.  The channel is non-blocking: with no event
	 * it fails (errno EAGAIN); any failure returns 0 here, the wait
	 * polls the CQ all the same.  Acknowledge the event at once,
	 * ibv_ack_cq_events(that cq, 1): ibv_destroy_cq() waits until every
	 * event has been acknowledged.  Return 1. */
	struct ibv_cq *cq;
	void *cq_context;

	if (ibv_get_cq_event(conn->comp_channel, &cq, &cq_context) != 0)
		return 0;
	ibv_ack_cq_events(cq, 1);
	return 1;
	/* END SOLUTION */
}

/* apply_wcs: hand each of the N completions in WC to completion.c
 * (conn_apply_wc()), and post a receive buffer again when it says so. */
static void apply_wcs(struct lab3_conn *conn, const struct ibv_wc *wc, int n)
{
	for (int i = 0; i < n; i++)
		if (conn_apply_wc(conn, &wc[i]) == 1)
			post_recv(conn, (int)WR_REST(wc[i].wr_id));
}

/* sleep_on: sleep until one of the wait's two channels FDS (the CM
 * channel's, the CQ's; one may be -1) is ready, LEFT ms at most: how many
 * are (0: the time ran out), or the connection's error (a signal came,
 * say). */
static int sleep_on(struct lab3_conn *conn, struct pollfd *fds, long long left)
{
	int ready = lab3_wait_fds(fds, 2, left, conn->wait_sigmask);
	int err = errno;

	if (ready >= 0)
		return ready;
	return conn_error(conn, -err, "%s", err == EINTR ?
			  "interrupted by a signal" : strerror(err));
}

/* lagging_event: the wait woke without a completion event (at its
 * deadline, or by a CM event that ended the connection), and yet the CQ
 * may hold completions.  On an armed CQ their event is right behind them:
 * they are held (taken, not applied) for CQ_EVENT_LAG_MS while it comes,
 * then applied.  If none comes, the CQ was not armed, and each sleep of
 * the wait lasts until its timeout whatever completes meanwhile: that is
 * the connection's error, named before what they say is applied.  How
 * many were held, or the connection's error. */
static int lagging_event(struct lab3_conn *conn)
{
	struct pollfd fds[2] = { { .fd = -1 }, { .fd = -1, .events = POLLIN } };
	struct ibv_wc wc[8];
	int n, ret = 0;

	if (conn->cq == NULL || (n = poll_once(conn, wc, 8)) == 0)
		return 0;
	if (n < 0)
		return conn->error;
	fds[1].fd = conn->comp_channel->fd;	/* the CQ's channel alone */
	if (sleep_on(conn, fds, CQ_EVENT_LAG_MS) <= 0 ||
	    took_cq_event(conn) != 1)
		ret = conn_error(conn, -EIO, "completions were waiting on the "
				 "CQ but no completion event came: is the CQ "
				 "armed with ibv_req_notify_cq before each "
				 "sleep?");
	apply_wcs(conn, wc, n);
	return ret < 0 ? ret : n;
}

/* take_wake: what woke the wait's sleep (the channels of FDS that are
 * ready; none when the sleep lasted until the wait's DEADLINE): the CQ's
 * event is taken and acknowledged, a CM event applied.  A wake with no
 * CQ event, at the deadline or by a CM event that ended the connection,
 * asks whether the CQ was armed (lagging_event()): only there, where a
 * correct program waits for nothing but its event's real lag, on a
 * connection whose wait was over anyway.  1 when there is news, 0 when
 * none, or the connection's error. */
static int take_wake(struct lab3_conn *conn, struct pollfd *fds,
		     int deadline)
{
	int was = conn->error != 0 || conn->disconnected, news = 0, held;
	int event = fds[1].revents & POLLIN, ended;

	if (event)
		took_cq_event(conn);			/* get it, ack it */
	if (fds[0].revents & POLLIN)
		news = take_cm_event(conn) != -EAGAIN;
	ended = !was && (conn->error != 0 || conn->disconnected);
	if (event || !(deadline || ended))
		return news;
	held = lagging_event(conn);
	return held < 0 ? held : news || held > 0;
}

/* poll_cq: take every completion there is (poll_once()) and apply each
 * (apply_wcs()); the CQ is left armed.  How many were taken, or the
 * connection's error.  A connection with no CQ yet has none. */
static int poll_cq(struct lab3_conn *conn)
{
	struct ibv_wc wc[8];
	int taken = 0, n;

	if (conn->cq == NULL)
		return 0;
	while ((n = poll_once(conn, wc, 8)) > 0) {
		apply_wcs(conn, wc, n);
		taken += n;
	}
	return n < 0 ? n : taken;
}

/* lab3_wait: see common.h.  The steps, as rdma-core's rdma_get_recv_comp()
 * takes them: poll the CQ, arm it, poll again; sleep on the completion
 * channel, with the CM channel beside it; get the channel's event and ack
 * it; round again (take_wake(), which may ask whether the CQ was armed).
 * What ended the connection is let settle first (lab3_settling()): the
 * peer's ERROR may be right behind. */
int lab3_wait(struct lab3_conn *conn, int wait_ms)
{
	int limit = wait_ms > 0 ? wait_ms : conn->timeout_ms;
	long long deadline = lab3_now_ms() + limit;
	int failed = conn->error != 0, gone = conn->disconnected, news = 0;

	if (wait_ms == LAB3_NO_WAIT) {	/* the class server's: no sleep */
		if (conn->comp_channel != NULL)
			took_cq_event(conn);
		return poll_cq(conn) < 0 ? conn->error : 0;
	}
	/* The class server's connections share the listener's CM channel,
	 * and nothing of theirs may block (the class server never sleeps). */
	if (!conn->owns_cm_channel)
		return conn_error(conn, -EDEADLK, "internal error: a blocking "
				  "wait on a connection of the class server");
	for (;;) {
		struct pollfd fds[2] = {
			{ .fd = conn->cm_channel->fd, .events = POLLIN },
			{ .fd = conn->comp_channel != NULL ?
				conn->comp_channel->fd : -1, .events = POLLIN },
		};
		long long until = deadline, left;
		int nudge, woke;

		news |= poll_cq(conn) > 0;		/* poll, arm, poll */
		news |= (conn->error != 0) != failed ||
			conn->disconnected != gone;
		if (lab3_settling(conn))
			until = conn->settle_until;
		else if (news)
			break;
		left = until - lab3_now_ms();
		if (left <= 0 && until == deadline)
			return lab3_time_out(conn, limit);
		if (left <= 0)
			break;				/* settled */
		nudge = siw_nudge_in(conn, &left);	/* provider.h */
		woke = sleep_on(conn, fds, left);
		if (woke >= 0)
			woke = take_wake(conn, fds, woke == 0 &&
					 until == deadline && !nudge);
		if (woke < 0)
			return woke;
		news |= woke;
		if (nudge && !news)
			return 0;	/* a nudge is due: see lab3_nudge() */
	}
	if (conn->error == 0 && conn->disconnected && conn->ninbox == 0)
		return lab3_time_out(conn, limit);	/* the hang-up, named */
	return conn->error != 0 ? conn->error :
	       conn->disconnected ? -ECONNRESET : 0;
}

/* ---- Teardown ---- */

/* cq_event_ready: whether CONN's completion channel holds an event now
 * (a look that never blocks, whether or not the channel does). */
static int cq_event_ready(struct lab3_conn *conn)
{
	struct pollfd fd = { .fd = conn->comp_channel->fd, .events = POLLIN };

	return lab3_wait_fds(&fd, 1, 0, conn->wait_sigmask) > 0;
}

/* lab3_conn_destroy: see common.h.  The class server destroys the queue
 * pair it made itself before this. */
void lab3_conn_destroy(struct lab3_conn *conn)
{
	if (conn->msgs_mr != NULL)
		ibv_dereg_mr(conn->msgs_mr);
	free(conn->msgs);
	if (conn->qp != NULL && conn->qp == conn->id->qp)
		rdma_destroy_qp(conn->id);	/* a client's, on its cm_id */
	/* ibv_destroy_cq() waits until every event read from the channel
	 * has been acknowledged; take (and ack) any still unread too, so
	 * that none is left over (the QP is gone, so no more come). */
	while (conn->comp_channel != NULL && conn->cq != NULL &&
	       cq_event_ready(conn) && took_cq_event(conn) == 1)
		;
	if (conn->cq != NULL)
		ibv_destroy_cq(conn->cq);
	if (conn->comp_channel != NULL)
		ibv_destroy_comp_channel(conn->comp_channel);
	if (conn->pd != NULL)
		ibv_dealloc_pd(conn->pd);
	/* rdma_destroy_id() waits until every event of the cm_id has been
	 * acknowledged: a sender's is given 2 s by an alarm (lib/util.h),
	 * the class server's connections are its own code's. */
	if (conn->id != NULL && conn->owns_cm_channel)
		lab3_destroy_id_within(conn->id, conn->prog);
	else if (conn->id != NULL)
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
