/* SPDX-License-Identifier: MIT */
/*
 * provider.h - the hooks for what particular RDMA providers need
 * (provider.c), each called from one place in the connection's code; and
 * the locked-memory limit, which one of them lifts, for the programs'
 * command lines (the sender's, sender_cli.c, and the receiver's) to fit
 * their memory to.
 */
#ifndef LAB3_PROVIDER_H
#define LAB3_PROVIDER_H

#include <sys/socket.h>

#include "common.h"

/* siw (Soft-iWARP) can miss a client's first message after accepting
 * (see the nudge in provider.c).  siw_nudge_arm(): the client's
 * connection is up at NOW (ms; its ESTABLISHED, which completion.c
 * applies); over iWARP, arm the nudges.
 * siw_nudge_due(): at NOW, whether a nudge (a zero-length RDMA WRITE,
 * which lab3_nudge() in client.c posts) is due; it counts it.
 * siw_nudge_in(): for lab3_wait(), which posts no nudge itself (only
 * receives again, common.c): 1 when the next nudge comes before *LEFT
 * ms are over, with *LEFT cut short to it. */
void siw_nudge_arm(struct lab3_conn *conn, long long now);
int siw_nudge_due(struct lab3_conn *conn, long long now);
int siw_nudge_in(const struct lab3_conn *conn, long long *left);

/* iWARP flushes the posted receives as soon as its TCP or MPA exchange
 * fails, often before rdma_cm's event (REJECTED, UNREACHABLE...) that
 * says why: a flush before the connection was ever established is no
 * error of its own, the event is.  Whether WC is such a flush. */
int iwarp_flushed_before_established(const struct lab3_conn *conn,
				     const struct ibv_wc *wc);

/* siw completes a SEND that went out whole as the peer hung up with
 * LOC_QP_OP_ERR (see "A SEND cut short" in provider.c): whether WC, a
 * send's failed completion, is one of the lab's messages so cut. */
int iwarp_send_cut_by_hangup(const struct lab3_conn *conn,
			     const struct ibv_wc *wc);

/* siw refuses to resolve a loopback address with EINVAL, at once, where
 * RoCE says ENODEV in an event: whether ERR for DST is that, which means
 * the same as ENODEV (no RDMA device has the address). */
int siw_loopback_einval(int err, const struct sockaddr *dst);

/* The bytes of memory this process may register (`ulimit -l`): 1 with
 * them in *LIMIT, or 0 when it has no limit.  Root lifts its limit first
 * (siw counts root's registrations against it), so root has none unless
 * it may not raise it.  Call it before registering anything. */
int lab3_memlock_limit(uint64_t *limit);

#endif /* LAB3_PROVIDER_H */
