/*
 * evil.h - what the misbehaving test programs (tests/evil-sender.c,
 * tests/evil-receiver.c) share.  Test-only.
 */
#ifndef LAB3_EVIL_H
#define LAB3_EVIL_H

#include <errno.h>
#include <stdio.h>

#include "../common.h"

/* evil_recv_type: receive the next message on CONN within WAIT_MS (0: the
 * connection's timeout) and require type WANT; anything else is -EPROTO
 * with conn->err saying what came.  (The peer's ERROR is -EREMOTEIO, with
 * its reason in conn->err.) */
static inline int evil_recv_type(struct lab3_conn *conn,
				 enum lab3_msg_type want,
				 struct lab3_msg *msg, int wait_ms)
{
	int ret = lab3_recv_msg(conn, msg, wait_ms);

	if (ret != 0)
		return ret;
	if (msg->type != want) {
		snprintf(conn->err, sizeof(conn->err), "got %s",
			 lab3_msg_type_name(msg->type));
		return -EPROTO;
	}
	return 0;
}

#endif /* LAB3_EVIL_H */
