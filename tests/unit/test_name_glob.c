/*
 * test_name_glob.c - the policy's glob syntax (name_glob.h): what each
 * token matches, exact and case-folded, and every pattern the checker
 * refuses (and the matcher then reports as an error, never a verdict).
 */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "name_glob.h"

#define M(p, s) CHECK_INT(mcpx_glob_match(p, s, 0), 1)
#define NM(p, s) CHECK_INT(mcpx_glob_match(p, s, 0), 0)
#define MF(p, s) CHECK_INT(mcpx_glob_match(p, s, MCPX_GLOB_CASEFOLD), 1)
#define NMF(p, s) CHECK_INT(mcpx_glob_match(p, s, MCPX_GLOB_CASEFOLD), 0)

static void refused(const char *p, const char *says, int line)
{
	char why[200] = "";

	if (mcpx_glob_check(p, why, sizeof(why)) != -EINVAL || !strstr(why, says) ||
	    mcpx_glob_match(p, "anything", 0) != -EINVAL ||
	    mcpx_glob_match(p, "anything", MCPX_GLOB_CASEFOLD) != -EINVAL) {
		fprintf(stderr, "test_name_glob.c:%d: \"%s\" not refused as \"%s\" (got \"%s\")\n",
		        line, p, says, why);
		check_failures++;
	}
}

#define REFUSED(p, says) refused(p, says, __LINE__)

int main(void)
{
	/* Literals and the wildcards. */
	M("get_issue", "get_issue");
	NM("get_issue", "get_issues");
	NM("get_issue", "get_issu");
	M("*", "");
	M("*", "anything:at/all.here");
	M("list_*", "list_");
	M("list_*", "list_issues");
	NM("list_*", "lis");
	M("*_admin", "secret_admin");
	M("a*b*c", "aXbYbZc");
	NM("a*b*c", "aXbYbZ");
	M("system:serviceaccount:agents:*", "system:serviceaccount:agents:billing");
	M("??", "ab");
	NM("??", "abc");
	M("?", "\xC3\xA9"); /* one character, two bytes */
	NM("??", "\xC3\xA9");
	M("x*", "x\xF0\x9F\x98\x80y");
	/* Sets. */
	M("[abc]x", "bx");
	NM("[abc]x", "dx");
	M("v[0-9]", "v7");
	NM("v[0-9]", "va");
	M("[!a-z]", "Q");
	M("[^a-z]", "\xC3\xA9"); /* a non-ASCII character is outside any set */
	NM("[a-z]", "\xC3\xA9");
	M("[]a]", "]");
	M("[a-]", "-");
	M("[-a]", "-");
	M("[\\]]", "]");
	M("[a\\-z]", "-");
	NM("[a\\-z]", "m");
	/* Escapes. */
	M("\\*", "*");
	NM("\\*", "x");
	M("a\\?", "a?");
	NM("a\\?", "ab");
	M("\\\\", "\\");
	/* Case: exact by default, folded on request (ASCII letters). */
	NM("secret_*", "SECRET_ADMIN");
	MF("secret_*", "SECRET_ADMIN");
	MF("secret_*", "Secret_admin");
	MF("SECRET_[a-z]*", "secret_Xyz");
	MF("[A-C]x", "bX");
	NMF("secret_*", "secre_admin");
	MF("*", "");
	/* Refused at load; the matcher answers -EINVAL, never a verdict. */
	REFUSED("", "empty");
	REFUSED("secret\\", "lone backslash");
	REFUSED("sec[ret", "not closed");
	REFUSED("x[]", "not closed");
	REFUSED("x[!]", "not closed");
	REFUSED("x[a\\", "lone backslash");
	REFUSED("[z-a]", "range");
	REFUSED("[[:alpha:]]", "[:alpha:]");
	REFUSED("two words", "printable ASCII");
	REFUSED("caf\xC3\xA9", "printable ASCII");
	REFUSED("tab\there", "printable ASCII");
	CHECK_DONE();
}
