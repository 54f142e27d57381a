/* SPDX-License-Identifier: MIT */
/*
 * session.h - one receiver session, shared by its parts: the steps of the
 * lab (receiver.c), the file and ledger record it keeps (store.c), the
 * class server that runs it (server.c), what the steps ask of it
 * (session.c) and the command line (receiver_cli.c).
 */
#ifndef LAB3_SESSION_H
#define LAB3_SESSION_H

#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>

#include "common.h"
#include "roster.h"
#include "rules.h"

#define MAX_SESSIONS_MAX 64	/* -c at most */
#define KEEP_MAX 1000		/* --keep at most */
#define LAB3_SOURCE_LEN 64	/* peer_source()'s names, and a NUL */

/* The limits that keep one sender from holding a session (and so a place
 * of -c) for long without doing its part.  No honest sender on any RDMA
 * link comes near them; each names itself when it ends a session. */
#define HANDSHAKE_S 10		/* FILE_INFO within this of connecting */
#define RATE_FLOOR (1u << 20)	/* bytes a second a file must move, */
#define RATE_INTERVAL_S 30	/* over any interval this long (or two
				 * windows at the floor, if longer), after
				 * the first one from FILE_INFO */
#define RATE_MARKS 8		/* bytes stored, looked at 6 times an
				 * interval: rate_check() in server.c */
#define IDLE_EVICT_MS 1000	/* a full receiver ends a session that has
				 * sent no FILE_INFO for this long, to take
				 * a new sender */

/* The receiver's settings, from the command line. */
struct options {
	const char *addr;
	const char *port;
	const char *out_dir;
	uint64_t max_bytes;
	uint64_t min_bytes;		/* --min-size */
	uint64_t window_size;
	int window_size_given;
	int windows;
	const char *secret_path;
	const char *key_for;
	const char *ledger;		/* -l */
	const char *ledger_summary;	/* --ledger-summary */
	const char *roster;		/* -r */
	int timeout_s;
	int max_sessions;		/* -c */
	uint64_t budget;		/* -b: window memory, all sessions */
	int budget_given;
	int verbose;
	int keep_failed;		/* --keep-failed */
	uint64_t store_max;		/* --store-max; 0: no limit */
	int keep;			/* --keep; -1: every file */
	uint64_t address_max;		/* --address-max; 0: no limit */
	uint64_t id_max;		/* --id-max; 0: no limit */
	int id_max_given;
	int address_pct;		/* --address-max N%: of --store-max,
					 * or of -o's disk (serve()) */
	int address_sessions;		/* --address-sessions; 0: none */
};

/* One window: registered memory that one chunk of the file is written
 * into, then hashed and stored from. */
struct window {
	uint8_t *buf;
	struct ibv_mr *mr;		/* NULL: the sender may not write */
	uint64_t offset;		/* file offset of its current chunk */
	uint64_t length;		/* and that chunk's length */
	uint64_t stored;		/* bytes of it hashed and stored */
	int held;			/* it holds its bytes of the budget */
};

/* The budget of window memory that all sessions share (-b): a window
 * holds its bytes of it while a chunk is in it, and sessions that find
 * it spent wait their turn: first the address that holds the fewest
 * windows, then first come first served (server.c next_turn()). */
struct window_budget {
	uint64_t bytes;			/* -b */
	uint64_t used;
	struct session *queue[2 * MAX_SESSIONS_MAX];	/* waiting, oldest 1st */
	int nqueue;
	struct session *const *sessions;	/* all of the server's, to */
	const int *nsessions;			/* count each address's */
	char last_turn[64];			/* the peer that took the last */
};

/* What the files of all sessions take of the -o directory (store.c):
 * the bytes there, and the bytes that sessions in progress announced and
 * have yet to write.  Both count against --store-max, and the second
 * against the free space too.  And the files kept, whose and in which
 * order, for the quotas (quota.c). */
struct store_use {
	uint64_t used;
	uint64_t pending;
	struct kept_file *kept;		/* the ledger's at start, then */
	size_t nkept;			/* this run's */
	size_t kept_cap;
	unsigned long long seq;		/* the last kept_file's */
	struct source_total *totals;	/* each address's, --address-max */
	size_t ntotals;
	size_t totals_cap;
	const struct lab3_roster *roster;	/* -r, or NULL */
	struct session *const *sessions;	/* all of the server's, to */
	const int *nsessions;			/* add up their promises */
};

#define KEPT_MIN_CHARGE (64u << 10)	/* a kept file counts at least this
					 * (quota.c charge()) */

/* A file saved under -o: whose, from where, and when (seq: higher is
 * newer). */
struct kept_file {
	char source[LAB3_SOURCE_LEN];		/* peer_source() */
	char id[LAB3_ID_MAX + 1];
	char saved_as[3 * LAB3_ID_MAX + LAB3_NAME_MAX + 8];
	uint64_t bytes;
	unsigned long long seq;
	int counted;			/* against its source's total (not
					 * a roster ID's) */
};

/* What one address's kept files count against its --address-max. */
struct source_total {
	char source[LAB3_SOURCE_LEN];
	uint64_t bytes;
};

/* What the ledger takes from each source (store.c record_end()), so that
 * no source can fill its disk:
 *   - a session that ends without a verdict (whatever stage it reached:
 *     a refused FILE_INFO too) has a record of its own if its source has
 *     had no such record, nor a summing-up, for UNVERDICTED_INTERVAL_S;
 *     the others are counted, and summed up in one record an interval
 *     after the first of them: one record, and one fsync, per source
 *     per interval, however many sessions (60 an hour);
 *   - a session without a key has a record of its own only while its
 *     source has had fewer than SOURCE_RECORDS_PER_HOUR this hour, and
 *     while the ledger's disk has LEDGER_RESERVE free (kept for keyed
 *     records); else it is summed up too, and never refuses anyone;
 *   - a source has at most SOURCE_KEYS_PER_HOUR keyed records an hour:
 *     past them, a new file from it is refused at FILE_INFO
 *     (admit_file()), saying when the ledger takes it again;
 *   - one ID from one source has at most PAIR_KEYS_PER_HOUR of them:
 *     past them, its key is refused (key_admitted()), so that one
 *     student's sender run in a loop on a shared host cannot use up its
 *     classmates' keys for the hour.  LEDGER_PAIRS (source, ID) pairs
 *     are counted; when all of them still count, a new pair has only
 *     its source's limit (never a count shared with others, which
 *     would let made-up pairs refuse a real one);
 *   - LEDGER_SOURCES sources are counted apart; when all of them are
 *     still needed (store.c stale()), new ones share one more
 *     entry, "(other addresses)", so that sources made up by the hundred
 *     cannot begin their limits again. */
#define UNVERDICTED_INTERVAL_S 60
#define SOURCE_RECORDS_PER_HOUR 1200
#define SOURCE_KEYS_PER_HOUR 1200
#define PAIR_KEYS_PER_HOUR 120
#define LEDGER_SOURCES 256
#define LEDGER_PAIRS 2048
struct ledger_source {
	char source[LAB3_SOURCE_LEN];
	long long recorded;		/* lab3_now_ms() of its last record
					 * without a verdict; 0: none */
	unsigned unrecorded;		/* sessions not recorded one by one */
	long long first_ms;		/* lab3_now_ms() of the first */
	time_t since;			/* and its time (for the text) */
	char last_error[LAB3_ERR_LEN];	/* the last one's reason */
	long long hour_start;		/* lab3_now_ms(): its hour began */
	unsigned hour_records;		/* records of its own in that hour */
	unsigned hour_keys;		/* of them, keyed */
};
struct ledger_pair {
	char source[LAB3_SOURCE_LEN];
	char id[LAB3_ID_MAX + 1];
	long long hour_start;		/* lab3_now_ms(): its hour began */
	unsigned hour_keys;		/* keyed records in that hour */
};
struct ledger_sources {
	struct ledger_source sources[LEDGER_SOURCES + 1];	/* and the
							 * shared one */
	int n;
	struct ledger_pair pairs[LEDGER_PAIRS];
	int npairs;
};

/* A session's life around the lab's steps, in the serving loop. */
enum session_life {
	LIFE_ACCEPTING,		/* accepted, waiting for ESTABLISHED */
	LIFE_RUNNING,		/* the lab's steps (run_session()) */
	LIFE_CLOSING,		/* its last message (an ERROR) going out */
	LIFE_DISCONNECTING,	/* waiting for the DISCONNECTED */
};

/* The limit a session is under besides the silence of -t. */
enum session_limit {
	LIMIT_NONE,
	LIMIT_HANDSHAKE,	/* FILE_INFO within HANDSHAKE_S */
	LIMIT_RATE,		/* RATE_FLOOR over the last interval */
};

/* The bytes a session had stored at one moment (the rate floor), and
 * how long it had waited for window memory by then. */
struct rate_mark {
	long long at;			/* ms */
	uint64_t bytes;
	long long queued_ms;
};

/* The receiver's CPU time in one session, by phase: nanoseconds of its
 * thread's CPU clock (cpu_now()), added up where each phase's code runs,
 * once a window or a slice of a chunk (cpu_add()).  Under -v the session's
 * last line gives them, and the rest of the CPU from its connection
 * request to its end as "other" (format_cpu()).  No phase's span holds
 * another's, and each lies within the session, so the rest is never
 * negative. */
struct session_cpu {
	long long start;	/* the clock at the connection request */
	long long windows;	/* mapping, registering, deregistering,
				 * giving back and unmapping windows */
	long long canaries;	/* planting them, and checking at DONE */
	long long hash;		/* SHA-256 of the chunks: begin, add, end */
	long long copy;		/* -o: writing the chunks to the file */
	long long fsync;	/* -o: syncing the file and its folders */
};

/* One session: one sender, from connection to disconnection. */
struct session {
	const struct options *opt;
	struct window_budget *budget;		/* the receiver's */
	struct store_use *store;		/* the receiver's */
	struct ledger_sources *sources;		/* the receiver's (-l) */
	const uint8_t *secret;
	const struct lab3_roster *roster;	/* -r, or NULL: any ID */
	struct lab3_conn conn;
	unsigned number;
	char peer[64];
	long long start_us;		/* lab3_now_us() at its request */
	struct session_cpu cpu;		/* its CPU by phase, for -v */

	/* The protocol's rules and counters (rules.h): the length, the
	 * chunks, how many were offered, done and stored, the verdict. */
	struct lab3_rx rx;
	int has_file_info;			/* FILE_INFO arrived */
	uint8_t sha256[LAB3_SHA256_LEN];	/* from FILE_INFO */
	char name[LAB3_NAME_MAX + 1];

	/* Chunk k (file offset k * window size) goes through window
	 * k % rx.nwindows. */
	struct window windows[LAB3_WINDOWS_MAX];
	struct lab3_sha256 hash;		/* of the chunks stored */
	uint64_t canary_key;			/* random: receiver.c canary() */
	int tmp_fd;				/* -o: the file being built */
	char tmp_path[PATH_MAX];
	uint64_t pending;			/* bytes of it yet to write */

	int has_verdict;
	char id[LAB3_ID_MAX + 1];
	int key_sent;
	char saved_as[3 * LAB3_ID_MAX + LAB3_NAME_MAX + 8];	/* ID/NAME */
	char dropped[1024];		/* --keep: files removed for it, */
	size_t dropped_len;		/* each ended by a NUL */
	char kept_as[32];		/* --keep-failed: .failed/session-N */
	char error[LAB3_ERR_LEN];		/* why the session failed */

	int ledger_fd;				/* -l, or -1 */
	int recorded;				/* its record was written */

	/* Where the serving loop has it (see serve_loop()). */
	enum session_life life;
	long long deadline;		/* ms: its wait runs out; 0: none */
	int wait_ms;			/* that wait's silence, in ms */
	int waiting;			/* its step said STEP_WAIT */
	int room_wait;			/* ... for room in the send queue */
	long long connected_at;		/* ms: the connection was made (or
					 * requested, while LIFE_ACCEPTING) */
	long long limit_at;		/* ms: its limit runs out (or, for
					 * the rate floor, is looked at) */
	enum session_limit limit;	/* which limit that is */
	uint64_t bytes_stored;		/* of its file, so far */
	struct rate_mark marks[RATE_MARKS];	/* the last ones, oldest 1st */
	int nmarks;
	long long rate_interval_ms;	/* the floor's interval */
	long long queued_ms;		/* waited for window memory, so far */
	long long rate_checked;		/* ms: the floor was last looked at */
	int woken;			/* its connection moved */
	int key_posted;			/* step 6's KEY is on its way */
	uint64_t key_send;		/* its SEND: conn.sends_posted then */
	int early;			/* messages in before the VERDICT */
};

/* What a step returns: 0 when it is done, or one of these.  A step never
 * waits for its sender: when it must, it says so, and the serving loop
 * runs it again once the connection moves (or its time is up).  Nor
 * does it work long: a step with more to do than one REGION or one
 * STORE_SLICE yields, and the loop runs it again on its next turn, after
 * the other sessions have had theirs. */
enum {
	STEP_FAILED = -1,	/* the session has failed: s->error says why */
	STEP_WAIT = 1,		/* waiting for the sender */
	STEP_OVER = 2,		/* the sender hung up after the end */
	STEP_YIELD = 3,		/* more to do, on the loop's next turn */
};

/* ---- The calls between the receiver's files ---- */

/* receiver.c: the lab's steps of one session. */
int run_session(struct session *s);		/* the next steps */
void free_windows(struct session *s);

/* quota.c: what each address and ID may keep under -o. */
int quotas_on(const struct options *opt);
int add_kept(struct store_use *use, const char *source, const char *id,
	     const char *saved_as, uint64_t bytes);
void forget_kept(struct store_use *use, const char *saved_as);
void free_kept(struct store_use *use);
int load_kept(struct store_use *use, const struct options *opt, char *err,
	      size_t err_len);
int recount_kept(struct store_use *use, const struct options *opt,
		 int look);
int check_address(struct session *s);
void forget_gone(struct store_use *use, const struct options *opt,
		 const char *id, const char *source);
size_t drops_for(const struct store_use *use, const struct options *opt,
		 const char *id, const char *source, struct kept_file **drops);
int address_share(struct options *opt, char *err, size_t err_len);
void id_max_default(struct options *opt);
int quotas_add_up(const struct options *opt, size_t roster_n, char *err,
		  size_t err_len);

/* store.c: the file it saves (-o) and its ledger record (-l). */
int count_used(const char *dir, uint64_t *bytes);
int admit_file(struct session *s);
int append_to_file(struct session *s, const uint8_t *buf, uint64_t len);
int open_tmp_file(struct session *s);
int sync_file(struct session *s);
int keep_file(struct session *s);
void drop_tmp_file(struct session *s);
int record_session(struct session *s, int key_sent, char *err,
		   size_t err_len);
int record_end(struct session *s, char *err, size_t err_len);
int record_summaries(struct ledger_sources *ls, int ledger_fd, int all,
		     char *err, size_t err_len);
long long next_summary(const struct ledger_sources *ls);
int key_admitted(struct session *s);

/* session.c: what a session's steps ask of the server that runs them: a
 * step that waits (STEP_WAIT, and when it runs out), the rate floor, the
 * window budget the sessions share, and the count of its CPU by phase
 * (struct session_cpu). */
uint64_t window_bytes(const struct session *s);
void peer_source(const char *peer, char *out, size_t len);
int same_host(const char *a, const char *b);
void start_rate_floor(struct session *s);
int rate_check(struct session *s, long long now, char *why, size_t why_len);
int wait_for_peer(struct session *s, int wait_ms);
int wait_for_room(struct session *s);
void set_deadline(struct session *s);
int take_budget(struct session *s, uint64_t bytes);
int wait_for_budget(struct session *s);
void give_back(struct session *s, struct window *w);
void join_queue(struct session *s);
void leave_queue(struct session *s);
long long cpu_now(void);
long long cpu_add(long long *phase, long long start);
int format_cpu(const struct session_cpu *cpu, long long end, char *out,
	       size_t len);

/* server.c: serving.  serve_hold_signals() blocks the served signals
 * (SIGHUP, SIGINT, SIGTERM) and puts the mask before it in *ORIG: main()
 * calls it first, so that one arriving before serve() installs their
 * handlers waits, pending, for the serving loop. */
void serve_hold_signals(sigset_t *orig);
int serve(struct options *opt, const uint8_t *secret, int ledger_fd,
	  struct lab3_roster *roster);

#endif /* LAB3_SESSION_H */
