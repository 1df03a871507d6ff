/*
 * runner.c - assembles the Python program around a run's code (runner.h)
 * from the sources embedded at build time (pysrc.h).
 *
 * The support modules travel as bytes literals, so their text needs no
 * decoding step and any byte survives: everything outside printable ASCII,
 * and the quote and backslash, is written as a \xNN escape.
 */
#include "runner.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pysrc.h"

#define RUNNER_MAX (120u * 1024u) /* below one argv string's limit (128 KiB) */

static int append_bytes_literal(struct mcpx_buf *b, const char *p, size_t n)
{
	int rc = mcpx_buf_adds(b, "b'");

	for (size_t i = 0; rc == 0 && i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		if (c == '\n')
			rc = mcpx_buf_adds(b, "\\n");
		else if (c < 0x20 || c > 0x7e || c == '\'' || c == '\\')
			rc = mcpx_buf_addf(b, "\\x%02x", c);
		else
			rc = mcpx_buf_add(b, p + i, 1);
	}
	return rc ? rc : mcpx_buf_adds(b, "'");
}

int mcpx_runner_append(struct mcpx_buf *b)
{
	const struct mcpx_pysrc *runner = NULL;
	int rc = 0;

	for (const struct mcpx_pysrc *s = mcpx_pysrc_table; s->name; s++)
		if (strcmp(s->name, "runner") == 0)
			runner = s;
	if (!runner)
		return -ENOENT;
	rc = mcpx_buf_add(b, runner->text, runner->len);
	if (!rc)
		rc = mcpx_buf_adds(b, "\n_mcpx_install({");
	for (const struct mcpx_pysrc *s = mcpx_pysrc_table; !rc && s->name; s++) {
		if (s == runner)
			continue;
		rc = mcpx_buf_addf(b, "'%s': ", s->name);
		if (!rc)
			rc = append_bytes_literal(b, s->text, s->len);
		if (!rc)
			rc = mcpx_buf_adds(b, ", ");
	}
	return rc ? rc : mcpx_buf_adds(b, "})\n");
}

const char *mcpx_runner_cold(void)
{
	static struct mcpx_buf prog = {.max = RUNNER_MAX};
	static const char call[] = "def _mcpx_cold():\n"
	                           "    import os\n"
	                           "    path = os.path.join(os.getcwd(), 'main.py')\n"
	                           "    with open(path, 'rb') as f:\n"
	                           "        src = f.read()\n"
	                           "    ws = os.path.exists('.mcpx/vars.in')\n"
	                           "    _mcpx_run(src, path, ws)\n"
	                           "_mcpx_cold()\n";

	if (prog.len)
		return mcpx_buf_str(&prog);
	if (mcpx_runner_append(&prog) < 0 || mcpx_buf_adds(&prog, call) < 0) {
		mcpx_buf_free(&prog);
		return NULL;
	}
	return mcpx_buf_str(&prog);
}
