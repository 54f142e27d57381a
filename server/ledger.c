/* SPDX-License-Identifier: MIT */
/*
 * ledger.c - the grading ledger (declared in ledger.h): one JSON line per
 * session, written with one write() and an fsync; a strict reader of
 * exactly that form; and the summing up that --ledger-summary prints.
 * Not part of the lab.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "json.h"
#include "ledger.h"
#include "secret.h"

/* A ledger line being built; len counts even what did not fit. */
struct json_line {
	char *buf;
	size_t size;
	size_t len;
};

/* line_put: append the text TEXT, as it is, to L. */
static void line_put(struct json_line *l, const char *text)
{
	if (l->len < l->size)
		snprintf(l->buf + l->len, l->size - l->len, "%s", text);
	l->len += strlen(text);
}

/* line_string: append S to L as a JSON string, or null for NULL or "". */
static void line_string(struct json_line *l, const char *s)
{
	size_t room = l->len < l->size ? l->size - l->len : 0;

	if (s != NULL && s[0] == '\0')
		s = NULL;
	l->len += lab3_json_string(s, room > 0 ? l->buf + l->len : NULL,
				   room);
}

/* lab3_ledger_format: one record, its fields always in the same order,
 * so that lab3_ledger_parse() can stay small and strict. */
int lab3_ledger_format(const struct lab3_ledger_record *rec, char *buf,
		       size_t size)
{
	struct json_line l = { .buf = buf, .size = size };
	int has_hash = rec->has_file_info && rec->sha256 != NULL;
	char time_text[LAB3_TIME_LEN], hex[2 * LAB3_SHA256_LEN + 1];
	char bytes[24];
	struct tm tm;

	if (gmtime_r(&rec->time, &tm) == NULL ||
	    strftime(time_text, sizeof(time_text), "%Y-%m-%dT%H:%M:%SZ",
		     &tm) != LAB3_TIME_LEN - 1)
		return -1;
	if (has_hash)
		lab3_hex(rec->sha256, LAB3_SHA256_LEN, hex);
	snprintf(bytes, sizeof(bytes), "%llu",
		 (unsigned long long)rec->bytes);

	line_put(&l, "{\"time\":");
	line_string(&l, time_text);
	line_put(&l, ",\"peer\":");
	line_string(&l, rec->peer);
	line_put(&l, ",\"id\":");
	line_string(&l, rec->id);
	line_put(&l, ",\"file\":");
	line_string(&l, rec->has_file_info ? rec->file : NULL);
	line_put(&l, ",\"bytes\":");
	line_put(&l, rec->has_file_info ? bytes : "null");
	line_put(&l, ",\"sha256\":");
	line_string(&l, has_hash ? hex : NULL);
	line_put(&l, ",\"verdict\":");
	line_string(&l, rec->verdict == LAB3_VERDICT_GOOD ? "good" :
			rec->verdict == LAB3_VERDICT_BAD ? "bad" : NULL);
	line_put(&l, ",\"key_sent\":");
	line_put(&l, rec->key_sent ? "true" : "false");
	line_put(&l, ",\"error\":");
	line_string(&l, rec->error);
	line_put(&l, ",\"saved_as\":");
	line_string(&l, rec->saved_as);
	for (size_t at = 0; at < rec->dropped_len;
	     at += strlen(rec->dropped + at) + 1) {
		line_put(&l, at == 0 ? ",\"dropped\":[" : ",");
		line_string(&l, rec->dropped + at);
	}
	if (rec->dropped_len > 0)
		line_put(&l, "]");
	line_put(&l, "}");
	if (l.len >= size)
		return -1;
	buf[l.len] = '\0';
	return (int)l.len;
}

/* lab3_ledger_open: see ledger.h.  When the ledger is new, its directory
 * entry is synced too, as for the secret file. */
int lab3_ledger_open(const char *path, char *err, size_t err_len)
{
	struct stat st;
	int fd, ret;

	fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC,
		  0600);
	if (fd >= 0) {
		ret = lab3_fsync_parent(path, err, err_len);
		if (ret != 0) {
			close(fd);
			return ret;
		}
	} else if (errno == EEXIST) {
		fd = open(path, O_RDWR | O_APPEND | O_CLOEXEC);
	}
	return lab3_open_checked(fd, "ledger", path, &st, err, err_len);
}

/* lab3_ledger_append: see ledger.h.  The record goes out in one write()
 * on an O_APPEND descriptor, so it lands whole at the end of the file (or,
 * if the disk fills or the machine dies, cut short but never interleaved
 * with another). */
int lab3_ledger_append(int fd, const struct lab3_ledger_record *rec)
{
	char line[LAB3_LEDGER_LINE_MAX + 2];
	size_t len = 0;
	struct stat st;
	char last = '\n';
	ssize_t n;
	int ret;

	/* After a crash the last line may be a record cut short: end it, so
	 * that it stays one unreadable line and this record a readable one. */
	if (fstat(fd, &st) != 0)
		return -errno;
	if (st.st_size > 0 && pread(fd, &last, 1, st.st_size - 1) < 0)
		return -errno;
	if (last != '\n')
		line[len++] = '\n';

	ret = lab3_ledger_format(rec, line + len, sizeof(line) - len - 1);
	if (ret < 0)
		return -EOVERFLOW;
	len += (size_t)ret;
	line[len++] = '\n';
	n = write(fd, line, len);
	if (n < 0)
		return -errno;
	if ((size_t)n != len)
		return -EIO;
	if (fsync(fd) != 0)
		return -errno;
	return 0;
}

/* A cursor over one ledger line, for lab3_ledger_parse(). */
struct cursor {
	const char *p;
	const char *end;
};

/* take: step over the text LIT at C; -1 if C does not start with it. */
static int take(struct cursor *c, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n) != 0)
		return -1;
	c->p += n;
	return 0;
}

/* take_string: a JSON string as lab3_json_string() writes it, decoded into
 * OUT of SIZE bytes.  Returns 0, 1 for null (OUT is ""), or -1 if it is
 * neither, holds a NUL or does not fit. */
static int take_string(struct cursor *c, char *out, size_t size)
{
	size_t n = 0;
	uint8_t ch;

	out[0] = '\0';
	if (take(c, "null") == 0)
		return 1;
	if (take(c, "\"") != 0)
		return -1;
	while (c->p < c->end && *c->p != '"') {
		ch = (uint8_t)*c->p++;
		if (ch < 0x20 || ch == 0x7f)
			return -1;	/* the writer escapes these */
		if (ch == '\\' && take(c, "ufffd") == 0) {
			/* U+FFFD, in UTF-8, where a byte was not UTF-8 */
			if (n + 3 >= size)
				return -1;
			memcpy(out + n, "\xef\xbf\xbd", 3);
			n += 3;
			continue;
		}
		if (ch == '\\') {
			if (take(c, "\"") == 0 || take(c, "\\") == 0)
				ch = (uint8_t)c->p[-1];
			else if (take(c, "u00") != 0 || c->end - c->p < 2 ||
				 lab3_parse_hex(c->p, &ch, 1) != 0 || ch == 0)
				return -1;
			else
				c->p += 2;
		}
		if (n + 1 >= size)
			return -1;
		out[n++] = (char)ch;
	}
	out[n] = '\0';
	return take(c, "\"");
}

/* take_u64: a decimal number as printf's %llu writes it, or null (1). */
static int take_u64(struct cursor *c, uint64_t *v)
{
	const char *start = c->p;

	*v = 0;
	if (take(c, "null") == 0)
		return 1;
	while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
		unsigned digit = (unsigned)(*c->p++ - '0');

		if (*v > (UINT64_MAX - digit) / 10)
			return -1;
		*v = *v * 10 + digit;
	}
	if (c->p == start || (start[0] == '0' && c->p - start > 1))
		return -1;
	return 0;
}

/* is_utc_time: whether S has the form of the ledger's times,
 * "2026-11-22T20:31:05Z". */
static int is_utc_time(const char *s)
{
	static const char form[] = "dddd-dd-ddTdd:dd:ddZ";

	for (size_t i = 0; i < sizeof(form); i++) {
		if (form[i] == 'd' ? (s[i] < '0' || s[i] > '9') :
		    s[i] != form[i])
			return 0;
	}
	return 1;
}

/* peer_host: the address of PEER ("ADDR:PORT", or "[ADDR]:PORT" for
 * IPv6, as the receiver writes it; or a bare address, as a ledger
 * written by hand may have it) into HOST, or "" if it is not one.  Only
 * text that inet_pton() reads as an address takes part in the summary's
 * flags, so nothing else of a ledger edited by hand reaches the
 * instructor's terminal. */
static void peer_host(const char *peer, char host[LAB3_HOST_LEN])
{
	const char *colon = strrchr(peer, ':'), *start = peer;
	unsigned char addr[16];		/* an in6_addr, or an in_addr */
	int family = AF_INET;
	size_t len;

	host[0] = '\0';
	if (strlen(peer) < LAB3_HOST_LEN &&
	    (inet_pton(AF_INET, peer, addr) == 1 ||
	     inet_pton(AF_INET6, peer, addr) == 1)) {
		memcpy(host, peer, strlen(peer) + 1);
		return;
	}
	if (colon == NULL || colon[1] == '\0' ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1))
		return;
	len = (size_t)(colon - peer);
	if (peer[0] == '[') {
		if (len < 3 || peer[len - 1] != ']')
			return;
		start = peer + 1;
		len -= 2;
		family = AF_INET6;
	}
	if (len == 0 || len >= LAB3_HOST_LEN)
		return;
	memcpy(host, start, len);
	host[len] = '\0';
	if (inet_pton(family, host, addr) != 1)
		host[0] = '\0';
}

/* parse_who: the fields time, peer (its address in E's host) and id. */
static int parse_who(struct cursor *c, struct lab3_ledger_entry *e)
{
	char why[128];
	int id_null;

	if (take(c, "{\"time\":") != 0 ||
	    take_string(c, e->time, sizeof(e->time)) != 0 ||
	    !is_utc_time(e->time))
		return -1;
	if (take(c, ",\"peer\":") != 0 ||
	    take_string(c, e->peer, sizeof(e->peer)) != 0 ||
	    e->peer[0] == '\0')
		return -1;
	peer_host(e->peer, e->host);
	if (take(c, ",\"id\":") != 0)
		return -1;
	id_null = take_string(c, e->id, sizeof(e->id));
	if (id_null < 0 || (id_null == 0 &&
	    lab3_check_id(e->id, strlen(e->id), why, sizeof(why)) != 0))
		return -1;
	return 0;
}

/* parse_file: the fields file, bytes and sha256: the hash and the length
 * come together with FILE_INFO, the name with them or not at all. */
static int parse_file(struct cursor *c)
{
	char name[LAB3_NAME_MAX + 1], hex[2 * LAB3_SHA256_LEN + 1];
	char why[128];
	uint8_t sha256[LAB3_SHA256_LEN];
	int name_null, bytes_null, hash_null;
	uint64_t bytes;

	if (take(c, ",\"file\":") != 0)
		return -1;
	name_null = take_string(c, name, sizeof(name));
	if (name_null < 0 || (name_null == 0 &&
	    lab3_check_name(name, strlen(name), why, sizeof(why)) != 0))
		return -1;
	if (take(c, ",\"bytes\":") != 0)
		return -1;
	bytes_null = take_u64(c, &bytes);
	if (bytes_null < 0 || take(c, ",\"sha256\":") != 0)
		return -1;
	hash_null = take_string(c, hex, sizeof(hex));
	if (hash_null < 0 || (hash_null == 0 &&
	    (strlen(hex) != 2 * LAB3_SHA256_LEN ||
	     lab3_parse_hex(hex, sha256, LAB3_SHA256_LEN) != 0)))
		return -1;
	if (bytes_null != hash_null || (bytes_null && !name_null))
		return -1;
	return 0;
}

/* parse_outcome: the fields verdict, key_sent, error, saved_as (not in
 * older ledgers) and dropped (only when --keep dropped files), and the
 * end of the line.  A key goes only with a
 * good verdict and an ID. */
static int parse_outcome(struct cursor *c, struct lab3_ledger_entry *e)
{
	char verdict[8], error[LAB3_LEDGER_LINE_MAX], dropped[1024];
	int verdict_null;

	if (take(c, ",\"verdict\":") != 0)
		return -1;
	verdict_null = take_string(c, verdict, sizeof(verdict));
	if (verdict_null < 0)
		return -1;
	if (verdict_null)
		e->verdict = -1;
	else if (strcmp(verdict, "good") == 0)
		e->verdict = LAB3_VERDICT_GOOD;
	else if (strcmp(verdict, "bad") == 0)
		e->verdict = LAB3_VERDICT_BAD;
	else
		return -1;
	if (take(c, ",\"key_sent\":true") == 0)
		e->key_sent = 1;
	else if (take(c, ",\"key_sent\":false") == 0)
		e->key_sent = 0;
	else
		return -1;
	if (e->key_sent && (e->verdict != LAB3_VERDICT_GOOD || e->id[0] == 0))
		return -1;
	if (take(c, ",\"error\":") != 0 ||
	    take_string(c, error, sizeof(error)) < 0)
		return -1;
	if (take(c, ",\"saved_as\":") == 0 &&
	    take_string(c, e->saved_as, sizeof(e->saved_as)) < 0)
		return -1;
	if (take(c, ",\"dropped\":[") == 0) {
		do {
			if (take_string(c, dropped, sizeof(dropped)) != 0)
				return -1;
		} while (take(c, ",") == 0);
		if (take(c, "]") != 0)
			return -1;
	}
	if (take(c, "}") != 0 || c->p != c->end)
		return -1;
	return 0;
}

/* lab3_ledger_parse: see ledger.h. */
int lab3_ledger_parse(const char *line, size_t len,
		      struct lab3_ledger_entry *entry)
{
	struct cursor c = { .p = line, .end = line + len };

	memset(entry, 0, sizeof(*entry));
	if (parse_who(&c, entry) != 0 || parse_file(&c) != 0 ||
	    parse_outcome(&c, entry) != 0)
		return -1;
	return 0;
}

/* Whether read_line() found a line, one too long to keep, or the end. */
enum line_kind {
	LINE_END,
	LINE_OK,
	LINE_TOO_LONG,
};

/* read_line: the next line of IN, without its newline, into BUF of SIZE
 * bytes (no NUL added), its length in *LEN.  A last line without a newline
 * is a line too.  A line longer than SIZE is read to its end but not
 * kept. */
static enum line_kind read_line(FILE *in, char *buf, size_t size,
				size_t *len)
{
	int ch, any = 0, too_long = 0;

	*len = 0;
	while ((ch = getc(in)) != EOF && ch != '\n') {
		any = 1;
		if (*len < size)
			buf[(*len)++] = (char)ch;
		else
			too_long = 1;
	}
	if (ch == EOF && !any)
		return LINE_END;
	return too_long ? LINE_TOO_LONG : LINE_OK;
}

/* summary_id: the summary's entry for ID, added in its sorted place if it
 * is new; NULL when memory runs out. */
static struct lab3_ledger_id *summary_id(struct lab3_ledger_summary *sum,
					 const char *id)
{
	size_t lo = 0, hi = sum->nids;
	struct lab3_ledger_id *ids;

	while (lo < hi) {		/* binary search */
		size_t mid = lo + (hi - lo) / 2;
		int cmp = strcmp(sum->ids[mid].id, id);

		if (cmp == 0)
			return &sum->ids[mid];
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (sum->nids == sum->capacity) {
		size_t capacity = sum->capacity ? 2 * sum->capacity : 64;

		ids = realloc(sum->ids, capacity * sizeof(*ids));
		if (ids == NULL)
			return NULL;
		sum->ids = ids;
		sum->capacity = capacity;
	}
	memmove(&sum->ids[lo + 1], &sum->ids[lo],
		(sum->nids - lo) * sizeof(*sum->ids));
	sum->nids++;
	memset(&sum->ids[lo], 0, sizeof(sum->ids[lo]));
	snprintf(sum->ids[lo].id, sizeof(sum->ids[lo].id), "%s", id);
	return &sum->ids[lo];
}

/* compare_keyed: the order of the summary's keyed pairs: by address,
 * then by ID. */
static int compare_keyed(const struct lab3_ledger_keyed *a,
			 const struct lab3_ledger_keyed *b)
{
	int cmp = strcmp(a->host, b->host);

	return cmp != 0 ? cmp : strcmp(a->id, b->id);
}

/* summary_keyed: note in SUM that a key went to ID at the address HOST,
 * once for each pair, in its sorted place; -ENOMEM if memory runs out. */
static int summary_keyed(struct lab3_ledger_summary *sum, const char *host,
			 const char *id)
{
	struct lab3_ledger_keyed pair, *keyed;
	size_t lo = 0, hi = sum->nkeyed;

	snprintf(pair.host, sizeof(pair.host), "%s", host);
	snprintf(pair.id, sizeof(pair.id), "%s", id);
	while (lo < hi) {		/* binary search */
		size_t mid = lo + (hi - lo) / 2;
		int cmp = compare_keyed(&sum->keyed[mid], &pair);

		if (cmp == 0)
			return 0;
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (sum->nkeyed == sum->keyed_capacity) {
		size_t capacity = sum->keyed_capacity ?
				  2 * sum->keyed_capacity : 64;

		keyed = realloc(sum->keyed, capacity * sizeof(*keyed));
		if (keyed == NULL)
			return -ENOMEM;
		sum->keyed = keyed;
		sum->keyed_capacity = capacity;
	}
	memmove(&sum->keyed[lo + 1], &sum->keyed[lo],
		(sum->nkeyed - lo) * sizeof(*sum->keyed));
	sum->keyed[lo] = pair;
	sum->nkeyed++;
	return 0;
}

/* summary_add: count the record ENTRY in SUM; -ENOMEM if memory runs
 * out.  Times of one form compare as strings.  A success at a known
 * address is noted for the flags too (summary_keyed()). */
static int summary_add(struct lab3_ledger_summary *sum,
		       const struct lab3_ledger_entry *entry)
{
	struct lab3_ledger_id *id;

	sum->records++;
	if (entry->id[0] == '\0') {
		sum->without_id++;
		return 0;
	}
	id = summary_id(sum, entry->id);
	if (id == NULL)
		return -ENOMEM;
	id->attempts++;
	if (!(entry->verdict == LAB3_VERDICT_GOOD && entry->key_sent))
		return 0;
	if (id->first_success[0] == '\0' ||
	    strcmp(entry->time, id->first_success) < 0)
		memcpy(id->first_success, entry->time, LAB3_TIME_LEN);
	if (entry->host[0] == '\0')
		return 0;
	return summary_keyed(sum, entry->host, entry->id);
}

/* lab3_ledger_summarize: see ledger.h. */
int lab3_ledger_summarize(FILE *in, struct lab3_ledger_summary *sum)
{
	char line[LAB3_LEDGER_LINE_MAX];
	struct lab3_ledger_entry entry;
	enum line_kind kind;
	size_t len;
	int ret;

	memset(sum, 0, sizeof(*sum));
	errno = 0;
	while ((kind = read_line(in, line, sizeof(line), &len)) != LINE_END) {
		if (kind == LINE_TOO_LONG ||
		    lab3_ledger_parse(line, len, &entry) != 0) {
			sum->unreadable++;
			continue;
		}
		ret = summary_add(sum, &entry);
		if (ret != 0)
			return ret;
	}
	if (ferror(in))
		return errno != 0 ? -errno : -EIO;
	return 0;
}

/* lab3_ledger_summary_free: see ledger.h. */
void lab3_ledger_summary_free(struct lab3_ledger_summary *sum)
{
	free(sum->ids);
	sum->ids = NULL;
	sum->nids = 0;
	sum->capacity = 0;
	free(sum->keyed);
	sum->keyed = NULL;
	sum->nkeyed = 0;
	sum->keyed_capacity = 0;
}

/* compare_keyed_by_id: qsort()'s order for the ID flags: by ID, then by
 * address. */
static int compare_keyed_by_id(const void *pa, const void *pb)
{
	const struct lab3_ledger_keyed *a = pa, *b = pb;
	int cmp = strcmp(a->id, b->id);

	return cmp != 0 ? cmp : strcmp(a->host, b->host);
}

/* write_id: ID on OUT as a JSON string: an ID is printable ASCII, so only
 * '"' and '\' are escaped, and a space in it cannot split the list. */
static void write_id(const char *id, FILE *out)
{
	char text[2 * LAB3_ID_MAX + 3];

	lab3_json_string(id, text, sizeof(text));
	fputs(text, out);
}

/* write_flags_by: the flags of the N pairs at KEYED, sorted so that the
 * pairs of one address (BY_HOST) or of one ID are together: a line for
 * each address or ID that has more than one pair, with the other side of
 * each.  Returns the number of lines written. */
static int write_flags_by(const struct lab3_ledger_keyed *keyed, size_t n,
			  int by_host, FILE *out)
{
	int lines = 0;

	for (size_t i = 0, end; i < n; i = end) {
		const char *key = by_host ? keyed[i].host : keyed[i].id;

		for (end = i + 1; end < n; end++)
			if (strcmp(by_host ? keyed[end].host : keyed[end].id,
				   key) != 0)
				break;
		if (end - i < 2)
			continue;
		if (by_host) {
			fprintf(out, "flag: address %s got keys for %zu IDs:",
				key, end - i);
		} else {
			fputs("flag: ID ", out);
			write_id(key, out);
			fprintf(out, " got keys at %zu addresses:", end - i);
		}
		for (size_t k = i; k < end; k++) {
			fputc(' ', out);
			if (by_host)
				write_id(keyed[k].id, out);
			else
				fputs(keyed[k].host, out);
		}
		fputc('\n', out);
		lines++;
	}
	return lines;
}

/* lab3_ledger_write_flags: see ledger.h.  SUM's pairs are in address
 * order; a copy sorted by ID gives the ID flags. */
int lab3_ledger_write_flags(const struct lab3_ledger_summary *sum,
			    FILE *out)
{
	struct lab3_ledger_keyed *by_id = NULL;
	int lines;

	lines = write_flags_by(sum->keyed, sum->nkeyed, 1, out);
	if (sum->nkeyed > 0) {
		by_id = malloc(sum->nkeyed * sizeof(*by_id));
		if (by_id == NULL)
			return -ENOMEM;
		memcpy(by_id, sum->keyed, sum->nkeyed * sizeof(*by_id));
		qsort(by_id, sum->nkeyed, sizeof(*by_id), compare_keyed_by_id);
	}
	lines += write_flags_by(by_id, sum->nkeyed, 0, out);
	free(by_id);
	return lines;
}
