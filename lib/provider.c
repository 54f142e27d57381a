/* SPDX-License-Identifier: MIT */
/*
 * provider.c - what particular RDMA providers need beyond the verbs and
 * rdma_cm as specified (declared in provider.h).  Each hook is called
 * from completion.c, common.c's wait, client.c or the command lines'
 * memlock check, names the provider that needs it, and says why; on any
 * other provider it does nothing.  None of them posts: client.c posts
 * the nudge.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "common.h"
#include "conn_internal.h"
#include "provider.h"

#define NUDGES 3		/* iWARP: see "A nudge" below */
#define NUDGE_MS 250

/*
 * A nudge: a zero-length RDMA WRITE, which places nothing and needs no
 * rkey, for Soft-iWARP's sake.  siw (Linux 6.1 and 6.12 alike) accepts a
 * connection by sending its MPA reply and only then hooks the queue pair
 * to the TCP socket: a first message that arrives in between waits in the
 * socket, unseen, until more data comes.  The sender speaks first and
 * then waits for the REGION, so a FILE_INFO caught there would wait
 * forever (seen in the bed about once in 20 connections made at once).
 * So over iWARP, while nothing has been heard, the client sends NUDGES of
 * these, NUDGE_MS apart: any one that arrives after the hook brings the
 * waiting message in.  Real iWARP adapters never need it, and to any
 * peer it is nothing.
 */

/* siw_nudge_arm: see provider.h and the nudge above. */
void siw_nudge_arm(struct lab3_conn *conn, long long now)
{
	if (conn->id->verbs->device->transport_type != IBV_TRANSPORT_IWARP)
		return;
	conn->nudges = NUDGES;
	conn->nudge_at = now + NUDGE_MS;
}

/* siw_nudge_due: see provider.h and the nudge above. */
int siw_nudge_due(struct lab3_conn *conn, long long now)
{
	int due = 0;

	if (conn->nudges > 0 && now >= conn->nudge_at) {
		conn->nudges--;
		conn->nudge_at = now + NUDGE_MS;
		if (conn->heard || conn->error != 0 || conn->disconnected)
			conn->nudges = 0;
		else
			due = conn->credits > 0;
	}
	if (due && conn->verbose)
		fprintf(stderr, "%s: nothing heard yet: a zero-length RDMA "
			"WRITE (iWARP)\n", conn->prog);
	return due;
}

/* siw_nudge_in: see provider.h and the nudge above. */
int siw_nudge_in(const struct lab3_conn *conn, long long *left)
{
	long long in = conn->nudge_at - lab3_now_ms();

	if (conn->nudges == 0 || conn->heard || in <= 0 || in >= *left)
		return 0;
	*left = in;
	return 1;
}

/* iwarp_flushed_before_established: see provider.h. */
int iwarp_flushed_before_established(const struct lab3_conn *conn,
				     const struct ibv_wc *wc)
{
	return !conn->established && wc->status == IBV_WC_WR_FLUSH_ERR;
}

/*
 * A SEND cut short: siw writes a message to its TCP socket one DDP
 * segment at a time, and when the peer's hang-up (its FIN) has come by
 * the time a segment is out, it stops after that segment and completes
 * the SEND with LOC_QP_OP_ERR, as its transmit path is written to do.
 * Every message of the lab fits in one segment (304 bytes at most), so
 * such a SEND went out whole.  A sender that exits as soon as it has its
 * KEY hangs up just then: in the bed (Linux 6.1), about once in 50
 * sessions of four at once, the receiver's KEY completed so while the
 * sender printed it.  The lab's messages are posted by the common layer
 * from its own registered buffers, so a bad lkey (siw's other
 * LOC_QP_OP_ERR) is not theirs; a WRITE's is left as it is, since the
 * student posts those.
 */

/* iwarp_send_cut_by_hangup: see provider.h and the SEND cut short above. */
int iwarp_send_cut_by_hangup(const struct lab3_conn *conn,
			     const struct ibv_wc *wc)
{
	return conn->id->verbs->device->transport_type == IBV_TRANSPORT_IWARP &&
	       WR_KIND(wc->wr_id) == WR_SEND &&
	       wc->status == IBV_WC_LOC_QP_OP_ERR;
}

/* is_loopback: whether SA is 127.0.0.0/8 or ::1. */
static int is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr)
			>> 24) == 127;
	return sa->sa_family == AF_INET6 &&
	       IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

/* siw_loopback_einval: see provider.h. */
int siw_loopback_einval(int err, const struct sockaddr *dst)
{
	return err == EINVAL && is_loopback(dst);
}

/* siw_root_lifts_memlock: lab3_memlock_limit() calls it first.
 *
 * Most providers pin registered memory through the kernel's ib_umem, which
 * lets a process that may lock memory anyway (CAP_IPC_LOCK, as root may)
 * pin beyond RLIMIT_MEMLOCK.  iWARP's siw does not: it counts every
 * registration against the limit, root's too, and root's limit is often
 * only 8 MiB, so its windows failed to register.  Root may raise the
 * limit (CAP_SYS_RESOURCE), and does so here: then it has no limit on any
 * provider.  A root that may not raise it keeps it, and the pair fits
 * within it, as any other user does. */
static void siw_root_lifts_memlock(void)
{
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };

	if (geteuid() == 0)
		(void)setrlimit(RLIMIT_MEMLOCK, &rl);
}

/* lab3_memlock_limit: see provider.h. */
int lab3_memlock_limit(uint64_t *limit)
{
	struct rlimit rl;

	siw_root_lifts_memlock();
	if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return 0;
	*limit = rl.rlim_cur;
	return 1;
}
