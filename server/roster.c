/* SPDX-License-Identifier: MIT */
/*
 * roster.c - the class's roster (receiver -r); see roster.h.
 */
#include "roster.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol.h"

/* compare_ids: qsort() and bsearch() order of two char * elements. */
static int compare_ids(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* trim_line: the ID on LINE, in place: the comment cut off, the spaces
 * and tabs around it, and the line's end, gone.  Returns its start. */
static char *trim_line(char *line)
{
	char *end, *hash = strchr(line, '#');

	if (hash != NULL)
		*hash = '\0';
	while (*line == ' ' || *line == '\t')
		line++;
	end = line + strlen(line);
	while (end > line && strchr(" \t\r\n", end[-1]) != NULL)
		end--;
	*end = '\0';
	return line;
}

/* add_id: append a copy of ID to ROSTER; -ENOMEM if there is no room. */
static int add_id(struct lab3_roster *roster, size_t *cap, const char *id)
{
	if (roster->n == *cap) {
		size_t grown = *cap ? 2 * *cap : 64;
		char **ids = realloc(roster->ids, grown * sizeof(*ids));

		if (ids == NULL)
			return -ENOMEM;
		roster->ids = ids;
		*cap = grown;
	}
	roster->ids[roster->n] = strdup(id);
	if (roster->ids[roster->n] == NULL)
		return -ENOMEM;
	roster->n++;
	return 0;
}

/* sort_unique: sort ROSTER's IDs and drop the repeats. */
static void sort_unique(struct lab3_roster *roster)
{
	size_t kept = 0;

	if (roster->n == 0)
		return;
	qsort(roster->ids, roster->n, sizeof(*roster->ids), compare_ids);
	for (size_t i = 1; i < roster->n; i++) {
		if (strcmp(roster->ids[i], roster->ids[kept]) == 0)
			free(roster->ids[i]);
		else
			roster->ids[++kept] = roster->ids[i];
	}
	roster->n = kept + 1;
}

/* check_row: 0 if ID holds no comma, semicolon or tab, else -1 with WHY:
 * such a line is most likely a spreadsheet's row (an ID and a name), not
 * one ID.  A sender may send such an ID; a roster may not list one. */
static int check_row(const char *id, char *why, size_t why_len)
{
	size_t at = strcspn(id, ",;\t");

	if (id[at] == '\0')
		return 0;
	snprintf(why, why_len, "'%.40s' holds a %s: one ID per line, not a "
		 "spreadsheet's row", id, id[at] == '\t' ? "tab" :
		 id[at] == ',' ? "comma" : "semicolon");
	return -1;
}

/* read_ids: every line of IN into ROSTER; -EINVAL with ERR at the first
 * line that is not an ID, -ENOMEM when memory runs out, or the -errno of
 * a read that failed. */
static int read_ids(FILE *in, const char *path, struct lab3_roster *roster,
		    char *err, size_t err_len)
{
	char *line = NULL, *id, why[128];
	size_t line_cap = 0, cap = 0;
	unsigned long number = 0;
	ssize_t len;
	int ret = 0, nul;

	while (ret == 0 && (len = getline(&line, &line_cap, in)) != -1) {
		number++;
		id = line;
		/* A byte-order mark, as spreadsheets write one, is no ID's. */
		if (number == 1 && strncmp(id, "\xef\xbb\xbf", 3) == 0)
			id += 3;
		nul = memchr(line, '\0', (size_t)len) != NULL;
		if (nul)
			snprintf(why, sizeof(why), "a NUL byte");
		else if (*(id = trim_line(id)) == '\0')
			continue;
		if (nul || lab3_check_id(id, strlen(id), why, sizeof(why)) != 0 ||
		    check_row(id, why, sizeof(why)) != 0) {
			snprintf(err, err_len, "roster %.120s, line %lu: %s",
				 path, number, why);
			ret = -EINVAL;
		} else if (add_id(roster, &cap, id) != 0) {
			snprintf(err, err_len, "roster %.120s: out of memory",
				 path);
			ret = -ENOMEM;
		}
	}
	if (ret == 0 && ferror(in)) {
		ret = errno ? -errno : -EIO;
		snprintf(err, err_len, "roster %.120s: %s", path,
			 strerror(-ret));
	}
	free(line);
	return ret;
}

/* lab3_roster_load: see roster.h. */
int lab3_roster_load(const char *path, struct lab3_roster *roster,
		     char *err, size_t err_len)
{
	FILE *in = fopen(path, "re");
	int ret;

	*roster = (struct lab3_roster){ 0 };
	if (in == NULL) {
		ret = -errno;
		snprintf(err, err_len, "roster %.120s: %s", path,
			 strerror(errno));
		return ret;
	}
	ret = read_ids(in, path, roster, err, err_len);
	fclose(in);
	if (ret == 0 && roster->n == 0) {
		snprintf(err, err_len, "roster %.120s holds no ID", path);
		ret = -EINVAL;
	}
	if (ret != 0) {
		lab3_roster_free(roster);
		return ret;
	}
	sort_unique(roster);
	return 0;
}

/* lab3_roster_has: see roster.h. */
int lab3_roster_has(const struct lab3_roster *roster, const char *id)
{
	return roster->n > 0 &&
	       bsearch(&id, roster->ids, roster->n, sizeof(*roster->ids),
		       compare_ids) != NULL;
}

/* lab3_roster_free: see roster.h. */
void lab3_roster_free(struct lab3_roster *roster)
{
	for (size_t i = 0; i < roster->n; i++)
		free(roster->ids[i]);
	free(roster->ids);
	*roster = (struct lab3_roster){ 0 };
}
