/* SPDX-License-Identifier: MIT */
/*
 * store.c - what a receiver session keeps: the file it saves with -o
 * (built under a temporary name, synced, then linked as DIR/ID/NAME) and
 * its record in the grading ledger (-l).
 */
#define _GNU_SOURCE	/* renameat2() */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "ledger.h"
#include "secret.h"
#include "session.h"

#define STORE_RESERVE (1u << 20)	/* bytes kept free on -o's disk */
#define LEDGER_RESERVE (STORE_RESERVE / 2)	/* and of those, kept for
						 * records with a key */

/* write_all: write LEN bytes at BUF to FD, or return -1. */
static int write_all(int fd, const uint8_t *buf, uint64_t len)
{
	while (len > 0) {
		size_t piece = len > (1u << 30) ? (1u << 30) : (size_t)len;
		ssize_t n = write(fd, buf, piece);

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			errno = EIO;	/* a short write without a reason */
		if (n <= 0)
			return -1;
		buf += n;
		len -= (uint64_t)n;
	}
	return 0;
}

/* ---- Room for the files ---- */

static uint64_t counted;	/* count_used()'s sum, for add_file() */

/* add_file: nftw()'s callback for count_used(): a regular file's size
 * counts. */
static int add_file(const char *path, const struct stat *st, int type,
		    struct FTW *ftw)
{
	(void)path;
	(void)ftw;
	if (type == FTW_F && S_ISREG(st->st_mode))
		counted += (uint64_t)st->st_size;
	return 0;
}

/* count_used: the bytes of the regular files under DIR (not following
 * symbolic links), for --store-max at start.  0, or -1 with errno. */
int count_used(const char *dir, uint64_t *bytes)
{
	counted = 0;
	if (nftw(dir, add_file, 16, FTW_PHYS) != 0)
		return -1;
	*bytes = counted;
	return 0;
}

/* fits: whether LENGTH more bytes fit under MAX with TAKEN taken. */
static int fits(uint64_t length, uint64_t taken, uint64_t max)
{
	return taken <= max && length <= max - taken;
}

/* check_room: with -o, refuse (RESOURCES) a file that would not fit:
 *   - under its address's --address-max (quota.c check_address());
 *   - in the free space of its disk, less what sessions in progress have
 *     yet to write, less STORE_RESERVE, kept for the ledger's records
 *     (and the logs) that share it: a full disk must not stop every key;
 *   - under --store-max, with the files there and those promised (the
 *     running total: files the instructor removes are counted again at
 *     a reload, never here, so that a refusal costs what an admission
 *     does).
 * A file that fits is promised (s->pending) until it is written, saved
 * or dropped.  0 when it fits, or when the space cannot be told (the
 * writes will say); -1 with s->error saying why not. */
static int check_room(struct session *s)
{
	struct store_use *use = s->store;
	uint64_t length = s->rx.length, avail, taken;
	struct statvfs st;

	if (check_address(s) != 0)
		return -1;
	taken = use->used + use->pending;
	if (s->opt->store_max != 0 && !fits(length, taken, s->opt->store_max)) {
		snprintf(s->error, sizeof(s->error), "no room to save a file "
			"of %llu bytes: %llu of the receiver's --store-max %llu "
			"are taken", (unsigned long long)length,
			(unsigned long long)taken,
			(unsigned long long)s->opt->store_max);
		return -1;
	}
	if (statvfs(s->opt->out_dir, &st) == 0) {
		avail = (uint64_t)st.f_bavail * st.f_frsize;
		avail = avail > use->pending ? avail - use->pending : 0;
		if (avail < STORE_RESERVE || length > avail - STORE_RESERVE) {
			snprintf(s->error, sizeof(s->error), "no room to save "
				"a file of %llu bytes: %llu bytes free, of which "
				"the receiver keeps %u",
				(unsigned long long)length,
				(unsigned long long)avail, STORE_RESERVE);
			return -1;
		}
	}
	s->pending = length;
	use->pending += length;
	return 0;
}

/* append_to_file: write LEN bytes at BUF to the end of the temporary
 * file; they are no longer promised but used.  0, or -1 with errno. */
int append_to_file(struct session *s, const uint8_t *buf, uint64_t len)
{
	if (write_all(s->tmp_fd, buf, len) != 0)
		return -1;
	s->pending -= len;
	s->store->pending -= len;
	s->store->used += len;
	return 0;
}

/* unpromise: S's file will get no more bytes: what it promised and did
 * not write is free again. */
static void unpromise(struct session *s)
{
	s->store->pending -= s->pending;
	s->pending = 0;
}

/* unlink_tmp_file: remove the temporary file, whose bytes (all of the
 * file S stored) are free again. */
static void unlink_tmp_file(struct session *s)
{
	if (unlink(s->tmp_path) == 0)
		s->store->used -= s->bytes_stored;
}

/* open_tmp_file: with -o, create the hidden temporary file the chunks are
 * appended to; it gets its final name only after a good verdict.  0, or
 * -1 with s->error saying why. */
int open_tmp_file(struct session *s)
{
	const char *dir = s->opt->out_dir;

	if (snprintf(s->tmp_path, sizeof(s->tmp_path),
		     "%s/.lab3-partial-XXXXXX", dir) >=
	    (int)sizeof(s->tmp_path)) {
		snprintf(s->error, sizeof(s->error), "%.120s: path too long",
			 dir);
		return -1;
	}
	s->tmp_fd = mkstemp(s->tmp_path);
	if (s->tmp_fd < 0) {
		snprintf(s->error, sizeof(s->error), "cannot save into "
			 "%.120s: %s", dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* sync_file: before the verdict, make sure every byte of the verified
 * temporary file is on disk, so that a failing disk is an ERROR instead of
 * a good verdict.  Its CPU counts as the session's fsync. */
int sync_file(struct session *s)
{
	long long t = cpu_now();
	int err = fchmod(s->tmp_fd, 0644) == 0 && fsync(s->tmp_fd) == 0 ?
		  0 : errno;

	cpu_add(&s->cpu.fsync, t);
	if (err == 0)
		return 0;
	snprintf(s->error, sizeof(s->error), "cannot save %.120s: %s",
		 s->tmp_path, strerror(err));
	return -1;
}

/* sync_parent: lab3_fsync_parent() of PATH, for S's file: its CPU counts
 * as the session's fsync. */
static int sync_parent(struct session *s, const char *path, char *why,
		       size_t why_len)
{
	long long t = cpu_now();
	int ret = lab3_fsync_parent(path, why, why_len);

	cpu_add(&s->cpu.fsync, t);
	return ret;
}

/* id_dir_name: the directory of DIR that the files of the student ID go
 * into: ID itself, but for any byte other than a letter, a digit, '-',
 * '_' or a '.' that does not begin it, written as %XX (so "a/b" is
 * "a%2Fb" and ".." is "%2E."): never a path, never hidden, and two IDs
 * never share one. */
static void id_dir_name(const char *id, char out[3 * LAB3_ID_MAX + 1])
{
	for (size_t i = 0; id[i] != '\0'; i++) {
		unsigned char c = (unsigned char)id[i];

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		    (c == '.' && i > 0))
			*out++ = (char)c;
		else
			out += sprintf(out, "%%%02X", c);
	}
	*out = '\0';
}

/* rename_new: give the temporary file the name FINAL (of SIZE bytes),
 * never replacing a file: if FINAL is taken, by an earlier attempt of
 * the same ID and name, the first of FINAL.2, FINAL.3, ... that is free,
 * named in FINAL and saved_as too.  0, or an errno. */
static int rename_new(struct session *s, char *final, size_t size)
{
	size_t len = strlen(final), saved_len = strlen(s->saved_as);

	for (unsigned n = 2; n < 10000; n++) {
		if (renameat2(AT_FDCWD, s->tmp_path, AT_FDCWD, final,
			      RENAME_NOREPLACE) == 0)
			return 0;
		/* (A file system without RENAME_NOREPLACE: NFS, say.) */
		if ((errno == EINVAL || errno == ENOSYS) &&
		    link(s->tmp_path, final) == 0) {
			unlink(s->tmp_path);
			return 0;
		}
		if (errno != EEXIST)
			return errno;
		if (snprintf(final + len, size - len, ".%u", n) >=
		    (int)(size - len) ||
		    snprintf(s->saved_as + saved_len,
			     sizeof(s->saved_as) - saved_len, ".%u", n) >=
		    (int)(sizeof(s->saved_as) - saved_len))
			return ENAMETOOLONG;
	}
	return EEXIST;
}

/* drop_file: remove the kept file SAVED_AS, of BYTES bytes, to make way
 * for S's: it no longer counts, and S's ledger record lists it as
 * dropped.  One that cannot be removed stays (and goes next time). */
static void drop_file(struct session *s, const char *saved_as,
		      uint64_t bytes)
{
	char path[PATH_MAX];
	size_t n = strlen(saved_as);

	if (s->dropped_len + n + 1 > sizeof(s->dropped) ||
	    snprintf(path, sizeof(path), "%s/%s", s->opt->out_dir,
		     saved_as) >= (int)sizeof(path))
		return;		/* (it stays, and goes next time) */
	if (unlink(path) != 0) {
		if (errno == ENOENT)	/* removed already: it counts no more */
			forget_kept(s->store, saved_as);
		return;
	}
	memcpy(s->dropped + s->dropped_len, saved_as, n + 1);
	s->dropped_len += n + 1;
	s->store->used -= bytes < s->store->used ? bytes : s->store->used;
	forget_kept(s->store, saved_as);
}

/* prune_id: with quotas, S's saved file counts for its ID and address;
 * remove those of the ID's earlier files that make way for it (quota.c
 * drops_for(): --keep, --id-max, oldest first), each named in the
 * session's ledger record: one student's attempts never fill the store,
 * and the newest good file always stays. */
static void prune_id(struct session *s)
{
	char source[LAB3_SOURCE_LEN];
	struct kept_file *drops;
	size_t n;

	if (!quotas_on(s->opt))
		return;
	peer_source(s->peer, source, sizeof(source));
	if (add_kept(s->store, source, s->id, s->saved_as,
		     s->rx.length) != 0)
		fprintf(stderr, "receiver: session %u: out of memory: %s does "
			"not count against its quotas\n", s->number,
			s->saved_as);
	forget_gone(s->store, s->opt, s->id, source);
	n = drops_for(s->store, s->opt, s->id, source, &drops);

	for (size_t i = 0; i < n; i++)
		drop_file(s, drops[i].saved_as, drops[i].bytes);
	free(drops);
}

/* keep_file: once the session has earned its key (before it goes: see
 * send_key()), give the verified, synced temporary file its final name,
 * ID/NAME in the -o directory: one directory per student (id_dir_name()),
 * so that two students' files of the same name never meet; NAME is the
 * sender's base name, or sha256-HASHPREFIX without one, and never
 * replaces an earlier file (rename_new()).  Rename it there and fsync the directories.  A
 * session that fails before its ID is accepted keeps nothing. */
int keep_file(struct session *s)
{
	char final[PATH_MAX], id_dir[3 * LAB3_ID_MAX + 1];
	char hex[2 * LAB3_SHA256_LEN + 1], why[LAB3_ERR_LEN];
	int fd = s->tmp_fd, err;

	s->tmp_fd = -1;
	unpromise(s);
	id_dir_name(s->id, id_dir);
	lab3_hex(s->sha256, LAB3_SHA256_LEN, hex);
	snprintf(s->saved_as, sizeof(s->saved_as), s->name[0] ? "%s/%s" :
		 "%s/sha256-%.16s", id_dir, s->name[0] ? s->name : hex);
	if (snprintf(final, sizeof(final), "%s/%s", s->opt->out_dir,
		     s->saved_as) >= (int)sizeof(final)) {
		err = ENAMETOOLONG;
		goto out_close;
	}
	if (close(fd) != 0) {
		err = errno;
		goto out_unlink;
	}
	/* The student's directory, made durable before the file goes in. */
	*strrchr(final, '/') = '\0';
	if (mkdir(final, 0755) != 0 && errno != EEXIST) {
		err = errno;
		goto out_unlink;
	}
	err = -sync_parent(s, final, why, sizeof(why));
	if (err != 0)
		goto out_unlink;
	final[strlen(final)] = '/';
	err = rename_new(s, final, sizeof(final));
	if (err != 0)
		goto out_unlink;
	/* Saved and verified: a directory that cannot be synced now is the
	 * disk's failing, said on stderr, not the session's. */
	if (sync_parent(s, final, why, sizeof(why)) != 0)
		fprintf(stderr, "receiver: session %u: saved %s, but %s: it "
			"may not survive a crash\n", s->number, s->saved_as,
			why);
	prune_id(s);
	return 0;

out_close:
	close(fd);
out_unlink:
	unlink_tmp_file(s);
	snprintf(s->error, sizeof(s->error), "cannot save %.120s: %s",
		 s->saved_as, strerror(err));
	s->saved_as[0] = '\0';
	return -1;
}

/* drop_tmp_file: the session is over and its file was not saved: drop
 * the temporary file, or with --keep-failed keep it as
 * DIR/.failed/session-N, what arrived for the grader to compare with what
 * was sent (a later run's session N replaces it). */
void drop_tmp_file(struct session *s)
{
	char kept[PATH_MAX];
	int n;

	unpromise(s);
	if (s->tmp_fd < 0)
		return;
	close(s->tmp_fd);
	s->tmp_fd = -1;
	n = snprintf(kept, sizeof(kept), "%s/.failed", s->opt->out_dir);
	if (s->opt->keep_failed && n + 32 < (int)sizeof(kept) &&
	    (mkdir(kept, 0755) == 0 || errno == EEXIST)) {
		snprintf(kept + n, sizeof(kept) - (size_t)n, "/session-%u",
			 s->number);
		if (rename(s->tmp_path, kept) == 0) {
			snprintf(s->kept_as, sizeof(s->kept_as),
				 ".failed/session-%u", s->number);
			return;	/* its bytes stay used */
		}
	}
	unlink_tmp_file(s);
}

/* ---- The grading ledger (-l) ---- */

/* write_summary: the record that sums up E's sessions not recorded one
 * by one, to the ledger on LEDGER_FD.  0, or a negative errno. */
static int write_summary(struct ledger_source *e, int ledger_fd)
{
	char why[LAB3_ERR_LEN], since[LAB3_TIME_LEN];
	struct tm tm;
	struct lab3_ledger_record rec = {
		.time = time(NULL),
		.peer = e->source,
		.verdict = -1,
		.error = why,
	};

	if (gmtime_r(&e->since, &tm) == NULL ||
	    strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		since[0] = '\0';
	snprintf(why, sizeof(why), "%u session%s from this address ended "
		 "without a key since %s (recorded together); the last: "
		 "%.120s", e->unrecorded, e->unrecorded == 1 ? "" : "s", since,
		 e->last_error);
	e->unrecorded = 0;
	/* (It is the source's record for this interval: the next session
	 * without a verdict is summed up with those after it.) */
	e->recorded = lab3_now_ms();
	return lab3_ledger_append(ledger_fd, &rec);
}

/* stale: whether E holds nothing that a limit still needs: no session
 * counted and not summed up, its hour over, its last record without a
 * verdict an interval ago.  Such an entry may be another source's. */
static int stale(const struct ledger_source *e, long long now)
{
	return e->unrecorded == 0 && now - e->hour_start >= 3600 * 1000LL &&
	       (e->recorded == 0 ||
		now - e->recorded >= UNVERDICTED_INTERVAL_S * 1000LL);
}

/* ledger_source: S's source in LS, added if new (in a stale entry's
 * place when LS is full), its hour begun again if it is over.  When LS
 * is full of sources that a limit still needs, a new one shares the
 * last entry, "(other addresses)", and its limits: sources made up by
 * the hundred cannot begin their limits again. */
static struct ledger_source *ledger_source(struct ledger_sources *ls,
					   const struct session *s)
{
	char source[LAB3_SOURCE_LEN];
	struct ledger_source *e = NULL;
	long long now = lab3_now_ms();

	peer_source(s->peer, source, sizeof(source));
	for (int i = 0; i < ls->n && e == NULL; i++)
		if (strcmp(ls->sources[i].source, source) == 0)
			e = &ls->sources[i];
	for (int i = 0; i < ls->n && e == NULL; i++)
		if (i < LEDGER_SOURCES && stale(&ls->sources[i], now))
			e = &ls->sources[i];
	if (e == NULL && ls->n < LEDGER_SOURCES)
		e = &ls->sources[ls->n++];
	if (e == NULL) {
		e = &ls->sources[LEDGER_SOURCES];	/* the shared one */
		if (ls->n == LEDGER_SOURCES) {
			ls->n++;
			*e = (struct ledger_source){ .hour_start = now };
			snprintf(e->source, sizeof(e->source),
				 "(other addresses)");
		}
	} else if (strcmp(e->source, source) != 0) {
		*e = (struct ledger_source){ .hour_start = now };
		snprintf(e->source, sizeof(e->source), "%s", source);
	}
	if (now - e->hour_start >= 3600 * 1000LL) {
		e->hour_start = now;
		e->hour_records = e->hour_keys = 0;
	}
	return e;
}

/* ledger_pair: S's source and ID in LS, added if new (in the place of
 * one whose hour is over, if LS is full), its hour begun again if it
 * is over; NULL when LS is full of pairs that still count. */
static struct ledger_pair *ledger_pair(struct ledger_sources *ls,
				       const struct session *s)
{
	char source[LAB3_SOURCE_LEN];
	struct ledger_pair *e = NULL, *over = NULL;
	long long now = lab3_now_ms();

	peer_source(s->peer, source, sizeof(source));
	for (int i = 0; i < ls->npairs && e == NULL; i++) {
		struct ledger_pair *p = &ls->pairs[i];

		if (strcmp(p->id, s->id) == 0 &&
		    strcmp(p->source, source) == 0)
			e = p;
		else if (over == NULL && now - p->hour_start >= 3600 * 1000LL)
			over = p;
	}
	if (e != NULL && now - e->hour_start < 3600 * 1000LL)
		return e;
	if (e == NULL)	/* a new pair: a free place, or one whose hour is over */
		e = ls->npairs < LEDGER_PAIRS ? &ls->pairs[ls->npairs++] : over;
	if (e != NULL) {	/* (or its own hour over: a new hour) */
		*e = (struct ledger_pair){ .hour_start = now };
		snprintf(e->source, sizeof(e->source), "%s", source);
		snprintf(e->id, sizeof(e->id), "%s", s->id);
	}
	return e;
}

/* key_admitted: with -l, just before S's key is recorded: whether the
 * ledger takes another keyed record of S's ID from S's source: fewer
 * than PAIR_KEYS_PER_HOUR this hour.  0, or -1 with s->error saying when
 * it takes more. */
int key_admitted(struct session *s)
{
	struct ledger_pair *e;
	long long left_ms;

	if (s->sources == NULL || s->ledger_fd < 0)
		return 0;
	e = ledger_pair(s->sources, s);
	if (e == NULL || e->hour_keys < PAIR_KEYS_PER_HOUR)
		return 0;
	left_ms = e->hour_start + 3600 * 1000LL - lab3_now_ms();
	/* (Without the ID, which the sender knows: the reason of an ERROR
	 * holds LAB3_REASON_MAX bytes, and an ID up to 63.) */
	snprintf(s->error, sizeof(s->error), "your ID has had %u keys from "
		 "your address this hour, its limit: the ledger takes more in "
		 "%lld min", e->hour_keys, (left_ms + 59999) / 60000);
	return -1;
}

/* ledger_room: whether the ledger takes a keyed record from S's source:
 * fewer than SOURCE_KEYS_PER_HOUR this hour.  (Sessions without a key
 * never refuse a file: past their own limit they are summed up.)  0, or
 * -1 with s->error saying when it takes more. */
static int ledger_room(struct session *s)
{
	struct ledger_source *e = ledger_source(s->sources, s);
	long long left_ms = e->hour_start + 3600 * 1000LL - lab3_now_ms();

	if (e->hour_keys < SOURCE_KEYS_PER_HOUR)
		return 0;
	snprintf(s->error, sizeof(s->error), "the ledger has taken %u "
		 "records of keys from your address this hour, its limit: it "
		 "takes more in %lld min", e->hour_keys,
		 (left_ms + 59999) / 60000);
	return -1;
}

/* next_summary: lab3_now_ms() at which record_summaries() has a source
 * to sum up, or 0 when none (the serving loop wakes for it). */
long long next_summary(const struct ledger_sources *ls)
{
	long long next = 0;

	for (int i = 0; i < ls->n; i++) {
		const struct ledger_source *e = &ls->sources[i];
		long long due = e->first_ms + UNVERDICTED_INTERVAL_S * 1000LL;

		if (e->unrecorded > 0 && (next == 0 || due < next))
			next = due;
	}
	return next;
}

/* record_session: append the session's record to the ledger, KEY_SENT
 * saying whether its key is released; it counts against its source's
 * hour.  A session has one record: written just before its key goes
 * out, or else when it ends (record_end()).  Returns 0, or -1 with ERR
 * saying why. */
int record_session(struct session *s, int key_sent, char *err,
		   size_t err_len)
{
	struct lab3_ledger_record rec = {
		.time = time(NULL),
		.peer = s->peer,
		.id = s->id,
		.has_file_info = s->has_file_info,
		.file = s->name,
		.bytes = s->rx.length,
		.sha256 = s->sha256,
		.verdict = s->has_verdict ? s->rx.verdict : -1,
		.key_sent = key_sent,
		.error = s->error,
		.saved_as = s->saved_as,
		.dropped = s->dropped,
		.dropped_len = s->dropped_len,
	};
	int ret;

	s->recorded = 1;
	ret = lab3_ledger_append(s->ledger_fd, &rec);
	if (ret != 0) {
		snprintf(err, err_len, "cannot write ledger %.120s: %s",
			 s->opt->ledger, strerror(-ret));
		return -1;
	}
	if (s->sources != NULL) {
		struct ledger_source *e = ledger_source(s->sources, s);
		struct ledger_pair *pair = key_sent ?
			ledger_pair(s->sources, s) : NULL;

		e->hour_records++;
		e->hour_keys += key_sent != 0;
		if (pair != NULL)
			pair->hour_keys++;
	}
	return 0;
}

/* ledger_low: whether the ledger's disk has less than LEDGER_RESERVE
 * free, which only records with a key may take. */
static int ledger_low(int ledger_fd)
{
	struct statvfs st;

	return fstatvfs(ledger_fd, &st) == 0 &&
	       (uint64_t)st.f_bavail * st.f_frsize < LEDGER_RESERVE;
}

/* record_end: the ledger record of S, which ended without its key (see
 * struct ledger_sources): a record of its own, or counted, to be summed
 * up in its source's next summing-up (record_summaries()).  0, or -1
 * with ERR saying why. */
int record_end(struct session *s, char *err, size_t err_len)
{
	struct ledger_source *e = ledger_source(s->sources, s);
	long long now = lab3_now_ms();

	if ((!s->has_verdict && e->recorded != 0 &&
	     now - e->recorded < UNVERDICTED_INTERVAL_S * 1000LL) ||
	    e->hour_records - e->hour_keys >= SOURCE_RECORDS_PER_HOUR ||
	    ledger_low(s->ledger_fd)) {
		if (e->unrecorded++ == 0) {
			e->since = time(NULL);
			e->first_ms = now;
		}
		snprintf(e->last_error, sizeof(e->last_error), "%s",
			 s->error);
		s->recorded = 1;
		return 0;
	}
	if (!s->has_verdict)
		e->recorded = now;
	return record_session(s, 0, err, err_len);
}

/* record_summaries: sum up in one record each source's sessions not
 * recorded one by one: those whose first came an interval ago (the
 * serving loop asks at each turn), or with ALL, every one (at the end
 * of serving).  0, or -1 with ERR saying why. */
int record_summaries(struct ledger_sources *ls, int ledger_fd, int all,
		     char *err, size_t err_len)
{
	long long now = lab3_now_ms();
	int ret = 0;

	for (int i = 0; i < ls->n && ret == 0; i++) {
		struct ledger_source *e = &ls->sources[i];

		if (e->unrecorded == 0 || (!all &&
		    now - e->first_ms < UNVERDICTED_INTERVAL_S * 1000LL))
			continue;
		if (!all && ledger_low(ledger_fd))
			break;
		ret = write_summary(e, ledger_fd);
	}
	if (ret != 0)
		snprintf(err, err_len, "cannot write the ledger: %s",
			 strerror(-ret));
	return ret != 0 ? -1 : 0;
}

/* admit_file: at FILE_INFO, before a byte moves: with -l, refuse a file
 * from a source whose records the ledger takes no more this hour
 * (ledger_room()); with -o, one that would not fit (check_room()).  0,
 * or -1 with s->error saying which limit and how much is left. */
int admit_file(struct session *s)
{
	if (s->ledger_fd >= 0 && ledger_room(s) != 0)
		return -1;
	if (s->opt->out_dir != NULL && check_room(s) != 0)
		return -1;
	return 0;
}
