/*
 * policy_grant.c - a grant in the policy file: {"egress": [rule names],
 * "upstreams": [names], "max_requests": n, "max_in_flight": n}, the shape
 * of exec's own section and of a profile's exec. The rules and upstreams
 * it names must have been parsed before (their sections come first).
 *
 * It sits above the "upstreams" section's parser (policy_upstreams.c) and
 * below the sections that hold grants (policy_document.c's "exec",
 * policy_profiles.c).
 */
#include <cjson/cJSON.h>

#include "policy.h"
#include "policy_internal.h"

/* {"egress": [names], "upstreams": [names], "max_requests": n,
 * "max_in_flight": n}: exec's grant and a profile's. */
int mcpx_pol_parse_grant(struct policy_ctx *c, const cJSON *v, struct mcpx_egress_grant *g)
{
	static const char *const keys[] = {"egress", "max_requests", "max_in_flight", "upstreams"};
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(v, "upstreams");
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(v, "egress");
	const cJSON *mr = cJSON_GetObjectItemCaseSensitive(v, "max_requests");
	const cJSON *mf = cJSON_GetObjectItemCaseSensitive(v, "max_in_flight");
	double d = 0;
	size_t old;
	int rc;

	g->max_requests = MCPX_EGRESS_MAX_REQUESTS_DEFAULT;
	g->max_in_flight = MCPX_EGRESS_MAX_IN_FLIGHT_DEFAULT;
	if ((rc = mcpx_pol_want_object(c, v)) < 0 || (rc = mcpx_pol_check_keys(c, v, keys, 4)) < 0)
		return rc;
	if (e) {
		old = mcpx_pol_push_key(c, "egress");
		rc = mcpx_pol_grant_rules(c, e, g);
		mcpx_pol_pop(c, old);
	}
	if (!rc && u) {
		old = mcpx_pol_push_key(c, "upstreams");
		rc = mcpx_pol_grant_upstreams(c, u, g);
		mcpx_pol_pop(c, old);
	}
	if (!rc && mr) {
		old = mcpx_pol_push_key(c, "max_requests");
		rc = mcpx_pol_get_uint(c, mr, 1, 100000, &d);
		g->max_requests = (unsigned)d;
		mcpx_pol_pop(c, old);
	}
	if (!rc && mf) {
		old = mcpx_pol_push_key(c, "max_in_flight");
		rc = mcpx_pol_get_uint(c, mf, 1, 64, &d);
		g->max_in_flight = (unsigned)d;
		mcpx_pol_pop(c, old);
	}
	return rc;
}
