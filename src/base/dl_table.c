/*
 * dl_table.c - a shared library loaded into a table of function pointers
 * (dl_table.h).
 *
 * dlsym's void * converts to a function pointer (POSIX); each slot is the
 * address of one, written through void ** to say so without the cast
 * ISO C warns about.
 *
 * What it does not do: unload a library, or call anything in it.
 */
#include "dl_table.h"

#include <dlfcn.h>

#include "log.h"

bool mcpx_dl_table_load(const char *soname, const char *const names[], void **const slots[],
                        size_t n, const char *without)
{
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		const char *why = dlerror();

		mcpx_warn("%s cannot be loaded (%s): %s", soname, why ? why : "not found", without);
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		void *p = dlsym(h, names[i]);

		if (!p) {
			mcpx_warn("%s has no %s: %s", soname, names[i], without);
			dlclose(h);
			return false;
		}
		*slots[i] = p;
	}
	return true;
}
