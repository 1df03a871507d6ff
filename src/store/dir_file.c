/*
 * dir_file.c - the directory store's files (dir_file.h): header, reads,
 * temporary writes, commits by rename, expiry as mtime, the caller lock.
 *
 * Every open is relative to a directory fd and refuses to follow a
 * symlink: only the server writes here (runs cannot reach the directory),
 * but a link planted by mistake or by another program must not send a
 * write elsewhere.
 */
#include "dir_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "crypto.h"

static const char magic[8] = {'M', 'C', 'P', 'X', 'S', 'T', '1', '\n'};

#define OPEN_DIR (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

char mcpx_dir_sub(enum mcpx_dir_type t)
{
	return t == MCPX_DIR_BLOB ? 'b' : t == MCPX_DIR_RECORD ? 'r' : 'l';
}

static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static void hdr_encode(const struct mcpx_dir_hdr *h, unsigned char out[MCPX_DIR_HDR])
{
	memset(out, 0, MCPX_DIR_HDR);
	memcpy(out, magic, sizeof(magic));
	put64(out + 8, h->type);
	put64(out + 16, h->ttl_ms);
	put64(out + 24, h->version);
	put64(out + 32, h->len);
}

static int hdr_decode(const unsigned char in[MCPX_DIR_HDR], struct mcpx_dir_hdr *h)
{
	if (memcmp(in, magic, sizeof(magic)) != 0)
		return -EIO;
	h->type = (uint32_t)get64(in + 8);
	h->ttl_ms = get64(in + 16);
	h->version = get64(in + 24);
	h->len = get64(in + 32);
	return 0;
}

/* Opens name beneath dir as a directory, making it first when asked. */
static int open_or_make(int dir, const char *name, bool create, int *out)
{
	int fd = openat(dir, name, OPEN_DIR);

	if (fd < 0 && errno == ENOENT && create) {
		if (mkdirat(dir, name, 0700) < 0 && errno != EEXIST)
			return -errno;
		/* The new entry survives a crash before the first commit
		 * syncs anything beneath it. */
		(void)fsync(dir);
		fd = openat(dir, name, OPEN_DIR);
	}
	if (fd < 0)
		return -errno;
	*out = fd;
	return 0;
}

int mcpx_dir_open_caller(int root, const char *kind, const char *caller, bool create, int *out)
{
	const char *parts[] = {"v1", kind, caller};
	int fd = root, next = -1, rc;

	for (size_t i = 0; i < 3; i++) {
		rc = open_or_make(fd, parts[i], create, &next);
		if (fd != root)
			close(fd);
		if (rc < 0)
			return rc;
		fd = next;
	}
	*out = fd;
	return 0;
}

int mcpx_dir_open_sub(int cdir, enum mcpx_dir_type t, bool create, int *out)
{
	char name[2] = {mcpx_dir_sub(t), '\0'};

	return open_or_make(cdir, name, create, out);
}

int64_t mcpx_dir_mtime_ms(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000;
}

static int read_all(int fd, void *buf, size_t len, off_t off)
{
	char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO; /* shorter than its header says */
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int mcpx_dir_read(int sub, const char *name, enum mcpx_dir_type t, bool want_data, uint64_t max_len,
                  struct mcpx_dir_obj *obj, int *fd_out)
{
	unsigned char hb[MCPX_DIR_HDR];
	struct stat st;
	int fd, rc;

	memset(obj, 0, sizeof(*obj));
	fd = openat(sub, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -EIO : -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out;
	}
	rc = -EIO;
	if (!S_ISREG(st.st_mode) || st.st_size < MCPX_DIR_HDR)
		goto out;
	if ((rc = read_all(fd, hb, sizeof(hb), 0)) < 0 || (rc = hdr_decode(hb, &obj->h)) < 0)
		goto out;
	rc = -EIO;
	if (obj->h.type != (uint32_t)t || obj->h.len != (uint64_t)st.st_size - MCPX_DIR_HDR)
		goto out;
	obj->expires_ms = mcpx_dir_mtime_ms(&st);
	obj->file_bytes = (uint64_t)st.st_size;
	if (want_data) {
		if (obj->h.len > max_len)
			goto out;
		rc = -ENOMEM;
		if (!(obj->data = malloc((size_t)obj->h.len + 1)))
			goto out;
		if ((rc = read_all(fd, obj->data, (size_t)obj->h.len, MCPX_DIR_HDR)) < 0) {
			free(obj->data);
			obj->data = NULL;
			goto out;
		}
		obj->data[obj->h.len] = '\0';
	}
	rc = 0;
	if (fd_out) {
		*fd_out = fd;
		return 0;
	}
out:
	close(fd);
	return rc;
}

int mcpx_dir_set_expiry(int fd, int64_t expires_ms, bool sync)
{
	struct timespec ts[2];

	ts[0].tv_sec = 0;
	ts[0].tv_nsec = UTIME_OMIT;
	ts[1].tv_sec = (time_t)(expires_ms / 1000);
	ts[1].tv_nsec = (long)(expires_ms % 1000) * 1000000;
	if (futimens(fd, ts) < 0)
		return -errno;
	if (sync && fsync(fd) < 0)
		return -errno;
	return 0;
}

int mcpx_dir_write_tmp(int cdir, const struct mcpx_dir_hdr *h, const void *data, int64_t expires_ms,
                       char tmp[32])
{
	unsigned char hb[MCPX_DIR_HDR], rnd[8];
	int fd, rc;

	if (mcpx_random(rnd, sizeof(rnd)) < 0)
		return -EIO;
	snprintf(tmp, 32, ".tmp-%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3],
	         rnd[4], rnd[5], rnd[6], rnd[7]);
	fd = openat(cdir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	hdr_encode(h, hb);
	if ((rc = write_all(fd, hb, sizeof(hb))) < 0 || (rc = write_all(fd, data, h->len)) < 0 ||
	    (rc = mcpx_dir_set_expiry(fd, expires_ms, true)) < 0) {
		close(fd);
		unlinkat(cdir, tmp, 0);
		return rc;
	}
	if (close(fd) < 0) {
		/* NFS reports a failed write-back at close. */
		rc = -errno;
		unlinkat(cdir, tmp, 0);
		return rc;
	}
	return 0;
}

int mcpx_dir_commit(int cdir, const char *tmp, int sub, const char *name)
{
	if (renameat(cdir, tmp, sub, name) < 0)
		return -errno;
	/* The rename itself is durable once the directory is synced. */
	if (fsync(sub) < 0)
		return -errno;
	return 0;
}

int mcpx_dir_lock(int cdir, uint32_t wait_ms, int *lock_fd)
{
	struct timespec pause = {0, 1000000}, start, now;
	struct flock fl;
	int fd = openat(cdir, ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0)
		return -errno;
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	clock_gettime(CLOCK_MONOTONIC, &start);
	/* An open-file-description lock: threads of one process exclude each
	 * other too, and it goes away with its holder. Not F_OFD_SETLKW: a
	 * holder that hangs would hold this thread for as long. */
	while (fcntl(fd, F_OFD_SETLK, &fl) < 0) {
		int64_t waited;

		if (errno != EAGAIN && errno != EACCES && errno != EINTR) {
			int rc = -errno;

			close(fd);
			return rc;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		waited = (int64_t)(now.tv_sec - start.tv_sec) * 1000 +
		         (now.tv_nsec - start.tv_nsec) / 1000000;
		if (waited >= (int64_t)wait_ms) {
			close(fd);
			return -ETIMEDOUT;
		}
		nanosleep(&pause, NULL);
		if (pause.tv_nsec < 16000000)
			pause.tv_nsec *= 2;
	}
	*lock_fd = fd;
	return 0;
}

void mcpx_dir_unlock(int lock_fd)
{
	/* Closing the last fd of the description drops the lock. */
	if (lock_fd >= 0)
		close(lock_fd);
}

bool mcpx_dir_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 128 || name[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '-'))
			return false;
	}
	return true;
}
