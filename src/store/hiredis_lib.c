/*
 * hiredis_lib.c - libhiredis loaded on first use (hiredis_lib.h).
 *
 * One pthread_once loads libhiredis.so.0.14 and every function the store
 * uses into one table (dl_table.c: all or none, a library missing one
 * counts as absent). The wrappers call through the
 * table. As curl_lib.c does for libcurl: linked, the library and its
 * relocations were resident in every replica, most of which keep their
 * state in a directory.
 *
 * What it does not do: speak to Redis (redis_conn.c), or unload the
 * library.
 */
#include "hiredis_lib.h"

#include <pthread.h>

#include "dl_table.h"

/* The library's soname: the ABI of the headers the server was built with
 * (hiredis.h's HIREDIS_SONAME, 0.14 for Debian's libhiredis0.14). */
#define STR_(x) #x
#define STR(x) STR_(x)
#define MCPX_HIREDIS_SONAME "libhiredis.so." STR(HIREDIS_SONAME)

/* X(name, return type, parameters) for every function looked up. */
#define HIREDIS_FUNCTIONS(X)                                                                       \
	X(redisAsyncConnect, redisAsyncContext *, (const char *, int))                             \
	X(redisAsyncFree, void, (redisAsyncContext *))                                             \
	X(redisAsyncSetConnectCallback, int, (redisAsyncContext *, redisConnectCallback *))        \
	X(redisAsyncHandleRead, void, (redisAsyncContext *))                                       \
	X(redisAsyncHandleWrite, void, (redisAsyncContext *))                                      \
	X(redisAsyncCommandArgv, int,                                                              \
	  (redisAsyncContext *, redisCallbackFn *, void *, int, const char **, const size_t *))

#define FIELD(name, ret, params) ret(*f_##name) params;
static struct {
	HIREDIS_FUNCTIONS(FIELD)
} fn;
#undef FIELD

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool loaded;

static void load(void)
{
#define NAME(name, ret, params) #name,
#define SLOT(name, ret, params) (void **)&fn.f_##name,
	static const char *const names[] = {HIREDIS_FUNCTIONS(NAME)};
	void **const slots[] = {HIREDIS_FUNCTIONS(SLOT)};
#undef NAME
#undef SLOT

	loaded = mcpx_dl_table_load(MCPX_HIREDIS_SONAME, names, slots,
	                            sizeof(names) / sizeof(names[0]),
	                            "a redis:// store cannot work");
}

bool mcpx_hiredis_available(void)
{
	(void)pthread_once(&once, load);
	return loaded;
}

bool mcpx_hiredis_loaded(void)
{
	return loaded;
}

redisAsyncContext *mcpx_redisAsyncConnect(const char *ip, int port)
{
	return fn.f_redisAsyncConnect(ip, port);
}

void mcpx_redisAsyncFree(redisAsyncContext *ac)
{
	fn.f_redisAsyncFree(ac);
}

int mcpx_redisAsyncSetConnectCallback(redisAsyncContext *ac, redisConnectCallback *cb)
{
	return fn.f_redisAsyncSetConnectCallback(ac, cb);
}

void mcpx_redisAsyncHandleRead(redisAsyncContext *ac)
{
	fn.f_redisAsyncHandleRead(ac);
}

void mcpx_redisAsyncHandleWrite(redisAsyncContext *ac)
{
	fn.f_redisAsyncHandleWrite(ac);
}

int mcpx_redisAsyncCommandArgv(redisAsyncContext *ac, redisCallbackFn *cb, void *privdata,
                               int argc, const char **argv, const size_t *argvlen)
{
	return fn.f_redisAsyncCommandArgv(ac, cb, privdata, argc, argv, argvlen);
}
