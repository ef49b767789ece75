"""The names opprof's parts agree on across languages: range texts, NVTX domains, capture window kinds,
capture file names, the in-process libraries and environment variables.

The definition is agents/contract/opprof_contract.h (C, for the engine, the tracer, the torch observer and
the call-ranges extension); this module holds the same entries without their OPPROF_ prefix.
tests/python/test_contract.py parses the header and fails when a value or a name differs on either side.
Pure constants: importing it imports nothing else (the capture driver imports it before torch).
"""

# The profile database's PRAGMA application_id ("oppf") and schema version.
PROFILE_APPLICATION_ID = 1869639782
PROFILE_SCHEMA_VERSION = 5
PROFILE_OLDEST_READABLE_SCHEMA_VERSION = 3  # its collectives lack the trace's arguments

# Range texts: a module range is this prefix and the module's dotted path.
MODULE_RANGE_PREFIX = "nn.Module: "

# NVTX domain of the torch observer's operator ranges; the category is the RecordFunction scope + 1.
NVTX_DOMAIN_TORCH = "opprof.torch"
NVTX_CATEGORY_USER_SCOPE = 8

# NVTX marks about collective communication (JSON after the prefix): the observer's inside gloo:* / nccl:* /
# record_param_comms ranges, the capture's for each process group at the window's start.
COMM_ARGS_MARK = "opprof.comm "
PROCESS_GROUP_MARK = "opprof.process_group "

# Capture window kinds (capture.json's "window").
WINDOW_KIND_WORKLOAD = "workload"
WINDOW_KIND_SCRIPT = "script"
WINDOW_KIND_WHOLE_RUN = "whole_run"
WINDOW_KIND_NEVER_OPENED = "never_opened"
# The backend of a window that records nothing (a job's rank without ncu's range under cross-rank dedup).
WINDOW_BACKEND_NONE = "none"

# Files in a capture directory.
TRACER_TRACE_FILE = "trace.opprof"
TORCH_TRACE_FILE = "trace.json"
CAPTURE_RECORD_FILE = "capture.json"
COUNTERS_RECORD_FILE = "capture_counters.json"
INDUCTOR_DIR = "inductor"
FX_MODULES_FILE = "opprof_fx_modules.json"
STRUCTURE_FILE = "opprof_structure.json"
DEDUP_PLAN_FILE = "dedup_plan.json"

# Layer dedup: the NVTX range pass B's hooks push around launches ncu is to skip.
DEDUP_RANGE = "opprof.dup"

# A multi-process job's per-process capture directories: rank<R>/ (RANK, else LOCAL_RANK), else pid<P>/.
RANK_DIR_PREFIX = "rank"
PROCESS_DIR_PREFIX = "pid"

# The in-process libraries.
TRACER_LIBRARY = "libopprof_tracer.so"
TORCH_OBSERVER_LIBRARY = "libopprof_torch_observer.so"
CALL_RANGES_EXTENSION = "opprof_call_ranges"

# Environment variables.
ENV_TRACER_LIB = "OPPROF_TRACER_LIB"
ENV_TORCH_OBSERVER_LIB = "OPPROF_TORCH_OBSERVER_LIB"
ENV_CALL_RANGES_DIR = "OPPROF_CALL_RANGES_DIR"
ENV_TRACE_FILE = "OPPROF_TRACE_FILE"
ENV_TRACE_WINDOW = "OPPROF_TRACE_WINDOW"
ENV_TRACE_WINDOW_SWITCH = "OPPROF_TRACE_WINDOW_SWITCH"
ENV_TRACE_DEFER_OPERATORS = "OPPROF_TRACE_DEFER_OPERATORS"
ENV_TRACE_PER_PROCESS = "OPPROF_TRACE_PER_PROCESS"
ENV_TRACE_BUFFERS = "OPPROF_TRACE_BUFFERS"
ENV_TRACE_BUFFER_KB = "OPPROF_TRACE_BUFFER_KB"
ENV_DEDUP_PLAN = "OPPROF_DEDUP_PLAN"
ENV_COUNTERS_RANKS = "OPPROF_COUNTERS_RANKS"
