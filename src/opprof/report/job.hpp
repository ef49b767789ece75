#pragma once
// The multi-process section of the reports: per rank, its kernel time, how far it is from the job's mean,
// its communication and how much of it computation hid, and the operators whose time differs most between
// ranks. Empty (terminal) or null (JSON) for a single-process profile.
#include <string>

#include "opprof/report/json_writer.hpp"
#include "opprof/report/text_table.hpp"
#include "opprof/store/profile_reader.hpp"

namespace opprof {

// The terminal report's lines: a table of the ranks and the job's communication, laid out on page.
void job_section(Page& page, const ProfileReader& profile);
// Writes the value of the report's "job" key.
void write_job_json(JsonWriter& j, const ProfileReader& profile);

}  // namespace opprof
