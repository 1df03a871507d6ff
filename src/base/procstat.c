/*
 * procstat.c - /proc/<pid>/stat parsing (procstat.h).
 *
 * Field numbers follow proc(5): after "pid (comm)" come state (3), ppid (4),
 * pgrp (5), session (6), ..., utime (14), stime (15), cutime (16), cstime (17),
 * ..., num_threads (20), ..., rss (24, pages).
 */
#include "procstat.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse_stat(const char *buf, struct mcpx_procstat *ps)
{
	static long hz, page_kb;
	unsigned long long ut, st;
	long ppid, pgrp, sid, rss, cut, cst, threads;
	const char *p = strrchr(buf, ')');

	if (!hz) {
		hz = sysconf(_SC_CLK_TCK);
		page_kb = sysconf(_SC_PAGESIZE) / 1024;
	}
	if (!p ||
	    sscanf(p + 1,
	           " %c %ld %ld %ld %*d %*d %*u %*u %*u %*u %*u %llu %llu %ld %ld %*d %*d"
	           " %ld %*d %*u %*u %ld",
	           &ps->state, &ppid, &pgrp, &sid, &ut, &st, &cut, &cst, &threads, &rss) != 10)
		return -EIO;
	ps->ppid = (pid_t)ppid;
	ps->pgrp = (pid_t)pgrp;
	ps->session = (pid_t)sid;
	ps->threads = threads > 0 ? (unsigned)threads : 1;
	ps->cpu_ms = hz > 0 ? (ut + st) * 1000u / (unsigned long long)hz : 0;
	ps->children_cpu_ms = hz > 0 && cut >= 0 && cst >= 0
	                          ? (unsigned long long)(cut + cst) * 1000u / (unsigned long long)hz
	                          : 0;
	ps->rss_kb = rss > 0 ? (uint64_t)rss * (uint64_t)(page_kb > 0 ? page_kb : 4) : 0;
	return 0;
}

int mcpx_procstat_read_at(int procfd, const char *name, struct mcpx_procstat *ps)
{
	char path[300], buf[1024];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/stat", name);
	fd = openat(procfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	buf[n] = '\0';
	ps->pid = (pid_t)strtol(strrchr(name, '/') ? strrchr(name, '/') + 1 : name, NULL, 10);
	return parse_stat(buf, ps);
}

int mcpx_procstat_read(pid_t pid, struct mcpx_procstat *ps)
{
	char name[32];

	snprintf(name, sizeof(name), "/proc/%d", (int)pid);
	return mcpx_procstat_read_at(AT_FDCWD, name, ps);
}

int mcpx_procstat_scan(int (*fn)(const struct mcpx_procstat *ps, void *arg), void *arg)
{
	struct mcpx_procstat ps;
	struct dirent *de;
	DIR *d = opendir("/proc");
	int rc = 0;

	if (!d)
		return -errno;
	while (!rc && (de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		if (mcpx_procstat_read_at(dirfd(d), de->d_name, &ps) == 0)
			rc = fn(&ps, arg);
	}
	closedir(d);
	return rc;
}

int mcpx_proc_each_file(const char *dir, const char *name, void (*fn)(const char *text, void *arg),
                        void *arg)
{
	char path[300], buf[4096];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		ssize_t n;
		int fd;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "%s/%s", de->d_name, name);
		fd = openat(dirfd(d), path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		fn(buf, arg);
	}
	closedir(d);
	return 0;
}
