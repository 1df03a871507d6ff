/*
 * warm.c - the bootstrap a warm interpreter runs (and, in fork-server mode,
 * the zygote's request loop and its children's way into the run's sandbox),
 * and the fixed-size header that hands a run its code.
 *
 * The bootstrap is trusted code that runs before any user code, inside the
 * full sandbox. It does not touch the network or files outside its workdir;
 * it only imports modules, waits on stdin (the zygote: on its control
 * socket), and hands control to the user's code in the real __main__ module
 * (so pickling and multiprocessing behave as in a cold `python main.py`). Tracebacks skip the bootstrap's frame, and
 * after the code the process exits the way Python would (threads joined,
 * atexit run, streams flushed) but without tearing down preloaded modules,
 * which would cost more than the code itself.
 */
#include "warm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char boot_head[] = "import os, sys\n"
				"def _mcpx_boot(preload, fork_server):\n"
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
				/* A zygote serves forks until the server closes the
				 * control socket; only its children return here. */
				"    if fork_server:\n"
				"        _mcpx_zygote()\n"
				/* One NUL byte on stdout says "preloaded, waiting": the
				 * server hands code only to a ready interpreter. */
				"    os.write(1, b'\\0')\n"
				/* A fixed-size header: one read, and no byte of the
				 * program's own stdin is consumed. */
				"    hdr = b''\n"
				"    while len(hdr) < 32:\n"
				"        c = os.read(0, 32 - len(hdr))\n"
				"        if not c:\n"
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
				/* One byte on stdout says "I have the whole code": until
				 * it arrives, the server knows the code never ran. */
				"    os.write(1, b'\\1')\n"
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
				/* The server wrote main.py (as for a cold run). */
				"    return src, os.path.join(os.getcwd(), 'main.py')\n";

/* The fork server's zygote (forkserver.c speaks the other end). It runs
 * after the preload, inside the zygote's own sandbox, and never runs user
 * code: it only answers requests on its control socket (fd 4), one JSON
 * object per SOCK_SEQPACKET message. {"fork": ...} with the run's three pipe
 * ends attached forks a child that enters the run's sandbox (_mcpx_enter)
 * and then returns into _mcpx_boot, which waits for the code like any warm
 * interpreter. {"reap": pid} reaps a child the server has finished with; the
 * zygote never reaps on its own, so a run leader's zombie keeps its pid and
 * process group reserved while the server sweeps the run. */
static const char boot_zygote[] =
	"def _mcpx_zygote():\n"
	"    import ctypes, gc, json, socket\n"
	"    libc = ctypes.CDLL(None, use_errno=True)\n"
	"    libc.syscall.restype = ctypes.c_long\n"
	"    ctl = socket.socket(fileno=4)\n"
	/* Only the forking thread survives a fork: if the preload started
	 * threads, a child could inherit a lock one of them held. Refuse, and
	 * the server falls back to a fresh interpreter per run. */
	"    if len(os.listdir('/proc/self/task')) > 1:\n"
	"        os.write(2, b'mcp-exec: the preload started threads; a zygote cannot fork safely\\n')\n"
	"        os._exit(3)\n"
	"    init = json.loads(ctl.recv(1 << 20))\n"
	"    me = os.getpid()\n"
	/* Built once here, not in every child: the Landlock attribute and
	 * the seccomp program every child installs. */
	"    class Attr(ctypes.Structure):\n"
	"        _fields_ = [('fs', ctypes.c_uint64), ('net', ctypes.c_uint64),\n"
	"                    ('scoped', ctypes.c_uint64)]\n"
	"    class Beneath(ctypes.Structure):\n"
	"        _pack_ = 1\n"
	"        _fields_ = [('allowed', ctypes.c_uint64), ('fd', ctypes.c_int32)]\n"
	"    class Prog(ctypes.Structure):\n"
	"        _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.c_void_p)]\n"
	"    ll = init.get('landlock')\n"
	"    lock = (Attr(ll['fs'], ll['net'], ll['scoped']), Beneath, ll['rules']) if ll else None\n"
	"    bpf = bytes.fromhex(init.get('bpf') or '')\n"
	"    buf = ctypes.create_string_buffer(bpf, len(bpf))\n"
	"    prog = Prog(len(bpf) // 8, ctypes.addressof(buf)) if bpf else None\n"
	/* What the preload built is never collected in a child; keeping the
	 * collector off it keeps those pages shared (copy-on-write). */
	"    gc.freeze()\n"
	"    ctl.send(b'{\"ready\": true}')\n"
	"    while True:\n"
	"        msg, fds, _, _ = socket.recv_fds(ctl, 1 << 16, 3)\n"
	"        if not msg:\n"
	"            os._exit(0)\n"
	"        req = json.loads(msg)\n"
	"        if 'reap' in req:\n"
	"            try:\n"
	"                _, st, ru = os.wait4(req['reap'], 0)\n"
	"                rep = {'status': st, 'utime_us': round(ru.ru_utime * 1e6),\n"
	"                       'stime_us': round(ru.ru_stime * 1e6), 'maxrss_kb': ru.ru_maxrss}\n"
	"            except OSError as e:\n"
	"                rep = {'errno': e.errno}\n"
	"            ctl.send(json.dumps(rep).encode())\n"
	"            continue\n"
	"        pid = -1\n"
	"        if len(fds) == 3:\n"
	"            try:\n"
	"                pid = os.fork()\n"
	"            except OSError as e:\n"
	"                rep = {'errno': e.errno}\n"
	"        else:\n"
	"            rep = {'errno': 22}\n"
	"        if pid == 0:\n"
	"            ctl.detach()\n"
	"            _mcpx_enter(libc, req, fds, lock, prog, me)\n"
	"            return\n"
	"        for fd in fds:\n"
	"            os.close(fd)\n"
	"        if pid > 0:\n"
	"            rep = {'pid': pid}\n"
	"        ctl.send(json.dumps(rep).encode())\n"
	/* The child's way into the run's sandbox, in the order sandbox_child.c
	 * uses: its own session, only the run's fds, its workdir and limits,
	 * then a nested Landlock ruleset (writes only in its own workdir; the
	 * zygote's layer still applies beneath it) and, last, the run's
	 * seccomp filter stacked on the zygote's (which lacks the setsid
	 * denial). Any failure ends the child with 127 before it says ready. */
	"def _mcpx_enter(libc, req, fds, lock, prog, zygote):\n"
	"    import ctypes, resource\n"
	"    L = ctypes.c_long\n"
	"    wd = req['workdir']\n"
	"    step = 'pdeathsig'\n"
	"    try:\n"
	"        if libc.prctl(1, L(9), L(0), L(0), L(0)) != 0 or os.getppid() != zygote:\n"
	"            raise OSError(3, 'the zygote is gone')\n"
	"        step = 'setsid'\n"
	"        os.setsid()\n"
	"        step = 'fds'\n"
	"        for i, fd in enumerate(fds):\n"
	"            os.dup2(fd, i)\n"
	"        if libc.syscall(L(436), L(3), L(0xffffffff), L(0)) != 0:\n"
	"            os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[0])\n"
	"        step = 'chdir'\n"
	"        os.chdir(wd)\n"
	"        step = 'rlimits'\n"
	"        inf = resource.RLIM_INFINITY\n"
	"        for res, soft, hard in req['rlimits']:\n"
	"            cur = resource.getrlimit(res)[1]\n"
	"            hard = cur if hard < 0 or (cur != inf and hard > cur) else hard\n"
	"            soft = hard if soft < 0 or (hard != inf and soft > hard) else soft\n"
	"            resource.setrlimit(res, (soft, hard))\n"
	"        if lock:\n"
	"            step = 'landlock'\n"
	"            attr, Beneath, rules = lock\n"
	"            rs = libc.syscall(L(444), ctypes.byref(attr), L(ctypes.sizeof(attr)), L(0))\n"
	"            if rs < 0:\n"
	"                raise OSError(ctypes.get_errno(), 'landlock_create_ruleset')\n"
	"            for path, rights, optional in rules:\n"
	"                try:\n"
	"                    fd = os.open(path or wd, os.O_PATH | os.O_CLOEXEC)\n"
	"                except FileNotFoundError:\n"
	"                    if optional:\n"
	"                        continue\n"
	"                    raise\n"
	"                b = Beneath(rights, fd)\n"
	"                rc = libc.syscall(L(445), L(rs), L(1), ctypes.byref(b), L(0))\n"
	"                os.close(fd)\n"
	"                if rc != 0:\n"
	"                    raise OSError(ctypes.get_errno(), 'landlock_add_rule ' + (path or wd))\n"
	"            if libc.syscall(L(446), L(rs), L(0)) != 0:\n"
	"                raise OSError(ctypes.get_errno(), 'landlock_restrict_self')\n"
	"            os.close(rs)\n"
	"        if prog:\n"
	"            step = 'seccomp'\n"
	"            if libc.prctl(22, L(2), ctypes.byref(prog), L(0), L(0)) != 0:\n"
	"                raise OSError(ctypes.get_errno(), 'PR_SET_SECCOMP')\n"
	/* What a fresh interpreter would have: its own HOME and TMPDIR, and
	 * fresh random state (random reseeds itself at fork). */
	"        step = 'environment'\n"
	"        for k in ('HOME', 'TMPDIR', 'MPLCONFIGDIR'):\n"
	"            os.environ[k] = wd\n"
	"        m = sys.modules.get('tempfile')\n"
	"        if m:\n"
	"            m.tempdir = None\n"
	"        m = sys.modules.get('numpy.random')\n"
	"        if m:\n"
	"            m.seed()\n"
	/* Touch what every run uses (compile, exec, the exit path) while
	 * waiting, so its copy-on-write page faults are paid before the
	 * request rather than after it. */
	"        step = 'warm-up'\n"
	"        exec(compile('pass', '<warm-up>', 'exec', dont_inherit=True), {})\n"
	"        import atexit, threading\n"
	"        atexit._ncallbacks()\n"
	"        threading.main_thread()\n"
	"    except BaseException as e:\n"
	"        try:\n"
	"            os.write(2, ('mcp-exec: sandbox setup failed at step %s: %s\\n' % (step, e)).encode())\n"
	"        finally:\n"
	"            os._exit(127)\n";

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
	"_mcpx_run(*_mcpx_boot(_MCPX_PRELOAD, _MCPX_FORK))\n";

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

char *mcpx_warm_bootstrap(const char *preload_csv, bool fork_server)
{
	/* The list is validated (module names only), so it can be quoted
	 * into Python source without escaping. */
	size_t n = strlen(boot_head) + strlen(boot_zygote) + strlen(boot_tail) +
		   4 * strlen(preload_csv) + 64;
	char *out = malloc(n);
	size_t off;
	const char *p;

	if (!out)
		return NULL;
	off = (size_t)snprintf(out, n, "%s%s_MCPX_FORK = %s\n_MCPX_PRELOAD = [", boot_head,
			       fork_server ? boot_zygote : "", fork_server ? "True" : "False");
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
	int n = snprintf(buf, len, "%020zu %010u\n", code_len, cpu_s);
	return n == MCPX_WARM_HEADER_LEN && (size_t)n < len ? (size_t)n : 0;
}
