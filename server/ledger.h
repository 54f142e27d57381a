/* SPDX-License-Identifier: MIT */
/*
 * ledger.h - the receiver's grading ledger (receiver -l) and its summing
 * up (--ledger-summary).  Not part of the lab: a record of each session
 * for the instructor, written beside the lab's steps.
 */
#ifndef LAB3_LEDGER_H
#define LAB3_LEDGER_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "protocol.h"

/*
 * The ledger is a file of JSON objects, one line per session, always with
 * these fields in this order:
 *
 *   {"time":"2026-11-22T20:31:05Z","peer":"198.18.0.2:49152",
 *    "id":"student42","file":"report.pdf","bytes":4194304,
 *    "sha256":"<64 hex digits>","verdict":"good","key_sent":true,
 *    "error":null,"saved_as":"student42/report.pdf"}
 *
 * (on one line; the record that sums up an address's sessions that
 * ended without a key has the address, or its IPv6 /64, as its peer,
 * without a port), then, when --keep or --id-max removed earlier files
 * of the ID to
 * make way for this one, ,"dropped":["student42/report.pdf",...] before
 * the closing brace.  id, file, bytes, sha256, verdict, error and
 * saved_as may be null.  saved_as is where, under -o, the file was saved
 * (a second file of one ID and name is NAME.2, and so on); ledgers
 * written before it existed end after error, and are read as well.  The
 * key itself is never written.
 */
#define LAB3_LEDGER_LINE_MAX 8192	/* longest line a ledger may hold */
#define LAB3_TIME_LEN 21		/* "2026-11-22T20:31:05Z" and a NUL */

/* What one record says, as the receiver writes it. */
struct lab3_ledger_record {
	time_t time;			/* written as UTC, ISO 8601 */
	const char *peer;		/* "ADDR:PORT" of the sender */
	const char *id;			/* NULL: no ID arrived */
	int has_file_info;		/* 0: no FILE_INFO arrived; file,
					 * bytes and sha256 are null */
	const char *file;		/* base name; NULL or "": none */
	uint64_t bytes;			/* the length FILE_INFO announced */
	const uint8_t *sha256;		/* the hash FILE_INFO announced */
	int verdict;			/* enum lab3_verdict, or -1: none */
	int key_sent;			/* the key was released */
	const char *error;		/* NULL or "": the session did not fail */
	const char *saved_as;		/* NULL or "": no file saved */
	const char *dropped;		/* files removed for it (--keep),
					 * each ended by a NUL; NULL: none */
	size_t dropped_len;		/* the bytes of all of them */
};

/* Write the line for REC, without its newline, and a NUL into BUF of SIZE
 * bytes.  Returns its length, or -1 if it does not fit. */
int lab3_ledger_format(const struct lab3_ledger_record *rec, char *buf,
		       size_t size);

/* Open (or create, mode 0600) the ledger at PATH for appending.  Returns
 * the file descriptor, or a negative errno with ERR filled in. */
int lab3_ledger_open(const char *path, char *err, size_t err_len);

/* Append REC to the ledger open on FD with one write(), then fsync() it.
 * If the ledger's last line has no newline (a record cut short by a
 * crash), the record starts on a new line.  Returns 0 or a negative
 * errno (-EIO for a short write). */
int lab3_ledger_append(int fd, const struct lab3_ledger_record *rec);

#define LAB3_HOST_LEN 46		/* an IPv6 address's text and a NUL
					 * (INET6_ADDRSTRLEN) */

/* What --ledger-summary needs of one record. */
struct lab3_ledger_entry {
	char time[LAB3_TIME_LEN];
	char peer[256];
	char host[LAB3_HOST_LEN];	/* the peer's address without its
					 * port; "": not an IP address */
	char id[LAB3_ID_MAX + 1];	/* "": none */
	int verdict;			/* enum lab3_verdict, or -1: none */
	int key_sent;
	char saved_as[1024];		/* "": none */
};

/* Read the LEN bytes at LINE (no newline) as one record, exactly in the
 * form lab3_ledger_format() writes, into *ENTRY.  Returns 0, or -1 for
 * anything else: a line cut short, another program's JSON, garbage. */
int lab3_ledger_parse(const char *line, size_t len,
		      struct lab3_ledger_entry *entry);

/* One ID's completion, for --ledger-summary. */
struct lab3_ledger_id {
	char id[LAB3_ID_MAX + 1];
	char first_success[LAB3_TIME_LEN];	/* "": never */
	unsigned long attempts;			/* records with this ID */
};

/* An address that a key went to, and the ID it went to, for
 * --ledger-summary's flags. */
struct lab3_ledger_keyed {
	char host[LAB3_HOST_LEN];
	char id[LAB3_ID_MAX + 1];
};

/* A whole ledger, summed up. */
struct lab3_ledger_summary {
	struct lab3_ledger_id *ids;	/* sorted by ID (strcmp) */
	size_t nids;
	size_t capacity;
	struct lab3_ledger_keyed *keyed;	/* each pair of a success
						 * once, sorted by address,
						 * then ID */
	size_t nkeyed;
	size_t keyed_capacity;
	unsigned long records;		/* lines read as records */
	unsigned long without_id;	/* records whose id is null */
	unsigned long unreadable;	/* lines skipped */
};

/* Read the ledger IN to its end into *SUM (zeroed first).  A success is
 * a record with verdict good and key_sent true; its ID's first_success is
 * the earliest such record's time.  Lines that are not records are
 * counted in unreadable, not refused.  Returns 0, or a negative errno
 * when IN cannot be read or memory runs out; free SUM either way. */
int lab3_ledger_summarize(FILE *in, struct lab3_ledger_summary *sum);
void lab3_ledger_summary_free(struct lab3_ledger_summary *sum);

/* Write SUM's flags to OUT, one line each: first every address that got
 * keys for more than one ID,
 *   flag: address 198.18.0.2 got keys for 2 IDs: "alice" "bob"
 * then every ID that got keys at more than one address,
 *   flag: ID "alice" got keys at 2 addresses: 198.18.0.2 198.18.0.3
 * each in byte order.  IDs are written as JSON strings (printable ASCII:
 * only " and \ are escaped); a line holds no tab.  A hint for the
 * instructor (a shared lab machine, a NAT, a student who moved), not a
 * verdict.  Returns the number of lines written, or a negative errno
 * (-ENOMEM). */
int lab3_ledger_write_flags(const struct lab3_ledger_summary *sum,
			    FILE *out);

#endif /* LAB3_LEDGER_H */
