"""opprof: the Python side of the hardware-attributed operator profiler.

Only what must run inside the PyTorch process lives here: module-range hooks (opprof.hooks), the Inductor
FX module map (opprof.fx_modules), the capture driver (``python -m opprof.capture``) and a reader of the
engine's ncu metric set (opprof.metricset). Importing this package does not import torch, so that the
capture driver can set TORCH_COMPILE_DEBUG and cache locations before torch reads them at import time.
"""

from opprof import contract

__version__ = "0.1.0"

# The range text prefix the C++ engine matches on, and the FX module map's file name in a capture
# directory (opprof.contract, defined in agents/contract/opprof_contract.h).
MODULE_RANGE_PREFIX = contract.MODULE_RANGE_PREFIX
FX_MODULES_FILENAME = contract.FX_MODULES_FILE
