/* SPDX-License-Identifier: MIT */
/*
 * roster.h - the class's roster (receiver -r): the student IDs that may
 * receive a key.  Not part of the lab: the instructor's guard against an
 * ID typed wrong, which would otherwise get a key that nobody's is.
 *
 * A roster file holds one ID per line.  A '#' starts a comment, to the end
 * of its line; spaces and tabs around an ID are not part of it; blank
 * lines are skipped.  Every ID must be one a sender may send (1 to
 * LAB3_ID_MAX printable characters) with no comma, semicolon or tab in
 * it: a line with one is a spreadsheet's row ("alice,Alice Smith"), not
 * an ID, and is refused.  An ID listed twice counts once.
 */
#ifndef LAB3_ROSTER_H
#define LAB3_ROSTER_H

#include <stddef.h>

struct lab3_roster {
	char **ids;			/* sorted, each once */
	size_t n;
};

/* Read the roster at PATH into *ROSTER (empty it first with
 * lab3_roster_free() if it held one).  Returns 0, or a negative errno
 * with ERR saying which line was wrong (-EINVAL), or why the file cannot
 * be read; *ROSTER is then left empty. */
int lab3_roster_load(const char *path, struct lab3_roster *roster,
		     char *err, size_t err_len);

/* 1 if ID is on ROSTER, else 0. */
int lab3_roster_has(const struct lab3_roster *roster, const char *id);

/* Free what *ROSTER holds, leaving it empty. */
void lab3_roster_free(struct lab3_roster *roster);

#endif /* LAB3_ROSTER_H */
