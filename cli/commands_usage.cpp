// gpuq usage: accounting per queue, user, flavor or job over a period (Admin.Usage), every page.
#include <map>
#include <memory>

#include "cli/commands.hpp"
#include "cli/format.hpp"
#include "cli/requests.hpp"

namespace gpuq::cli {

namespace {

struct UsageOptions {
  std::string by = "queue", since, until, queue, user, output = "table";
  int page_size = 0;
};

std::int64_t time_flag(const char* flag, const std::string& text, std::int64_t now) {
  try {
    return parse_time_arg(text, now);
  } catch (const UsageError& e) {
    throw UsageError(std::string(flag) + ": " + e.what());
  }
}

// The request from the flags; every error names the flag, the value and what is allowed.
v1::UsageRequest usage_request(const UsageOptions& o, std::int64_t now) {
  static const std::map<std::string, v1::UsageBy> kBy = {{"queue", v1::USAGE_BY_QUEUE},
                                                         {"user", v1::USAGE_BY_USER},
                                                         {"flavor", v1::USAGE_BY_FLAVOR},
                                                         {"job", v1::USAGE_BY_JOB}};
  const auto by = kBy.find(o.by);
  if (by == kBy.end())
    throw UsageError("--by \"" + o.by + "\" is not allowed; use queue, user, flavor or job");
  if (o.page_size < 0 || o.page_size > 1000)
    throw UsageError("--page-size " + std::to_string(o.page_size) +
                     " is not allowed; use 1 to 1000 (0: the server's 100)");
  v1::UsageRequest req;
  req.set_by(by->second);
  req.set_since(time_flag("--since", o.since, now));
  req.set_until(time_flag("--until", o.until, now));
  const std::int64_t until = req.until() == 0 ? now : req.until();
  if (req.since() > until)
    throw UsageError("--since " + o.since + " (" + format_time(req.since()) +
                     ") is after --until " + (o.until.empty() ? std::string("(now)") : o.until) +
                     " (" + format_time(until) + "); the period must start before it ends");
  req.set_queue(o.queue);
  req.set_user(o.user);
  req.set_page_size(o.page_size);
  return req;
}

int run_usage(Context& ctx, const UsageOptions& o) {
  const bool csv = o.output == "csv";
  const OutputFormat f = csv ? OutputFormat::kTable : parse_output_format(o.output);
  v1::UsageRequest req = usage_request(o, unix_now());
  v1::UsageResponse all;
  for (bool first = true;; first = false) {
    v1::UsageResponse page;
    grpc::Status st = ctx.unary("/gpuq.v1.Admin/Usage", req, page);
    if (!st.ok()) return ctx.fail(st);
    if (first) {
      all = page;
      all.clear_rows();
      all.clear_next_page_token();  // every page merged
      req.set_until(page.until());  // "now" stays the first page's: the pages are one period
    }
    for (auto& row : *page.mutable_rows()) *all.add_rows() = std::move(row);
    if (page.next_page_token().empty()) break;
    req.set_page_token(page.next_page_token());
  }
  if (csv)
    ctx.out << usage_csv(all);
  else if (f == OutputFormat::kJson || f == OutputFormat::kYaml)
    ctx.out << render_message(all, f);
  else
    ctx.out << usage_table(all, f == OutputFormat::kWide);
  return 0;
}

}  // namespace

void add_usage_command(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<UsageOptions>();
  auto* cmd = app.add_subcommand("usage",
                                 "GPU-hours allocated and lost to preemption, jobs by outcome, "
                                 "waits and cost, per queue, user, "
                                 "flavor or job over a period (cli/README.md)");
  cmd->add_option("--by", o->by, "queue (default), user, flavor or job");
  cmd->add_option(
      "--since,--from", o->since,
      "start: Unix seconds, 7d/-7d, 24h, 1h30m, 2w back from now, YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS][Z|+HH:MM] "
      "(UTC unless it says otherwise); default: the beginning");
  cmd->add_option("--until,--to", o->until, "end (not included), the same forms; default: now");
  cmd->add_option("-q,--queue", o->queue, "only this queue's jobs");
  cmd->add_option("-u,--user", o->user, "only this user's jobs");
  cmd->add_option("--page-size", o->page_size,
                  "rows per call (all pages are read; 0: the server's 100)");
  cmd->add_option("-o,--output", o->output, "table, wide, csv, json or yaml")
      ->check(CLI::IsMember({"table", "wide", "csv", "json", "yaml"}));
  cmd->callback([&ctx, o] { ctx.action = [o](Context& c) { return run_usage(c, *o); }; });
}

}  // namespace gpuq::cli
