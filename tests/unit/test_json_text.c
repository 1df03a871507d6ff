/*
 * test_json_text.c - mcpx_json_text_check: RFC 8259 text passes, and each
 * thing cJSON would let through into a shorter C string or past the RFC is
 * refused at its offset: a form feed or a NUL between tokens, a raw control
 * character inside a string, a "\u0000" escape, bytes that are not UTF-8;
 * an escaped backslash followed by "u0000" is text, not a NUL.
 */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "json_text.h"

#define OK(s) CHECK_INT(mcpx_json_text_check(s, sizeof(s) - 1, NULL), 0)

static void bad(const char *s, size_t len, size_t at, const char *why, int line)
{
	struct mcpx_json_text_flaw f = {0};
	int rc = mcpx_json_text_check(s, len, &f);

	if (rc != -EINVAL || f.at != at || !f.why || !strstr(f.why, why)) {
		fprintf(stderr, "test_json_text.c:%d: got rc %d at %zu (%s), want %zu (%s)\n", line,
		        rc, f.at, f.why ? f.why : "-", at, why);
		check_failures++;
	}
}

#define BAD(s, at, why) bad(s, sizeof(s) - 1, at, why, __LINE__)

int main(void)
{
	OK("");
	OK("[{\"caller\": \"a\",\r\n\t\"h\": \"x\"}]\n");
	OK("\"\\\\u0000\"");                /* an escaped backslash, then text */
	OK("\"\\u0001 \\\" \\n \\u00e9\""); /* other escapes */
	OK("\"caf\xC3\xA9 \xEF\xBF\xBD\"");

	BAD("[1,\f2]", 3, "between tokens");
	BAD("[1]\v", 3, "between tokens");
	BAD("[1]\0", 3, "NUL byte");
	BAD("{\"a\0b\": 1}", 3, "inside a string");
	BAD("\"tab\there\"", 4, "inside a string");
	BAD("{\"caller\\u0000x\": 1}", 8, "U+0000");
	BAD("[\"ok\", \"x\\u0000\"]", 9, "U+0000");
	BAD("\"\\\\\\u0000\"", 3, "U+0000"); /* backslash escaped, then a real \u0000 */
	BAD("\"\\\n\"", 2, "inside a string");
	BAD("\"a\xC3\"", 2, "UTF-8");
	BAD("\"\xED\xA0\x80\"", 1, "UTF-8");
	CHECK_DONE();
}
