# runner.py - how every run's code is executed, cold or warm.
#
# Trusted code, embedded in the server binary (cmake/embed_python.cmake) and
# handed to the interpreter with -c (a cold run) or loaded by the warm
# interpreter (src/zygote/interp.c): nothing of it is read from disk, so
# a run cannot change it for the next one. It defines five functions and
# runs none of them; runner.c appends the installation, the interpreter
# calls the rest.
#
# _mcpx_install(modules) makes the support modules shipped with the server
# (every other file in python/, e.g. `mcpx`) importable by name, ahead of
# anything installed on the system, without touching sys.path. It also
# installs the pyplot hook: when (and only when) the code imports
# matplotlib.pyplot, mcpx_figures patches its show() to save the figures
# into out/; importing matplotlib for every run would cost every run.
#
# _mcpx_fresh(old, new, extra) gives a child forked from the zygote, already
# inside its sandbox, what a freshly started interpreter would have: its own
# workdir wherever the environment named the zygote's, the variables of
# extra (the broker channel's, for a run with egress), fresh random state,
# and the paths every run takes touched once while it waits.
#
# _mcpx_run(src, path, ws) runs the code as the real __main__ module, so pickling
# and multiprocessing behave as in `python main.py`; tracebacks skip the
# runner's frame; then it exits the way Python would (threads joined, atexit
# run, streams flushed) but without tearing down the interpreter's modules,
# which would cost more than most programs. In a workspace call (ws: the
# server wrote .mcpx/vars.in; the caller looked) it defines the saved variables before the code runs
# and saves them after it, whatever way the code ended short of a kill
# (mcpx_workspace.py; _mcpx_ws_restore and _mcpx_ws_save).


def _mcpx_install(modules):
    import sys
    from importlib.machinery import ModuleSpec

    class _Finder:
        @classmethod
        def find_spec(cls, name, path=None, target=None):
            if name in modules:
                return ModuleSpec(name, cls, origin="mcp-exec")
            return None

        @staticmethod
        def create_module(spec):
            return None

        @staticmethod
        def exec_module(module):
            name = module.__name__
            code = compile(modules[name], "<mcp-exec " + name + ">", "exec", dont_inherit=True)
            exec(code, module.__dict__)

    class _PyplotHook:
        mcpx_pyplot = True
        workdir = None  # set by _mcpx_run for each run

        @classmethod
        def find_spec(cls, name, path=None, target=None):
            if name != "matplotlib.pyplot":
                return None
            import mcpx_figures

            return mcpx_figures.pyplot_spec(cls, name, path, target)

    sys.meta_path.insert(0, _PyplotHook)
    sys.meta_path.insert(0, _Finder)


def _mcpx_fresh(old, new, extra):
    import os, sys

    for k, v in list(os.environ.items()):
        if v == old:
            os.environ[k] = new
    os.environ.update(extra)
    # tempfile caches the directory it picked; random reseeds itself at
    # fork (os.register_at_fork), numpy's global generator does not.
    m = sys.modules.get("tempfile")
    if m is not None:
        m.tempdir = None
    m = sys.modules.get("numpy.random")
    if m is not None:
        m.seed()
    # Rehearse what every run does (the loader, compile, exec, print, the
    # exit path): each page of the zygote's memory those write to is copied
    # on its first write, at a page fault and a TLB flush each, so paying
    # that here, while the child waits, takes it off the call's critical
    # path. print(end="") writes nothing to the run's stdout.
    import __main__, atexit, importlib.machinery

    importlib.machinery.SourceFileLoader("__main__", os.path.join(new, "main.py"))
    exec(compile('print(end="")', "<warm-up>", "exec", dont_inherit=True), {})
    atexit._ncallbacks()
    for s in (sys.stdout, sys.stderr):
        s.flush()


def _mcpx_run(src, path, ws):
    # Locals only: in a cold run the runner is __main__, whose globals the
    # loop below empties.
    import __main__, importlib.machinery, os as _os, sys as _sys

    if ws:
        ws_restore, ws_save = _mcpx_ws_restore, _mcpx_ws_save

    # The pyplot hook saves figures into this run's out/ (a zygote
    # installed it before any run existed).
    for f in _sys.meta_path:
        if getattr(f, "mcpx_pyplot", False):
            f.workdir = _os.path.dirname(path)
    g = __main__.__dict__
    for k in [k for k in g if not (k.startswith("__") and k.endswith("__"))]:
        del g[k]
    g["__file__"] = path
    g["__cached__"] = None
    g["__loader__"] = importlib.machinery.SourceFileLoader("__main__", path)
    _sys.argv[:] = ["main.py"]
    ws = ws_restore(path, g) if ws else None
    rc = 0
    try:
        code = compile(src, path, "exec", dont_inherit=True)
        exec(code, g)
    except SystemExit as e:
        c = e.code
        if c is None:
            rc = 0
        elif isinstance(c, int):
            rc = c & 0xFF
        else:
            print(c, file=_sys.stderr)
            rc = 1
    except BaseException as e:
        # Drop this function's frame from the traceback, so it reads as in
        # a cold `python main.py`.
        tb = e.__traceback__
        tb = tb.tb_next if tb is not None else None
        _sys.excepthook(type(e), e.with_traceback(tb), tb)
        rc = 1
    # Join non-daemon threads as Python's own exit does (only if the code
    # imported threading: importing it here would cost every run).
    threading = _sys.modules.get("threading")
    if threading is not None:
        try:
            threading._shutdown()
        except BaseException:
            pass
    import atexit

    atexit._run_exitfuncs()
    if ws is not None:
        ws_save(ws, g)
    for s in (_sys.stdout, _sys.stderr):
        try:
            s.flush()
        except BaseException:
            pass
    _os._exit(rc)


def _mcpx_ws_restore(path, g):
    # A workspace call: the server wrote .mcpx/vars.in (mcpx_workspace.py).
    # The workspace's directory goes last on sys.path, so modules kept in
    # it import by name (their objects too) and none shadows an installed
    # one.
    import os, sys

    wd = os.path.dirname(path)
    sys.path.append(wd)
    try:
        import mcpx_workspace

        return mcpx_workspace.restore(wd, g)
    except BaseException as e:
        # Nothing is saved then: the server keeps the previous variables.
        print("mcp-exec: the workspace's variables were not restored: %r" % (e,), file=sys.stderr)
        return None


def _mcpx_ws_save(ws, g):
    import sys

    try:
        import mcpx_workspace

        mcpx_workspace.save(ws, g)
    except BaseException as e:
        print("mcp-exec: the workspace's variables were not saved: %r" % (e,), file=sys.stderr)
