/* SPDX-License-Identifier: MIT */
/*
 * completion.c - what a completion, or an rdma_cm event, means to one
 * connection (the completion model of struct lab3_conn in common.h),
 * without waiting and without posting anything:
 *   - the connection's first error (conn_error());
 *   - its send credits, taken here and given back here;
 *   - a message that arrived goes to its inbox; a SEND or WRITE that
 *     completed gives its credit back and is counted; a failure is the
 *     connection's error;
 *   - what the programs ask of it: the next message (lab3_take_msg()),
 *     whether every send has completed (lab3_sends_completed()), whether
 *     what ended it has settled (lab3_settling()).
 * common.c's wait hands each completion and event here; this file calls
 * nothing of common.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "conn_internal.h"
#include "explain.h"
#include "provider.h"

/* ---- The connection's first error ---- */

/* conn_error: the connection has failed with RET (a negative errno), FMT
 * saying why.  The first failure stays: a later one changes nothing (but
 * see apply_peer_error()).  The one way the connection's errors are
 * recorded.  Returns the connection's error. */
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

/* conn_errno: conn_error() for CALL that has just failed with errno
 * ("CALL: reason"; rdma_connect()'s ECONNREFUSED is "nobody listens
 * there": iWARP opens its TCP connection inside rdma_connect(), and a
 * port no one listens on fails the call itself, not with a REJECTED
 * event as on InfiniBand and RoCE).  The verbs calls that return NULL do not all promise to set
 * errno, so callers clear it before the call and FALLBACK stands in if it
 * is still 0. */
int conn_errno(struct lab3_conn *conn, const char *call, int fallback)
{
	int err = errno != 0 ? errno : fallback;

	if (err == ECONNREFUSED && strcmp(call, "rdma_connect") == 0)
		return conn_error(conn, -err, "%s", conn_no_listener_msg);
	return conn_error(conn, -err, "%s: %s", call, strerror(err));
}

/* conn_hung_up: the peer's hang-up ends what we waited for: that is the
 * connection's error now, naming it.  Returns it (-ECONNRESET).  A peer
 * that took a message of ours and hung up without one of its own ever
 * arriving most likely found no receive posted for its answer: its SEND
 * failed (RNR), and with it the connection. */
static int conn_hung_up(struct lab3_conn *conn)
{
	int unheard = conn->established && !conn->heard &&
		      conn->sends_completed > 0;

	return conn_error(conn, -ECONNRESET, "the peer disconnected%s%s%s",
			  conn->awaiting[0] ? " while we waited for " : "",
			  conn->awaiting, unheard ? ", and no message of "
			  "its ever arrived: were our receives posted "
			  "(ibv_post_recv()) before rdma_connect?" : "");
}

/* lab3_time_out: see common.h.  After a hang-up (and its settling), the
 * hang-up is the end. */
int lab3_time_out(struct lab3_conn *conn, int wait_ms)
{
	if (conn->disconnected)
		return conn_hung_up(conn);
	return conn_error(conn, -ETIMEDOUT, "timed out after %lld s %s%s",
			  ((long long)wait_ms + 999) / 1000, conn->awaiting[0] ?
			  "waiting for " : "without word from the peer",
			  conn->awaiting);
}

/* ---- Send credits: taken here, given back here ---- */

/* conn_use_credit: one credit for a SEND or WRITE about to be posted: 0;
 * -EAGAIN when the send queue is full, or while the connection settles
 * (lab3_settling()); else the connection's error, or its hang-up.  With
 * EVEN_FAILED, whatever the connection's state: the ERROR that ends a
 * connection still goes out (lab3_post_error()). */
int conn_use_credit(struct lab3_conn *conn, int even_failed)
{
	if (!even_failed && (conn->error != 0 || conn->disconnected)) {
		if (lab3_settling(conn))
			return -EAGAIN;
		return conn->error != 0 ? conn->error : conn_hung_up(conn);
	}
	if (conn->credits == 0)
		return -EAGAIN;
	conn->credits--;
	return 0;
}

/* conn_return_credit: a SEND or WRITE has completed, or was never posted:
 * its credit comes back. */
void conn_return_credit(struct lab3_conn *conn)
{
	conn->credits++;
}

/* ---- What a completion means ---- */

/* kind_name: what a wr_id's kind says its work request was. */
static const char *kind_name(unsigned kind)
{
	static const char *const name[] = { "RECV", "SEND", "RDMA WRITE" };

	return kind <= WR_WRITE ? name[kind] : "no work request of ours";
}

/* trace_wc: under -v, show a work completion: the student's view of what
 * the hardware did.  A failed completion's opcode is not set (only its
 * wr_id and status are): its kind then comes from the wr_id. */
static void trace_wc(const struct lab3_conn *conn, const struct ibv_wc *wc)
{
	static const char *const kinds[] = { "RECV", "SEND", "RDMA_WRITE" };
	unsigned kind = WR_KIND(wc->wr_id);

	if (!conn->verbose)
		return;
	fprintf(stderr, "%s: completion: %s wr_id=%llu status=%s byte_len=%u\n",
		conn->prog, wc->status == IBV_WC_SUCCESS ?
		lab3_wc_opcode_name(wc->opcode) :
		kind <= WR_WRITE ? kinds[kind] : "other",
		(unsigned long long)wc->wr_id, ibv_wc_status_str(wc->status),
		wc->byte_len);
}

/* conn_trace_msg: see conn_internal.h.  "receiver: send DONE (24
 * bytes): offset 0, 65536 bytes". */
void conn_trace_msg(const struct lab3_conn *conn, const char *what,
		    const struct lab3_msg *msg, unsigned bytes)
{
	char fields[LAB3_ERR_LEN];

	lab3_msg_fields(msg, fields, sizeof(fields));
	fprintf(stderr, "%s: %s %s (%u bytes)%s%s\n", conn->prog, what,
		lab3_msg_type_name(msg->type), bytes, fields[0] ? ": " : "",
		fields);
}

/* wc_failed: a work request failed, so the queue pair is in the error
 * state and every other request will be flushed.  The cause is often the
 * peer's: an ERROR it sent just before it hung up may still be on its way
 * into the CQ (lab3_settling()). */
static void wc_failed(struct lab3_conn *conn, const struct ibv_wc *wc)
{
	unsigned kind = WR_KIND(wc->wr_id);

	if (kind == WR_RECV && wc->status == IBV_WC_WR_FLUSH_ERR)
		conn->recv_flushed = 1;
	if (conn->error != 0)
		return;
	if (iwarp_flushed_before_established(conn, wc))	/* provider.h */
		return;
	if (wc->status == IBV_WC_WR_FLUSH_ERR)
		conn_error(conn, -ECONNRESET,
			   "the connection broke (work requests flushed)");
	else if (wc->status == IBV_WC_RNR_RETRY_EXC_ERR)
		conn_error(conn, -EIO, "%s failed: the peer posted no receive "
			   "for it (RNR retries exhausted)", kind_name(kind));
	else
		conn_error(conn, -EIO, "%s failed: %s%s", kind_name(kind),
			   ibv_wc_status_str(wc->status),
			   lab3_wc_status_meaning(kind, wc->status));
	conn->error_from_wc = 1;
	conn->settle_until = lab3_now_ms() + CONN_SETTLE_MS;
}

/* apply_peer_error: the peer sent ERROR: its reason is why the connection
 * ends.  It is the connection's error even when a failed completion came
 * first (the peer's hang-up often overtakes its ERROR), but never
 * replaces an error of our own. */
static void apply_peer_error(struct lab3_conn *conn, const struct lab3_msg *msg)
{
	if (conn->error != 0 && !conn->error_from_wc)
		return;
	conn->error = 0;
	conn->error_from_wc = 0;
	conn->peer_code = msg->error.code;
	conn_error(conn, -EREMOTEIO, "%s", msg->error.reason);
}

/* apply_recv: a message arrived in receive buffer SLOT: check and decode
 * it, and put it in the inbox (a peer's ERROR becomes the connection's
 * error instead).  Returns 1 when the buffer is to be posted again: not
 * once the connection has failed, this message's failure included (the
 * peer's ERROR, one too many), so that a peer that goes on sending then
 * finds no receive, and cannot keep the CQ busy for as long as it
 * likes. */
static int apply_recv(struct lab3_conn *conn, const struct ibv_wc *wc,
		     uint64_t slot)
{
	char why[LAB3_ERR_LEN - 32];
	struct lab3_msg msg;

	if (wc->opcode != IBV_WC_RECV) {
		/* e.g. an RDMA WRITE with immediate data, not a SEND */
		conn_error(conn, -EPROTO, "protocol error: the peer consumed "
			   "a receive without a SEND");
		return 0;
	}
	if (lab3_decode(&conn->msgs[slot], wc->byte_len, &msg, why,
			sizeof(why)) != 0) {
		conn_error(conn, -EPROTO, "protocol error: %s", why);
		return 0;
	}
	if (conn->verbose)
		conn_trace_msg(conn, "received", &msg, wc->byte_len);
	conn->heard = 1;
	if (msg.type == LAB3_MSG_ERROR)
		apply_peer_error(conn, &msg);
	else if (conn->ninbox == LAB3_RECV_DEPTH)
		conn_error(conn, -EPROTO, "protocol error: the peer sent more "
			   "messages than it may");
	else
		conn->inbox[conn->ninbox++] = msg;
	return conn->error == 0;
}

/* sent_as_peer_left: a SEND of ours went out whole as the peer hung up,
 * though its completion failed (iWARP: see apply_sent()).  It counts as
 * completed, and the hang-up is the connection's end, not the status; as
 * after any failed completion, the peer's ERROR may still come to say
 * why it left (apply_peer_error()). */
static void sent_as_peer_left(struct lab3_conn *conn)
{
	conn->sends_completed++;
	if (conn->error != 0)
		return;
	conn_hung_up(conn);
	conn->error_from_wc = 1;
	conn->settle_until = lab3_now_ms() + CONN_SETTLE_MS;
}

/* apply_sent: a SEND or an RDMA WRITE completed: its credit comes back,
 * and a success is counted (conn->sends_completed: the send queue
 * completes in the order it was posted). */
static void apply_sent(struct lab3_conn *conn, const struct ibv_wc *wc)
{
	if (conn->credits == LAB3_SEND_DEPTH) {
		conn_error(conn, -EIO, "a send completion with no send "
			   "outstanding");
		return;
	}
	conn_return_credit(conn);
	if (wc->status == IBV_WC_SUCCESS)
		conn->sends_completed++;
	else if (iwarp_send_cut_by_hangup(conn, wc))	/* provider.h */
		sent_as_peer_left(conn);
	else
		wc_failed(conn, wc);
}

/* send_only_status: whether only a SEND or an RDMA WRITE, never a
 * receive, can fail with status ST: the peer's answer to a request of
 * ours, or its silence.  (Not REM_INV_REQ_ERR nor REM_ACCESS_ERR: rxe
 * completes a receive too short for the peer's SEND with the first.) */
static int send_only_status(enum ibv_wc_status st)
{
	return st == IBV_WC_REM_OP_ERR || st == IBV_WC_RETRY_EXC_ERR ||
	       st == IBV_WC_RNR_RETRY_EXC_ERR || st == IBV_WC_BAD_RESP_ERR;
}

/* wr_id_fits: whether a completion's wr_id names the kind of work request
 * it was.  A successful one's opcode says what it was: a receive, a SEND
 * or an RDMA WRITE.  A failed one has no valid opcode (ibv_poll_cq(3)),
 * but its status may still say that it was a send. */
static int wr_id_fits(const struct ibv_wc *wc)
{
	unsigned kind = WR_KIND(wc->wr_id);

	if (kind > WR_WRITE)
		return 0;
	if (wc->status != IBV_WC_SUCCESS)
		return kind != WR_RECV || !send_only_status(wc->status);
	if (wc->opcode & IBV_WC_RECV)
		return kind == WR_RECV;
	if (wc->opcode == IBV_WC_RDMA_WRITE)
		return kind == WR_WRITE;
	return kind == WR_SEND;
}

/* wr_id_error: our own work request completed with a wr_id that does not
 * say what it was: the poster's mistake, not the peer's.  The SENDs of
 * the lab's messages are posted with WR_ID(WR_SEND, 0), the receives with
 * WR_ID(WR_RECV, slot): a wrong one is most likely a WRITE's. */
static void wr_id_error(struct lab3_conn *conn, const struct ibv_wc *wc)
{
	unsigned long long wr_id = wc->wr_id;
	const char *says = kind_name(WR_KIND(wc->wr_id));

	if (wc->status != IBV_WC_SUCCESS)
		conn_error(conn, -EINVAL, "a failed completion (%s) came with "
			   "wr_id 0x%llx, which says %s, but only a send fails "
			   "so: is the WRITE's wr_id WR_ID(WR_WRITE, 0)?",
			   ibv_wc_status_str(wc->status), wr_id, says);
	else if (wc->opcode == IBV_WC_SEND && WR_KIND(wr_id) == WR_WRITE)
		conn_error(conn, -EINVAL, "our own RDMA WRITE (wr_id 0x%llx) "
			   "completed as a SEND: was it posted with opcode "
			   "IBV_WR_SEND where IBV_WR_RDMA_WRITE belongs?", wr_id);
	else if (wc->opcode & IBV_WC_RECV)
		conn_error(conn, -EINVAL, "a completion of a RECV came with "
			   "wr_id 0x%llx, which says %s: is each receive's wr_id "
			   "WR_ID(WR_RECV, slot)?", wr_id, says);
	else
		conn_error(conn, -EINVAL, "a completion of %s came with wr_id "
			   "0x%llx, which says %s: is the WRITE's wr_id "
			   "WR_ID(WR_WRITE, 0)?", wc->opcode == IBV_WC_SEND ?
			   "a SEND" : "an RDMA WRITE", wr_id, says);
}

/* recv_slot_error: a receive completed with a wr_id whose slot is no
 * receive buffer of ours. */
static void recv_slot_error(struct lab3_conn *conn, const struct ibv_wc *wc)
{
	conn_error(conn, -EINVAL, "a completion of a RECV came with wr_id "
		   "0x%llx, which says receive buffer %llu of %d: is each "
		   "receive's wr_id WR_ID(WR_RECV, slot)?",
		   (unsigned long long)wc->wr_id,
		   (unsigned long long)WR_REST(wc->wr_id), LAB3_RECV_DEPTH);
}

/* conn_apply_wc: see conn_internal.h. */
int conn_apply_wc(struct lab3_conn *conn, const struct ibv_wc *wc)
{
	uint64_t slot = WR_REST(wc->wr_id);

	trace_wc(conn, wc);
	if (!wr_id_fits(wc))
		wr_id_error(conn, wc);
	else if (WR_KIND(wc->wr_id) != WR_RECV)
		apply_sent(conn, wc);
	else if (slot >= LAB3_RECV_DEPTH)
		recv_slot_error(conn, wc);
	else if (wc->status == IBV_WC_SUCCESS)
		return apply_recv(conn, wc, slot);
	else
		wc_failed(conn, wc);
	return 0;
}

/* ---- What an rdma_cm event means ---- */

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

/* lab3_apply_cm_event: see common.h. */
int lab3_apply_cm_event(struct lab3_conn *conn,
		       const struct rdma_cm_event *event)
{
	if (conn->verbose)
		fprintf(stderr, "%s: cm event: %s\n", conn->prog,
			rdma_event_str(event->event));
	switch (event->event) {
	case RDMA_CM_EVENT_ESTABLISHED:
		conn->connected = 1;
		conn->established = 1;
		/* A client's connection (its queue pair on its cm_id): siw's
		 * nudge may go from now on (provider.h). */
		if (conn->qp != NULL && conn->qp == conn->id->qp)
			siw_nudge_arm(conn, lab3_now_ms());
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
	return 0;
}

/* ---- What the programs ask ---- */

/* lab3_settling: see common.h.  What ended the connection (a failed
 * completion, or the peer's hang-up: settle_until is set then) is not all
 * known yet, for CONN_SETTLE_MS at most:
 *   - after a failed completion, the peer's ERROR that explains it may
 *     still be coming, until a receive has been flushed (the receive
 *     queue completes in order, so every message before it has been
 *     seen);
 *   - a SEND or WRITE whose completion has not come: it says whether
 *     the message went out.  Over iWARP a SEND completes once it is on
 *     the wire, and a peer that has it may hang up before its completion
 *     is seen: the receiver's KEY, when the sender exits at once. */
int lab3_settling(const struct lab3_conn *conn)
{
	if (conn->settle_until == 0 || lab3_now_ms() >= conn->settle_until)
		return 0;
	return (conn->error_from_wc && !conn->recv_flushed) ||
	       conn->credits < LAB3_SEND_DEPTH;
}

/* lab3_take_msg: see common.h. */
int lab3_take_msg(struct lab3_conn *conn, struct lab3_msg *msg)
{
	/* The messages that came before a peer's ERROR are taken first, in
	 * order: a KEY followed at once by an ERROR is still the KEY. */
	if (conn->error != 0 && !(conn->error == -EREMOTEIO &&
				   conn->ninbox > 0))
		return lab3_settling(conn) ? -EAGAIN : conn->error;
	if (conn->ninbox > 0) {
		*msg = conn->inbox[0];
		conn->ninbox--;
		memmove(&conn->inbox[0], &conn->inbox[1],
			conn->ninbox * sizeof(conn->inbox[0]));
		return 0;
	}
	if (conn->disconnected)
		return conn_hung_up(conn);
	return -EAGAIN;
}

/* lab3_sends_completed: see common.h. */
int lab3_sends_completed(struct lab3_conn *conn)
{
	/* A peer's ERROR comes after the messages it sent before it (see
	 * lab3_take_msg()).  While those wait to be read, they are the
	 * answer: the peer spoke after our sends were posted, and what it
	 * said tells whether they arrived (a KEY answers the ID), even when
	 * the completion of our last SEND is still behind its ERROR in the
	 * CQ. */
	if (conn->error == -EREMOTEIO && conn->ninbox > 0)
		return 0;
	if (conn->error != 0)
		return lab3_settling(conn) ? -EAGAIN : conn->error;
	if (conn->credits == LAB3_SEND_DEPTH)
		return 0;
	if (conn->disconnected && !lab3_settling(conn))
		return conn_hung_up(conn);
	return -EAGAIN;
}
