/* SPDX-License-Identifier: MIT */
/*
 * rules.h - the two sides' rules of the Lab 3 protocol, as pure functions:
 * which message each side may take or send next, and what each one means.
 *
 * protocol.h specifies the messages; this file decides, from a handful of
 * counters and no RDMA at all, whether a given message is in its place.
 * The receiver's session asks lab3_rx_*, sender.c asks lab3_tx_*, and
 * the project's fuzzers and unit tests drive them on their own.  A peer written from
 * protocol.h alone does not need this file: it is one way to keep those
 * rules, kept apart from the I/O.
 */
#ifndef LAB3_RULES_H
#define LAB3_RULES_H

#include <byteswap.h>
#include <stdarg.h>

#include "protocol.h"

/* ---- The receiver's rules, as a pure function ----
 *
 * Which message the receiver may take next, and what each one it takes
 * means, follow from a handful of counters.  They live here, apart from
 * any RDMA, so that the rules can be read in one place and tested (and
 * fuzzed) on their own; the receiver's session does the I/O around
 * them.
 *
 *   lab3_rx_begin        a new session, with the receiver's settings
 *   lab3_rx_accept       a message arrived: take it, or say why not
 *   lab3_rx_may_offer    whether a REGION may go out now
 *   lab3_rx_next_region  the next chunk to offer a REGION for, if any
 *   lab3_rx_stored       the oldest finished chunk is hashed and stored
 *   lab3_rx_decide       every chunk is stored: the verdict is out
 *   lab3_rx_key_sent     step 6 is done
 *   lab3_rx_next_step    which of the receiver's steps comes next
 *
 * The receiver's states are not a second machine beside these rules:
 * lab3_rx_next_step() derives each one from where the rules stand.
 *
 * ERROR never reaches these rules: the common layer makes a sender's
 * ERROR the connection's error (see lab3_take_msg() in common.h), which
 * ends the session wherever it comes.  Given one anyway, they refuse it
 * like any message out of place.
 */

/* Where a session stands, as far as the rules are concerned. */
enum lab3_rx_phase {
	LAB3_RX_FILE_INFO,	/* step 1: waiting for FILE_INFO */
	LAB3_RX_CHUNKS,		/* steps 2-3: REGIONs out, DONEs coming in */
	LAB3_RX_VERDICT,	/* step 4: every chunk stored, no verdict yet */
	LAB3_RX_ID,		/* step 5: good verdict sent, waiting for ID */
	LAB3_RX_HANG_UP,	/* the work is done: only a hang-up is left */
	LAB3_RX_ENDED,		/* a refused message ended it */
};

struct lab3_rx {
	/* The receiver's settings. */
	uint64_t max_bytes;		/* longest file it takes */
	uint64_t min_bytes;		/* shortest (--min-size; 0 if unset) */
	uint64_t window_size;		/* 1 to LAB3_WINDOW_BYTES_MAX */
	uint32_t windows;		/* 1 to LAB3_WINDOWS_MAX */

	/* The session so far. */
	enum lab3_rx_phase phase;
	uint64_t length;		/* from FILE_INFO */
	uint64_t nchunks;		/* chunk k: offset k * window_size */
	uint32_t nwindows;		/* windows this file uses */
	uint64_t offered;		/* REGIONs sent */
	uint64_t finished;		/* chunks whose DONE came: final */
	uint64_t stored;		/* chunks hashed and stored */
	int verdict;			/* enum lab3_verdict, once decided */
	int id_taken;			/* the ID came (after a good verdict) */
	int key_sent;			/* and its key went out */
};

/* lab3_rx_begin: a new session under the receiver's settings. */
static inline void lab3_rx_begin(struct lab3_rx *rx, uint64_t max_bytes,
				 uint64_t window_size, uint32_t windows)
{
	memset(rx, 0, sizeof(*rx));
	rx->max_bytes = max_bytes;
	rx->window_size = window_size;
	rx->windows = windows;
	rx->phase = LAB3_RX_FILE_INFO;
}

/* lab3_rx_chunk: the file offset and length of chunk K. */
static inline void lab3_rx_chunk(const struct lab3_rx *rx, uint64_t k,
				 uint64_t *offset, uint64_t *length)
{
	*offset = k * rx->window_size;
	*length = rx->length - *offset < rx->window_size ?
		  rx->length - *offset : rx->window_size;
}

/* lab3_rx_refuse: end the session with CODE, WHY saying what was wrong. */
static inline int lab3_rx_refuse(struct lab3_rx *rx, int code, char *why,
				 size_t why_len, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static inline int lab3_rx_refuse(struct lab3_rx *rx, int code, char *why,
				 size_t why_len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, why_len, fmt, ap);
	va_end(ap);
	rx->phase = LAB3_RX_ENDED;
	return code;
}

/* lab3_rx_take_file_info: step 1.  The length decides the chunks: as many
 * as it takes windows, and one (empty) for an empty file. */
static inline int lab3_rx_take_file_info(struct lab3_rx *rx,
					 const struct lab3_msg *msg,
					 char *why, size_t why_len)
{
	uint64_t length = msg->file_info.length;

	rx->length = length;		/* for the record, even if refused */
	/* A length sent in the host's byte order, not the wire's, reads
	 * as a huge one: say so when swapping its bytes would make it fit. */
	if (length > rx->max_bytes && bswap_64(length) <= rx->max_bytes)
		return lab3_rx_refuse(rx, LAB3_ERR_TOO_LARGE, why, why_len,
				      "file of %llu bytes over the limit; "
				      "byte-swapped: %llu (host byte order?)",
				      (unsigned long long)length,
				      (unsigned long long)bswap_64(length));
	if (length > rx->max_bytes)
		return lab3_rx_refuse(rx, LAB3_ERR_TOO_LARGE, why, why_len,
				      "file of %llu bytes is over the "
				      "receiver's limit of %llu bytes",
				      (unsigned long long)length,
				      (unsigned long long)rx->max_bytes);
	/* (A key must prove an RDMA WRITE: see --min-size.) */
	if (length < rx->min_bytes)
		return lab3_rx_refuse(rx, LAB3_ERR_TOO_LARGE, why, why_len,
				      "file of %llu bytes is under the "
				      "receiver's minimum of %llu bytes",
				      (unsigned long long)length,
				      (unsigned long long)rx->min_bytes);
	rx->nchunks = length / rx->window_size +
		      (length % rx->window_size != 0 || length == 0);
	rx->nwindows = rx->nchunks < rx->windows ? (uint32_t)rx->nchunks :
		       rx->windows;
	rx->phase = LAB3_RX_CHUNKS;
	return 0;
}

/* lab3_rx_take_done: step 3.  DONE must name the oldest chunk offered and
 * not yet done, with exactly its offset and length. */
static inline int lab3_rx_take_done(struct lab3_rx *rx,
				    const struct lab3_msg *msg,
				    char *why, size_t why_len)
{
	uint64_t offset, length;

	if (rx->finished == rx->offered || rx->finished != rx->stored)
		return lab3_rx_refuse(rx, LAB3_ERR_PROTOCOL, why, why_len,
				      "protocol error: DONE with no REGION "
				      "outstanding");
	lab3_rx_chunk(rx, rx->finished, &offset, &length);
	if (msg->done.offset != offset || msg->done.bytes != length)
		return lab3_rx_refuse(rx, LAB3_ERR_PROTOCOL, why, why_len,
				      "protocol error: DONE for %llu bytes at "
				      "offset %llu, expected %llu at %llu",
				      (unsigned long long)msg->done.bytes,
				      (unsigned long long)msg->done.offset,
				      (unsigned long long)length,
				      (unsigned long long)offset);
	rx->finished++;
	return 0;
}

/* lab3_rx_expects: the one message type the session may take in its
 * phase: FILE_INFO first, then DONEs while chunks are out, then the ID
 * after a good verdict; 0 for none (waiting for its own verdict, or
 * done). */
static inline enum lab3_msg_type lab3_rx_expects(const struct lab3_rx *rx)
{
	switch (rx->phase) {
	case LAB3_RX_FILE_INFO:	return LAB3_MSG_FILE_INFO;
	case LAB3_RX_CHUNKS:	return LAB3_MSG_DONE;
	case LAB3_RX_ID:	return LAB3_MSG_ID;
	default:		return (enum lab3_msg_type)0;
	}
}

/* lab3_rx_accept: MSG arrived.  Returns 0 when it is the message the
 * session expects now (and takes it), or else the LAB3_ERR_ code to
 * refuse it with, WHY saying why.  Anything but 0 ends the session. */
static inline int lab3_rx_accept(struct lab3_rx *rx, const struct lab3_msg *msg,
				 char *why, size_t why_len)
{
	enum lab3_msg_type want = lab3_rx_expects(rx);

	if (rx->phase == LAB3_RX_HANG_UP && msg->type == LAB3_MSG_ID &&
	    rx->verdict != LAB3_VERDICT_GOOD)
		return lab3_rx_refuse(rx, LAB3_ERR_NO_KEY, why, why_len,
				      "no key for ID after a bad verdict");
	if (want == 0)
		return lab3_rx_refuse(rx, LAB3_ERR_PROTOCOL, why, why_len,
				      "protocol error: %s %s",
				      lab3_msg_type_name(msg->type),
				      rx->phase == LAB3_RX_VERDICT ?
				      "before the verdict" :
				      "after the session's end");
	if (msg->type != want)
		return lab3_rx_refuse(rx, LAB3_ERR_PROTOCOL, why, why_len,
				      "protocol error: expected %s, got %s",
				      lab3_msg_type_name(want),
				      lab3_msg_type_name(msg->type));
	switch (rx->phase) {
	case LAB3_RX_FILE_INFO:
		return lab3_rx_take_file_info(rx, msg, why, why_len);
	case LAB3_RX_CHUNKS:
		return lab3_rx_take_done(rx, msg, why, why_len);
	default:			/* LAB3_RX_ID */
		rx->phase = LAB3_RX_HANG_UP;
		rx->id_taken = 1;
		return 0;
	}
}

/* lab3_rx_may_offer: whether a REGION may go out now (see below), without
 * counting it. */
static inline int lab3_rx_may_offer(const struct lab3_rx *rx)
{
	return rx->phase == LAB3_RX_CHUNKS && rx->offered < rx->nchunks &&
	       rx->offered - rx->stored < rx->nwindows;
}

/* lab3_rx_next_region: whether a REGION may go out now, for the next
 * chunk in file order; if so, its OFFSET and LENGTH, counted as offered.
 * A chunk's window is free again once the chunk it held is stored, so at
 * most nwindows chunks are offered and not yet stored. */
static inline int lab3_rx_next_region(struct lab3_rx *rx, uint64_t *offset,
				      uint64_t *length)
{
	if (!lab3_rx_may_offer(rx))
		return 0;
	lab3_rx_chunk(rx, rx->offered, offset, length);
	rx->offered++;
	return 1;
}

/* lab3_rx_stored: the chunk of the last DONE is hashed and stored, so its
 * window is free.  Returns 1 when that was the last chunk: time for the
 * verdict. */
static inline int lab3_rx_stored(struct lab3_rx *rx)
{
	if (rx->phase != LAB3_RX_CHUNKS || rx->stored == rx->finished)
		return 0;
	rx->stored++;
	if (rx->stored < rx->nchunks)
		return 0;
	rx->phase = LAB3_RX_VERDICT;
	return 1;
}

/* lab3_rx_decide: step 4, the verdict went out: a good one lets the ID
 * come, a bad one leaves only the hang-up. */
static inline void lab3_rx_decide(struct lab3_rx *rx, enum lab3_verdict verdict)
{
	if (rx->phase != LAB3_RX_VERDICT)
		return;
	rx->verdict = verdict;
	rx->phase = verdict == LAB3_VERDICT_GOOD ? LAB3_RX_ID : LAB3_RX_HANG_UP;
}

/* lab3_rx_key_sent: step 6, the key for the ID went out. */
static inline void lab3_rx_key_sent(struct lab3_rx *rx)
{
	if (rx->id_taken)
		rx->key_sent = 1;
}

/* The receiver's steps, the states of its session, in the lab's order. */
enum lab3_rx_step {
	LAB3_RX_RECV_FILE_INFO,	/* step 1 */
	LAB3_RX_SEND_REGION,	/* step 2: a REGION for each free window */
	LAB3_RX_RECV_DONE,	/* step 3: the oldest chunk's DONE */
	LAB3_RX_STORE_CHUNK,	/*         revoke its window, hash, store */
	LAB3_RX_SEND_VERDICT,	/* step 4 */
	LAB3_RX_RECV_ID,	/* step 5 */
	LAB3_RX_SEND_KEY,	/* step 6 */
	LAB3_RX_WAIT_DISCONNECT, /* only the hang-up is left */
	LAB3_RX_NO_STEP,	/* refused: the session is over */
};

/* lab3_rx_step_name: STEP's name, for -v traces. */
static inline const char *lab3_rx_step_name(enum lab3_rx_step step)
{
	switch (step) {
	case LAB3_RX_RECV_FILE_INFO:	return "RECV_FILE_INFO";
	case LAB3_RX_SEND_REGION:	return "SEND_REGION";
	case LAB3_RX_RECV_DONE:		return "RECV_DONE";
	case LAB3_RX_STORE_CHUNK:	return "STORE_CHUNK";
	case LAB3_RX_SEND_VERDICT:	return "SEND_VERDICT";
	case LAB3_RX_RECV_ID:		return "RECV_ID";
	case LAB3_RX_SEND_KEY:		return "SEND_KEY";
	case LAB3_RX_WAIT_DISCONNECT:	return "WAIT_DISCONNECT";
	case LAB3_RX_NO_STEP:		return "NO_STEP";
	}
	return "unknown";
}

/* lab3_rx_next_step: the receiver's next step, from where the rules stand.
 * In the chunks, a chunk whose DONE came is stored first; then a REGION
 * goes out for every window free and chunk left; else the receiver
 * waits for the next DONE. */
static inline enum lab3_rx_step lab3_rx_next_step(const struct lab3_rx *rx)
{
	switch (rx->phase) {
	case LAB3_RX_FILE_INFO:
		return LAB3_RX_RECV_FILE_INFO;
	case LAB3_RX_CHUNKS:
		if (rx->finished > rx->stored)
			return LAB3_RX_STORE_CHUNK;
		if (lab3_rx_may_offer(rx))
			return LAB3_RX_SEND_REGION;
		return LAB3_RX_RECV_DONE;
	case LAB3_RX_VERDICT:
		return LAB3_RX_SEND_VERDICT;
	case LAB3_RX_ID:
		return LAB3_RX_RECV_ID;
	case LAB3_RX_HANG_UP:
		return rx->id_taken && !rx->key_sent ? LAB3_RX_SEND_KEY :
		       LAB3_RX_WAIT_DISCONNECT;
	default:
		return LAB3_RX_NO_STEP;
	}
}

/* lab3_rx_awaiting: what the receiver waits for at STEP, in words, for
 * the error that a silence or a hang-up leaves ("timed out after 30 s
 * waiting for DONE of the chunk at offset 0"); "" when it waits for
 * nothing of the sender's. */
static inline void lab3_rx_awaiting(const struct lab3_rx *rx,
				    enum lab3_rx_step step, char *buf,
				    size_t len)
{
	switch (step) {
	case LAB3_RX_RECV_FILE_INFO:
		snprintf(buf, len, "FILE_INFO");
		break;
	case LAB3_RX_RECV_DONE:
		snprintf(buf, len, "DONE of the chunk at offset %llu",
			 (unsigned long long)(rx->finished * rx->window_size));
		break;
	case LAB3_RX_RECV_ID:
		snprintf(buf, len, "ID");
		break;
	case LAB3_RX_WAIT_DISCONNECT:
		snprintf(buf, len, "the sender to hang up");
		break;
	default:
		snprintf(buf, len, "%s", "");
		break;
	}
}

/* ---- The sender's rules, as a pure function ----
 *
 * The sender's states are the lab's sequence, and which message it may
 * take in each, and what the REGIONs it takes must say, follow from the
 * file's size and how far the transfer has come.  As for the receiver,
 * they live here, apart from any RDMA, to be read in one place and
 * fuzzed; sender.c runs one step function per state.
 *
 *   lab3_tx_begin   a new run, for a file of SIZE bytes
 *   lab3_tx_advance the step that sends (or connects, or writes) is done
 *   lab3_tx_accept  a message arrived in a receiving state: take it, or
 *                   say why not
 *
 * ERROR never reaches these rules: the common layer makes a receiver's
 * ERROR the connection's error, which ends the run as a refusal
 * wherever it comes.
 */

/* The sender's states, in the lab's order. */
enum lab3_tx_state {
	LAB3_TX_CONNECT,	/* resolve, connect */
	LAB3_TX_SEND_FILE_INFO,	/* step 1 */
	LAB3_TX_RECV_REGION,	/* step 2: a window for the next chunk */
	LAB3_TX_WRITE_CHUNK,	/* step 3: RDMA WRITE the chunk into it */
	LAB3_TX_SEND_DONE,	/*         then DONE; the next REGION, or */
	LAB3_TX_RECV_VERDICT,	/* step 4 */
	LAB3_TX_SEND_ID,	/* step 5, after a good verdict */
	LAB3_TX_RECV_KEY,	/* step 6 */
	LAB3_TX_FINISHED,	/* the key came */
	LAB3_TX_ENDED,		/* a bad verdict, or a refused message */
};

struct lab3_tx {
	uint64_t size;			/* the file's length */
	enum lab3_tx_state state;
	struct lab3_region region;	/* the REGION being written */
	uint64_t next_offset;		/* where the next REGION must start */
	uint64_t regions;		/* REGIONs taken */
	int verdict;			/* enum lab3_verdict, or -1: none yet */
};

/* lab3_tx_state_name: STATE's name, for -v traces. */
static inline const char *lab3_tx_state_name(enum lab3_tx_state state)
{
	static const char *const names[] = {
		[LAB3_TX_CONNECT] = "CONNECT",
		[LAB3_TX_SEND_FILE_INFO] = "SEND_FILE_INFO",
		[LAB3_TX_RECV_REGION] = "RECV_REGION",
		[LAB3_TX_WRITE_CHUNK] = "WRITE_CHUNK",
		[LAB3_TX_SEND_DONE] = "SEND_DONE",
		[LAB3_TX_RECV_VERDICT] = "RECV_VERDICT",
		[LAB3_TX_SEND_ID] = "SEND_ID",
		[LAB3_TX_RECV_KEY] = "RECV_KEY",
		[LAB3_TX_FINISHED] = "FINISHED",
		[LAB3_TX_ENDED] = "ENDED",
	};

	return state <= LAB3_TX_ENDED ? names[state] : "unknown";
}

/* lab3_tx_begin: a new run that sends a file of SIZE bytes. */
static inline void lab3_tx_begin(struct lab3_tx *tx, uint64_t size)
{
	memset(tx, 0, sizeof(*tx));
	tx->size = size;
	tx->state = LAB3_TX_CONNECT;
	tx->verdict = -1;
}

/* lab3_tx_advance: the current state's own work is done (connected, a
 * message posted, a chunk's WRITEs posted): on to the next state.  After
 * a DONE, that is the next REGION while the file has bytes left, else
 * the verdict.  Nothing happens in a receiving state. */
static inline void lab3_tx_advance(struct lab3_tx *tx)
{
	switch (tx->state) {
	case LAB3_TX_CONNECT:
		tx->state = LAB3_TX_SEND_FILE_INFO;
		break;
	case LAB3_TX_SEND_FILE_INFO:
		tx->state = LAB3_TX_RECV_REGION;
		break;
	case LAB3_TX_WRITE_CHUNK:
		tx->state = LAB3_TX_SEND_DONE;
		break;
	case LAB3_TX_SEND_DONE:
		tx->next_offset += tx->region.length;
		tx->state = tx->next_offset < tx->size ? LAB3_TX_RECV_REGION :
			    LAB3_TX_RECV_VERDICT;
		break;
	case LAB3_TX_SEND_ID:
		tx->state = LAB3_TX_RECV_KEY;
		break;
	default:
		break;
	}
}

/* lab3_tx_take_region: step 2.  A REGION must start where the last chunk
 * ended, stay within the file and LAB3_WINDOW_BYTES_MAX, and be empty
 * only for an empty file. */
static inline int lab3_tx_take_region(struct lab3_tx *tx,
				      const struct lab3_msg *msg,
				      char *why, size_t why_len)
{
	uint64_t offset = msg->region.offset, length = msg->region.length;

	if (offset != tx->next_offset || length > tx->size - tx->next_offset ||
	    length > LAB3_WINDOW_BYTES_MAX || (length == 0 && tx->size > 0)) {
		snprintf(why, why_len, "REGION of %llu bytes at offset %llu "
			 "for a file of %llu, next offset %llu",
			 (unsigned long long)length,
			 (unsigned long long)offset,
			 (unsigned long long)tx->size,
			 (unsigned long long)tx->next_offset);
		tx->state = LAB3_TX_ENDED;
		return LAB3_ERR_PROTOCOL;
	}
	tx->region = msg->region;
	tx->regions++;
	tx->state = LAB3_TX_WRITE_CHUNK;
	return 0;
}

/* lab3_tx_accept: MSG arrived.  Returns 0 when it is the message the
 * current state expects (and takes it: a REGION becomes tx->region, a
 * VERDICT tx->verdict), or else LAB3_ERR_PROTOCOL with WHY saying why,
 * which ends the run. */
static inline int lab3_tx_accept(struct lab3_tx *tx, const struct lab3_msg *msg,
				 char *why, size_t why_len)
{
	static const enum lab3_msg_type expected[LAB3_TX_ENDED + 1] = {
		[LAB3_TX_RECV_REGION] = LAB3_MSG_REGION,
		[LAB3_TX_RECV_VERDICT] = LAB3_MSG_VERDICT,
		[LAB3_TX_RECV_KEY] = LAB3_MSG_KEY,
	};
	enum lab3_msg_type want = expected[tx->state];

	if (want == 0 || msg->type != want) {
		if (want == 0)
			snprintf(why, why_len, "%s while the sender is in %s",
				 lab3_msg_type_name(msg->type),
				 lab3_tx_state_name(tx->state));
		else
			snprintf(why, why_len, "expected %s, got %s",
				 lab3_msg_type_name(want),
				 lab3_msg_type_name(msg->type));
		tx->state = LAB3_TX_ENDED;
		return LAB3_ERR_PROTOCOL;
	}
	switch (want) {
	case LAB3_MSG_REGION:
		return lab3_tx_take_region(tx, msg, why, why_len);
	case LAB3_MSG_VERDICT:
		tx->verdict = msg->verdict.verdict;
		tx->state = tx->verdict == LAB3_VERDICT_GOOD ?
			    LAB3_TX_SEND_ID : LAB3_TX_ENDED;
		return 0;
	default:			/* LAB3_MSG_KEY */
		tx->state = LAB3_TX_FINISHED;
		return 0;
	}
}

/* lab3_tx_awaiting: what the sender waits for in its current state, in
 * words, for the error that a silence or a hang-up leaves ("timed out
 * after 30 s waiting for VERDICT"); "" while it connects. */
static inline void lab3_tx_awaiting(const struct lab3_tx *tx, char *buf,
				    size_t len)
{
	unsigned long long at = tx->state == LAB3_TX_RECV_REGION ?
				tx->next_offset : tx->region.offset;

	switch (tx->state) {
	case LAB3_TX_SEND_FILE_INFO:
	case LAB3_TX_SEND_ID:
		snprintf(buf, len, "the receiver to take %s",
			 tx->state == LAB3_TX_SEND_ID ? "ID" : "FILE_INFO");
		break;
	case LAB3_TX_RECV_REGION:
		snprintf(buf, len, "REGION of the chunk at offset %llu", at);
		break;
	case LAB3_TX_WRITE_CHUNK:
	case LAB3_TX_SEND_DONE:
		snprintf(buf, len, "the WRITEs of the chunk at offset %llu to "
			 "complete", at);
		break;
	case LAB3_TX_RECV_VERDICT:
	case LAB3_TX_RECV_KEY:
		snprintf(buf, len, "%s", tx->state == LAB3_TX_RECV_KEY ?
			 "KEY" : "VERDICT");
		break;
	default:
		snprintf(buf, len, "%s", "");
		break;
	}
}

#endif /* LAB3_RULES_H */
