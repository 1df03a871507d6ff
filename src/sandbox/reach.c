/*
 * reach.c - whether the run uid can reach a file (reach.h).
 *
 * A plain walk from "/" down to the file: for each component, the mode
 * bits that apply to uid/gid (owner, else group, else other), as
 * generic_permission() picks them. No privilege is used or changed.
 */
#include "reach.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* The bit of mode that applies to uid/gid for one right (S_IXOTH or
 * S_IROTH scaled to the owner's or the group's place). */
static bool allowed(const struct stat *st, uid_t uid, gid_t gid, mode_t other_bit)
{
	if (st->st_uid == uid)
		return st->st_mode & (other_bit << 6);
	if (st->st_gid == gid)
		return st->st_mode & (other_bit << 3);
	return st->st_mode & other_bit;
}

int mcpx_reach_dirs(const char *path, uid_t uid, gid_t gid, char *why, size_t why_len)
{
	char cur[PATH_MAX];
	size_t n = strlen(path);
	struct stat st;

	if (why_len)
		why[0] = '\0';
	if (n == 0 || n >= sizeof(cur) || path[0] != '/')
		return -EINVAL;
	/* "/" and every directory below it down to the file's parent need
	 * search (x); i is the length of the prefix that names one. */
	for (size_t i = 0; i < n; i++) {
		if (path[i] != '/')
			continue;
		memcpy(cur, path, i ? i : 1);
		cur[i ? i : 1] = '\0';
		if (stat(cur, &st) < 0)
			return -errno;
		if (!allowed(&st, uid, gid, S_IXOTH)) {
			snprintf(why, why_len, "%s is mode %04o (owner %u): uid %u cannot reach %s",
			         cur, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid,
			         (unsigned)uid, path);
			return -EACCES;
		}
	}
	return 0;
}

int mcpx_reach_file(int fd, const char *path, uid_t uid, gid_t gid, enum mcpx_reach_need need,
                    char *why, size_t why_len)
{
	struct stat st;

	if (why_len)
		why[0] = '\0';
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!allowed(&st, uid, gid, need == MCPX_REACH_EXEC ? S_IXOTH : S_IROTH)) {
		snprintf(why, why_len, "%s is mode %04o (owner %u): uid %u cannot %s it", path,
		         (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid, (unsigned)uid,
		         need == MCPX_REACH_EXEC ? "execute" : "read");
		return -EACCES;
	}
	return 0;
}
