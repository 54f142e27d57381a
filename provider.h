/*
 * provider.h - the hooks for what particular RDMA providers need
 * (provider.c), each called from one place in the connection's code.
 * Neither program includes it.
 */
#ifndef LAB3_PROVIDER_H
#define LAB3_PROVIDER_H

#include <sys/socket.h>

#include "common.h"

/* siw (Soft-iWARP) can miss a client's first message after accepting
 * (see nudge() in provider.c).  siw_nudge_arm(): the client's connection
 * is up; over iWARP, arm the nudges.  siw_nudge(): in the client's wait,
 * send one if it is due; returns LEFT, the ms the wait may block, cut
 * short to the next nudge. */
void siw_nudge_arm(struct lab3_conn *conn);
long long siw_nudge(struct lab3_conn *conn, long long left);

/* iWARP flushes the posted receives as soon as its TCP or MPA exchange
 * fails, often before rdma_cm's event (REJECTED, UNREACHABLE...) that
 * says why: a flush before the connection was ever established is no
 * error of its own, the event is.  Whether WC is such a flush. */
int iwarp_flushed_before_established(const struct lab3_conn *conn,
				     const struct ibv_wc *wc);

/* siw refuses to resolve a loopback address with EINVAL, at once, where
 * RoCE says ENODEV in an event: whether ERR for DST is that, which means
 * the same as ENODEV (no RDMA device has the address). */
int siw_loopback_einval(int err, const struct sockaddr *dst);

/* siw counts root's registrations against RLIMIT_MEMLOCK: root lifts
 * the limit (see provider.c). */
void siw_root_lifts_memlock(void);

#endif /* LAB3_PROVIDER_H */
