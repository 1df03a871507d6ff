/*
 * workspace_resources.c - a caller's workspaces as MCP resources
 * (workspace_resources.h).
 *
 * resources/list is one store listing of the caller's workspaces (no
 * archive is read: a listing of 32 workspaces of 64 MiB must not read
 * 2 GiB); resources/read loads one archive, checks it as a restore would
 * (workspace_pack.h) and answers its listing or one file. Every store key
 * is the asking caller's, so nothing here can name another caller's
 * workspace. A uri is parsed strictly: the scheme, a name that exec would
 * accept, and a path an input file could have once percent-decoded;
 * anything else is "not found" with the reason.
 */
#include "workspace_resources.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "exec_args.h"
#include "jsonrpc.h"
#include "policy.h"
#include "runfiles.h"
#include "store.h"
#include "workspace_pack.h"

#define SCHEME "workspace://"
#define SCHEME_LEN (sizeof(SCHEME) - 1)
/* A uri: the scheme, a name, '/', a path of up to 1024 bytes, each byte
 * possibly %XX. */
#define URI_MAX (SCHEME_LEN + MCPX_EXEC_WORKSPACE_NAME_MAX + 1 + 3 * MCPX_RUNFILES_PATH_MAX + 1)

struct mcpx_workspace_resources {
	struct mcpx_resource_provider p;
	struct mcpx_store *store;
	const struct mcpx_policy_store *policy;
	size_t max_read;
};

/* One list or read in flight. */
struct wr_req {
	struct mcpx_workspace_resources *wr;
	struct mcpx_call *call;
	struct mcpx_store_op *op;
	char name[MCPX_EXEC_WORKSPACE_NAME_MAX + 1];
	char path[MCPX_RUNFILES_PATH_MAX + 1]; /* "" for the listing */
	char uri[URI_MAX];
};

static bool off_for(const struct mcpx_workspace_resources *wr, const char *caller)
{
	const struct mcpx_profile *pr =
	    mcpx_policy_profile_for(mcpx_policy_store_current(wr->policy), caller);

	return pr && pr->workspaces.off;
}

static bool unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~' || c == '/';
}

bool mcpx_workspace_uri(const char *name, const char *path, char *out, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	int head = snprintf(out, n, SCHEME "%s/", name);
	size_t o;

	if (head < 0 || (size_t)head >= n)
		return false;
	o = (size_t)head;
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if (o + 4 > n)
			return false;
		if (unreserved(*p)) {
			out[o++] = (char)*p;
		} else {
			out[o++] = '%';
			out[o++] = hex[*p >> 4];
			out[o++] = hex[*p & 0xF];
		}
	}
	out[o] = '\0';
	return true;
}

static int unhex(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
	                              : -1;
}

/* uri into q->name and q->path; a reason in msg when it names nothing. */
static int parse_uri(struct wr_req *q, const char *uri, char *msg, size_t msglen)
{
	const char *name = uri + SCHEME_LEN, *slash;
	size_t o = 0, n;
	struct mcpx_err err;

	if (strncmp(uri, SCHEME, SCHEME_LEN) != 0 || !(slash = strchr(name, '/')) ||
	    (n = (size_t)(slash - name)) == 0 || n > MCPX_EXEC_WORKSPACE_NAME_MAX) {
		snprintf(msg, msglen, "not a workspace uri (workspace://<name>/<path>)");
		return -EINVAL;
	}
	memcpy(q->name, name, n);
	q->name[n] = '\0';
	for (size_t i = 0; i < n; i++) {
		char c = q->name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      (i && (c == '_' || c == '.' || c == '-')))) {
			snprintf(msg, msglen, "not a workspace name (%s)",
			         MCPX_EXEC_WORKSPACE_PATTERN);
			return -EINVAL;
		}
	}
	for (const char *p = slash + 1; *p; p++) {
		int hi, lo;

		if (o >= MCPX_RUNFILES_PATH_MAX) {
			snprintf(msg, msglen, "the path is too long");
			return -EINVAL;
		}
		if (*p == '%' && (hi = unhex(p[1])) >= 0 && (lo = unhex(p[2])) >= 0) {
			q->path[o++] = (char)(hi << 4 | lo);
			p += 2;
		} else {
			q->path[o++] = *p;
		}
	}
	q->path[o] = '\0';
	if (o && mcpx_runfiles_check_path(q->path, o, &err) < 0) {
		snprintf(msg, msglen, "not a file's path: %.150s", err.msg);
		return -EINVAL;
	}
	snprintf(q->uri, sizeof(q->uri), "%s", uri);
	return 0;
}

/* ---- resources/list ------------------------------------------------------ */

static cJSON *listed(const struct mcpx_store_entry *e)
{
	cJSON *r = cJSON_CreateObject();
	char uri[URI_MAX], desc[320];

	mcpx_workspace_uri(e->name, "", uri, sizeof(uri));
	snprintf(desc, sizeof(desc),
	         "workspace %s: its files and variables (read for the listing); expires %lld "
	         "s after its last use",
	         e->name, (long long)((e->expires_ms - e->last_used_ms) / 1000));
	if (!r || !cJSON_AddStringToObject(r, "uri", uri) ||
	    !cJSON_AddStringToObject(r, "name", e->name) ||
	    !cJSON_AddStringToObject(r, "description", desc) ||
	    !cJSON_AddStringToObject(r, "mimeType", "application/json") ||
	    !cJSON_AddNumberToObject(r, "size", (double)e->bytes)) {
		cJSON_Delete(r);
		return NULL;
	}
	return r;
}

static void listed_cb(void *arg, struct mcpx_store_result *res)
{
	struct wr_req *q = arg;
	cJSON *out = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(out, "resources");
	bool off = off_for(q->wr, mcpx_call_caller(q->call));

	mcpx_call_set_data(q->call, NULL);
	if (res->rc < 0 && res->rc != -ENOENT) {
		cJSON_Delete(out);
		mcpx_call_error(q->call, MCPX_RPC_INTERNAL_ERROR,
		                res->error ? res->error : "the workspaces' store failed");
		free(q);
		return;
	}
	for (size_t i = 0; arr && !off && res->rc == 0 && i < res->n_entries; i++) {
		cJSON *r = listed(&res->entries[i]);
		if (!r || !cJSON_AddItemToArray(arr, r)) {
			cJSON_Delete(r);
			arr = NULL;
		}
	}
	if (!arr) {
		cJSON_Delete(out);
		out = NULL;
	}
	mcpx_call_finish(q->call, out);
	free(q);
}

static void wr_list(void *ctx, struct mcpx_call *call, const char *cursor)
{
	struct mcpx_workspace_resources *wr = ctx;
	struct mcpx_store_key k = {mcpx_call_caller(call), MCPX_STORE_KIND_WORKSPACE, NULL};
	struct wr_req *q = calloc(1, sizeof(*q));
	int rc;

	(void)cursor;
	if (!q) {
		mcpx_call_finish(call, NULL);
		return;
	}
	q->wr = wr;
	q->call = call;
	mcpx_call_set_data(call, q);
	rc = mcpx_store_list(wr->store, &k, MCPX_STORE_LIST_BLOBS, listed_cb, q, &q->op);
	if (rc < 0) {
		mcpx_call_set_data(call, NULL);
		mcpx_call_error(call, MCPX_RPC_INTERNAL_ERROR,
		                "the workspaces could not be listed");
		free(q);
	}
}

/* ---- resources/read ------------------------------------------------------ */

struct listing {
	cJSON *vars;
};

static void add_var(void *arg, bool kept, const char *name, size_t len)
{
	struct listing *l = arg;
	char buf[MCPX_WSPACK_NAME_MAX + 1];

	if (!kept)
		return;
	memcpy(buf, name, len);
	buf[len] = '\0';
	cJSON_AddItemToArray(l->vars, cJSON_CreateString(buf));
}

/* The workspace's listing as one JSON text. */
static char *listing_text(const struct wr_req *q, const struct mcpx_wspack *ws)
{
	cJSON *o = cJSON_CreateObject(), *files = cJSON_AddArrayToObject(o, "files");
	struct listing l = {cJSON_AddArrayToObject(o, "variables")};
	char uri[URI_MAX], *text = NULL;

	cJSON_AddStringToObject(o, "name", q->name);
	cJSON_AddNumberToObject(o, "bytes", (double)(ws->file_bytes + ws->vars_len));
	for (size_t i = 0; files && i < ws->n; i++) {
		cJSON *f = cJSON_CreateObject();
		mcpx_workspace_uri(q->name, ws->files[i].path, uri, sizeof(uri));
		if (!f || !cJSON_AddItemToArray(files, f)) {
			cJSON_Delete(f);
			files = NULL;
			break;
		}
		cJSON_AddStringToObject(f, "path", ws->files[i].path);
		cJSON_AddNumberToObject(f, "bytes", (double)ws->files[i].len);
		cJSON_AddStringToObject(f, "uri", uri);
	}
	if (l.vars)
		mcpx_wspack_names(ws->names, ws->names_len, add_var, &l);
	if (files && l.vars)
		text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return text;
}

/* One resource content block: text when the bytes are text, else base64. */
static cJSON *contents(const char *uri, const char *mime, const char *data, size_t len, bool text)
{
	cJSON *c = cJSON_CreateObject();
	char *b64 = NULL;
	bool ok = c && cJSON_AddStringToObject(c, "uri", uri) &&
	          cJSON_AddStringToObject(c, "mimeType", mime);

	if (ok && text) {
		char *copy = malloc(len + 1);
		ok = copy != NULL;
		if (ok) {
			memcpy(copy, data, len);
			copy[len] = '\0';
			ok = cJSON_AddStringToObject(c, "text", copy) != NULL;
		}
		free(copy);
	} else if (ok) {
		b64 = malloc(mcpx_base64_encoded_len(len) + 1);
		ok = b64 != NULL;
		if (ok) {
			b64[mcpx_base64_encode(data, len, b64)] = '\0';
			ok = cJSON_AddStringToObject(c, "blob", b64) != NULL;
		}
	}
	free(b64);
	if (!ok) {
		cJSON_Delete(c);
		return NULL;
	}
	return c;
}

/* The answer to a read of q from the parsed archive, or an error sent. */
static void answer_read(struct wr_req *q, const struct mcpx_wspack *ws)
{
	const struct mcpx_wspack_file *f = NULL;
	enum mcpx_runfile_kind kind;
	cJSON *res = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(res, "contents"), *c;
	char msg[400], *text;
	const char *mime;

	if (!q->path[0]) {
		text = listing_text(q, ws);
		c = text ? contents(q->uri, "application/json", text, strlen(text), true) : NULL;
		free(text);
	} else {
		for (size_t i = 0; i < ws->n && !f; i++)
			if (strcmp(ws->files[i].path, q->path) == 0)
				f = &ws->files[i];
		if (!f) {
			cJSON_Delete(res);
			snprintf(msg, sizeof(msg),
			         "Resource not found: workspace %s has no file %.180s", q->name,
			         q->path);
			mcpx_call_error(q->call, MCPX_RPC_RESOURCE_NOT_FOUND, msg);
			return;
		}
		if (f->len > q->wr->max_read) {
			cJSON_Delete(res);
			snprintf(
			    msg, sizeof(msg),
			    "the file is %zu bytes, more than a read returns (%zu, "
			    "MCP_EXEC_MAX_FILES_OUT_BYTES): read it from code in the workspace",
			    f->len, q->wr->max_read);
			mcpx_call_error(q->call, MCPX_RPC_INVALID_PARAMS, msg);
			return;
		}
		mime = mcpx_runfiles_sniff(f->data, f->len, q->path, &kind);
		c = contents(q->uri, mime, f->data, f->len, kind == MCPX_RUNFILE_TEXT);
	}
	if (!arr || !c || !cJSON_AddItemToArray(arr, c)) {
		cJSON_Delete(c);
		cJSON_Delete(res);
		res = NULL;
	}
	mcpx_call_finish(q->call, res);
}

static void loaded_cb(void *arg, struct mcpx_store_result *res)
{
	struct wr_req *q = arg;
	struct mcpx_wspack_caps caps = {(size_t)1 << 40, MCPX_WSPACK_FILES_MAX};
	struct mcpx_wspack ws;
	struct mcpx_err err = {{0}};
	char msg[256];

	mcpx_call_set_data(q->call, NULL);
	if (res->rc == -ENOENT || (res->rc == 0 && off_for(q->wr, mcpx_call_caller(q->call)))) {
		snprintf(msg, sizeof(msg), "Resource not found: no workspace %s", q->name);
		mcpx_call_error(q->call, MCPX_RPC_RESOURCE_NOT_FOUND, msg);
	} else if (res->rc < 0) {
		mcpx_call_error(q->call, MCPX_RPC_INTERNAL_ERROR,
		                res->error ? res->error : "the workspaces' store failed");
	} else if (mcpx_wspack_parse(res->data, res->len, &caps, &ws, &err) < 0) {
		snprintf(msg, sizeof(msg), "workspace %s cannot be read: %.160s", q->name, err.msg);
		mcpx_call_error(q->call, MCPX_RPC_INTERNAL_ERROR, msg);
	} else {
		answer_read(q, &ws);
		mcpx_wspack_free(&ws);
	}
	free(q);
}

static void wr_read(void *ctx, struct mcpx_call *call, const char *uri)
{
	struct mcpx_workspace_resources *wr = ctx;
	struct wr_req *q = calloc(1, sizeof(*q));
	struct mcpx_store_key k = {mcpx_call_caller(call), MCPX_STORE_KIND_WORKSPACE, NULL};
	char msg[320], why[200];
	int rc;

	if (!q) {
		mcpx_call_finish(call, NULL);
		return;
	}
	q->wr = wr;
	q->call = call;
	if (parse_uri(q, uri, why, sizeof(why)) < 0) {
		snprintf(msg, sizeof(msg), "Resource not found: %s", why);
		mcpx_call_error(call, MCPX_RPC_RESOURCE_NOT_FOUND, msg);
		free(q);
		return;
	}
	k.name = q->name;
	mcpx_call_set_data(call, q);
	rc = mcpx_store_get(wr->store, &k, false, loaded_cb, q, &q->op);
	if (rc < 0) {
		mcpx_call_set_data(call, NULL);
		mcpx_call_error(call, MCPX_RPC_INTERNAL_ERROR, "the workspace could not be read");
		free(q);
	}
}

/* ---- templates, cancel, life ------------------------------------------- */

static cJSON *wr_templates(void *ctx)
{
	cJSON *t = cJSON_CreateObject(), *arr;

	(void)ctx;
	if (!t || !cJSON_AddStringToObject(t, "uriTemplate", SCHEME "{name}/{+path}") ||
	    !cJSON_AddStringToObject(t, "name", "workspace-file") ||
	    !cJSON_AddStringToObject(
	        t, "description",
	        "a file of one of your workspaces (exec's workspace argument); "
	        "with an empty path, the workspace's listing")) {
		cJSON_Delete(t);
		return NULL;
	}
	arr = cJSON_CreateArray();
	if (!arr || !cJSON_AddItemToArray(arr, t)) {
		cJSON_Delete(t);
		cJSON_Delete(arr);
		return NULL;
	}
	return arr;
}

static void wr_cancel(void *ctx, struct mcpx_call *call)
{
	struct wr_req *q = mcpx_call_data(call);

	(void)ctx;
	if (!q)
		return;
	if (q->op)
		mcpx_store_cancel(q->op);
	mcpx_call_set_data(call, NULL);
	free(q);
}

struct mcpx_workspace_resources *
mcpx_workspace_resources_new(struct mcpx_store *store, const struct mcpx_policy_store *policy,
                             size_t max_read_bytes)
{
	struct mcpx_workspace_resources *wr = calloc(1, sizeof(*wr));

	if (!wr)
		return NULL;
	wr->store = store;
	wr->policy = policy;
	wr->max_read = max_read_bytes;
	wr->p = (struct mcpx_resource_provider){.list = wr_list,
	                                        .read = wr_read,
	                                        .templates = wr_templates,
	                                        .cancel = wr_cancel,
	                                        .ctx = wr};
	return wr;
}

const struct mcpx_resource_provider *
mcpx_workspace_resources_provider(struct mcpx_workspace_resources *wr)
{
	return wr ? &wr->p : NULL;
}

void mcpx_workspace_resources_free(struct mcpx_workspace_resources *wr)
{
	free(wr);
}
