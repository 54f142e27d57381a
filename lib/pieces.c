/* SPDX-License-Identifier: MIT */
/*
 * pieces.c - the sender's file in flight (declared in pieces.h): each
 * piece read into a slot of the staging ring, registered once per
 * connection, and RDMA-written from there; the slot free again when the
 * WRITE completes; the DONEs behind them, counted when they complete.
 * sender.c's step 3 calls it; the registration and the WRITE themselves
 * are the lab's verbs (lab3_reg_mr() in common.c, lab3_post_write() in
 * client.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conn_internal.h"
#include "pieces.h"

/* lab3_pieces_init: see pieces.h. */
void lab3_pieces_init(struct lab3_pieces *p, int fd, uint64_t size,
		      uint32_t piece_max)
{
	uint64_t slot = (size + LAB3_RING_SLOTS - 1) / LAB3_RING_SLOTS;

	slot = (slot + 4095) & ~(uint64_t)4095;
	if (slot < 4096)
		slot = 4096;
	if (slot > LAB3_SLOT_MAX)
		slot = LAB3_SLOT_MAX;
	if (slot > piece_max)
		slot = piece_max;
	*p = (struct lab3_pieces) { .fd = fd, .size = size,
				    .slot_size = (uint32_t)slot };
}

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

/* make_ring: the staging ring, made and registered at a connection's
 * first WRITE; lab3_release_pieces() lets both go.  Every page is written
 * before it is pinned: a page of fresh anonymous memory that is only
 * read is the kernel's shared zero page, and a registration of it (read
 * access only) would keep sending zeros after read(2) has given the
 * slot a page of its own. */
static int make_ring(struct lab3_pieces *p, struct lab3_conn *conn)
{
	size_t bytes = (size_t)LAB3_RING_SLOTS * p->slot_size;
	int ret;

	if (p->ring == NULL) {
		void *ring = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (ring == MAP_FAILED) {
			p->local_failure = 1;
			return conn_error(conn, -errno, "no memory for the "
					  "staging ring (%zu KiB): %s",
					  bytes >> 10, strerror(errno));
		}
		memset(ring, 0, bytes);
		p->ring = ring;
	}
	ret = lab3_reg_mr(conn, p->ring, bytes, 0, &p->ring_mr); /* read only */
	if (ret != 0) {
		p->local_failure = 1;
		return ret;
	}
	if (conn->verbose)
		fprintf(stderr, "%s: registered the staging ring: %d slots of "
			"%u KiB\n", conn->prog, LAB3_RING_SLOTS,
			p->slot_size >> 10);
	return 0;
}

/* read_piece: the LEN bytes of the file at OFFSET into DST, all of them:
 * read(2) may give fewer at a time, and EINTR is no error.  End of file
 * before LEN bytes means the file was cut short since it was hashed:
 * said with its size then and now, as the sender's other checks say it. */
static int read_piece(struct lab3_pieces *p, struct lab3_conn *conn,
		      uint8_t *dst, uint64_t offset, uint32_t len)
{
	uint32_t got = 0;

	while (got < len) {
		ssize_t n = pread(p->fd, dst + got, len - got,
				  (off_t)(offset + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			p->local_failure = 1;
			return conn_error(conn, -errno, "read of %u bytes at "
					  "offset %llu: %s", len - got,
					  (unsigned long long)(offset + got),
					  strerror(errno));
		}
		if (n == 0) {
			struct stat st;
			long long now = fstat(p->fd, &st) == 0 ?
					(long long)st.st_size : -1;

			p->local_failure = 1;
			return conn_error(conn, -EIO, "changed size while being "
					  "sent (%llu bytes when hashed, %lld "
					  "now: no byte at offset %llu)",
					  (unsigned long long)p->size, now,
					  (unsigned long long)(offset + got));
		}
		got += (uint32_t)n;
	}
	return 0;
}

/* write_slot: one WRITE of at most a slot: wait for a free slot and a
 * free entry, read the bytes in, post it. */
static int write_slot(struct lab3_pieces *p, struct lab3_conn *conn,
		      uint64_t offset, uint32_t len, uint64_t remote_addr,
		      uint32_t rkey)
{
	int wait_ms = lab3_ms_for_bytes(conn, len);
	uint8_t *slot;
	int ret;

	lab3_reap_pieces(p, conn);	/* what completed since the last call */
	while (p->slots_taken == LAB3_RING_SLOTS || p->n == LAB3_SEND_DEPTH) {
		ret = lab3_sends_completed(conn);
		if (ret == -EAGAIN)
			lab3_wait(conn, wait_ms);
		else if (ret != 0)
			return ret;
		else if (conn->error != 0)
			/* Settled on the peer's ERROR, whose messages before
			 * it wait to be read: nothing more completes. */
			return conn->error;
		lab3_reap_pieces(p, conn);
	}
	if (conn->error != 0)		/* nothing to read or register for */
		return conn->error;
	ret = room(p, conn);	/* checked before the WRITE is live */
	if (ret == 0 && p->ring_mr == NULL)
		ret = make_ring(p, conn);
	if (ret != 0)
		return ret;
	slot = p->ring + (size_t)p->slot_next * p->slot_size;
	ret = read_piece(p, conn, slot, offset, len);
	if (ret != 0)
		return ret;
	while ((ret = lab3_post_write(conn, p->ring_mr, slot, len, remote_addr,
				      rkey)) == -EAGAIN) {
		lab3_wait(conn, wait_ms);
		lab3_reap_pieces(p, conn);
	}
	if (ret != 0)			/* not posted: the slot stays free */
		return ret;
	p->slot_next = (p->slot_next + 1) % LAB3_RING_SLOTS;
	p->slots_taken++;
	p->inflight[p->n++] = (struct lab3_piece) {
		.is_write = 1, .offset = offset, .length = len,
		.complete_at = conn->sends_posted,
	};
	return 0;
}

/* lab3_write_piece: see pieces.h.  A piece longer than a slot goes as
 * several WRITEs, one after the other to the same place. */
int lab3_write_piece(struct lab3_pieces *p, struct lab3_conn *conn,
		     uint64_t offset, uint32_t len, uint64_t remote_addr,
		     uint32_t rkey)
{
	if (p->slot_size == 0)		/* else the loop would never end */
		return conn_error(conn, -EINVAL, "internal error: a WRITE "
				  "before lab3_pieces_init()");
	if (len == 0)			/* a caller's loop would never end */
		return conn_error(conn, -EINVAL, "a WRITE of 0 bytes at file "
				  "offset %llu: a piece has 1 byte at least",
				  (unsigned long long)offset);
	for (uint32_t done = 0; done < len; ) {
		uint32_t n = len - done < p->slot_size ? len - done :
			     p->slot_size;
		int ret = write_slot(p, conn, offset + done, n,
				     remote_addr + done, rkey);

		if (ret != 0)
			return ret;
		done += n;
	}
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

/* lab3_reap_pieces: see pieces.h. */
int lab3_reap_pieces(struct lab3_pieces *p, const struct lab3_conn *conn)
{
	int landed = 0;

	while (p->n > 0 && p->inflight[0].complete_at <= conn->sends_completed) {
		struct lab3_piece piece = p->inflight[0];

		p->n--;
		memmove(&p->inflight[0], &p->inflight[1],
			p->n * sizeof(p->inflight[0]));
		if (piece.is_write) {
			p->slots_taken--;
			continue;
		}
		p->landed += piece.length;
		landed++;
	}
	return landed;
}

/* lab3_release_pieces: see pieces.h. */
void lab3_release_pieces(struct lab3_pieces *p)
{
	if (p->ring_mr != NULL)
		ibv_dereg_mr(p->ring_mr);
	p->ring_mr = NULL;
	if (p->ring != NULL)
		munmap(p->ring, (size_t)LAB3_RING_SLOTS * p->slot_size);
	p->ring = NULL;
	p->n = 0;
	p->slots_taken = 0;
	p->slot_next = 0;
}
