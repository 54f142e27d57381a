/* SPDX-License-Identifier: MIT */
/*
 * sleeper.c - a hostile "sender.c": it never ends, and leaves a process
 * behind that is harder to find.
 *
 * What it tries: it ignores SIGTERM, SIGINT and SIGHUP (so a polite
 * `timeout` or a Ctrl-C does nothing), forks a child that calls setsid()
 * (a session and process group of its own, out of the grader's group)
 * and keeps the sender's stdout and stderr open, and both sleep for an
 * hour (standing in for "for ever").  It never prints a key.
 *
 * What the grader must do: end the sender after its limit with SIGKILL,
 * and every process it left, whatever its session or group (a PID
 * namespace or a cgroup), and not wait for its output to close.  Score
 * 0, nothing leaked, and every check done within the grader's budget.
 *
 * Bounds: writes nothing; two processes; each ends after 3600 s if no
 * one kills it (SIGKILL or SIGQUIT still do).
 *
 * Compiles alone (cc ... -lcrypto) and as the kit's sender.c: every name
 * but main() is static, and it uses no RDMA.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define SLEEP_SECONDS 3600

/* sleep_out: sleep until SLEEP_SECONDS have passed, however often
 * interrupted. */
static void sleep_out(void)
{
	struct timespec start, t;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		sleep(SLEEP_SECONDS);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - start.tv_sec < SLEEP_SECONDS);
}

int main(int argc, char **argv)
{
	pid_t pid;
	int c;

	opterr = 0;	/* the reference's options, and any other, ignored */
	while ((c = getopt(argc, argv, "i:t:n:w:s:o:l:qvjh")) != -1)
		;
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	pid = fork();
	if (pid == 0)
		setsid();	/* its parent's signals still ignored */
	else if (pid > 0)
		fprintf(stderr, "sleeper: sleeping, and so does %ld\n",
			(long)pid);
	sleep_out();
	return 0;
}
