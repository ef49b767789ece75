/* The names opprof's parts agree on across languages and processes: the engine and CLI (C++), the tracer,
 * the torch observer and the call-ranges extension (C++ inside the profiled process) and python/opprof.
 * Defined here once; python/opprof/contract.py holds the same names without the OPPROF_ prefix, and
 * tests/python/test_contract.py parses this file and fails when a value or a name differs.
 *
 * Plain C macros on purpose: every part includes it, the injection libraries without a C++ library of ours,
 * and the test reads it with one regular expression. Only lines of the form
 *   #define OPPROF_<NAME> "<text>"   or   #define OPPROF_<NAME> <integer>
 * are contract entries; change a value and the traces, captures and builds of older versions no longer fit. */
#ifndef OPPROF_CONTRACT_H
#define OPPROF_CONTRACT_H

/* The profile database: PRAGMA application_id ("oppf") and the schema version (PRAGMA user_version,
 * meta.schema_version; docs/schema.md), written by src/opprof/store and checked by opprof.load. */
#define OPPROF_PROFILE_APPLICATION_ID 1869639782 /* 0x6f707066 */
#define OPPROF_PROFILE_SCHEMA_VERSION 5
/* The oldest schema version the readers (the C++ ProfileReader, opprof.load) still read: 3, whose collectives
 * lack the six columns of what the trace says of them (read as NULL). */
#define OPPROF_PROFILE_OLDEST_READABLE_SCHEMA_VERSION 3

/* Range texts. A module range's text is this prefix and the module's dotted path (h.3.attn), written by
 * opprof.hooks and opprof.call_ranges, matched by every timeline reader. */
#define OPPROF_MODULE_RANGE_PREFIX "nn.Module: "

/* NVTX domain of libopprof_torch_observer.so's operator ranges. The tracer defers the ranges of this
 * domain (writes one only if something launches inside it), and the reader takes them as operators by
 * their category: the RecordFunction scope + 1, where the user scope (record_function ranges) is not an
 * operator. */
#define OPPROF_NVTX_DOMAIN_TORCH "opprof.torch"
#define OPPROF_NVTX_CATEGORY_USER_SCOPE 8 /* at::RecordScope::USER_SCOPE (7) + 1 */

/* NVTX marks that carry what the trace needs about collective communication, JSON after the prefix.
 * The torch observer writes a communication mark in OPPROF_NVTX_DOMAIN_TORCH inside each gloo:* / nccl:* range
 * (the input tensors: {"elements": N, "bytes": B, "dtype": "Float"}) and record_param_comms range (also
 * "process_group", "process_group_desc", "group_size", "collective"); the capture writes one process-group
 * mark per process group at the window's start ({"name", "desc", "backend", "size", "ranks"}). */
#define OPPROF_COMM_ARGS_MARK "opprof.comm "
#define OPPROF_PROCESS_GROUP_MARK "opprof.process_group "

/* Capture window kinds, capture.json's "window": what part of the run the capture recorded. */
#define OPPROF_WINDOW_KIND_WORKLOAD "workload"         /* the measured iterations of a workload module */
#define OPPROF_WINDOW_KIND_SCRIPT "script"             /* the script's own cudaProfilerStart/Stop window */
#define OPPROF_WINDOW_KIND_WHOLE_RUN "whole_run"       /* the whole run (no window opened, or --window whole) */
#define OPPROF_WINDOW_KIND_NEVER_OPENED "never_opened" /* --window script and the script opened none */
/* A window's backend (the record's window_info.backend) that records nothing: a rank of a job whose pass B
   did not open ncu's range (cross-rank dedup, OPPROF_COUNTERS_RANKS). */
#define OPPROF_WINDOW_BACKEND_NONE "none"

/* Files in a capture directory. */
#define OPPROF_TRACER_TRACE_FILE "trace.opprof"               /* pass A's log, tracer backend */
#define OPPROF_TORCH_TRACE_FILE "trace.json"                  /* pass A's Chrome trace, torch.profiler backend */
#define OPPROF_CAPTURE_RECORD_FILE "capture.json"             /* what pass A did */
#define OPPROF_COUNTERS_RECORD_FILE "capture_counters.json"   /* what pass B (ncu) did */
#define OPPROF_INDUCTOR_DIR "inductor"                        /* pass A's Inductor debug directory */
#define OPPROF_FX_MODULES_FILE "opprof_fx_modules.json"       /* pre-grad FX node -> module path */
#define OPPROF_STRUCTURE_FILE "opprof_structure.json"         /* structural classes of module instances (dedup) */
#define OPPROF_DEDUP_PLAN_FILE "dedup_plan.json"              /* what pass B skips, for its hooks (dedup) */

/* Layer dedup (docs/dedup.md): the NVTX range pass B's hooks push around launches ncu is to skip
 * (ncu --nvtx --nvtx-exclude "opprof.dup/"). */
#define OPPROF_DEDUP_RANGE "opprof.dup"
/* A multi-process job's capture directory holds one capture directory per process: rank<R>/ for a process
 * started with RANK (else LOCAL_RANK) in its environment, pid<P>/ for one without. */
#define OPPROF_RANK_DIR_PREFIX "rank"
#define OPPROF_PROCESS_DIR_PREFIX "pid"

/* The in-process libraries, as built and installed. */
#define OPPROF_TRACER_LIBRARY "libopprof_tracer.so"
#define OPPROF_TORCH_OBSERVER_LIBRARY "libopprof_torch_observer.so"
#define OPPROF_CALL_RANGES_EXTENSION "opprof_call_ranges" /* the Python module's name */

/* Environment variables. */
#define OPPROF_ENV_TRACER_LIB "OPPROF_TRACER_LIB"                 /* the tracer library `opprof profile` injects */
#define OPPROF_ENV_TORCH_OBSERVER_LIB "OPPROF_TORCH_OBSERVER_LIB" /* the observer the capture loads */
#define OPPROF_ENV_CALL_RANGES_DIR "OPPROF_CALL_RANGES_DIR"       /* the folder of the call-ranges extension */
#define OPPROF_ENV_TRACE_FILE "OPPROF_TRACE_FILE"                 /* where the tracer writes its log */
#define OPPROF_ENV_TRACE_WINDOW "OPPROF_TRACE_WINDOW"             /* 1: the tracer keeps the capture window only */
#define OPPROF_ENV_TRACE_WINDOW_SWITCH "OPPROF_TRACE_WINDOW_SWITCH" /* 0: GPU activity stays on outside windows */
#define OPPROF_ENV_TRACE_DEFER_OPERATORS "OPPROF_TRACE_DEFER_OPERATORS" /* 0: every operator range is written */
/* 1: every process writes its own log, <dir of OPPROF_TRACE_FILE>/rank<R>/<file name> (or pid<P>/) */
#define OPPROF_ENV_TRACE_PER_PROCESS "OPPROF_TRACE_PER_PROCESS"
#define OPPROF_ENV_TRACE_BUFFERS "OPPROF_TRACE_BUFFERS"           /* CUPTI activity buffers in the pool */
#define OPPROF_ENV_TRACE_BUFFER_KB "OPPROF_TRACE_BUFFER_KB"       /* size of one buffer */
#define OPPROF_ENV_DEDUP_PLAN "OPPROF_DEDUP_PLAN"                 /* pass B: the dedup plan its hooks read */
/* a job's pass B: the ranks that open ncu's window ("0,1"); the others run without one (cross-rank dedup) */
#define OPPROF_ENV_COUNTERS_RANKS "OPPROF_COUNTERS_RANKS"

#endif /* OPPROF_CONTRACT_H */
