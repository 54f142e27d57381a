/*
 * sender.c - Lab 3's sender: send one file into a receiver's memory with
 * RDMA WRITE, and trade a student ID for the secret key that proves it.
 *
 *   ./sender [-i ID] [-v] [-t SECONDS] <ip> <port> <file>
 *
 * Before any connection, the file is opened, mapped and hashed, so a
 * missing or unreadable file is reported at once.  Then the lab's sequence
 * (see protocol.h) is a straight line of states, one function each:
 *
 *   CONNECT         resolve the receiver's address and route, connect
 *   SEND_FILE_INFO  1. the file's length, SHA-256 and name
 *   RECV_REGION     2. the receiver's region: addr, length, rkey
 *   WRITE_FILE      3. RDMA WRITE the file into that region ...
 *   SEND_DONE          ... then say DONE
 *   RECV_VERDICT    4. good, or bad (exit 5)
 *   SEND_ID         5. the student's ID
 *   RECV_KEY        6. the secret key, printed as "secret key: HEX"
 *
 * Any failure ends the run with one line on stderr and the exit status
 * that names its kind (enum lab3_exit in common.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

#define WRITE_PIECE_MAX (8u << 20)	/* bytes in one RDMA WRITE, at most */

enum sender_state {
	CONNECT,
	SEND_FILE_INFO,
	RECV_REGION,
	WRITE_FILE,
	SEND_DONE,
	RECV_VERDICT,
	SEND_ID,
	RECV_KEY,
	FINISHED,
	FAILED,
};

static const char *const state_names[] = {
	[CONNECT] = "CONNECT",
	[SEND_FILE_INFO] = "SEND_FILE_INFO",
	[RECV_REGION] = "RECV_REGION",
	[WRITE_FILE] = "WRITE_FILE",
	[SEND_DONE] = "SEND_DONE",
	[RECV_VERDICT] = "RECV_VERDICT",
	[SEND_ID] = "SEND_ID",
	[RECV_KEY] = "RECV_KEY",
	[FINISHED] = "FINISHED",
	[FAILED] = "FAILED",
};

struct sender {
	/* Command line. */
	const char *host;
	const char *port;
	const char *path;
	char id[LAB3_ID_MAX + 1];
	int verbose;
	int timeout_s;

	/* The file, mapped read-only: the source of the RDMA WRITEs. */
	int fd;
	uint64_t size;
	void *data;
	char name[LAB3_NAME_MAX + 1];
	uint8_t sha256[LAB3_SHA256_LEN];

	struct lab3_conn conn;
	struct ibv_mr *file_mr;
	uint64_t remote_addr;
	uint32_t rkey;
	uint8_t key[LAB3_KEY_LEN];

	enum lab3_exit exit_status;	/* why the run FAILED */
};

/* The help text, one source line per output line; usage() fills in the
 * longest ID and the default timeout. */
static const char usage_text[] =
"usage: sender [-v] [-i ID] [-t SECONDS] <ip> <port> <file>\n"
"\n"
"Send <file> to the Lab 3 receiver at <ip> <port> with RDMA WRITE,\n"
"then trade ID for the secret key, printed as 'secret key: HEX'.\n"
"\n"
"  -i ID       student ID, 1-%d printable characters (default: login name)\n"
"  -t SECONDS  give up after SECONDS of silence from the receiver\n"
"              (default %d)\n"
"  -v          trace each state and each work completion on stderr\n"
"  -h, --help  show this help\n"
"\n"
"Exit status: 0 key received; 1 usage error; 2 local error (file, memory);\n"
"3 connection or transport error, or timeout; 4 refused by the receiver;\n"
"5 bad verdict (the receiver's hash differs); 6 protocol error.\n";

/* usage: command-line help on stderr, for -h and for a bad command line;
 * the caller picks the exit status. */
static void usage(void)
{
	fprintf(stderr, usage_text, LAB3_ID_MAX, LAB3_DEFAULT_TIMEOUT);
}

/* fail: print one line "sender: CONTEXT: MESSAGE", record the exit status
 * and return the FAILED state, so a step can end with `return fail(...)`. */
static enum sender_state fail(struct sender *s, enum lab3_exit status,
			      const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static enum sender_state fail(struct sender *s, enum lab3_exit status,
			      const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "sender: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	s->exit_status = status;
	return FAILED;
}

/* fail_conn: the connection failed; conn.err says how.  Timeouts, a lost
 * peer and transport errors are connection errors, a malformed message is
 * a protocol error. */
static enum sender_state fail_conn(struct sender *s, int ret)
{
	if (ret == -EPROTO) {
		lab3_send_error(&s->conn, LAB3_ERR_PROTOCOL, s->conn.err);
		return fail(s, LAB3_EXIT_PROTOCOL, "%s:%s: %s", s->host,
			    s->port, s->conn.err);
	}
	return fail(s, LAB3_EXIT_CONNECTION, "%s:%s: %s", s->host, s->port,
		    s->conn.err);
}

/* ---- Before connecting: the file and the ID ---- */

/* open_file: open, map and hash the file, and take its base name.  The
 * mapping is the RDMA source later: no copy of the data is ever made. */
static int open_file(struct sender *s)
{
	const char *base = strrchr(s->path, '/');
	const char *bad_hash;
	struct stat st;
	char why[128];

	s->fd = open(s->path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0 || fstat(s->fd, &st) != 0) {
		fail(s, LAB3_EXIT_LOCAL, "%s: %s", s->path, strerror(errno));
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		fail(s, LAB3_EXIT_LOCAL, "%s: is a directory", s->path);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		fail(s, LAB3_EXIT_LOCAL, "%s: not a regular file", s->path);
		return -1;
	}
	s->size = (uint64_t)st.st_size;
	if (s->size > 0) {
		/* MAP_PRIVATE: rxe cannot pin a shared mapping of a tmpfs
		 * file; read-only, the private mapping is the file all the
		 * same. */
		s->data = mmap(NULL, s->size, PROT_READ, MAP_PRIVATE, s->fd, 0);
		if (s->data == MAP_FAILED) {
			s->data = NULL;
			fail(s, LAB3_EXIT_LOCAL, "%s: mmap: %s", s->path,
			     strerror(errno));
			return -1;
		}
		madvise(s->data, s->size, MADV_SEQUENTIAL);
	}
	if (lab3_sha256(s->data, s->size, s->sha256) != 0) {
		fail(s, LAB3_EXIT_LOCAL, "%s: cannot compute SHA-256", s->path);
		return -1;
	}
	bad_hash = getenv("LAB3_TEST_BAD_HASH");
	if (bad_hash != NULL && strcmp(bad_hash, "1") == 0)
		s->sha256[0] ^= 0xff;	/* test-only: claim a wrong hash */

	/* Send the base name only if the receiver would accept it. */
	base = base ? base + 1 : s->path;
	if (lab3_check_name(base, strlen(base), why, sizeof(why)) == 0)
		snprintf(s->name, sizeof(s->name), "%s", base);
	return 0;
}

/* default_id: the login name, the ID used when -i is not given. */
static const char *default_id(void)
{
	struct passwd *pw = getpwuid(geteuid());

	if (pw != NULL)
		return pw->pw_name;
	return getenv("USER");
}

/* ---- The states, in the lab's order ---- */

/* connect_to_receiver: CONNECT, before step 1: resolve and connect, then
 * register the file's mapping as the source of the RDMA WRITEs. */
static enum sender_state connect_to_receiver(struct sender *s)
{
	int ret = lab3_connect(&s->conn, s->host, s->port);

	if (ret != 0)
		return fail(s, LAB3_EXIT_CONNECTION, "connect to %s:%s: %s",
			    s->host, s->port, s->conn.err);
	if (s->size > 0) {
		/* Local read access only: the NIC reads the file, nobody
		 * may write it. */
		ret = lab3_reg_mr(&s->conn, s->data, s->size, 0, &s->file_mr);
		if (ret != 0) {
			lab3_send_error(&s->conn, LAB3_ERR_INTERNAL, "the "
					"sender cannot register its file");
			return fail(s, LAB3_EXIT_LOCAL, "%s: %s", s->path,
				    s->conn.err);
		}
	}
	return SEND_FILE_INFO;
}

/* send_file_info: step 1, FILE_INFO: the file's length, SHA-256 and name. */
static enum sender_state send_file_info(struct sender *s)
{
	struct lab3_msg msg = { .type = LAB3_MSG_FILE_INFO };
	int ret;

	msg.file_info.length = s->size;
	memcpy(msg.file_info.sha256, s->sha256, LAB3_SHA256_LEN);
	snprintf(msg.file_info.name, sizeof(msg.file_info.name), "%s",
		 s->name);
	ret = lab3_send_msg(&s->conn, &msg);
	if (ret != 0)
		return fail_conn(s, ret);
	return RECV_REGION;
}

/* expected_message: the one message type each receiving state accepts
 * (besides ERROR, which any state accepts and which ends the run). */
static enum lab3_msg_type expected_message(enum sender_state state)
{
	switch (state) {
	case RECV_REGION:	return LAB3_MSG_REGION;
	case RECV_VERDICT:	return LAB3_MSG_VERDICT;
	case RECV_KEY:		return LAB3_MSG_KEY;
	default:		return 0;
	}
}

/* receive: wait up to WAIT_MS for the message STATE expects.  Returns 0,
 * or -1 after reporting why and recording the exit status. */
static int receive(struct sender *s, enum sender_state state,
		   struct lab3_msg *msg, int wait_ms)
{
	enum lab3_msg_type want = expected_message(state);
	char why[LAB3_ERR_LEN];
	int ret;

	ret = lab3_recv_msg(&s->conn, msg, wait_ms);
	if (ret != 0) {
		fail_conn(s, ret);
		return -1;
	}
	if (msg->type == LAB3_MSG_ERROR) {
		fail(s, LAB3_EXIT_REFUSED, "the receiver refused: %s",
		     msg->error.reason);
		return -1;
	}
	if (msg->type != want) {
		snprintf(why, sizeof(why), "expected %s, got %s",
			 lab3_msg_type_name(want),
			 lab3_msg_type_name(msg->type));
		lab3_send_error(&s->conn, LAB3_ERR_PROTOCOL, why);
		fail(s, LAB3_EXIT_PROTOCOL, "%s:%s: protocol error: %s",
		     s->host, s->port, why);
		return -1;
	}
	return 0;
}

/* recv_region: step 2, REGION: where to write; its length must be the
 * file's. */
static enum sender_state recv_region(struct sender *s)
{
	struct lab3_msg msg;
	char why[LAB3_ERR_LEN];

	if (receive(s, RECV_REGION, &msg, 0) != 0)
		return FAILED;
	if (msg.region.length != s->size) {
		snprintf(why, sizeof(why), "REGION of %llu bytes for a file "
			 "of %llu", (unsigned long long)msg.region.length,
			 (unsigned long long)s->size);
		lab3_send_error(&s->conn, LAB3_ERR_PROTOCOL, why);
		return fail(s, LAB3_EXIT_PROTOCOL, "%s:%s: protocol error: %s",
			    s->host, s->port, why);
	}
	s->remote_addr = msg.region.addr;
	s->rkey = msg.region.rkey;
	if (s->verbose)
		fprintf(stderr, "sender: region addr=0x%llx length=%llu "
			"rkey=0x%x\n", (unsigned long long)s->remote_addr,
			(unsigned long long)msg.region.length, s->rkey);
	return WRITE_FILE;
}

/* write_file: step 3: RDMA WRITE the whole file into the receiver's
 * region, in pieces no larger than the device's largest message (nor than
 * WRITE_PIECE_MAX, so that completions keep coming), keeping up to
 * LAB3_SEND_DEPTH of them in flight.  A zero-length file writes nothing. */
static enum sender_state write_file(struct sender *s)
{
	const uint8_t *data = s->data;
	uint32_t piece = s->conn.max_msg_size < WRITE_PIECE_MAX ?
			 s->conn.max_msg_size : WRITE_PIECE_MAX;
	int wait_ms = lab3_wait_for_bytes(&s->conn, piece);
	uint64_t offset = 0;
	int in_flight = 0, ret;

	while (offset < s->size || in_flight > 0) {
		if (offset < s->size && in_flight < LAB3_SEND_DEPTH) {
			uint64_t left = s->size - offset;
			uint32_t len = left < piece ? (uint32_t)left : piece;

			ret = lab3_post_rdma_write(&s->conn, s->file_mr,
						   data + offset, len,
						   s->remote_addr + offset,
						   s->rkey);
			if (ret != 0)
				return fail_conn(s, ret);
			offset += len;
			in_flight++;
			continue;
		}
		ret = lab3_wait_send(&s->conn, LAB3_WR_WRITE, wait_ms);
		if (ret != 0)
			return fail_conn(s, ret);
		in_flight--;
	}
	return SEND_DONE;
}

/* send_done: step 3, after the writes: DONE with the bytes written. */
static enum sender_state send_done(struct sender *s)
{
	struct lab3_msg msg = { .type = LAB3_MSG_DONE };
	int ret;

	msg.done.bytes = s->size;
	ret = lab3_send_msg(&s->conn, &msg);
	if (ret != 0)
		return fail_conn(s, ret);
	return RECV_VERDICT;
}

/* recv_verdict: step 4, VERDICT: a good one leads on to the ID, a bad one
 * ends the run with LAB3_EXIT_BAD_VERDICT. */
static enum sender_state recv_verdict(struct sender *s)
{
	struct lab3_msg msg;

	/* The receiver hashes (and may save) the whole file first. */
	if (receive(s, RECV_VERDICT, &msg,
		    lab3_wait_for_bytes(&s->conn, s->size)) != 0)
		return FAILED;
	if (msg.verdict.verdict != LAB3_VERDICT_GOOD)
		return fail(s, LAB3_EXIT_BAD_VERDICT, "%s: verdict bad: the "
			    "receiver's SHA-256 of the %llu bytes differs",
			    s->path, (unsigned long long)s->size);
	return SEND_ID;
}

/* send_id: step 5, ID: the student's ID. */
static enum sender_state send_id(struct sender *s)
{
	struct lab3_msg msg = { .type = LAB3_MSG_ID };
	int ret;

	snprintf(msg.id.id, sizeof(msg.id.id), "%s", s->id);
	ret = lab3_send_msg(&s->conn, &msg);
	if (ret != 0)
		return fail_conn(s, ret);
	return RECV_KEY;
}

/* recv_key: step 6, KEY: keep the secret key for main() to print. */
static enum sender_state recv_key(struct sender *s)
{
	struct lab3_msg msg;

	if (receive(s, RECV_KEY, &msg, 0) != 0)
		return FAILED;
	memcpy(s->key, msg.key.key, LAB3_KEY_LEN);
	return FINISHED;
}

/* run: the state machine.  Each step does its work and names the next. */
static enum lab3_exit run(struct sender *s)
{
	enum sender_state state = CONNECT;

	while (state != FINISHED && state != FAILED) {
		if (s->verbose)
			fprintf(stderr, "sender: state %s\n",
				state_names[state]);
		switch (state) {
		case CONNECT:		state = connect_to_receiver(s); break;
		case SEND_FILE_INFO:	state = send_file_info(s); break;
		case RECV_REGION:	state = recv_region(s); break;
		case WRITE_FILE:	state = write_file(s); break;
		case SEND_DONE:		state = send_done(s); break;
		case RECV_VERDICT:	state = recv_verdict(s); break;
		case SEND_ID:		state = send_id(s); break;
		case RECV_KEY:		state = recv_key(s); break;
		case FINISHED:
		case FAILED:
			break;
		}
	}
	if (state == FAILED)
		return s->exit_status;
	return LAB3_EXIT_OK;
}

/* ---- Command line ---- */

/* parse_args: the command line: options, <ip> <port> <file>, and the ID
 * (the login name without -i), checked before anything else happens. */
static int parse_args(struct sender *s, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *id = NULL;
	char why[128];
	int opt;

	while ((opt = getopt_long(argc, argv, "hi:t:v", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 'i':
			id = optarg;
			break;
		case 't':
			s->timeout_s = lab3_parse_seconds(optarg);
			if (s->timeout_s < 0) {
				fprintf(stderr, "sender: -t %s: not a number "
					"of seconds from 1 to 3600\n", optarg);
				return -1;
			}
			break;
		case 'v':
			s->verbose = 1;
			break;
		case 'h':
			usage();
			exit(LAB3_EXIT_OK);
		default:
			usage();
			return -1;
		}
	}
	if (argc - optind != 3) {
		usage();
		return -1;
	}
	s->host = argv[optind];
	s->port = argv[optind + 1];
	s->path = argv[optind + 2];

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
	snprintf(s->id, sizeof(s->id), "%s", id);
	return 0;
}

/* main: the whole run: the command line, the file, the lab's steps, the
 * key on stdout; the exit status says how it ended (enum lab3_exit). */
int main(int argc, char **argv)
{
	struct sender s = {
		.fd = -1,
		.timeout_s = LAB3_DEFAULT_TIMEOUT,
	};
	char key_hex[2 * LAB3_KEY_LEN + 1];
	enum lab3_exit status;

	if (parse_args(&s, argc, argv) != 0)
		return LAB3_EXIT_USAGE;
	s.conn.prog = "sender";
	s.conn.verbose = s.verbose;
	s.conn.timeout_ms = s.timeout_s * 1000;

	if (open_file(&s) != 0) {
		status = s.exit_status;
		goto out_close;
	}
	status = run(&s);
	if (status == LAB3_EXIT_OK) {
		lab3_hex(s.key, LAB3_KEY_LEN, key_hex);
		printf("secret key: %s\n", key_hex);
		fflush(stdout);
		fprintf(stderr, "sender: %s: %llu bytes sent to %s:%s, "
			"verdict good\n", s.path, (unsigned long long)s.size,
			s.host, s.port);
	}

	lab3_disconnect(&s.conn);
	if (s.file_mr != NULL)
		ibv_dereg_mr(s.file_mr);
	lab3_conn_destroy(&s.conn);
out_close:
	if (s.data != NULL)
		munmap(s.data, s.size);
	if (s.fd >= 0)
		close(s.fd);
	return status;
}
