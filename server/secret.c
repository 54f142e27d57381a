/* SPDX-License-Identifier: MIT */
/*
 * secret.c - the receiver's secret file and the keys it derives (step 6:
 * KEY = HMAC-SHA256(secret, ID)), with the two file helpers that the
 * secret file and the ledger share.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "common.h"
#include "secret.h"

/* lab3_hmac_sha256: see secret.h. */
int lab3_hmac_sha256(const uint8_t *key, size_t key_len,
		     const void *data, size_t len, uint8_t out[LAB3_KEY_LEN])
{
	unsigned int out_len = 0;

	if (HMAC(EVP_sha256(), key, (int)key_len, data, len, out,
		 &out_len) == NULL || out_len != LAB3_KEY_LEN)
		return -EIO;
	return 0;
}

/* lab3_parse_hex: see secret.h. */
int lab3_parse_hex(const char *in, uint8_t *out, size_t len)
{
	for (size_t i = 0; i < 2 * len; i++) {
		int c = in[i], v;

		if (c >= '0' && c <= '9')
			v = c - '0';
		else if (c >= 'a' && c <= 'f')
			v = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v = c - 'A' + 10;
		else
			return -1;
		if (i % 2 == 0)
			out[i / 2] = (uint8_t)(v << 4);
		else
			out[i / 2] |= (uint8_t)v;
	}
	return 0;
}

/* lab3_fsync_parent: see secret.h. */
int lab3_fsync_parent(const char *path, char *err, size_t err_len)
{
	char dir[PATH_MAX];
	char *slash;
	int fd, ret = 0;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) != 0) {
		ret = -errno;
		snprintf(err, err_len, "cannot sync directory %.200s: %s", dir,
			 strerror(errno));
	}
	if (fd >= 0)
		close(fd);
	return ret;
}

/* create_secret: make a new secret file at PATH: LAB3_SECRET_LEN random
 * bytes as hex and a newline, mode 0600.  It is written under a temporary
 * name and linked into place, so no reader ever sees it half written;
 * -EEXIST means another receiver created PATH first. */
static int create_secret(const char *path, uint8_t *secret, char *err,
			 size_t err_len)
{
	char hex[2 * LAB3_SECRET_LEN + 2], tmp[PATH_MAX];
	int fd, ret = 0;

	if (RAND_bytes(secret, LAB3_SECRET_LEN) != 1) {
		snprintf(err, err_len, "cannot get random bytes for a secret");
		return -EIO;
	}
	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp)) {
		snprintf(err, err_len, "secret file name too long");
		return -ENAMETOOLONG;
	}
	fd = mkstemp(tmp);	/* mode 0600 */
	if (fd < 0) {
		ret = -errno;
		snprintf(err, err_len, "cannot create secret file %s: %s",
			 path, strerror(errno));
		return ret;
	}
	lab3_hex(secret, LAB3_SECRET_LEN, hex);
	strcat(hex, "\n");
	errno = EIO;	/* what a short write without errno means */
	if (write(fd, hex, strlen(hex)) != (ssize_t)strlen(hex) ||
	    fsync(fd) != 0 || link(tmp, path) != 0) {
		ret = -errno;
		if (ret != -EEXIST)
			snprintf(err, err_len,
				 "cannot write secret file %s: %s",
				 path, strerror(errno));
	}
	close(fd);
	unlink(tmp);
	if (ret == 0)
		ret = lab3_fsync_parent(path, err, err_len);
	return ret;
}

/* lab3_open_checked: see secret.h. */
int lab3_open_checked(int fd, const char *what, const char *path,
			struct stat *st, char *err, size_t err_len)
{
	int ret;

	if (fd < 0) {
		ret = -errno;
		snprintf(err, err_len, "cannot open %s %s: %s", what, path,
			 strerror(errno));
		return ret;
	}
	if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
		close(fd);
		snprintf(err, err_len, "%s %s is not a regular file", what,
			 path);
		return -EINVAL;
	}
	return fd;
}

/* lab3_load_secret: create the secret on first use; then insist on a
 * regular file only its owner, this process's user, can access, holding
 * exactly the hex digits and a newline. */
int lab3_load_secret(const char *path, uint8_t secret[LAB3_SECRET_LEN],
		     char *err, size_t err_len)
{
	char hex[2 * LAB3_SECRET_LEN + 2];
	struct stat st;
	ssize_t n;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT) {
		ret = create_secret(path, secret, err, err_len);
		if (ret != -EEXIST)
			return ret;
		/* Another receiver made it just now: use theirs. */
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	}
	fd = lab3_open_checked(fd, "secret file", path, &st, err, err_len);
	if (fd < 0)
		return fd;
	if (st.st_mode & 0077) {
		close(fd);
		snprintf(err, err_len, "secret file %s is readable by others "
			 "(mode %03o); chmod 600 it", path,
			 (unsigned)(st.st_mode & 0777));
		return -EPERM;
	}
	/* Its owner may read it, and change its mode: that must be us. */
	if (st.st_uid != geteuid()) {
		close(fd);
		snprintf(err, err_len, "secret file %s belongs to uid %u, not "
			 "to this receiver's user (uid %u); chown it", path,
			 (unsigned)st.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	n = read(fd, hex, sizeof(hex));
	close(fd);
	if (n != (ssize_t)sizeof(hex) - 1 || hex[sizeof(hex) - 2] != '\n' ||
	    lab3_parse_hex(hex, secret, LAB3_SECRET_LEN) != 0) {
		snprintf(err, err_len, "secret file %s is not %d hex digits "
			 "and a newline", path, 2 * LAB3_SECRET_LEN);
		return -EINVAL;
	}
	return 0;
}

/* lab3_key_for_id: see secret.h. */
int lab3_key_for_id(const uint8_t secret[LAB3_SECRET_LEN], const char *id,
		    uint8_t key[LAB3_KEY_LEN])
{
	return lab3_hmac_sha256(secret, LAB3_SECRET_LEN, id, strlen(id), key);
}
