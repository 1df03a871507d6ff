/*
 * runfiles.c - what a name or path of a run's files may be (runfiles.h):
 * input paths checked (relative, no "..", "." or empty segments, valid
 * UTF-8, no control, line-separator or bidirectional-text characters, not
 * main.py, out or .mcpx), and the characters a name must not carry found,
 * for input paths and for the names the run left under out/.
 *
 * It is the bottom of the module's files: the input (runfiles_input.c),
 * the content types (runfiles_sniff.c) and the reading of out/
 * (runfiles_output.c) call it; it calls none of them.
 *
 * What it does not do: touch the filesystem, decode content or encode
 * anything for MCP (the exec tool does).
 */
#include "runfiles.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "utf8.h"

#include "runfiles_internal.h"

static bool seg_is(const char *s, size_t n, const char *lit)
{
	return n == strlen(lit) && memcmp(s, lit, n) == 0;
}

/* One segment of a path: not empty, not "." or "..", not too long. */
static int check_segment(const char *s, size_t n, struct mcpx_err *err)
{
	if (n == 0)
		return mcpx_err_set(err, EINVAL,
		                    "empty segments (\"a//b\", a trailing \"/\") are not allowed");
	if (seg_is(s, n, "."))
		return mcpx_err_set(err, EINVAL, "\".\" segments are not allowed");
	if (seg_is(s, n, ".."))
		return mcpx_err_set(err, EINVAL, "\"..\" segments are not allowed");
	if (n > MCPX_RUNFILES_SEG_MAX)
		return mcpx_err_set(err, EINVAL, "a segment is longer than %d bytes",
		                    MCPX_RUNFILES_SEG_MAX);
	return 0;
}

/* The code point of the UTF-8 sequence at s (n bytes left) and its length;
 * a byte that starts no valid sequence is itself, length 1 (such names are
 * judged elsewhere: input paths must be UTF-8, output names are shown with
 * U+FFFD in their place). */
size_t mcpx_runfiles_next_cp(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len = s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 ? 2 : 1;

	if (s[0] < 0x80 || s[0] > 0xF4 || len == 1 || len > n) {
		*cp = s[0] < 0x80 ? s[0] : 0xFFFD;
		return 1;
	}
	*cp = s[0] & (0x7F >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80) {
			*cp = 0xFFFD;
			return 1;
		}
		*cp = *cp << 6 | (s[i] & 0x3F);
	}
	return len;
}

/* Characters a name must not carry: they would act on whoever reads a
 * listing, a log line or a terminal instead of being read. C0 and C1
 * controls (NUL cuts the name, ESC starts terminal sequences, newline
 * forges lines), DEL, the line and paragraph separators, and the
 * bidirectional-text controls (U+202E shows "gpj.exe" as "exe.jpg"). */
bool mcpx_runfiles_unsafe_cp(uint32_t c)
{
	return c < 0x20 || (c >= 0x7F && c <= 0x9F) || c == 0x061C || c == 0x200E || c == 0x200F ||
	       (c >= 0x2028 && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

/* The offset of the first unsafe character in the n bytes at s, or n. */
size_t mcpx_runfiles_unsafe_at(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t cp;

	for (size_t i = 0, k; i < n; i += k) {
		k = mcpx_runfiles_next_cp(p + i, n - i, &cp);
		if (mcpx_runfiles_unsafe_cp(cp))
			return i;
	}
	return n;
}

bool mcpx_runfiles_name_safe(const char *s, size_t n)
{
	return mcpx_runfiles_unsafe_at(s, n) == n && mcpx_utf8_valid(s, n);
}

int mcpx_runfiles_check_path(const char *p, size_t len, struct mcpx_err *err)
{
	size_t start = 0, depth = 0;
	int rc;

	if (len == 0)
		return mcpx_err_set(err, EINVAL, "the path is empty");
	if (len > MCPX_RUNFILES_PATH_MAX)
		return mcpx_err_set(err, EINVAL, "the path is longer than %d bytes",
		                    MCPX_RUNFILES_PATH_MAX);
	if (p[0] == '/')
		return mcpx_err_set(err, EINVAL, "absolute paths are not allowed");
	/* NUL would cut the name short; other control characters and the
	 * bidirectional-text controls only make trouble in logs, listings and
	 * URIs (unsafe_cp). */
	if (mcpx_runfiles_unsafe_at(p, len) < len)
		return mcpx_err_set(err, EINVAL,
		                    "control characters are not allowed (nor line separators "
		                    "and bidirectional-text controls such as U+202E)");
	if (!mcpx_utf8_valid(p, len))
		return mcpx_err_set(err, EINVAL, "the path is not valid UTF-8");
	for (size_t i = 0; i <= len; i++) {
		if (i < len && p[i] != '/')
			continue;
		rc = check_segment(p + start, i - start, err);
		if (rc)
			return rc;
		if (++depth > MCPX_RUNFILES_DEPTH_MAX)
			return mcpx_err_set(err, EINVAL, "more than %d segments",
			                    MCPX_RUNFILES_DEPTH_MAX);
		start = i + 1;
	}
	/* "main.py/x" would make main.py a directory, and the code could not
	 * be written: refused as a collision like main.py itself. */
	if (seg_is(p, len, "main.py") || (len > 8 && memcmp(p, "main.py/", 8) == 0))
		return mcpx_err_set(err, EINVAL, "main.py is where the code goes");
	if (seg_is(p, len, "out"))
		return mcpx_err_set(err, EINVAL, "out is the directory for the run's output files");
	if (seg_is(p, len, ".mcpx") || (len > 6 && memcmp(p, ".mcpx/", 6) == 0))
		return mcpx_err_set(err, EINVAL, ".mcpx is the server's (a workspace's variables)");
	return 0;
}
