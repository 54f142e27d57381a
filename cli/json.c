/* SPDX-License-Identifier: MIT */
/*
 * json.c - JSON strings (declared in json.h): the one escaper that the
 * sender's --json object and the receiver's grading ledger share.  Not part
 * of the lab.
 */
#include <stdint.h>
#include <string.h>

#include "json.h"

/* put_text: append the N bytes at TEXT to OUT of SIZE at *LEN, as far as
 * they fit with a NUL after them; *LEN counts every byte, like the return
 * value of snprintf(). */
static void put_text(char *out, size_t size, size_t *len, const char *text,
		     size_t n)
{
	for (size_t i = 0; i < n; i++, (*len)++)
		if (*len + 1 < size)
			out[*len] = text[i];
}

/* utf8_length: the length of the valid UTF-8 character that starts at P,
 * 1 to 4 bytes, or 0 if none does (a stray continuation byte, a sequence
 * cut short, an overlong form, a surrogate, or past U+10FFFF).  It stops
 * at the first byte that does not fit, so it never reads past a NUL. */
static int utf8_length(const unsigned char *p)
{
	static const uint32_t shortest[] = { 0, 0, 0x80, 0x800, 0x10000 };
	uint32_t c;
	int len;

	if (p[0] < 0x80)
		return 1;
	if ((p[0] & 0xe0) == 0xc0)
		len = 2;
	else if ((p[0] & 0xf0) == 0xe0)
		len = 3;
	else if ((p[0] & 0xf8) == 0xf0)
		len = 4;
	else
		return 0;
	c = p[0] & (0x7f >> len);
	for (int i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if (c < shortest[len] || (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
		return 0;
	return len;
}

/* lab3_json_string: see json.h.  File names and IDs are printable ASCII
 * already (protocol.h checks them), but an error text can hold anything a
 * path can, so every byte is looked at. */
size_t lab3_json_string(const char *s, char *out, size_t size)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	size_t len = 0;

	if (s == NULL) {
		put_text(out, size, &len, "null", 4);
	} else {
		put_text(out, size, &len, "\"", 1);
		while (*p != '\0') {
			int n = utf8_length(p);
			char esc[6] = { '\\', 'u', '0', '0', digits[*p >> 4],
					digits[*p & 0x0f] };

			if (*p == '"' || *p == '\\') {
				esc[1] = (char)*p;
				put_text(out, size, &len, esc, 2);
			} else if (*p < 0x20 || *p == 0x7f) {
				put_text(out, size, &len, esc, 6);
			} else if (n == 0) {
				put_text(out, size, &len, "\\ufffd", 6);
			} else {
				put_text(out, size, &len, (const char *)p,
					 (size_t)n);
			}
			p += n > 0 ? n : 1;
		}
		put_text(out, size, &len, "\"", 1);
	}
	if (size > 0)
		out[len < size ? len : size - 1] = '\0';
	return len;
}
