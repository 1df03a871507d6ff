/*
 * langset.c - language names and the MCP_EXEC_LANGUAGES syntax.
 *
 * What it does: maps names to enum mcpx_lang and checks the setting. What it
 * does not do: look for runtimes (the sandbox's language.c does that once at
 * start-up).
 */
#include "langset.h"

#include <errno.h>
#include <string.h>

static const char *const names[MCPX_LANG_COUNT] = {
    [MCPX_LANG_PYTHON] = "python",
    [MCPX_LANG_BASH] = "bash",
    [MCPX_LANG_JAVASCRIPT] = "javascript",
};

const char *mcpx_lang_name(enum mcpx_lang l)
{
	return (unsigned)l < MCPX_LANG_COUNT ? names[l] : "?";
}

int mcpx_lang_from_name(const char *name, size_t len)
{
	for (int i = 0; i < MCPX_LANG_COUNT; i++)
		if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0)
			return i;
	return -1;
}

int mcpx_langset_parse(const char *setting, unsigned *mask, bool *explicit_list,
                       struct mcpx_err *err)
{
	const char *p = setting, *end;

	*mask = 0;
	*explicit_list = false;
	if (strcmp(setting, MCPX_LANGS_AUTO) == 0) {
		*mask = (1u << MCPX_LANG_COUNT) - 1;
		return 0;
	}
	for (;;) {
		int l;

		end = strchr(p, ',');
		if (!end)
			end = p + strlen(p);
		l = mcpx_lang_from_name(p, (size_t)(end - p));
		if (l < 0)
			return mcpx_err_set(
			    err, EINVAL,
			    "MCP_EXEC_LANGUAGES: \"%.*s\" is not a language (auto, or a "
			    "comma-separated list of python, bash, javascript)",
			    (int)(end - p), p);
		*mask |= 1u << l;
		if (!*end)
			break;
		p = end + 1;
	}
	/* A call without `language` runs Python (the Go contract), so the
	 * default language cannot be left out. */
	if (!(*mask & (1u << MCPX_LANG_PYTHON)))
		return mcpx_err_set(
		    err, EINVAL,
		    "MCP_EXEC_LANGUAGES: must include python, the language of a call "
		    "that names none");
	*explicit_list = true;
	return 0;
}
