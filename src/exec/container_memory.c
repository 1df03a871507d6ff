/*
 * container_memory.c - reads the container's memory against its limit
 * (container_memory.h).
 *
 * What it does: finds the memory cgroup that carries the container's limit
 * (cgroup v2 or v1, inside a cgroup namespace or seen from the host's
 * hierarchy) and reads its usage, limit and inactive page cache. Every file
 * is opened once, read-only, and read again with pread: a reading is three
 * small reads at most, cheap enough for every sample of the run budget.
 *
 * What it does not do: decide to end a run (run_budget.c does, on the
 * reading's `near`), or write anything to the cgroup.
 */
#include "container_memory.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* v1 reports "no limit" as LLONG_MAX rounded down to a page; anything this
 * large is no limit either. */
#define V1_UNLIMITED (1ull << 62)

static int read_small(int fd, char *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len - 1, 0);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

/* A limit file's value: bytes, or 0 for none ("max", or v1's huge value). */
static int read_limit(int fd, uint64_t *out)
{
	char buf[64], *end;
	unsigned long long v;
	int rc = read_small(fd, buf, sizeof(buf));

	if (rc < 0)
		return rc;
	if (strncmp(buf, "max", 3) == 0) {
		*out = 0;
		return 0;
	}
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno || end == buf)
		return -EINVAL;
	*out = v >= V1_UNLIMITED ? 0 : v;
	return 0;
}

static int read_u64(int fd, uint64_t *out)
{
	char buf[64], *end;
	int rc = read_small(fd, buf, sizeof(buf));

	if (rc < 0)
		return rc;
	errno = 0;
	*out = strtoull(buf, &end, 10);
	return errno || end == buf ? -EINVAL : 0;
}

/* The value of one key of memory.stat ("inactive_file 1234\n"); 0 when
 * absent. */
static uint64_t stat_key(int fd, const char *key)
{
	char buf[8192];
	size_t klen = strlen(key);

	if (fd < 0 || read_small(fd, buf, sizeof(buf)) < 0)
		return 0;
	for (const char *line = buf, *nl;; line = nl + 1) {
		if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
			return strtoull(line + klen + 1, NULL, 10);
		nl = strchr(line, '\n');
		if (!nl)
			return 0;
	}
}

uint64_t mcpx_container_headroom(uint64_t limit)
{
	uint64_t h = limit / 8u;

	return h < MCPX_CONTAINER_HEADROOM_MIN ? MCPX_CONTAINER_HEADROOM_MIN : h;
}

void mcpx_container_memory_close(struct mcpx_container_memory *cm)
{
	if (cm->usage_fd >= 0)
		close(cm->usage_fd);
	if (cm->limit_fd >= 0)
		close(cm->limit_fd);
	if (cm->stat_fd >= 0)
		close(cm->stat_fd);
	cm->usage_fd = cm->limit_fd = cm->stat_fd = -1;
	cm->version = 0;
}

static int open_in(const char *dir, const char *name)
{
	char path[1024];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return -ENAMETOOLONG;
	return open(path, O_RDONLY | O_CLOEXEC);
}

/* Takes dir when it has the version's files and a limit. */
static bool try_dir(struct mcpx_container_memory *cm, const char *dir, int version)
{
	const char *usage = version == 2 ? "memory.current" : "memory.usage_in_bytes";
	const char *limit = version == 2 ? "memory.max" : "memory.limit_in_bytes";
	uint64_t lim = 0;
	int u = open_in(dir, usage), l = open_in(dir, limit);

	if (u < 0 || l < 0 || read_limit(l, &lim) < 0 || lim == 0) {
		if (u >= 0)
			close(u);
		if (l >= 0)
			close(l);
		return false;
	}
	cm->usage_fd = u;
	cm->limit_fd = l;
	cm->stat_fd = open_in(dir, "memory.stat");
	cm->version = version;
	snprintf(cm->dir, sizeof(cm->dir), "%s", dir);
	return true;
}

/* The process's cgroup path for the version (v2: the "0::" line; v1: the
 * line whose controllers include memory), or "" when there is none. */
static void own_path(const char *proc_cgroup_file, int version, char *out, size_t len)
{
	char line[1024];
	FILE *f = proc_cgroup_file ? fopen(proc_cgroup_file, "re") : NULL;

	out[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		bool match = false;

		if (!c2)
			continue;
		line[strcspn(line, "\n")] = '\0';
		*c1 = '\0';
		*c2 = '\0';
		if (version == 2) {
			match = strcmp(line, "0") == 0 && c1 + 1 == c2;
		} else {
			for (char *tok = strtok(c1 + 1, ","); tok; tok = strtok(NULL, ","))
				match |= strcmp(tok, "memory") == 0;
		}
		if (match) {
			snprintf(out, len, "%s", c2 + 1);
			break;
		}
	}
	fclose(f);
}

/* From base + the process's own path up to base: the nearest cgroup with a
 * limit. */
static bool walk_up(struct mcpx_container_memory *cm, const char *base, const char *path,
                    int version)
{
	char dir[1024];

	if ((size_t)snprintf(dir, sizeof(dir), "%s%s", base, path) >= sizeof(dir))
		return false;
	for (;;) {
		size_t n = strlen(dir);
		char *slash;

		while (n > strlen(base) && dir[n - 1] == '/')
			dir[--n] = '\0';
		if (try_dir(cm, dir, version))
			return true;
		if (n <= strlen(base))
			return false;
		slash = strrchr(dir + strlen(base), '/');
		if (!slash)
			return false;
		*slash = '\0';
	}
}

int mcpx_container_memory_open(const char *cgroup_root, const char *proc_cgroup_file,
                               struct mcpx_container_memory *cm)
{
	char probe[1024], path[512], v1[1024];

	memset(cm, 0, sizeof(*cm));
	cm->usage_fd = cm->limit_fd = cm->stat_fd = -1;
	if ((size_t)snprintf(probe, sizeof(probe), "%s/cgroup.controllers", cgroup_root) >=
	        sizeof(probe) ||
	    (size_t)snprintf(v1, sizeof(v1), "%s/memory", cgroup_root) >= sizeof(v1))
		return -ENAMETOOLONG;
	/* cgroup v2 mounted at the root: the unified hierarchy. (A hybrid host
	 * mounts v2 at .../unified without the memory controller: v1 then.) */
	if (access(probe, F_OK) == 0) {
		own_path(proc_cgroup_file, 2, path, sizeof(path));
		if (walk_up(cm, cgroup_root, path, 2))
			return 0;
		snprintf(cm->why, sizeof(cm->why),
		         "no memory limit on the cgroup v2 path %.60s%.60s", cgroup_root, path);
		return 0;
	}
	if (access(v1, F_OK) == 0) {
		own_path(proc_cgroup_file, 1, path, sizeof(path));
		if (walk_up(cm, v1, path, 1))
			return 0;
		snprintf(cm->why, sizeof(cm->why),
		         "no memory limit on the cgroup v1 path %.60s%.60s", v1, path);
		return 0;
	}
	snprintf(cm->why, sizeof(cm->why), "no memory cgroup under %.100s", cgroup_root);
	return 0;
}

int mcpx_container_memory_read(struct mcpx_container_memory *cm, struct mcpx_container_reading *r)
{
	uint64_t inactive;
	int rc;

	memset(r, 0, sizeof(*r));
	if (!cm->version)
		return -ENODEV;
	if ((rc = read_u64(cm->usage_fd, &r->usage)) < 0 ||
	    (rc = read_limit(cm->limit_fd, &r->limit)) < 0)
		return rc;
	r->working_set = r->usage;
	if (!r->limit)
		return 0;
	r->headroom = mcpx_container_headroom(r->limit);
	if (r->limit > r->headroom && r->usage < r->limit - r->headroom)
		return 0;
	/* Near: page cache the kernel reclaims before it OOM-kills does not
	 * count (the kubelet's working set). memory.stat is the costlier read,
	 * so only here. */
	inactive =
	    stat_key(cm->stat_fd, cm->version == 2 ? "inactive_file" : "total_inactive_file");
	r->working_set = r->usage > inactive ? r->usage - inactive : 0;
	r->near = r->limit <= r->headroom || r->working_set >= r->limit - r->headroom;
	return 0;
}
