/*
 * buf.h - a growable byte buffer with a hard cap (curl's dynbuf is the model).
 *
 * Every place that collects bytes whose size someone else decides (a request
 * body, a run's output, a rendered response) uses this type, so the cap is
 * always stated where the buffer is made and an allocation failure is always
 * an error the caller sees, never a silent truncation. The contents are kept
 * NUL-terminated (the terminator is not counted in len and not part of the
 * cap), so text can be handed to APIs that want a C string; binary data
 * travels as (data, len).
 *
 * Ownership: the struct owns data until mcpx_buf_free or mcpx_buf_take.
 */
#ifndef MCPX_BUF_H
#define MCPX_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct mcpx_buf {
	char *data; /* NULL until the first append */
	size_t len;
	size_t alloc;
	size_t max; /* hard cap on len */
};

/* Starts an empty buffer that may hold at most max bytes. */
void mcpx_buf_init(struct mcpx_buf *b, size_t max);

/* Appends n bytes. Returns 0, -E2BIG when the cap would be passed (nothing
 * is appended), or -ENOMEM. */
int mcpx_buf_add(struct mcpx_buf *b, const void *p, size_t n);

/* Appends as much of p as the cap allows; returns the bytes appended, or
 * -ENOMEM. For output that is kept up to a cap and dropped beyond it. */
long mcpx_buf_add_some(struct mcpx_buf *b, const void *p, size_t n);

/* Room for n more bytes, to be filled in place (a read straight into the
 * buffer): a pointer to them, or NULL when the cap would be passed or
 * memory is short. mcpx_buf_commit then counts the m <= n bytes filled. */
char *mcpx_buf_room(struct mcpx_buf *b, size_t n);
void mcpx_buf_commit(struct mcpx_buf *b, size_t m);
/* Appends a C string. Same returns as mcpx_buf_add. */
int mcpx_buf_adds(struct mcpx_buf *b, const char *s);

/* Appends formatted text. Same returns as mcpx_buf_add. */
int mcpx_buf_addf(struct mcpx_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int mcpx_buf_vaddf(struct mcpx_buf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* The contents as a NUL-terminated string ("" when empty; never NULL). */
const char *mcpx_buf_str(const struct mcpx_buf *b);

/* Forgets the contents but keeps the memory and the cap. */
void mcpx_buf_reset(struct mcpx_buf *b);

/* Hands the contents to the caller (free() them; NULL when empty) and leaves
 * the buffer empty. *len gets the length when len is not NULL. */
char *mcpx_buf_take(struct mcpx_buf *b, size_t *len);

/* Frees the memory; the buffer is empty afterwards and may be reused. */
void mcpx_buf_free(struct mcpx_buf *b);

#endif
