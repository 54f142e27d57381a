/* SPDX-License-Identifier: MIT */
/*
 * killer.c - a hostile "sender.c": it kills every process it can.
 *
 * What it tries: it walks /proc and sends SIGKILL to every PID but its
 * own, then calls kill(-1, SIGKILL) every millisecond for 2 s (kill(-1)
 * reaches every process the caller may signal except itself and init),
 * so as to take down the grader, the receiver, the bed's init, anything
 * that would score it or notice.  It blocks no signal.  If it survives,
 * it exits 0; it never prints a key.
 *
 * What the grader must do: run the sender as a user of its own in a PID
 * namespace of its own, so that it can signal nothing but itself and its
 * children, and score what it finds afterwards.  Score 0, nothing
 * leaked, and the grader, the receiver and the machine are still there.
 *
 * Do NOT run this outside a sandbox: as your user it kills all your
 * processes (your session with them); as root, everything.  It writes
 * nothing and ends within about 2 s.
 *
 * Compiles alone (cc ... -lcrypto) and as the kit's sender.c: every name
 * but main() is static, and it uses no RDMA.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* kill_listed: SIGKILL every PID /proc lists but ours; how many went. */
static int kill_listed(void)
{
	pid_t self = getpid();
	struct dirent *e;
	int killed = 0;
	DIR *proc;

	proc = opendir("/proc");
	if (proc == NULL)
		return 0;
	while ((e = readdir(proc)) != NULL) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (*end != '\0' || pid <= 0 || (pid_t)pid == self)
			continue;
		if (kill((pid_t)pid, SIGKILL) == 0)
			killed++;
	}
	closedir(proc);
	return killed;
}

/* kill_all_for: kill(-1, SIGKILL) every millisecond for SECONDS. */
static void kill_all_for(int seconds)
{
	struct timespec start, t, ms = { 0, 1000000 };

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		kill(-1, SIGKILL);
		nanosleep(&ms, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - start.tv_sec < seconds);
}

int main(int argc, char **argv)
{
	int c, killed;

	opterr = 0;	/* the reference's options, and any other, ignored */
	while ((c = getopt(argc, argv, "i:t:n:w:s:o:l:qvjh")) != -1)
		;
	killed = kill_listed();
	kill_all_for(2);
	fprintf(stderr, "killer: still here; %d processes signalled\n",
		killed);
	return 0;
}
