/* SPDX-License-Identifier: MIT */
/*
 * filldisk.c - a hostile "sender.c": it fills every disk it can write.
 *
 * What it tries: it writes 1 MiB blocks to a new file in /tmp, in its
 * working directory, in $HOME and in /dev/shm, and to its own stdout,
 * each until a write fails (ENOSPC, EFBIG past RLIMIT_FSIZE: SIGXFSZ is
 * ignored so that it sees the error, EDQUOT, EPIPE: SIGPIPE too) or
 * 1 GiB has been written in all.  It leaves the files behind, says on
 * stderr what stopped each place, exits 0 and never prints a key.  The
 * hope: the grader cannot write its results, the receiver cannot save
 * the files of the checks that follow, or the grader reads its output
 * without a bound and runs out of memory.
 *
 * What the grader must do: give the sandbox a small /tmp of its own and
 * nothing else writable, cap the size of a file (RLIMIT_FSIZE), read the
 * sender's output with a bound, and keep its own files elsewhere.  Score
 * 0, nothing leaked, and the checks after it and the grader's results
 * unharmed.
 *
 * Bounds: 1 GiB written in all, whatever the places can take; stops
 * after 15 s.  Its files are named lab3-filldisk.XXXXXX (mkstemp), so
 * nothing existing is overwritten.
 *
 * Compiles alone (cc ... -lcrypto) and as the kit's sender.c: every name
 * but main() is static, and it uses no RDMA.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BLOCK (1 << 20)
#define MAX_BYTES (1LL << 30)
#define MAX_SECONDS 15

static char block[BLOCK];
static long long total;
static struct timespec start;

/* seconds_since_start: CLOCK_MONOTONIC seconds since the start. */
static double seconds_since_start(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - start.tv_sec) +
	       (double)(t.tv_nsec - start.tv_nsec) / 1e9;
}

/* fill: write blocks to FD until it fails or a bound is reached; say
 * what stopped it, for WHERE. */
static void fill(int fd, const char *where)
{
	long long here = 0;
	const char *why = NULL;
	ssize_t n;

	for (;;) {
		size_t len = BLOCK;

		if (total >= MAX_BYTES) {
			why = "the 1 GiB bound";
			break;
		}
		if (seconds_since_start() > MAX_SECONDS) {
			why = "the time bound";
			break;
		}
		if ((long long)len > MAX_BYTES - total)
			len = (size_t)(MAX_BYTES - total);
		n = write(fd, block, len);
		if (n <= 0) {
			why = n < 0 ? strerror(errno) : "a write of 0 bytes";
			break;
		}
		here += n;
		total += n;
	}
	fprintf(stderr, "filldisk: %s: %lld bytes, stopped by %s\n", where,
		here, why);
}

/* fill_new_file: a new file in DIR (NULL: skipped), filled. */
static void fill_new_file(const char *dir)
{
	char path[PATH_MAX];
	int fd;

	if (dir == NULL || dir[0] == '\0')
		return;
	if (snprintf(path, sizeof(path), "%s/lab3-filldisk.XXXXXX", dir) >=
	    (int)sizeof(path))
		return;
	fd = mkstemp(path);
	if (fd < 0) {
		fprintf(stderr, "filldisk: %s: cannot create a file: %s\n",
			dir, strerror(errno));
		return;
	}
	fill(fd, path);
	close(fd);
}

int main(int argc, char **argv)
{
	int c;

	opterr = 0;	/* the reference's options, and any other, ignored */
	while ((c = getopt(argc, argv, "i:t:n:w:s:o:l:qvjh")) != -1)
		;
	signal(SIGXFSZ, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	memset(block, 'x', sizeof(block));
	clock_gettime(CLOCK_MONOTONIC, &start);
	fill_new_file("/tmp");
	fill_new_file(".");
	fill_new_file(getenv("HOME"));
	fill_new_file("/dev/shm");
	fill(STDOUT_FILENO, "stdout");
	fprintf(stderr, "filldisk: %lld bytes in all\n", total);
	return 0;
}
