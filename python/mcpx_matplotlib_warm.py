# mcpx_matplotlib_warm.py - a preload target (MCP_EXEC_PRELOAD): imports
# matplotlib.pyplot and draws one throw-away chart into memory, so that a
# warm interpreter (above all the fork server's zygote, whose children share
# its pages) already holds what a run's first chart would otherwise load:
# the Agg backend, the default font and its glyph cache. Nothing is written
# to disk, and the figure is closed again, so a run starts with no figure
# open and its first one is figure 1. Importing it in a run costs that run
# the same work; it is meant for MCP_EXEC_PRELOAD only.
import io

import matplotlib.pyplot as _plt

_fig, _ax = _plt.subplots()
_ax.plot([0, 1, 2], [0, 1, 4], label="warm-up")
_ax.set_title("warm-up")
_ax.set_xlabel("x")
_ax.legend()
_fig.savefig(io.BytesIO(), format="png")
_plt.close(_fig)
del _fig, _ax
