/*
 * hiredis_lib.c - libhiredis loaded on first use (hiredis_lib.h).
 *
 * One pthread_once loads libhiredis.so.0.14 with RTLD_NOW | RTLD_LOCAL and
 * looks up every function the store uses into one table, all or none (a
 * library missing one counts as absent). The wrappers call through the
 * table. As curl_lib.c does for libcurl: linked, the library and its
 * relocations were resident in every replica, most of which keep their
 * state in a directory.
 *
 * What it does not do: speak to Redis (redis_conn.c), or unload the
 * library.
 */
#include "hiredis_lib.h"

#include <dlfcn.h>
#include <pthread.h>

#include "log.h"

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
	void *h = dlopen(MCPX_HIREDIS_SONAME, RTLD_NOW | RTLD_LOCAL);
	const char *missing = NULL;

	if (!h) {
		const char *why = dlerror();

		mcpx_warn("libhiredis cannot be loaded (%s): a redis:// store cannot work",
		          why ? why : MCPX_HIREDIS_SONAME);
		return;
	}
	/* dlsym's void * converts to the function pointer (POSIX); stored
	 * through void ** to say so without a cast ISO C warns about. */
#define LOOKUP(name, ret, params)                                                                  \
	if (!missing) {                                                                            \
		void *p = dlsym(h, #name);                                                         \
		if (p)                                                                             \
			*(void **)&fn.f_##name = p;                                                \
		else                                                                               \
			missing = #name;                                                           \
	}
	HIREDIS_FUNCTIONS(LOOKUP)
#undef LOOKUP
	if (missing) {
		mcpx_warn("libhiredis (%s) has no %s: a redis:// store cannot work",
		          MCPX_HIREDIS_SONAME, missing);
		dlclose(h);
		return;
	}
	loaded = true;
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
