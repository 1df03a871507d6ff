/*
 * dir_file.h - the directory store's files: their layout, their one header,
 * and the few system-call sequences everything else is built from.
 *
 * Layout beneath the configured directory:
 *   v1/<kind>/<caller hash>/.lock      one lock per caller and kind
 *   v1/<kind>/<caller hash>/.tmp-<hex> a file being written
 *   v1/<kind>/<caller hash>/b/<name>   a blob
 *   v1/<kind>/<caller hash>/r/<name>   a record
 *   v1/<kind>/<caller hash>/l/<name>   a lease
 * Directories are 0700, files 0600, all the server's.
 *
 * Every file is a 64-byte header (magic, type, TTL, version, data length)
 * followed by its data. A file's mtime is the moment it expires: a stat is
 * enough to sweep it, and refreshing a blob's idle TTL changes only its
 * mtime. A file is written whole under a temporary name, synced, then
 * renamed over the old one (and the directory synced): a crash leaves the
 * old file or the new one. Changes that depend on what is there (counts,
 * versions, leases) are made under an OFD lock on .lock, which the kernel
 * (or the NFS server) drops when its holder dies, and which is waited for
 * by polling, up to a bound; plain reads take no lock, since a rename is
 * atomic.
 *
 * These functions run on the store's worker threads, never on the loop;
 * they are synchronous and return 0 or -errno.
 */
#ifndef MCPX_DIR_FILE_H
#define MCPX_DIR_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define MCPX_DIR_HDR 64

enum mcpx_dir_type { MCPX_DIR_BLOB = 1, MCPX_DIR_RECORD = 2, MCPX_DIR_LEASE = 3 };

struct mcpx_dir_hdr {
	uint32_t type;
	uint64_t ttl_ms;
	uint64_t version;
	uint64_t len;
};

/* One object's file as read: header, data (malloc'd, NUL-terminated; NULL
 * when not asked for) and its expiry (the mtime, wall-clock ms). */
struct mcpx_dir_obj {
	struct mcpx_dir_hdr h;
	char *data;
	int64_t expires_ms;
	uint64_t file_bytes;
};

/* The subdirectory letter of each type: 'b', 'r', 'l'. */
char mcpx_dir_sub(enum mcpx_dir_type t);

/* Opens <root>/v1/<kind>/<caller> (O_DIRECTORY), making the missing parts
 * (0700) when create is set. -ENOENT when absent and not created. */
int mcpx_dir_open_caller(int root, const char *kind, const char *caller, bool create, int *out);

/* Opens the type's subdirectory of a caller's directory, making it when
 * create is set. */
int mcpx_dir_open_sub(int cdir, enum mcpx_dir_type t, bool create, int *out);

/* Reads the object name in sub (a type's directory). With want_data the
 * data too, refused (-EIO) when longer than max_len. -ENOENT when absent;
 * an expired object reads as it is (the caller decides). With fd_out the
 * file stays open for the caller (to refresh its mtime). */
int mcpx_dir_read(int sub, const char *name, enum mcpx_dir_type t, bool want_data, uint64_t max_len,
                  struct mcpx_dir_obj *obj, int *fd_out);

/* Writes a new file in cdir under a temporary name: header, data, mtime
 * expires_ms, synced. *tmp gets its name (".tmp-<16 hex>"). */
int mcpx_dir_write_tmp(int cdir, const struct mcpx_dir_hdr *h, const void *data, int64_t expires_ms,
                       char tmp[32]);

/* Renames cdir/tmp to sub/name and syncs sub. */
int mcpx_dir_commit(int cdir, const char *tmp, int sub, const char *name);

/* Sets fd's mtime to expires_ms (and syncs it when sync is set). */
int mcpx_dir_set_expiry(int fd, int64_t expires_ms, bool sync);

/* Takes the caller directory's lock, giving its fd; waits at most wait_ms
 * for another holder (-ETIMEDOUT), so a holder that hangs (a stopped
 * replica) never holds this worker for longer. */
int mcpx_dir_lock(int cdir, uint32_t wait_ms, int *lock_fd);
void mcpx_dir_unlock(int lock_fd);

/* An mtime as wall-clock ms. */
int64_t mcpx_dir_mtime_ms(const struct stat *st);

/* True for a name the store could have made (not ".", "..", ".lock" or a
 * temporary file). */
bool mcpx_dir_name_ok(const char *name);

#endif
