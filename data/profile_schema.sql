-- opprof profile database, schema version 5 (meta.schema_version). docs/schema.md explains every table.
-- Conventions: times are nanoseconds on the capture's own clock; NULL means unknown or not applicable;
-- ids are the engine's 0-based row numbers (kernels.id is the timeline's kernel row). Enumerations read
-- as lower-case text so that queries need no lookup tables (ranges and attribution, the views over the
-- interned range_rows and attribution_rows, give the text of their ids). Plain SQLite types only (no
-- STRICT tables, no generated columns) so that old SQLite builds (Python's, DuckDB's scanner) read it.
-- The indices in profile_indices.sql are created after the rows are loaded.

CREATE TABLE meta (
  key   TEXT PRIMARY KEY NOT NULL,
  value TEXT NOT NULL
);

-- Distinct kernel names. Kernel rows repeat a few hundred names a million times; storing each name once
-- keeps the file small. kernel_view gives kernels with their names and attribution without a join.
CREATE TABLE kernel_names (
  id      INTEGER PRIMARY KEY,
  name    TEXT NOT NULL,  -- as the timeline source printed it (demangled for torch.profiler)
  mangled TEXT            -- NULL when the source gave none
);

CREATE TABLE kernels (
  id                   INTEGER PRIMARY KEY,  -- timeline kernel row
  kind                 TEXT NOT NULL,        -- kernel | memcpy | memset
  name_id              INTEGER NOT NULL REFERENCES kernel_names(id),
  pid                  INTEGER NOT NULL,
  device               INTEGER NOT NULL,
  context              INTEGER NOT NULL,
  stream               INTEGER NOT NULL,
  start_ns             INTEGER NOT NULL,
  end_ns               INTEGER NOT NULL,
  duration_ns          INTEGER NOT NULL,     -- end_ns - start_ns
  grid_x               INTEGER,              -- grid and block are NULL when unknown (memcpy, memset)
  grid_y               INTEGER,
  grid_z               INTEGER,
  block_x              INTEGER,
  block_y              INTEGER,
  block_z              INTEGER,
  correlation          INTEGER,              -- CUPTI correlation id of the launch; NULL when unknown
  external_id          INTEGER,              -- framework id of the launching op; NULL when unknown
  graph_id             INTEGER,              -- CUDA graph id; NULL when not launched by a graph
  graph_node           INTEGER,              -- CUDA graph node id; NULL when unknown
  registers_per_thread INTEGER,              -- NULL when unknown
  shared_mem_bytes     INTEGER NOT NULL,     -- static + dynamic, per block
  bytes                INTEGER NOT NULL,     -- memcpy/memset size; 0 for kernels
  rank                 INTEGER               -- the process's rank in a multi-process job (processes); NULL otherwise
);

CREATE TABLE launches (
  id           INTEGER PRIMARY KEY,  -- timeline launch row
  api          TEXT NOT NULL,        -- cudaLaunchKernel, cuLaunchKernel, cudaMemcpyAsync, ...
  pid          INTEGER NOT NULL,
  tid          INTEGER NOT NULL,
  cpu_start_ns INTEGER NOT NULL,
  cpu_end_ns   INTEGER NOT NULL,
  correlation  INTEGER,
  external_id  INTEGER,
  rank         INTEGER               -- as kernels.rank
);

-- Text of the interned columns of range_rows and attribution_rows (the *_id columns), each string once:
-- a million operator ranges repeat a few hundred operator names and module paths, and a million kernels
-- a few hundred families, so storing the text in place made these tables most of the file. Read the
-- views ranges and attribution, which give the text.
CREATE TABLE strings (
  id   INTEGER PRIMARY KEY,
  text TEXT NOT NULL
);

-- Named intervals: operators, modules, annotations. Read them through the view ranges.
CREATE TABLE range_rows (
  id          INTEGER PRIMARY KEY,  -- timeline range row (attribution.op_range_id points here)
  kind_id     INTEGER NOT NULL,     -- strings.id: operator | module | annotation | compiled_region | capture_window | other
  scope_id    INTEGER NOT NULL,     -- strings.id: thread | stream
  text_id     INTEGER NOT NULL,     -- strings.id: operator name, module path, annotation text
  domain_id   INTEGER,              -- strings.id: NVTX domain or the trace's category (cpu_op, user_annotation)
  pid         INTEGER NOT NULL,
  owner       INTEGER NOT NULL,     -- tid for thread ranges, stream for stream ranges
  device      INTEGER NOT NULL,
  start_ns    INTEGER NOT NULL,
  end_ns      INTEGER NOT NULL,
  depth       INTEGER,              -- nesting depth among the owner's ranges; NULL when not computed
  external_id INTEGER,
  rank        INTEGER               -- as kernels.rank
);

-- One row per kernels row: what attribution concluded. Read it through the view attribution.
CREATE TABLE attribution_rows (
  kernel_id            INTEGER PRIMARY KEY REFERENCES kernels(id),
  path_id              INTEGER NOT NULL,  -- strings.id: correlation | enclosure | fusion | none (unattributed: see reason)
  confidence           REAL NOT NULL,     -- 0..1
  op_range_id          INTEGER,           -- ranges.id of the operator range, NULL when none
  op_id                INTEGER,           -- strings.id: operator; for Inductor kernels the kernel's launcher
  top_op_id            INTEGER,           -- strings.id: outermost operator around the launch
  module_id            INTEGER,           -- strings.id: module path (h.3.attn.c_attn)
  module_source_id     INTEGER NOT NULL,  -- strings.id: none | thread_range | stream_range | fx_provenance
  fused_ops_id         INTEGER,           -- strings.id: comma-separated ATen ops an Inductor kernel fuses
  fx_nodes_id          INTEGER,           -- strings.id: comma-separated pre-grad FX source nodes
  provenance_handle_id INTEGER,           -- strings.id: Inductor "kernel:N" handle
  source_line_id       INTEGER,           -- strings.id: user source line of the FX node
  family_id            INTEGER,           -- strings.id: kernel family: base name with digits and templates stripped
  reason_id            INTEGER,           -- strings.id: why unattributed; NULL when attributed
  opaque               INTEGER NOT NULL,  -- 1 when launched inside an opaque library backend
  opaque_backend_id    INTEGER,           -- strings.id
  phase_id             INTEGER NOT NULL,  -- strings.id: forward | backward | optimizer | other | communication
  forward_op_id        INTEGER            -- strings.id: backward kernels: the forward operator they differentiate
);

-- The ncu metrics of the profile: present = 1 for those the ncu CSV had (kernel_metrics and
-- group_metrics use their ids), 0 for metric-set entries the CSV lacked.
CREATE TABLE metrics (
  id        INTEGER PRIMARY KEY,
  name      TEXT NOT NULL,  -- full ncu name with rollup: dram__bytes_read.sum
  unit      TEXT,           -- base unit as ncu printed it (and the metric set declares): byte, ns, %, cycle; '' for none
  aggregate TEXT,           -- sum | wmean (mean weighted by weight) | max
  axis      TEXT,           -- bottleneck axis: time, compute, tensor, fp32, dram, l1, l2, occupancy, ...
  reason    TEXT,           -- why the metric is in the set
  present   INTEGER NOT NULL,
  weight    TEXT            -- wmean: 'duration' (timeline kernel duration) or the sum metric weighting it; NULL otherwise
);

-- Counter values of the timeline kernels that ncu replayed, and of those that took a replayed kernel's
-- counters under layer dedup (docs/dedup.md); only values present.
CREATE TABLE kernel_metrics (
  kernel_id     INTEGER NOT NULL,  -- kernels.id
  metric_id     INTEGER NOT NULL,  -- metrics.id
  value         REAL NOT NULL,     -- in metrics.unit
  -- kernels.id of the replayed kernel whose ncu row the value was copied from (a representative's kernel at
  -- the same position, or the first launch of the same configuration); NULL: the kernel's own ncu row.
  counters_from INTEGER,
  PRIMARY KEY (kernel_id, metric_id)
) WITHOUT ROWID;

-- Every row of the ncu CSV, matched or not.
CREATE TABLE ncu_rows (
  row               INTEGER PRIMARY KEY,  -- 0-based row in ncu's invocation order
  ncu_id            INTEGER NOT NULL,     -- ncu's "ID" column
  pid               INTEGER NOT NULL,
  context           INTEGER NOT NULL,
  stream            INTEGER NOT NULL,
  device            INTEGER NOT NULL,
  kernel_name       TEXT NOT NULL,        -- as ncu printed it
  grid_x            INTEGER,
  grid_y            INTEGER,
  grid_z            INTEGER,
  block_x           INTEGER,
  block_y           INTEGER,
  block_z           INTEGER,
  csv_line          INTEGER,              -- 1-based line in the CSV
  matched_kernel_id INTEGER,              -- kernels.id, NULL when unmatched
  -- kernels.id of the kernel of the same name this row pairs with in invocation order although its grid or
  -- block differ (another launch configuration: autotuned separately in the two runs); NULL otherwise. Equal
  -- to matched_kernel_id, or with matched_kernel_id NULL when --strict-launch-config refused the pair.
  launch_config_kernel_id INTEGER,
  rank                    INTEGER         -- the rank of the pass-B process that wrote the row (processes.counters_pid)
);

-- Aggregates per operator, module and kernel family; id 0 has the most kernel time. Derived figures are
-- NULL when the group's kernels have no counters.
CREATE TABLE operators (
  id                   INTEGER PRIMARY KEY,
  key                  TEXT NOT NULL,     -- operator name
  fused_ops            TEXT,              -- ATen ops an Inductor kernel fuses
  kernels              INTEGER NOT NULL,  -- kernel launches
  time_ns              INTEGER NOT NULL,  -- sum of timeline durations
  time_share           REAL NOT NULL,     -- time_ns / all kernel time (0..1)
  counted_time_ns      INTEGER NOT NULL,  -- timeline time of the kernels with ncu counters
  dram_bytes           REAL,              -- DRAM read + write bytes
  dram_bandwidth_gbps  REAL,              -- DRAM bytes / ncu duration, GB/s (1e9 bytes per second)
  flops                REAL,              -- floating-point operations: the sum of the kinds below that are known
  arithmetic_intensity REAL,              -- flops per DRAM byte
  bottleneck           TEXT,              -- bottleneck class
  bottleneck_why       TEXT,              -- the figures that decided it, the others, and the advice after "Next:"
  tensor_flops         REAL,              -- FLOPs on the tensor cores (FP16, BF16, TF32, FP8, FP64 inputs)
  fp32_flops           REAL,              -- FP32 FLOPs on the CUDA cores
  fp16_flops           REAL,              -- FP16 FLOPs on the CUDA cores
  fp64_flops           REAL,              -- FP64 FLOPs on the CUDA cores
  gflops               REAL,              -- achieved: flops / ncu duration, GFLOP/s
  tensor_gflops        REAL,              -- tensor_flops / ncu duration, GFLOP/s
  fp32_gflops          REAL               -- fp32_flops / ncu duration, GFLOP/s
);
CREATE TABLE modules (
  id INTEGER PRIMARY KEY, key TEXT NOT NULL, fused_ops TEXT, kernels INTEGER NOT NULL, time_ns INTEGER NOT NULL,
  time_share REAL NOT NULL, counted_time_ns INTEGER NOT NULL, dram_bytes REAL, dram_bandwidth_gbps REAL, flops REAL,
  arithmetic_intensity REAL, bottleneck TEXT, bottleneck_why TEXT, tensor_flops REAL, fp32_flops REAL, fp16_flops REAL,
  fp64_flops REAL, gflops REAL, tensor_gflops REAL, fp32_gflops REAL
);
CREATE TABLE kernel_families (
  id INTEGER PRIMARY KEY, key TEXT NOT NULL, fused_ops TEXT, kernels INTEGER NOT NULL, time_ns INTEGER NOT NULL,
  time_share REAL NOT NULL, counted_time_ns INTEGER NOT NULL, dram_bytes REAL, dram_bandwidth_gbps REAL, flops REAL,
  arithmetic_intensity REAL, bottleneck TEXT, bottleneck_why TEXT, tensor_flops REAL, fp32_flops REAL, fp16_flops REAL,
  fp64_flops REAL, gflops REAL, tensor_gflops REAL, fp32_gflops REAL
);

-- Aggregated counters of each group, long format (pivot on metric for a wide table).
CREATE TABLE group_metrics (
  group_kind TEXT NOT NULL,     -- operator | module | family
  group_id   INTEGER NOT NULL,  -- operators.id, modules.id or kernel_families.id
  key        TEXT NOT NULL,     -- the group's key, repeated so that no join is needed
  metric_id  INTEGER NOT NULL,  -- metrics.id
  metric     TEXT NOT NULL,     -- metrics.name, repeated for the same reason
  value      REAL NOT NULL,
  PRIMARY KEY (group_kind, group_id, metric_id)
) WITHOUT ROWID;

-- One row: how much kernel time attribution explained, and how ncu matching went.
CREATE TABLE coverage (
  kernel_time_ns               INTEGER NOT NULL,  -- activities of kind kernel only
  kernels                      INTEGER NOT NULL,
  attributed_ns                INTEGER NOT NULL,  -- kernel time with an operator
  module_attributed_ns         INTEGER NOT NULL,  -- kernel time with a module path
  opaque_ns                    INTEGER NOT NULL,  -- kernel time inside opaque library backends
  path_correlation_ns          INTEGER NOT NULL,
  path_enclosure_ns            INTEGER NOT NULL,
  path_fusion_ns               INTEGER NOT NULL,
  path_none_ns                 INTEGER NOT NULL,  -- unattributed kernel time
  has_ncu                      INTEGER NOT NULL,  -- 1 when ncu counters were matched in
  ncu_rows                     INTEGER NOT NULL,
  ncu_matched                  INTEGER NOT NULL,
  ncu_unmatched_rows           INTEGER NOT NULL,
  ncu_unmatched_kernels        INTEGER NOT NULL,
  ncu_grid_block_disagreements INTEGER NOT NULL,
  ncu_launch_config_differs    INTEGER NOT NULL,  -- ncu rows with a launch_config_kernel_id
  ncu_strict_launch_config     INTEGER NOT NULL,  -- 1 when those pairs were refused
  phase_forward_ns             INTEGER NOT NULL,  -- kernel time by attribution.phase
  phase_backward_ns            INTEGER NOT NULL,
  phase_optimizer_ns           INTEGER NOT NULL,
  phase_other_ns               INTEGER NOT NULL,
  phase_communication_ns       INTEGER NOT NULL   -- NCCL kernels, copies inside collectives
);

-- Kernel time (activities of kind kernel) grouped by an attribution column without a group table of its own,
-- so that a report need not scan every kernel: grouped_by = 'phase' (key: attribution.phase) or 'source_line' (key:
-- attribution.source_line, '' for kernels without one).
CREATE TABLE kernel_time_by (
  grouped_by TEXT NOT NULL,  -- not "by", which DuckDB and other SQL dialects reserve
  key     TEXT NOT NULL,
  kernels INTEGER NOT NULL,
  time_ns INTEGER NOT NULL,
  PRIMARY KEY (grouped_by, key)
) WITHOUT ROWID;

-- Unattributed kernel time by family and reason, largest first.
CREATE TABLE unattributed (
  id      INTEGER PRIMARY KEY,
  family  TEXT NOT NULL,
  reason  TEXT NOT NULL,
  kernels INTEGER NOT NULL,
  time_ns INTEGER NOT NULL
);

CREATE TABLE opaque_backends (
  id      INTEGER PRIMARY KEY,
  backend TEXT NOT NULL,  -- cuDNN RNN, ...
  time_ns INTEGER NOT NULL
);

-- How the ncu matcher aligned diverging kernel sequences, one line each.
CREATE TABLE match_notes (
  id   INTEGER PRIMARY KEY,
  note TEXT NOT NULL
);

-- Choices the engine made on its own where the inputs left one (a tie between candidate graphs, an
-- alignment fallback, ncu identities without launch dimensions): one row per kind that occurred.
CREATE TABLE anomalies (
  kind   TEXT PRIMARY KEY NOT NULL,  -- fusion.graph_tie, align.greedy_fallback, ncu.match_by_name_only, ...
  count  INTEGER NOT NULL,           -- how often it occurred
  detail TEXT NOT NULL               -- the first occurrences' details, one per line
);

-- Layer dedup (docs/dedup.md): the structural classes of more than one instance and every instance, one
-- row each; empty when pass B replayed every kernel. meta dedup.* holds the totals.
CREATE TABLE dedup_instances (
  class_id         INTEGER NOT NULL,  -- 0-based, in the plan's order
  class_type       TEXT NOT NULL,     -- module class (layers) or kernel name (kernels)
  signature        TEXT NOT NULL,     -- structural signature (layers) or launch configuration (kernels)
  instance         TEXT NOT NULL,     -- module path (layers) or "launch N" (kernels)
  representative   INTEGER NOT NULL,  -- 1 for the instance whose counters the others take
  kernels          INTEGER NOT NULL,  -- kernels of the instance in the window
  replayed_in_full INTEGER NOT NULL,  -- 1 when measured rather than propagated (the representative too)
  verify           INTEGER NOT NULL,  -- 1 when replayed in full to check the propagation (--dedup-verify)
  reason           TEXT,              -- why a duplicate was replayed in full; NULL otherwise
  PRIMARY KEY (class_id, instance)
);

-- --dedup-verify K: per metric, how far the verify duplicates' own counters are from their representatives'.
CREATE TABLE dedup_verify (
  metric     TEXT PRIMARY KEY NOT NULL,  -- metrics.name
  pairs      INTEGER NOT NULL,           -- duplicate kernels compared
  median_rel REAL NOT NULL,              -- duration-weighted median of |duplicate - representative| / |representative|
  max_rel    REAL NOT NULL               -- the largest of them
);

-- A multi-process job (opprof profile -- torchrun ...): one row per process; the tables below are empty for a
-- single-process profile.
CREATE TABLE processes (
  id           INTEGER PRIMARY KEY,
  pid          INTEGER NOT NULL,   -- pass A's process: kernels.pid, launches.pid, ranges.pid; 0 when it left no capture
  rank         INTEGER,            -- RANK (else LOCAL_RANK) as the launcher set it; NULL without one
  local_rank   INTEGER,
  world_size   INTEGER,
  folder       TEXT,               -- its capture folder (rank0, pid4242); NULL for a rank without one
  counters_pid INTEGER,            -- pass B's process (ncu_rows.pid); NULL when unknown
  status       TEXT NOT NULL,      -- ok | truncated | missing | failed | idle (no GPU activity)
  problem      TEXT,               -- what is wrong with its capture; NULL when nothing
  kernels      INTEGER NOT NULL,   -- activities of kind kernel attributed for it
  ncu_rows     INTEGER NOT NULL    -- ncu rows of its pass-B process
);

-- Per process with a timeline: kernel time by phase, communication and its overlap with computation.
CREATE TABLE rank_summary (
  process_id               INTEGER PRIMARY KEY REFERENCES processes(id),
  rank                     INTEGER,
  kernels                  INTEGER NOT NULL,
  kernel_time_ns           INTEGER NOT NULL,  -- summed durations of its kernels
  time_vs_mean             REAL,              -- kernel_time_ns / the mean over the job's processes (imbalance)
  compute_ns               INTEGER NOT NULL,  -- kernels outside the communication phase
  communication_kernel_ns  INTEGER NOT NULL,  -- NCCL kernels, summed (= phase_communication_ns)
  communication_copy_ns    INTEGER NOT NULL,  -- copies and fills inside collectives (gloo's), summed; not kernel time
  communication_ns         INTEGER NOT NULL,  -- the union of both: GPU time with communication on the device
  overlap_ns               INTEGER NOT NULL,  -- of that union, the time a computation kernel of the process ran
  exposed_communication_ns INTEGER NOT NULL,  -- communication_ns minus overlap_ns
  cpu_communication_ns     INTEGER NOT NULL,  -- union of the collectives' CPU ranges (gloo reduces on the CPU)
  cpu_overlap_ns           INTEGER NOT NULL,  -- of that, the time a computation kernel of the process ran
  busy_ns                  INTEGER NOT NULL,  -- union of its activities on the GPU
  span_ns                  INTEGER NOT NULL,  -- earliest start to latest end of its activities and collective CPU ranges
  phase_forward_ns         INTEGER NOT NULL,  -- kernel time by attribution.phase
  phase_backward_ns        INTEGER NOT NULL,
  phase_optimizer_ns       INTEGER NOT NULL,
  phase_other_ns           INTEGER NOT NULL,
  phase_communication_ns   INTEGER NOT NULL
);

-- Kernel time of each operator and module on each process (the operators / modules tables are the job's).
CREATE TABLE rank_groups (
  group_kind TEXT NOT NULL,     -- operator | module
  key        TEXT NOT NULL,     -- operators.key / modules.key
  process_id INTEGER NOT NULL,  -- processes.id
  rank       INTEGER,
  kernels    INTEGER NOT NULL,
  time_ns    INTEGER NOT NULL,
  PRIMARY KEY (group_kind, key, process_id)
) WITHOUT ROWID;

-- Every communication activity and collective CPU range, per process in time order.
CREATE TABLE collectives (
  id          INTEGER PRIMARY KEY,
  process_id  INTEGER NOT NULL,  -- processes.id
  rank        INTEGER,
  source      TEXT NOT NULL,     -- kernel (kernels.id in kernel_id) | cpu_range (ranges.id in range_id)
  collective  TEXT,              -- allreduce, AllReduce, all_reduce, broadcast, ...; NULL when the name gives none
  kernel_id   INTEGER,
  range_id    INTEGER,
  start_ns    INTEGER NOT NULL,
  end_ns      INTEGER NOT NULL,
  duration_ns INTEGER NOT NULL,
  -- What the trace says of it (docs/schema.md); NULL where it says nothing.
  elements    INTEGER,           -- elements of its input tensors
  bytes       INTEGER,           -- their bytes (the message size)
  dtype       TEXT,              -- their dtype, as the trace names it
  process_group      TEXT,       -- the process group's name ("0"); the process's only group when the trace names none
  process_group_desc TEXT,       -- its description ("default_pg")
  group_size  INTEGER            -- its ranks
);

-- range_rows and attribution_rows with their text: the tables as schema version 4 stored them. A text
-- column is a lookup of one string by its id, evaluated only when a query reads that column.
CREATE VIEW ranges AS
SELECT id, (SELECT text FROM strings WHERE id = kind_id) AS kind, (SELECT text FROM strings WHERE id = scope_id) AS scope,
       (SELECT text FROM strings WHERE id = text_id) AS text, (SELECT text FROM strings WHERE id = domain_id) AS domain,
       pid, owner, device, start_ns, end_ns, depth, external_id, rank
FROM range_rows;

CREATE VIEW attribution AS
SELECT kernel_id, (SELECT text FROM strings WHERE id = path_id) AS path, confidence, op_range_id,
       (SELECT text FROM strings WHERE id = op_id) AS op, (SELECT text FROM strings WHERE id = top_op_id) AS top_op,
       (SELECT text FROM strings WHERE id = module_id) AS module,
       (SELECT text FROM strings WHERE id = module_source_id) AS module_source,
       (SELECT text FROM strings WHERE id = fused_ops_id) AS fused_ops,
       (SELECT text FROM strings WHERE id = fx_nodes_id) AS fx_nodes,
       (SELECT text FROM strings WHERE id = provenance_handle_id) AS provenance_handle,
       (SELECT text FROM strings WHERE id = source_line_id) AS source_line,
       (SELECT text FROM strings WHERE id = family_id) AS family, (SELECT text FROM strings WHERE id = reason_id) AS reason,
       opaque, (SELECT text FROM strings WHERE id = opaque_backend_id) AS opaque_backend,
       (SELECT text FROM strings WHERE id = phase_id) AS phase,
       (SELECT text FROM strings WHERE id = forward_op_id) AS forward_op
FROM attribution_rows;

-- Every activity with its name and attribution: the table most analyses start from.
CREATE VIEW kernel_view AS
SELECT k.id, k.kind, n.name, n.mangled, k.pid, k.device, k.context, k.stream, k.start_ns, k.end_ns, k.duration_ns,
       k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z, k.correlation, k.external_id, k.graph_id,
       k.graph_node, k.registers_per_thread, k.shared_mem_bytes, k.bytes, k.rank,
       a.path, a.confidence, a.op, a.top_op, a.module, a.module_source, a.fused_ops, a.fx_nodes,
       a.provenance_handle, a.source_line, a.family, a.reason, a.opaque, a.opaque_backend, a.phase, a.forward_op
FROM kernels k
JOIN kernel_names n ON n.id = k.name_id
LEFT JOIN attribution a ON a.kernel_id = k.id;

-- Counter values with the metric's name and unit.
CREATE VIEW kernel_metric_view AS
SELECT km.kernel_id, m.name AS metric, m.unit, km.value, km.counters_from
FROM kernel_metrics km
JOIN metrics m ON m.id = km.metric_id;
