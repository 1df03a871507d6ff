/*
 * prom_text.c - the Prometheus text exposition format 0.0.4, written into a
 * capped buffer: HELP and TYPE lines, label values escaped, doubles as the
 * Go client prints them, gauges, and histograms over the server's duration
 * buckets.
 *
 * metrics.c keeps the series and decides what is rendered; this file only
 * knows how a line is spelled. A buffer that would pass its cap, or cannot
 * grow, is marked failed and takes nothing more, so a bug cannot turn
 * /metrics into an unbounded allocation. It holds no state of its own.
 */
#include "prom_text.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                 2.5,   5,    10,    30,   60,  120,  300};
_Static_assert(sizeof(buckets) / sizeof(buckets[0]) == MCPX_PROM_N_BUCKETS,
               "prom_text.h: MCPX_PROM_N_BUCKETS is the number of buckets");

size_t mcpx_prom_lookup(const char *const *table, size_t n, const char *s)
{
	for (size_t i = 0; i + 1 < n; i++)
		if (strcmp(table[i], s) == 0)
			return i;
	return n - 1; /* "other" is always last */
}

void mcpx_prom_observe(struct mcpx_prom_hist *h, double v)
{
	size_t i = 0;

	/* A NaN or negative duration is a clock bug upstream; counting it as
	 * zero keeps _sum meaningful and the buckets monotonic. */
	if (!(v >= 0))
		v = 0;
	while (i < MCPX_PROM_N_BUCKETS && v > buckets[i])
		i++;
	h->counts[i]++;
	h->count++;
	h->sum += v;
}

void mcpx_prom_put(struct mcpx_prom_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->failed)
		return;
	for (;;) {
		size_t room = b->cap - b->len;
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->failed = true;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		size_t want = b->cap ? b->cap * 2 : 4096;
		while (want < b->len + (size_t)n + 1)
			want *= 2;
		if (want > MCPX_PROM_RENDER_CAP) {
			b->failed = true;
			return;
		}
		char *np = realloc(b->p, want);
		if (!np) {
			b->failed = true;
			return;
		}
		b->p = np;
		b->cap = want;
	}
}

/* Label values escape backslash, double quote and newline (format 0.0.4). */
void mcpx_prom_label(struct mcpx_prom_buf *b, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\')
			mcpx_prom_put(b, "\\\\");
		else if (*v == '"')
			mcpx_prom_put(b, "\\\"");
		else if (*v == '\n')
			mcpx_prom_put(b, "\\n");
		else
			mcpx_prom_put(b, "%c", *v);
	}
}

/* Prints the shortest decimal that reads back as the same double, laid out
 * like the Go client library's strconv 'g' format (plain digits for
 * exponents -4..5, else scientific), so "10" stays "10" and sums stay exact
 * without trailing noise. */
void mcpx_prom_double(struct mcpx_prom_buf *b, double v)
{
	char s[48];
	int prec, exp10;

	if (isinf(v)) {
		mcpx_prom_put(b, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	if (isnan(v)) {
		mcpx_prom_put(b, "NaN");
		return;
	}
	for (prec = 1; prec < 17; prec++) {
		snprintf(s, sizeof(s), "%.*e", prec - 1, v);
		if (strtod(s, NULL) == v)
			break;
	}
	snprintf(s, sizeof(s), "%.*e", prec - 1, v);
	exp10 = atoi(strchr(s, 'e') + 1);
	if (exp10 >= -4 && exp10 < 6)
		snprintf(s, sizeof(s), "%.*f", prec - 1 - exp10 > 0 ? prec - 1 - exp10 : 0, v);
	mcpx_prom_put(b, "%s", s);
}

void mcpx_prom_header(struct mcpx_prom_buf *b, const char *name, const char *type, const char *help)
{
	mcpx_prom_put(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void mcpx_prom_gauge(struct mcpx_prom_buf *b, const char *name, const char *help,
                     unsigned long long v)
{
	mcpx_prom_header(b, name, "gauge", help);
	mcpx_prom_put(b, "%s %llu\n", name, v);
}

void mcpx_prom_histogram(struct mcpx_prom_buf *b, const char *name, const char *help,
                         const struct mcpx_prom_hist *h)
{
	uint64_t cum = 0;

	mcpx_prom_header(b, name, "histogram", help);
	for (size_t i = 0; i <= MCPX_PROM_N_BUCKETS; i++) {
		cum += h->counts[i];
		mcpx_prom_put(b, "%s_bucket{le=\"", name);
		mcpx_prom_double(b, i < MCPX_PROM_N_BUCKETS ? buckets[i] : INFINITY);
		mcpx_prom_put(b, "\"} %" PRIu64 "\n", cum);
	}
	mcpx_prom_put(b, "%s_sum ", name);
	mcpx_prom_double(b, h->sum);
	mcpx_prom_put(b, "\n%s_count %" PRIu64 "\n", name, h->count);
}
