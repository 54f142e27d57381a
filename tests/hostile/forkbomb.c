/* SPDX-License-Identifier: MIT */
/*
 * forkbomb.c - a hostile "sender.c": it exhausts processes and memory.
 *
 * What it tries: it forks in a loop until fork() fails or it has forked
 * 20000 children; each child touches 64 MiB (memset) to eat the memory,
 * then sleeps 30 s and exits, holding the sender's stdout and stderr
 * open all the while.  The parent reaps what it can for up to 30 s, then
 * exits 0.  It never prints a key.  The hope: the grader, the receiver
 * or the machine can no longer fork or allocate, and gives up, or
 * passes it.
 *
 * What the grader must do: cap the sandbox's processes and memory (a
 * cgroup, RLIMIT_NPROC for a user of its own), kill every process it
 * left when the sender's time is up, and not wait for its output to
 * close.  Score 0, nothing leaked, and the grader and the machine carry
 * on.
 *
 * Bounds, so that it is safe to run by accident: only the parent forks
 * (no child forks again), at most 20000 children; only the first 16
 * children touch memory, so 1 GiB in all (more than the bed's VM has,
 * little for a workstation); every process is gone within about 30 s.
 * This is the one program here (with sleeper.c) that runs longer than
 * 20 s.  Still: do NOT run it outside a sandbox.
 *
 * Compiles alone (cc ... -lcrypto) and as the kit's sender.c: every name
 * but main() is static, and it uses no RDMA.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_FORKS 20000
#define HUNGRY_CHILDREN 16		/* 16 x 64 MiB: 1 GiB */
#define CHILD_BYTES (64UL << 20)
#define LIFETIME 30			/* seconds, children and parent */

/* child: touch CHILD_BYTES if HUNGRY, sleep LIFETIME seconds, exit. */
static void child(int hungry)
{
	if (hungry) {
		char *mem = malloc(CHILD_BYTES);

		if (mem != NULL) {
			memset(mem, 0xa5, CHILD_BYTES);
			/* "used", so that the compiler keeps the stores */
			__asm__ volatile("" : : "r"(mem) : "memory");
		}
	}
	sleep(LIFETIME);
	_exit(0);
}

/* seconds_since: CLOCK_MONOTONIC seconds since START. */
static double seconds_since(const struct timespec *start)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - start->tv_sec) +
	       (double)(t.tv_nsec - start->tv_nsec) / 1e9;
}

int main(int argc, char **argv)
{
	struct timespec start, ms = { 0, 10000000 };
	int c, forks = 0, reaped = 0, fork_errno = 0;

	opterr = 0;	/* the reference's options, and any other, ignored */
	while ((c = getopt(argc, argv, "i:t:n:w:s:o:l:qvjh")) != -1)
		;
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (forks < MAX_FORKS && seconds_since(&start) < LIFETIME) {
		pid_t pid = fork();

		if (pid < 0) {
			fork_errno = errno;
			break;
		}
		if (pid == 0)
			child(forks < HUNGRY_CHILDREN);
		forks++;
	}
	fprintf(stderr, "forkbomb: %d children; fork: %s\n", forks,
		fork_errno ? strerror(fork_errno) : "never failed");
	while (reaped < forks && seconds_since(&start) < LIFETIME) {
		if (waitpid(-1, NULL, WNOHANG) > 0)
			reaped++;
		else
			nanosleep(&ms, NULL);
	}
	fprintf(stderr, "forkbomb: %d reaped; exiting\n", reaped);
	return 0;
}
