/* SPDX-License-Identifier: MIT */
/*
 * fuzz_receiver.c - a libFuzzer harness for the receiver's rules: the pure
 * state transition function in rules.h (lab3_rx_accept and its
 * companions) that decides which message a session may take next.
 *
 * Each input is one session.  Its first bytes choose the receiver's
 * settings (size limit, window size, windows); the rest is a sequence of
 * messages from a sender that may be honest or anything but.  The harness
 * plays the receiver exactly as receiver.c does (offer REGIONs while the
 * rules allow, store each chunk after its DONE, give a verdict when all
 * are stored) and keeps its own account of what was offered, so that it
 * can check, after every step, what must hold whatever the sender does:
 *
 *   - REGIONs go out in file order, each within the file and no longer
 *     than a window, with no more outstanding than the windows;
 *   - a DONE is taken only for the oldest outstanding chunk, with exactly
 *     its offset and length;
 *   - the verdict comes only when every byte of the file was stored;
 *   - an ID is taken only after a good verdict, once: one key a session;
 *   - the receiver's next step (lab3_rx_step) is the one the rules allow;
 *   - once a message is refused, the session is over.
 *
 * Any broken rule aborts; AddressSanitizer and UBSan watch the arithmetic.
 * Built and run by `make fuzz`; a short run is part of `make test`.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../rules.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What the harness itself knows was offered and not yet done. */
struct ledger {
	uint64_t offset[LAB3_WINDOWS_MAX];
	uint64_t length[LAB3_WINDOWS_MAX];
	unsigned head, count;		/* a ring, oldest at head */
	uint64_t next_offset;		/* where the next REGION must start */
	uint64_t regions;		/* REGIONs offered */
	uint64_t bytes_stored;
	int verdict_given;
	int keys;
};

/* next_message: build the sender's next message from IN.  Its type and
 * fields come from the input; with one bit set, a DONE names the oldest
 * outstanding chunk truthfully, so that long honest sessions are reached
 * as easily as broken ones.  Returns 0, or -1 when the decoder refuses
 * what the input built (a receiver would end the session there). */
static int next_message(struct input *in, const struct ledger *l,
			struct lab3_msg *msg)
{
	unsigned sel = (unsigned)take(in, 1);
	union lab3_wire_msg wire;
	char why[256];
	size_t len;

	memset(msg, 0, sizeof(*msg));
	msg->type = (enum lab3_msg_type)(1 + sel % 7);
	switch (msg->type) {
	case LAB3_MSG_FILE_INFO:
		msg->file_info.length = sel & 0x80 ? take(in, 8) : take(in, 2);
		snprintf(msg->file_info.name, sizeof(msg->file_info.name),
			 "file");
		break;
	case LAB3_MSG_DONE:
		if ((sel & 0x40) && l->count > 0) {
			msg->done.offset = l->offset[l->head];
			msg->done.bytes = l->length[l->head];
		} else {
			msg->done.offset = take(in, 8);
			msg->done.bytes = take(in, 8);
		}
		break;
	case LAB3_MSG_ID:
		snprintf(msg->id.id, sizeof(msg->id.id), "student");
		break;
	case LAB3_MSG_ERROR:
		msg->error.code = LAB3_ERR_INTERNAL;
		snprintf(msg->error.reason, sizeof(msg->error.reason),
			 "gave up");
		break;
	default:	/* REGION, VERDICT, KEY: never the sender's to send */
		break;
	}
	/* Through the wire form and the real decoder, as on the wire. */
	len = lab3_encode(msg, &wire);
	if (len == 0 || lab3_decode(&wire, len, msg, why, sizeof(why)) != 0)
		return -1;
	return 0;
}

/* offer_regions: the receiver's SEND_REGION: offer every chunk the rules
 * allow now, checking each against the ledger. */
static void offer_regions(struct lab3_rx *rx, struct ledger *l)
{
	uint64_t offset, length;

	while (lab3_rx_next_region(rx, &offset, &length)) {
		CHECK(offset == l->next_offset);
		CHECK(offset <= rx->length && length <= rx->length - offset);
		CHECK(length <= rx->window_size);
		CHECK(length > 0 || rx->length == 0);
		CHECK(l->count < rx->nwindows);
		CHECK(rx->nwindows <= rx->windows &&
		      rx->nwindows <= LAB3_WINDOWS_MAX);
		l->offset[(l->head + l->count) % LAB3_WINDOWS_MAX] = offset;
		l->length[(l->head + l->count) % LAB3_WINDOWS_MAX] = length;
		l->count++;
		l->next_offset += length;
		l->regions++;
	}
	/* A session in its chunks always has a REGION out to wait on, and
	 * the receiver's next step is to wait for its DONE. */
	CHECK(rx->phase != LAB3_RX_CHUNKS || l->count > 0);
	CHECK(rx->phase != LAB3_RX_CHUNKS ||
	      lab3_rx_next_step(rx) == LAB3_RX_RECV_DONE);
}

/* taken: MSG was accepted in PHASE; check that the rules had the right
 * to, and do what the receiver does next. */
static void taken(struct lab3_rx *rx, struct ledger *l,
		  enum lab3_rx_phase phase, const struct lab3_msg *msg)
{
	switch (msg->type) {
	case LAB3_MSG_FILE_INFO:
		CHECK(phase == LAB3_RX_FILE_INFO);
		CHECK(msg->file_info.length <= rx->max_bytes);
		CHECK(rx->phase == LAB3_RX_CHUNKS);
		break;
	case LAB3_MSG_DONE:
		CHECK(phase == LAB3_RX_CHUNKS && l->count > 0);
		CHECK(msg->done.offset == l->offset[l->head]);
		CHECK(msg->done.bytes == l->length[l->head]);
		l->bytes_stored += msg->done.bytes;
		l->head = (l->head + 1) % LAB3_WINDOWS_MAX;
		l->count--;
		/* STORE_CHUNK: the last chunk, and only it, asks for the
		 * verdict. */
		CHECK(lab3_rx_stored(rx) ==
		      (l->bytes_stored == rx->length && l->count == 0 &&
		       l->regions == rx->nchunks));
		break;
	case LAB3_MSG_ID:
		CHECK(phase == LAB3_RX_ID && l->verdict_given);
		CHECK(rx->verdict == LAB3_VERDICT_GOOD);
		CHECK(++l->keys == 1);
		/* The key goes out next, once; then only the hang-up. */
		CHECK(lab3_rx_next_step(rx) == LAB3_RX_SEND_KEY);
		lab3_rx_key_sent(rx);
		CHECK(lab3_rx_next_step(rx) == LAB3_RX_WAIT_DISCONNECT);
		break;
	default:
		CHECK(!"a message no state takes was taken");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };
	struct ledger l = { 0 };
	struct lab3_rx rx;
	uint64_t max_bytes = take(&in, 8);
	uint64_t window_size = 1 + take(&in, 4) % LAB3_WINDOW_BYTES_MAX;
	uint32_t windows = 1 + (uint32_t)take(&in, 1) % LAB3_WINDOWS_MAX;

	lab3_rx_begin(&rx, max_bytes, window_size, windows);
	while (in.n > 0 && rx.phase != LAB3_RX_ENDED) {
		enum lab3_rx_phase phase = rx.phase;
		struct lab3_msg msg;
		char why[256] = "";
		int ret;

		offer_regions(&rx, &l);
		if (rx.phase == LAB3_RX_VERDICT) {
			/* Every byte, and only the file's, was stored. */
			CHECK(l.bytes_stored == rx.length && l.count == 0);
			CHECK(l.next_offset == rx.length);
			lab3_rx_decide(&rx, take(&in, 1) & 1 ?
				       LAB3_VERDICT_GOOD : LAB3_VERDICT_BAD);
			l.verdict_given = 1;
			continue;
		}
		if (next_message(&in, &l, &msg) != 0)
			return 0;	/* the decoder refused: session over */
		ret = lab3_rx_accept(&rx, &msg, why, sizeof(why));
		if (ret != 0) {
			/* Refused: said why, with a code, and it is over. */
			CHECK(why[0] != '\0' && rx.phase == LAB3_RX_ENDED);
			CHECK(ret >= LAB3_ERR_PROTOCOL &&
			      ret <= LAB3_ERR_LAST);
			break;
		}
		taken(&rx, &l, phase, &msg);
	}
	return 0;
}
