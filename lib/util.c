/* SPDX-License-Identifier: MIT */
/*
 * util.c - what the programs need of the system beside RDMA (util.h):
 * the one clock (common.h), non-blocking descriptors, the one ppoll(), and
 * address lookup with its failure in words.
 */
#define _GNU_SOURCE	/* ppoll() */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "common.h"
#include "util.h"

/* lab3_set_nonblocking: make FD non-blocking, so that a read after poll() can
 * never block the single thread.  A failure is reported in ERR. */
int lab3_set_nonblocking(int fd, char *err, size_t err_len)
{
	int flags = fcntl(fd, F_GETFL);
	int ret;

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
		ret = -errno;
		snprintf(err, err_len, "fcntl O_NONBLOCK: %s", strerror(errno));
		return ret;
	}
	return 0;
}

/* lab3_now_us: see common.h. */
long long lab3_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* lab3_now_ms: see common.h. */
long long lab3_now_ms(void)
{
	return lab3_now_us() / 1000;
}

/* lab3_wait_fds: the programs' one ppoll(); see util.h. */
int lab3_wait_fds(struct pollfd *fds, nfds_t nfds, long long timeout_ms,
		  const sigset_t *sigmask)
{
	struct timespec ts = {
		.tv_sec = timeout_ms / 1000,
		.tv_nsec = (timeout_ms % 1000) * 1000000,
	};

	return ppoll(fds, nfds, timeout_ms < 0 ? NULL : &ts, sigmask);
}

/* lab3_getaddrinfo: rdma_getaddrinfo() for HOST (a name, an IPv4 or an IPv6
 * address, with or without the brackets of "[::1]"), with its failure
 * put in words. */
int lab3_getaddrinfo(const char *host, const char *port,
		     const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo **res, char *err, size_t err_len)
{
	char unbracketed[INET6_ADDRSTRLEN + 16];
	size_t len = host != NULL ? strlen(host) : 0;
	int ret;

	if (len > 2 && len < sizeof(unbracketed) + 2 && host[0] == '[' &&
	    host[len - 1] == ']') {
		snprintf(unbracketed, sizeof(unbracketed), "%.*s",
			 (int)(len - 2), host + 1);
		host = unbracketed;
	}
	ret = rdma_getaddrinfo(host, port, hints, res);
	if (ret == 0)
		return 0;
	snprintf(err, err_len, "cannot resolve the address: %s",
		 ret == EAI_SYSTEM ? strerror(errno) : gai_strerror(ret));
	return -EHOSTUNREACH;
}

/* destroy_stuck: SIGALRM's handler while lab3_destroy_id_within() waits in
 * rdma_destroy_id(), which has not returned in its time: say why and end
 * the program (exit status 3).  Only async-signal-safe calls. */
static const char *stuck_prog = "lab3";
static void destroy_stuck(int sig)
{
	static const char why[] = ": teardown: rdma_destroy_id() had not "
		"returned after 2 s: it waits until every rdma_cm event of its "
		"cm_id has been acknowledged: is each event that "
		"rdma_get_cm_event gives acknowledged with rdma_ack_cm_event?\n";

	(void)sig;
	(void)!write(STDERR_FILENO, stuck_prog, strlen(stuck_prog));
	(void)!write(STDERR_FILENO, why, sizeof(why) - 1);
	_exit(LAB3_EXIT_CONNECTION);
}

/* lab3_destroy_id_within: see util.h. */
void lab3_destroy_id_within(struct rdma_cm_id *id, const char *prog)
{
	struct sigaction stuck = { .sa_handler = destroy_stuck }, old;

	if (sigaction(SIGALRM, &stuck, &old) != 0) {
		rdma_destroy_id(id);
		return;
	}
	stuck_prog = prog;
	alarm(2);
	rdma_destroy_id(id);
	alarm(0);
	sigaction(SIGALRM, &old, NULL);
}
