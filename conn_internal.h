/*
 * conn_internal.h - the parts of one connection that common.c shares with
 * the files beside it: client.c and listener.c (the two sides),
 * provider.c (the providers' hooks) and the project's test tools.  The
 * programs' own files (sender.c, receiver.c and their machinery) do not
 * include it.
 */
#ifndef LAB3_CONN_INTERNAL_H
#define LAB3_CONN_INTERNAL_H

#include <poll.h>
#include <stdint.h>

#include "common.h"

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
 * 655 ms): about 4.6 s in all.  7 would mean forever. */
#define RNR_RETRY 6

/* The longest wait for the peer's acknowledgement before a packet is
 * sent again, at most retry_count (7) times: 4.096 us x 2^20, about
 * 4.3 s, some 30 s in all; the usual value over RoCE is 17 (0.5 s). */
#define ACK_TIMEOUT_MAX 20

/* In common.c, each explained there. */
int conn_error(struct lab3_conn *conn, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
extern const char conn_no_device_msg[], conn_no_listener_msg[];
int conn_set_nonblocking(int fd, char *err, size_t err_len);
int conn_wait_cm_event(struct lab3_conn *conn,
		       enum rdma_cm_event_type wanted);
int conn_report_errno(struct lab3_conn *conn, const char *call,
		      int fallback);
int conn_build_resources(struct lab3_conn *conn, int qp_on_id);
int conn_setup_msgs(struct lab3_conn *conn);
struct rdma_conn_param conn_params(void);
int conn_get_addrinfo(const char *host, const char *port,
		      const struct rdma_addrinfo *hints,
		      struct rdma_addrinfo **res, char *err, size_t err_len);
int conn_open_cm_id(struct rdma_event_channel **channel,
		    struct rdma_cm_id **id, void *context, char *err,
		    size_t err_len);

/* In common.c too: a credit, and a work request posted under it
 * (client.c's WRITE, provider.c's nudge, the test tools); the send
 * buffers, for the test tools' raw SEND; why a registration failed. */
int conn_take_credit(struct lab3_conn *conn);
int conn_post_send_wr(struct lab3_conn *conn, struct ibv_send_wr *wr);
int conn_posted(struct lab3_conn *conn, int ret);
int conn_reg_error(struct lab3_conn *conn, size_t len);
union lab3_wire_msg *conn_send_buffer(struct lab3_conn *conn);
int conn_post_send_buffer(struct lab3_conn *conn, uint32_t len,
			  uint64_t tag);

#endif /* LAB3_CONN_INTERNAL_H */
