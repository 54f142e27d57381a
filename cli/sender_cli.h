/* SPDX-License-Identifier: MIT */
/*
 * sender_cli.h - the sender's machinery around the lab (sender_cli.c):
 * its command line, the pin budget under `ulimit -l`, --wait's pauses,
 * the progress bar, and the report: the key, the summary line, --json.  sender.c holds the lab
 * itself.
 */
#ifndef LAB3_SENDER_CLI_H
#define LAB3_SENDER_CLI_H

#include <stdint.h>

#include "common.h"

/* What the command line asked for. */
struct sender_options {
	const char *host;
	const char *port;
	char where[300];	/* "host:port", "[IPv6]:port", for messages */
	const char *path;
	char id[LAB3_ID_MAX + 1];
	int verbose;
	int quiet;
	int json;			/* --json: one JSON object at the end */
	int timeout_s;
	int wait_s;			/* --wait: how long to wait for a turn */
};

/* When each phase of a run ended (now_s()), 0 for what has not happened:
 * for the summary line, --json and the progress bar. */
struct sender_times {
	double start, hashed, first_region, written, verdict;
	double progress;		/* the progress bar was last drawn */
	int progress_shown;
};

/* How a run ended, for its report. */
struct sender_outcome {
	const char *verdict;		/* "good", "bad" or NULL */
	const uint8_t *key;		/* LAB3_KEY_LEN bytes, or NULL */
	uint64_t size;
	int size_known;			/* size is known: a regular file */
	const char *error;		/* the one-line error, or "" */
	const char *error_after_key;	/* the receiver's ERROR after the
					 * key, or NULL */
	enum lab3_exit status;
};

/* lab3_now_us() in seconds, for the timings. */
double now_s(void);

/* The command line: options, <ip> <port> <file>, and the ID (the login
 * name without -i), checked before anything else happens; 0, or -1 after
 * saying what is wrong.  -h and --version print and exit. */
int sender_parse_args(struct sender_options *opt, int argc, char **argv);

/* The receiver was busy (WHY says so).  Unless the --wait that ends at
 * GIVE_UP_AT is over, say so (the first time, after TRIES refusals) and
 * pause before the next try; 0 to try again, or -1. */
int sender_wait_for_turn(const struct sender_options *opt, const char *why,
			 double give_up_at, int tries);

/* How large one WRITE may be, into *PIECE_MAX: SLOTS of them are
 * registered at once (the staging ring, lib/pieces.h), within
 * `ulimit -l`. */
void sender_pin_budget(int slots, uint32_t *piece_max);

/* The progress bar for DONE of SIZE bytes of the file NAME; FINAL
 * erases it. */
void sender_show_progress(const struct sender_options *opt,
			  struct sender_times *t, const char *name,
			  uint64_t done, uint64_t size, int final);

/* The run's report: after a good run, "secret key: HEX" on stdout and
 * the summary line on stderr (and a word on an ERROR the receiver sent
 * after the key); with --json, one JSON object on stdout instead,
 * however the run ended. */
void sender_report(const struct sender_options *opt,
		   const struct sender_times *t,
		   const struct sender_outcome *out);

#endif /* LAB3_SENDER_CLI_H */
