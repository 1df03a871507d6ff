/*
 * run_readings.h - the budget's timer callback (run_readings.c): one
 * reading of a run's memory, CPU and (through run_disk.c) disk, then the
 * timer set for the next at a pace its cost decides. Private to the
 * budget's files: run_budget.c arms the timer with it.
 */
#ifndef MCPX_RUN_READINGS_H
#define MCPX_RUN_READINGS_H

struct mcpx_timer;

/* The timer's callback; t->arg is the run's struct mcpx_run_budget. */
void mcpx_rb_sample_cb(struct mcpx_timer *t);

#endif
