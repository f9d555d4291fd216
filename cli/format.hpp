#pragma once
// What the client commands print: 80-column tables, protobuf JSON and the same data as YAML.
// Pure functions of the response messages (and `now` for ages), so tests need no server.
#include <google/protobuf/message.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuq/v1/gpuq.grpc.pb.h"

namespace gpuq::cli {

enum class OutputFormat { kTable, kWide, kJson, kYaml };
// "table" | "wide" | "json" | "yaml"; throws UsageError otherwise.
OutputFormat parse_output_format(const std::string& text);

// Protobuf's JSON mapping with proto field names ("pod_sets"), every field printed even when it
// holds its default (0, "", false, []), enums by name, int64 as strings; two-space indented.
std::string to_json(const google::protobuf::Message& m, bool pretty = true);
// The same data as YAML (block style; strings that would read back as another type are quoted).
std::string to_yaml(const google::protobuf::Message& m);
// to_json / to_yaml by format; for kTable and kWide the caller renders a table instead.
std::string render_message(const google::protobuf::Message& m, OutputFormat f);

// Human units: gpu milli 1500 -> "1.5"; cpu millicores 250 -> "0.25"; memory bytes -> "64Gi",
// "1.5Gi"; ages 45 -> "45s", 300 -> "5m", 7200 -> "2h", 172800 -> "2d".
std::string human_milli(std::int64_t milli);
std::string human_bytes(std::int64_t bytes);
std::string human_age(std::int64_t seconds);
// "PENDING" from v1::JOB_STATE_PENDING; "Pending" for tables.
std::string state_name(v1::JobState s);
// A job's state as tables show it: "Stopping" for a cancelled job whose processes are still
// stopping (it holds its GPUs), "Held" for a pending job on hold, else state_name.
std::string job_state(const v1::Job& j);
// "pending", "Pending", "PENDING" or "JOB_STATE_PENDING"; throws UsageError otherwise.
v1::JobState parse_state(const std::string& text);
bool is_finished(v1::JobState s);

// A plain-text table; cells too wide for max_width are cut with a trailing "~".
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  // max_width 0: no limit. Only the columns listed in `shrinkable` give up width, the widest first.
  std::string render(std::size_t max_width = 80, std::vector<std::size_t> shrinkable = {}) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

std::string truncate(const std::string& s, std::size_t width);  // "long-nam~"

// Text from the server made safe for a terminal (tables, `show`, watch lines, error messages;
// not -o json/yaml, whose strings are escaped by their own rules): control characters and DEL
// as C escapes ("\n", "\t", "\x1b"), the C1 controls U+0080..U+009F (which some terminals
// obey as escapes) as "\u009b", bytes that are not UTF-8 as "\xff". Everything else, other
// scripts included, is kept; a backslash is kept as it is.
std::string escaped(std::string_view text);

// with_start: a START column after STATE (start_text).
std::string jobs_table(const std::vector<v1::Job>& jobs, bool wide, std::int64_t now, bool with_start = false);
// A pending job's estimated start: "in 2h", "now", "?" (none within the horizon), "-" (not
// estimated, or not pending).
std::string start_text(const v1::Job& job, std::int64_t now);
// A mean GPU utilization as shown: "87%"; "-" when none (never sampled: virtual GPUs).
std::string percent_text(std::optional<double> percent);
// `gpuq show`'s GPU use line: mean, samples, peak memory, idle since.
std::string gpu_use_text(const v1::Job& job, std::int64_t now);
// `gpuq show`'s "Used:" line: what the job's processes used (its cgroups), or "" when unmeasured.
std::string process_use_text(const v1::Job& job);
std::string job_detail(const v1::Job& job, std::int64_t now);
// `gpuq explain`: why it waits, what orders it, the quota and the nodes (cli/explain_format.cpp).
std::string explanation_text(const v1::Job& job, const v1::JobExplanation& e);
std::string queues_table(const v1::ListQueuesResponse& r, bool wide);
// `gpuq queues NAME`: the queue's quota and use, its guardrails and its roles, one per line.
std::string queue_detail(const v1::QueueStatus& q);
std::string nodes_table(const v1::ListNodesResponse& r, bool wide);
// `gpuq usage` (cli/usage_format.cpp): a table (wide: every count and wait in its own column;
// table: 80 columns), or CSV with a header row and RFC 4180 quoting.
std::string usage_table(const v1::UsageResponse& r, bool wide);
std::string usage_csv(const v1::UsageResponse& r);
// A CSV field: quoted (with quotes doubled) when it holds a comma, a quote, CR or LF (RFC 4180).
std::string csv_field(std::string_view text);
// Newest first; wide: with each call's origin and the whole result.
std::string audit_table(const std::vector<v1::AuditEntry>& entries, bool wide);
std::string event_line(const v1::JobEvent& e);       // one line, no newline
std::string format_time(std::int64_t unix_seconds);  // "2026-11-21 20:47:27Z"; 0: "-"

}  // namespace gpuq::cli
