/* SPDX-License-Identifier: MIT */
/*
 * userns.c - a hostile "sender.c": it makes namespaces of its own.
 *
 * What it tries: a user namespace gives its maker every capability
 * inside it, and with them the kernel's code for network, mount and
 * other namespaces that an unprivileged process never reaches: the
 * larger part of the kernel's attack surface from a sandbox.  It tries
 * every way in: unshare(CLONE_NEWUSER), clone() and clone3() with
 * CLONE_NEWUSER (the child exits at once), and setns() into its own
 * user namespace.  Its stderr's first line says what each call gave:
 *
 *     userns: made N of 3; unshare: WHY; clone: WHY; clone3: WHY; setns: WHY
 *
 * (WHY is "made" or the errno's name), then it exits 2 without a key.
 *
 * What the grader must do: let no call make a namespace (N is 0): the
 * sandbox's seccomp filter.
 *
 * Bounds: three calls and at most two children, which exit at once.
 *
 * Compiles alone (cc ... -lcrypto) and as the kit's sender.c: every name
 * but main() is static, and it uses no RDMA.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>	/* struct clone_args */
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* why: "made" for a call that returned RET >= 0, else errno's name. */
static const char *why(long ret)
{
	if (ret >= 0)
		return "made";
	return errno == EPERM ? "EPERM" : errno == ENOSYS ? "ENOSYS" :
	       errno == EINVAL ? "EINVAL" : errno == ENOSPC ? "ENOSPC" :
	       errno == EUSERS ? "EUSERS" : strerror(errno);
}

/* reap: a child made by clone or clone3 (PID 0: its child side, which
 * exits at once) is waited for. */
static long reap(long pid)
{
	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid((pid_t)pid, NULL, 0);
	return pid;
}

int main(void)
{
	struct clone_args args = {
		.flags = CLONE_NEWUSER,
		.exit_signal = SIGCHLD,
	};
	const char *by_clone, *by_clone3, *by_unshare, *by_setns;
	int made = 0, fd;

	by_clone = why(reap(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0,
				    0, 0, 0)));
	by_clone3 = why(reap(syscall(SYS_clone3, &args, sizeof(args))));
	by_unshare = why(unshare(CLONE_NEWUSER));
	fd = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
	by_setns = fd < 0 ? why(-1) : why(setns(fd, CLONE_NEWUSER));
	made += strcmp(by_clone, "made") == 0;
	made += strcmp(by_clone3, "made") == 0;
	made += strcmp(by_unshare, "made") == 0;
	fprintf(stderr, "userns: made %d of 3; unshare: %s; clone: %s; "
		"clone3: %s; setns: %s\n", made, by_unshare, by_clone,
		by_clone3, by_setns);
	return 2;
}
