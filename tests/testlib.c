/* SPDX-License-Identifier: MIT */
/*
 * testlib.c - calls that only the tests need (declared in testlib.h): a
 * blocking accept for tools that serve one connection at a time
 * (tests/evil-receiver), raw bytes sent as they are (the evil sender)
 * and a one-shot SHA-256.  The programs never link it.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "common.h"
#include "conn_internal.h"
#include "listener.h"
#include "testlib.h"

/* next_connect_request: block until a connection request arrives on the
 * listener, and return its new cm_id in *ID. */
static int next_connect_request(struct lab3_listener *listener,
				struct rdma_cm_id **id)
{
	for (;;) {
		struct pollfd pfd = {
			.fd = listener->cm_channel->fd,
			.events = POLLIN,
		};
		struct rdma_cm_event *event;

		if (lab3_wait_fds(&pfd, 1, -1, listener->wait_sigmask) < 0) {
			int ret = -errno;

			snprintf(listener->err, sizeof(listener->err),
				 "poll: %s", strerror(errno));
			return ret;
		}
		int ret = lab3_listener_event(listener, &event);

		if (ret == -EAGAIN)
			continue;
		if (ret != 0)
			return ret;
		if (event->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			*id = event->id;
			rdma_ack_cm_event(event);
			return 0;
		}
		/* Late events of a finished session: nothing to do. */
		rdma_ack_cm_event(event);
	}
}

/* own_channel: move the connection request ID (its event acknowledged)
 * to a CM channel of its own, *CHANNEL, so that waiting on its connection
 * never reads the listener's events: a second connection request waits
 * there for the next lab3_accept(). */
static int own_channel(struct rdma_cm_id *id,
		       struct rdma_event_channel **channel, char *err,
		       size_t err_len)
{
	int ret;

	*channel = rdma_create_event_channel();
	if (*channel == NULL) {
		ret = -errno;
		snprintf(err, err_len, "rdma_create_event_channel: %s",
			 strerror(errno));
		return ret;
	}
	ret = lab3_set_nonblocking((*channel)->fd, err, err_len);
	if (ret == 0 && rdma_migrate_id(id, *channel) != 0) {
		ret = -errno;
		snprintf(err, err_len, "rdma_migrate_id: %s", strerror(errno));
	}
	if (ret != 0)
		rdma_destroy_event_channel(*channel);
	return ret;
}

/* lab3_accept: the server's side of one connection; see testlib.h. */
int lab3_accept(struct lab3_listener *listener, struct lab3_conn *conn)
{
	struct rdma_cm_id *id = NULL;
	struct rdma_event_channel *channel;
	int ret = next_connect_request(listener, &id);

	if (ret != 0) {
		snprintf(conn->err, sizeof(conn->err), "%s", listener->err);
		return ret;
	}
	ret = own_channel(id, &channel, conn->err, sizeof(conn->err));
	if (ret != 0) {
		lab3_reject(id, "receiver out of resources");
		rdma_destroy_id(id);
		return ret;
	}
	ret = lab3_accept_request(listener, id, conn);
	conn->cm_channel = channel;	/* the connection's own now */
	conn->owns_cm_channel = 1;
	while (ret == 0 && !conn->established)
		ret = lab3_wait(conn, 0);
	return ret;
}

/* lab3_send_bytes: see testlib.h. */
int lab3_send_bytes(struct lab3_conn *conn, const void *bytes, size_t len)
{
	union lab3_wire_msg *buf;
	struct ibv_sge sge;
	struct ibv_send_wr wr = {
		.wr_id = WR_ID(WR_SEND, 0),
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
	};
	int ret;

	if (len > sizeof(union lab3_wire_msg))
		return -EINVAL;
	ret = lab3_wait_for_credit(conn, 0);
	if (ret != 0)
		return ret;
	buf = &conn->msgs[LAB3_RECV_DEPTH + conn->next_send % LAB3_SEND_DEPTH];
	memcpy(buf, bytes, len);
	sge = (struct ibv_sge){
		.addr = (uintptr_t)buf,
		.length = (uint32_t)len,
		.lkey = conn->msgs_mr->lkey,
	};
	ret = conn_post_send(conn, &wr, 0);
	if (ret != 0)
		return ret;
	conn->next_send++;
	return lab3_wait_sends(conn, 0);
}

/* lab3_wait_for_credit: see testlib.h. */
int lab3_wait_for_credit(struct lab3_conn *conn, int wait_ms)
{
	while (conn->credits == 0) {
		int ret = lab3_sends_completed(conn);

		if (ret != -EAGAIN && ret != 0)
			return ret;
		lab3_wait(conn, wait_ms);
	}
	return conn->error;
}

/* lab3_recv_msg: see testlib.h. */
int lab3_recv_msg(struct lab3_conn *conn, struct lab3_msg *msg, int wait_ms)
{
	int ret;

	while ((ret = lab3_take_msg(conn, msg)) == -EAGAIN) {
		lab3_nudge(conn);
		lab3_wait(conn, wait_ms);
	}
	return ret;
}

/* lab3_wait_sends: see testlib.h. */
int lab3_wait_sends(struct lab3_conn *conn, int wait_ms)
{
	int ret;

	while ((ret = lab3_sends_completed(conn)) == -EAGAIN)
		lab3_wait(conn, wait_ms);
	return ret;
}

/* lab3_send_msg: see testlib.h. */
int lab3_send_msg(struct lab3_conn *conn, const struct lab3_msg *msg)
{
	int ret;

	while ((ret = lab3_post_msg(conn, msg)) == -EAGAIN)
		lab3_wait(conn, 0);
	return ret != 0 ? ret : lab3_wait_sends(conn, 0);
}

/* lab3_sha256: see testlib.h. */
int lab3_sha256(const void *data, size_t len, uint8_t out[LAB3_SHA256_LEN])
{
	unsigned int out_len = 0;

	if (EVP_Digest(data, len, out, &out_len, EVP_sha256(), NULL) != 1 ||
	    out_len != LAB3_SHA256_LEN)
		return -EIO;
	return 0;
}
