/*
 * message.c - the lab's messages on one connection (common.h): SEND one
 * (its buffer, its credit), take the next from the inbox, wait for the
 * send queue to empty or to have room, and the ERROR that tells the peer
 * why a connection ends.  Built on completion.c's waits.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "conn_internal.h"
#include "listener.h"

#define ERROR_WAIT_MS 1000	/* silence while our own ERROR goes out */

/* lab3_wait_for_bytes: see common.h. */
int lab3_wait_for_bytes(const struct lab3_conn *conn, uint64_t bytes)
{
	uint64_t ms = (uint64_t)conn->timeout_ms + bytes / (4u << 20) * 1000;

	return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

/* ---- Receiving and waiting ---- */

/* keep_trying: TRY (lab3_try_recv_msg() or try_flush()) until it is not
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
		return conn_hung_up(conn);
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
		return conn_hung_up(conn);
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

/* ---- Sending ---- */

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
 * has failed (that is when it is needed), so it waits with
 * conn_wait_once(), which does not stop at the connection's error (but
 * see error_allowed()). */
void lab3_send_error(struct lab3_conn *conn, enum lab3_error_code code,
		     const char *reason)
{
	if (!error_allowed(conn))
		return;
	while (conn->credits == 0 && !conn->disconnected)
		if (conn_wait_once(conn, ERROR_WAIT_MS) != 0)
			return;
	if (lab3_post_error(conn, code, reason) != 0)
		return;
	while (conn->credits < LAB3_SEND_DEPTH && !conn->disconnected)
		if (conn_wait_once(conn, ERROR_WAIT_MS) != 0)
			return;
}

/* lab3_post_error: see listener.h. */
int lab3_post_error(struct lab3_conn *conn, enum lab3_error_code code,
		    const char *reason)
{
	struct lab3_msg msg = { .type = LAB3_MSG_ERROR };

	if (!error_allowed(conn))
		return -ENOTCONN;
	if (conn_take_any_credit(conn) != 0)
		return -EAGAIN;
	msg.error.code = code;
	snprintf(msg.error.reason, sizeof(msg.error.reason), "%s", reason);
	return post_encoded(conn, &msg, 0);
}
