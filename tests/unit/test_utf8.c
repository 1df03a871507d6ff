/*
 * test_utf8.c - mcpx_utf8_valid and mcpx_utf8_sanitize: valid text passes
 * through untouched, and each maximal invalid subpart becomes exactly one
 * U+FFFD (Unicode chapter 3, "U+FFFD Substitution of Maximal Subparts");
 * mcpx_utf8_next decodes one character the same way.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "utf8.h"

#define R "\xEF\xBF\xBD" /* U+FFFD */

/* Sanitizes (in, len) and compares with the expected bytes. */
static void expect(const char *in, size_t len, const char *want, size_t want_len, int line)
{
	size_t n = 12345;
	char *out = mcpx_utf8_sanitize(in, len, &n);

	if (!out || n != want_len || memcmp(out, want, want_len) != 0 || out[n] != '\0') {
		fprintf(stderr, "test_utf8.c:%d: sanitize mismatch (got %zu bytes, want %zu)\n",
		        line, out ? n : 0, want_len);
		check_failures++;
	}
	free(out);
}

#define EXPECT(in, want) expect(in, sizeof(in) - 1, want, sizeof(want) - 1, __LINE__)

int main(void)
{
	/* Valid input, including all sequence lengths, the boundaries of each
	 * range and an embedded U+0000, is reported valid and kept verbatim. */
	CHECK(mcpx_utf8_valid("", 0));
	CHECK(mcpx_utf8_valid("hello\n", 6));
	CHECK(mcpx_utf8_valid("a\0b", 3));
	CHECK(mcpx_utf8_valid("\xC3\xA9\xE2\x82\xAC\xF0\x9D\x84\x9E", 9)); /* é € 𝄞 */
	CHECK(mcpx_utf8_valid("\xC2\x80\xDF\xBF", 4));                     /* U+0080, U+07FF */
	CHECK(
	    mcpx_utf8_valid("\xE0\xA0\x80\xED\x9F\xBF\xEE\x80\x80", 9)); /* U+0800 U+D7FF U+E000 */
	CHECK(mcpx_utf8_valid("\xF0\x90\x80\x80\xF4\x8F\xBF\xBF", 8));   /* U+10000, U+10FFFF */
	EXPECT("plain ascii", "plain ascii");
	EXPECT("a\0b", "a\0b");
	EXPECT("\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80",
	       "\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");

	/* Each kind of ill-formed input is reported invalid. */
	CHECK(!mcpx_utf8_valid("\x80", 1));             /* lone continuation byte */
	CHECK(!mcpx_utf8_valid("\xC0\x80", 2));         /* overlong NUL */
	CHECK(!mcpx_utf8_valid("\xC1\xBF", 2));         /* overlong */
	CHECK(!mcpx_utf8_valid("\xE0\x9F\xBF", 3));     /* overlong 3-byte */
	CHECK(!mcpx_utf8_valid("\xED\xA0\x80", 3));     /* surrogate U+D800 */
	CHECK(!mcpx_utf8_valid("\xF0\x8F\xBF\xBF", 4)); /* overlong 4-byte */
	CHECK(!mcpx_utf8_valid("\xF4\x90\x80\x80", 4)); /* above U+10FFFF */
	CHECK(!mcpx_utf8_valid("\xF5\x80\x80\x80", 4)); /* impossible lead */
	CHECK(!mcpx_utf8_valid("\xFF", 1));
	CHECK(!mcpx_utf8_valid("\xE2\x82", 2)); /* truncated at the end */
	CHECK(!mcpx_utf8_valid("ok\xC3", 3));

	/* Replacement per maximal subpart. A truncated sequence is ONE U+FFFD,
	 * and the byte that broke it is decoded afresh. */
	EXPECT("\xE2\x82", R);
	EXPECT("\xE2\x82"
	       "A",
	       R "A");
	EXPECT("\xF0\x9F\x98"
	       "x",
	       R "x");
	EXPECT("\xC3"
	       "\xC3\xA9",
	       R "\xC3\xA9");
	/* Bytes that can never be in a valid sequence are one U+FFFD each. */
	EXPECT("\xC0\x80", R R);
	EXPECT("\xFF\xFE", R R);
	EXPECT("a\x80\x80z", "a" R R "z");
	/* A lead byte whose second byte is out of its narrowed range forms a
	 * subpart of length one: E0 80 80 is three replacements, not one. */
	EXPECT("\xE0\x80\x80", R R R);
	EXPECT("\xED\xA0\x80", R R R);
	EXPECT("\xF4\x90\x80\x80", R R R R);
	/* The Unicode Standard's own example (table 3-8): 61 F1 80 80 E1 80 C2
	 * 62 80 63 80 BF 64. */
	EXPECT("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64", "a" R R R "b" R "c" R R "d");
	/* Invalid bytes next to NUL: both kept apart correctly. */
	EXPECT("\xFF\0\xFF", R "\0" R);

	/* out_len may be NULL. */
	{
		char *s = mcpx_utf8_sanitize("x\xFF", 2, NULL);
		CHECK_STR(s, "x" R);
		free(s);
	}
	/* mcpx_utf8_next: each length decoded, an ill-formed sequence is one
	 * U+FFFD over its maximal subpart (exec's blank check reads code with
	 * it: a stray 0x85 byte is not NEL, a space). */
	{
		static const struct {
			const char *in;
			size_t len, n;
			uint32_t cp;
		} t[] = {
		    {"A", 1, 1, 'A'},
		    {"\xC2\x85", 2, 2, 0x85},
		    {"\xE3\x80\x80", 3, 3, 0x3000},
		    {"\xF0\x9F\x98\x80", 4, 4, 0x1F600},
		    {"\x85", 1, 1, 0xFFFD},
		    {"\xE3\x80", 2, 2, 0xFFFD},
		    {"\xE0\x80\x80", 3, 1, 0xFFFD},
		    {"\xED\xA0\x80", 3, 1, 0xFFFD},
		    {"\xF4\x90\x80\x80", 4, 1, 0xFFFD},
		};
		for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
			uint32_t cp = 0;
			size_t n = mcpx_utf8_next(t[i].in, t[i].len, &cp);

			CHECK_INT(n, t[i].n);
			CHECK_INT(cp, t[i].cp);
		}
	}
	CHECK_DONE();
}
