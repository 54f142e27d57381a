/* SPDX-License-Identifier: MIT */
/*
 * util.h - what the programs need of the system beside RDMA (util.c):
 * the one ppoll(), non-blocking descriptors, address lookup with its
 * failure in words, and an alarm over rdma_destroy_id().  The one clock
 * is in common.h.
 */
#ifndef LAB3_UTIL_H
#define LAB3_UTIL_H

#include <poll.h>
#include <signal.h>
#include <stddef.h>

#include <rdma/rdma_cma.h>

/* The programs' one poll(): wait on the NFDS descriptors of FDS for up to
 * TIMEOUT_MS (-1: no limit), with the signal mask SIGMASK while blocked,
 * if it is not NULL.  A program that blocks its stop signals elsewhere
 * and passes a mask that unblocks them cannot lose a signal that arrives
 * just before the wait.  ppoll()'s result: -1 with errno on failure. */
int lab3_wait_fds(struct pollfd *fds, nfds_t nfds, long long timeout_ms,
		  const sigset_t *sigmask);

/* Make FD non-blocking, so that a read after poll() can never block the
 * single thread: 0, or a negative errno with ERR saying why. */
int lab3_set_nonblocking(int fd, char *err, size_t err_len);

/* rdma_getaddrinfo() for HOST (a name, an IPv4 or an IPv6 address, with
 * or without the brackets of "[::1]") and PORT, with HINTS, into *RES
 * (rdma_freeaddrinfo() it): 0, or -EHOSTUNREACH with ERR saying why. */
int lab3_getaddrinfo(const char *host, const char *port,
		     const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo **res, char *err, size_t err_len);

/* rdma_destroy_id(ID) within 2 s: it waits until every event reported
 * for ID has been acknowledged, so one event that rdma_get_cm_event()
 * gave and rdma_ack_cm_event() never took back makes it wait for ever.
 * An alarm ends the program then (exit status 3), saying so as PROG: for
 * a program with nothing left to do but exit (the sender), whose SIGALRM
 * is its own for those 2 s. */
void lab3_destroy_id_within(struct rdma_cm_id *id, const char *prog);

#endif /* LAB3_UTIL_H */
