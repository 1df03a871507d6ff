/*
 * workdir.h - the per-run working directory: create, fill, remove.
 *
 * Private to the sandbox module, the run's budget readings (run_usage.c) and
 * the removal of a finished run's files (run_cleanup.c).
 * Removal never follows a symlink: the tree was written by untrusted code.
 */
#ifndef MCPX_WORKDIR_H
#define MCPX_WORKDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

/* Creates <base>/run-XXXXXX (six random letters or digits) with mode 0700
 * and writes its path to out. When chown_to is true (the server runs as
 * root and the run drops to uid/gid), the directory is handed to uid:gid so
 * the run can write in it. *parent_fd becomes an O_PATH fd of base (the
 * caller's to close), for mcpx_workdir_remove_in. */
int mcpx_workdir_create(const char *base, bool chown_to, uid_t uid, gid_t gid, char *out,
                        size_t outlen, int *parent_fd);

/* Writes len bytes to <dir>/<name> (created exclusively, mode 0600, owned by
 * uid:gid when chown_to). */
int mcpx_workdir_write_file(const char *dir, const char *name, const void *data, size_t len,
                            bool chown_to, uid_t uid, gid_t gid);

/* Opens name (relative to dirfd) for reading as a directory, never through
 * a symlink (-ELOOP/-ENOTDIR for anything else); a directory the run made
 * unreadable is given back its owner bits first when the server owns it
 * (the pod). Returns the fd or -errno. */
int mcpx_workdir_open_dir(int dirfd, const char *name);

/* Removes path and everything beneath it without following symlinks. A
 * missing path is success. */
int mcpx_workdir_remove(const char *path);

/* Removes the workdir path relative to parent_fd (from mcpx_workdir_create;
 * -1: by path), giving the parent back its owner's bits first when the server
 * owns it, so a run that took them cannot make its workdir outlive it. */
int mcpx_workdir_remove_in(int parent_fd, const char *path);

/* Opens the workdir path relative to parent_fd (-1: by path) as an O_PATH
 * directory fd, never following a symlink, giving the parent back its
 * owner's bits first as mcpx_workdir_remove_in does. Returns the fd (the
 * caller's to close) or -errno. */
int mcpx_workdir_open_in(int parent_fd, const char *path);

/* Removes everything in path but path itself (never following symlinks). */
int mcpx_workdir_empty(const char *path);

/* Removes every entry directly in dir (recursively for directories) that is
 * owned by uid and group gid and whose ctime is at or after since. ctime,
 * unlike mtime, cannot be set back by the owner, so a run cannot hide a file
 * from this; nor can it give a file another group. */
int mcpx_workdir_wipe_owned_since(const char *dir, uid_t uid, gid_t gid,
                                  const struct timespec *since);

#endif
