/* SPDX-License-Identifier: MIT */
/*
 * pieces.h - the sender's file in flight (pieces.c): the pieces of the
 * file that RDMA WRITEs are reading, and the DONEs posted behind them.
 *
 * A piece is read from the file into a slot of the staging ring, a
 * buffer registered once per connection, and written from there: the
 * sender pins its ring, never the file.  (On Debian 12's 6.1 a pin of
 * the file's own pages, a private mapping, copies each page anyway, at
 * several times what read(2) costs; a shared read-only mapping cannot
 * be registered at all.)  A WRITE's slot is free again once it has
 * completed; a DONE's chunk has landed once it has completed.
 * The ring is LAB3_RING_SLOTS slots of slot_size bytes, all of it
 * registered, so `ulimit -l` need only hold the ring.
 *
 * The send queue completes in the order it was posted (see "The
 * completion model" in common.h): an entry has completed once the
 * connection's sends_completed has reached its complete_at.  So the
 * slots free in the order they were taken.
 */
#ifndef LAB3_PIECES_H
#define LAB3_PIECES_H

#include <stdint.h>

#include "common.h"

/* Slots in the staging ring: WRITEs in flight at once, at most.  While
 * one slot is read from the file, the others keep the wire busy. */
#define LAB3_RING_SLOTS 4

/* A slot's most: 2 MiB, so a ring of 8 MiB, what ib_write_bw keeps in
 * flight by default (128 WRITEs of 64 KiB).  More keeps no wire busier,
 * and every byte of the ring stays pinned for the whole connection: in
 * the grader's VM (171 MiB for the receiver, the sender and the file's
 * page cache) that is memory nothing else may use. */
#define LAB3_SLOT_MAX (2u << 20)

/* A WRITE or a DONE in flight. */
struct lab3_piece {
	int is_write;			/* a WRITE (it holds a slot), or a DONE */
	uint64_t offset;		/* in the file */
	uint64_t length;
	uint64_t complete_at;		/* conn->sends_posted once posted */
};

struct lab3_pieces {
	int fd;				/* the file: the source */
	uint64_t size;			/* its bytes, when it was hashed */
	uint32_t slot_size;		/* bytes in one slot: one WRITE's most */
	uint8_t *ring;			/* LAB3_RING_SLOTS slots, made once */
	struct ibv_mr *ring_mr;		/* the ring's registration, NULL
					 * until the connection's first WRITE */
	int slot_next;			/* the next slot to take */
	int slots_taken;		/* slots whose WRITE is in flight */
	uint64_t landed;		/* bytes in chunks whose DONE completed */
	int local_failure;		/* the sender's own side failed (the
					 * ring, or reading the file): the
					 * connection's error says why */
	/* In flight, oldest first: no more than the send queue holds. */
	struct lab3_piece inflight[LAB3_SEND_DEPTH];
	int n;
};

/* P, for the SIZE bytes of the file open at FD, in WRITEs of at most
 * PIECE_MAX bytes: the ring's slots are of PIECE_MAX or LAB3_SLOT_MAX,
 * the smaller, or less for a file that fills fewer than LAB3_RING_SLOTS
 * such slots (a quarter of it, in whole pages), a page at least. */
void lab3_pieces_init(struct lab3_pieces *p, int fd, uint64_t size,
		      uint32_t piece_max);

/* Post RDMA WRITEs of the LEN bytes of the file at OFFSET to REMOTE_ADDR
 * under RKEY (lab3_post_write()), each of at most a slot: read into a
 * slot of the ring (registered at the connection's first WRITE, read
 * access only: the NIC reads it) and written from there.  Before each,
 * while every slot is taken or LAB3_SEND_DEPTH entries are in flight,
 * wait for WRITEs to complete and free theirs; and while the send queue
 * is full, for room: each wait the connection's timeout of silence and a
 * slot's worth at most (lab3_ms_for_bytes()).  0 once posted; else the
 * connection's error (conn->err says it; p->local_failure is set when the
 * ring could not be made or registered, or the file could not be read:
 * a file cut short says so). */
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
 * slot is free again; a DONE's chunk counts in p->landed.  Returns how
 * many DONEs completed. */
int lab3_reap_pieces(struct lab3_pieces *p, const struct lab3_conn *conn);

/* The ring's registration released (before the connection's protection
 * domain goes), and the ring itself; what was in flight forgotten. */
void lab3_release_pieces(struct lab3_pieces *p);

#endif /* LAB3_PIECES_H */
