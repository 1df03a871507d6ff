/*
 * dirguard.h - keeps the directories above the runs' workdirs as the server
 * made them: mode, group, extended attributes (ACLs included) and times.
 *
 * Private to the sandbox module (sandbox.c, spawn.c, forkserver.c). A guard holds an
 * open fd of its directory and a snapshot; repair puts back whatever a run
 * changed. Guards are fixed after they are set up, so repair takes them
 * const and may run from any thread that owns the next spawn.
 */
#ifndef MCPX_DIRGUARD_H
#define MCPX_DIRGUARD_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"

/* Directories guarded in one set, and the bytes of extended attributes
 * (names and values) one snapshot can hold. */
#define MCPX_DIRGUARD_MAX 8
#define MCPX_DIRGUARD_XATTR_BYTES 1024

struct mcpx_dirguard {
	int fd; /* O_RDONLY|O_DIRECTORY; the repairs go through it */
	char path[PATH_MAX];
	dev_t dev; /* what path must still name */
	ino_t ino;
	mode_t mode; /* permission bits (07777) at the snapshot */
	gid_t gid;
	bool owner; /* the run uid owns it: mode, group, times, ACLs */
	bool attrs; /* the run may set extended attributes on it */
	size_t xattr_len;
	char xattrs[MCPX_DIRGUARD_XATTR_BYTES]; /* name NUL, 2-byte length, value; ... */
};

/* A set of guards; repair also repairs parent's set first (a zygote's
 * directory below the workdir base). */
struct mcpx_dirguards {
	const struct mcpx_dirguards *parent;
	size_t n;
	struct mcpx_dirguard g[MCPX_DIRGUARD_MAX];
};

/* Empties gs (no guards, no parent); call before the other functions. */
void mcpx_dirguards_init(struct mcpx_dirguards *gs);

/* Guards dir and each of its ancestors up to "/" that a process of run_uid
 * could change the metadata of (it owns it, or it may write it and the
 * directory is not sticky), snapshotting them now. Directories nobody but
 * their owner can touch are left out, so a set may be empty. Returns 0 or
 * -errno (more than MCPX_DIRGUARD_MAX such directories, or attributes
 * beyond the snapshot's room, are errors, with a message). */
int mcpx_dirguards_add_chain(struct mcpx_dirguards *gs, const char *dir, uid_t run_uid,
                             struct mcpx_err *err);

/* Guards the one directory dir (canonical, no symlinks) when a process of
 * run_uid could change its metadata; see mcpx_dirguards_add_chain. */
int mcpx_dirguards_add(struct mcpx_dirguards *gs, const char *dir, uid_t run_uid,
                       struct mcpx_err *err);

/* Puts every guarded directory (parent's first, top-down) back as it was
 * at its snapshot, and sets the times of those the run uid owns to now (the
 * run may have set them to anything). Fails with -ESTALE when a path no
 * longer names the directory guarded, or with -errno when a repair is
 * refused; a run must not start then. */
int mcpx_dirguards_repair(const struct mcpx_dirguards *gs, struct mcpx_err *err);

/* Closes the fds; gs is empty afterwards. */
void mcpx_dirguards_close(struct mcpx_dirguards *gs);

#endif
