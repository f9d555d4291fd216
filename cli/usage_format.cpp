// `gpuq usage`: the table and the CSV (-o json|yaml print the UsageResponse itself).
#include <cctype>
#include <cstdio>
#include <optional>
#include <sstream>

#include "cli/format.hpp"

namespace gpuq::cli {

namespace {

std::string fixed(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

const char* key_header(v1::UsageBy by) {
  switch (by) {
    case v1::USAGE_BY_USER:
      return "USER";
    case v1::USAGE_BY_FLAVOR:
      return "FLAVOR";
    case v1::USAGE_BY_JOB:
      return "JOB";
    default:
      return "QUEUE";
  }
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool any_util(const v1::UsageResponse& r) {
  for (const auto& row : r.rows())
    if (row.has_gpu_util_percent()) return true;
  return false;
}

std::optional<double> util_of(const v1::UsageRow& row) {
  return row.has_gpu_util_percent() ? std::optional(row.gpu_util_percent()) : std::nullopt;
}

bool any_cost(const v1::UsageResponse& r) {
  for (const auto& row : r.rows())
    if (row.has_cost()) return true;
  return false;
}

std::string dash_if_empty(const std::string& s) { return s.empty() ? "-" : s; }

std::string wait_of(const v1::UsageRow& row, bool p90) {
  if (!row.has_wait_p50_seconds()) return "-";
  return human_age(p90 ? row.wait_p90_seconds() : row.wait_p50_seconds());
}

// The sums over the rows (the waits do not add up: none).
v1::UsageRow total_of(const v1::UsageResponse& r) {
  v1::UsageRow t;
  t.set_key("TOTAL");
  bool every_cost = true;
  double cost = 0, util = 0;
  for (const auto& row : r.rows()) {
    // The rows' means weighted by the GPU time they were sampled over, as each row's own.
    util += row.gpu_util_percent() * static_cast<double>(row.sampled_gpu_milli_seconds());
    t.set_sampled_gpu_milli_seconds(t.sampled_gpu_milli_seconds() + row.sampled_gpu_milli_seconds());
    t.set_gpu_hours(t.gpu_hours() + row.gpu_hours());
    t.set_gpu_hours_lost(t.gpu_hours_lost() + row.gpu_hours_lost());
    t.set_succeeded(t.succeeded() + row.succeeded());
    t.set_failed(t.failed() + row.failed());
    t.set_cancelled(t.cancelled() + row.cancelled());
    t.set_unfinished(t.unfinished() + row.unfinished());
    t.set_waited(t.waited() + row.waited());
    every_cost = every_cost && row.has_cost();
    cost += row.cost();
  }
  if (every_cost && !r.rows().empty()) t.set_cost(cost);
  if (t.sampled_gpu_milli_seconds() > 0) t.set_gpu_util_percent(util / static_cast<double>(t.sampled_gpu_milli_seconds()));
  return t;
}

}  // namespace

std::string percent_text(std::optional<double> percent) {
  return percent ? fixed(*percent, 0) + "%" : "-";
}

// The audit log (gpuq audit): a report, as usage is.
std::string audit_table(const std::vector<v1::AuditEntry>& entries, bool wide) {
  std::vector<std::string> header = {"AT", "USER", "ACTION", "TARGET", "RESULT"};
  if (wide) header.push_back("ORIGIN");
  Table t(header);
  for (const auto& e : entries) {
    std::vector<std::string> row = {format_time(e.at()), e.user().empty() ? "(anonymous)" : e.user(), e.action(),
                                    e.target().empty() ? std::string("-") : e.target(), e.result()};
    if (wide) row.push_back(e.origin());
    t.add(std::move(row));
  }
  return t.render(wide ? 0 : 100, {3, 4});
}

std::string process_use_text(const v1::Job& j) {
  if (!j.has_cpu_seconds() && !j.has_memory_peak_bytes()) return "";
  std::string out = "Used:        ";
  if (j.has_cpu_seconds()) out += "CPU " + fixed(j.cpu_seconds(), 2) + " s";
  if (j.has_memory_peak_bytes())
    out += std::string(j.has_cpu_seconds() ? ", " : "") + "memory peak " + human_bytes(j.memory_peak_bytes());
  return out + " (from its cgroups)\n";
}

std::string gpu_use_text(const v1::Job& j, std::int64_t now) {
  if (!j.has_gpu_util_percent()) return "- (not sampled)";
  std::string out = percent_text(j.gpu_util_percent()) + " mean over " + std::to_string(j.gpu_samples()) +
                    " samples, peak memory " + std::to_string(j.gpu_memory_peak_mib()) + " MiB";
  if (j.idle_since() > 0) out += "; idle since " + format_time(j.idle_since()) + " (" + human_age(now - j.idle_since()) + ")";
  return out;
}

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string usage_table(const v1::UsageResponse& r, bool wide) {
  std::ostringstream o;
  const bool jobs = r.by() == v1::USAGE_BY_JOB;
  o << "From " << (r.since() == 0 ? std::string("the beginning") : format_time(r.since())) << " to "
    << format_time(r.until()) << ", by " << lower(key_header(r.by())) << "\n";
  const bool cost = any_cost(r);
  const bool util = any_util(r);  // only where some job's GPUs were sampled, as cost
  const std::string cost_header = r.currency().empty() ? "COST" : "COST(" + r.currency() + ")";
  std::vector<std::string> header = {key_header(r.by())};
  if (jobs) header.insert(header.end(), {"QUEUE", "USER"});
  if (jobs && wide) header.push_back("FLAVOR");
  if (jobs) header.push_back("STATE");
  header.insert(header.end(), {"GPU-HOURS", "LOST"});
  if (util) header.push_back("GPU-UTIL");
  if (jobs)
    header.push_back("WAIT");
  else if (wide)
    header.insert(header.end(), {"SUCCEEDED", "FAILED", "CANCELLED", "UNFINISHED", "WAITED",
                                 "WAIT-P50", "WAIT-P90"});
  else
    header.insert(header.end(), {"JOBS S/F/C/U", "WAIT P50/P90"});
  if (cost) header.push_back(cost_header);
  Table t(header);
  auto add = [&](const v1::UsageRow& row, bool total) {
    std::vector<std::string> cells = {total ? row.key() : dash_if_empty(row.key())};
    if (jobs && total)
      cells.insert(cells.end(), {"", ""});
    else if (jobs)
      cells.insert(cells.end(), {row.queue(), dash_if_empty(row.user())});
    if (jobs && wide) cells.push_back(total ? "" : dash_if_empty(row.flavor()));
    if (jobs) cells.push_back(total ? "" : state_name(row.state()));
    cells.insert(cells.end(), {fixed(row.gpu_hours(), 2), fixed(row.gpu_hours_lost(), 2)});
    if (util) cells.push_back(percent_text(util_of(row)));
    if (jobs) {
      cells.push_back(total ? "" : wait_of(row, false));
    } else if (wide) {
      cells.insert(cells.end(),
                   {std::to_string(row.succeeded()), std::to_string(row.failed()),
                    std::to_string(row.cancelled()), std::to_string(row.unfinished()),
                    std::to_string(row.waited()), wait_of(row, false), wait_of(row, true)});
    } else {
      cells.push_back(std::to_string(row.succeeded()) + "/" + std::to_string(row.failed()) + "/" +
                      std::to_string(row.cancelled()) + "/" + std::to_string(row.unfinished()));
      cells.push_back(row.has_wait_p50_seconds() ? wait_of(row, false) + "/" + wait_of(row, true)
                                                 : "-");
    }
    if (cost) cells.push_back(row.has_cost() ? fixed(row.cost(), 2) : "-");
    t.add(std::move(cells));
  };
  for (const auto& row : r.rows()) add(row, false);
  add(total_of(r), true);
  o << t.render(wide ? 0 : 80,
                jobs ? std::vector<std::size_t>{0, 1, 2} : std::vector<std::size_t>{0});
  return o.str();
}

std::string usage_csv(const v1::UsageResponse& r) {
  const bool jobs = r.by() == v1::USAGE_BY_JOB;
  std::ostringstream o;
  o << lower(key_header(r.by())) << (jobs ? ",queue,user,flavor,state" : "")
    << ",gpu_hours,gpu_hours_lost,succeeded,failed,cancelled,unfinished,waited,wait_p50_seconds,"
       "wait_p90_seconds,cost,currency,gpu_util_percent\n";
  for (const auto& row : r.rows()) {
    o << csv_field(row.key());
    if (jobs)
      o << ',' << csv_field(row.queue()) << ',' << csv_field(row.user()) << ','
        << csv_field(row.flavor()) << ',' << state_name(row.state());
    o << ',' << fixed(row.gpu_hours(), 6) << ',' << fixed(row.gpu_hours_lost(), 6) << ','
      << row.succeeded() << ',' << row.failed() << ',' << row.cancelled() << ',' << row.unfinished()
      << ',' << row.waited() << ','
      << (row.has_wait_p50_seconds() ? std::to_string(row.wait_p50_seconds()) : "") << ','
      << (row.has_wait_p90_seconds() ? std::to_string(row.wait_p90_seconds()) : "") << ','
      << (row.has_cost() ? fixed(row.cost(), 6) : "") << ','
      << (row.has_cost() ? csv_field(r.currency()) : "") << ','
      << (row.has_gpu_util_percent() ? fixed(row.gpu_util_percent(), 1) : "") << '\n';
  }
  return o.str();
}

}  // namespace gpuq::cli
