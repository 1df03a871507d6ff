/*
 * policy_internal.h - what the policy file's parsers share: the parsing
 * context (the JSON pointer of the value in hand, the policy being built,
 * the files read so far), the strict-parsing helpers, the rules about files
 * (where runs could read them, how they are read and watched) and the
 * parser of a list of egress rule names. policy.c holds the helpers and
 * the files; policy_egress.c the "egress" section, credentials and a
 * grant's rule names; policy_functions.c the "functions" section.
 * Not for use outside src/codemode/policy*.c.
 */
#ifndef MCPX_POLICY_INTERNAL_H
#define MCPX_POLICY_INTERNAL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "policy.h"

struct policy_ctx {
	char ptr[512]; /* the JSON pointer of the value being parsed */
	struct mcpx_err *err;
	const struct mcpx_policy_opts *o;
	struct mcpx_policy *p;
	struct mcpx_file_id *files;
	size_t max_files;
	size_t n_files;
};

/* Sets err to "<pointer>: <message>" and returns -e. */
int mcpx_pol_fail(struct policy_ctx *c, int e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Appends "/key" or "/i" to the pointer; mcpx_pol_pop restores the length
 * they return. */
size_t mcpx_pol_push_key(struct policy_ctx *c, const char *key);
size_t mcpx_pol_push_index(struct policy_ctx *c, size_t i);
void mcpx_pol_pop(struct policy_ctx *c, size_t old);

/* Every key of obj is one of keys[0..n), and appears once. */
int mcpx_pol_check_keys(struct policy_ctx *c, const cJSON *obj, const char *const *keys, size_t n);
int mcpx_pol_want_object(struct policy_ctx *c, const cJSON *v);
/* A string of 1..cap-1 bytes copied to buf. */
int mcpx_pol_get_string(struct policy_ctx *c, const cJSON *v, char *buf, size_t cap);
/* An integer in [min, max]. */
int mcpx_pol_get_uint(struct policy_ctx *c, const cJSON *v, double min, double max, double *out);
/* parse(c, item, index, arg) for each item of an array of at most max. */
int mcpx_pol_each_item(struct policy_ctx *c, const cJSON *arr, size_t max,
                       int (*parse)(struct policy_ctx *, const cJSON *, size_t, void *), void *arg);

/* The identity of path as stat() sees it now. */
void mcpx_pol_file_id_stat(const char *path, struct mcpx_file_id *id);
/* Records path among the files the store watches (before it is read). */
void mcpx_pol_watch_file(struct policy_ctx *c, const char *path);
/* True when a run could read path, as named or where its links lead. */
bool mcpx_pol_readable_by_runs(const struct mcpx_policy_opts *o, const char *path);
/* A whole regular file of at most cap bytes, NUL-terminated, in a new
 * buffer: 0, or -EFBIG (too large), -EINVAL (not a regular file), -errno. */
int mcpx_pol_read_file(const char *path, size_t cap, char **out, size_t *len);
/* Words for a mcpx_pol_read_file failure. */
const char *mcpx_pol_file_error(int rc);

/* The "egress" section: the rules into p->rules. */
int mcpx_pol_parse_egress(struct policy_ctx *c, const cJSON *v);
/* A list of egress rule names (of rules parsed before) into g->rules. */
int mcpx_pol_grant_rules(struct policy_ctx *c, const cJSON *v, struct mcpx_egress_grant *g);

/* The "exec" grant's members ({"egress", "upstreams", "max_requests",
 * "max_in_flight"}) into g: exec's own and a profile's (policy_grant.c). */
int mcpx_pol_parse_grant(struct policy_ctx *c, const cJSON *v, struct mcpx_egress_grant *g);

/* The "profiles" section (policy_profiles.c), and what it frees. */
int mcpx_pol_parse_profiles(struct policy_ctx *c, const cJSON *v);
void mcpx_pol_profiles_free(struct mcpx_policy *p);
/* allow_cidrs: a list of ranges into allow[0..*n), at most
 * MCPX_POLICY_MAX_CIDRS. */
int mcpx_pol_parse_cidrs(struct policy_ctx *c, const cJSON *v, struct mcpx_cidr *allow, size_t *n);
/* {header, secret_file, prefix}: checks the fields, refuses a secret file
 * runs could read, and reads the secret into cred->value. */
int mcpx_pol_parse_credential(struct policy_ctx *c, const cJSON *v, struct mcpx_credential *cred);

/* The "upstreams" section (policy_upstreams.c), a list of upstream names
 * into g->upstreams, and what it frees. */
int mcpx_pol_parse_upstreams(struct policy_ctx *c, const cJSON *v);
int mcpx_pol_grant_upstreams(struct policy_ctx *c, const cJSON *v, struct mcpx_egress_grant *g);
void mcpx_pol_upstreams_free(struct mcpx_policy *p);

/* The "functions" section (policy_functions.c), and what it frees. */
int mcpx_pol_parse_functions(struct policy_ctx *c, const cJSON *v);
void mcpx_pol_functions_free(struct mcpx_policy *p);

#endif
