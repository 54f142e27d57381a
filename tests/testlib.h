/*
 * testlib.h - calls that only the tests need (testlib.c).
 */
#ifndef LAB3_TESTLIB_H
#define LAB3_TESTLIB_H

#include "../common.h"
#include "../server/listener.h"

/* Server: wait for one connection request, build its resources and accept
 * it.  Returns -EINTR when a signal arrives while waiting. */
int lab3_accept(struct lab3_listener *listener, struct lab3_conn *conn);

/* SEND the LEN bytes at BYTES as they are, and wait until the send queue
 * is empty: for a tool that must send malformed messages on purpose (the
 * evil sender). */
int lab3_send_bytes(struct lab3_conn *conn, const void *bytes, size_t len);

/* SHA-256 of the LEN bytes at DATA into OUT; 0, or -EIO if OpenSSL fails. */
int lab3_sha256(const void *data, size_t len, uint8_t out[LAB3_SHA256_LEN]);

#endif /* LAB3_TESTLIB_H */
