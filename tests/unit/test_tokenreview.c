/*
 * test_tokenreview.c - what is worth a TokenReview: a JWT in compact form
 * (three non-empty base64url parts, header and payload JSON objects,
 * within MCPX_TOKENREVIEW_TOKEN_MAX); anything else is never sent.
 */
#include <string.h>

#include "check.h"
#include "tokenreview.h"

#define SHAPED(s) mcpx_tokenreview_shaped(s, strlen(s))

int main(void)
{
	static char big[MCPX_TOKENREVIEW_TOKEN_MAX + 64];

	CHECK(SHAPED("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln"));
	CHECK(SHAPED("e30.e30.AA"));   /* {} {} and a signature */
	CHECK(SHAPED("e30.e30.-_-_")); /* base64url's own characters */
	CHECK(!SHAPED(""));
	CHECK(!SHAPED("not-a-jwt"));
	CHECK(!SHAPED("e30.e30"));           /* two parts */
	CHECK(!SHAPED("e30.e30.AA.AA"));     /* four (a JWE has five) */
	CHECK(!SHAPED("e30.e30."));          /* no signature */
	CHECK(!SHAPED(".e30.AA"));           /* no header */
	CHECK(!SHAPED("e30.e30.a+b"));       /* the standard alphabet */
	CHECK(!SHAPED("e30.e30.AA=="));      /* padding */
	CHECK(!SHAPED("e30.e30.A"));         /* cannot be base64 */
	CHECK(!SHAPED("bm90anNvbg.e30.AA")); /* header "notjson" */
	CHECK(!SHAPED("e30.WzFd.AA"));       /* payload [1]: not an object */
	CHECK(!mcpx_tokenreview_shaped("e30.e30.AA\0", 11));
	/* The size cap: a shaped value of MCPX_TOKENREVIEW_TOKEN_MAX bytes is
	 * reviewed, four more (still shaped) are not. */
	memcpy(big, "e30.e30.", 8);
	memset(big + 8, 'A', sizeof(big) - 8);
	CHECK(mcpx_tokenreview_shaped(big, MCPX_TOKENREVIEW_TOKEN_MAX));
	CHECK(!mcpx_tokenreview_shaped(big, MCPX_TOKENREVIEW_TOKEN_MAX + 4));
	CHECK_DONE();
}
