/* SPDX-License-Identifier: MIT */
/*
 * hash.c - the lab's hashes: SHA-256 of a file that comes in pieces
 * (step 1, the sender's; step 4, the receiver's of what arrived), with
 * OpenSSL's EVP interface, and hex for printing them (common.h).
 */
#include <errno.h>

#include <openssl/evp.h>

#include "common.h"

/* lab3_sha256_begin: see common.h. */
int lab3_sha256_begin(struct lab3_sha256 *h)
{
	h->ctx = EVP_MD_CTX_new();
	if (h->ctx == NULL ||
	    EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
		lab3_sha256_free(h);
		return -ENOMEM;
	}
	return 0;
}

/* lab3_sha256_add: see common.h. */
int lab3_sha256_add(struct lab3_sha256 *h, const void *data, size_t len)
{
	return EVP_DigestUpdate(h->ctx, data, len) == 1 ? 0 : -EIO;
}

/* lab3_sha256_end: see common.h. */
int lab3_sha256_end(struct lab3_sha256 *h, uint8_t out[LAB3_SHA256_LEN])
{
	unsigned int out_len = 0;
	int ok = EVP_DigestFinal_ex(h->ctx, out, &out_len) == 1 &&
		 out_len == LAB3_SHA256_LEN;

	lab3_sha256_free(h);
	return ok ? 0 : -EIO;
}

/* lab3_sha256_free: see common.h. */
void lab3_sha256_free(struct lab3_sha256 *h)
{
	EVP_MD_CTX_free(h->ctx);
	h->ctx = NULL;
}

/* lab3_hex: see common.h. */
void lab3_hex(const uint8_t *in, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 0x0f];
	}
	out[2 * len] = '\0';
}
