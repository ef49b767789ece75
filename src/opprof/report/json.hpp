#pragma once
// `opprof report --json profile.db`: the report's summary as one JSON object, for scripts and CI.
//
// Top-level keys (percentages are of kernel time, 0..100; unknown numbers are null):
//   profile, schema_version, metadata {key: value}
//   kernel_time_ns, kernels, attributed_ns, attributed_pct, module_attributed_ns, module_attributed_pct,
//   opaque_backend_ns, opaque_backend_pct
//   by_path {correlation, enclosure, fusion, none}            percent of kernel time per attribution path
//   by_path_ns {correlation, enclosure, fusion, none}
//   by_phase {forward, backward, optimizer, other, communication}   percent of kernel time per phase
//   by_phase_ns {forward, backward, optimizer, other, communication}
//   opaque_backends [{backend, time_ns, pct}]
//   unattributed [{family, reason, kernels, time_ns, pct}]    every group, largest first
//   ncu {available, rows, matched, unmatched_rows, unmatched_kernels, grid_block_disagreements,
//        launch_config_differs (rows paired with a kernel of another launch configuration),
//        strict_launch_config (those pairs refused), identity, missing_metrics [..], notes [..]}
//   anomalies {kind: {count, detail [..]}}                   choices the engine made on its own (ties,
//                                                             fallbacks); {} when there were none
//   operators, modules [{name, fused_ops, kernels, time_ns, time_pct, counted_time_ns, bottleneck,
//        bottleneck_why, sm_pct, dram_pct, tensor_pct, occupancy_pct, dram_bytes, dram_gbps, flops,
//        tensor_flops, fp32_flops, gflops, tensor_gflops, fp32_gflops, arithmetic_intensity}]
//                                                             the top ReportOptions::top, largest first
//   operator_count, module_count                              all groups in the profile
//   warnings [..]
//   job  null for a single-process profile; else {processes [{rank, pid, folder, status, problem, kernels,
//        kernel_time_ns, time_vs_mean, compute_ns, communication_kernel_ns, communication_copy_ns,
//        communication_ns, overlap_ns, exposed_communication_ns, cpu_communication_ns, cpu_overlap_ns, busy_ns,
//        span_ns, by_phase_ns}] (the ranks; rank_summary's columns), idle_processes [{pid, folder}] (launchers),
//        kernel_time_ns, and shares (0..1), each a part over a whole that holds it:
//        communication_share (communication on the GPU over the GPU's busy time), communication_kernel_share
//        (NCCL kernels over kernel time), overlapped_share (of the GPU communication, the part computation
//        hid), cpu_communication_share (the collectives' CPU ranges over the ranks' wall span),
//        cpu_overlapped_share; exposed_communication_ns, max_time_vs_mean, min_time_vs_mean,
//        most_unequal_operators [{operator, spread_ns, time_ns_by_process {id: ns}}]}
#include <string>

#include "opprof/report/summary.hpp"
#include "opprof/store/profile_reader.hpp"

namespace opprof {

// The JSON document, pretty-printed, ending in a newline.
std::string render_json_report(const ProfileReader& profile, const ReportOptions& options = {});

}  // namespace opprof
