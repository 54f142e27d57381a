/* SPDX-License-Identifier: MIT */
/*
 * quota.c - what each address and each student ID may keep under -o:
 * the files kept and where they came from, each address's running total
 * (so that a check costs the same however many files an address keeps),
 * which of an ID's files make way for its newest, and, at start and at
 * each reload, whether the limits add up at all (the receiver's man
 * page, --id-max).
 *
 * The rules:
 *   - an ID keeps its newest good file always, and earlier ones while
 *     they fit in --keep N and --id-max; the oldest go first;
 *   - without a roster, only the files that one address sent for an ID
 *     count (and go) together: IDs are what senders say they are, and a
 *     sender elsewhere that claims an ID must not remove its files; every
 *     kept file counts against its address's --address-max;
 *   - with a roster, each roster ID's files count together wherever they
 *     came from (a student may send from two hosts), within its --id-max
 *     share, and not against any address: a class on one shared host is
 *     bounded by the roster, not by the host.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "ledger.h"
#include "session.h"

/* charge: what a kept file of BYTES bytes counts: at least
 * KEPT_MIN_CHARGE, so that a source of tiny files cannot grow the table
 * without bound. */
static uint64_t charge(uint64_t bytes)
{
	return bytes > KEPT_MIN_CHARGE ? bytes : KEPT_MIN_CHARGE;
}

/* on_roster: whether ID's files count as a roster ID's (its own share)
 * rather than against their address. */
static int on_roster(const struct store_use *use, const char *id)
{
	return use->roster != NULL && use->roster->n > 0 &&
	       lab3_roster_has(use->roster, id);
}

/* source_total: SOURCE's running total in USE, added (at 0) with ADD
 * if it has none.  NULL when it has none and ADD is 0, or out of
 * memory. */
static struct source_total *source_total(struct store_use *use,
					 const char *source, int add)
{
	struct source_total *more;

	for (size_t i = 0; i < use->ntotals; i++)
		if (strcmp(use->totals[i].source, source) == 0)
			return &use->totals[i];
	if (!add)
		return NULL;
	if (use->ntotals == use->totals_cap) {
		size_t cap = use->totals_cap ? 2 * use->totals_cap : 16;

		more = realloc(use->totals, cap * sizeof(*more));
		if (more == NULL)
			return NULL;
		use->totals = more;
		use->totals_cap = cap;
	}
	more = &use->totals[use->ntotals++];
	snprintf(more->source, sizeof(more->source), "%s", source);
	more->bytes = 0;
	return more;
}

/* count_file: K counts against its address (or, with ADD 0, no longer
 * does), unless it is a roster ID's.  0, or -ENOMEM. */
static int count_file(struct store_use *use, struct kept_file *k, int add)
{
	struct source_total *t;

	if (add) {
		k->counted = !on_roster(use, k->id);
		if (!k->counted)
			return 0;
		t = source_total(use, k->source, 1);
		if (t == NULL) {
			k->counted = 0;
			return -ENOMEM;
		}
		t->bytes += charge(k->bytes);
		return 0;
	}
	t = k->counted ? source_total(use, k->source, 0) : NULL;
	if (t != NULL)
		t->bytes -= charge(k->bytes) < t->bytes ? charge(k->bytes) :
			    t->bytes;
	k->counted = 0;
	return 0;
}

/* forget_kept: the file SAVED_AS is gone: it counts no more. */
void forget_kept(struct store_use *use, const char *saved_as)
{
	for (size_t i = 0; i < use->nkept; i++) {
		if (strcmp(use->kept[i].saved_as, saved_as) == 0) {
			count_file(use, &use->kept[i], 0);
			use->kept[i] = use->kept[--use->nkept];
			return;
		}
	}
}

/* append_kept: remember that SAVED_AS, of BYTES bytes, was kept for ID
 * from SOURCE, the newest so far (counted: count_file()).  0, or
 * -ENOMEM. */
static int append_kept(struct store_use *use, const char *source,
		       const char *id, const char *saved_as, uint64_t bytes)
{
	struct kept_file *k;

	if (use->nkept == use->kept_cap) {
		size_t cap = use->kept_cap ? 2 * use->kept_cap : 64;
		struct kept_file *more = realloc(use->kept,
						 cap * sizeof(*more));

		if (more == NULL)
			return -ENOMEM;
		use->kept = more;
		use->kept_cap = cap;
	}
	k = &use->kept[use->nkept];
	snprintf(k->source, sizeof(k->source), "%s", source);
	snprintf(k->id, sizeof(k->id), "%s", id);
	snprintf(k->saved_as, sizeof(k->saved_as), "%.*s",
		 (int)sizeof(k->saved_as) - 1, saved_as);
	k->bytes = bytes;
	k->seq = ++use->seq;
	k->counted = 0;
	use->nkept++;
	return 0;
}

/* add_kept: a session kept SAVED_AS, of BYTES bytes, for ID from SOURCE
 * (a file of the same name before, since removed, is forgotten first).
 * 0, or -ENOMEM. */
int add_kept(struct store_use *use, const char *source, const char *id,
	     const char *saved_as, uint64_t bytes)
{
	int ret;

	forget_kept(use, saved_as);
	ret = append_kept(use, source, id, saved_as, bytes);
	if (ret == 0)
		ret = count_file(use, &use->kept[use->nkept - 1], 1);
	return ret;
}

/* free_kept: forget every kept file and total. */
void free_kept(struct store_use *use)
{
	free(use->kept);
	free(use->totals);
	use->kept = NULL;
	use->totals = NULL;
	use->nkept = use->kept_cap = use->ntotals = use->totals_cap = 0;
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

/* by_name_newest_first: qsort()'s order for only_newest(): by name,
 * and of one name, the newest first. */
static int by_name_newest_first(const void *pa, const void *pb)
{
	const struct kept_file *a = pa, *b = pb;
	int c = strcmp(a->saved_as, b->saved_as);

	return c != 0 ? c : a->seq < b->seq ? 1 : a->seq > b->seq ? -1 : 0;
}

/* only_newest: keep of each name in USE only its newest record (an
 * older one was of a file since removed, whose name came back): sorted,
 * not searched, so that reading a long ledger takes n log n. */
static void only_newest(struct store_use *use)
{
	size_t out = 0;

	qsort(use->kept, use->nkept, sizeof(*use->kept),
	      by_name_newest_first);
	for (size_t i = 0; i < use->nkept; i++)
		if (out == 0 || strcmp(use->kept[i].saved_as,
				       use->kept[out - 1].saved_as) != 0)
			use->kept[out++] = use->kept[i];
	use->nkept = out;
}

/* sane_saved_as: whether NAME, a ledger's saved_as, is one keep_file()
 * writes: ID_DIR/FILE, neither part empty, "." or "..", no other '/'
 * (a ledger edited by hand must not name a file elsewhere for
 * drop_file() to remove). */
static int sane_saved_as(const char *name)
{
	const char *slash = strchr(name, '/');

	return slash != NULL && slash != name && slash[1] != '\0' &&
	       strchr(slash + 1, '/') == NULL &&
	       strncmp(name, "./", 2) != 0 && strncmp(name, "../", 3) != 0 &&
	       strcmp(slash, "/.") != 0 && strcmp(slash, "/..") != 0;
}

/* load_kept: with a quota (--address-max, --id-max, --keep) and a
 * ledger, learn from its records which of the files under -o are whose,
 * and in which order they came, so that a restart forgets nothing of
 * what each address and ID holds.  0, or -1 with ERR saying why. */
int load_kept(struct store_use *use, const struct options *opt, char *err,
	      size_t err_len)
{
	struct lab3_ledger_entry e;
	char source[LAB3_SOURCE_LEN];
	char *line = NULL;
	size_t cap = 0, compacted = 4096;
	ssize_t len;
	long long size;
	FILE *in;
	int ret = 0;

	if (!quotas_on(opt) || opt->ledger == NULL)
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
		    !e.key_sent || !sane_saved_as(e.saved_as) ||
		    strlen(e.saved_as) >= sizeof(use->kept->saved_as) ||
		    (size = file_size(opt->out_dir, e.saved_as)) < 0)
			continue;
		peer_source(e.peer, source, sizeof(source));
		ret = append_kept(use, source, e.id, e.saved_as,
				  (uint64_t)size);
		if (use->nkept >= 2 * compacted) {	/* names come back */
			only_newest(use);
			compacted = use->nkept > 4096 ? use->nkept : 4096;
		}
	}
	if (ret == 0) {
		only_newest(use);
		ret = recount_kept(use, opt, 0);
	}
	if (ret != 0 || ferror(in))
		snprintf(err, err_len, "cannot read ledger %.120s: %s",
			 opt->ledger, strerror(ret != 0 ? -ret : errno));
	free(line);
	fclose(in);
	return ret != 0 ? -1 : 0;
}

/* recount_kept: count every kept file again, under the roster now in
 * force; with LOOK (at a reload, SIGHUP), first forget the files that are
 * gone (the instructor removed them: that is how a quota is given back).
 * The only walk of the table that looks at the disk.  0, or -ENOMEM. */
int recount_kept(struct store_use *use, const struct options *opt, int look)
{
	int ret = 0;

	use->ntotals = 0;
	for (size_t i = 0; i < use->nkept; i++) {
		use->kept[i].counted = 0;
		if (look &&
		    file_size(opt->out_dir, use->kept[i].saved_as) < 0) {
			use->kept[i--] = use->kept[--use->nkept];
			continue;
		}
		if (ret == 0)
			ret = count_file(use, &use->kept[i], 1);
	}
	return ret;
}

/* held_by: the bytes that SOURCE holds against its --address-max: its
 * running total, and what its sessions in progress have announced
 * (promised, or stored in their temporary files).  No system call, and
 * no walk of the files: the serving loop runs this at every FILE_INFO. */
static uint64_t held_by(struct store_use *use, const char *source)
{
	const struct source_total *t = source_total(use, source, 0);
	char other[LAB3_SOURCE_LEN];
	uint64_t held = t != NULL ? t->bytes : 0;

	for (int i = 0; i < *use->nsessions; i++) {
		const struct session *s = use->sessions[i];

		peer_source(s->peer, other, sizeof(other));
		if (strcmp(other, source) == 0)
			held += s->pending +
				(s->tmp_fd >= 0 ? s->bytes_stored : 0);
	}
	return held;
}

/* check_address: with --address-max, refuse a file that would take S's
 * source past it.  0 when it fits; -1 with s->error saying how much is
 * left. */
int check_address(struct session *s)
{
	uint64_t max = s->opt->address_max, length = s->rx.length, held;
	char source[LAB3_SOURCE_LEN];

	if (max == 0)
		return 0;
	peer_source(s->peer, source, sizeof(source));
	held = held_by(s->store, source);
	if (held <= max && length <= max - held)
		return 0;
	snprintf(s->error, sizeof(s->error), "no room for %llu bytes: your "
		 "address has %llu left of its --address-max %llu",
		 (unsigned long long)length,
		 (unsigned long long)(held < max ? max - held : 0),
		 (unsigned long long)max);
	return -1;
}

/* mine: whether K is one of ID's files that count together: from
 * SOURCE, or from anywhere for a roster ID. */
static int mine(const struct store_use *use, const struct kept_file *k,
		const char *id, const char *source)
{
	return strcmp(k->id, id) == 0 &&
	       (on_roster(use, id) || strcmp(k->source, source) == 0);
}

/* forget_gone: of ID's files (mine()), forget those that are gone (the
 * instructor removed them), so that none holds a place of --keep that a
 * file still there needs.  A few system calls, when a file is saved. */
void forget_gone(struct store_use *use, const struct options *opt,
		 const char *id, const char *source)
{
	for (size_t i = 0; i < use->nkept; i++) {
		if (!mine(use, &use->kept[i], id, source) ||
		    file_size(opt->out_dir, use->kept[i].saved_as) >= 0)
			continue;
		count_file(use, &use->kept[i], 0);
		use->kept[i--] = use->kept[--use->nkept];
	}
}

/* newer_first: qsort()'s order for drops_for(): the newest first. */
static int newer_first(const void *pa, const void *pb)
{
	const struct kept_file *a = pa, *b = pb;

	return a->seq < b->seq ? 1 : a->seq > b->seq ? -1 : 0;
}

/* drops_for: the files of ID (from SOURCE, unless ID is on the roster)
 * that make way once its newest is kept: the newest stays, then earlier
 * ones while they fit in --keep and --id-max, and from the first that
 * does not, it and every older one go.  A copy of each, in *DROPS (to
 * free), and their number; 0 when none go (or out of memory: they stay,
 * and go next time). */
size_t drops_for(const struct store_use *use, const struct options *opt,
		 const char *id, const char *source, struct kept_file **drops)
{
	struct kept_file *files = NULL;
	size_t n = 0, cap = 0, kept = 0, out = 0;
	uint64_t bytes = 0;

	*drops = NULL;
	for (size_t i = 0; i < use->nkept; i++) {
		if (!mine(use, &use->kept[i], id, source))
			continue;
		if (n == cap) {
			struct kept_file *more;

			cap = cap ? 2 * cap : 8;
			more = realloc(files, cap * sizeof(*more));
			if (more == NULL) {
				free(files);
				return 0;
			}
			files = more;
		}
		files[n++] = use->kept[i];
	}
	if (n > 1)
		qsort(files, n, sizeof(*files), newer_first);
	for (size_t i = 0; i < n; i++) {
		int fits = i == 0 ||
			   ((opt->keep < 0 || kept < (size_t)opt->keep + 1) &&
			    (opt->id_max == 0 || (bytes <= opt->id_max &&
			     charge(files[i].bytes) <= opt->id_max - bytes)));

		if (fits && out == 0) {
			kept++;
			bytes += charge(files[i].bytes);
		} else {
			files[out++] = files[i];
		}
	}
	if (out == 0)
		free(files);
	else
		*drops = files;
	return out;
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

/* times: A x B, or UINT64_MAX when that does not fit. */
static uint64_t times(uint64_t a, uint64_t b)
{
	uint64_t product;

	return __builtin_mul_overflow(a, b, &product) ? UINT64_MAX : product;
}

/* id_max_default: --id-max when it is not given: what --keep and -m
 * allow one ID to keep (the newest and N earlier, each up to -m), so
 * that it binds only when set lower; no limit without --keep. */
void id_max_default(struct options *opt)
{
	if (opt->id_max_given || opt->keep < 0)
		return;
	opt->id_max = times((uint64_t)opt->keep + 1, charge(opt->max_bytes));
}

/* quotas_add_up: whether OPT's quotas can hold what they promise, with
 * a roster of ROSTER_N IDs (0: none): every ID its newest and --keep N
 * earlier files of up to -m within --id-max; and room for a full ID's
 * next file, which arrives before its oldest makes way: with a roster,
 * every roster ID's --id-max and one file of -m within --store-max;
 * without, one ID's --id-max and one file of -m within its address's
 * --address-max.  0, or -1 with ERR naming the limit that cannot hold
 * and by how much. */
int quotas_add_up(const struct options *opt, size_t roster_n, char *err,
		  size_t err_len)
{
	uint64_t files = opt->keep < 0 ? 1 : (uint64_t)opt->keep + 1;
	uint64_t one = charge(opt->max_bytes), need = times(files, one);
	uint64_t ids = times(roster_n, opt->id_max);

	ids = ids > UINT64_MAX - one ? UINT64_MAX : ids + one;
	if (opt->id_max != 0 && need > opt->id_max) {
		snprintf(err, err_len, "--id-max %llu is %llu short of what "
			 "--keep and -m %llu let one ID keep: %llu file%s of "
			 "up to %llu bytes (each counted as at least %u); "
			 "lower -m or --keep, or raise --id-max",
			 (unsigned long long)opt->id_max,
			 (unsigned long long)(need - opt->id_max),
			 (unsigned long long)opt->max_bytes,
			 (unsigned long long)files, files == 1 ? "" : "s",
			 (unsigned long long)one, KEPT_MIN_CHARGE);
		return -1;
	}
	if (opt->id_max != 0 && roster_n > 0 && opt->store_max != 0 &&
	    ids > opt->store_max) {
		snprintf(err, err_len, "a roster of %zu IDs, each keeping up "
			 "to --id-max %llu, and a next file of -m %llu need "
			 "%llu: %llu more than --store-max %llu; lower -m, "
			 "--keep or --id-max, or raise --store-max", roster_n,
			 (unsigned long long)opt->id_max,
			 (unsigned long long)opt->max_bytes,
			 (unsigned long long)ids,
			 (unsigned long long)(ids - opt->store_max),
			 (unsigned long long)opt->store_max);
		return -1;
	}
	need = opt->id_max > UINT64_MAX - one ? UINT64_MAX : opt->id_max + one;
	if (opt->id_max != 0 && roster_n == 0 && opt->address_max != 0 &&
	    need > opt->address_max) {
		snprintf(err, err_len, "--id-max %llu and a next file of -m "
			 "%llu need %llu: %llu more than --address-max %llu; "
			 "lower -m, --keep or --id-max, raise --address-max, "
			 "or give a roster (-r)", (unsigned long long)opt->id_max,
			 (unsigned long long)opt->max_bytes,
			 (unsigned long long)need,
			 (unsigned long long)(need - opt->address_max),
			 (unsigned long long)opt->address_max);
		return -1;
	}
	return 0;
}

/* quotas_on: whether any quota needs to know whose each kept file is. */
int quotas_on(const struct options *opt)
{
	return opt->address_max != 0 || opt->address_pct != 0 ||
	       opt->keep >= 0 || opt->id_max != 0;
}
