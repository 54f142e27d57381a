/* SPDX-License-Identifier: MIT */
/*
 * testlib.h - calls that only the tests need (testlib.c).
 */
#ifndef LAB3_TESTLIB_H
#define LAB3_TESTLIB_H

#include "common.h"
#include "listener.h"

/* Server: wait for one connection request, build its resources and accept
 * it.  Returns -EINTR when a signal arrives while waiting. */
int lab3_accept(struct lab3_listener *listener, struct lab3_conn *conn);

/* SEND the LEN bytes at BYTES as they are, and wait until the send queue
 * is empty: for a tool that must send malformed messages on purpose (the
 * evil sender). */
int lab3_send_bytes(struct lab3_conn *conn, const void *bytes, size_t len);

/* The waits the tools need, built on lab3_wait() as sender.c's are: the
 * next message (waiting up to WAIT_MS of silence, 0: the timeout); every
 * send completed; room on the send queue; a message posted and its SEND
 * completed.  0 or the connection's error. */
int lab3_recv_msg(struct lab3_conn *conn, struct lab3_msg *msg, int wait_ms);
int lab3_wait_sends(struct lab3_conn *conn, int wait_ms);
int lab3_wait_for_credit(struct lab3_conn *conn, int wait_ms);
int lab3_send_msg(struct lab3_conn *conn, const struct lab3_msg *msg);

/* SHA-256 of the LEN bytes at DATA into OUT; 0, or -EIO if OpenSSL fails. */
int lab3_sha256(const void *data, size_t len, uint8_t out[LAB3_SHA256_LEN]);

#endif /* LAB3_TESTLIB_H */
