/* SPDX-License-Identifier: MIT */
/*
 * receiver_cli.c - the receiver's command line and main(): options,
 * usage, the secret file, --key-for, --ledger-summary, fitting the windows
 * to ulimit -l and the budget, then serving (server.c).
 *
 *   ./receiver [-a ADDR] [-p PORT] [-o DIR] [-m MAX_BYTES] [-k SECRET_FILE]
 *              [-t SECONDS] [-l LEDGER] [-c SESSIONS] [-w SIZE] [-n N] [-v]
 *   ./receiver [-k SECRET_FILE] --key-for ID
 *   ./receiver --ledger-summary LEDGER
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "args.h"
#include "ledger.h"
#include "provider.h"
#include "secret.h"
#include "session.h"

#define DEFAULT_MAX_BYTES (64ULL << 30)	/* 64 GiB */
#define DEFAULT_WINDOW_SIZE (16u << 20)	/* 16 MiB */
#define DEFAULT_WINDOWS 4
#define WINDOW_SIZE_MIN (64u << 10)
#define DEFAULT_SECRET ".lab3-secret"	/* in $HOME */
#define DEFAULT_MAX_SESSIONS 16		/* -c */

/* ---- Command line ---- */

/* The help text, one source line per output line; usage() fills in the
 * default port, secret file and timeout. */
static const char usage_text[] =
"usage: receiver [-v] [-a ADDR] [-p PORT] [-o DIR] [-m MAX_BYTES] [-l LEDGER]\n"
"                [-c SESSIONS] [-w WINDOW_SIZE] [-n WINDOWS] [-b BUDGET]\n"
"                [-k SECRET_FILE] [-t SECONDS] [-r ROSTER] [--keep-failed]\n"
"                [--min-size MIN] [--store-max MAX] [--keep N]\n"
"                [--address-max MAX] [--id-max MAX] [--address-sessions N]\n"
"       receiver [-k SECRET_FILE] --key-for ID\n"
"       receiver --ledger-summary LEDGER [-r ROSTER] | --version | -h | --help\n"
"\n"
"Serve Lab 3 senders, several at once, until SIGINT or SIGTERM (SIGHUP: -r).\n"
"  -a ADDR, -p PORT  listen on ADDR (default: all), PORT (default %d; 0: any)\n"
"  -o DIR, --keep-failed  save each verified file into DIR (a failed one's\n"
"                  bytes: DIR/.failed/), at most --store-max MAX in all, and\n"
"                  of an ID's the newest, --keep N earlier, --id-max MAX in all\n"
"  -m MAX_BYTES, --min-size MIN  refuse larger, smaller files (64G, 0)\n"
"  --address-max MAX, --address-sessions N  what one address (or IPv6 /64)\n"
"                  may hold: bytes kept and promised, sessions open\n"
"  -c SESSIONS     senders served at once, 1 to %d; more are busy (default %d)\n"
"  -w WINDOW_SIZE, -n WINDOWS  each session's windows: 64K to 1G (default\n"
"                  16M, less to fit ulimit -l), 2 to %d in flight (default %d)\n"
"  -b BUDGET       window memory of all sessions together (default 2 x -n x -w)\n"
"  -k SECRET_FILE  the keys' secret (default ~/%s); --key-for ID\n"
"  -t SECONDS, -v  end a session after SECONDS of silence (default %d); trace\n"
"  -l LEDGER, -r ROSTER  one JSON line per session; keys only for ROSTER's IDs\n"
"Exit status: 0 stopped, or printed; 1 usage; 2 local error; 3 cannot listen.\n";

/* usage: command-line help on TO: stdout for -h and --help, asked for;
 * stderr after a bad command line.  The caller picks the exit status. */
static void usage(FILE *to)
{
	fprintf(to, usage_text, LAB3_DEFAULT_PORT, MAX_SESSIONS_MAX,
		DEFAULT_MAX_SESSIONS, LAB3_WINDOWS_MAX,
		DEFAULT_WINDOWS, DEFAULT_SECRET, LAB3_DEFAULT_TIMEOUT);
}

/* parse_byte_count: -m, --min-size ('M'), --store-max ('S'),
 * --address-max ('A') or --id-max ('I') (OPT_CHAR) with ARG into OPT; -1
 * after saying what is wrong. */
static int parse_byte_count(struct options *opt, int opt_char,
			    const char *arg)
{
	uint64_t *to = opt_char == 'm' ? &opt->max_bytes :
		       opt_char == 'M' ? &opt->min_bytes :
		       opt_char == 'A' ? &opt->address_max :
		       opt_char == 'I' ? &opt->id_max : &opt->store_max;
	size_t len = strlen(arg);
	char number[8];

	if (opt_char == 'A' && len > 1 && len < sizeof(number) &&
	    arg[len - 1] == '%') {
		/* A share of --store-max, or of the disk: see serve(). */
		memcpy(number, arg, len - 1);
		number[len - 1] = '\0';
		opt->address_pct = (int)lab3_parse_number(number, 1, 100);
		opt->address_max = 0;
		if (opt->address_pct > 0)
			return 0;
		fprintf(stderr, "receiver: --address-max %s: not a byte count "
			"or a share from 1%% to 100%%\n", arg);
		return -1;
	}
	if (opt_char == 'A')
		opt->address_pct = 0;
	opt->id_max_given |= opt_char == 'I';
	if (lab3_parse_size(arg, to) == 0)
		return 0;
	fprintf(stderr, "receiver: %s %s: not a byte count\n",
		opt_char == 'm' ? "-m" : opt_char == 'M' ? "--min-size" :
		opt_char == 'A' ? "--address-max" :
		opt_char == 'I' ? "--id-max" : "--store-max", arg);
	return -1;
}

/* parse_quota: --keep ('E') or --address-sessions ('C') (OPT_CHAR) with
 * ARG into OPT, with its range checked; -1 after saying what is wrong. */
static int parse_quota(struct options *opt, int opt_char, const char *arg)
{
	if (opt_char == 'E') {
		opt->keep = (int)lab3_parse_number(arg, 0, KEEP_MAX);
		if (opt->keep >= 0)
			return 0;
		fprintf(stderr, "receiver: --keep %s: not a number of earlier "
			"files from 0 to %d\n", arg, KEEP_MAX);
		return -1;
	}
	opt->address_sessions = (int)lab3_parse_number(arg, 1,
						       2 * MAX_SESSIONS_MAX);
	if (opt->address_sessions >= 0)
		return 0;
	fprintf(stderr, "receiver: --address-sessions %s: not a number of "
		"sessions from 1 to %d\n", arg, 2 * MAX_SESSIONS_MAX);
	return -1;
}

/* parse_number_option: -p, -w, -b, -c, -n or -t, or a quota's number
 * (parse_quota()) (OPT_CHAR) with ARG into OPT, with its range checked;
 * -1 after saying what is wrong. */
static int parse_number_option(struct options *opt, int opt_char,
			       const char *arg)
{
	switch (opt_char) {
	case 'E': case 'C':
		return parse_quota(opt, opt_char, arg);
	case 'p':
		if (lab3_parse_number(arg, 0, 65535) >= 0) {
			opt->port = arg;
			return 0;
		}
		fprintf(stderr, "receiver: -p %s: not a port number\n", arg);
		return -1;
	case 'w':
		opt->window_size_given = 1;
		if (lab3_parse_size(arg, &opt->window_size) == 0 &&
		    opt->window_size >= WINDOW_SIZE_MIN &&
		    opt->window_size <= LAB3_WINDOW_BYTES_MAX &&
		    opt->window_size % 4096 == 0)
			return 0;
		fprintf(stderr, "receiver: -w %s: not a window size from 64K "
			"to 1G, in pages\n", arg);
		return -1;
	case 'b':
		opt->budget_given = 1;
		if (lab3_parse_size(arg, &opt->budget) == 0 &&
		    opt->budget >= WINDOW_SIZE_MIN)
			return 0;
		fprintf(stderr, "receiver: -b %s: not a byte count of 64K or "
			"more\n", arg);
		return -1;
	case 'c':
		opt->max_sessions = (int)lab3_parse_number(arg, 1,
							   MAX_SESSIONS_MAX);
		if (opt->max_sessions >= 0)
			return 0;
		fprintf(stderr, "receiver: -c %s: not a number of sessions "
			"from 1 to %d\n", arg, MAX_SESSIONS_MAX);
		return -1;
	case 'n':
		opt->windows = (int)lab3_parse_number(arg, 2, LAB3_WINDOWS_MAX);
		if (opt->windows >= 0)
			return 0;
		fprintf(stderr, "receiver: -n %s: not a number of windows "
			"from 2 to %d\n", arg, LAB3_WINDOWS_MAX);
		return -1;
	default:	/* 't' */
		opt->timeout_s = lab3_parse_seconds(arg);
		if (opt->timeout_s >= 0)
			return 0;
		fprintf(stderr, "receiver: -t %s: not a number of seconds "
			"from 1 to 3600\n", arg);
		return -1;
	}
}

/* check_modes: refuse serving options next to --key-for (only -k goes
 * with it), any option next to --ledger-summary, and a --min-size over
 * -m. */
static int check_modes(const struct options *opt, int serving_options)
{
	if (opt->key_for != NULL && (serving_options || opt->roster)) {
		fprintf(stderr, "receiver: --key-for takes no option but -k\n");
		return -1;
	}
	if ((opt->keep_failed || opt->store_max != 0 || opt->keep >= 0 ||
	     opt->id_max_given || opt->address_max != 0 ||
	     opt->address_pct != 0) && opt->out_dir == NULL) {
		fprintf(stderr, "receiver: %s needs -o DIR\n",
			opt->keep_failed ? "--keep-failed" :
			opt->store_max != 0 ? "--store-max" :
			opt->keep >= 0 ? "--keep" :
			opt->id_max_given ? "--id-max" : "--address-max");
		return -1;
	}
	if (opt->min_bytes > opt->max_bytes) {
		fprintf(stderr, "receiver: --min-size %llu is over -m %llu: "
			"no file would do\n",
			(unsigned long long)opt->min_bytes,
			(unsigned long long)opt->max_bytes);
		return -1;
	}
	if (opt->ledger_summary != NULL && (serving_options ||
	    opt->key_for != NULL || opt->secret_path != NULL)) {
		fprintf(stderr, "receiver: --ledger-summary takes no other "
			"option\n");
		return -1;
	}
	return 0;
}

/* parse_args: the command line into OPT, then check_modes().  --help and
 * --version answer at once. */
static int parse_args(struct options *opt, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "address-max", required_argument, NULL, 'A' },
		{ "address-sessions", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ "id-max", required_argument, NULL, 'I' },
		{ "keep", required_argument, NULL, 'E' },
		{ "keep-failed", no_argument, NULL, 'F' },
		{ "key-for", required_argument, NULL, 'K' },
		{ "ledger-summary", required_argument, NULL, 'L' },
		{ "min-size", required_argument, NULL, 'M' },
		{ "store-max", required_argument, NULL, 'S' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int opt_char, serving_options = 0;

	while ((opt_char = getopt_long(argc, argv, "a:b:c:hk:l:m:n:o:p:r:t:vw:",
				       longopts, NULL)) != -1) {
		if (strchr("almnoptvwACEFIMS", opt_char) != NULL)
			serving_options = 1;
		switch (opt_char) {
		case 'a': opt->addr = optarg; break;
		case 'k': opt->secret_path = optarg; break;
		case 'l': opt->ledger = optarg; break;
		case 'r': opt->roster = optarg; break;
		case 'o': opt->out_dir = optarg; break;
		case 'K': opt->key_for = optarg; break;
		case 'L': opt->ledger_summary = optarg; break;
		case 'v': opt->verbose = 1; break;
		case 'F': opt->keep_failed = 1; break;
		case 'm': case 'M': case 'S': case 'A': case 'I':
			if (parse_byte_count(opt, opt_char, optarg) != 0)
				return -1;
			break;
		case 'p': case 'w': case 'n': case 't': case 'c': case 'b':
		case 'E': case 'C':
			if (parse_number_option(opt, opt_char, optarg) != 0)
				return -1;
			break;
		case 'h':
			usage(stdout);
			exit(LAB3_EXIT_OK);
		case 'V':
			printf("receiver %s (Lab 3 protocol version %d)\n",
			       LAB3_RELEASE, LAB3_VERSION);
			exit(LAB3_EXIT_OK);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return -1;
	}
	return check_modes(opt, serving_options);
}

/* set_budget: the window memory all sessions share (-b): by default
 * twice one session's (-n times -w), within `ulimit -l` if there is one;
 * it must hold one window of -w, and a -b given must fit `ulimit -l`
 * (less LAB3_MEMLOCK_RESERVE), or no session could register it all. */
static int set_budget(struct options *opt)
{
	uint64_t one = opt->window_size * (uint64_t)opt->windows;
	uint64_t limit;
	int limited = lab3_memlock_limit(&limit);

	if (!opt->budget_given) {
		opt->budget = 2 * one;
		if (limited && opt->budget + LAB3_MEMLOCK_RESERVE > limit)
			opt->budget = one;	/* fit_memlock() made it fit */
	}
	if (opt->budget < opt->window_size) {
		fprintf(stderr, "receiver: -b %llu KiB cannot hold one window "
			"of -w %llu KiB\n",
			(unsigned long long)opt->budget >> 10,
			(unsigned long long)opt->window_size >> 10);
		return -1;
	}
	if (limited && opt->budget + LAB3_MEMLOCK_RESERVE > limit) {
		fprintf(stderr, "receiver: -b %llu KiB of windows needs %llu "
			"KiB of locked memory, but `ulimit -l` allows %llu KiB; "
			"raise it, or use a smaller -b\n",
			(unsigned long long)opt->budget >> 10,
			(unsigned long long)(opt->budget +
					     LAB3_MEMLOCK_RESERVE) >> 10,
			(unsigned long long)limit >> 10);
		return -1;
	}
	return 0;
}

/* fit_memlock: the windows are registered memory, which counts against
 * `ulimit -l` (root lifts it: lab3_memlock_limit()), less
 * LAB3_MEMLOCK_RESERVE (common.h).
 * Unless -w was given, shrink the windows to fit the limit; if they still
 * cannot fit, refuse to start, saying so, rather than fail every session
 * later. */
static int fit_memlock(struct options *opt, int window_size_given)
{
	uint64_t need = opt->window_size * (uint64_t)opt->windows +
		       LAB3_MEMLOCK_RESERVE;
	uint64_t fit, limit;

	if (!lab3_memlock_limit(&limit) || limit >= need)
		return 0;
	fit = limit > LAB3_MEMLOCK_RESERVE ?
	      (limit - LAB3_MEMLOCK_RESERVE) / (uint64_t)opt->windows : 0;
	fit &= ~(uint64_t)4095;
	if (!window_size_given && fit >= WINDOW_SIZE_MIN) {
		opt->window_size = fit;
		return 0;
	}
	fprintf(stderr, "receiver: %d windows of %llu KiB need %llu KiB of "
		"locked memory, but `ulimit -l` allows %llu KiB; raise it, or "
		"use a smaller -w or -n\n", opt->windows,
		(unsigned long long)opt->window_size >> 10,
		(unsigned long long)need >> 10,
		(unsigned long long)limit >> 10);
	return -1;
}

/* key_for: print the key a session with ID receives (--key-for). */
static int key_for(const char *id, const uint8_t *secret)
{
	uint8_t key[LAB3_KEY_LEN];
	char hex[2 * LAB3_KEY_LEN + 1], why[128];

	if (lab3_check_id(id, strlen(id), why, sizeof(why)) != 0) {
		fprintf(stderr, "receiver: --key-for: %s\n", why);
		return LAB3_EXIT_USAGE;
	}
	if (lab3_key_for_id(secret, id, key) != 0) {
		fprintf(stderr, "receiver: cannot compute the key\n");
		return LAB3_EXIT_LOCAL;
	}
	lab3_hex(key, LAB3_KEY_LEN, hex);
	printf("%s\n", hex);
	return LAB3_EXIT_OK;
}

/* load_secret: the secret the keys derive from: -k, or ~/.lab3-secret,
 * created on first use.  Returns 0, or an exit status after saying why. */
static int load_secret(struct options *opt, uint8_t secret[LAB3_SECRET_LEN])
{
	static char path[PATH_MAX];
	char err[LAB3_ERR_LEN];

	if (opt->secret_path == NULL) {
		const char *home = getenv("HOME");

		if (home == NULL) {
			fprintf(stderr, "receiver: HOME is not set; give the "
				"secret file with -k\n");
			return LAB3_EXIT_USAGE;
		}
		snprintf(path, sizeof(path), "%s/%s", home, DEFAULT_SECRET);
		opt->secret_path = path;
	}
	if (lab3_load_secret(opt->secret_path, secret, err, sizeof(err)) != 0) {
		fprintf(stderr, "receiver: %s\n", err);
		return LAB3_EXIT_LOCAL;
	}
	return 0;
}

/* remove_partials: the temporary files (.lab3-partial-*) that a receiver
 * killed mid-session left in DIR, the -o of this one, are nobody's: remove
 * them, and say how many on stderr.  (Two receivers must not share -o.) */
static void remove_partials(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned removed = 0, failed = 0;

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, ".lab3-partial-", 14) != 0)
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) == 0)
			removed++;
		else
			failed++;
	}
	closedir(d);
	if (removed + failed > 0)
		fprintf(stderr, "receiver: -o %s: removed %u partial file%s "
			"that an earlier run left%s\n", dir, removed,
			removed == 1 ? "" : "s",
			failed ? " (some could not be removed)" : "");
}

/* load_roster: -r: the roster at PATH into *ROSTER; -1 after one line
 * saying why it cannot be read. */
static int load_roster(const char *path, struct lab3_roster *roster)
{
	char err[LAB3_ERR_LEN];

	if (lab3_roster_load(path, roster, err, sizeof(err)) == 0)
		return 0;
	fprintf(stderr, "receiver: %s\n", err);
	return -1;
}

/* print_id: ID as a field of --ledger-summary's rows.  IDs are the
 * peers': one that a spreadsheet would take for a formula (it starts
 * with =, +, - or @) gets a ' in front, as the grader's gradebook does,
 * and so does one that starts with ' (so that a reader takes off the
 * first ' of any ID that has one, and gets the ID).  (The protocol
 * allows no tab or line end in an ID.) */
static void print_id(const char *id)
{
	if (strchr("=+-@'", id[0]) != NULL && id[0] != '\0')
		putchar('\'');
	fputs(id, stdout);
}

/* print_rows: --ledger-summary's rows: SUM's IDs, and with a ROSTER (not
 * NULL) every ID on it too, those never seen with no attempts, and a last
 * column that says whether the ID is on the roster.  Both lists are in
 * strcmp() order, so one merging pass prints them all in that order. */
static void print_rows(const struct lab3_ledger_summary *sum,
		       const struct lab3_roster *roster)
{
	size_t i = 0, j = 0, nroster = roster ? roster->n : 0;
	unsigned long never = 0, strangers = 0;

	while (i < sum->nids || j < nroster) {
		const struct lab3_ledger_id *id = i < sum->nids ?
						  &sum->ids[i] : NULL;
		int order = id == NULL ? 1 : j == nroster ? -1 :
			    strcmp(id->id, roster->ids[j]);

		if (order > 0) {	/* on the roster, never seen */
			print_id(roster->ids[j++]);
			printf("\tnever\t0\tyes\n");
			never++;
			continue;
		}
		print_id(id->id);
		printf("\t%s\t%lu", id->first_success[0] ?
		       id->first_success : "never", id->attempts);
		if (roster != NULL) {
			printf("\t%s", order == 0 ? "yes" : "NOT ON ROSTER");
			never += order == 0 && !id->first_success[0];
			strangers += order != 0;
			j += order == 0;
		}
		printf("\n");
		i++;
	}
	if (roster != NULL)
		printf("roster: %zu IDs, %lu never succeeded; IDs not on it: "
		       "%lu\n", roster->n, never, strangers);
}

/* ledger_summary: --ledger-summary: for each ID in the ledger at PATH, in
 * ID order, the time of its first success (a good verdict and the key
 * sent) or "never", and its attempts (records with that ID), and with
 * -r whether it is on the roster (print_rows()); then the flags, lines
 * without a tab (lab3_ledger_write_flags(): an address that got keys for
 * several IDs, an ID that got keys at several addresses: hints, not
 * verdicts); last, how many records there were and how many lines could
 * not be read (a record cut short by a crash, say), which are skipped.
 * Rows are the lines with a tab after the header: a script that reads
 * them can tell them from the rest. */
static int ledger_summary(const char *path, const char *roster_path)
{
	struct lab3_roster roster = { 0 };
	struct lab3_ledger_summary sum;
	FILE *in;
	int ret;

	if (roster_path != NULL && load_roster(roster_path, &roster) != 0)
		return LAB3_EXIT_LOCAL;
	in = fopen(path, "re");
	ret = in == NULL ? -errno : lab3_ledger_summarize(in, &sum);
	if (in != NULL)
		fclose(in);
	if (ret != 0) {
		if (in != NULL)
			lab3_ledger_summary_free(&sum);
		lab3_roster_free(&roster);
		fprintf(stderr, "receiver: --ledger-summary %s: %s\n", path,
			strerror(-ret));
		return LAB3_EXIT_LOCAL;
	}
	printf("ID\tFIRST SUCCESS\tATTEMPTS%s\n",
	       roster_path != NULL ? "\tON ROSTER" : "");
	print_rows(&sum, roster_path != NULL ? &roster : NULL);
	ret = lab3_ledger_write_flags(&sum, stdout);
	if (ret >= 0)
		printf("records: %lu, without an ID: %lu, unreadable lines "
		       "skipped: %lu\n", sum.records, sum.without_id,
		       sum.unreadable);
	lab3_ledger_summary_free(&sum);
	lab3_roster_free(&roster);
	if (ret < 0) {
		fprintf(stderr, "receiver: --ledger-summary %s: %s\n", path,
			strerror(-ret));
		return LAB3_EXIT_LOCAL;
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "receiver: --ledger-summary: cannot write the "
			"summary: %s\n", strerror(errno));
		return LAB3_EXIT_LOCAL;
	}
	return LAB3_EXIT_OK;
}

/* main: the command line, the secret, then --key-for's one answer or
 * serving until a stop signal; enum lab3_exit says how it ended.  The
 * served signals are held from its first line (serve_hold_signals()):
 * a SIGHUP or SIGTERM that comes while the receiver starts is served
 * once it serves, not its death.  The short answers (--ledger-summary,
 * --key-for) let them in again at once, so that ^C ends them as any
 * command; --help, --version and a usage error only print and exit. */
int main(int argc, char **argv)
{
	struct options opt = {
		.port = "",
		.max_bytes = DEFAULT_MAX_BYTES,
		.window_size = DEFAULT_WINDOW_SIZE,
		.windows = DEFAULT_WINDOWS,
		.max_sessions = DEFAULT_MAX_SESSIONS,
		.keep = -1,
		.timeout_s = LAB3_DEFAULT_TIMEOUT,
	};
	uint8_t secret[LAB3_SECRET_LEN];
	struct lab3_roster roster = { 0 };
	char err[LAB3_ERR_LEN];
	sigset_t startup_mask;	/* the signal mask the receiver started with */
	int ledger_fd = -1;
	int status;

	serve_hold_signals(&startup_mask);
	if (parse_args(&opt, argc, argv) != 0)
		return LAB3_EXIT_USAGE;
	if (opt.ledger_summary != NULL || opt.key_for != NULL)
		sigprocmask(SIG_SETMASK, &startup_mask, NULL);
	if (opt.ledger_summary != NULL)
		return ledger_summary(opt.ledger_summary, opt.roster);
	/* The secret is about to be in memory: no core file, and no
	 * ptrace or /proc/PID/mem by other processes of this user. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	status = load_secret(&opt, secret);
	if (status != 0)
		return status;
	if (opt.key_for != NULL)
		return key_for(opt.key_for, secret);

	if (opt.out_dir != NULL && access(opt.out_dir, W_OK | X_OK) != 0) {
		fprintf(stderr, "receiver: -o %s: %s\n", opt.out_dir,
			strerror(errno));
		return LAB3_EXIT_LOCAL;
	}
	if (opt.out_dir != NULL)
		remove_partials(opt.out_dir);
	if (opt.ledger != NULL) {
		ledger_fd = lab3_ledger_open(opt.ledger, err, sizeof(err));
		if (ledger_fd < 0) {
			fprintf(stderr, "receiver: %s\n", err);
			return LAB3_EXIT_LOCAL;
		}
	}
	if ((opt.roster != NULL && load_roster(opt.roster, &roster) != 0) ||
	    fit_memlock(&opt, opt.window_size_given) != 0 ||
	    set_budget(&opt) != 0)
		status = LAB3_EXIT_LOCAL;
	else
		status = serve(&opt, secret, ledger_fd,
			       opt.roster != NULL ? &roster : NULL);
	if (ledger_fd >= 0)
		close(ledger_fd);
	lab3_roster_free(&roster);
	return status;
}


