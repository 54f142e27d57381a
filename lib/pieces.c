/* SPDX-License-Identifier: MIT */
/*
 * pieces.c - the sender's file in flight (declared in pieces.h): each
 * piece registered from the file's mapping while its RDMA WRITE is
 * posted, within the pin budget, and released when it completes; the
 * DONEs behind them, counted when they complete.  sender.c's step 3
 * calls it; the registration and the WRITE themselves are the lab's
 * verbs (lab3_reg_mr() in common.c, lab3_post_write() in client.c).
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "conn_internal.h"
#include "pieces.h"

/* room: reap what has completed; then there must be room for one more
 * entry.  Every entry holds a send-queue credit until it completes, so
 * there is; if not, that is the connection's error (-ENOBUFS). */
static int room(struct lab3_pieces *p, struct lab3_conn *conn)
{
	lab3_reap_pieces(p, conn);
	if (p->n < LAB3_SEND_DEPTH)
		return 0;
	return conn_error(conn, -ENOBUFS, "internal error: more than %d "
			  "WRITEs and DONEs in flight (was one posted without "
			  "its send credit?)", LAB3_SEND_DEPTH);
}

/* lab3_write_piece: see pieces.h. */
int lab3_write_piece(struct lab3_pieces *p, struct lab3_conn *conn,
		     uint64_t offset, uint32_t len, uint64_t remote_addr,
		     uint32_t rkey)
{
	int wait_ms = lab3_ms_for_bytes(conn, len);
	uint8_t *src = (uint8_t *)p->data + offset;
	struct ibv_mr *mr;
	int ret;

	while ((p->pinned > 0 && p->pinned + len > p->pin_budget) ||
	       p->n == LAB3_SEND_DEPTH) {
		ret = lab3_sends_completed(conn);
		if (ret == -EAGAIN)
			lab3_wait(conn, wait_ms);
		else if (ret != 0)
			return ret;
		lab3_reap_pieces(p, conn);
	}
	ret = room(p, conn);	/* checked before the WRITE is live */
	if (ret != 0)
		return ret;
	ret = lab3_reg_mr(conn, src, len, 0, &mr);	/* read only */
	if (ret != 0) {
		p->unregistered = 1;
		return ret;
	}
	while ((ret = lab3_post_write(conn, mr, src, len, remote_addr,
				      rkey)) == -EAGAIN) {
		lab3_wait(conn, wait_ms);
		lab3_reap_pieces(p, conn);
	}
	if (ret != 0) {			/* not posted: nothing reads it */
		ibv_dereg_mr(mr);
		return ret;
	}
	p->pinned += len;
	p->inflight[p->n++] = (struct lab3_piece) {
		.mr = mr, .offset = offset, .length = len,
		.complete_at = conn->sends_posted,
	};
	return 0;
}

/* lab3_done_posted: see pieces.h. */
int lab3_done_posted(struct lab3_pieces *p, struct lab3_conn *conn,
		     uint64_t offset, uint64_t length)
{
	int ret = room(p, conn);

	if (ret != 0)
		return ret;
	p->inflight[p->n++] = (struct lab3_piece) {
		.offset = offset, .length = length,
		.complete_at = conn->sends_posted,
	};
	return 0;
}

/* lab3_reap_pieces: see pieces.h.  Once the NIC is done with a WRITE's
 * pages, they are dropped from memory too (MADV_DONTNEED: the mapping is
 * the file's, read again if needed), so that a file larger than memory
 * goes through. */
int lab3_reap_pieces(struct lab3_pieces *p, const struct lab3_conn *conn)
{
	int landed = 0;

	while (p->n > 0 && p->inflight[0].complete_at <= conn->sends_completed) {
		struct lab3_piece piece = p->inflight[0];

		p->n--;
		memmove(&p->inflight[0], &p->inflight[1],
			p->n * sizeof(p->inflight[0]));
		if (piece.mr == NULL) {
			p->landed += piece.length;
			landed++;
			continue;
		}
		ibv_dereg_mr(piece.mr);
		p->pinned -= piece.length;
		madvise((uint8_t *)p->data + piece.offset, piece.length,
			MADV_DONTNEED);
	}
	return landed;
}

/* lab3_release_pieces: see pieces.h. */
void lab3_release_pieces(struct lab3_pieces *p)
{
	for (int i = 0; i < p->n; i++)
		if (p->inflight[i].mr != NULL)
			ibv_dereg_mr(p->inflight[i].mr);
	p->n = 0;
	p->pinned = 0;
}
