/* SPDX-License-Identifier: MIT */
/*
 * session.c - what the steps of a receiver session (receiver.c) ask of
 * the class server that runs them (server.c): a wait for the sender and
 * its deadline, the rate floor, the window budget that all sessions
 * share, taken in per-address turns, and the count of a session's CPU by
 * phase.  It calls neither file: both call it.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "common.h"
#include "session.h"

/* ---- A session's windows ---- */

/* window_bytes: the size of each window of this session: a window, or
 * the whole file when it is smaller. */
uint64_t window_bytes(const struct session *s)
{
	return s->rx.length < s->rx.window_size ? s->rx.length :
	       s->rx.window_size;
}

/* peer_source: the source that PEER ("198.18.0.1:40152",
 * "[fd00::1]:7471") counts as for the per-address limits, into OUT: its
 * IPv4 address, or the /64 of its IPv6 address (one host holds a whole
 * /64, as OpenSSH's PerSourceNetBlockSize assumes: "fd00:0:0:1::/64"),
 * an IPv4-mapped one as IPv4.  Anything else: the name without its
 * port. */
void peer_source(const char *peer, char *out, size_t len)
{
	const char *colon = strrchr(peer, ':');
	size_t host_len = colon != NULL ? (size_t)(colon - peer) : strlen(peer);
	char host[INET6_ADDRSTRLEN + 2];
	struct in6_addr a6;

	if (host_len >= 2 && host_len < sizeof(host) && peer[0] == '[' &&
	    peer[host_len - 1] == ']') {
		memcpy(host, peer + 1, host_len - 2);
		host[host_len - 2] = '\0';
		if (inet_pton(AF_INET6, host, &a6) == 1) {
			if (IN6_IS_ADDR_V4MAPPED(&a6)) {
				inet_ntop(AF_INET, &a6.s6_addr[12], out,
					  (socklen_t)len);
				return;
			}
			memset(&a6.s6_addr[8], 0, 8);
			if (inet_ntop(AF_INET6, &a6, host, sizeof(host)))
				snprintf(out, len, "%s/64", host);
			return;
		}
	}
	snprintf(out, len, "%.*s", (int)host_len, peer);
}

/* same_host: whether two peers count as one source (peer_source()). */
int same_host(const char *a, const char *b)
{
	char sa[LAB3_SOURCE_LEN], sb[LAB3_SOURCE_LEN];

	peer_source(a, sa, sizeof(sa));
	peer_source(b, sb, sizeof(sb));
	return strcmp(sa, sb) == 0;
}

/* ---- The rate floor ---- */

/* start_rate_floor: S's FILE_INFO came: from now on its file must move
 * at RATE_FLOOR at least, over any interval of RATE_INTERVAL_S (or of
 * two windows at the floor, if longer: bytes count once a chunk is
 * stored), after the first such interval.  See rate_check(). */
void start_rate_floor(struct session *s)
{
	long long now = lab3_now_ms();
	uint64_t two_windows = 2 * window_bytes(s) / (RATE_FLOOR / 1000);

	s->rate_interval_ms = RATE_INTERVAL_S * 1000LL;
	if (two_windows > (uint64_t)s->rate_interval_ms)
		s->rate_interval_ms = (long long)two_windows;
	s->marks[0] = (struct rate_mark){ .at = now };
	s->nmarks = 1;
	s->rate_checked = now;
	s->limit = LIMIT_RATE;
	s->limit_at = now + s->rate_interval_ms;
}

/* queued_idle: S waits for window memory with no chunk of its own in
 * flight: the receiver holds it up, not its sender. */
static int queued_idle(const struct session *s)
{
	const struct window_budget *b = s->budget;

	if (s->rx.offered > s->rx.stored)
		return 0;
	for (int i = 0; i < b->nqueue; i++)
		if (b->queue[i] == s)
			return 1;
	return 0;
}

/* rate_check: S's rate floor is looked at (every sixth of its interval):
 * mark what it has stored, and judge the bytes since the newest mark at
 * least an interval old, allowing for the one window still on its way.
 * Time spent waiting for window memory (the receiver's doing, not the
 * sender's) does not count.  Returns 0 while it keeps up, or -1 with WHY
 * filled. */
int rate_check(struct session *s, long long now, char *why,
		      size_t why_len)
{
	const struct rate_mark *from = NULL;
	uint64_t moved, floor;
	long long active;

	if (queued_idle(s))
		s->queued_ms += now - s->rate_checked;
	s->rate_checked = now;
	if (s->nmarks == RATE_MARKS)
		memmove(&s->marks[0], &s->marks[1],
			--s->nmarks * sizeof(s->marks[0]));
	s->marks[s->nmarks++] = (struct rate_mark){ now, s->bytes_stored,
						    s->queued_ms };
	s->limit_at = now + s->rate_interval_ms / 6;
	for (int i = 0; i < s->nmarks; i++)
		if (now - s->marks[i].at >= s->rate_interval_ms)
			from = &s->marks[i];
	if (from == NULL)
		return 0;
	moved = s->bytes_stored - from->bytes;
	active = now - from->at - (s->queued_ms - from->queued_ms);
	floor = (uint64_t)active * (RATE_FLOOR / 1000);
	if (moved + window_bytes(s) >= floor)
		return 0;
	snprintf(why, why_len, "too slow: %llu bytes stored in the last %u s "
		 "(the rate floor: 1 MiB/s over any %u s)",
		 (unsigned long long)moved, (unsigned)((now - from->at) / 1000),
		 (unsigned)(s->rate_interval_ms / 1000));
	return -1;
}

/* ---- A step that waits: its deadline ---- */

/* wait_for_peer: the step cannot finish before the connection moves:
 * the serving loop comes back to it then, or when WAIT_MS (0: the
 * timeout) have passed in silence.  Returns STEP_WAIT. */
int wait_for_peer(struct session *s, int wait_ms)
{
	s->room_wait = 0;
	s->wait_ms = wait_ms > 0 ? wait_ms : s->conn.timeout_ms;
	if (s->deadline == 0)
		set_deadline(s);
	return STEP_WAIT;
}

/* wait_for_room: the send queue is full: the sender has not taken our
 * last LAB3_SEND_DEPTH messages (a sender that posts no receive for them:
 * its device answers "receiver not ready", and ours tries again, a few
 * seconds at most).  The serving loop comes back when a send completes.
 * Nothing else the sender does makes this wait shorter or longer (see
 * wake()): without room for -t, the session times out (expire()).
 * Returns STEP_WAIT. */
int wait_for_room(struct session *s)
{
	int again = s->room_wait;
	int ret = wait_for_peer(s, 0);

	if (s->opt->verbose && !again)
		fprintf(stderr, "receiver: session %u: the send queue is full: "
			"waiting for the sender to take our messages\n",
			s->number);
	s->room_wait = 1;
	return ret;
}

/* set_deadline: when the session's wait runs out: after its silence
 * (wait_ms from now).  Its limit is looked at apart (next_due()). */
void set_deadline(struct session *s)
{
	s->deadline = lab3_now_ms() + s->wait_ms;
}

/* ---- The window budget (-b) ---- */

/* windows_of: how many windows the sessions from PEER's address hold. */
static int windows_of(const struct window_budget *b, const char *peer)
{
	int n = 0;

	for (int i = 0; i < *b->nsessions; i++) {
		const struct session *s = b->sessions[i];

		for (uint32_t w = 0; w < s->rx.nwindows; w++)
			n += s->windows[w].held && same_host(s->peer, peer);
	}
	return n;
}

/* next_turn: whose turn it is for window memory, of the sessions that
 * wait for it: one from the address that holds the fewest windows, and
 * of those, one from another address than the last turn's (when the
 * budget holds one window, every address holds none when it comes
 * free: the turns then go round the addresses); the one that has waited
 * longest of those.  One address's many sessions cannot keep another's
 * waiting (nginx's limit_conn, for memory); a class from one address is
 * served first come, first served. */
static struct session *next_turn(const struct window_budget *b)
{
	struct session *next = NULL;
	int best = 0;

	for (int i = 0; i < b->nqueue; i++) {
		const char *peer = b->queue[i]->peer;
		int rank = 2 * windows_of(b, peer) +
			   same_host(peer, b->last_turn);

		if (next == NULL || rank < best) {
			next = b->queue[i];
			best = rank;
		}
	}
	return next;
}

/* take_budget: BYTES of the window budget for S, if they are free and
 * it is S's turn (next_turn()).  Returns 1 when S has them. */
int take_budget(struct session *s, uint64_t bytes)
{
	struct window_budget *b = s->budget;

	if ((b->nqueue > 0 && next_turn(b) != s) || b->used + bytes > b->bytes)
		return 0;
	b->used += bytes;
	snprintf(b->last_turn, sizeof(b->last_turn), "%s", s->peer);
	leave_queue(s);
	return 1;
}

/* wait_for_budget: S waits, in the queue, for window memory: it is not
 * waiting for its sender, so only its limit can end the wait.  Returns
 * STEP_WAIT. */
int wait_for_budget(struct session *s)
{
	join_queue(s);
	s->waiting = 1;
	s->room_wait = 0;
	s->deadline = 0;
	return STEP_WAIT;
}

/* give_back: W's chunk is stored (or its session over): let go of its
 * pages and return its bytes to the budget; the session first in the
 * queue gets its turn. */
void give_back(struct session *s, struct window *w)
{
	struct window_budget *b = s->budget;

	if (!w->held)
		return;
	w->held = 0;
	b->used -= window_bytes(s);
	if (w->buf != NULL)
		madvise(w->buf, window_bytes(s), MADV_DONTNEED);
	if (b->nqueue > 0)
		next_turn(b)->woken = 1;
}

/* join_queue: S waits for window memory, after those already waiting. */
void join_queue(struct session *s)
{
	struct window_budget *b = s->budget;
	int i;

	for (i = 0; i < b->nqueue && b->queue[i] != s; i++)
		;
	if (i == b->nqueue)
		b->queue[b->nqueue++] = s;
}

/* leave_queue: S no longer waits for window memory. */
void leave_queue(struct session *s)
{
	struct window_budget *b = s->budget;

	for (int i = 0; i < b->nqueue; i++)
		if (b->queue[i] == s) {
			b->nqueue--;
			memmove(&b->queue[i], &b->queue[i + 1],
				(size_t)(b->nqueue - i) * sizeof(b->queue[0]));
			if (b->nqueue > 0)
				next_turn(b)->woken = 1;
			return;
		}
}

/* ---- The session's CPU, by phase ---- */

/* cpu_now: the receiver's thread's CPU time so far, user and system, in
 * nanoseconds: its one thread serves every session, so the phases of a
 * session are counted on that clock around their own code. */
long long cpu_now(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;	/* (Linux has the clock: never taken) */
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* cpu_add: add the CPU time since START (cpu_now()) to *PHASE.  Returns
 * the time now, the start of whatever phase comes next. */
long long cpu_add(long long *phase, long long start)
{
	long long now = cpu_now();

	*phase += now - start;
	return now;
}

/* format_cpu: CPU's phases in seconds into OUT, and the rest of the
 * session's CPU up to END (cpu_now() at its end) as "other": "windows
 * 0.012000 s, canaries ..., other 0.300000 s".  Microseconds, so that a
 * small file's hash is not 0 (the bench divides by it).  snprintf()'s
 * result. */
int format_cpu(const struct session_cpu *cpu, long long end, char *out,
	       size_t len)
{
	long long other = end - cpu->start - cpu->windows - cpu->canaries -
			  cpu->hash - cpu->copy - cpu->fsync;

	return snprintf(out, len, "windows %.6f s, canaries %.6f s, hash "
			"%.6f s, copy %.6f s, fsync %.6f s, other %.6f s",
			(double)cpu->windows / 1e9, (double)cpu->canaries / 1e9,
			(double)cpu->hash / 1e9, (double)cpu->copy / 1e9,
			(double)cpu->fsync / 1e9, (double)other / 1e9);
}
