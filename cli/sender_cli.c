/* SPDX-License-Identifier: MIT */
/*
 * sender_cli.c - the sender's machinery around the lab (declared in
 * sender_cli.h): the command line, the pin budget under `ulimit -l`,
 * --wait's pauses between tries, the progress bar, the summary line and
 * --json.
 *
 *   ./sender [-i ID] [-q] [-v] [-t SECONDS] [--wait SECONDS] [--json]
 *            <ip> <port> <file>
 *   ./sender --version
 */
#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "common.h"
#include "json.h"
#include "provider.h"
#include "sender_cli.h"

#define PROGRESS_AFTER 1.0		/* seconds before a progress bar */
#define WRITE_PIECE_MAX (8u << 20)	/* bytes in one piece, at most */
#define NOT_MEASURED (-1.0)		/* a phase that never completed */

/* Long options without a short form. */
enum long_option {
	OPT_JSON = 256,
	OPT_VERSION,
	OPT_WAIT,
};

/* The time of each phase of a run, in seconds, and the transfer's goodput,
 * as the summary line and --json give them; NOT_MEASURED for what did
 * not happen. */
struct phase_times {
	double hash;			/* opening and hashing the file */
	double transfer;		/* first REGION to last DONE's completion */
	double verify;			/* then until the verdict came */
	double total;			/* the whole run, so far */
	double goodput;			/* MB/s (10^6 bytes) over the transfer */
};

/* now_s: see sender_cli.h. */
double now_s(void)
{
	return (double)lab3_now_us() / 1e6;
}

/* sender_wait_for_turn: see sender_cli.h.  The pause is 0.25 s, doubling
 * up to 4 s, each drawn between half and all of that so that senders
 * refused together do not come back together. */
int sender_wait_for_turn(const struct sender_options *opt, const char *why,
			 double give_up_at, int tries)
{
	double left = give_up_at - now_s();
	double pause = 0.25 * (double)(1u << (tries < 5 ? tries - 1 : 4));
	struct timespec ts;

	if (left <= 0)
		return -1;
	if (tries == 1) {
		fprintf(stderr, "sender: %s: %s; waiting up to %d s for a "
			"turn (--wait)\n", opt->where, why, opt->wait_s);
		srandom((unsigned)getpid() ^ (unsigned)time(NULL));
	}
	pause *= 0.5 + 0.5 * (double)random() / RAND_MAX;
	if (pause > left)
		pause = left;
	ts.tv_sec = (time_t)pause;
	ts.tv_nsec = (long)((pause - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	return 0;
}

/* sender_show_progress: on a terminal, unless -q, once the transfer has
 * taken a while: bytes, rate and time left, redrawn in place at most 5
 * times a second.  FINAL erases the bar. */
void sender_show_progress(const struct sender_options *opt,
			  struct sender_times *t, const char *name,
			  uint64_t done, uint64_t size, int final)
{
	double now = now_s(), elapsed = now - t->first_region, rate;

	if (final) {
		if (t->progress_shown)
			fprintf(stderr, "\r\033[K");
		t->progress_shown = 0;
		return;
	}
	if (opt->quiet || opt->json || !isatty(STDERR_FILENO) ||
	    elapsed < PROGRESS_AFTER || now - t->progress < 0.2)
		return;
	t->progress = now;
	t->progress_shown = 1;
	rate = (double)done / elapsed;
	fprintf(stderr, "\r%s: %.1f of %.1f MiB, %.1f MB/s, %.0f s left\033[K",
		name[0] ? name : "file", (double)done / (1 << 20),
		(double)size / (1 << 20), rate / 1e6,
		rate > 0 ? (double)(size - done) / rate : 0.0);
}

/* default_id: the login name, the ID used when -i is not given. */
static const char *default_id(void)
{
	struct passwd *pw = getpwuid(geteuid());

	if (pw != NULL)
		return pw->pw_name;
	return getenv("USER");
}

/* phase_times: how long each phase of the run took, for the summary line
 * and --json: hashing the file (from the start of the run), the transfer
 * from the first REGION to the last DONE's completion, and the receiver's
 * verification after it (0 if the verdict overtook the last DONE's
 * completion); the goodput is the file's bytes over the transfer time. */
static struct phase_times phase_times(const struct sender_times *at,
				       uint64_t size)
{
	struct phase_times t = {
		.hash = NOT_MEASURED,
		.transfer = NOT_MEASURED,
		.verify = NOT_MEASURED,
		.total = now_s() - at->start,
		.goodput = NOT_MEASURED,
	};

	if (at->hashed > 0)
		t.hash = at->hashed - at->start;
	if (at->written > 0) {
		t.transfer = at->written - at->first_region;
		t.goodput = t.transfer > 0 ?
			    (double)size / t.transfer / 1e6 : 0.0;
	}
	if (at->written > 0 && at->verdict > 0)
		t.verify = at->verdict > at->written ?
			   at->verdict - at->written : 0.0;
	return t;
}

/* print_summary: the one line on stderr after a good run: the time of
 * each phase and the transfer's goodput (see phase_times()). */
static void print_summary(const struct sender_options *opt,
			  const struct sender_times *times, uint64_t size)
{
	struct phase_times t = phase_times(times, size);

	fprintf(stderr, "sender: %s: %llu bytes to %s, verdict good; "
		"hash %.2f s, transfer %.2f s, verify %.2f s, %.1f MB/s\n",
		opt->path, (unsigned long long)size, opt->where,
		t.hash, t.transfer, t.verify, t.goodput);
}

/* print_json_string: STR as a JSON string on stdout (lab3_json_string
 * says how), or null for NULL. */
static void print_json_string(const char *str)
{
	size_t len = lab3_json_string(str, NULL, 0);
	char *buf = malloc(len + 1);

	if (buf == NULL) {
		fputs("null", stdout);
		return;
	}
	lab3_json_string(str, buf, len + 1);
	fputs(buf, stdout);
	free(buf);
}

/* print_json_number: the field `, "NAME": VALUE` with DIGITS decimals, or
 * null for NOT_MEASURED. */
static void print_json_number(const char *name, double value, int digits)
{
	if (value == NOT_MEASURED)
		printf(", \"%s\": null", name);
	else
		printf(", \"%s\": %.*f", name, digits, value);
}

/* print_json: --json's one line on stdout, a JSON object that tells how
 * the run ended, whichever way it ended once the command line had been
 * accepted: verdict, key, timings, error (the one-line error without its
 * "sender: ") and exit_status. */
static void print_json(const struct sender_options *opt,
		       const struct sender_times *times,
		       const struct sender_outcome *out)
{
	struct phase_times t = phase_times(times, out->size);
	char key_hex[2 * LAB3_KEY_LEN + 1];
	long port = -1;

	fputs("{\"verdict\": ", stdout);
	print_json_string(out->verdict);
	fputs(", \"key\": ", stdout);
	if (out->key != NULL)
		lab3_hex(out->key, LAB3_KEY_LEN, key_hex);
	print_json_string(out->key != NULL ? key_hex : NULL);
	fputs(", \"file\": ", stdout);
	print_json_string(opt->path);
	if (out->size_known)
		printf(", \"bytes\": %llu", (unsigned long long)out->size);
	else
		fputs(", \"bytes\": null", stdout);
	fputs(", \"receiver\": ", stdout);
	print_json_string(opt->host);
	/* A port given as a service name stays a string. */
	fputs(", \"port\": ", stdout);
	if (opt->port[0] >= '0' && opt->port[0] <= '9')
		port = lab3_parse_number(opt->port, 0, 65535);
	if (port >= 0)
		printf("%ld", port);
	else
		print_json_string(opt->port);
	fputs(", \"id\": ", stdout);
	print_json_string(opt->id);
	print_json_number("hash_seconds", t.hash, 3);
	print_json_number("transfer_seconds", t.transfer, 3);
	print_json_number("verify_seconds", t.verify, 3);
	print_json_number("total_seconds", t.total, 3);
	print_json_number("goodput_mb_per_s", t.goodput, 2);
	if (out->status != LAB3_EXIT_OK) {
		fputs(", \"error\": ", stdout);
		print_json_string(out->error);
	}
	printf(", \"exit_status\": %d}\n", (int)out->status);
	fflush(stdout);
}

/* sender_report: see sender_cli.h. */
void sender_report(const struct sender_options *opt,
		   const struct sender_times *t,
		   const struct sender_outcome *out)
{
	char key_hex[2 * LAB3_KEY_LEN + 1];

	if (opt->json) {
		print_json(opt, t, out);
		return;
	}
	if (out->status != LAB3_EXIT_OK || out->key == NULL)
		return;
	lab3_hex(out->key, LAB3_KEY_LEN, key_hex);
	printf("secret key: %s\n", key_hex);
	fflush(stdout);
	print_summary(opt, t, out->size);
	if (out->error_after_key != NULL)
		fprintf(stderr, "sender: %s: after the key, the receiver sent "
			"ERROR: %s\n", opt->where, out->error_after_key);
}

/* ---- Command line ---- */

/* The help text, one source line per output line; usage() fills in the
 * longest ID and the default timeout. */
static const char usage_text[] =
"usage: sender [-qv] [--json] [-i ID] [-t SECONDS] [--wait SECONDS]\n"
"              <ip> <port> <file>\n"
"       sender --version\n"
"\n"
"Send <file> to the Lab 3 receiver at <ip> <port> with RDMA WRITE,\n"
"then trade ID for the secret key, printed as 'secret key: HEX'.\n"
"\n"
"  -i ID       student ID, 1-%d printable characters (default: login name)\n"
"  -t SECONDS  give up after SECONDS of silence from the receiver\n"
"              (default %d)\n"
"  -q          no progress bar (shown on a terminal for long transfers)\n"
"  -v          trace each state and each work completion on stderr\n"
"  --json      at the end, print one JSON object on stdout instead of the\n"
"              key: verdict, key, timings, error, exit_status\n"
"  --wait SECONDS\n"
"              when the receiver is busy with other sessions, try again\n"
"              (with growing pauses) for up to SECONDS (default 0: no)\n"
"  --version   print the version and exit\n"
"  -h, --help  show this help\n"
"\n"
"Exit status: 0 key received; 1 usage error; 2 local error (file, memory);\n"
"3 connection or transport error, or timeout; 4 refused by the receiver;\n"
"5 bad verdict (the receiver's hash differs); 6 protocol error.\n";

/* usage: command-line help on TO: stdout for -h and --help, asked for;
 * stderr after a bad command line.  The caller picks the exit status. */
static void usage(FILE *to)
{
	fprintf(to, usage_text, LAB3_ID_MAX, LAB3_DEFAULT_TIMEOUT);
}

/* take_id: the student's ID: ID (from -i) or else the login name,
 * checked as the receiver will check it. */
static int take_id(struct sender_options *o, const char *id)
{
	char why[128];

	if (id == NULL)
		id = default_id();
	if (id == NULL) {
		fprintf(stderr, "sender: cannot tell the login name; "
			"give an ID with -i\n");
		return -1;
	}
	if (lab3_check_id(id, strlen(id), why, sizeof(why)) != 0) {
		fprintf(stderr, "sender: -i: %s\n", why);
		return -1;
	}
	snprintf(o->id, sizeof(o->id), "%s", id);
	return 0;
}

/* take_operands: <ip> <port> <file> from ARGV, and "ip:port" for
 * messages; an IPv6 address goes in brackets, so its port stands
 * apart. */
static void take_operands(struct sender_options *o, char **argv)
{
	o->host = argv[0];
	o->port = argv[1];
	snprintf(o->where, sizeof(o->where),
		 strchr(o->host, ':') && o->host[0] != '[' ? "[%.*s]:%.*s" :
		 "%.*s:%.*s", 200, o->host, 20, o->port);
	o->path = argv[2];
}

/* seconds_option: option NAME's ARG, a number of seconds from MIN to
 * MAX, into *OUT; 0, or -1 after saying what is wrong with it. */
static int seconds_option(const char *name, const char *arg, long min,
			  long max, int *out)
{
	long seconds = lab3_parse_number(arg, min, max);

	if (seconds < 0) {
		fprintf(stderr, "sender: %s %s: not a number of seconds from "
			"%ld to %ld\n", name, arg, min, max);
		return -1;
	}
	*out = (int)seconds;
	return 0;
}

/* sender_parse_args: see sender_cli.h. */
int sender_parse_args(struct sender_options *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ "wait", required_argument, NULL, OPT_WAIT },
		{ NULL, 0, NULL, 0 },
	};
	const char *id = NULL;
	int opt;

	while ((opt = getopt_long(argc, argv, "hi:qt:v", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 'i':
			id = optarg;
			break;
		case 't':
			if (seconds_option("-t", optarg, 1, 3600,
					   &o->timeout_s) != 0)
				return -1;
			break;
		case 'q':
			o->quiet = 1;
			break;
		case 'v':
			o->verbose = 1;
			break;
		case OPT_JSON:
			o->json = 1;
			break;
		case OPT_WAIT:
			if (seconds_option("--wait", optarg, 0, 86400,
					   &o->wait_s) != 0)
				return -1;
			break;
		case 'h':
			usage(stdout);
			exit(LAB3_EXIT_OK);
		case OPT_VERSION:
			printf("sender %s (Lab 3 protocol version %d)\n",
			       LAB3_RELEASE, LAB3_VERSION);
			exit(LAB3_EXIT_OK);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (argc - optind != 3) {
		usage(stderr);
		return -1;
	}
	take_operands(o, &argv[optind]);
	return take_id(o, id);
}

/* sender_pin_budget: see sender_cli.h.  WRITE_PIECE_MAX for root (which
 * lifts the limit) or under an unlimited `ulimit -l`; else SLOTS pieces
 * fit in the limit less LAB3_MEMLOCK_RESERVE (in half the limit under a
 * tiny one), a page each at least. */
void sender_pin_budget(int slots, uint32_t *piece_max)
{
	uint64_t limit, budget, piece;

	*piece_max = WRITE_PIECE_MAX;
	if (!lab3_memlock_limit(&limit))
		return;
	budget = limit > 2 * LAB3_MEMLOCK_RESERVE ?
		 limit - LAB3_MEMLOCK_RESERVE : limit / 2;
	piece = budget / (uint64_t)slots & ~(uint64_t)4095;
	if (piece < 4096)
		piece = 4096;
	if (piece < *piece_max)
		*piece_max = (uint32_t)piece;
}
