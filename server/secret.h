/* SPDX-License-Identifier: MIT */
/*
 * secret.h - the receiver's secret file and the keys it derives, and the
 * file helpers it shares with the ledger (secret.c).
 */
#ifndef LAB3_SECRET_H
#define LAB3_SECRET_H

#include <stddef.h>
#include <stdint.h>

#include "protocol.h"	/* LAB3_KEY_LEN */

/* HMAC-SHA256 with KEY of the LEN bytes at DATA into OUT; 0 or -EIO. */
int lab3_hmac_sha256(const uint8_t *key, size_t key_len,
		     const void *data, size_t len,
		     uint8_t out[LAB3_KEY_LEN]);

/* Read 2*LEN hex digits (either case) at IN into LEN bytes at OUT; 0, or
 * -1 if any of them is not a hex digit. */
int lab3_parse_hex(const char *in, uint8_t *out, size_t len);

#define LAB3_SECRET_LEN 32

/* Read the secret from PATH, or create it (random, mode 0600) if it does
 * not exist. */
int lab3_load_secret(const char *path, uint8_t secret[LAB3_SECRET_LEN],
		     char *err, size_t err_len);

/* The key a session with ID receives: HMAC-SHA256(secret, ID). */
int lab3_key_for_id(const uint8_t secret[LAB3_SECRET_LEN], const char *id,
		    uint8_t key[LAB3_KEY_LEN]);

/* ---- Files ---- */

/* Make the directory entry of PATH durable (fsync its directory). */
int lab3_fsync_parent(const char *path, char *err, size_t err_len);

/* The end of opening WHAT (e.g. "ledger") at PATH: FD is what open()
 * returned; a failure, or a file that is not a regular one, is put in
 * words in ERR and FD closed.  Returns FD with its stat in *ST, or a
 * negative errno. */
struct stat;
int lab3_open_checked(int fd, const char *what, const char *path,
		      struct stat *st, char *err, size_t err_len);

#endif /* LAB3_SECRET_H */
