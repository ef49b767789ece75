// `opprof attribute`: captured artifacts -> attributed, counter-annotated profile database.
#include <memory>

#include "cli/commands.hpp"
#include "cli/progress_printer.hpp"
#include "opprof/pipeline/attribute.hpp"
#include "opprof/pipeline/attribute_job.hpp"
#include "opprof/util/error.hpp"

namespace opprof::cli {

Command add_attribute_command(CLI::App& app) {
  auto o = std::make_shared<CommandOptions<AttributeRequest>>();
  auto job_dir = std::make_shared<std::string>();
  auto counters_ranks = std::make_shared<std::vector<std::int64_t>>();
  AttributeRequest& r = o->request;
  auto* cmd = app.add_subcommand("attribute", "Attribute a capture's kernels to operators and modules, with ncu counters");
  auto* trace = cmd->add_option("--trace", r.trace, "Timeline: torch.profiler trace JSON (.json or .json.gz)");
  auto* job = cmd->add_option("--job", *job_dir,
                              "A multi-process job's capture directory (its rank<R>/ and pid<P>/ folders, as `opprof "
                              "profile -- torchrun ...` writes them), instead of --trace and --inductor: each "
                              "process's timeline and Inductor files are found in its folder, --ncu is the job's CSV");
  trace->excludes(job);
  job->excludes(trace);
  cmd->add_option("--ncu", r.ncu, "ncu --csv --page raw --print-units base output of the same window (.csv or .csv.gz)");
  cmd->add_option("--inductor", r.inductor,
                  "Inductor debug directory (TORCH_COMPILE_DEBUG_DIR or opprof's capture directory)");
  cmd->add_option("--metrics", r.metrics, "Metric-set file replacing the built-in set (see `opprof metrics`)");
  cmd->add_option("--opaque-backends", r.opaque_backends, "File of operators to flag as opaque library backends");
  cmd->add_option("-o,--output", r.output, "Profile database to write")->required();
  cmd->add_flag("--all-ranges", r.all_ranges,
                "Store every operator range, also those that launched no GPU work (a larger database)");
  cmd->add_flag("--strict-launch-config", r.matching.strict_launch_config,
                "Leave an ncu row unmatched when its kernel's grid or block differ from the timeline's (another "
                "launch configuration of the same kernel) instead of matching it with a warning");
  add_enum_option(cmd, "--dedup", r.dedup.mode, kDedupModeNames,
                  {DedupMode::kOff, DedupMode::kLayers, DedupMode::kKernels},
                  "The ncu CSV holds a dedup plan's replay set (`opprof profile --dedup`; docs/dedup.md)");
  add_enum_option(cmd, "--dedup-selection", r.dedup.selection, kDedupSelectionNames,
                  {DedupSelection::kPerLaunchConfigMangled, DedupSelection::kNvtxModules,
                   DedupSelection::kPerLaunchConfig},
                  "How pass B selected it (the capture's meta dedup.selection)");
  cmd->add_option("--dedup-verify", r.dedup.verify, "Duplicates per class pass B replayed in full to verify");
  cmd->add_option("--dedup-launch-count", r.dedup.launch_count,
                  "Per-launch-config selections: the ncu --launch-count pass B ran (the capture's meta\n"
                  "dedup.launch_count; default: the plan's own, or the count between 1 and 8 that the rows say)")
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--structure", r.dedup.structure, "--dedup layers: pass A's opprof_structure.json");
  cmd->add_option("--counters-ranks", *counters_ranks,
                  "--job: the ranks pass B replayed (cross-rank dedup, docs/dedup.md), the representative first; the "
                  "other ranks take its counters kernel by kernel. Default: as the ranks' capture_counters.json say")
      ->delimiter(',')
      ->needs(job);
  cmd->add_flag("-q,--quiet", o->quiet, "No progress on stderr (warnings still show)");
  cmd->footer(
      "Writes the profile atomically: on any error no database is left behind and an existing one is kept.\n"
      "Exit status: 0 done, 2 bad input, 1 other failure.");
  return {cmd, [o, job_dir, counters_ranks](const std::vector<std::string>&) {
            // -o "" would mean "write nothing" to the library: on the command line it is a mistake.
            if (o->request.output.empty()) throw InputError("-o", "the output path is empty");
            ProgressPrinter printer(o->quiet);
            if (!job_dir->empty()) {
              if (!o->request.inductor.empty())
                throw InputError("--inductor", "with --job each process's Inductor files are found in its folder");
              attribute_job(JobRequest{*job_dir, "", o->request, *counters_ranks}, &printer);
            } else {
              if (o->request.trace.empty()) throw InputError("opprof attribute", "give --trace (or --job)");
              attribute_capture(o->request, &printer);
            }
            return 0;
          }};
}

}  // namespace opprof::cli
