/* SPDX-License-Identifier: MIT */
/*
 * conn_internal.h - the parts of one connection that its own files share:
 * common.c (both sides), completion.c (what completions mean), client.c
 * (the client's side) and the receiver's listener (the server's), with
 * lib/provider.c, lib/pieces.c (the sender's file in flight) and the
 * project's test tools.  The programs' steps
 * (sender.c, and the receiver's session) do not include it.
 */
#ifndef LAB3_CONN_INTERNAL_H
#define LAB3_CONN_INTERNAL_H

#include <stdint.h>

#include "common.h"
#include "util.h"

/* What a work request was for is in the top two bits of its wr_id; the
 * rest is a receive buffer's slot, or the tag a send was posted with.  (A
 * failed completion has a valid wr_id and status, and nothing else.) */
#define WR_KIND_SHIFT 62
enum wr_kind { WR_RECV, WR_SEND, WR_WRITE };
#define WR_ID(kind, rest) ((uint64_t)(kind) << WR_KIND_SHIFT | (rest))
#define WR_KIND(wr_id) ((unsigned)((wr_id) >> WR_KIND_SHIFT))
#define WR_REST(wr_id) ((wr_id) & ((1ULL << WR_KIND_SHIFT) - 1))

/* How often a SEND that finds no receive posted at the peer is tried
 * again ("receiver not ready"), each after the peer's RNR timer (at most
 * 655 ms): 6 x 655 ms, about 3.9 s in all.  7 would mean forever. */
#define RNR_RETRY 6

/* The longest wait for the peer's acknowledgement before a packet is
 * sent again, at most retry_count (7) times: 4.096 us x 2^20, about
 * 4.3 s, some 30 s in all; the usual value over RoCE is 17 (0.5 s). */
#define ACK_TIMEOUT_MAX 20

/* After a failed completion or a hang-up, how long to look for what came
 * before it (see lab3_settling() in completion.c). */
#define CONN_SETTLE_MS 200

/* conn->cm_event before the event a setup step waits for has come. */
#define LAB3_NO_CM_EVENT ((enum rdma_cm_event_type)-1)

/* In common.c, each explained there: the event channel and cm_id; the
 * resources, and what a queue pair is made with; the message buffers; a
 * SEND or WRITE posted under a credit (client.c's WRITE and nudge); the
 * connection's parameters. */
int conn_open_cm_id(struct rdma_event_channel **channel,
		    struct rdma_cm_id **id, void *context, char *err,
		    size_t err_len);
int conn_build_resources(struct lab3_conn *conn);
void conn_qp_attr(const struct lab3_conn *conn, struct ibv_qp_init_attr *attr);
int conn_setup_msgs(struct lab3_conn *conn);
int conn_post_send(struct lab3_conn *conn, struct ibv_send_wr *wr,
		   int even_failed);
void conn_params(struct rdma_conn_param *param);

/* In completion.c: the connection's first error, and one for a call that
 * set errno; a credit used and returned; what one completion means
 * (1: post its receive buffer again); under -v, a message sent or
 * received (WHAT: "send" or "received"), with its fields. */
int conn_error(struct lab3_conn *conn, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int conn_errno(struct lab3_conn *conn, const char *call, int fallback);
int conn_use_credit(struct lab3_conn *conn, int even_failed);
void conn_return_credit(struct lab3_conn *conn);
int conn_apply_wc(struct lab3_conn *conn, const struct ibv_wc *wc);
void conn_trace_msg(const struct lab3_conn *conn, const char *what,
		    const struct lab3_msg *msg, unsigned bytes);

#endif /* LAB3_CONN_INTERNAL_H */
