/* SPDX-License-Identifier: MIT */
/*
 * include.c - a hostile "sender.c": it makes the compiler read the
 * grader's secret and quote it in its error.
 *
 * What it tries: the #include below names /var/tmp/lab3-hostile.secret,
 * a root-only file (mode 0600) holding a random token that tests/long
 * plants.  Its bytes are not C, so a compiler that can read the file
 * fails on them, and gcc and clang both quote the offending line,
 * token and all, in the error: a grader that builds as a user who can
 * read it, and then shows the build's output, hands the token over.
 *
 * This file is expected NOT to build, standalone or as the kit's
 * sender.c: where the file is absent or unreadable the error is
 * "fatal error: /var/tmp/lab3-hostile.secret: No such file or directory"
 * (or "Permission denied"); where it can be read, the error quotes the
 * token.  (Were the file empty, or valid C, the rest would build: a
 * program that prints nothing and exits 1.)
 *
 * What the grader must do: build in its sandbox, where the file cannot
 * be seen or read, keep the build's output bounded, and score a build
 * that fails 0.  Score 0, and the token appears nowhere in the grader's
 * output, log or results.
 */
#include <stdio.h>

#include "/var/tmp/lab3-hostile.secret"

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "include: built, but the secret held no C\n");
	return 1;
}
