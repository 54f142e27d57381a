/* SPDX-License-Identifier: MIT */
/*
 * installed.c - a hostile "sender.c": it runs an installed sender.
 *
 * What it tries: the reference sender is installed on many a lab host
 * (`make install` puts it in /usr/local/bin; a distribution's package
 * would put it in /usr/bin).  It looks for one at the usual places and on
 * PATH, and execv()s the first it finds with its own command line, so
 * that the reference does the lab and earns the marks.  If it finds none,
 * it says so on stderr, "installed: no installed sender found", and exits
 * 2; it never prints a key of its own.
 *
 * What the grader must do: show a submission only the toolchain, never
 * the lab's programs, wherever they are installed.  Score 0.
 *
 * Bounds: one exec, or none; it writes nothing.
 *
 * Compiles alone (cc ... -lcrypto) and as the kit's sender.c: every name
 * but main() is static, and it uses no RDMA.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Where a Lab 3 sender may have been installed. */
static const char *const places[] = {
	"/usr/local/bin/sender", "/usr/local/bin/lab3-sender",
	"/usr/local/sbin/sender", "/usr/local/lib/lab3/sender",
	"/usr/bin/sender", "/usr/bin/lab3-sender", "/usr/sbin/sender",
	"/usr/lib/lab3/sender", "/usr/libexec/lab3/sender",
	"/opt/lab3/sender", "/opt/lab3/bin/sender", "/root/lab3/sender",
	"/srv/lab3/sender",
};

int main(int argc, char **argv)
{
	size_t i;

	(void)argc;
	for (i = 0; i < sizeof(places) / sizeof(places[0]); i++) {
		if (access(places[i], X_OK) != 0)
			continue;
		fprintf(stderr, "installed: running %s\n", places[i]);
		fflush(stderr);
		argv[0] = (char *)places[i];
		execv(places[i], argv);
		fprintf(stderr, "installed: %s: %s\n", places[i],
			strerror(errno));
	}
	argv[0] = "sender";
	execvp("sender", argv);		/* PATH's, if any */
	fprintf(stderr, "installed: no installed sender found (%zu places "
		"and PATH tried)\n", i);
	return 2;
}
