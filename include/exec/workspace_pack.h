/*
 * workspace_pack.h - a workspace's archive: its files and its variables'
 * blob as one byte string for the store, and the checks that turn such a
 * string back into files the server may write.
 *
 * The format (version 1; every integer big-endian, docs/tool.md):
 *
 *   "MCPXWS1\n"                                      8 bytes: magic and version
 *   'F' flags:u8 path_len:u16 path size:u64 data     one per file (flags bit 0:
 *                                                    the owner's execute bit)
 *   'V' size:u64 data                                the variables' blob, at most once
 *   'N' size:u32 data                                the variables' names, at most once
 *   'E' files:u32 bytes:u64                          last: the count and the bytes
 *                                                    of the 'F' records
 *
 * The archive is the caller's data: a store returns what was saved, but a
 * store on a shared volume or a Redis peer is not the server, so parsing
 * trusts nothing in it. Every path passes the checks input files pass
 * (runfiles.h: relative, no "..", ".", empty or over-long segments, UTF-8,
 * no control characters, not main.py or out), and is none of the server's
 * names (out/, .mcpx/, the language files main.sh and main.mjs);
 * no path is given twice or is another file's directory; every size is
 * checked against what is left of the string and against the caps, and the
 * trailer must agree with the records, before anything is written. The
 * variables' blob is never looked into (only the run's Python reads it); the
 * names are lines "+name" (kept) and "-name" (not kept), read with
 * mcpx_wspack_names.
 *
 * This module is pure: no files, no processes (workspace_files.h writes and
 * collects a workdir), no store (src/store/).
 */
#ifndef MCPX_WORKSPACE_PACK_H
#define MCPX_WORKSPACE_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"

#define MCPX_WSPACK_MAGIC "MCPXWS1\n"
#define MCPX_WSPACK_MAGIC_LEN 8
/* Fixed bounds, documented in docs/tool.md. */
#define MCPX_WSPACK_FILES_MAX 4096u    /* files in one workspace */
#define MCPX_WSPACK_NAMES_BYTES 65536u /* the names' list */
#define MCPX_WSPACK_NAMES_MAX 1000u    /* variables named in a result */
#define MCPX_WSPACK_NAME_MAX 255u      /* bytes in one variable's name */
/* The archive's own bytes beyond the files' and the variables' (record
 * heads, paths, the names, the trailer), so a workspace at its byte cap
 * still packs. */
#define MCPX_WSPACK_OVERHEAD(files)                                                                \
	((size_t)(files) * (1 + 1 + 2 + 1024 + 8) + 8 + 9 + 5 + MCPX_WSPACK_NAMES_BYTES + 13)

/* One file of a parsed archive: path is a NUL-terminated copy, data points
 * into the archive (valid while it is). */
struct mcpx_wspack_file {
	char *path;
	const char *data;
	size_t len;
	bool exec;
	bool dropped; /* replaced by an input file of the call (workspace_files.h) */
};

struct mcpx_wspack {
	struct mcpx_wspack_file *files; /* sorted by path */
	size_t n;
	size_t file_bytes;
	const char *vars; /* NULL: no variables saved */
	size_t vars_len;
	const char *names; /* NULL: none */
	size_t names_len;
};

struct mcpx_wspack_caps {
	size_t max_bytes;   /* files plus variables */
	unsigned max_files; /* at most MCPX_WSPACK_FILES_MAX */
};

/* Parses and checks the archive (len bytes at p; len 0 is the empty
 * workspace). Returns 0 with out filled (free with mcpx_wspack_free), or
 * -EINVAL (malformed: truncated, a bad path, a duplicate, sizes that lie)
 * or -E2BIG (over a cap) with the reason in err, or -ENOMEM; out is then
 * empty. */
int mcpx_wspack_parse(const char *p, size_t len, const struct mcpx_wspack_caps *caps,
                      struct mcpx_wspack *out, struct mcpx_err *err);
void mcpx_wspack_free(struct mcpx_wspack *ws);

/* Writing an archive: begin, one add_file per file, the variables and
 * names (either may be absent), end. The buffer's own cap bounds the
 * result; -E2BIG when it would be passed. */
int mcpx_wspack_begin(struct mcpx_buf *b);
int mcpx_wspack_add_file(struct mcpx_buf *b, const char *path, const char *data, size_t len,
                         bool exec);
int mcpx_wspack_add_vars(struct mcpx_buf *b, const char *vars, size_t len);
/* A record's head only, when its size bytes are appended next by the
 * caller (read in place: mcpx_buf_room); room for them is checked here. */
int mcpx_wspack_file_head(struct mcpx_buf *b, const char *path, size_t size, bool exec);
int mcpx_wspack_vars_head(struct mcpx_buf *b, size_t size);
int mcpx_wspack_add_names(struct mcpx_buf *b, const char *names, size_t len);
int mcpx_wspack_end(struct mcpx_buf *b, uint32_t files, uint64_t bytes);

/* Whether path (checked as an input path already) is one of the server's
 * names in a workdir: out/ and .mcpx/ (the variables) and below, main.py,
 * main.sh, main.mjs. */
bool mcpx_wspack_reserved(const char *path, size_t len);

/* Calls fn(arg, kept, name, len) for each well-formed line of the names'
 * list ("+name" or "-name", a name of 1 to MCPX_WSPACK_NAME_MAX bytes of
 * UTF-8 without control characters), at most MCPX_WSPACK_NAMES_MAX of
 * them; a malformed line is skipped (the run wrote it). */
void mcpx_wspack_names(const char *p, size_t len,
                       void (*fn)(void *arg, bool kept, const char *name, size_t len), void *arg);

#endif
