/*
 * fs_view.h - a run's private filesystem view, the file confinement where
 * Landlock is absent (gVisor): enter it in the forked child, probe for it
 * once at start-up.
 *
 * Private to the sandbox module. mcpx_fs_view_enter runs in the child
 * between no_new_privs and seccomp and is async-signal-safe;
 * mcpx_fs_view_probe runs in the server at start-up (fs_view_probe.c).
 */
#ifndef MCPX_FS_VIEW_H
#define MCPX_FS_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The steps of the view, in order; mcpx_fs_view_enter names the one that
 * failed. The probe's own checks follow them. */
enum mcpx_fs_view_step {
	MCPX_FSV_UNSHARE = 1,   /* a user and a mount namespace of its own */
	MCPX_FSV_PRIVATE,       /* no mount propagates back to the pod */
	MCPX_FSV_ROOT,          /* the new root: a tmpfs over the workdir's path */
	MCPX_FSV_READ_ROOTS,    /* the runtime's directories, read-only */
	MCPX_FSV_DEVICES,       /* /dev/null, /dev/shm and a few read-only devices */
	MCPX_FSV_WORKDIR,       /* the workdir, read-write at its own path */
	MCPX_FSV_PIVOT,         /* pivot_root into the new root, the old one detached */
	MCPX_FSV_SEAL,          /* the new root read-only */
	MCPX_FSV_ENTER,         /* back into the workdir, the same one as before */
	MCPX_FSV_CAPS,          /* the namespace's capabilities dropped, checked */
	MCPX_FSV_PROBE_SETUP,   /* the probe's child could not become a run */
	MCPX_FSV_PROBE_VACUOUS, /* the probe's token was unreadable before the view */
	MCPX_FSV_PROBE_TOKEN,   /* the token was still readable inside the view */
	MCPX_FSV_PROBE_WRITE,   /* the workdir was not writable inside the view */
	MCPX_FSV_PROBE_ESCAPE,  /* the root could be written or a mount undone */
};

/* Gives the calling process a filesystem of its own: a new root holding
 * the directories Landlock's ruleset lets a run read (landlock.c's plan:
 * the runtime's roots and runtime_root, may be NULL), read-only; /dev with
 * null, zero, full, random, urandom and shm; and workdir, read-write at its
 * own path. Nothing else of the filesystem is reachable from it, and no
 * capability is left to change it. workdir is absolute and must be the
 * current directory; the process must have no_new_privs. Async-signal-safe
 * (stack memory and syscalls only). Returns 0 or -errno, with the failed
 * step in *step. */
int mcpx_fs_view_enter(const char *workdir, const char *runtime_root, int *step);

/* Name of a step, for messages ("pivot_root", ...). */
const char *mcpx_fs_view_step_name(int step);

/* Whether this kernel lets a run enter the view, seen acting: in a
 * throwaway child that becomes a run (uid when drop_uid) in a fresh workdir
 * of base, a token-like file beside that workdir must be readable before
 * the view and gone inside it, the workdir writable, the root read-only
 * and nothing unmountable. 0, or -errno with the failed step and error in
 * why ("mount of the root: Operation not permitted"). Blocks for the
 * child's few milliseconds: start-up only. */
int mcpx_fs_view_probe(const char *base, bool drop_uid, uid_t uid, gid_t gid, char *why,
                       size_t why_len);

#endif
