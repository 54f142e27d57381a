/*
 * common.c - what the sender and the receiver share: the RDMA plumbing,
 * and the hashes of steps 1 and 4.
 *
 * Read it after protocol.h.  It holds, in order: small utilities; the
 * connection's errors (the first one stays); connection-manager events;
 * the completion model (see struct lab3_conn in common.h: lab3_poll()
 * takes every completion without blocking, lab3_wait() is a
 * connection's one blocking wait); the verbs resources of one
 * connection; teardown; messages; memory registration; SHA-256 (steps 1
 * and 4).
 *
 * Beside it, in files of their own: the two sides of a connection, the
 * client's (client.c: resolve, connect, the RDMA WRITE) and the server's
 * (listener.c); what particular providers need (provider.c); and what is
 * not the lab (args.c, secret.c, ledger.c, json.c).
 */
#define _GNU_SOURCE	/* ppoll() */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "common.h"
#include "conn_internal.h"
#include "provider.h"
#include "listener.h"

#define DISCONNECT_WAIT_MS 2000	/* how long to wait for DISCONNECTED */
#define NO_CM_EVENT ((enum rdma_cm_event_type)-1)	/* none yet */
#define SETTLE_MS 200		/* after a failed completion or a hang-up,
				 * how long to look for what came before
				 * (see unsettled()) */
#define ERROR_WAIT_MS 1000	/* silence while our own ERROR goes out */

/* Used before they are defined, with the helpers they belong with. */
static int wait_until(struct lab3_conn *conn, long long deadline);

/* ---- Small utilities ---- */

/* conn_set_nonblocking: make FD non-blocking, so that a read after poll() can
 * never block the single thread.  A failure is reported in ERR. */
int conn_set_nonblocking(int fd, char *err, size_t err_len)
{
	int flags = fcntl(fd, F_GETFL);
	int ret;

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
		ret = -errno;
		snprintf(err, err_len, "fcntl O_NONBLOCK: %s", strerror(errno));
		return ret;
	}
	return 0;
}

/* lab3_now_us: see common.h. */
long long lab3_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* lab3_now_ms: see common.h. */
long long lab3_now_ms(void)
{
	return lab3_now_us() / 1000;
}

/* wc_opcode_name: the name of a completion's opcode, for traces and
 * messages. */
static const char *wc_opcode_name(enum ibv_wc_opcode opcode)
{
	switch (opcode) {
	case IBV_WC_SEND:	return "SEND";
	case IBV_WC_RDMA_WRITE:	return "RDMA_WRITE";
	case IBV_WC_RECV:	return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default:		return "other";
	}
}

/* trace_wc: under -v, show a work completion: the student's view of what
 * the hardware did. */
static void trace_wc(const struct lab3_conn *conn, const struct ibv_wc *wc)
{
	if (!conn->verbose)
		return;
	fprintf(stderr, "%s: completion: %s wr_id=%llu status=%s byte_len=%u\n",
		conn->prog, wc_opcode_name(wc->opcode),
		(unsigned long long)wc->wr_id, ibv_wc_status_str(wc->status),
		wc->byte_len);
}

/* ---- Errors of a connection ---- */

/* conn_error: the connection has failed with RET (a negative errno), FMT
 * saying why.  The first failure stays: a later one changes nothing (but
 * see take_peer_error()).  Returns the connection's error. */
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

/* ---- Connection-manager events ---- */

/* What rdma_cm's ENODEV means to a user: the address is not on (or routed
 * through) any RDMA device, e.g. a plain Ethernet address without rxe. */
const char conn_no_device_msg[] =
	"no RDMA device reachable for that address";
const char conn_no_listener_msg[] =
	"connection refused (is a receiver listening on that port?)";

/* rejection_reason: the printable reason a receiver put in its rejection
 * (see lab3_reject()), or NULL if there is none. */
static const char *rejection_reason(const struct rdma_cm_event *event)
{
	const char *data = event->param.conn.private_data;
	size_t max = event->param.conn.private_data_len;
	size_t len;

	if (data == NULL || max == 0)
		return NULL;
	len = strnlen(data, max);
	if (len == 0 || len == max || lab3_check_text(data, len) != 0)
		return NULL;
	return data;
}

/* cm_event_error: an rdma_cm event that ends the connection (or the
 * attempt to make one) is the connection's error. */
static int cm_event_error(struct lab3_conn *conn,
			  const struct rdma_cm_event *event)
{
	switch (event->event) {
	case RDMA_CM_EVENT_ADDR_ERROR:
		return conn_error(conn, -EHOSTUNREACH, "%s",
				  event->status == -ENODEV ? conn_no_device_msg :
				  "cannot resolve the address to an RDMA "
				  "device");
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return conn_error(conn, -EHOSTUNREACH,
				  "no route to the address: %s",
				  strerror(-event->status));
	case RDMA_CM_EVENT_UNREACHABLE:
		return conn_error(conn, -EHOSTUNREACH,
				  "the receiver is unreachable");
	case RDMA_CM_EVENT_REJECTED:
		if (rejection_reason(event) != NULL) {
			const char *why = rejection_reason(event);

			conn->refused = 1;
			conn->refused_busy =
				strncmp(why, LAB3_BUSY_REASON,
					strlen(LAB3_BUSY_REASON)) == 0;
			return conn_error(conn, -ECONNREFUSED,
					  "connection refused: %s", why);
		}
		return conn_error(conn, -ECONNREFUSED, "%s", conn_no_listener_msg);
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		return conn_error(conn, -ECONNRESET, "the peer disconnected");
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return conn_error(conn, -ENODEV, "the RDMA device was removed");
	default:
		return conn_error(conn, -ECONNABORTED, "connection lost: %s",
				  rdma_event_str(event->event));
	}
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
			conn->settle_until = lab3_now_ms() + SETTLE_MS;
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

/* ---- Completions ---- */

/* post_recv: hand receive buffer SLOT to the hardware for the next
 * incoming SEND.  Buffers must be posted before the peer can send. */
static int post_recv(struct lab3_conn *conn, int slot)
{
	/* SOLUTION verbs posting a receive: One SGE for receive buffer
	 * SLOT, conn->msgs[slot] (all sizeof(conn->msgs[slot]) bytes of it),
	 * under conn->msgs_mr's lkey; one struct ibv_recv_wr with it and
	 * wr_id WR_ID(WR_RECV, slot) (lab3_poll() tells a receive by it,
	 * and take_recv() finds its buffer by the slot); ibv_post_recv() on
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

/* wc_status_meaning: what a failed completion of KIND most likely means
 * in this lab, for the statuses a mistake in one's own code causes; ""
 * for the rest. */
static const char *wc_status_meaning(unsigned kind, enum ibv_wc_status st)
{
	if (kind == WR_WRITE && st == IBV_WC_REM_ACCESS_ERR)
		return " (the peer's device refused the WRITE: is it inside "
		       "the window the REGION describes, at its addr plus the "
		       "bytes of the chunk already written, under its rkey?)";
	if (kind == WR_WRITE && (st == IBV_WC_REM_OP_ERR ||
				 st == IBV_WC_REM_INV_REQ_ERR))
		return " (the peer took it as a SEND, longer than any "
		       "message: was it posted with opcode IBV_WR_SEND where "
		       "IBV_WR_RDMA_WRITE belongs?)";
	if (st == IBV_WC_LOC_PROT_ERR)
		return " (the bytes posted are not all inside the memory "
		       "registration whose lkey the work request names)";
	return "";
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
			   wc_status_meaning(kind, wc->status));
	conn->error_from_wc = 1;
	conn->settle_until = lab3_now_ms() + SETTLE_MS;
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
	if (conn->error == 0 && post_recv(conn, (int)slot) != 0)
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
		   wc_opcode_name(wc->opcode),
		   (unsigned long long)wc->wr_id,
		   wc_opcode_name(wc->opcode));
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

/* lab3_poll: see common.h.  The CQ is armed for one notification once it
 * is empty, and then looked at again: a completion may have slipped in
 * before the arming, and would not wake the completion channel. */
int lab3_poll(struct lab3_conn *conn)
{
	/* SOLUTION verbs polling completions: With no conn->cq yet, return
	 * 0.  Otherwise take completions with ibv_poll_cq() on conn->cq, up
	 * to 8 at a time into an array of struct ibv_wc, and hand each to
	 * take_wc(), until a poll finds none (a negative result: return
	 * conn_error(conn, -EIO, "ibv_poll_cq failed")).  Then arm the CQ
	 * with ibv_req_notify_cq(conn->cq, 0), which returns the errno
	 * itself (not 0: return conn_error(conn, -ret, "ibv_req_notify_cq:
	 * %s", strerror(ret))), and poll once more until none: a completion
	 * that came between the last poll and the arming would not wake the
	 * completion channel.  Return how many completions you took. */
	struct ibv_wc wc[8];
	int taken = 0, armed = 0;

	if (conn->cq == NULL)
		return 0;
	for (;;) {
		int n = ibv_poll_cq(conn->cq, 8, wc);

		if (n < 0)
			return conn_error(conn, -EIO, "ibv_poll_cq failed");
		for (int i = 0; i < n; i++)
			take_wc(conn, &wc[i]);
		taken += n;
		if (n > 0)
			continue;
		if (armed)
			return taken;
		n = ibv_req_notify_cq(conn->cq, 0);
		if (n != 0)
			return conn_error(conn, -n, "ibv_req_notify_cq: %s",
					  strerror(n));
		armed = 1;
	}
	/* END SOLUTION */
}

/* ---- The one blocking wait ---- */

/* lab3_wait_fds: the programs' one ppoll(); see listener.h. */
int lab3_wait_fds(struct pollfd *fds, nfds_t nfds, long long timeout_ms,
		  const sigset_t *sigmask)
{
	struct timespec ts = {
		.tv_sec = timeout_ms / 1000,
		.tv_nsec = (timeout_ms % 1000) * 1000000,
	};

	return ppoll(fds, nfds, timeout_ms < 0 ? NULL : &ts, sigmask);
}

/*
 * wait_once: sleep in poll() on the completion channel and the CM event
 * channel together until lab3_poll() takes a completion or an event for
 * our cm_id comes, WAIT_MS at most.  Returns 0 then, or the connection's
 * error (which a timeout or a signal becomes).
 *
 * Every event taken from the completion channel is acknowledged at once,
 * or ibv_destroy_cq() would block at teardown.  A peer that sends its last
 * message and hangs up can wake us with both at once: the CQ is drained
 * after every CM event, so the message is in the inbox before the
 * hang-up is seen.
 */
static int wait_once(struct lab3_conn *conn, int wait_ms)
{
	int ret = wait_until(conn, lab3_now_ms() + wait_ms);

	return ret > 0 ? lab3_time_out(conn, wait_ms) : ret;
}

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

/* wait_until: wait_once()'s wait, until DEADLINE (ms): 0 after progress,
 * 1 when the deadline came first, which is no error here, or the
 * connection's error. */
static int wait_until(struct lab3_conn *conn, long long deadline)
{
	/* The class server's connections share the listener's CM channel,
	 * and nothing of theirs may block (server.c): a wait is a bug. */
	if (!conn->owns_cm_channel)
		return conn_error(conn, -EDEADLK, "internal error: a blocking "
				  "wait on a connection of the class server");
	for (;;) {
		struct pollfd fds[2];
		long long left;
		int n = lab3_poll(conn);

		if (n != 0)
			return n < 0 ? n : 0;
		left = deadline - lab3_now_ms();
		if (left <= 0)
			return 1;
		if (siw_nudge_due(conn, lab3_now_ms(), &left))	/* provider.h */
			post_empty_write(conn);
		fds[0].fd = conn->cm_channel->fd;
		fds[0].events = POLLIN;
		fds[1].fd = conn->comp_channel ? conn->comp_channel->fd : -1;
		fds[1].events = POLLIN;
		if (lab3_wait_fds(fds, 2, left, conn->wait_sigmask) < 0) {
			int err = errno;

			return conn_error(conn, -err, "%s", err == EINTR ?
					  "interrupted by a signal" :
					  strerror(err));
		}
		if (fds[1].revents & POLLIN) {
			n = lab3_conn_ready(conn);
			if (n != 0)
				return n < 0 ? n : 0;
		}
		if (fds[0].revents & POLLIN) {
			n = handle_cm_event(conn);
			if (n != 0) {
				lab3_poll(conn);
				return n < 0 ? n : 0;
			}
		}
	}
}

/* lab3_conn_ready: see listener.h. */
int lab3_conn_ready(struct lab3_conn *conn)
{
	/* SOLUTION verbs the completion event: conn->comp_channel (when not
	 * NULL) is readable: take its event with ibv_get_cq_event() (the
	 * channel is non-blocking: with no event it fails with EAGAIN, no
	 * error here) and acknowledge it at once, ibv_ack_cq_events(cq, 1):
	 * ibv_destroy_cq() waits until every event has been acknowledged.
	 * Then return lab3_poll(conn): the event only says that the CQ has
	 * completions, and it disarmed the CQ. */
	struct ibv_cq *cq;
	void *cq_context;

	if (conn->comp_channel != NULL &&
	    ibv_get_cq_event(conn->comp_channel, &cq, &cq_context) == 0)
		ibv_ack_cq_events(cq, 1);
	return lab3_poll(conn);
	/* END SOLUTION */
}

/* hung_up: the peer's hang-up ends what we waited for: say so in
 * conn->err, naming it.  Returns -ECONNRESET. */
static int hung_up(struct lab3_conn *conn)
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
		conn->error = hung_up(conn);
	return conn_error(conn, -ETIMEDOUT, "timed out after %lld s %s%s",
			  ((long long)wait_ms + 999) / 1000, conn->awaiting[0] ?
			  "waiting for " : "without word from the peer",
			  conn->awaiting);
}

/* unsettled: the connection has ended (a failed completion, or the
 * peer's hang-up: settle_until is set then), and what ended with it is
 * not all known yet, for SETTLE_MS at most:
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
		return hung_up(conn);
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
		wait_once(conn, wait_ms ? wait_ms : conn->timeout_ms);
	return settle(conn);
}

/* conn_wait_cm_event: wait for event WANTED on our cm_id, each step of setup
 * within the connection's timeout.  (rdma_cm's events are read only here
 * and in lab3_wait(), so none can have been missed before.) */
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

/* ---- Resources of one connection ---- */

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

/* create_cq: the completion channel (non-blocking, for wait_once()'s
 * poll()) and the one CQ for sends and receives, which notifies it. */
static int create_cq(struct lab3_conn *conn)
{
	/* SOLUTION verbs the completion channel and the CQ: On
	 * conn->id->verbs, the device the cm_id resolved to: a completion
	 * channel, ibv_create_comp_channel(), into conn->comp_channel, made
	 * non-blocking with conn_set_nonblocking(conn->comp_channel->fd,
	 * conn->err, sizeof(conn->err)) (its caller's error if it fails):
	 * the waits poll() it first.  Then the one CQ for sends and
	 * receives, ibv_create_cq() of LAB3_SEND_DEPTH + LAB3_RECV_DEPTH
	 * entries, context conn, that channel, vector 0, into conn->cq.
	 * Both return NULL on failure and need not set errno: set errno to 0
	 * before each, and on NULL return conn_report_errno(conn, "CALL",
	 * ENOMEM) with CALL the call's name. */
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
	/* SOLUTION verbs the queue pair: A reliable-connected queue pair
	 * (IBV_QPT_RC) whose sends and receives both complete on conn->cq:
	 * room for LAB3_SEND_DEPTH send and LAB3_RECV_DEPTH receive work
	 * requests of one SGE each, and sq_sig_all 0 (a send completes only
	 * if posted IBV_SEND_SIGNALED).  With ON_ID (a client), make it with
	 * rdma_create_qp() on conn->id and conn->pd, and take it from
	 * conn->id->qp; rdma_cm then moves it through its states as the
	 * connection is made.  Otherwise ibv_create_qp() on conn->pd.  Into
	 * conn->qp.  Set errno to 0 before the call; on failure return
	 * conn_report_errno(conn, "CALL", ENOMEM) with CALL its name. */
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
		ret = post_recv(conn, slot);
		if (ret != 0)
			return ret;
	}
	return 0;
}

/* conn_build_resources: create, on the device the cm_id resolved to, the
 * protection domain, completion channel, completion queue and queue pair
 * (on the cm_id if QP_ON_ID) of one connection.  Stores each as it is
 * made, so lab3_conn_destroy() can undo a partial build.  conn_setup_msgs()
 * comes next, once the queue pair is in INIT (where rdma_create_qp()
 * leaves one on the cm_id; the server moves its own there). */
int conn_build_resources(struct lab3_conn *conn, int qp_on_id)
{
	/* SOLUTION verbs the protection domain: ibv_alloc_pd() on
	 * conn->id->verbs into conn->pd (NULL on failure: set errno to 0
	 * before, and return conn_report_errno(conn, "ibv_alloc_pd",
	 * ENOMEM)); then create_cq(), create_qp(conn, qp_on_id) and
	 * query_max_msg_size(), returning the first error. */
	int ret;

	errno = 0;
	conn->pd = ibv_alloc_pd(conn->id->verbs);
	if (conn->pd == NULL)
		return conn_report_errno(conn, "ibv_alloc_pd", ENOMEM);
	ret = create_cq(conn);
	if (ret != 0)
		return ret;
	ret = create_qp(conn, qp_on_id);
	if (ret != 0)
		return ret;
	ret = query_max_msg_size(conn);
	if (ret != 0)
		return ret;
	return 0;
	/* END SOLUTION */
}

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

/* conn_get_addrinfo: rdma_getaddrinfo() for HOST (a name, an IPv4 or an IPv6
 * address, with or without the brackets of "[::1]"), with its failure
 * put in words. */
int conn_get_addrinfo(const char *host, const char *port,
		      const struct rdma_addrinfo *hints,
		      struct rdma_addrinfo **res, char *err, size_t err_len)
{
	char unbracketed[INET6_ADDRSTRLEN + 16];
	size_t len = host != NULL ? strlen(host) : 0;
	int ret;

	if (len > 2 && len < sizeof(unbracketed) + 2 && host[0] == '[' &&
	    host[len - 1] == ']') {
		snprintf(unbracketed, sizeof(unbracketed), "%.*s",
			 (int)(len - 2), host + 1);
		host = unbracketed;
	}
	ret = rdma_getaddrinfo(host, port, hints, res);
	if (ret == 0)
		return 0;
	snprintf(err, err_len, "cannot resolve the address: %s",
		 ret == EAI_SYSTEM ? strerror(errno) : gai_strerror(ret));
	return -EHOSTUNREACH;
}

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

/* ---- Teardown ---- */

/* lab3_disconnect: see common.h; the wait is DISCONNECT_WAIT_MS at most. */
void lab3_disconnect(struct lab3_conn *conn)
{
	long long deadline = lab3_now_ms() + DISCONNECT_WAIT_MS, left;

	if (!lab3_disconnect_start(conn))
		return;
	while (!conn->disconnected && (left = deadline - lab3_now_ms()) > 0)
		if (wait_once(conn, (int)left) != 0)
			break;
}

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

/* lab3_wait_for_bytes: see common.h. */
int lab3_wait_for_bytes(const struct lab3_conn *conn, uint64_t bytes)
{
	uint64_t ms = (uint64_t)conn->timeout_ms + bytes / (4u << 20) * 1000;

	return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

/* ---- Messages ---- */

/* keep_trying: TRY (a try_recv() or a try_flush()) until it is not
 * -EAGAIN, with a wait of up to WAIT_MS between tries.  A wait that ends
 * in the connection's error gives TRY one more look: what the peer sent
 * before its ERROR or its hang-up (a KEY, say) may have come in the same
 * wait, and is still the answer. */
static int keep_trying(struct lab3_conn *conn,
		       int (*try)(struct lab3_conn *, struct lab3_msg *),
		       struct lab3_msg *msg, int wait_ms)
{
	for (;;) {
		int ret = try(conn, msg), waited;

		if (ret != -EAGAIN)
			return ret;
		waited = lab3_wait(conn, wait_ms);
		if (waited != 0) {
			ret = try(conn, msg);
			return ret == -EAGAIN ? waited : ret;
		}
	}
}

/* try_flush: lab3_try_flush() in keep_trying()'s shape. */
static int try_flush(struct lab3_conn *conn, struct lab3_msg *unused)
{
	(void)unused;
	return lab3_try_flush(conn);
}

/* lab3_recv_msg: see common.h.  The messages the peer sent come first,
 * then its ERROR or its hang-up (see lab3_try_recv_msg()). */
int lab3_recv_msg(struct lab3_conn *conn, struct lab3_msg *msg, int wait_ms)
{
	return keep_trying(conn, lab3_try_recv_msg, msg, wait_ms);
}

/* lab3_try_recv_msg: see listener.h. */
int lab3_try_recv_msg(struct lab3_conn *conn, struct lab3_msg *msg)
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
		return hung_up(conn);
	return -EAGAIN;
}

/* lab3_flush: see common.h. */
int lab3_flush(struct lab3_conn *conn, int wait_ms)
{
	return keep_trying(conn, try_flush, NULL, wait_ms);
}

/* lab3_try_flush: see listener.h. */
int lab3_try_flush(struct lab3_conn *conn)
{
	/* A peer's ERROR comes after the messages it sent before it (see
	 * lab3_try_recv_msg()).  While those wait to be read, they are the
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
		return hung_up(conn);
	return -EAGAIN;
}

/* lab3_wait_for_room: see common.h. */
int lab3_wait_for_room(struct lab3_conn *conn, int wait_ms)
{
	while (conn->credits == 0 || conn->error != 0) {
		int ret = lab3_wait(conn, wait_ms);

		if (ret != 0)
			return ret;
	}
	return 0;
}

/* take_credit: one credit, whatever the connection's state (the ERROR
 * that ends a connection still goes out: lab3_post_error()): 0, or
 * -EAGAIN when the send queue is full.  The one place a credit is
 * taken. */
static int take_credit(struct lab3_conn *conn)
{
	if (conn->credits == 0)
		return -EAGAIN;
	conn->credits--;
	return 0;
}

/* conn_take_credit: one credit for a work request about to be posted: 0, or
 * -EAGAIN when the send queue is full or the connection settles (see
 * unsettled()), or the connection's error.  Never waits. */
int conn_take_credit(struct lab3_conn *conn)
{
	if (conn->error != 0)
		return lab3_settling(conn) ? -EAGAIN : conn->error;
	return take_credit(conn);
}

/* conn_post_send_wr: post WR on the send queue, signaled, under a credit the
 * caller has taken (conn_posted()). */
int conn_post_send_wr(struct lab3_conn *conn, struct ibv_send_wr *wr)
{
	/* SOLUTION verbs posting a send: Mark WR signaled (its send_flags
	 * IBV_SEND_SIGNALED: with sq_sig_all 0 an unsignaled send never
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

/* conn_send_buffer: the send buffer for the next SEND.  The buffers are used
 * in turn, and one comes round again only after LAB3_SEND_DEPTH more
 * sends: with a credit taken, no more than LAB3_SEND_DEPTH - 1 other
 * requests are outstanding, and the send queue completes in order, so
 * the SEND that last used it has completed. */
union lab3_wire_msg *conn_send_buffer(struct lab3_conn *conn)
{
	return &conn->msgs[LAB3_RECV_DEPTH + conn->next_send % LAB3_SEND_DEPTH];
}

/* conn_post_send_buffer: post a SEND of the first LEN bytes of
 * conn_send_buffer(), with TAG, under a credit the caller has taken. */
int conn_post_send_buffer(struct lab3_conn *conn, uint32_t len,
			  uint64_t tag)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)conn_send_buffer(conn),
		.length = len,
		.lkey = conn->msgs_mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = WR_ID(WR_SEND, tag),
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
	};
	int ret = conn_post_send_wr(conn, &wr);

	if (ret == 0)
		conn->next_send++;
	return ret;
}

/* encode_into_buffer: encode MSG into conn_send_buffer(); its length, or 0
 * with conn->err saying why. */
static size_t encode_into_buffer(struct lab3_conn *conn,
				 const struct lab3_msg *msg)
{
	size_t len = lab3_encode(msg, conn_send_buffer(conn));

	if (len == 0)
		snprintf(conn->err, sizeof(conn->err),
			 "cannot encode a %s message",
			 lab3_msg_type_name(msg->type));
	else if (conn->verbose)
		fprintf(stderr, "%s: send %s (%zu bytes)\n", conn->prog,
			lab3_msg_type_name(msg->type), len);
	return len;
}

/* post_encoded: encode MSG into conn_send_buffer() and post a SEND of it, with
 * TAG, under a credit the caller has taken (given back on failure). */
static int post_encoded(struct lab3_conn *conn, const struct lab3_msg *msg,
			uint64_t tag)
{
	size_t len = encode_into_buffer(conn, msg);

	if (len == 0) {
		conn->credits++;
		return -EINVAL;
	}
	return conn_post_send_buffer(conn, (uint32_t)len, tag);
}

/* lab3_post_msg: see common.h. */
int lab3_post_msg(struct lab3_conn *conn, const struct lab3_msg *msg,
		  uint64_t tag)
{
	int ret = conn_take_credit(conn);

	return ret != 0 ? ret : post_encoded(conn, msg, tag);
}

/* lab3_send_msg: wait for room, post a SEND and wait for it; see
 * common.h. */
int lab3_send_msg(struct lab3_conn *conn, const struct lab3_msg *msg)
{
	int ret = lab3_wait_for_room(conn, 0);

	if (ret == 0)
		ret = lab3_post_msg(conn, msg, 0);
	return ret != 0 ? ret : lab3_flush(conn, 0);
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

/* lab3_send_error: see common.h.  It goes out even when the connection
 * has failed (that is when it is needed), so it waits with wait_once(),
 * which does not stop at the connection's error (but see
 * error_allowed()). */
void lab3_send_error(struct lab3_conn *conn, enum lab3_error_code code,
		     const char *reason)
{
	if (!error_allowed(conn))
		return;
	while (conn->credits == 0 && !conn->disconnected)
		if (wait_once(conn, ERROR_WAIT_MS) != 0)
			return;
	if (lab3_post_error(conn, code, reason) != 0)
		return;
	while (conn->credits < LAB3_SEND_DEPTH && !conn->disconnected)
		if (wait_once(conn, ERROR_WAIT_MS) != 0)
			return;
}

/* lab3_post_error: see listener.h. */
int lab3_post_error(struct lab3_conn *conn, enum lab3_error_code code,
		    const char *reason)
{
	struct lab3_msg msg = { .type = LAB3_MSG_ERROR };

	if (!error_allowed(conn))
		return -ENOTCONN;
	if (take_credit(conn) != 0)
		return -EAGAIN;
	msg.error.code = code;
	snprintf(msg.error.reason, sizeof(msg.error.reason), "%s", reason);
	return post_encoded(conn, &msg, 0);
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
	 * returns NULL and sets errno on failure: return
	 * conn_reg_error(conn, len) then, which reads errno; else 0. */
	*mr = ibv_reg_mr(conn->pd, addr, len, access);
	return *mr != NULL ? 0 : conn_reg_error(conn, len);
	/* END SOLUTION */
}

/* conn_reg_error: ibv_reg_mr() of LEN bytes has just failed: say why in
 * conn->err, hinting at `ulimit -l`, the usual cause of ENOMEM, EPERM or
 * EAGAIN here, and return the negative errno. */
int conn_reg_error(struct lab3_conn *conn, size_t len)
{
	if (errno == ENOMEM || errno == EPERM || errno == EAGAIN)
		snprintf(conn->err, sizeof(conn->err),
			 "cannot register %zu bytes of memory for RDMA (%s); "
			 "the locked-memory limit may be too low: see "
			 "`ulimit -l`", len, strerror(errno));
	else
		snprintf(conn->err, sizeof(conn->err),
			 "cannot register %zu bytes of memory for RDMA: %s",
			 len, strerror(errno));
	return errno ? -errno : -ENOMEM;
}

/* ---- SHA-256 and hex ---- */

/* lab3_sha256_begin: see common.h. */
int lab3_sha256_begin(struct lab3_sha256 *h)
{
	h->ctx = EVP_MD_CTX_new();
	if (h->ctx == NULL ||
	    EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
		lab3_sha256_free(h);
		return -ENOMEM;
	}
	return 0;
}

/* lab3_sha256_add: see common.h. */
int lab3_sha256_add(struct lab3_sha256 *h, const void *data, size_t len)
{
	return EVP_DigestUpdate(h->ctx, data, len) == 1 ? 0 : -EIO;
}

/* lab3_sha256_end: see common.h. */
int lab3_sha256_end(struct lab3_sha256 *h, uint8_t out[LAB3_SHA256_LEN])
{
	unsigned int out_len = 0;
	int ok = EVP_DigestFinal_ex(h->ctx, out, &out_len) == 1 &&
		 out_len == LAB3_SHA256_LEN;

	lab3_sha256_free(h);
	return ok ? 0 : -EIO;
}

/* lab3_sha256_free: see common.h. */
void lab3_sha256_free(struct lab3_sha256 *h)
{
	EVP_MD_CTX_free(h->ctx);
	h->ctx = NULL;
}

/* lab3_hex: see common.h. */
void lab3_hex(const uint8_t *in, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 0x0f];
	}
	out[2 * len] = '\0';
}
