/*
 * runfiles.h - a run's files: the input files a call passes, written into
 * the workdir before the code starts, and the files the run leaves under
 * out/, read back after its whole process tree is gone.
 *
 * Input: every path is checked (relative, no "..", "." or empty segments,
 * no control, line-separator or bidirectional-text characters, valid UTF-8, not main.py or out
 * itself, no file that is also another file's directory), base64 is decoded strictly, and the
 * decoded bytes in total are capped, all before anything runs. Writing walks the path one component
 * at a time with openat and O_NOFOLLOW, creates parent directories, and hands everything to the
 * run's uid when the server runs as root.
 *
 * Output: out/ is walked relative to the workdir, one component at a time,
 * opened O_PATH|O_NOFOLLOW, so no symlink is ever followed at any level,
 * out/ itself included. Only regular files with one link, owned by the
 * run's uid, are read, each read bounded by its size and by what is left of
 * the byte cap. Everything found is listed; what is not returned says why.
 * Images are recognised by content (PNG, JPEG, GIF, WebP magic), never by
 * name. Nothing is kept after the caller frees the result.
 *
 * Its files: runfiles.c (paths and names, the bottom), runfiles_input.c,
 * runfiles_sniff.c (content types) and runfiles_output.c (out/).
 *
 * This module does not know about MCP or JSON (the exec tool encodes the
 * result), processes (the executor calls it at the right moments) or where
 * workdirs live (the sandbox makes them).
 */
#ifndef MCPX_RUNFILES_H
#define MCPX_RUNFILES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "err.h"

/* Fixed bounds, documented in docs/tool.md. */
#define MCPX_RUNFILES_MAX_IN 256     /* input files per call */
#define MCPX_RUNFILES_PATH_MAX 1024  /* bytes in one path */
#define MCPX_RUNFILES_SEG_MAX 255    /* bytes in one path segment (NAME_MAX) */
#define MCPX_RUNFILES_DEPTH_MAX 16   /* segments in one path; directory levels below out/ */
#define MCPX_RUNFILES_LIST_MAX 1000  /* entries of out/ listed per call */
#define MCPX_RUNFILES_VISIT_MAX 4096 /* entries of out/ examined per call */

/* The input files of one call, decoded. Owned by the struct. */
struct mcpx_runfile_in {
	char *path; /* checked, NUL-terminated */
	char *data;
	size_t len;
};

struct mcpx_runfiles_in {
	struct mcpx_runfile_in *v;
	size_t n;
	size_t bytes;     /* decoded bytes in total */
	size_t max_bytes; /* cap on bytes */
};

/* Whose the written files are: the run's uid and gid when the server is
 * root (chown), else nobody's but the server's own. */
struct mcpx_runfiles_owner {
	bool chown_to;
	uid_t uid;
	gid_t gid;
};

/* Starts an empty set whose decoded bytes may total at most max_bytes. */
void mcpx_runfiles_in_init(struct mcpx_runfiles_in *in, size_t max_bytes);
void mcpx_runfiles_in_free(struct mcpx_runfiles_in *in);

/* Checks one input path (len bytes, not NUL-terminated). Returns 0, or
 * -EINVAL with the reason in err ("'..' segments are not allowed"). */
int mcpx_runfiles_check_path(const char *path, size_t len, struct mcpx_err *err);

/* Whether the n bytes at s are valid UTF-8 without a character a name
 * must not carry (control, line-separator or bidirectional-text
 * characters): for names that are not paths. */
bool mcpx_runfiles_name_safe(const char *s, size_t n);

/* Adds one file: checks the path, refuses a duplicate or a path that is
 * another file's directory (or the reverse), decodes content when base64
 * is true, and keeps the total under the cap. Returns 0; -EINVAL (bad path,
 * conflict, invalid base64) or -E2BIG (over a cap) with the reason in err;
 * -ENOMEM. Nothing is added on failure. */
int mcpx_runfiles_add(struct mcpx_runfiles_in *in, const char *path, size_t path_len,
                      const char *content, size_t content_len, bool base64, struct mcpx_err *err);

/* Creates out/ in workdir and writes the input files (in may be NULL),
 * parent directories included: directories 0700, files 0600, created
 * exclusively, never through a symlink. Returns 0 or -errno with err set
 * ("cannot write input file data/x.csv: No space left on device"). */
int mcpx_runfiles_write(const struct mcpx_runfiles_in *in, const char *workdir,
                        const struct mcpx_runfiles_owner *owner, struct mcpx_err *err);

/* Writes one file at path (checked by the caller) below the directory wd:
 * parent directories made (0700) as needed, the file created exclusively
 * with the owner bits of mode, never through a symlink, its content the
 * iovcnt pieces of iov, and both handed to owner when set. Returns 0 or
 * -errno (-EEXIST: the path is taken). */
int mcpx_runfiles_put(int wd, const char *path, const struct iovec *iov, int iovcnt, mode_t mode,
                      const struct mcpx_runfiles_owner *owner);

/* What a file under out/ is. */
enum mcpx_runfile_kind {
	MCPX_RUNFILE_IMAGE,  /* PNG, JPEG, GIF or WebP by content */
	MCPX_RUNFILE_TEXT,   /* valid UTF-8 without NUL bytes */
	MCPX_RUNFILE_BINARY, /* anything else */
};

/* Why a file was not returned. */
enum mcpx_runfile_status {
	MCPX_RUNFILE_RETURNED,
	MCPX_RUNFILE_TOO_LARGE,   /* more than the byte cap has left */
	MCPX_RUNFILE_TOO_MANY,    /* the file-count cap was reached */
	MCPX_RUNFILE_NOT_REGULAR, /* symlink, directory too deep, fifo, socket,
	                           * several hard links, or not the run's */
	MCPX_RUNFILE_UNSAFE_NAME, /* a control, line-separator or bidi character
	                           * in the name (path shown percent-encoded) */
};

struct mcpx_runfile_out {
	char *path;   /* "out/..." relative to the workdir, NUL-terminated */
	size_t bytes; /* size of a regular file; 0 for anything else */
	enum mcpx_runfile_status status;
	/* Only when returned: the content (NUL-terminated, not counted in
	 * len), its type and hash. mime is static storage. */
	char *data;
	size_t len;
	enum mcpx_runfile_kind kind;
	const char *mime;
	char sha256[65];
};

struct mcpx_runfiles_out {
	struct mcpx_runfile_out *v;
	size_t n;
	bool truncated; /* out/ held more than LIST_MAX / VISIT_MAX entries */
};

struct mcpx_runfiles_caps {
	unsigned max_files; /* files returned */
	size_t max_bytes;   /* bytes returned, in total */
};

/* Walks out/ of the workdir open at workdir_fd (any directory fd; not
 * closed) after the run's processes are gone and fills out
 * (sorted by name within each directory). owner is the run's uid: files of
 * anyone else are not read. A missing out/ is an empty result. Returns 0,
 * or -errno with err set when the server could not read (out of memory, an
 * I/O error): then out is empty. Free with mcpx_runfiles_out_free. */
int mcpx_runfiles_collect(int workdir_fd, uid_t owner, const struct mcpx_runfiles_caps *caps,
                          struct mcpx_runfiles_out *out, struct mcpx_err *err);
void mcpx_runfiles_out_free(struct mcpx_runfiles_out *out);

/* The pieces of the judged walk that a workspace's collection
 * (workspace_files.c) shares with out/'s:
 * - reopens the inode behind the O_PATH descriptor pfd (st: its fstat)
 *   with flags through /proc/self/fd, giving the owner the bits in need
 *   back first when the server shares the run's uid (the run may have
 *   taken them): the fd or -errno;
 * - the names in directory fd (not closed), "." and ".." left out, at most
 *   max of them (*more when there are others), sorted: 0 or -errno; free
 *   them with mcpx_runfiles_names_free. */
int mcpx_runfiles_reopen(int pfd, const struct stat *st, int flags, mode_t need);
int mcpx_runfiles_dir_names(int fd, size_t max, char ***out, size_t *count, bool *more);
void mcpx_runfiles_names_free(char **names, size_t n);

/* "too large", "too many", "not a regular file"; NULL when returned. */
const char *mcpx_runfiles_reason(enum mcpx_runfile_status st);

/* The MIME type and kind of (data, len): images by their magic bytes,
 * other binary formats (PDF, ZIP, gzip) likewise, text by being UTF-8 and
 * then by the name's extension (text/csv, application/json, ...), the rest
 * application/octet-stream. name is only consulted for text. Returns static
 * storage. */
const char *mcpx_runfiles_sniff(const void *data, size_t len, const char *name,
                                enum mcpx_runfile_kind *kind);

#endif
