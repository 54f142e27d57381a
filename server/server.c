/* SPDX-License-Identifier: MIT */
/*
 * server.c - the class server: one thread serves many receiver sessions
 * (-c) with one wait on the connection manager and every session's
 * completions; it accepts, refuses when full, runs each session's steps
 * (receiver.c) when its connection moves, ends sessions at their limits
 * (session.c keeps the rate floor and the window budget), prints each
 * summary line and stops on SIGINT or SIGTERM.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "listener.h"
#include "session.h"
#include "util.h"

/* The server blocks only in its one wait (wait_for_events()): the calls
 * that can block on a connection are poisoned here, so that using one
 * does not compile. */
#pragma GCC poison lab3_wait lab3_nudge lab3_resolve lab3_connect
#pragma GCC poison lab3_send_msg lab3_send_error lab3_disconnect

#define CLOSE_WAIT_MS 1000	/* for a failed session's ERROR to go */
#define DISCONNECT_WAIT_MS 2000	/* for the sender's DISCONNECTED */
#define STOPPING_REASON "the receiver is stopping"
#define CM_EVENTS_PER_TURN 64	/* see take_cm_events() */

/* Set by a SIGINT or SIGTERM (on_signal()): the serving loop stops. */
static volatile sig_atomic_t stop_requested;
/* Set by a SIGHUP (on_signal()): the serving loop reads the roster again. */
static volatile sig_atomic_t reload_requested;

/* ---- Serving ---- */

/* print_summary: the session's one line on stdout. */
static void print_summary(const struct session *s)
{
	const char *verdict = !s->has_verdict ? "none" :
			      s->rx.verdict == LAB3_VERDICT_GOOD ? "good" :
			      "bad";
	double seconds = (double)(lab3_now_us() - s->start_us) / 1e6;

	printf("session %u from %s: id %s, %llu bytes, verdict %s",
	       s->number, s->peer, s->id[0] ? s->id : "-",
	       (unsigned long long)s->rx.length, verdict);
	if (s->key_sent)
		printf(", key sent");
	if (s->saved_as[0])
		printf(", saved as %s", s->saved_as);
	if (s->kept_as[0])
		printf(", kept as %s", s->kept_as);
	printf(", %.2f s", seconds);
	if (s->error[0])
		printf(", failed: %s", s->error);
	printf("\n");
	fflush(stdout);
}

/* print_cpu: under -v, the session's CPU by phase (format_cpu()), on
 * stderr.  finish_session() prints it before the summary line, so that
 * whoever has read the summary finds it written. */
static void print_cpu(const struct session *s)
{
	char line[192];		/* six of "canaries 12345.123456 s, " */

	if (!s->opt->verbose)
		return;
	format_cpu(&s->cpu, cpu_now(), line, sizeof(line));
	fprintf(stderr, "receiver: session %u: cpu: %s\n", s->number, line);
}

/* ---- Serving: many sessions, one thread ---- */

struct server;
static void advance(struct server *srv, struct session *s);
static void end_early(struct session *s, const char *why);
static void refuse(struct server *srv, struct rdma_cm_id *id, const char *why);
static void stop_sessions(struct server *srv);

/* The receiver while it serves: its listener, whose rdma_cm channel all
 * its connections share, and the sessions in progress (-c at most). */
struct server {
	const struct options *opt;
	const uint8_t *secret;
	int ledger_fd;
	struct lab3_roster *roster;		/* -r, or NULL */
	struct lab3_listener listener;
	struct window_budget budget;		/* -b */
	struct store_use store;			/* -o, --store-max */
	struct ledger_sources sources;		/* -l: see record_end() */
	struct session *sessions[2 * MAX_SESSIONS_MAX];	/* and closing */
	int nsessions;
	unsigned number;		/* sessions accepted so far */
	int stopping;			/* a stop signal came */
};

/* finish_session: the session is over and its connection down: free
 * what it holds, write its ledger record if it has none yet, print its
 * CPU by phase (-v) and its summary line, and forget it. */
static void finish_session(struct server *srv, struct session *s)
{
	char err[LAB3_ERR_LEN];
	int i;

	free_windows(s);
	lab3_server_conn_destroy(&s->conn);
	if (s->ledger_fd >= 0 && !s->recorded &&
	    record_end(s, err, sizeof(err)) != 0)
		fprintf(stderr, "receiver: session %u: %s\n", s->number, err);
	print_cpu(s);
	print_summary(s);
	for (i = 0; srv->sessions[i] != s; i++)
		;
	srv->nsessions--;
	memmove(&srv->sessions[i], &srv->sessions[i + 1],
		(size_t)(srv->nsessions - i) * sizeof(srv->sessions[0]));
	free(s);
}

/* in_progress: the sessions that count against -c: all but those that
 * are over, closing or only settling what ended them (a sender that hung
 * up, a connection that failed: see lab3_settling()). */
static int in_progress(const struct server *srv)
{
	int n = 0;

	for (int i = 0; i < srv->nsessions; i++) {
		const struct session *s = srv->sessions[i];

		n += s->life < LIFE_CLOSING && s->conn.error == 0 &&
		     !s->conn.disconnected;
	}
	return n;
}

/* refuse_busy: a connection request while -c sessions are in progress:
 * turn it away at once, saying so (LAB3_BUSY_REASON: try later). */
static void refuse_busy(struct server *srv, struct rdma_cm_id *id)
{
	char why[64];

	if (srv->opt->max_sessions == 1)
		snprintf(why, sizeof(why), "%s with another session",
			 LAB3_BUSY_REASON);
	else
		snprintf(why, sizeof(why), "%s with %d other sessions",
			 LAB3_BUSY_REASON, in_progress(srv));
	refuse(srv, id, why);
}

/* refuse: turn the connection request ID away, saying WHY. */
static void refuse(struct server *srv, struct rdma_cm_id *id, const char *why)
{
	if (srv->opt->verbose)
		fprintf(stderr, "receiver: refusing a connection: %s\n", why);
	lab3_reject(id, why);
	rdma_destroy_id(id);
}

/* make_room: the receiver is full and a sender asks to connect: end the
 * session that has gone longest without sending FILE_INFO (counted from
 * its request while its connection is still being made), if that is at
 * least IDLE_EVICT_MS, so that idle connections cannot keep the others
 * out.  Returns 1 if it ended one. */
static int make_room(struct server *srv)
{
	long long now = lab3_now_ms();
	struct session *idle = NULL;
	char why[LAB3_REASON_MAX + 1];

	for (int i = 0; i < srv->nsessions; i++) {
		struct session *s = srv->sessions[i];

		if ((s->life == LIFE_ACCEPTING ||
		     (s->life == LIFE_RUNNING && s->limit == LIMIT_HANDSHAKE)) &&
		    now - s->connected_at >= IDLE_EVICT_MS &&
		    (idle == NULL || s->connected_at < idle->connected_at))
			idle = s;
	}
	if (idle == NULL)
		return 0;
	snprintf(why, sizeof(why), "ended to make room for another sender: "
		 "no FILE_INFO in %.1f s while the receiver was full (the "
		 "idle limit)", (double)(now - idle->connected_at) / 1000);
	end_early(idle, why);
	advance(srv, idle);
	return 1;
}

/* places_of: how many of the places in progress PEER's address holds. */
static int places_of(const struct server *srv, const char *peer)
{
	int n = 0;

	for (int i = 0; i < srv->nsessions; i++) {
		const struct session *s = srv->sessions[i];

		n += s->life < LIFE_CLOSING && s->conn.error == 0 &&
		     !s->conn.disconnected && same_host(s->peer, peer);
	}
	return n;
}

/* make_room_for: the receiver is full and a sender from PEER asks to
 * connect.  One address must not keep the others out (OpenSSH's
 * PerSourceMaxStartups, nginx's limit_conn): if an address holds at least
 * two places more than PEER's, end the one of its sessions that has
 * stored the fewest bytes (the newest of those), telling it why.  A class
 * that comes from one address alone, or from one address each, never
 * meets it.  Returns 1 if it ended one. */
static int make_room_for(struct server *srv, const char *peer)
{
	struct session *most = NULL, *victim = NULL;
	int most_places = 0, places = places_of(srv, peer);
	char why[LAB3_REASON_MAX + 1];

	for (int i = 0; i < srv->nsessions; i++) {
		struct session *s = srv->sessions[i];
		int n;

		if (s->life >= LIFE_CLOSING || s->conn.error != 0 ||
		    s->conn.disconnected)
			continue;
		n = places_of(srv, s->peer);
		if (n > most_places) {
			most = s;
			most_places = n;
		}
	}
	if (most == NULL || most_places < places + 2)
		return 0;
	for (int i = 0; i < srv->nsessions; i++) {
		struct session *s = srv->sessions[i];

		if (s->life >= LIFE_CLOSING || s->conn.error != 0 ||
		    s->conn.disconnected || !same_host(s->peer, most->peer))
			continue;
		if (victim == NULL || s->rx.stored < victim->rx.stored ||
		    (s->rx.stored == victim->rx.stored &&
		     s->connected_at >= victim->connected_at))
			victim = s;
	}
	snprintf(why, sizeof(why), "ended for a sender from another "
		 "address: yours held %d of %d places (the per-address share)",
		 most_places, in_progress(srv));
	end_early(victim, why);
	advance(srv, victim);
	return 1;
}

/* over_address_sessions: with --address-sessions, refuse (and return 1)
 * a request from PEER whose address already has that many sessions, in
 * progress or closing: a flood of connections that fail at once holds
 * its own address's places, not the others' (OpenSSH's
 * PerSourceMaxStartups).  "receiver busy": the sender may try later. */
static int over_address_sessions(struct server *srv, struct rdma_cm_id *id,
				 const char *peer)
{
	char why[LAB3_REASON_MAX + 1];
	int n = 0;

	if (srv->opt->address_sessions == 0)
		return 0;
	for (int i = 0; i < srv->nsessions; i++)
		n += same_host(srv->sessions[i]->peer, peer);
	if (n < srv->opt->address_sessions)
		return 0;
	snprintf(why, sizeof(why), "%s: your address has %d sessions open, "
		 "its --address-sessions", LAB3_BUSY_REASON, n);
	refuse(srv, id, why);
	return 1;
}

/* new_session: a connection request: accept it as a new session, or
 * refuse it when -c sessions are in progress and none can make room
 * (an idle one, or one of an address that holds more than its share). */
static void new_session(struct server *srv, struct rdma_cm_id *id)
{
	struct session *s;
	char peer[sizeof(s->peer)];

	if (srv->stopping) {
		refuse(srv, id, STOPPING_REASON);
		return;
	}
	lab3_addr_name(id, 1, peer, sizeof(peer));
	if (over_address_sessions(srv, id, peer))
		return;
	if ((in_progress(srv) >= srv->opt->max_sessions && !make_room(srv) &&
	     !make_room_for(srv, peer)) ||
	    srv->nsessions == 2 * MAX_SESSIONS_MAX ||
	    (s = calloc(1, sizeof(*s))) == NULL) {
		refuse_busy(srv, id);
		return;
	}
	*s = (struct session) {
		.opt = srv->opt,
		.budget = &srv->budget,
		.store = &srv->store,
		.sources = &srv->sources,
		.secret = srv->secret,
		.roster = srv->roster,
		.number = ++srv->number,
		.tmp_fd = -1,
		.ledger_fd = srv->ledger_fd,
		.conn = {
			.prog = "receiver",
			.verbose = srv->opt->verbose,
			.timeout_ms = srv->opt->timeout_s * 1000,
		},
		.life = LIFE_ACCEPTING,
	};
	srv->sessions[srv->nsessions++] = s;
	s->start_us = lab3_now_us();
	s->cpu.start = cpu_now();
	snprintf(s->peer, sizeof(s->peer), "%s", peer);
	if (srv->opt->verbose)
		fprintf(stderr, "receiver: session %u: connection request from "
			"%s\n", s->number, peer);
	if (lab3_accept_request(&srv->listener, id, &s->conn) != 0) {
		snprintf(s->error, sizeof(s->error), "%s", s->conn.err);
		finish_session(srv, s);
		return;
	}
	s->connected_at = lab3_now_ms();	/* until it is, the request */
	s->deadline = s->connected_at + s->conn.timeout_ms;
	s->wait_ms = s->conn.timeout_ms;
}

/* last_message_going: S's sends have not all completed, and still can:
 * the ERROR that ends it, say, posted just before a timeout of ours made
 * that the connection's error (lab3_sends_completed() stops at an error). */
static int last_message_going(const struct session *s)
{
	return s->conn.credits < LAB3_SEND_DEPTH && !s->conn.disconnected &&
	       !s->conn.error_from_wc;
}

/* close_session: after the lab's steps: let the session's last message
 * (an ERROR) go, then disconnect and wait for the sender's DISCONNECTED,
 * each for a bounded time; then finish it.  Returns 1 while it waits. */
static int close_session(struct server *srv, struct session *s,
			 long long now)
{
	if (s->life == LIFE_CLOSING) {
		if ((lab3_sends_completed(&s->conn) == -EAGAIN ||
		     last_message_going(s)) && now < s->deadline)
			return 1;
		s->life = LIFE_DISCONNECTING;
		s->deadline = now + DISCONNECT_WAIT_MS;
		if (!lab3_disconnect_start(&s->conn))
			s->deadline = now;
	}
	if (!s->conn.disconnected && now < s->deadline)
		return 1;
	finish_session(srv, s);
	return 0;
}

/* advance: move session S on as far as it goes now: from its connection
 * to its steps, from its steps to its closing.  S may be finished (and
 * freed) on the way. */
static void advance(struct server *srv, struct session *s)
{
	long long now = lab3_now_ms();

	if (s->life == LIFE_ACCEPTING) {
		if (s->conn.error == 0 && !s->conn.disconnected &&
		    !s->conn.connected)
			return;
		if (s->conn.connected && s->conn.error == 0) {
			s->life = LIFE_RUNNING;
			s->deadline = 0;
			s->connected_at = now;
			s->limit = LIMIT_HANDSHAKE;
			s->limit_at = now + HANDSHAKE_S * 1000LL;
			lab3_rx_begin(&s->rx, s->opt->max_bytes,
				      s->opt->window_size,
				      (uint32_t)s->opt->windows);
			s->rx.min_bytes = s->opt->min_bytes;
		} else {
			snprintf(s->error, sizeof(s->error), "%s",
				 s->conn.error ? s->conn.err :
				 "the peer disconnected");
			s->life = LIFE_CLOSING;
		}
	}
	if (s->life == LIFE_RUNNING) {
		if (lab3_settling(&s->conn)) {
			s->deadline = s->conn.settle_until;
			return;
		}
		if (run_session(s) == STEP_WAIT)
			return;
		s->life = LIFE_CLOSING;
		s->deadline = now + CLOSE_WAIT_MS;
	}
	close_session(srv, s, now);
}

/* wake: something happened on S's connection: its silence is over (its
 * wait starts again), and it moves on.  A wait for room in the send queue
 * starts again only when a send has completed: messages from a sender
 * that takes none of ours do not keep its session alive. */
static void wake(struct server *srv, struct session *s)
{
	if (s->deadline != 0 && s->life == LIFE_RUNNING && s->waiting &&
	    !(s->room_wait && s->conn.credits == 0))
		set_deadline(s);
	advance(srv, s);
}

/* ---- The limits: the handshake, the rate floor ---- */

/* limit_due: when S's limit is next looked at, or 0: none is running. */
static long long limit_due(const struct session *s)
{
	if (s->life != LIFE_RUNNING || s->limit == LIMIT_NONE ||
	    s->conn.error != 0)
		return 0;
	return s->limit_at;
}

/* next_due: when the serving loop must come back to S: its deadline or
 * its limit, whichever is first, or 0: neither. */
static long long next_due(const struct session *s)
{
	long long limit = limit_due(s);

	if (s->deadline == 0 || (limit != 0 && limit < s->deadline))
		return limit;
	return s->deadline;
}

/* check_limit: S's limit is due: the handshake limit ends it; the rate
 * floor ends it when it fell under.  Returns 1 if it ended S. */
static int check_limit(struct session *s, long long now)
{
	char why[LAB3_REASON_MAX + 1];

	if (s->limit == LIMIT_HANDSHAKE)
		snprintf(why, sizeof(why), "no FILE_INFO within %d s of "
			 "connecting (the handshake limit)", HANDSHAKE_S);
	else if (rate_check(s, now, why, sizeof(why)) == 0)
		return 0;
	end_early(s, why);
	return 1;
}

/* end_early: a limit ends S before its sender is done: WHY is the
 * connection's error, and the sender is told (ERROR, code RESOURCES: the
 * receiver will not hold the session any longer). */
static void end_early(struct session *s, const char *why)
{
	if (s->conn.error != 0)		/* it has ended already */
		return;
	lab3_post_error(&s->conn, LAB3_ERR_RESOURCES, why);
	lab3_time_out(&s->conn, 0);
	snprintf(s->conn.err, sizeof(s->conn.err), "%s", why);
}

/* room_timeout: why S ends when its send queue stayed full for its
 * timeout (wait_for_room()). */
static const char *room_timeout(struct session *s)
{
	static char why[LAB3_REASON_MAX + 1];

	snprintf(why, sizeof(why), "timed out after %d s with the send queue "
		 "full: the sender took none of our last %d messages",
		 (s->wait_ms + 999) / 1000, LAB3_SEND_DEPTH);
	return why;
}

/* end_silence: S's sender said nothing for its timeout: tell it what we
 * waited for (ERROR, code RESOURCES: the receiver will not hold the
 * session any longer), and end the session with the same words. */
static void end_silence(struct session *s)
{
	if (s->conn.error == 0 &&
	    lab3_time_out(&s->conn, s->wait_ms) == -ETIMEDOUT)
		lab3_post_error(&s->conn, LAB3_ERR_RESOURCES, s->conn.err);
}

/* expire: S's deadline has passed: a silent sender times out; a closing
 * session stops waiting. */
static void expire(struct server *srv, struct session *s)
{
	long long now = lab3_now_ms(), limit = limit_due(s);

	if (limit != 0 && now >= limit && check_limit(s, now))
		;	/* ended by its limit */
	else if (s->deadline == 0 || now < s->deadline)
		return;	/* the rate floor was looked at, and met */
	else if (s->life == LIFE_RUNNING && s->room_wait &&
		 s->conn.credits == 0 && s->conn.error == 0 &&
		 !s->conn.disconnected)
		end_early(s, room_timeout(s));
	else if (s->life == LIFE_RUNNING && s->waiting &&
		 !lab3_settling(&s->conn))
		end_silence(s);
	else if (s->life == LIFE_ACCEPTING && !lab3_settling(&s->conn))
		lab3_time_out(&s->conn, s->wait_ms);
	advance(srv, s);
}

/* find_session: the session whose connection is ID, or NULL. */
static struct session *find_session(struct server *srv, struct rdma_cm_id *id)
{
	for (int i = 0; i < srv->nsessions; i++)
		if (srv->sessions[i]->conn.id == id)
			return srv->sessions[i];
	return NULL;
}

/* take_cm_events: the events waiting on the listener's channel, up to
 * CM_EVENTS_PER_TURN (a flood of connection requests then waits for the
 * next turn, after the sessions): a connection request becomes a session
 * (or is refused as busy); any other event goes to its session, which
 * moves on at once, so that a session that has ended makes room before
 * the next request is seen.  Returns 0, or -1 when the listener's channel
 * failed. */
static int take_cm_events(struct server *srv)
{
	struct rdma_cm_event *event;
	int ret = 0, taken = 0;

	while (taken++ < CM_EVENTS_PER_TURN &&
	       (ret = lab3_listener_event(&srv->listener, &event)) == 0) {
		struct rdma_cm_id *id = event->id;
		struct session *s;

		if (event->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			rdma_ack_cm_event(event);
			new_session(srv, id);
			continue;
		}
		s = find_session(srv, id);
		if (s != NULL)
			lab3_apply_cm_event(&s->conn, event);
		rdma_ack_cm_event(event);	/* before S may destroy ID */
		if (s != NULL) {
			lab3_take_news(&s->conn);	/* messages before hang-up */
			wake(srv, s);
		}
	}
	if (ret == 0 || ret == -EAGAIN)
		return 0;
	fprintf(stderr, "receiver: %s\n", srv->listener.err);
	return -1;
}

/* wait_for_events: where the server blocks, and nowhere else: wait
 * (lab3_wait_fds(), the programs' one poll) on the listener's channel
 * and every session's completion channel, until something happens or
 * the earliest deadline, with the stop signals let in (WAIT_MASK): the
 * only place they are.  Then take what happened: completions, and
 * rdma_cm events.  Returns 0, or -1 when the listener failed. */
static int wait_for_events(struct server *srv, const sigset_t *wait_mask)
{
	struct pollfd fds[1 + 2 * MAX_SESSIONS_MAX];
	long long next = -1, now = lab3_now_ms(), due;
	int n = srv->nsessions;

	fds[0] = (struct pollfd){ .fd = srv->listener.cm_channel->fd,
				  .events = POLLIN };
	for (int i = 0; i < n; i++) {
		struct session *s = srv->sessions[i];

		fds[1 + i] = (struct pollfd){ .fd = lab3_conn_fd(&s->conn),
					      .events = POLLIN };
		if (next_due(s) != 0 && (next < 0 || next_due(s) < next))
			next = next_due(s);
		if (s->woken)
			next = now;	/* its turn came: do not sleep */
	}
	if (srv->ledger_fd >= 0 && (due = next_summary(&srv->sources)) != 0 &&
	    (next < 0 || due < next))
		next = due;	/* a summing-up comes due: wake for it */
	if (next >= 0)
		next = next > now ? next - now : 0;
	if (lab3_wait_fds(fds, (nfds_t)(1 + n), next, wait_mask) < 0) {
		if (errno == EINTR)
			return 0;	/* serve_loop() sees stop_requested */
		fprintf(stderr, "receiver: poll: %s\n", strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++)
		if (fds[1 + i].revents & POLLIN) {
			lab3_take_news(&srv->sessions[i]->conn);
			srv->sessions[i]->woken = 1;
		}
	if ((fds[0].revents & POLLIN) && take_cm_events(srv) != 0)
		return -1;
	return 0;
}

/* served_signals: SIGINT and SIGTERM (stop), SIGHUP (read the roster
 * again), into SET. */
static void served_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
}

/* serve_hold_signals: see session.h.  systemd counts a death by SIGHUP
 * as a clean exit, so a `systemctl reload` in the service's first
 * milliseconds, before install_signal_handlers(), would stop it for good
 * (Restart=on-failure does not restart it).  Held from main()'s first
 * line, such a signal stays pending until the serving loop takes it
 * (take_pending_signals()): a SIGHUP reads the roster again, a SIGTERM
 * stops the receiver with exit status 0. */
void serve_hold_signals(sigset_t *orig)
{
	sigset_t served;

	served_signals(&served);
	sigprocmask(SIG_BLOCK, &served, orig);
}

/* on_signal: the handler of the served signals: ask the serving loop to
 * stop, or to read the roster again (SIGHUP: `systemctl reload`, which
 * must never stop a service); the wait it interrupts returns -EINTR. */
static void on_signal(int sig)
{
	if (sig == SIGHUP)
		reload_requested = 1;
	else
		stop_requested = 1;
}

/* take_pending_signals: a served signal that is pending is taken here, on
 * every turn.  They are let in only while ppoll() sleeps, and it does not
 * sleep, nor let a pending one in, while some descriptor is always ready
 * (a flood of connection requests, say). */
static void take_pending_signals(void)
{
	static const struct timespec now = { 0, 0 };
	sigset_t set;
	int sig;

	served_signals(&set);
	while ((sig = sigtimedwait(&set, NULL, &now)) > 0)
		on_signal(sig);
}

/* reload_roster: SIGHUP: read the roster again (without -r, say that
 * there is nothing to read).  Sessions go on; the next ID checked meets
 * the new roster.  One that cannot be read, or with which the quotas do
 * not add up (quotas_add_up()), is refused, with one line, and the old
 * one stays in force. */
static void reload_roster(struct server *srv)
{
	struct lab3_roster fresh;
	char err[LAB3_ERR_LEN];

	if (srv->opt->roster == NULL) {
		fprintf(stderr, "receiver: SIGHUP: no roster (-r ROSTER) to "
			"read again; serving on\n");
		return;
	}
	if (lab3_roster_load(srv->opt->roster, &fresh, err,
			     sizeof(err)) != 0 ||
	    (srv->opt->out_dir != NULL &&
	     quotas_add_up(srv->opt, fresh.n, err, sizeof(err)) != 0)) {
		lab3_roster_free(&fresh);	/* (empty, if not read) */
		fprintf(stderr, "receiver: SIGHUP: %s; the roster of %zu IDs "
			"stays\n", err, srv->roster->n);
		return;
	}
	lab3_roster_free(srv->roster);
	*srv->roster = fresh;
	fprintf(stderr, "receiver: SIGHUP: roster %s read again: %zu IDs\n",
		srv->opt->roster, srv->roster->n);
}

/* recount_store: SIGHUP: with -o, add up its files again and forget
 * those that are gone: files the instructor removed give their room and
 * quota back here, and only here (a refusal never walks the disk). */
static void recount_store(struct server *srv)
{
	const struct options *opt = srv->opt;
	uint64_t used;

	if (opt->out_dir == NULL)
		return;
	if (opt->store_max != 0 && count_used(opt->out_dir, &used) == 0)
		srv->store.used = used;
	if (recount_kept(&srv->store, opt, 1) != 0)
		fprintf(stderr, "receiver: SIGHUP: out of memory: some kept "
			"files count against no address\n");
	fprintf(stderr, "receiver: SIGHUP: -o %s counted again: %zu files "
		"kept%s\n", opt->out_dir, srv->store.nkept,
		quotas_on(opt) ? "" : " (no quotas)");
}

/* sum_up: -l: sum up in the ledger the sessions that were counted, not
 * recorded, an interval ago (record_summaries()). */
static void sum_up(struct server *srv)
{
	char err[LAB3_ERR_LEN];

	if (record_summaries(&srv->sources, srv->ledger_fd, 0, err,
			     sizeof(err)) != 0)
		fprintf(stderr, "receiver: %s\n", err);
}

/* serve_loop: serve until a stop signal or a failed listener: wait for
 * events, then move on every session that they woke or whose deadline
 * has passed.  No step blocks, so every turn comes back here, where a
 * stop signal is seen: the sessions in progress are ended
 * (stop_sessions()) and the loop goes on until they have closed, a few
 * seconds at most; a second signal ends them at once.  Returns the exit
 * status. */
static int serve_loop(struct server *srv, const sigset_t *wait_mask)
{
	int status = LAB3_EXIT_OK;

	for (;;) {
		struct session *now_serving[2 * MAX_SESSIONS_MAX];
		int n;

		take_pending_signals();
		if (reload_requested) {
			reload_requested = 0;
			reload_roster(srv);
			recount_store(srv);
		}
		if (srv->ledger_fd >= 0)
			sum_up(srv);
		if (stop_requested) {
			stop_requested = 0;	/* to see a second one */
			if (srv->stopping)
				break;
			stop_sessions(srv);
		}
		if (srv->stopping && srv->nsessions == 0)
			break;
		if (wait_for_events(srv, wait_mask) != 0) {
			status = LAB3_EXIT_CONNECTION;
			break;
		}
		/* A copy: advance() may finish (and free) its session. */
		n = srv->nsessions;
		memcpy(now_serving, srv->sessions, (size_t)n * sizeof(*now_serving));
		for (int i = 0; i < n; i++) {
			struct session *s = now_serving[i];

			if (s->woken) {
				s->woken = 0;
				wake(srv, s);
			} else if (next_due(s) != 0 &&
				   lab3_now_ms() >= next_due(s)) {
				expire(srv, s);
			}
		}
	}
	while (srv->nsessions > 0)
		finish_session(srv, srv->sessions[0]);
	return status;
}

/* stop_sessions: a stop signal came: refuse new senders from now on, and
 * end every session in progress as a failed one ends: its sender is told
 * (ERROR, code RESOURCES), then all disconnect at once, each waiting a
 * bounded time (close_session()). */
static void stop_sessions(struct server *srv)
{
	long long now = lab3_now_ms();

	srv->stopping = 1;
	for (int i = 0; i < srv->nsessions; i++) {
		struct session *s = srv->sessions[i];

		if (s->life >= LIFE_CLOSING)
			continue;
		if (s->error[0] == '\0')
			snprintf(s->error, sizeof(s->error),
				 "interrupted by a signal");
		if (s->life == LIFE_RUNNING)
			lab3_post_error(&s->conn, LAB3_ERR_RESOURCES,
					STOPPING_REASON);
		s->life = LIFE_CLOSING;
		s->deadline = now + CLOSE_WAIT_MS;
		s->woken = 1;
	}
}

/* ---- Stop signals, and serving until one comes ---- */

/* install_signal_handlers: SIGINT and SIGTERM end the serving loop,
 * SIGHUP reads the roster again (without one, it says so, and serves on).
 * They stay blocked except while the receiver waits (see struct
 * lab3_listener), so that one arriving between two waits is not lost:
 * the next wait returns at once.  (main() has held them blocked since its
 * first line, serve_hold_signals(): one that came before is pending, and
 * the first turn of serve_loop() takes it.)  ORIG receives the mask to
 * wait with: the one before, without the served signals. */
static void install_signal_handlers(sigset_t *orig)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t served;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	served_signals(&served);
	sigprocmask(SIG_BLOCK, &served, orig);
	sigdelset(orig, SIGINT);
	sigdelset(orig, SIGTERM);
	sigdelset(orig, SIGHUP);
}

/* setup_store: what -o holds when serving starts: its files' bytes for
 * --store-max, --address-max's share in bytes, whether the quotas add up
 * (with ROSTER), and which address and ID saved which file.  0, or -1
 * after saying why. */
static int setup_store(struct store_use *store, struct options *opt,
		       const struct lab3_roster *roster)
{
	char why[LAB3_ERR_LEN];

	if (opt->out_dir == NULL)
		return 0;
	if (opt->store_max != 0 &&
	    count_used(opt->out_dir, &store->used) != 0) {
		fprintf(stderr, "receiver: -o %s: cannot add up its files for "
			"--store-max: %s\n", opt->out_dir, strerror(errno));
		return -1;
	}
	if (opt->store_max != 0 && opt->verbose)
		fprintf(stderr, "receiver: -o %s holds %llu bytes of files, of "
			"--store-max %llu\n", opt->out_dir,
			(unsigned long long)store->used,
			(unsigned long long)opt->store_max);
	id_max_default(opt);
	if (address_share(opt, why, sizeof(why)) != 0 ||
	    quotas_add_up(opt, roster != NULL ? roster->n : 0, why,
			  sizeof(why)) != 0) {
		fprintf(stderr, "receiver: the quotas do not add up: %s\n",
			why);
		return -1;
	}
	if (quotas_on(opt) && opt->verbose)
		fprintf(stderr, "receiver: quotas: --address-max %llu, "
			"--id-max %llu (0: none)\n",
			(unsigned long long)opt->address_max,
			(unsigned long long)opt->id_max);
	store->roster = roster;
	if (load_kept(store, opt, why, sizeof(why)) != 0) {
		fprintf(stderr, "receiver: quotas: %s\n", why);
		free_kept(store);
		return -1;
	}
	if (quotas_on(opt) && opt->ledger == NULL)
		fprintf(stderr, "receiver: warning: --address-max, --id-max "
			"and --keep without -l: a restart forgets which address "
			"and ID saved which file (the earlier files count for "
			"none)\n");
	return 0;
}

/* serve: listen, then serve one session after another until a stop
 * signal; the exit status. */
int serve(struct options *opt, const uint8_t *secret, int ledger_fd,
	  struct lab3_roster *roster)
{
	struct server srv = {
		.opt = opt,
		.secret = secret,
		.ledger_fd = ledger_fd,
		.roster = roster,
		.budget = { .bytes = opt->budget },
	};
	struct lab3_listener *listener = &srv.listener;
	static char port[8];	/* opt->port's, past serve() */
	char where[LAB3_ERR_LEN];
	sigset_t wait_mask;
	uint16_t bound_port;
	int status;

	srv.budget.sessions = srv.sessions;
	srv.budget.nsessions = &srv.nsessions;
	srv.store.sessions = srv.sessions;
	srv.store.nsessions = &srv.nsessions;
	if (opt->port[0] == '\0') {
		snprintf(port, sizeof(port), "%d", LAB3_DEFAULT_PORT);
		opt->port = port;
	}
	if (setup_store(&srv.store, opt, roster) != 0)
		return LAB3_EXIT_LOCAL;
	install_signal_handlers(&wait_mask);
	listener->wait_sigmask = &wait_mask;
	if (lab3_listen(listener, opt->addr, opt->port, &bound_port) != 0) {
		fprintf(stderr, "receiver: listen on %s:%s: %s\n",
			opt->addr ? opt->addr : "*", opt->port, listener->err);
		lab3_listener_destroy(listener);
		free_kept(&srv.store);
		return LAB3_EXIT_CONNECTION;
	}
	printf("listening on %s\n",
	       lab3_addr_name(listener->id, 0, where, sizeof(where)));
	fflush(stdout);
	status = serve_loop(&srv, &wait_mask);
	lab3_listener_destroy(listener);
	free_kept(&srv.store);
	if (ledger_fd >= 0 && record_summaries(&srv.sources, ledger_fd, 1,
					       where, sizeof(where)) != 0)
		fprintf(stderr, "receiver: %s\n", where);
	return status;
}
