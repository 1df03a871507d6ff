/*
 * workspace_files.h - a workspace in a run's workdir: restored into it
 * before the code starts, collected from it after the run's whole process
 * tree is gone.
 *
 * Restore writes a parsed archive (workspace_pack.h, every path and size
 * already checked) the way input files are written (runfiles.h: one
 * component at a time, O_NOFOLLOW, created exclusively, handed to the run's
 * uid), and for a Python run .mcpx/vars.in: one header line the runner
 * reads ("mcpx-vars 1 <byte limit>") and the previous call's variables as
 * they were saved. The call's own input files replace the workspace's
 * files of the same path.
 *
 * Collect walks the workdir the way out/ is read (runfiles_output.c): every entry
 * opened O_PATH|O_NOFOLLOW relative to its parent and judged on its own
 * inode; only regular files with one link owned by the run's uid are read,
 * each bounded by its size and what is left of the cap; directories owned
 * by the run's uid are entered down to MCPX_RUNFILES_DEPTH_MAX levels. Kept:
 * those files with a path input files could have (runfiles.h), except the
 * server's names (out/, .mcpx/, main.py, main.sh, main.mjs). Not kept, and
 * counted as skipped: links, special files, other owners' files, unsafe
 * names, deeper levels. Too many files or bytes fail the whole collection
 * (nothing is kept partly). The variables are the run's own when the caller
 * says the run ended by itself and the runner wrote .mcpx/vars.out (with
 * .mcpx/names), else the previous call's, handed in.
 *
 * This module does not talk to a store or decide when to run (the executor
 * and the exec tool do).
 */
#ifndef MCPX_WORKSPACE_FILES_H
#define MCPX_WORKSPACE_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "buf.h"
#include "err.h"
#include "runfiles.h"
#include "workspace_pack.h"

/* Entries examined per collection, whatever they are. */
#define MCPX_WSFILES_VISIT_MAX 16384u

/* The call's input files replace the workspace's files of the same path
 * (marked dropped); a file of one that is a directory of the other's is
 * refused (-EINVAL, err: "input file a/b conflicts with the workspace's
 * file a"). */
int mcpx_wsfiles_merge_inputs(struct mcpx_wspack *ws, const struct mcpx_runfiles_in *in,
                              struct mcpx_err *err);

/* The bytes a restore writes (files not dropped, and the variables when
 * python): what the run's disk budget is checked against first. */
size_t mcpx_wsfiles_restore_bytes(const struct mcpx_wspack *ws, bool python);

/* Writes the workspace into workdir (before the input files; out/ is
 * theirs to make). python: also .mcpx/vars.in with vars_limit, the byte
 * limit the runner saves within. Returns 0 or -errno with err set. */
int mcpx_wsfiles_restore(const struct mcpx_wspack *ws, const char *workdir, bool python,
                         size_t vars_limit, const struct mcpx_runfiles_owner *owner,
                         struct mcpx_err *err);

/* The previous version's variables and names, kept when the run's own are
 * not taken; may be empty. Not owned. */
struct mcpx_wsfiles_prev {
	const char *vars;
	size_t vars_len;
	const char *names;
	size_t names_len;
};

struct mcpx_wsfiles_saved {
	struct mcpx_buf archive; /* the new version, for the store */
	unsigned files;
	size_t file_bytes;
	size_t vars_bytes;
	unsigned skipped; /* entries not kept: links, special files, ... */
	bool vars_new;    /* the run's own variables (else the previous ones) */
	/* The names' list in the archive (points into archive.data). */
	const char *names;
	size_t names_len;
};

/* Collects the workdir open at workdir_fd (not closed) into out->archive.
 * take_vars: the run ended by itself, so the runner's .mcpx/vars.out (when
 * there) is the new variables. Returns 0; -E2BIG (over the caps: err says
 * which), or another -errno (the server could not read) with err set; out
 * is then empty. Free with mcpx_wsfiles_saved_free. */
int mcpx_wsfiles_collect(int workdir_fd, uid_t owner, const struct mcpx_wspack_caps *caps,
                         bool take_vars, const struct mcpx_wsfiles_prev *prev,
                         struct mcpx_wsfiles_saved *out, struct mcpx_err *err);
void mcpx_wsfiles_saved_free(struct mcpx_wsfiles_saved *s);

#endif
