/*
 * conn_internal.h - the parts of one connection that common.c, the files
 * built on it (completion.c, message.c) and beside it (util.c, explain.c)
 * share with each other, with client.c and listener.c (the two sides),
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

/* After a failed completion or a hang-up, how long to look for what came
 * before it (see unsettled() in completion.c). */
#define CONN_SETTLE_MS 200

/* What woke conn_wait_channels(), or'ed. */
enum { CONN_WOKE_CQ = 1, CONN_WOKE_CM = 2 };

/* In common.c, each explained there: the connection's first error; the
 * event channel and cm_id; the resources; a registration's failure; a
 * receive and the message buffers; a work request posted under a credit
 * (client.c's WRITE, the nudge, the test tools); the connection's
 * parameters; completions and the one wait. */
int conn_error(struct lab3_conn *conn, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int conn_report_errno(struct lab3_conn *conn, const char *call,
		      int fallback);
int conn_open_cm_id(struct rdma_event_channel **channel,
		    struct rdma_cm_id **id, void *context, char *err,
		    size_t err_len);
int conn_build_resources(struct lab3_conn *conn, int qp_on_id);
int conn_reg_error(struct lab3_conn *conn, size_t len);
int conn_post_recv(struct lab3_conn *conn, int slot);
int conn_setup_msgs(struct lab3_conn *conn);
int conn_post_send_wr(struct lab3_conn *conn, struct ibv_send_wr *wr);
int conn_posted(struct lab3_conn *conn, int ret);
struct rdma_conn_param conn_params(void);
int conn_poll_cq(struct lab3_conn *conn, struct ibv_wc *wc, int max);
int conn_take_cq_event(struct lab3_conn *conn);
int conn_wait_channels(struct lab3_conn *conn, long long left);

/* In completion.c: a credit, whatever the connection's state or only
 * while it has not failed; the wait for a CM event, and the wait that
 * does not stop at an error; the hang-up as an error. */
int conn_take_any_credit(struct lab3_conn *conn);
int conn_take_credit(struct lab3_conn *conn);
int conn_wait_cm_event(struct lab3_conn *conn,
		       enum rdma_cm_event_type wanted);
int conn_wait_once(struct lab3_conn *conn, int wait_ms);
int conn_hung_up(struct lab3_conn *conn);

/* In message.c: the send buffers, for the test tools' raw SEND. */
union lab3_wire_msg *conn_send_buffer(struct lab3_conn *conn);
int conn_post_send_buffer(struct lab3_conn *conn, uint32_t len,
			  uint64_t tag);

/* In util.c: a non-blocking descriptor; rdma_getaddrinfo() with its
 * failure in words. */
int conn_set_nonblocking(int fd, char *err, size_t err_len);
int conn_get_addrinfo(const char *host, const char *port,
		      const struct rdma_addrinfo *hints,
		      struct rdma_addrinfo **res, char *err, size_t err_len);

#endif /* LAB3_CONN_INTERNAL_H */
