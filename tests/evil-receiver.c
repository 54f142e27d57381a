/* SPDX-License-Identifier: MIT */
/*
 * evil-receiver.c - a receiver that breaks the Lab 3 protocol on purpose,
 * to test the reference sender: what ./sender does with answers that an
 * honest receiver never gives it.  Test-only; built from the project's
 * common layer.
 *
 *   tests/evil-receiver [-p PORT] [-a ADDR] MODE
 *
 * It listens like ./receiver (on ADDR, default every address; on PORT,
 * default 7471, 0 for any free one), prints "listening on ADDR:PORT" on
 * stdout, serves ONE session as MODE says (see the table at the end),
 * prints one line "evil-receiver: MODE: ..." saying what it did and what
 * the sender did, and exits.
 *
 *   bad-verdict  Takes the file as an honest receiver does, through one
 *                window for the whole file (files up to 64 MiB; a larger
 *                one gets ERROR), then answers VERDICT bad whatever the
 *                hash, and waits for the sender to hang up.  A sender
 *                that sends its ID all the same gets a KEY (of bytes
 *                0xee), which it must not print: the line then ends
 *                "the sender sent ID, a KEY went back".
 *
 *   key-then-error  Takes the file, says good, and answers the ID with a
 *                KEY of EVIL_KEY_BYTEs and, posted right behind it, an
 *                ERROR.
 *
 *   refuse-mid-write
 *                Offers one window for the whole file as above, then at
 *                once posts an ERROR (code INTERNAL, reason "evil
 *                receiver refuses mid-write") and takes the window back
 *                without waiting, so that the sender's WRITEs into it
 *                fail around the time its ERROR arrives; waits for the
 *                sender to hang up.  The sender must report the ERROR's
 *                reason, not the failed WRITEs.
 *
 *   silent       Accepts the connection, then never sends anything, and
 *                waits (at most SILENT_MAX_S seconds) for the sender to
 *                give up and hang up.  The line says how long that took.
 *
 *   killed-mid-write
 *                Takes FILE_INFO and offers one window for the whole file
 *                as above, prints its line, and KILL_DELAY_MS later, while
 *                the sender writes, kills itself with SIGKILL, as a
 *                receiver killed in the middle of a transfer.  (Its exit
 *                status is then the shell's 137.)
 *
 * Exit status: 0 when it carried out its part, whatever the sender did
 * then: judging the sender's reaction is the test's job.  1 means a usage
 * error, 2 that it could not carry out its part (no sender came, the
 * sender failed first, ...).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "args.h"
#include "common.h"
#include "provider.h"
#include "listener.h"
#include "evil.h"
#include "testlib.h"

#define EVIL_MAX_BYTES (64u << 20)	/* the largest file it takes */
#define SILENT_MAX_S 120		/* silent: the longest it waits */
#define KILL_DELAY_MS 50		/* killed-mid-write: REGION to KILL */
#define EVIL_KEY_BYTE 0xee		/* bad-verdict: the KEY it tempts with */

/* The evil receiver's listener, its one connection and its window. */
struct evil {
	struct lab3_listener listener;
	struct lab3_conn conn;
	uint64_t length;		/* the file's, from FILE_INFO */
	/* "FILE_INFO of N bytes, SHA-256 H", once it came: the grader's
	 * evidence that a sender did connect and send (scripts/grade). */
	char file_info[128];
	uint8_t *window;		/* the whole file, NULL if empty */
	struct ibv_mr *mr;
	char what[LAB3_ERR_LEN];	/* what happened, for the line */
};

/* recv_type: receive the next message, waiting up to WAIT_MS (0: the
 * connection's timeout), and require type WANT. */
static int recv_type(struct evil *e, enum lab3_msg_type want,
		     struct lab3_msg *msg, int wait_ms)
{
	return evil_recv_type(&e->conn, want, msg, wait_ms);
}

/* note_file_info: keep FILE_INFO's length and hash (MSG) for the line. */
static void note_file_info(struct evil *e, const struct lab3_msg *msg)
{
	char hex[2 * LAB3_SHA256_LEN + 1];

	e->length = msg->file_info.length;
	lab3_hex(msg->file_info.sha256, LAB3_SHA256_LEN, hex);
	snprintf(e->file_info, sizeof(e->file_info),
		 "FILE_INFO of %llu bytes, SHA-256 %s",
		 (unsigned long long)e->length, hex);
}

/* recv_file_info: step 1: FILE_INFO, for a file it can hold. */
static int recv_file_info(struct evil *e)
{
	struct lab3_msg msg;
	int ret = recv_type(e, LAB3_MSG_FILE_INFO, &msg, 0);

	if (ret != 0)
		return ret;
	note_file_info(e, &msg);
	if (e->length <= EVIL_MAX_BYTES)
		return 0;
	snprintf(e->conn.err, sizeof(e->conn.err), "file of %llu bytes is "
		 "over the evil receiver's limit of %u bytes",
		 (unsigned long long)e->length, EVIL_MAX_BYTES);
	lab3_send_error(&e->conn, LAB3_ERR_TOO_LARGE, e->conn.err);
	return -EFBIG;
}

/* offer_window: step 2: register one window for the whole file and send
 * its REGION (addr 0, rkey 0, length 0 for an empty file). */
static int offer_window(struct evil *e)
{
	struct lab3_msg msg = { .type = LAB3_MSG_REGION };
	int ret;

	if (e->length > 0) {
		e->window = malloc(e->length);
		if (e->window == NULL) {
			snprintf(e->conn.err, sizeof(e->conn.err),
				 "cannot allocate %llu bytes",
				 (unsigned long long)e->length);
			return -ENOMEM;
		}
		/* Random bytes, where nothing was written yet. */
		for (uint64_t got = 0; got < e->length; ) {
			ssize_t r = getrandom(e->window + got,
					      e->length - got, 0);

			if (r > 0)
				got += (uint64_t)r;
			else if (errno != EINTR)
				return -errno;
		}
		ret = lab3_reg_mr(&e->conn, e->window, e->length,
				  IBV_ACCESS_LOCAL_WRITE |
				  IBV_ACCESS_REMOTE_WRITE, &e->mr);
		if (ret != 0)
			return ret;
		msg.region.addr = (uintptr_t)e->window;
		msg.region.rkey = e->mr->rkey;
	}
	msg.region.length = e->length;
	return lab3_send_msg(&e->conn, &msg);
}

/* recv_done: step 3: the sender's RDMA WRITEs land unseen, then its DONE,
 * which must be for the whole file. */
static int recv_done(struct evil *e)
{
	struct lab3_msg msg;
	int ret = recv_type(e, LAB3_MSG_DONE, &msg,
			    lab3_ms_for_bytes(&e->conn, e->length));

	if (ret != 0)
		return ret;
	if (msg.done.offset == 0 && msg.done.bytes == e->length)
		return 0;
	snprintf(e->conn.err, sizeof(e->conn.err), "DONE(%llu, %llu), "
		 "expected DONE(0, %llu)", (unsigned long long)msg.done.offset,
		 (unsigned long long)msg.done.bytes,
		 (unsigned long long)e->length);
	return -EPROTO;
}

/* take_file: steps 1 to 3 as an honest receiver, in one window. */
static int take_file(struct evil *e)
{
	int ret = recv_file_info(e);

	if (ret == 0)
		ret = offer_window(e);
	if (ret == 0)
		ret = recv_done(e);
	return ret;
}

/* send_verdict: step 4, VERDICT, whatever the file's hash. */
static int send_verdict(struct evil *e, enum lab3_verdict verdict)
{
	struct lab3_msg msg = { .type = LAB3_MSG_VERDICT };

	msg.verdict.verdict = verdict;
	return lab3_send_msg(&e->conn, &msg);
}

/* wait_hang_up: after the last message, wait (up to the timeout) for the
 * sender to disconnect, and say in e->what, after WHAT, what it did.  An
 * ID is answered with a KEY of EVIL_KEY_BYTEs (see bad-verdict). */
static int wait_hang_up(struct evil *e, const char *what)
{
	struct lab3_msg msg, key = { .type = LAB3_MSG_KEY };
	int ret = lab3_recv_msg(&e->conn, &msg, 0);

	if (ret == -ECONNRESET) {
		e->conn.err[0] = '\0';
		snprintf(e->what, sizeof(e->what), "%s, the sender hung up",
			 what);
		return 0;
	}
	if (ret != 0)
		return ret;
	if (msg.type == LAB3_MSG_ID) {
		memset(key.key.key, EVIL_KEY_BYTE, LAB3_KEY_LEN);
		ret = lab3_send_msg(&e->conn, &key);
		snprintf(e->what, sizeof(e->what), "%s, then the sender sent "
			 "ID, a KEY went back", what);
		return ret;
	}
	snprintf(e->what, sizeof(e->what), "%s, then the sender sent %s",
		 what, lab3_msg_type_name(msg.type));
	return 0;
}

/* ---- The misbehaviours ---- */

/* arrived_hash: the SHA-256 of what the window holds, as hex into HEX:
 * the grader compares it with the file's, evidence that the sender's
 * WRITEs came (the window starts as random bytes: offer_window()). */
static void arrived_hash(const struct evil *e, char *hex)
{
	uint8_t sha256[LAB3_SHA256_LEN];

	lab3_sha256(e->window, e->length, sha256);
	lab3_hex(sha256, LAB3_SHA256_LEN, hex);
}

/* A bad verdict for a file that arrived whole. */
static int bad_verdict(struct evil *e)
{
	char what[128], hex[2 * LAB3_SHA256_LEN + 1];
	int ret = take_file(e);

	if (ret == 0)
		ret = send_verdict(e, LAB3_VERDICT_BAD);
	if (ret != 0)
		return ret;
	arrived_hash(e, hex);
	snprintf(what, sizeof(what), "%llu bytes received, SHA-256 %s, "
		 "verdict bad sent", (unsigned long long)e->length, hex);
	return wait_hang_up(e, what);
}

/* A good verdict and a KEY for the ID, then at once an ERROR: the key
 * has come, so the sender's run has succeeded (it must print the key,
 * and may say on stderr that an ERROR followed). */
static int key_then_error(struct evil *e)
{
	struct lab3_msg msg, key = { .type = LAB3_MSG_KEY };
	int ret = take_file(e);

	if (ret == 0)
		ret = send_verdict(e, LAB3_VERDICT_GOOD);
	if (ret == 0)
		ret = recv_type(e, LAB3_MSG_ID, &msg, 0);
	if (ret != 0)
		return ret;
	/* Posted back to back: the two arrive together. */
	memset(key.key.key, EVIL_KEY_BYTE, LAB3_KEY_LEN);
	ret = lab3_wait_for_credit(&e->conn, 0);
	if (ret == 0)
		ret = lab3_post_msg(&e->conn, &key);
	if (ret != 0)
		return ret;
	lab3_send_error(&e->conn, LAB3_ERR_INTERNAL,
			"evil receiver: an ERROR right after the KEY");
	snprintf(e->what, sizeof(e->what), "KEY, then ERROR sent");
	return 0;
}

/* An ERROR, and the window revoked at once, while the sender writes. */
static int refuse_mid_write(struct evil *e)
{
	struct lab3_msg msg = { .type = LAB3_MSG_ERROR };
	int ret = recv_file_info(e);

	if (ret == 0)
		ret = offer_window(e);
	if (ret != 0)
		return ret;
	msg.error.code = LAB3_ERR_INTERNAL;
	snprintf(msg.error.reason, sizeof(msg.error.reason),
		 "evil receiver refuses mid-write");
	ret = lab3_wait_for_credit(&e->conn, 0);
	if (ret == 0)
		ret = lab3_post_msg(&e->conn, &msg);
	if (e->mr != NULL) {
		ibv_dereg_mr(e->mr);
		e->mr = NULL;
	}
	if (ret != 0)
		return ret;
	return wait_hang_up(e, "ERROR sent, window revoked");
}

/* Silence from the start: the sender's timeout must end it. */
static int silent(struct evil *e)
{
	long long start = lab3_now_ms(), left = SILENT_MAX_S * 1000LL;
	struct lab3_msg msg;
	int ret;

	do {	/* take what comes, answer nothing */
		ret = lab3_recv_msg(&e->conn, &msg, (int)left);
		if (ret == 0 && msg.type == LAB3_MSG_FILE_INFO &&
		    e->file_info[0] == '\0')
			note_file_info(e, &msg);
		left = SILENT_MAX_S * 1000LL - (lab3_now_ms() - start);
	} while (ret == 0 && left > 0);
	if (ret == -ECONNRESET) {
		e->conn.err[0] = '\0';
		snprintf(e->what, sizeof(e->what), "silent; the sender hung "
			 "up after %.1f s",
			 (double)(lab3_now_ms() - start) / 1000);
		return 0;
	}
	if (ret == 0 || ret == -ETIMEDOUT)
		snprintf(e->conn.err, sizeof(e->conn.err), "the sender was "
			 "still connected after %d s of silence", SILENT_MAX_S);
	return ret != 0 ? ret : -ETIMEDOUT;
}

/* A receiver killed while the sender writes into its window. */
static int killed_mid_write(struct evil *e)
{
	struct timespec pause = { .tv_nsec = KILL_DELAY_MS * 1000000L };
	int ret = recv_file_info(e);

	if (ret == 0)
		ret = offer_window(e);
	if (ret != 0)
		return ret;
	printf("evil-receiver: killed-mid-write: %s; REGION of %llu bytes "
	       "sent, killing itself\n", e->file_info,
	       (unsigned long long)e->length);
	fflush(stdout);
	nanosleep(&pause, NULL);
	raise(SIGKILL);
	return -EINTR;		/* never here */
}

static const struct evil_mode modes[] = {
	{ "bad-verdict", bad_verdict },
	{ "key-then-error", key_then_error },
	{ "refuse-mid-write", refuse_mid_write },
	{ "silent", silent },
	{ "killed-mid-write", killed_mid_write },
};
#define NMODES (sizeof(modes) / sizeof(modes[0]))

/* ---- Running one session ---- */

/* usage: the synopsis and the modes, on stderr; returns exit status 1. */
static int usage(void)
{
	return evil_usage("evil-receiver [-p PORT] [-a ADDR] MODE", modes, NMODES);
}

/* parse_args: -p and -a into *PORT and *ADDR, and the index of the mode
 * that the one argument names into *MODE; 0, or -1 for a usage error. */
static int parse_args(int argc, char **argv, const char **port,
		      const char **addr, size_t *mode)
{
	int opt;

	while ((opt = getopt(argc, argv, "+p:a:")) != -1) {
		switch (opt) {
		case 'p':
			if (lab3_parse_number(optarg, 0, 65535) < 0) {
				fprintf(stderr, "evil-receiver: -p %s: not a "
					"port from 0 to 65535\n", optarg);
				return -1;
			}
			*port = optarg;
			break;
		case 'a': *addr = optarg; break;
		default: return -1;
		}
	}
	if (argc - optind != 1)
		return -1;
	return evil_find_mode(argv[optind], modes, NMODES, mode);
}

/* serve_one: accept one sender and misbehave at it as MODE says; print
 * the line and return the exit status. */
static int serve_one(struct evil *e, size_t mode)
{
	char line[2 * LAB3_ERR_LEN + sizeof(e->file_info)];
	int ret = lab3_accept(&e->listener, &e->conn);

	if (ret == 0)
		ret = modes[mode].run(e);
	if (ret == 0)
		snprintf(line, sizeof(line), "%s", e->what);
	else
		snprintf(line, sizeof(line), "could not carry it out: %s",
			 e->conn.err);
	printf("evil-receiver: %s: %s%s%s\n", modes[mode].name, line,
	       e->file_info[0] ? "; " : "", e->file_info);
	fflush(stdout);
	/* Its queue pair is its own, as the class server's is: shut it and
	 * disconnect (listener.h), then wait (bounded) for the sender's
	 * DISCONNECTED. */
	if (lab3_disconnect_start(&e->conn))
		while (!e->conn.disconnected && lab3_wait(&e->conn, 2000) == 0)
			;
	if (e->mr != NULL)
		ibv_dereg_mr(e->mr);
	free(e->window);
	lab3_server_conn_destroy(&e->conn);
	return ret == 0 ? 0 : 2;
}

/* main: listen, say where, serve one session. */
int main(int argc, char **argv)
{
	struct evil e = {
		.conn = { .prog = "evil-receiver", .timeout_ms = 10000 },
	};
	const char *port = NULL, *addr = NULL;
	char default_port[8], where[64];
	uint16_t bound_port;
	uint64_t memlock;
	size_t mode;
	int status;

	if (parse_args(argc, argv, &port, &addr, &mode) != 0)
		return usage();
	(void)lab3_memlock_limit(&memlock);	/* root: lift it, for siw */
	if (port == NULL) {
		snprintf(default_port, sizeof(default_port), "%d",
			 LAB3_DEFAULT_PORT);
		port = default_port;
	}
	if (lab3_listen(&e.listener, addr, port, &bound_port) != 0) {
		fprintf(stderr, "evil-receiver: listen on %s:%s: %s\n",
			addr ? addr : "*", port, e.listener.err);
		lab3_listener_destroy(&e.listener);
		return 2;
	}
	printf("listening on %s\n",
	       lab3_addr_name(e.listener.id, 0, where, sizeof(where)));
	fflush(stdout);
	status = serve_one(&e, mode);
	lab3_listener_destroy(&e.listener);
	return status;
}
