/*
 * prom_text.h - the Prometheus text exposition format (prom_text.c): a
 * capped output buffer and the lines of counters, gauges and histograms.
 *
 * The buffer is the caller's: zero it, write, then free(b.p) (or take it
 * when b.failed is false). Nothing here allocates except the buffer's own
 * growth; nothing is shared between buffers.
 */
#ifndef MCPX_PROM_TEXT_H
#define MCPX_PROM_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The rendered text never legitimately approaches this; the cap keeps a bug
 * from turning /metrics into an unbounded allocation. */
#define MCPX_PROM_RENDER_CAP (1u << 20)

/* A growable buffer with a hard cap, in the spirit of curl's dynbuf. */
struct mcpx_prom_buf {
	char *p;
	size_t len, cap;
	bool failed;
};

/* The duration buckets every histogram here uses: 5 ms to 300 s. */
#define MCPX_PROM_N_BUCKETS 15

struct mcpx_prom_hist {
	uint64_t counts[MCPX_PROM_N_BUCKETS + 1]; /* per bucket, not cumulative; last is +Inf */
	uint64_t count;
	double sum;
};

/* A label value's index in a fixed table whose last entry is "other":
 * anything not in the table is counted there, so no caller can add a
 * series. */
size_t mcpx_prom_lookup(const char *const *table, size_t n, const char *s);

void mcpx_prom_observe(struct mcpx_prom_hist *h, double v);

__attribute__((format(printf, 2, 3))) void mcpx_prom_put(struct mcpx_prom_buf *b, const char *fmt,
                                                         ...);
/* A label value, escaped (backslash, double quote, newline). */
void mcpx_prom_label(struct mcpx_prom_buf *b, const char *v);
/* The shortest decimal that reads back as v (+Inf, -Inf, NaN spelled). */
void mcpx_prom_double(struct mcpx_prom_buf *b, double v);
void mcpx_prom_header(struct mcpx_prom_buf *b, const char *name, const char *type,
                      const char *help);
void mcpx_prom_gauge(struct mcpx_prom_buf *b, const char *name, const char *help,
                     unsigned long long v);
void mcpx_prom_histogram(struct mcpx_prom_buf *b, const char *name, const char *help,
                         const struct mcpx_prom_hist *h);

#endif
