/*
 * runfiles_sniff.c - what a file the run left is (runfiles.h): images by
 * their magic bytes (PNG, JPEG, GIF, WebP), a few other binary formats
 * likewise, text by being UTF-8 without NUL bytes and then by its name's
 * extension, the rest application/octet-stream. Never by name alone.
 *
 * It does not read files (runfiles_output.c hands it their bytes).
 */
#include "runfiles.h"

#include <string.h>
#include <strings.h>

#include "utf8.h"

/* ---- content types ---------------------------------------------------- */

struct magic {
	const char *bytes;
	size_t len;
	const char *mime;
	enum mcpx_runfile_kind kind;
};

/* Signatures at offset 0: the four image formats MCP clients show, and a
 * few binary formats worth naming. */
static const struct magic magics[] = {
    {"\x89PNG\r\n\x1a\n", 8, "image/png", MCPX_RUNFILE_IMAGE},
    {"\xff\xd8\xff", 3, "image/jpeg", MCPX_RUNFILE_IMAGE},
    {"GIF87a", 6, "image/gif", MCPX_RUNFILE_IMAGE},
    {"GIF89a", 6, "image/gif", MCPX_RUNFILE_IMAGE},
    {"%PDF-", 5, "application/pdf", MCPX_RUNFILE_BINARY},
    {"PK\x03\x04", 4, "application/zip", MCPX_RUNFILE_BINARY},
    {"\x1f\x8b", 2, "application/gzip", MCPX_RUNFILE_BINARY},
};

/* Text types by extension; text without a known one is text/plain. */
static const struct {
	const char *ext;
	const char *mime;
} text_types[] = {
    {".csv", "text/csv"},          {".tsv", "text/tab-separated-values"},
    {".json", "application/json"}, {".md", "text/markdown"},
    {".html", "text/html"},        {".htm", "text/html"},
    {".xml", "application/xml"},   {".svg", "image/svg+xml"},
    {".py", "text/x-python"},      {".yaml", "application/yaml"},
    {".yml", "application/yaml"},  {".js", "text/javascript"},
    {".css", "text/css"},
};

static const char *text_mime(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	for (size_t i = 0; i < sizeof(text_types) / sizeof(text_types[0]); i++) {
		size_t e = strlen(text_types[i].ext);
		if (n > e && strcasecmp(name + n - e, text_types[i].ext) == 0)
			return text_types[i].mime;
	}
	return "text/plain";
}

const char *mcpx_runfiles_sniff(const void *data, size_t len, const char *name,
                                enum mcpx_runfile_kind *kind)
{
	const char *p = data ? data : "";

	for (size_t i = 0; i < sizeof(magics) / sizeof(magics[0]); i++) {
		if (len >= magics[i].len && memcmp(p, magics[i].bytes, magics[i].len) == 0) {
			*kind = magics[i].kind;
			return magics[i].mime;
		}
	}
	/* WebP: a RIFF container whose form type is WEBP. */
	if (len >= 12 && memcmp(p, "RIFF", 4) == 0 && memcmp(p + 8, "WEBP", 4) == 0) {
		*kind = MCPX_RUNFILE_IMAGE;
		return "image/webp";
	}
	if (!memchr(p, '\0', len) && mcpx_utf8_valid(p, len)) {
		*kind = MCPX_RUNFILE_TEXT;
		return text_mime(name);
	}
	*kind = MCPX_RUNFILE_BINARY;
	return "application/octet-stream";
}
