/*
 * reach.h - whether the run uid can reach a file the server can: the
 * diagnosis behind "uid 65532 cannot reach <checkout>/build/mcp-exec-zygote".
 *
 * Private to the sandbox module. The runs drop to another uid (65532) with
 * no supplementary groups; a file under a directory that uid may not search
 * (a checkout in root's 0700 home) is out of its reach, although the server
 * (root) sees it. This walks the canonical path and judges each directory's
 * search bit and the file's own bit for that uid and gid, as the kernel's
 * mode check would. ACLs and capabilities are not read: the answer is for
 * messages and for choosing what to hand over as a descriptor, never a
 * permission the sandbox grants.
 */
#ifndef MCPX_REACH_H
#define MCPX_REACH_H

#include <stddef.h>
#include <sys/types.h>

/* What the file itself must allow: execution or reading. */
enum mcpx_reach_need { MCPX_REACH_EXEC, MCPX_REACH_READ };

/* Returns 0 when uid/gid can search every directory above path (path
 * canonical, as realpath gives it); otherwise -EACCES (or -errno when a stat
 * fails) with one sentence in why naming the first obstacle, e.g. "<home>
 * is mode 0700 (owner 0): uid 65532 cannot reach <home>/<checkout>/build/
 * mcp-exec-zygote", where <home> is the first directory that uid may not
 * search. Not async-signal-safe. */
int mcpx_reach_dirs(const char *path, uid_t uid, gid_t gid, char *why, size_t why_len);

/* Returns 0 when the mode of the file fd refers to grants uid/gid need,
 * else -EACCES with a sentence naming path in why (or -errno). What matters
 * for a file handed over as a descriptor, whose directories are not
 * walked again. */
int mcpx_reach_file(int fd, const char *path, uid_t uid, gid_t gid, enum mcpx_reach_need need,
                    char *why, size_t why_len);

#endif
