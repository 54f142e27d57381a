/* SPDX-License-Identifier: MIT */
/*
 * store_unit.c - the class receiver's limits on what is kept, in memory
 * and on a scratch directory (tests/store.test): no RDMA, no sessions
 * but made-up ones.
 *   - the quotas add up only with room for a full ID's next file, and
 *     then that file is admitted (check_address());
 *   - which files make way (drops_for()): --keep, --id-max, the oldest
 *     first, the same address's only, or any address's for a roster ID;
 *     a file removed by hand holds no place (forget_gone());
 *   - the ledger (record_end(), record_session()): sessions without a
 *     verdict from 257 addresses that take turns, four rounds within a
 *     minute, leave one record per address (the 257th shares an entry),
 *     not one per session; one address's over three minutes, one a
 *     minute (a summing-up is its minute's record); one address's 1500 sessions with a bad
 *     verdict leave 1200 records of their own, the rest summed; after
 *     1200 keyed records, a new file is refused at FILE_INFO, saying
 *     when the ledger takes more; one ID's 121st key in an hour from
 *     one address is refused, and no one else's;
 *   - a ledger edited by hand: a saved_as outside ID/NAME is not taken.
 * Each check prints "ok: ..." or "FAIL: ..."; the exit status is 1 if any
 * failed.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ledger.h"
#include "session.h"

/* The receiver's steps, which store.c's callers need and these checks
 * never run. */
int run_session(struct session *s) { (void)s; return 0; }
void free_windows(struct session *s) { (void)s; }

static int failed;

static void check(int ok, const char *what)
{
	printf("%s: %s\n", ok ? "ok" : "FAIL", what);
	failed |= !ok;
}

/* count_lines: the lines of the file at PATH. */
static int count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	int n = 0, c;

	if (f == NULL)
		return -1;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static void check_quotas(const char *dir)
{
	struct options opt = { .max_bytes = 24u << 20, .keep = 2,
			       .address_max = 72u << 20, .out_dir = dir };
	struct session *none[1];
	int nsessions = 0;
	struct store_use use = { .sessions = none, .nsessions = &nsessions };
	struct session s = { .opt = &opt, .store = &use,
			     .peer = "10.0.0.1:5000" };
	char err[LAB3_ERR_LEN];

	id_max_default(&opt);
	check(opt.id_max == 72u << 20, "--id-max is (keep + 1) x -m");
	check(quotas_add_up(&opt, 0, err, sizeof(err)) != 0 &&
	      strstr(err, "a next file of -m") != NULL,
	      "--address-max of three files refused: no room for a fourth");
	opt.address_max = 96u << 20;
	check(quotas_add_up(&opt, 0, err, sizeof(err)) == 0,
	      "--address-max of four files adds up");
	for (int i = 0; i < 3; i++) {
		char name[32];

		snprintf(name, sizeof(name), "a/f%d", i);
		add_kept(&use, "10.0.0.1", "a", name, 24u << 20);
	}
	s.rx.length = 24u << 20;
	check(check_address(&s) == 0, "a full ID's next file is admitted");
	free_kept(&use);
}

/* touch: an empty file DIR/NAME. */
static void touch(const char *dir, const char *name)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	if (fd >= 0)
		close(fd);
}

/* mkdir_in: the directory DIR/NAME. */
static void mkdir_in(const char *dir, const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	mkdir(path, 0700);
}

/* drops: the names drops_for() gives for ID from SOURCE, joined. */
static const char *drops(struct store_use *use, const struct options *opt,
			 const char *id, const char *source)
{
	static char out[4 * sizeof(((struct kept_file *)0)->saved_as)];
	struct kept_file *d;
	size_t n = drops_for(use, opt, id, source, &d);

	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s",
			 i ? " " : "", d[i].saved_as);
	free(d);
	return out;
}

static void check_drops(const char *dir)
{
	struct options opt = { .max_bytes = 1u << 20, .keep = 1,
			       .out_dir = dir };
	struct session *none[1];
	int nsessions = 0;
	struct store_use use = { .sessions = none, .nsessions = &nsessions };
	struct lab3_roster roster = { 0 };
	char *ids[] = { "r" };

	add_kept(&use, "10.0.0.1", "a", "a/1", 100);
	add_kept(&use, "10.0.0.2", "a", "a/2", 100);
	add_kept(&use, "10.0.0.1", "a", "a/3", 100);
	add_kept(&use, "10.0.0.1", "a", "a/4", 100);
	check(strcmp(drops(&use, &opt, "a", "10.0.0.1"), "a/1") == 0,
	      "--keep 1: the oldest of the address's three goes, not "
	      "another address's");
	roster.ids = ids;
	roster.n = 1;
	use.roster = &roster;
	add_kept(&use, "10.0.0.1", "r", "r/1", 100);
	add_kept(&use, "10.0.0.2", "r", "r/2", 100);
	add_kept(&use, "10.0.0.1", "r", "r/3", 100);
	check(strcmp(drops(&use, &opt, "r", "10.0.0.1"), "r/1") == 0,
	      "a roster ID's files count together across addresses");
	opt.keep = -1;
	opt.id_max = 3u << 20;
	add_kept(&use, "10.0.0.1", "b", "b/1", 1u << 20);
	add_kept(&use, "10.0.0.1", "b", "b/2", 1u << 20);
	add_kept(&use, "10.0.0.1", "b", "b/3", 2u << 20);
	check(strcmp(drops(&use, &opt, "b", "10.0.0.1"), "b/1") == 0,
	      "--id-max: the oldest goes until the rest fit");
	opt.keep = 1;
	opt.id_max = 0;
	mkdir_in(dir, "c");
	touch(dir, "c/1");
	touch(dir, "c/3");
	add_kept(&use, "10.0.0.1", "c", "c/1", 100);
	add_kept(&use, "10.0.0.1", "c", "c/2", 100);	/* removed by hand */
	add_kept(&use, "10.0.0.1", "c", "c/3", 100);
	forget_gone(&use, &opt, "c", "10.0.0.1");
	check(drops(&use, &opt, "c", "10.0.0.1")[0] == '\0',
	      "a file removed by hand holds no --keep place");
	use.roster = NULL;
	free_kept(&use);
}

/* ends_unverdicted SOURCES FD OPT N: N sessions from 10.3.0.1 end
 * without a verdict. */
static void ends_unverdicted(struct ledger_sources *sources, int fd,
			     const struct options *opt, int n)
{
	char err[LAB3_ERR_LEN];

	for (int i = 0; i < n; i++) {
		struct session t = { .opt = opt, .sources = sources,
				     .ledger_fd = fd, .peer = "10.3.0.1:1" };

		snprintf(t.error, sizeof(t.error), "refused");
		record_end(&t, err, sizeof(err));
	}
}

/* check_ledger_minutes: one source's sessions without a verdict over
 * three minutes (its clock moved back by hand) leave one record a
 * minute: its own, then a summing-up, which counts as the record of its
 * minute. */
static void check_ledger_minutes(int fd, const char *path,
				 const struct options *opt)
{
	static struct ledger_sources sources;
	char err[LAB3_ERR_LEN];
	int lines = count_lines(path);

	ends_unverdicted(&sources, fd, opt, 6);	/* minute 1: 1 and 5 */
	for (int minute = 2; minute <= 3; minute++) {
		sources.sources[0].first_ms -= UNVERDICTED_INTERVAL_S * 1000LL;
		sources.sources[0].recorded -= UNVERDICTED_INTERVAL_S * 1000LL;
		record_summaries(&sources, fd, 0, err, sizeof(err));
		ends_unverdicted(&sources, fd, opt, 5);
	}
	check(count_lines(path) - lines == 3,
	      "16 sessions without a verdict over 3 minutes: 3 records, "
	      "one a minute");
}

/* keyed FD OPT SOURCES PEER ID: a session of ID from PEER whose key the
 * ledger takes, if key_admitted() lets it: 1 if it did, else 0. */
static int keyed(int fd, const struct options *opt,
		 struct ledger_sources *sources, const char *peer,
		 const char *id)
{
	struct session t = { .opt = opt, .sources = sources, .ledger_fd = fd };
	char err[LAB3_ERR_LEN];

	snprintf(t.peer, sizeof(t.peer), "%s", peer);
	snprintf(t.id, sizeof(t.id), "%s", id);
	if (key_admitted(&t) != 0)
		return 0;
	return record_session(&t, 1, err, sizeof(err)) == 0;
}

/* check_ledger_pairs: one student's keys on a shared host (10.5.0.1)
 * count against that student's ID from that address, not the address
 * alone: after 120 of alice's, her next is refused; bob's from the same
 * address is not, nor alice's from another; a record that could not be
 * written counts for nothing; and once every pair is counting, a new
 * pair is not refused (made-up pairs share no count with a real one). */
static void check_ledger_pairs(int fd, const struct options *opt)
{
	static struct ledger_sources sources;
	int n = 0;

	while (n <= PAIR_KEYS_PER_HOUR &&
	       keyed(fd, opt, &sources, "10.5.0.1:1", "alice"))
		n++;
	check(n == PAIR_KEYS_PER_HOUR,
	      "an ID's 121st key in an hour from one address is refused");
	check(keyed(fd, opt, &sources, "10.5.0.1:2", "bob"),
	      "... and another ID's from the same address is not");
	check(keyed(fd, opt, &sources, "10.6.0.1:1", "alice"),
	      "... nor the same ID's from another address");
	for (int i = 0; i < PAIR_KEYS_PER_HOUR; i++)
		keyed(-1, opt, &sources, "10.5.0.1:3", "carol");
	check(keyed(fd, opt, &sources, "10.5.0.1:3", "carol"),
	      "keys whose records could not be written count for nothing");
	for (int i = 0; i < LEDGER_PAIRS; i++) {
		char id[16];

		snprintf(id, sizeof(id), "made-up-%d", i);
		keyed(fd, opt, &sources, "10.7.0.1:1", id);
	}
	n = 0;
	while (n <= PAIR_KEYS_PER_HOUR &&
	       keyed(fd, opt, &sources, "10.8.0.1:1", "dave"))
		n++;
	check(n > PAIR_KEYS_PER_HOUR, "with every pair counting, a new "
	      "pair has its address's limit only, no shared count");
}

static void check_ledger(const char *dir)
{
	static struct ledger_sources sources, one;
	struct options opt = { .ledger = "ledger" };
	char path[512], err[LAB3_ERR_LEN];
	int fd;

	snprintf(path, sizeof(path), "%s/ledger", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_APPEND, 0600);
	for (int round = 0; round < 4; round++)
		for (int a = 0; a < LEDGER_SOURCES + 1; a++) {
			struct session t = { .opt = &opt, .sources = &sources,
					     .ledger_fd = fd };

			snprintf(t.peer, sizeof(t.peer), "10.1.%d.%d:4000",
				 a / 256, a % 256);
			snprintf(t.error, sizeof(t.error), "refused");
			record_end(&t, err, sizeof(err));
		}
	check(count_lines(path) == LEDGER_SOURCES + 1,
	      "257 addresses' 1028 sessions without a verdict: 257 records");
	check_ledger_minutes(fd, path, &opt);
	if (ftruncate(fd, 0) != 0)
		check(0, "truncate the ledger");
	for (int i = 0; i < 1500; i++) {
		struct session t = { .opt = &opt, .sources = &one,
				     .ledger_fd = fd, .peer = "10.2.0.1:1",
				     .has_file_info = 1, .has_verdict = 1 };

		record_end(&t, err, sizeof(err));
	}
	check(count_lines(path) == SOURCE_RECORDS_PER_HOUR,
	      "1500 sessions with a bad verdict: 1200 records, the rest summed");
	for (int i = 0; i < SOURCE_KEYS_PER_HOUR; i++) {
		struct session t = { .opt = &opt, .sources = &one,
				     .ledger_fd = fd, .peer = "10.2.0.1:1" };

		record_session(&t, 1, err, sizeof(err));
	}
	{
		struct session t = { .opt = &opt, .sources = &one,
				     .ledger_fd = fd, .peer = "10.2.0.1:2" };

		check(admit_file(&t) != 0 &&
		      strstr(t.error, "takes more in") != NULL,
		      "after 1200 keyed records a file is refused at FILE_INFO");
	}
	check_ledger_pairs(fd, &opt);
	close(fd);
}

static void check_hand_edited(const char *dir)
{
	struct options opt = { .keep = 1, .out_dir = dir };
	struct session *none[1];
	int nsessions = 0;
	struct store_use use = { .sessions = none, .nsessions = &nsessions };
	char path[512], err[LAB3_ERR_LEN];
	FILE *f;
	const char *names[] = { "../x", "d/../x", "x", "/x", "d/x" };

	snprintf(path, sizeof(path), "%s/hand.jsonl", dir);
	opt.ledger = path;
	f = fopen(path, "w");
	for (size_t i = 0; f != NULL && i < 5; i++)
		fprintf(f, "{\"time\":\"2026-11-28T09:00:00Z\",\"peer\":"
			"\"10.0.0.1:1\",\"id\":\"d\",\"file\":\"x\",\"bytes\":1,"
			"\"sha256\":\"%064d\",\"verdict\":\"good\",\"key_sent\":"
			"true,\"error\":null,\"saved_as\":\"%s\"}\n", 0,
			names[i]);
	if (f != NULL)
		fclose(f);
	touch(dir, "x");
	mkdir_in(dir, "d");
	touch(dir, "d/x");
	check(load_kept(&use, &opt, err, sizeof(err)) == 0 &&
	      use.nkept == 1 && strcmp(use.kept[0].saved_as, "d/x") == 0,
	      "a hand-edited ledger: only saved_as of the form ID/NAME taken");
	free_kept(&use);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: store_unit SCRATCH_DIR\n");
		return 2;
	}
	check_quotas(argv[1]);
	check_drops(argv[1]);
	check_ledger(argv[1]);
	check_hand_edited(argv[1]);
	return failed;
}
