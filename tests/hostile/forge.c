/* SPDX-License-Identifier: MIT */
/*
 * forge.c - a hostile "sender.c": it forges the grader's verdict.
 *
 * What it tries: it writes "CHECK NAME pass forged" for every check of
 * scripts/grade, and "score: 100/100", to every descriptor it holds
 * (0..1023), to every /proc/PID/fd/N of another process that it can
 * open for writing (the grader's pipes, logs and terminals, if it can
 * see them), to /dev/console, /dev/tty, /dev/hvc0 and /dev/vport*, and
 * on its stdout.  Then it SIGKILLs its parent and grandparent (read
 * from /proc/PID/stat), hoping to take down whatever would have written
 * the real scorecard.  It exits 0 and never prints a key.
 *
 * What the grader must do: take no line of the sender's as a verdict
 * (the CHECK lines come from the grader, after the sender has exited),
 * give it no descriptor of its own and no view of the grader's
 * processes or consoles, and survive the kill.  Score 0, nothing leaked.
 *
 * Bounds: a few hundred bytes per target; regular files are opened with
 * O_APPEND (never overwritten), block devices and character devices
 * other than terminals are never written, sockets only when AF_UNIX
 * (no network traffic), every open is O_NONBLOCK; pids 0 and 1 are
 * never signalled.  Runs in well under a second.
 *
 * Compiles alone (cc ... -lcrypto) and as the kit's sender.c: every name
 * but main() is static, and it uses no RDMA.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <unistd.h>

static const char *const check_names[] = {
	"lab-empty-file", "lab-one-byte", "lab-odd-size", "lab-one-window",
	"lab-few-mib", "many-windows", "larger-than-memory", "over-max",
	"bad-verdict", "silent-receiver", "receiver-killed",
};

static char forged[1024];
static size_t forged_len;
static int targets_written;

/* build_forgery: the CHECK lines and the score, once. */
static void build_forgery(void)
{
	size_t i;

	for (i = 0; i < sizeof(check_names) / sizeof(check_names[0]); i++)
		forged_len += (size_t)snprintf(forged + forged_len,
					       sizeof(forged) - forged_len,
					       "CHECK %s pass forged\n",
					       check_names[i]);
	forged_len += (size_t)snprintf(forged + forged_len,
				       sizeof(forged) - forged_len,
				       "score: 100/100\n");
}

/* tty_major: whether MAJOR is a terminal's (tty, console, pts, hvc). */
static int tty_major(unsigned int major)
{
	return major == 4 || major == 5 || (major >= 136 && major <= 143) ||
	       major == 229;
}

/* safe_kind: whether the open FD is something this program means to
 * write into: a regular file, a FIFO, an AF_UNIX socket or a terminal. */
static int safe_kind(int fd)
{
	struct stat st;
	int domain = 0;
	socklen_t len = sizeof(domain);

	if (fstat(fd, &st) != 0)
		return 0;
	if (S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode))
		return 1;
	if (S_ISCHR(st.st_mode))
		return isatty(fd);
	if (S_ISSOCK(st.st_mode))
		return getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain,
				  &len) == 0 && domain == AF_UNIX;
	return 0;
}

/* write_forgery: the forged lines to FD, once, without blocking. */
static void write_forgery(int fd)
{
	if (write(fd, forged, forged_len) > 0)
		targets_written++;
}

/* open_and_write: open PATH for appending (ANY_CHR: whatever character
 * device it is, for the named consoles) and write the forgery. */
static void open_and_write(const char *path, int any_chr)
{
	struct stat st;
	int fd;

	if (stat(path, &st) != 0 || S_ISBLK(st.st_mode) ||
	    S_ISDIR(st.st_mode))
		return;
	if (S_ISCHR(st.st_mode) && !any_chr &&
	    !tty_major(major(st.st_rdev)))
		return;
	fd = open(path, O_WRONLY | O_APPEND | O_NOCTTY | O_NONBLOCK |
		  O_CLOEXEC);
	if (fd < 0)
		return;
	if (any_chr || safe_kind(fd))
		write_forgery(fd);
	close(fd);
}

/* own_descriptors: every descriptor 0..1023 this process holds. */
static void own_descriptors(void)
{
	int fd;

	for (fd = 0; fd < 1024; fd++)
		if (fcntl(fd, F_GETFD) != -1 && safe_kind(fd))
			write_forgery(fd);
}

/* others_descriptors: every /proc/PID/fd/N of another process. */
static void others_descriptors(void)
{
	char dir[64], path[320];
	struct dirent *p, *f;
	DIR *proc, *fds;
	long self = (long)getpid();

	proc = opendir("/proc");
	if (proc == NULL)
		return;
	while ((p = readdir(proc)) != NULL) {
		char *end;
		long pid = strtol(p->d_name, &end, 10);

		if (*end != '\0' || pid <= 0 || pid == self)
			continue;
		snprintf(dir, sizeof(dir), "/proc/%ld/fd", pid);
		fds = opendir(dir);
		if (fds == NULL)
			continue;
		while ((f = readdir(fds)) != NULL) {
			if (f->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, f->d_name);
			open_and_write(path, 0);
		}
		closedir(fds);
	}
	closedir(proc);
}

/* consoles: the machine's consoles, by name. */
static void consoles(void)
{
	static const char *const names[] = {
		"/dev/console", "/dev/tty", "/dev/hvc0",
	};
	glob_t g;
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		open_and_write(names[i], 1);
	if (glob("/dev/vport*", 0, NULL, &g) == 0) {
		for (i = 0; i < g.gl_pathc && i < 64; i++)
			open_and_write(g.gl_pathv[i], 1);
		globfree(&g);
	}
}

/* parent_of: PID's parent from /proc/PID/stat, or 0. */
static long parent_of(long pid)
{
	char path[64], buf[1024], *close_paren;
	long ppid = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	close_paren = strrchr(buf, ')');	/* the name may hold ')' */
	if (close_paren == NULL ||
	    sscanf(close_paren + 1, " %*c %ld", &ppid) != 1)
		return 0;
	return ppid;
}

/* kill_ancestors: SIGKILL the parent and the grandparent (never 0 or 1:
 * kill(0) is our own group, and 1 is init). */
static void kill_ancestors(void)
{
	long parent = parent_of((long)getpid());
	long grandparent = parent > 1 ? parent_of(parent) : 0;

	if (parent > 1 && kill((pid_t)parent, SIGKILL) == 0)
		fprintf(stderr, "forge: killed parent %ld\n", parent);
	if (grandparent > 1 && kill((pid_t)grandparent, SIGKILL) == 0)
		fprintf(stderr, "forge: killed grandparent %ld\n",
			grandparent);
}

int main(int argc, char **argv)
{
	int c;

	opterr = 0;	/* the reference's options, and any other, ignored */
	while ((c = getopt(argc, argv, "i:t:n:w:s:o:l:qvjh")) != -1)
		;
	signal(SIGPIPE, SIG_IGN);
	build_forgery();
	fwrite(forged, 1, forged_len, stdout);
	fflush(stdout);
	own_descriptors();
	others_descriptors();
	consoles();
	fprintf(stderr, "forge: wrote the forgery to %d places\n",
		targets_written);
	kill_ancestors();
	return 0;
}
