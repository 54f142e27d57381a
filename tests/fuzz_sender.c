/* SPDX-License-Identifier: MIT */
/*
 * fuzz_sender.c - a libFuzzer harness for the sender's rules: the pure
 * state transition function in rules.h (lab3_tx_accept, lab3_tx_advance)
 * that decides which message the sender may take in which state, and
 * which REGIONs it may write into.
 *
 * Each input is one run against a made-up receiver.  Its first bytes
 * choose the file's size; the rest says what the receiver sends whenever
 * the sender waits for a message: any message type, with fields from the
 * input, or (one bit) an honest REGION for the next chunk, so that long
 * good runs are reached as easily as broken ones.  The harness plays the
 * sender as sender.c does (every sending step done at once) and keeps its
 * own account, so that it can check, after every step, what must hold
 * whatever the receiver does:
 *
 *   - a REGION is taken only while waiting for one, starts exactly where
 *     the last chunk ended, stays within the file and LAB3_WINDOW_BYTES_MAX,
 *     and is empty only for an empty file;
 *   - the sender writes every byte of the file exactly once, in order,
 *     before it waits for the verdict, and waits for it only then;
 *   - the ID goes out only after a good verdict, and the run finishes only
 *     with the KEY after that ID;
 *   - once a message is refused, the run is over, with a reason.
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

/* What the harness itself knows of the run so far. */
struct account {
	uint64_t written;		/* bytes of the chunks written */
	uint64_t chunks;		/* chunks written */
	int verdict;			/* the verdict taken, or -1 */
	int id_sent;
};

/* next_message: the made-up receiver's next message, from IN.  With one
 * bit set, a REGION is honest: the next chunk, at most WINDOW bytes.
 * Returns 0, or -1 when the decoder refuses what the input built (a
 * sender would end the run there). */
static int next_message(struct input *in, const struct account *a,
			uint64_t file_size, struct lab3_msg *msg)
{
	unsigned sel = (unsigned)take(in, 1);
	union lab3_wire_msg wire;
	uint64_t window = 1 + take(in, 2);
	char why[256];
	size_t len;

	memset(msg, 0, sizeof(*msg));
	msg->type = (enum lab3_msg_type)(1 + sel % 6);	/* never ERROR */
	switch (msg->type) {
	case LAB3_MSG_REGION:
		msg->region.addr = take(in, 8);
		msg->region.rkey = (uint32_t)take(in, 4);
		if (sel & 0x80) {
			msg->region.offset = a->written;
			msg->region.length = file_size - a->written < window ?
					     file_size - a->written : window;
		} else {
			msg->region.offset = take(in, 8);
			msg->region.length = take(in, 8);
		}
		break;
	case LAB3_MSG_VERDICT:
		msg->verdict.verdict = sel & 0x40 ? LAB3_VERDICT_GOOD :
				       LAB3_VERDICT_BAD;
		break;
	case LAB3_MSG_FILE_INFO:
		msg->file_info.length = take(in, 8);
		break;
	case LAB3_MSG_ID:
		snprintf(msg->id.id, sizeof(msg->id.id), "student");
		break;
	default:	/* DONE, KEY: fields from the input or zero */
		msg->done.offset = take(in, 8);
		break;
	}
	len = lab3_encode(msg, &wire);
	if (len == 0 || lab3_decode(&wire, len, msg, why, sizeof(why)) != 0)
		return -1;
	return 0;
}

/* taken: MSG was accepted in STATE; check that the rules had the right
 * to, and keep the account. */
static void taken(const struct lab3_tx *tx, struct account *a,
		  enum lab3_tx_state state, const struct lab3_msg *msg)
{
	switch (msg->type) {
	case LAB3_MSG_REGION:
		CHECK(state == LAB3_TX_RECV_REGION);
		CHECK(msg->region.offset == a->written);
		CHECK(msg->region.length <= tx->size - a->written);
		CHECK(msg->region.length <= LAB3_WINDOW_BYTES_MAX);
		CHECK(msg->region.length > 0 || tx->size == 0);
		CHECK(tx->state == LAB3_TX_WRITE_CHUNK);
		CHECK(memcmp(&tx->region, &msg->region,
			     sizeof(msg->region)) == 0);
		break;
	case LAB3_MSG_VERDICT:
		CHECK(state == LAB3_TX_RECV_VERDICT);
		CHECK(a->written == tx->size && a->chunks >= 1);
		a->verdict = msg->verdict.verdict;
		CHECK(tx->state == (a->verdict == LAB3_VERDICT_GOOD ?
				    LAB3_TX_SEND_ID : LAB3_TX_ENDED));
		break;
	case LAB3_MSG_KEY:
		CHECK(state == LAB3_TX_RECV_KEY && a->id_sent);
		CHECK(a->verdict == LAB3_VERDICT_GOOD);
		CHECK(tx->state == LAB3_TX_FINISHED);
		break;
	default:
		CHECK(!"a message no state takes was taken");
	}
}

/* step: the sender's own work in a sending state, as sender.c does it,
 * checked against the account. */
static void step(struct lab3_tx *tx, struct account *a)
{
	enum lab3_tx_state state = tx->state;

	switch (state) {
	case LAB3_TX_SEND_DONE:
		a->written += tx->region.length;
		a->chunks++;
		CHECK(a->written <= tx->size);
		break;
	case LAB3_TX_SEND_ID:
		CHECK(a->verdict == LAB3_VERDICT_GOOD);
		a->id_sent = 1;
		break;
	default:
		break;
	}
	lab3_tx_advance(tx);
	if (state == LAB3_TX_SEND_DONE)
		CHECK(tx->state == (a->written < tx->size ?
				    LAB3_TX_RECV_REGION :
				    LAB3_TX_RECV_VERDICT));
	CHECK(tx->state != state);
}

/* receiving: whether STATE waits for a message. */
static int receiving(enum lab3_tx_state state)
{
	return state == LAB3_TX_RECV_REGION || state == LAB3_TX_RECV_VERDICT ||
	       state == LAB3_TX_RECV_KEY;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };
	struct account a = { .verdict = -1 };
	struct lab3_tx tx;
	uint64_t file_size = take(&in, 1) & 1 ? take(&in, 8) : take(&in, 3);

	lab3_tx_begin(&tx, file_size);
	while (in.n > 0 && tx.state != LAB3_TX_FINISHED &&
	       tx.state != LAB3_TX_ENDED) {
		enum lab3_tx_state state = tx.state;
		struct lab3_msg msg;
		char why[256] = "";

		if (!receiving(state)) {
			step(&tx, &a);
			continue;
		}
		if (next_message(&in, &a, file_size, &msg) != 0)
			return 0;	/* the decoder refused: run over */
		if (lab3_tx_accept(&tx, &msg, why, sizeof(why)) != 0) {
			/* Refused: said why, and it is over. */
			CHECK(why[0] != '\0' && tx.state == LAB3_TX_ENDED);
			break;
		}
		taken(&tx, &a, state, &msg);
	}
	/* Finished only with every byte written, a good verdict, a key. */
	if (tx.state == LAB3_TX_FINISHED)
		CHECK(a.written == file_size && a.id_sent &&
		      a.verdict == LAB3_VERDICT_GOOD);
	return 0;
}
