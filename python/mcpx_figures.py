# mcpx_figures.py - plt.show() saves the open figures into out/ as PNG.
#
# Trusted code, embedded in the server binary like runner.py. Runs have no
# display (MPLBACKEND=Agg), so matplotlib's own show() only warns and the
# chart is lost. mcp-exec returns whatever a run leaves in out/ of its
# working directory, images as pictures, so show() here saves every open
# figure as out/figure-<n>.png (n counts up over the run, never overwriting
# a file that is already there) and closes it, as a window being closed
# would. An agent's ordinary plotting code thus returns its chart without
# knowing about out/.
#
# The runner imports this module only when the code imports
# matplotlib.pyplot (or when the warm interpreter preloads it): the hook in
# runner.py finds pyplot's real spec through pyplot_spec, whose loader
# patches show() right after pyplot's own code ran. Nothing here imports
# matplotlib itself.
import os
import sys

_saved = 0


def pyplot_spec(hook, name, path, target):
    """The spec the other finders give for matplotlib.pyplot, with a loader
    that patches show() once the module is executed; None if not found."""
    spec = None
    for finder in sys.meta_path:
        if finder is hook:
            continue
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        spec = find(name, path, target)
        if spec is not None:
            break
    if spec is None or not hasattr(spec.loader, "exec_module"):
        return spec
    spec.loader = _PatchingLoader(spec.loader, hook)
    return spec


class _PatchingLoader:
    """Delegates to pyplot's own loader, then patches the fresh module."""

    def __init__(self, loader, hook):
        self._loader = loader
        self._hook = hook

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        patch(module, self._hook)

    def __getattr__(self, name):
        return getattr(self._loader, name)


def patch(pyplot, hook):
    """Replaces pyplot.show; hook.workdir names the run's working directory
    at the time show() is called (a zygote patches before any run exists)."""
    if getattr(pyplot.show, "_mcpx", False):
        return
    real = pyplot.show

    def show(*args, **kwargs):
        """Saves every open figure into out/ of the run's working directory
        as figure-<n>.png and closes it (mcp-exec returns out/ as pictures).
        Arguments of matplotlib's show() (block=...) are accepted and
        ignored."""
        save_open_figures(pyplot, hook.workdir or os.getcwd())

    show._mcpx = True
    show.__wrapped__ = real
    pyplot.show = show


def save_open_figures(pyplot, workdir):
    """Saves the open figures into <workdir>/out, then closes them."""
    global _saved
    nums = pyplot.get_fignums()
    if not nums:
        return
    out = os.path.join(workdir, "out")
    os.makedirs(out, exist_ok=True)
    for num in nums:
        fig = pyplot.figure(num)
        while True:
            _saved += 1
            path = os.path.join(out, "figure-%d.png" % _saved)
            if not os.path.lexists(path):
                break
        fig.savefig(path, format="png")
    for num in nums:
        pyplot.close(num)
