/*
 * completion.c - what each completion means to a connection, and the
 * waits built on common.c's one blocking wait (the completion model of
 * struct lab3_conn in common.h):
 *   - lab3_poll() takes every completion there is, without blocking: a
 *     message goes to the inbox and its buffer is posted again, a SEND or
 *     WRITE gives its credit back, a failure is the connection's error;
 *   - lab3_wait() blocks until something happens, then lets what ended
 *     the connection settle: a peer's ERROR, or the completion of our
 *     last SEND, may still be on its way behind a failure or a hang-up.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "conn_internal.h"
#include "explain.h"
#include "listener.h"
#include "provider.h"

#define DISCONNECT_WAIT_MS 2000	/* how long to wait for DISCONNECTED */
#define NO_CM_EVENT ((enum rdma_cm_event_type)-1)	/* none yet */

/* ---- What a completion means ---- */

/* trace_wc: under -v, show a work completion: the student's view of what
 * the hardware did. */
static void trace_wc(const struct lab3_conn *conn, const struct ibv_wc *wc)
{
	if (!conn->verbose)
		return;
	fprintf(stderr, "%s: completion: %s wr_id=%llu status=%s byte_len=%u\n",
		conn->prog, lab3_wc_opcode_name(wc->opcode),
		(unsigned long long)wc->wr_id, ibv_wc_status_str(wc->status),
		wc->byte_len);
}

/* wc_failed: a work request failed, so the queue pair is in the error
 * state and every other request will be flushed.  The cause is often the
 * peer's: an ERROR it sent just before it hung up may still be on its way
 * into the CQ (see settle()). */
static void wc_failed(struct lab3_conn *conn, const struct ibv_wc *wc)
{
	static const char *const what[] = { "RECV", "SEND", "RDMA WRITE" };
	unsigned kind = WR_KIND(wc->wr_id);

	if (kind == WR_RECV && wc->status == IBV_WC_WR_FLUSH_ERR)
		conn->recv_flushed = 1;
	if (conn->error != 0)
		return;
	if (iwarp_flushed_before_established(conn, wc))
		return;
	if (wc->status == IBV_WC_WR_FLUSH_ERR)
		conn_error(conn, -ECONNRESET,
			   "the connection broke (work requests flushed)");
	else if (wc->status == IBV_WC_RNR_RETRY_EXC_ERR)
		conn_error(conn, -EIO, "%s failed: the peer posted no receive "
			   "for it (RNR retries exhausted)",
			   kind <= WR_WRITE ? what[kind] : "a work request");
	else
		conn_error(conn, -EIO, "%s failed: %s%s",
			   kind <= WR_WRITE ? what[kind] : "a work request",
			   ibv_wc_status_str(wc->status),
			   lab3_wc_status_meaning(kind, wc->status));
	conn->error_from_wc = 1;
	conn->settle_until = lab3_now_ms() + CONN_SETTLE_MS;
}

/* take_peer_error: the peer sent ERROR: its reason is why the connection
 * ends.  It is the connection's error even when a failed completion came
 * first (the peer's hang-up often overtakes its ERROR), but never
 * replaces an error of our own. */
static void take_peer_error(struct lab3_conn *conn, const struct lab3_msg *msg)
{
	if (conn->error != 0 && !conn->error_from_wc)
		return;
	conn->error = 0;
	conn->error_from_wc = 0;
	conn->peer_code = msg->error.code;
	conn_error(conn, -EREMOTEIO, "%s", msg->error.reason);
}

/* take_recv: a message arrived: check and decode it, post its buffer
 * again (while the connection has not failed), and put it in the inbox
 * (a peer's ERROR becomes the connection's error instead). */
static void take_recv(struct lab3_conn *conn, const struct ibv_wc *wc)
{
	char why[LAB3_ERR_LEN - 32];
	uint64_t slot = WR_REST(wc->wr_id);
	struct lab3_msg msg;

	if (slot >= LAB3_RECV_DEPTH) {
		conn_error(conn, -EIO, "a completion for no receive buffer");
		return;
	}
	if (wc->opcode != IBV_WC_RECV) {
		/* e.g. an RDMA WRITE with immediate data, not a SEND */
		conn_error(conn, -EPROTO, "protocol error: the peer consumed "
			   "a receive without a SEND");
		return;
	}
	if (lab3_decode(&conn->msgs[slot], wc->byte_len, &msg, why,
			sizeof(why)) != 0) {
		conn_error(conn, -EPROTO, "protocol error: %s", why);
		return;
	}
	if (conn->verbose)
		fprintf(stderr, "%s: received %s (%u bytes)\n", conn->prog,
			lab3_msg_type_name(msg.type), wc->byte_len);
	/* Once the connection has failed, its buffers are not posted again:
	 * a peer that goes on sending then finds none, and cannot keep
	 * lab3_poll() busy for as long as it likes. */
	if (conn->error == 0 && conn_post_recv(conn, (int)slot) != 0)
		return;
	conn->heard = 1;
	if (msg.type == LAB3_MSG_ERROR)
		take_peer_error(conn, &msg);
	else if (conn->ninbox == LAB3_RECV_DEPTH)
		conn_error(conn, -EPROTO, "protocol error: the peer sent more "
			   "messages than it may");
	else
		conn->inbox[conn->ninbox++] = msg;
}

/* take_sent: a SEND or an RDMA WRITE completed: its credit comes back,
 * and its tag, if it had one, goes to conn->sent. */
static void take_sent(struct lab3_conn *conn, const struct ibv_wc *wc)
{
	if (conn->credits == LAB3_SEND_DEPTH) {
		conn_error(conn, -EIO, "a send completion with no send "
			   "outstanding");
		return;
	}
	conn->credits++;
	if (wc->status != IBV_WC_SUCCESS)
		wc_failed(conn, wc);
	else if (WR_REST(wc->wr_id) != 0 && conn->sent != NULL)
		conn->sent(conn->owner, WR_REST(wc->wr_id));
}

/* wr_id_fits: whether a successful completion's wr_id names the kind of
 * work request its opcode says it was: a receive, a SEND or an RDMA
 * WRITE.  (A failed completion has no opcode to compare.) */
static int wr_id_fits(const struct ibv_wc *wc)
{
	unsigned kind = WR_KIND(wc->wr_id);

	if (wc->opcode & IBV_WC_RECV)
		return kind == WR_RECV;
	if (wc->opcode == IBV_WC_RDMA_WRITE)
		return kind == WR_WRITE;
	return kind == WR_SEND;
}

/* wr_id_error: our own work request completed with a wr_id that does not
 * say what it was: the poster's mistake, not the peer's. */
static void wr_id_error(struct lab3_conn *conn, const struct ibv_wc *wc)
{
	if (wc->opcode == IBV_WC_SEND && WR_KIND(wc->wr_id) == WR_WRITE) {
		conn_error(conn, -EINVAL, "our own RDMA WRITE (wr_id 0x%llx) "
			   "completed as a SEND: was it posted with opcode "
			   "IBV_WR_SEND where IBV_WR_RDMA_WRITE belongs?",
			   (unsigned long long)wc->wr_id);
		return;
	}
	conn_error(conn, -EINVAL, "our own %s completed with wr_id 0x%llx, "
		   "which names no %s of ours (post a WRITE with wr_id "
		   "WR_ID(WR_WRITE, tag), as its completion is known by)",
		   lab3_wc_opcode_name(wc->opcode),
		   (unsigned long long)wc->wr_id,
		   lab3_wc_opcode_name(wc->opcode));
}

/* take_wc: what one completion means: a message arrived, a SEND or a
 * WRITE is done, or a work request failed. */
static void take_wc(struct lab3_conn *conn, const struct ibv_wc *wc)
{
	trace_wc(conn, wc);
	if (wc->status == IBV_WC_SUCCESS && !wr_id_fits(wc))
		wr_id_error(conn, wc);
	else if (wc->status == IBV_WC_SUCCESS && WR_KIND(wc->wr_id) == WR_RECV)
		take_recv(conn, wc);
	else if (WR_KIND(wc->wr_id) == WR_RECV)
		wc_failed(conn, wc);
	else
		take_sent(conn, wc);
}

/* lab3_poll: see common.h. */
int lab3_poll(struct lab3_conn *conn)
{
	struct ibv_wc wc[8];
	int taken = 0, n;

	while ((n = conn_poll_cq(conn, wc, 8)) > 0) {
		for (int i = 0; i < n; i++)
			take_wc(conn, &wc[i]);
		taken += n;
	}
	return n < 0 ? n : taken;
}

/* ---- Send credits ---- */

/* conn_take_any_credit: one credit, whatever the connection's state (the
 * ERROR that ends a connection still goes out: lab3_post_error()): 0, or
 * -EAGAIN when the send queue is full.  The one place a credit is
 * taken. */
int conn_take_any_credit(struct lab3_conn *conn)
{
	if (conn->credits == 0)
		return -EAGAIN;
	conn->credits--;
	return 0;
}

/* conn_take_credit: one credit for a work request about to be posted: 0,
 * or -EAGAIN when the send queue is full or the connection settles (see
 * unsettled()), or the connection's error.  Never waits. */
int conn_take_credit(struct lab3_conn *conn)
{
	if (conn->error != 0)
		return lab3_settling(conn) ? -EAGAIN : conn->error;
	return conn_take_any_credit(conn);
}

/* ---- Waits ---- */

/* post_empty_write: a zero-length RDMA WRITE, which places nothing and
 * needs no rkey (siw_nudge_due() in provider.h asks for it). */
static void post_empty_write(struct lab3_conn *conn)
{
	struct ibv_send_wr wr = {
		.wr_id = WR_ID(WR_WRITE, 0),
		.opcode = IBV_WR_RDMA_WRITE,
	};

	if (conn_take_credit(conn) == 0)
		conn_post_send_wr(conn, &wr);
}

/* wait_until: conn_wait_channels()'s wait, until DEADLINE (ms), as long
 * as lab3_poll() takes nothing: 0 after progress, 1 when the deadline
 * came first, which is no error here, or the connection's error. */
static int wait_until(struct lab3_conn *conn, long long deadline)
{
	/* The class server's connections share the listener's CM channel,
	 * and nothing of theirs may block (server.c): a wait is a bug. */
	if (!conn->owns_cm_channel)
		return conn_error(conn, -EDEADLK, "internal error: a blocking "
				  "wait on a connection of the class server");
	for (;;) {
		long long left;
		int n = lab3_poll(conn);

		if (n != 0)
			return n < 0 ? n : 0;
		left = deadline - lab3_now_ms();
		if (left <= 0)
			return 1;
		if (siw_nudge_due(conn, lab3_now_ms(), &left))	/* provider.h */
			post_empty_write(conn);
		n = conn_wait_channels(conn, left);
		if (n < 0 || (n & CONN_WOKE_CM)) {
			lab3_poll(conn);	/* what came before it */
			return n < 0 ? n : 0;
		}
	}
}

/* conn_wait_once: wait until lab3_poll() takes a completion or an event
 * for our cm_id comes, WAIT_MS at most.  Returns 0 then, or the
 * connection's error (which a timeout or a signal becomes).  It does not
 * stop at an error the connection already has (lab3_send_error()). */
int conn_wait_once(struct lab3_conn *conn, int wait_ms)
{
	int ret = wait_until(conn, lab3_now_ms() + wait_ms);

	return ret > 0 ? lab3_time_out(conn, wait_ms) : ret;
}

/* lab3_conn_ready: see listener.h. */
int lab3_conn_ready(struct lab3_conn *conn)
{
	conn_take_cq_event(conn);
	return lab3_poll(conn);
}

/* conn_hung_up: the peer's hang-up ends what we waited for: say so in
 * conn->err, naming it.  Returns -ECONNRESET. */
int conn_hung_up(struct lab3_conn *conn)
{
	snprintf(conn->err, sizeof(conn->err), "the peer disconnected%s%s",
		 conn->awaiting[0] ? " while we waited for " : "",
		 conn->awaiting);
	return -ECONNRESET;
}

/* lab3_time_out: see listener.h.  After a hang-up (and its settling),
 * the hang-up is the end. */
int lab3_time_out(struct lab3_conn *conn, int wait_ms)
{
	if (conn->error == 0 && conn->disconnected)
		conn->error = conn_hung_up(conn);
	return conn_error(conn, -ETIMEDOUT, "timed out after %lld s %s%s",
			  ((long long)wait_ms + 999) / 1000, conn->awaiting[0] ?
			  "waiting for " : "without word from the peer",
			  conn->awaiting);
}

/* unsettled: the connection has ended (a failed completion, or the
 * peer's hang-up: settle_until is set then), and what ended with it is
 * not all known yet, for CONN_SETTLE_MS at most:
 *   - after a failed completion, the peer's ERROR that explains it may
 *     still be coming, until a receive has been flushed (the receive
 *     queue completes in order, so every message before it has been
 *     seen);
 *   - a SEND or WRITE whose completion has not come: it says whether
 *     the message went out.  Over iWARP a SEND completes once it is on
 *     the wire, and a peer that has it may hang up before its completion
 *     is seen: the receiver's KEY, when the sender exits at once. */
static int unsettled(const struct lab3_conn *conn)
{
	if (lab3_now_ms() >= conn->settle_until)
		return 0;
	return (conn->error_from_wc && !conn->recv_flushed) ||
	       conn->credits < LAB3_SEND_DEPTH;
}

/* settle: wait while the connection is unsettled().  Returns its error,
 * or -ECONNRESET after the peer's hang-up, or 0. */
static int settle(struct lab3_conn *conn)
{
	while (unsettled(conn))
		if (wait_until(conn, conn->settle_until) < 0)
			break;
	if (conn->error != 0)
		return conn->error;
	if (conn->disconnected)
		return conn_hung_up(conn);
	return 0;
}

/* lab3_settling: see listener.h and unsettled(). */
int lab3_settling(const struct lab3_conn *conn)
{
	return unsettled(conn);
}

/* lab3_wait: see common.h. */
int lab3_wait(struct lab3_conn *conn, int wait_ms)
{
	if (conn->error == 0 && !conn->disconnected)
		conn_wait_once(conn, wait_ms ? wait_ms : conn->timeout_ms);
	return settle(conn);
}

/* conn_wait_cm_event: wait for event WANTED on our cm_id, each step of setup
 * within the connection's timeout.  (A connection's own rdma_cm events
 * are read only in conn_wait_channels(), inside this file's waits, each
 * noted in conn->cm_event and its flags: none is lost.) */
int conn_wait_cm_event(struct lab3_conn *conn,
		       enum rdma_cm_event_type wanted)
{
	conn->cm_event = NO_CM_EVENT;
	while (conn->cm_event != wanted) {
		int ret = lab3_wait(conn, 0);

		if (ret != 0)
			return ret;
	}
	return 0;
}

/* lab3_disconnect: see common.h; the wait is DISCONNECT_WAIT_MS at most. */
void lab3_disconnect(struct lab3_conn *conn)
{
	long long deadline = lab3_now_ms() + DISCONNECT_WAIT_MS, left;

	if (!lab3_disconnect_start(conn))
		return;
	while (!conn->disconnected && (left = deadline - lab3_now_ms()) > 0)
		if (conn_wait_once(conn, (int)left) != 0)
			break;
}
