/*
 * fuzz_wspack.c - a workspace's archive (workspace_pack.h), the bytes a
 * store on a shared volume or a Redis peer hands back: nothing in them is
 * the server's word.
 *
 * Beyond the sanitizers it checks, for an archive that parses: every path
 * passes the input files' checks and is none of the server's names; no
 * path twice; no file beneath another; every file and the variables lie
 * inside the input; the sizes add up and stay under the caps; the names'
 * list yields only well-formed names. Then the parse is written back with
 * the writer and parsed again, which must give the same files, bytes and
 * blobs.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runfiles.h"
#include "workspace_pack.h"

static const struct mcpx_wspack_caps caps = {1 << 20, 64};

static void check_name(void *arg, bool kept, const char *name, size_t len)
{
	(void)arg;
	(void)kept;
	if (len == 0 || len > MCPX_WSPACK_NAME_MAX || !mcpx_runfiles_name_safe(name, len) ||
	    memchr(name, '\n', len))
		abort();
}

static bool inside(const uint8_t *data, size_t size, const char *p, size_t n)
{
	return n == 0 || ((const uint8_t *)p >= data && (const uint8_t *)p + n <= data + size);
}

static void verify(const uint8_t *data, size_t size, const struct mcpx_wspack *ws)
{
	size_t total = 0;
	struct mcpx_err err;

	for (size_t i = 0; i < ws->n; i++) {
		const struct mcpx_wspack_file *f = &ws->files[i];
		size_t pl = strlen(f->path);

		if (mcpx_runfiles_check_path(f->path, pl, &err) < 0 ||
		    mcpx_wspack_reserved(f->path, pl) || !inside(data, size, f->data, f->len))
			abort();
		if (i > 0 && strcmp(ws->files[i - 1].path, f->path) >= 0)
			abort(); /* sorted, no duplicate */
		for (size_t j = 0; j < ws->n; j++) {
			size_t ql = strlen(ws->files[j].path);
			if (ql < pl && f->path[ql] == '/' && !memcmp(ws->files[j].path, f->path, ql))
				abort();
		}
		total += f->len;
	}
	if (total != ws->file_bytes || total + ws->vars_len > caps.max_bytes ||
	    ws->n > caps.max_files || !inside(data, size, ws->vars, ws->vars_len) ||
	    !inside(data, size, ws->names, ws->names_len))
		abort();
	mcpx_wspack_names(ws->names, ws->names_len, check_name, NULL);
}

static void round_trip(const struct mcpx_wspack *ws)
{
	struct mcpx_buf b;
	struct mcpx_wspack again;
	struct mcpx_err err;

	mcpx_buf_init(&b, 4 << 20);
	mcpx_wspack_begin(&b);
	for (size_t i = 0; i < ws->n; i++)
		if (mcpx_wspack_add_file(&b, ws->files[i].path, ws->files[i].data, ws->files[i].len,
		                         ws->files[i].exec) < 0)
			abort();
	if ((ws->vars && mcpx_wspack_add_vars(&b, ws->vars, ws->vars_len) < 0) ||
	    (ws->names && mcpx_wspack_add_names(&b, ws->names, ws->names_len) < 0) ||
	    mcpx_wspack_end(&b, (uint32_t)ws->n, ws->file_bytes) < 0)
		abort();
	if (mcpx_wspack_parse(b.data, b.len, &caps, &again, &err) < 0 || again.n != ws->n ||
	    again.file_bytes != ws->file_bytes || again.vars_len != ws->vars_len ||
	    again.names_len != ws->names_len)
		abort();
	for (size_t i = 0; i < ws->n; i++)
		if (strcmp(again.files[i].path, ws->files[i].path) ||
		    again.files[i].len != ws->files[i].len || again.files[i].exec != ws->files[i].exec ||
		    memcmp(again.files[i].data, ws->files[i].data, ws->files[i].len))
			abort();
	if ((ws->vars_len && memcmp(again.vars, ws->vars, ws->vars_len)) ||
	    (ws->names_len && memcmp(again.names, ws->names, ws->names_len)))
		abort();
	mcpx_wspack_free(&again);
	mcpx_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mcpx_wspack ws;
	struct mcpx_err err;

	if (mcpx_wspack_parse((const char *)data, size, &caps, &ws, &err) < 0) {
		if (ws.n || ws.files || ws.vars)
			abort(); /* a refusal leaves nothing */
		return 0;
	}
	verify(data, size, &ws);
	round_trip(&ws);
	mcpx_wspack_free(&ws);
	return 0;
}
