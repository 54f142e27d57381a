/* SPDX-License-Identifier: MIT */
/*
 * evil.h - what the misbehaving test programs (the evil sender and
 * tests/evil-receiver.c) share.  Test-only.
 */
#ifndef LAB3_EVIL_H
#define LAB3_EVIL_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "testlib.h"

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

/* A misbehaviour: its name on the command line and the function that
 * carries it out.  Each program defines its own struct evil. */
struct evil;
struct evil_mode {
	const char *name;
	int (*run)(struct evil *e);
};

/* evil_usage: "usage: SYNOPSIS" and the names of the N MODES, on stderr;
 * returns exit status 1. */
static inline int evil_usage(const char *synopsis,
			     const struct evil_mode *modes, size_t n)
{
	fprintf(stderr, "usage: %s\nmodes:", synopsis);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, " %s", modes[i].name);
	fprintf(stderr, "\n");
	return 1;
}

/* evil_find_mode: the index of the mode called NAME among the N MODES
 * into *MODE; 0, or -1 if there is none. */
static inline int evil_find_mode(const char *name,
				 const struct evil_mode *modes, size_t n,
				 size_t *mode)
{
	for (*mode = 0; *mode < n; (*mode)++)
		if (strcmp(name, modes[*mode].name) == 0)
			return 0;
	return -1;
}

#endif /* LAB3_EVIL_H */
