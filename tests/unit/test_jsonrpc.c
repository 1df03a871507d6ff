/*
 * test_jsonrpc.c - the printer's promises (jsonrpc.h): a parsed U+0000
 * goes out as \u0000, and whatever a string holds, what is printed is
 * valid UTF-8, a string that was not repaired with U+FFFD and counted.
 */
#include <string.h>

#include "buf.h"
#include "check.h"
#include "jsonrpc.h"
#include "utf8.h"

int main(void)
{
	struct mcpx_buf b;
	const char *why, *in = "{\"id\":\"a\\u0000b\",\"t\":\"caf\xC3\xA9\"}";
	cJSON *v = mcpx_jsonrpc_parse(in, strlen(in), &why), *bad;
	unsigned long before = mcpx_jsonrpc_repairs();

	mcpx_buf_init(&b, 1 << 20);
	CHECK_INT(mcpx_jsonrpc_print(v, &b), 0);
	CHECK_STR(mcpx_buf_str(&b), in);
	CHECK_INT(mcpx_jsonrpc_repairs(), before);
	/* A string cut inside a character, and a lone continuation byte. */
	bad = cJSON_CreateObject();
	cJSON_AddStringToObject(bad, "text", "cut \xC3");
	cJSON_AddStringToObject(bad, "more", "x\x80y");
	mcpx_buf_reset(&b);
	CHECK_INT(mcpx_buf_adds(&b, "prefix "), 0);
	CHECK_INT(mcpx_jsonrpc_print(bad, &b), 0);
	CHECK_STR(mcpx_buf_str(&b),
	          "prefix {\"text\":\"cut \xEF\xBF\xBD\",\"more\":\"x\xEF\xBF\xBDy\"}");
	CHECK(mcpx_utf8_valid(b.data, b.len));
	CHECK_INT(mcpx_jsonrpc_repairs(), before + 1);
	cJSON_Delete(bad);
	cJSON_Delete(v);
	mcpx_buf_free(&b);
	CHECK_DONE();
}
