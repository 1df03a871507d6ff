/*
 * run_disk.h - a run's disk accounting as the rest of its budget drives it
 * (run_disk.c): begun with the run, widened by each joined run, read on
 * the budget's timer, ended with the run. The last reading at the end is
 * run_budget.h's mcpx_run_budget_settle. Private to the budget's files.
 */
#ifndef MCPX_RUN_DISK_H
#define MCPX_RUN_DISK_H

struct mcpx_run_budget;

/* A run's disk accounting starts: the write watch on its workdir and
 * /dev/shm (nothing without a disk budget). */
void mcpx_rb_disk_begin(struct mcpx_run_budget *rb);
/* A joined run's workdir is watched with its caller's (top). */
void mcpx_rb_disk_joined(struct mcpx_run_budget *top, const struct mcpx_run_budget *j);
/* The timer's disk reading: the unlinked files every UNLINKED_EVERY
 * readings, a walk when none is under way and its pace allows. */
void mcpx_rb_disk_read(struct mcpx_run_budget *rb);
/* Ends what the disk accounting holds: the watch, its timer, a walk under
 * way (it finds no run when it ends). */
void mcpx_rb_disk_end(struct mcpx_run_budget *rb);

#endif
