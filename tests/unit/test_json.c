/*
 * test_json.c - JSON read strictly and written exactly (json.h): numbers
 * come back with the bytes they came with, computed numbers read back as
 * the same double in the shortest form, U+0000 survives, and what cJSON
 * alone lets through (trailing bytes, control characters, invalid UTF-8,
 * numbers outside RFC 8259's grammar) is refused.
 */
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* text parsed and printed again. */
static char *round_trip(const char *text)
{
	cJSON *v = NULL;
	char *out;

	if (mcpx_json_parse(text, strlen(text), &v) < 0)
		return NULL;
	out = mcpx_json_print_exact(v);
	cJSON_Delete(v);
	return out;
}

/* Values the issue names travel unchanged, byte for byte, alone and inside
 * containers, and through cJSON_Duplicate and a detach. */
static void test_relayed_exactly(void)
{
	static const char *const texts[] = {
	    "0.30000000000000004",
	    "9007199254740991",
	    "9007199254740993",
	    "18446744073709551617",
	    "1.7976931348623157e308",
	    "1.7976931348623157e+308",
	    "-0.0",
	    "-0",
	    "4.9406564584124654e-324",
	    "5e-324",
	    "2.2250738585072014e-308",
	    "1.0",
	    "1E5",
	    "1e400",
	    "123456789012345678901234567890",
	    "[0.1,-0.0,9007199254740993,{\"a\":[1.50,2e-7]}]",
	    "{\"big\":18446744073709551617,\"s\":\"-1.0 \\\" 2.0\",\"x\":1.7976931348623157e308}",
	};

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		char *out = round_trip(texts[i]);
		cJSON *v = NULL, *wrap = cJSON_CreateArray();

		CHECK_STR(out, texts[i]);
		free(out);
		/* A copy keeps the text, and so does a value moved into a new
		 * tree. */
		CHECK_INT(mcpx_json_parse(texts[i], strlen(texts[i]), &v), 0);
		cJSON_AddItemToArray(wrap, cJSON_Duplicate(v, true));
		out = mcpx_json_print_exact(cJSON_GetArrayItem(wrap, 0));
		CHECK_STR(out, texts[i]);
		free(out);
		cJSON_Delete(v);
		cJSON_Delete(wrap);
	}
}

/* What cJSON_PrintUnformatted gets wrong (issue 34 item 1) prints right
 * from the double alone. */
static void test_computed_numbers(void)
{
	static const struct {
		double d;
		const char *text;
	} cases[] = {
	    {0.30000000000000004, "0.30000000000000004"},
	    {0.1 + 0.2, "0.30000000000000004"},
	    {0.3, "0.3"},
	    {9007199254740991.0, "9007199254740991"},
	    {9007199254740992.0, "9007199254740992"},
	    {1.7976931348623157e308, "1.7976931348623157e+308"},
	    {-0.0, "-0"},
	    {0.0, "0"},
	    {5e-324, "5e-324"},
	    {2.2250738585072014e-308, "2.2250738585072014e-308"},
	    {1e21, "1e+21"},
	    {1e20, "100000000000000000000"},
	    {123456.789, "123456.789"},
	    {0.000001, "0.000001"},
	    {1e-7, "1e-7"},
	    {-1.5, "-1.5"},
	    {100000, "100000"},
	    {18446744073709551616.0, "18446744073709552000"},
	};
	char buf[MCPX_JSON_NUMBER_MAX];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = mcpx_json_number(cases[i].d, buf);

		CHECK_STR(buf, cases[i].text);
		CHECK_INT(n, strlen(cases[i].text));
	}
	CHECK_STR((mcpx_json_number(NAN, buf), buf), "null");
	CHECK_STR((mcpx_json_number(-INFINITY, buf), buf), "null");
}

/* Every double in a sweep of bit patterns reads back as itself, bit for
 * bit, from what mcpx_json_number writes. */
static void test_number_reads_back(void)
{
	char buf[MCPX_JSON_NUMBER_MAX];
	uint64_t x = 0x9E3779B97F4A7C15u;
	unsigned bad = 0;

	for (int i = 0; i < 200000; i++) {
		double d, back;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		memcpy(&d, &x, sizeof(d));
		if (!isfinite(d))
			continue;
		mcpx_json_number(d, buf);
		back = strtod(buf, NULL);
		bad += memcmp(&back, &d, sizeof(d)) != 0;
	}
	CHECK_INT(bad, 0);
}

/* A number the server changed prints from its new value, not from the
 * text it came with. */
static void test_changed_number(void)
{
	cJSON *v = NULL;
	char *out;

	CHECK_INT(mcpx_json_parse("1.50", 4, &v), 0);
	cJSON_SetNumberValue(v, 2.25);
	out = mcpx_json_print_exact(v);
	CHECK_STR(out, "2.25");
	free(out);
	cJSON_Delete(v);
}

static void test_refused(void)
{
	static const struct {
		const char *text;
		size_t len;
		int rc;
	} cases[] = {
	    {"{} x", 4, -EINVAL},     {"1 2", 3, -EINVAL},        {"[1]]", 4, -EINVAL},
	    {"01", 2, -EINVAL},       {"[1.]", 4, -EINVAL},       {"[1.e5]", 6, -EINVAL},
	    {"-", 1, -EINVAL},        {"\"a\x01\"", 4, -EBADMSG}, {"\"\xff\"", 3, -EILSEQ},
	    {"\"\xc3\"", 3, -EILSEQ}, {"", 0, -EINVAL},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *v = (cJSON *)1;

		CHECK_INT(mcpx_json_parse(cases[i].text, cases[i].len, &v), cases[i].rc);
		CHECK(v == NULL);
	}
}

/* The rest prints as cJSON_PrintUnformatted does, \u0000 included. */
static void test_as_cjson(void)
{
	const char *text = "{\"a\":\"x\\u0000y\",\"b\":[true,false,null,\"\\n\\t\\u0001\\\"\\\\\"],"
	                   "\"c\":{},\"d\":[],\"\xc3\xa9\":\"\xe2\x82\xac\"}";
	cJSON *v = NULL, *copy;
	char *out, *theirs;

	CHECK_INT(mcpx_json_parse(text, strlen(text), &v), 0);
	out = mcpx_json_print_exact(v);
	CHECK_STR(out, text);
	free(out);
	/* Without the mark, cJSON's own printer agrees byte for byte. */
	copy = cJSON_Duplicate(v, true);
	cJSON_ReplaceItemInObjectCaseSensitive(copy, "a", cJSON_CreateString("xy"));
	out = mcpx_json_print_exact(copy);
	theirs = cJSON_PrintUnformatted(copy);
	CHECK_STR(out, theirs);
	free(out);
	cJSON_free(theirs);
	cJSON_Delete(copy);
	cJSON_Delete(v);
}

int main(void)
{
	test_relayed_exactly();
	test_computed_numbers();
	test_number_reads_back();
	test_changed_number();
	test_refused();
	test_as_cjson();
	CHECK_DONE();
}
