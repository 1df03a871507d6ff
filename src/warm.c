/*
 * warm.c - the bootstrap a warm interpreter runs, and its one-line header.
 *
 * The bootstrap is trusted code that runs before any user code, inside the
 * full sandbox. It does not touch the network or files outside its workdir;
 * it only imports modules, waits on stdin, and hands control to the user's
 * code in the real __main__ module (so pickling and multiprocessing behave as
 * in a cold `python main.py`). Tracebacks skip the bootstrap's frame, and
 * after the code the process exits the way Python would (threads joined,
 * atexit run, streams flushed) but without tearing down preloaded modules,
 * which would cost more than the code itself.
 */
#include "warm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char boot_head[] = "import os, sys\n"
				"def _mcpx_boot(preload):\n"
				"    import resource\n"
				"    try:\n"
				"        import ctypes\n"
				"        _prctl = ctypes.CDLL(None, use_errno=True).prctl\n"
				/* Non-dumpable while waiting: same-uid processes cannot
				 * open /proc/<pid>/fd/0 or read our memory. */
				"        _prctl(4, 0, 0, 0, 0)\n"
				"    except Exception:\n"
				"        _prctl = None\n"
				/* Preload noise (font-cache warnings, say) must not
				 * reach the next user's stderr. */
				"    saved = os.dup(2)\n"
				"    null = os.open('/dev/null', os.O_WRONLY)\n"
				"    os.dup2(null, 2)\n"
				"    os.close(null)\n"
				"    for name in preload:\n"
				"        try:\n"
				"            __import__(name)\n"
				"        except BaseException:\n"
				"            pass\n"
				"    os.dup2(saved, 2)\n"
				"    os.close(saved)\n"
				/* One NUL byte on stdout says "preloaded, waiting": the
				 * server hands code only to a ready interpreter. */
				"    os.write(1, b'\\0')\n"
				"    hdr = b''\n"
				"    while not hdr.endswith(b'\\n'):\n"
				"        c = os.read(0, 1)\n"
				"        if not c or len(hdr) > 64:\n"
				"            os._exit(0)\n"
				"        hdr += c\n"
				"    n, cpu = (int(x) for x in hdr.split())\n"
				"    parts, left = [], n\n"
				"    while left:\n"
				"        c = os.read(0, min(left, 1 << 20))\n"
				"        if not c:\n"
				"            os._exit(0)\n"
				"        parts.append(c)\n"
				"        left -= len(c)\n"
				"    src = b''.join(parts)\n"
				/* The CPU limit counts from here, not from the preload. */
				"    ru = resource.getrusage(resource.RUSAGE_SELF)\n"
				"    soft = int(ru.ru_utime + ru.ru_stime) + 1 + cpu\n"
				"    hard = soft + 1\n"
				"    cur = resource.getrlimit(resource.RLIMIT_CPU)[1]\n"
				"    if cur != resource.RLIM_INFINITY:\n"
				"        hard = min(hard, cur)\n"
				"        soft = min(soft, hard)\n"
				"    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))\n"
				"    if _prctl:\n"
				"        _prctl(4, 1, 0, 0, 0)\n"
				"    path = os.path.join(os.getcwd(), 'main.py')\n"
				"    with open(path, 'wb') as f:\n"
				"        f.write(src)\n"
				"    return src, path\n";

static const char boot_tail[] =
	"def _mcpx_run(src, path):\n"
	/* Locals only: the loop below empties this module's globals. */
	"    import __main__, importlib.machinery, os as _os, sys as _sys\n"
	"    g = __main__.__dict__\n"
	"    for k in [k for k in g if not (k.startswith('__') and k.endswith('__'))]:\n"
	"        del g[k]\n"
	"    g['__file__'] = path\n"
	"    g['__cached__'] = None\n"
	"    g['__loader__'] = importlib.machinery.SourceFileLoader('__main__', path)\n"
	"    _sys.argv[:] = ['main.py']\n"
	"    rc = 0\n"
	"    try:\n"
	"        code = compile(src, path, 'exec', dont_inherit=True)\n"
	"        exec(code, g)\n"
	"    except SystemExit as e:\n"
	"        c = e.code\n"
	"        if c is None:\n"
	"            rc = 0\n"
	"        elif isinstance(c, int):\n"
	"            rc = c & 0xff\n"
	"        else:\n"
	"            print(c, file=_sys.stderr)\n"
	"            rc = 1\n"
	"    except BaseException as e:\n"
	/* Drop this function's frame from the traceback, so it reads as in
	 * a cold `python main.py`. */
	"        tb = e.__traceback__\n"
	"        tb = tb.tb_next if tb is not None else None\n"
	"        _sys.excepthook(type(e), e.with_traceback(tb), tb)\n"
	"        rc = 1\n"
	"    try:\n"
	"        import threading\n"
	"        threading._shutdown()\n"
	"    except BaseException:\n"
	"        pass\n"
	"    import atexit\n"
	"    atexit._run_exitfuncs()\n"
	"    for s in (_sys.stdout, _sys.stderr):\n"
	"        try:\n"
	"            s.flush()\n"
	"        except BaseException:\n"
	"            pass\n"
	"    _os._exit(rc)\n"
	"_mcpx_run(*_mcpx_boot(_MCPX_PRELOAD))\n";

bool mcpx_warm_preload_valid(const char *csv)
{
	const char *p = csv;
	bool start = true;

	for (; *p; p++) {
		char c = *p;
		if (c == ',' || c == '.') {
			if (start)
				return false;
			start = true;
			continue;
		}
		if (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (!start && c >= '0' && c <= '9')) {
			start = false;
			continue;
		}
		return false;
	}
	return !start || p == csv;
}

char *mcpx_warm_bootstrap(const char *preload_csv)
{
	/* The list is validated (module names only), so it can be quoted
	 * into Python source without escaping. */
	size_t n = strlen(boot_head) + strlen(boot_tail) + 4 * strlen(preload_csv) + 64;
	char *out = malloc(n);
	size_t off;
	const char *p;

	if (!out)
		return NULL;
	off = (size_t)snprintf(out, n, "%s_MCPX_PRELOAD = [", boot_head);
	p = preload_csv;
	while (*p) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		off += (size_t)snprintf(out + off, n - off, "'%.*s',", (int)len, p);
		p += len + (comma ? 1 : 0);
	}
	snprintf(out + off, n - off, "]\n%s", boot_tail);
	return out;
}

size_t mcpx_warm_header(char *buf, size_t len, size_t code_len, unsigned cpu_s)
{
	int n = snprintf(buf, len, "%zu %u\n", code_len, cpu_s);
	return n > 0 && (size_t)n < len ? (size_t)n : 0;
}
