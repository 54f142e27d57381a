/* SPDX-License-Identifier: MIT */
/*
 * counter.c - a hostile "sender.c": it counts its runs across runs.
 *
 * What it tries: the grader's fault checks are randomised so that a
 * sender cannot tell which one it is in; a count of its own runs, kept
 * where one run leaves it for the next, would tell them apart (its
 * eleven runs in check order).  It reads a count from each place it can
 * and writes the largest plus one back to each: the kernel's keyrings
 * (the user keyring, the session keyring, the user-session keyring: a
 * key "lab3-count" in each, by add_key/keyctl, no libkeyutils), a
 * file .lab3-count in /dev/shm, /tmp, /var/tmp, /run/lock, $HOME and its
 * working directory, and the network: a loopback TCP connection to port
 * 47171 that it closes first stays in TIME_WAIT for a minute, so the
 * connections of that state to that port in /proc/net/tcp count the runs
 * before it.  Its stderr's first line says which run it thinks
 * this is and where it kept the count:
 *
 *     counter: run N; read from: PLACE...; kept in: PLACE...
 *
 * then it exits 2 without a key.  (With LAB3_COUNTER_FORGET set in its
 * environment, which the sandbox clears, it removes its key and files
 * instead and exits 0: tests run it outside the sandbox too.)
 *
 * What the grader must do: let no state cross runs.  Every run reads run
 * 1 and keeps nothing in a keyring; score 0.
 *
 * Bounds: a few small files and keys; it ends at once.
 *
 * Compiles alone (cc ... -lcrypto) and as the kit's sender.c: every name
 * but main() is static, and it uses no RDMA.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/keyctl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define KEY_NAME "lab3-count"
#define FILE_NAME ".lab3-count"
#define TCP_PORT 47171

static const struct {
	const char *name;
	long ring;
} rings[] = {
	{ "user-keyring", KEY_SPEC_USER_KEYRING },
	{ "session-keyring", KEY_SPEC_SESSION_KEYRING },
	{ "user-session-keyring", KEY_SPEC_USER_SESSION_KEYRING },
};

static char read_from[1024], kept_in[1024];

/* note: add NAME to the list LIST (of SIZE bytes). */
static void note(char *list, size_t size, const char *name)
{
	size_t len = strlen(list);

	snprintf(list + len, size - len, " %s", name);
}

/* key_in: the key KEY_NAME linked in RING, or -1. */
static long key_in(long ring)
{
	return syscall(SYS_keyctl, KEYCTL_SEARCH, ring, "user", KEY_NAME, 0L);
}

/* ring_count: the count kept in RING, or 0. */
static long ring_count(long ring)
{
	char buf[32] = "";
	long key = key_in(ring);

	if (key < 0 || syscall(SYS_keyctl, KEYCTL_READ, key, buf,
			       (long)sizeof(buf) - 1) < 0)
		return 0;
	return strtol(buf, NULL, 10);
}

/* file_count: the count kept in DIR's file, or 0. */
static long file_count(const char *dir)
{
	char path[512], buf[32] = "";
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, FILE_NAME);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	if (read(fd, buf, sizeof(buf) - 1) < 0)
		buf[0] = '\0';
	close(fd);
	return strtol(buf, NULL, 10);
}

/* file_keep: write N into DIR's file; 0 on success. */
static int file_keep(const char *dir, long n)
{
	char path[512], buf[32];
	int fd, len, ok;

	snprintf(path, sizeof(path), "%s/%s", dir, FILE_NAME);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	len = snprintf(buf, sizeof(buf), "%ld\n", n);
	ok = write(fd, buf, (size_t)len) == len;
	return close(fd) == 0 && ok ? 0 : -1;
}

/* tcp_count: the loopback connections to TCP_PORT in TIME_WAIT (state
 * 06 in /proc/net/tcp): one for each run in the last minute. */
static long tcp_count(void)
{
	FILE *f = fopen("/proc/net/tcp", "r");
	char line[256];
	unsigned port, state;
	long n = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, " %*d: %*x:%*x %*x:%x %x", &port,
			   &state) == 2 && port == TCP_PORT && state == 6)
			n++;
	fclose(f);
	return n;
}

/* tcp_keep: a loopback connection to TCP_PORT, closed by the connecting
 * side first, which holds TIME_WAIT; 0 on success. */
static int tcp_keep(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(TCP_PORT) };
	int one = 1, l, c = -1, s = -1, ok = 0;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l >= 0 && setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one,
				 sizeof(one)) == 0 &&
	    bind(l, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    listen(l, 1) == 0 &&
	    (c = socket(AF_INET, SOCK_STREAM, 0)) >= 0 &&
	    connect(c, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    (s = accept(l, NULL, NULL)) >= 0)
		ok = 1;
	if (c >= 0)
		close(c);	/* first: this side holds TIME_WAIT */
	if (s >= 0) {
		usleep(10000);
		close(s);
	}
	if (l >= 0)
		close(l);
	return ok ? 0 : -1;
}

int main(void)
{
	const char *dirs[] = { "/dev/shm", "/tmp", "/var/tmp", "/run/lock",
			       getenv("HOME"), "." };
	int forget = getenv("LAB3_COUNTER_FORGET") != NULL;
	size_t i, nrings = sizeof(rings) / sizeof(rings[0]);
	size_t ndirs = sizeof(dirs) / sizeof(dirs[0]);
	long n = 0, c;
	char buf[32];

	for (i = 0; i < nrings; i++) {
		if (forget) {
			syscall(SYS_keyctl, KEYCTL_UNLINK, key_in(rings[i].ring),
				rings[i].ring);
		} else if ((c = ring_count(rings[i].ring)) > 0) {
			note(read_from, sizeof(read_from), rings[i].name);
			n = c > n ? c : n;
		}
	}
	for (i = 0; i < ndirs; i++) {
		if (dirs[i] == NULL)
			continue;
		if (forget) {
			char path[512];

			snprintf(path, sizeof(path), "%s/%s", dirs[i],
				 FILE_NAME);
			unlink(path);
		} else if ((c = file_count(dirs[i])) > 0) {
			note(read_from, sizeof(read_from), dirs[i]);
			n = c > n ? c : n;
		}
	}
	if (forget)
		return 0;
	if ((c = tcp_count()) > 0) {
		note(read_from, sizeof(read_from), "tcp-time-wait");
		n = c > n ? c : n;
	}
	n++;
	snprintf(buf, sizeof(buf), "%ld", n);
	for (i = 0; i < nrings; i++) {
		if (syscall(SYS_add_key, "user", KEY_NAME, buf, strlen(buf),
			    rings[i].ring) >= 0)
			note(kept_in, sizeof(kept_in), rings[i].name);
	}
	for (i = 0; i < ndirs; i++) {
		if (dirs[i] != NULL && file_keep(dirs[i], n) == 0)
			note(kept_in, sizeof(kept_in), dirs[i]);
	}
	if (tcp_keep() == 0)
		note(kept_in, sizeof(kept_in), "tcp-time-wait");
	fprintf(stderr, "counter: run %ld; read from:%s; kept in:%s\n", n,
		read_from[0] ? read_from : " nothing",
		kept_in[0] ? kept_in : " nothing");
	return 2;
}
