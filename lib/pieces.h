/* SPDX-License-Identifier: MIT */
/*
 * pieces.h - the sender's file in flight (pieces.c): the pieces of the
 * file that RDMA WRITEs are reading, each registered while its WRITE is
 * posted, and the DONEs posted behind them.  A WRITE's registration is
 * released once it has completed; a DONE's chunk has landed once it has
 * completed.  Within the pin budget: the bytes registered at once stay
 * under it (a piece waits for room), so `ulimit -l` holds.
 *
 * The send queue completes in the order it was posted (see "The
 * completion model" in common.h): an entry has completed once the
 * connection's sends_completed has reached its complete_at.
 */
#ifndef LAB3_PIECES_H
#define LAB3_PIECES_H

#include <stdint.h>

#include "common.h"

/* A WRITE or a DONE in flight. */
struct lab3_piece {
	struct ibv_mr *mr;		/* a WRITE's; NULL for a DONE */
	uint64_t offset;		/* in the file */
	uint64_t length;
	uint64_t complete_at;		/* conn->sends_posted once posted */
};

struct lab3_pieces {
	const uint8_t *data;		/* the file's mapping: the source */
	uint64_t pin_budget;		/* bytes registered at once, at most */
	uint64_t pinned;		/* ... now */
	uint64_t landed;		/* bytes in chunks whose DONE completed */
	int unregistered;		/* a piece could not be registered:
					 * the connection's error says why */
	/* In flight, oldest first: no more than the send queue holds. */
	struct lab3_piece inflight[LAB3_SEND_DEPTH];
	int n;
};

/* Register LEN bytes of the file at OFFSET (read access only: the NIC
 * reads them) and post an RDMA WRITE of them to REMOTE_ADDR under RKEY
 * (lab3_post_write()).  First, while the piece would take the registered
 * bytes over the pin budget, or LAB3_SEND_DEPTH entries are in flight,
 * wait for WRITEs to complete and release theirs; and while the send
 * queue is full, for room: each wait the connection's timeout of silence
 * and a piece's worth at most (lab3_ms_for_bytes()).  0 once posted;
 * else the connection's error (conn->err says it; p->unregistered is set
 * when the piece could not be registered), nothing left registered. */
int lab3_write_piece(struct lab3_pieces *p, struct lab3_conn *conn,
		     uint64_t offset, uint32_t len, uint64_t remote_addr,
		     uint32_t rkey);

/* A DONE for the LENGTH bytes of the chunk at OFFSET has just been
 * posted (it is conn->sends_posted's last): its chunk lands once it
 * completes.  0; or, when more would be in flight than the send queue
 * holds (a send posted without its credit), the connection's error,
 * -ENOBUFS. */
int lab3_done_posted(struct lab3_pieces *p, struct lab3_conn *conn,
		     uint64_t offset, uint64_t length);

/* Take the WRITEs and DONEs that have completed, oldest first: a WRITE's
 * registration is released, and with it its pages; a DONE's chunk counts
 * in p->landed.  Returns how many DONEs completed. */
int lab3_reap_pieces(struct lab3_pieces *p, const struct lab3_conn *conn);

/* Deregister what a run that failed left registered, before the
 * connection's protection domain goes. */
void lab3_release_pieces(struct lab3_pieces *p);

#endif /* LAB3_PIECES_H */
