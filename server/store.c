/* SPDX-License-Identifier: MIT */
/*
 * store.c - what a receiver session keeps: the file it saves with -o
 * (built under a temporary name, synced, then linked as DIR/ID/NAME) and
 * its record in the grading ledger (-l).
 */
#define _GNU_SOURCE	/* renameat2() */
#include <dirent.h>
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
#define KEPT_MIN_CHARGE (64u << 10)	/* a kept file counts at least this
					 * against --address-max */

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

/* ---- What each source keeps (--address-max) ---- */

/* fits: whether LENGTH more bytes fit under MAX with TAKEN taken. */
static int fits(uint64_t length, uint64_t taken, uint64_t max)
{
	return taken <= max && length <= max - taken;
}

/* add_kept: remember that SAVED_AS, of BYTES bytes, came from SOURCE (a
 * record of the same file before it is replaced).  0, or -ENOMEM. */
static int add_kept(struct store_use *use, const char *source,
		    const char *saved_as, uint64_t bytes)
{
	struct kept_file *k = NULL;

	for (size_t i = 0; i < use->nkept && k == NULL; i++)
		if (strcmp(use->kept[i].saved_as, saved_as) == 0)
			k = &use->kept[i];
	if (k == NULL) {
		if (use->nkept == use->kept_cap) {
			size_t cap = use->kept_cap ? 2 * use->kept_cap : 64;
			struct kept_file *more = realloc(use->kept,
							 cap * sizeof(*more));

			if (more == NULL)
				return -ENOMEM;
			use->kept = more;
			use->kept_cap = cap;
		}
		k = &use->kept[use->nkept++];
	}
	snprintf(k->source, sizeof(k->source), "%s", source);
	snprintf(k->saved_as, sizeof(k->saved_as), "%.*s",
		 (int)sizeof(k->saved_as) - 1, saved_as);
	k->bytes = bytes;
	return 0;
}

/* forget_kept: the file SAVED_AS is gone. */
static void forget_kept(struct store_use *use, const char *saved_as)
{
	for (size_t i = 0; i < use->nkept; i++) {
		if (strcmp(use->kept[i].saved_as, saved_as) == 0) {
			use->kept[i] = use->kept[--use->nkept];
			return;
		}
	}
}

/* file_size: the size of the regular file SAVED_AS under DIR, or -1
 * when there is none (the instructor removed it, say). */
static long long file_size(const char *dir, const char *saved_as)
{
	char path[PATH_MAX];
	struct stat st;

	if (snprintf(path, sizeof(path), "%s/%s", dir, saved_as) >=
	    (int)sizeof(path) || lstat(path, &st) != 0 ||
	    !S_ISREG(st.st_mode))
		return -1;
	return (long long)st.st_size;
}

/* address_share: --address-max N% in bytes: N% of --store-max, or
 * without one of the size of -o's disk, so that the class's share scales
 * with its store.  0, or -1 with ERR saying why. */
int address_share(struct options *opt, char *err, size_t err_len)
{
	uint64_t of = opt->store_max;
	struct statvfs st;

	if (opt->address_pct == 0)
		return 0;
	if (of == 0) {
		if (statvfs(opt->out_dir, &st) != 0) {
			snprintf(err, err_len, "--address-max %d%%: cannot "
				 "tell the size of %.120s: %s",
				 opt->address_pct, opt->out_dir,
				 strerror(errno));
			return -1;
		}
		of = (uint64_t)st.f_blocks * st.f_frsize;
	}
	opt->address_max = of / 100 * (uint64_t)opt->address_pct +
			   of % 100 * (uint64_t)opt->address_pct / 100;
	if (opt->address_max == 0)
		opt->address_max = 1;	/* (0 would mean no limit) */
	return 0;
}

/* load_kept: with --address-max or --keep, and a ledger, learn from its
 * records which of the files under -o came from which source, so that a
 * restart forgets nothing of what each holds, nor whose files --keep may
 * drop.  0, or -1 with ERR saying why. */
int load_kept(struct store_use *use, const struct options *opt, char *err,
	      size_t err_len)
{
	struct lab3_ledger_entry e;
	char source[LAB3_SOURCE_LEN];
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	long long size;
	FILE *in;
	int ret = 0;

	if ((opt->address_max == 0 && opt->address_pct == 0 &&
	     opt->keep < 0) || opt->ledger == NULL)
		return 0;
	in = fopen(opt->ledger, "r");
	if (in == NULL && errno == ENOENT)
		return 0;	/* a new ledger: nothing kept yet */
	if (in == NULL) {
		snprintf(err, err_len, "cannot read ledger %.120s: %s",
			 opt->ledger, strerror(errno));
		return -1;
	}
	while (ret == 0 && (len = getline(&line, &cap, in)) > 0) {
		if (line[len - 1] == '\n')
			len--;
		if (lab3_ledger_parse(line, (size_t)len, &e) != 0 ||
		    !e.key_sent || e.saved_as[0] == '\0' ||
		    strlen(e.saved_as) >= sizeof(use->kept->saved_as) ||
		    (size = file_size(opt->out_dir, e.saved_as)) < 0)
			continue;
		peer_source(e.peer, source, sizeof(source));
		ret = add_kept(use, source, e.saved_as, (uint64_t)size);
	}
	if (ret != 0 || ferror(in))
		snprintf(err, err_len, "cannot read ledger %.120s: %s",
			 opt->ledger, strerror(ret != 0 ? -ret : errno));
	free(line);
	fclose(in);
	return ret != 0 ? -1 : 0;
}

/* free_kept: forget what load_kept() and the sessions learned. */
void free_kept(struct store_use *use)
{
	free(use->kept);
	use->kept = NULL;
	use->nkept = use->kept_cap = 0;
}

/* charge: what a kept file of BYTES bytes counts against its source: at
 * least KEPT_MIN_CHARGE, so that a source of tiny files cannot grow the
 * table (and each check's walk of it) without bound. */
static uint64_t charge(uint64_t bytes)
{
	return bytes > KEPT_MIN_CHARGE ? bytes : KEPT_MIN_CHARGE;
}

/* held_by: the bytes that SOURCE holds under -o: its files (charge()),
 * and what its sessions in progress have announced (promised, or stored
 * in their temporary files).  With RECHECK, a file that is gone (the
 * instructor removed it: that is how a quota is given back) is
 * forgotten first; without, the table is taken as it is (no system
 * call: the serving loop runs this at every FILE_INFO). */
static uint64_t held_by(struct store_use *use, const struct options *opt,
			const char *source, int recheck)
{
	char other[LAB3_SOURCE_LEN];
	uint64_t held = 0;

	for (size_t i = 0; i < use->nkept; i++) {
		if (strcmp(use->kept[i].source, source) != 0)
			continue;
		if (recheck &&
		    file_size(opt->out_dir, use->kept[i].saved_as) < 0) {
			use->kept[i--] = use->kept[--use->nkept];
			continue;
		}
		held += charge(use->kept[i].bytes);
	}
	for (int i = 0; i < *use->nsessions; i++) {
		const struct session *s = use->sessions[i];

		peer_source(s->peer, other, sizeof(other));
		if (strcmp(other, source) == 0)
			held += s->pending +
				(s->tmp_fd >= 0 ? s->bytes_stored : 0);
	}
	return held;
}

/* check_address: with --address-max, refuse a file that would take
 * S's source past it: what the address keeps and has announced (looked
 * at again, file by file, before a refusal).  0 when it fits; -1 with
 * s->error saying how much is left. */
static int check_address(struct session *s)
{
	uint64_t max = s->opt->address_max, length = s->rx.length, held;
	char source[LAB3_SOURCE_LEN];

	if (max == 0)
		return 0;
	peer_source(s->peer, source, sizeof(source));
	held = held_by(s->store, s->opt, source, 0);
	if (!fits(length, held, max))
		held = held_by(s->store, s->opt, source, 1);
	if (fits(length, held, max))
		return 0;
	snprintf(s->error, sizeof(s->error), "no room for %llu bytes: your "
		 "address has %llu left of its --address-max %llu",
		 (unsigned long long)length,
		 (unsigned long long)(held < max ? max - held : 0),
		 (unsigned long long)max);
	return -1;
}

/* check_room: with -o, refuse (RESOURCES) a file that would not fit:
 *   - in the free space of its disk, less what sessions in progress have
 *     yet to write, less STORE_RESERVE, kept for the ledger's records
 *     (and the logs) that share it: a full disk must not stop every key;
 *   - under --store-max, with the files there and those promised (the
 *     files are added up again before a refusal: the instructor may
 *     have removed some).
 * A file that fits is promised (s->pending) until it is written, saved
 * or dropped.  0 when it fits, or when the space cannot be told (the
 * writes will say); -1 with s->error saying why not. */
int check_room(struct session *s)
{
	struct store_use *use = s->store;
	uint64_t length = s->rx.length, avail, taken;
	struct statvfs st;

	if (check_address(s) != 0)
		return -1;
	taken = use->used + use->pending;
	if (s->opt->store_max != 0 && !fits(length, taken, s->opt->store_max) &&
	    count_used(s->opt->out_dir, &use->used) == 0)
		taken = use->used + use->pending;	/* files removed? */
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
 * a good verdict. */
int sync_file(struct session *s)
{
	if (fchmod(s->tmp_fd, 0644) == 0 && fsync(s->tmp_fd) == 0)
		return 0;
	snprintf(s->error, sizeof(s->error), "cannot save %.120s: %s",
		 s->tmp_path, strerror(errno));
	return -1;
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

/* A file of an ID's directory, for prune_id(). */
struct id_file {
	char name[LAB3_NAME_MAX + 8];
	struct timespec mtime;
	uint64_t bytes;
};

/* newer_first: qsort()'s order for prune_id(): the newest first, and of
 * two as new, the one whose name sorts last (NAME.2 after NAME). */
static int newer_first(const void *pa, const void *pb)
{
	const struct id_file *a = pa, *b = pb;

	if (a->mtime.tv_sec != b->mtime.tv_sec)
		return a->mtime.tv_sec < b->mtime.tv_sec ? 1 : -1;
	if (a->mtime.tv_nsec != b->mtime.tv_nsec)
		return a->mtime.tv_nsec < b->mtime.tv_nsec ? 1 : -1;
	return strcmp(b->name, a->name);
}

/* drop_file: prune_id()'s removal of NAME, of BYTES bytes, from the
 * directory ID_DIR (open on DIR_FD): it no longer counts, and the ledger
 * record of S lists it as dropped. */
static void drop_file(struct session *s, int dir_fd, const char *id_dir,
		      const char *name, uint64_t bytes)
{
	char saved_as[sizeof(s->saved_as)];
	int n = snprintf(saved_as, sizeof(saved_as), "%s/%s", id_dir, name);

	if (n >= (int)sizeof(saved_as) ||
	    s->dropped_len + (size_t)n + 1 > sizeof(s->dropped) ||
	    unlinkat(dir_fd, name, 0) != 0)
		return;		/* (it stays, and is dropped next time) */
	memcpy(s->dropped + s->dropped_len, saved_as, (size_t)n + 1);
	s->dropped_len += (size_t)n + 1;
	s->store->used -= bytes < s->store->used ? bytes : s->store->used;
	forget_kept(s->store, saved_as);
}

/* source_of: the source that saved the file SAVED_AS, or NULL when the
 * receiver does not know it (kept_file). */
static const char *source_of(const struct store_use *use,
			     const char *saved_as)
{
	for (size_t i = 0; i < use->nkept; i++)
		if (strcmp(use->kept[i].saved_as, saved_as) == 0)
			return use->kept[i].source;
	return NULL;
}

/* prune_id: with --keep N, after S saved a file for its ID from SOURCE,
 * keep the newest N + 1 of the ID's files from that source (the one just
 * saved among them) and remove the rest, each named in the session's
 * ledger record: one student's attempts never fill the store.  Only
 * files from the same source go: IDs are what senders say they are, and
 * a sender elsewhere that claims another's ID must not remove that
 * student's files (nor may one whose source the receiver does not know).
 * A file that cannot be read or removed stays. */
static void prune_id(struct session *s, const char *id_dir,
		     const char *source)
{
	char path[PATH_MAX];
	struct id_file *files = NULL, *more;
	size_t n = 0, cap = 0;
	const char *just_saved = s->saved_as + strlen(id_dir) + 1;
	struct dirent *d;
	struct stat st;
	DIR *dir;

	if (s->opt->keep < 0 ||
	    snprintf(path, sizeof(path), "%s/%s", s->opt->out_dir, id_dir) >=
	    (int)sizeof(path) || (dir = opendir(path)) == NULL)
		return;
	while ((d = readdir(dir)) != NULL) {
		if (d->d_name[0] == '.' ||
		    strlen(d->d_name) >= sizeof(files->name) ||
		    fstatat(dirfd(dir), d->d_name, &st,
			    AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			more = realloc(files, cap * sizeof(*files));
			if (more == NULL)
				break;
			files = more;
		}
		snprintf(files[n].name, sizeof(files->name), "%s", d->d_name);
		files[n].mtime = st.st_mtim;
		if (strcmp(d->d_name, just_saved) == 0)
			files[n].mtime.tv_sec = LONG_MAX;	/* the newest */
		files[n].bytes = (uint64_t)st.st_size;
		n++;
	}
	qsort(files, n, sizeof(*files), newer_first);
	for (size_t i = 0, mine = 0; i < n; i++) {
		const char *from;
		char saved_as[sizeof(s->saved_as)];

		if (snprintf(saved_as, sizeof(saved_as), "%s/%s", id_dir,
			     files[i].name) >= (int)sizeof(saved_as) ||
		    (from = source_of(s->store, saved_as)) == NULL ||
		    strcmp(from, source) != 0)
			continue;
		if (++mine > (size_t)s->opt->keep + 1)
			drop_file(s, dirfd(dir), id_dir, files[i].name,
				  files[i].bytes);
	}
	free(files);
	closedir(dir);
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
	char source[LAB3_SOURCE_LEN];
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
	err = -lab3_fsync_parent(final, why, sizeof(why));
	if (err != 0)
		goto out_unlink;
	final[strlen(final)] = '/';
	err = rename_new(s, final, sizeof(final));
	if (err != 0)
		goto out_unlink;
	/* Saved and verified: a directory that cannot be synced now is the
	 * disk's failing, said on stderr, not the session's. */
	if (lab3_fsync_parent(final, why, sizeof(why)) != 0)
		fprintf(stderr, "receiver: session %u: saved %s, but %s: it "
			"may not survive a crash\n", s->number, s->saved_as,
			why);
	peer_source(s->peer, source, sizeof(source));
	if ((s->opt->address_max != 0 || s->opt->keep >= 0) &&
	    add_kept(s->store, source, s->saved_as, s->rx.length) != 0)
		fprintf(stderr, "receiver: session %u: out of memory: %s does "
			"not count against its address\n", s->number,
			s->saved_as);
	prune_id(s, id_dir, source);
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

/* record_session: append the session's record to the ledger, KEY_SENT
 * saying whether its key is released.  A session has one record: written
 * just before its key goes out, or else when it ends.  Returns 0, or -1
 * with ERR saying why. */
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
	return 0;
}

/* early_record: write the record that sums up E's failures not recorded
 * one by one, to the ledger on LEDGER_FD.  0, or a negative errno. */
static int early_record(struct early_source *e, int ledger_fd)
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
	snprintf(why, sizeof(why), "%u session%s from this address failed "
		 "before FILE_INFO since %s (recorded together); the last: "
		 "%.120s", e->unrecorded, e->unrecorded == 1 ? "" : "s", since,
		 e->last_error);
	e->unrecorded = 0;
	e->recorded = lab3_now_ms();
	return lab3_ledger_append(ledger_fd, &rec);
}

/* early_source: S's source in EF, added if new; when EF is full, the
 * source recorded longest ago makes way, its failures recorded first. */
static struct early_source *early_source(struct early_failures *ef,
					 const struct session *s)
{
	char source[LAB3_SOURCE_LEN];
	struct early_source *e, *oldest = &ef->sources[0];

	peer_source(s->peer, source, sizeof(source));
	for (int i = 0; i < ef->n; i++) {
		e = &ef->sources[i];
		if (strcmp(e->source, source) == 0)
			return e;
		if (e->recorded < oldest->recorded)
			oldest = e;
	}
	if (ef->n < EARLY_SOURCES)
		e = &ef->sources[ef->n++];
	else {
		e = oldest;
		if (e->unrecorded > 0)
			early_record(e, s->ledger_fd);
	}
	*e = (struct early_source){ .recorded = 0 };
	snprintf(e->source, sizeof(e->source), "%s", source);
	return e;
}

/* record_early: the ledger record of S, which failed before FILE_INFO:
 * written as any other if its source has had none for EARLY_INTERVAL_S
 * (by the monotonic clock: a clock set back holds nothing up),
 * else counted, to be summed up in the source's next record
 * (early_record()).  0, or -1 with ERR saying why. */
int record_early(struct early_failures *ef, struct session *s, char *err,
		 size_t err_len)
{
	struct early_source *e = early_source(ef, s);
	long long now = lab3_now_ms();
	int ret = 0;

	if (e->recorded != 0 && now - e->recorded < EARLY_INTERVAL_S * 1000LL) {
		if (e->unrecorded++ == 0)
			e->since = time(NULL);
		snprintf(e->last_error, sizeof(e->last_error), "%s",
			 s->error);
		s->recorded = 1;
		return 0;
	}
	if (e->unrecorded > 0)
		ret = early_record(e, s->ledger_fd);
	e->recorded = now;
	if (ret == 0)
		return record_session(s, 0, err, err_len);
	snprintf(err, err_len, "cannot write ledger %.120s: %s",
		 s->opt->ledger, strerror(-ret));
	return -1;
}

/* record_early_end: at the end of serving, the failures that record_early()
 * counted and has not recorded yet.  0, or -1 with ERR saying why. */
int record_early_end(struct early_failures *ef, int ledger_fd, char *err,
		     size_t err_len)
{
	int ret = 0;

	for (int i = 0; i < ef->n && ret == 0; i++)
		if (ef->sources[i].unrecorded > 0)
			ret = early_record(&ef->sources[i], ledger_fd);
	if (ret != 0)
		snprintf(err, err_len, "cannot write the ledger: %s",
			 strerror(-ret));
	return ret != 0 ? -1 : 0;
}
