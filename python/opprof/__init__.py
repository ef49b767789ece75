"""opprof: the Python side of the hardware-attributed operator profiler.

What must run inside the PyTorch process lives here: module-range hooks (opprof.hooks), the Inductor
FX module map (opprof.fx_modules), the capture driver (``python -m opprof.capture``); and what a notebook
calls: ``opprof.load("profile.db")`` (the profile as pandas DataFrames) and ``opprof.attribute(...)`` (the
engine run on a capture), see opprof.api; the engine's ncu metric set is asked through opprof.metricset.
Importing this package imports neither torch nor pandas, so that the capture driver can set
TORCH_COMPILE_DEBUG and cache locations before torch reads them at import time.
"""

from opprof import contract
from opprof.api import attribute, load

__version__ = "0.1.0"
__all__ = ["attribute", "load"]

# The range text prefix the C++ engine matches on, and the FX module map's file name in a capture
# directory (opprof.contract, defined in agents/contract/opprof_contract.h).
MODULE_RANGE_PREFIX = contract.MODULE_RANGE_PREFIX
FX_MODULES_FILENAME = contract.FX_MODULES_FILE
