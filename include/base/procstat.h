/*
 * procstat.h - what the server reads about other processes from /proc, in
 * one place: /proc/<pid>/stat (state, parent, group, CPU time of the process
 * and of the children it reaped, resident memory). The command name in stat may contain spaces and
 * ')', so every field is read after the last ')'.
 */
#ifndef MCPX_PROCSTAT_H
#define MCPX_PROCSTAT_H

#include <stdint.h>
#include <sys/types.h>

struct mcpx_procstat {
	pid_t pid;
	char state; /* 'R', 'S', 'Z', ... */
	pid_t ppid;
	pid_t pgrp;
	pid_t session;
	uint64_t cpu_ms;          /* utime + stime */
	uint64_t children_cpu_ms; /* cutime + cstime: children it has waited for */
	uint64_t rss_kb;          /* resident set size */
	unsigned threads;         /* threads of its thread group */
};

/* Reads /proc/<name>/stat relative to procfd (an open /proc directory, or
 * AT_FDCWD with name "/proc/<pid>"). Returns 0 or -errno (-ENOENT when the
 * process is gone, -EIO when the file does not parse). */
int mcpx_procstat_read_at(int procfd, const char *name, struct mcpx_procstat *ps);

/* The same for a pid. */
int mcpx_procstat_read(pid_t pid, struct mcpx_procstat *ps);

/* Calls fn for every process in /proc; stops early and returns fn's value
 * when fn returns non-zero. Returns 0 after a full scan, or -errno. */
int mcpx_procstat_scan(int (*fn)(const struct mcpx_procstat *ps, void *arg), void *arg);

/* For every numeric entry N of the directory dir (/proc, or a process's
 * task/ directory), reads up to 4095 bytes of N/name and calls fn with them,
 * NUL-terminated. An entry whose file cannot be read (a process or thread
 * that just ended) is skipped. Returns 0, or -errno when dir cannot be
 * opened. */
int mcpx_proc_each_file(const char *dir, const char *name, void (*fn)(const char *text, void *arg),
                        void *arg);

#endif
