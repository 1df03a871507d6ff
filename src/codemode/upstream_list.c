/*
 * upstream_list.c - an upstream's tool list, kept compactly within its caps
 * (upstream_internal.h, struct up_catalog): the bottom of the upstream
 * client's files, calling none of them.
 *
 * A hostile upstream must not make the server big (issue 34 item 3): a
 * list is kept up to the upstream's max_tools tools and max_tools_bytes
 * bytes of their JSON text (the rest is left out; the connection stops
 * listing and says so once), and it is kept as text, each tool's members
 * printed once when the list arrives (json.h: numbers exact), not as cJSON
 * trees, which cost several times their text.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "upstream_internal.h"

/* Bookkeeping per kept tool and member, counted with the text. */
#define TOOL_OVERHEAD 64u

struct up_catalog *mcpx_up_catalog_new(void)
{
	return calloc(1, sizeof(struct up_catalog));
}

static void tool_free(struct up_tool *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->m[i].key);
		free(t->m[i].value);
	}
	free(t->m);
	free(t->name);
}

void mcpx_up_catalog_free(struct up_catalog *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		tool_free(&c->tools[i]);
	free(c->tools);
	free(c);
}

/* A tool's members but its name, as text; its size in *bytes. */
static int tool_text(struct up_tool *t, const cJSON *tool, size_t *bytes)
{
	const cJSON *m;
	size_t n = 0;

	cJSON_ArrayForEach(m, tool) n++;
	if (n && !(t->m = calloc(n, sizeof(*t->m))))
		return -ENOMEM;
	*bytes = TOOL_OVERHEAD + strlen(t->name);
	cJSON_ArrayForEach(m, tool)
	{
		struct up_member *e = &t->m[t->n];

		if (strcmp(m->string, "name") == 0)
			continue;
		if (!(e->key = strdup(m->string)) || !(e->value = mcpx_json_print_exact(m))) {
			free(e->key);
			return -ENOMEM;
		}
		t->n++;
		*bytes += strlen(e->key) + strlen(e->value) + TOOL_OVERHEAD;
	}
	return 0;
}

int mcpx_up_catalog_add(struct up_catalog *c, const cJSON *tool,
                        const struct mcpx_upstream_conf *conf)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(tool, "name");
	struct up_tool t = {0};
	size_t bytes = 0;

	/* A tool without a name, or with one that cannot be called by
	 * "<upstream>.<tool>", is left out. */
	if (!cJSON_IsObject(tool) || !cJSON_IsString(name) || !name->valuestring[0] ||
	    strlen(name->valuestring) > 128)
		return 1;
	if (c->truncated || c->n >= conf->max_tools) {
		c->truncated = true;
		return -E2BIG;
	}
	if (!(t.name = strdup(name->valuestring)) || tool_text(&t, tool, &bytes) < 0) {
		tool_free(&t);
		return -ENOMEM;
	}
	if (c->bytes + bytes > conf->max_tools_bytes) {
		tool_free(&t);
		c->truncated = true;
		return -E2BIG;
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct up_tool *more = realloc(c->tools, cap * sizeof(*more));

		if (!more) {
			tool_free(&t);
			return -ENOMEM;
		}
		c->tools = more;
		c->cap = cap;
	}
	c->tools[c->n++] = t;
	c->bytes += bytes;
	return 0;
}

bool mcpx_up_catalog_has(const struct up_catalog *c, const char *name)
{
	for (size_t i = 0; c && i < c->n; i++)
		if (strcmp(c->tools[i].name, name) == 0)
			return true;
	return false;
}
