// ls, show, explain, cancel, hold, release, update: unary calls only, so the quick gpuq has them
// (submit: commands_submit.cpp; watch, logs: commands_stream.cpp; the tree: commands_all.cpp).
#include <functional>
#include <memory>

#include "cli/commands.hpp"
#include "cli/batch_format.hpp"
#include "cli/format.hpp"
#include "cli/requests.hpp"

namespace gpuq::cli {

namespace {

struct ListOptions {
  std::string queue, owner, output = "table";
  std::vector<std::string> states;
  bool all = false, finished = false, start = false, expand = false;
  int limit = 0;
};

int run_ls(Context& ctx, const ListOptions& o) {
  const OutputFormat f = parse_output_format(o.output);
  v1::ListJobsRequest req;
  req.set_queue(o.queue);
  req.set_owner(o.owner);
  // gpuqd folds what it keeps as one row (an array's unchanged members), this the rest.
  req.set_fold_arrays(!o.expand && f != OutputFormat::kJson && f != OutputFormat::kYaml);
  for (const auto& s : o.states) req.add_states(parse_state(s));
  if (o.finished)
    for (auto s : {v1::JOB_STATE_SUCCEEDED, v1::JOB_STATE_FAILED, v1::JOB_STATE_CANCELLED})
      req.add_states(s);
  if (o.states.empty() && !o.all && !o.finished)
    for (auto s : {v1::JOB_STATE_PENDING, v1::JOB_STATE_ADMITTED, v1::JOB_STATE_RUNNING,
                   v1::JOB_STATE_PREEMPTING})
      req.add_states(s);
  v1::ListJobsResponse all;
  do {
    const int left = o.limit > 0 ? o.limit - all.jobs_size() : 1000;
    req.set_page_size(std::min(left, 1000));
    v1::ListJobsResponse page;
    grpc::Status st = ctx.unary("/gpuq.v1.Jobs/List", req, page);
    if (!st.ok()) return ctx.fail(st);
    for (auto& j : *page.mutable_jobs()) {
      if (o.limit > 0 && all.jobs_size() >= o.limit) break;
      *all.add_jobs() = std::move(j);
    }
    if (!page.next_page_token().empty() && page.next_page_token() == req.page_token())
      return ctx.fail({grpc::StatusCode::INTERNAL, "gpuqd gave the same page token again (\"" +
                                                       escaped(page.next_page_token()) + "\"); stopped reading"});
    req.set_page_token(page.next_page_token());
  } while (!req.page_token().empty() && (o.limit <= 0 || all.jobs_size() < o.limit));
  if (f == OutputFormat::kJson || f == OutputFormat::kYaml) {
    ctx.out << render_message(all, f);
    return 0;
  }
  std::vector<v1::Job> jobs;  // moved out of the reply, not copied
  jobs.reserve(static_cast<std::size_t>(all.jobs_size()));
  for (auto& j : *all.mutable_jobs()) jobs.push_back(std::move(j));
  if (!o.expand) jobs = fold_arrays(std::move(jobs));
  if (jobs.empty())
    ctx.out << (o.finished ? "No finished jobs\n"
                : o.states.empty() && !o.all ? "No unfinished jobs (--all shows finished ones too)\n"
                                             : "No jobs\n");
  else
    ctx.out << jobs_table(jobs, f == OutputFormat::kWide, unix_now(), o.start);
  return 0;
}

}  // namespace

void add_ls(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<ListOptions>();
  auto* cmd = app.add_subcommand("ls", "List jobs (unfinished ones unless --all or --state)");
  cmd->alias("list");
  cmd->add_option("-q,--queue", o->queue, "only this queue");
  auto* states = cmd->add_option("--state", o->states,
                                 "only these states (repeatable): pending, admitted, running, "
                                 "preempting, succeeded, failed, cancelled");
  cmd->add_option("--owner", o->owner, "only this owner");
  auto* all = cmd->add_flag("-a,--all", o->all, "finished jobs too");
  cmd->add_flag("--finished", o->finished,
                "only finished jobs (succeeded, failed, cancelled), as gpuqd's state file keeps "
                "them (jobRetention)")
      ->excludes(all)
      ->excludes(states);
  cmd->add_option("-o,--output", o->output, "table, wide, json or yaml")
      ->check(CLI::IsMember({"table", "wide", "json", "yaml"}));
  cmd->add_option("--limit", o->limit, "at most this many jobs; 0 (default): all")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("-r,--array-members", o->expand,
                "one row per pending array member (by default they fold into one: j12_[40-99], as squeue)");
  cmd->add_flag("--start", o->start,
                "a START column: when each pending job is expected to start (gpuqd's what-if run; "
                "? beyond 30 days or never as things stand, - not estimated yet)");
  cmd->callback([&ctx, o] { ctx.action = [o](Context& c) { return run_ls(c, *o); }; });
}

namespace {
struct ShowOptions {
  std::string id, output = "table";
};
}  // namespace

void add_show(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<ShowOptions>();
  auto* cmd = app.add_subcommand("show", "Show one job");
  cmd->add_option("ID", o->id, "job id")->required();
  cmd->add_option("-o,--output", o->output, "table, json or yaml")
      ->check(CLI::IsMember({"table", "wide", "json", "yaml"}));
  cmd->callback([&ctx, o] {
    ctx.action = [o](Context& c) {
      const OutputFormat f = parse_output_format(o->output);
      v1::GetJobRequest req;
      req.set_id(o->id);
      v1::GetJobResponse resp;
      grpc::Status st = c.unary("/gpuq.v1.Jobs/Get", req, resp);
      if (!st.ok()) return c.fail(st);
      if (f == OutputFormat::kJson || f == OutputFormat::kYaml)
        c.out << render_message(resp.job(), f);
      else
        c.out << job_detail(resp.job(), unix_now());
      return 0;
    };
  });
}

namespace {

// Calls `act` for each id in turn (the job as it is after) and prints "job/ID VERB (STATE)";
// exit 1 if any failed, stopping early when gpuqd cannot be reached (the rest would fail too).
using JobAction = std::function<grpc::Status(Context&, const std::string&, v1::Job&)>;
int each_job(Context& c, const std::vector<std::string>& ids, const std::string& verb, const JobAction& act) {
  int rc = 0;
  for (const auto& id : ids) {
    v1::Job job;
    if (grpc::Status st = act(c, id, job); !st.ok()) {
      rc = c.fail(st);
      if (is_unreachable(st)) break;
      continue;
    }
    c.out << "job/" << id << " " << verb << " (" << job_state(job) << ")\n";
  }
  return rc;
}

// One call of a Jobs RPC that takes a job id and answers with the job.
template <class Req, class Resp>
grpc::Status job_call(Context& c, const char* method, Req req, const std::string& id, v1::Job& out) {
  req.set_id(id);
  Resp resp;
  grpc::Status st = c.unary(method, req, resp);
  out = resp.job();
  return st;
}

}  // namespace

void add_cancel(CLI::App& app, Context& ctx) {
  auto ids = std::make_shared<std::vector<std::string>>();
  auto force = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("cancel", "Cancel jobs (tries every id; exit 1 if any failed)");
  cmd->add_option("ID", *ids, "job ids")->required();
  cmd->add_flag("--force", *force,
                "kill the processes now (SIGKILL; Kubernetes: grace period 0) instead of giving "
                "them the job's grace period; also for a job already cancelled and stopping");
  cmd->callback([&ctx, ids, force] {
    ctx.action = [ids, force](Context& c) {
      return each_job(c, *ids, "cancelled", [force](Context& x, const std::string& id, v1::Job& out) {
        v1::CancelJobRequest req;
        req.set_force(*force);
        return job_call<v1::CancelJobRequest, v1::CancelJobResponse>(x, "/gpuq.v1.Jobs/Cancel", req, id, out);
      });
    };
  });
}

// gpuq hold / gpuq release: each id in turn (exit 1 if any failed), like cancel.
void add_hold_release(CLI::App& app, Context& ctx, bool hold) {
  auto ids = std::make_shared<std::vector<std::string>>();
  auto* cmd = hold ? app.add_subcommand("hold", "Hold pending jobs: they stay pending but are not scheduled")
                   : app.add_subcommand("release", "Release held jobs: back in their place in their queue");
  cmd->add_option("ID", *ids, "job ids")->required();
  cmd->callback([&ctx, ids, hold] {
    ctx.action = [ids, hold](Context& c) {
      return each_job(c, *ids, hold ? "held" : "released",
                      [hold](Context& x, const std::string& id, v1::Job& out) {
                        if (hold)
                          return job_call<v1::HoldJobRequest, v1::HoldJobResponse>(x, "/gpuq.v1.Jobs/Hold", {}, id, out);
                        return job_call<v1::ReleaseJobRequest, v1::ReleaseJobResponse>(x, "/gpuq.v1.Jobs/Release", {},
                                                                                      id, out);
                      });
    };
  });
}

// gpuq update: pending jobs' priority, max runtime or queue, each id in turn, like cancel.
void add_update(CLI::App& app, Context& ctx) {
  auto ids = std::make_shared<std::vector<std::string>>();
  auto req = std::make_shared<v1::UpdateJobRequest>();
  auto* cmd = app.add_subcommand("update", "Change pending jobs' priority, max runtime or queue (audited)");
  cmd->add_option("ID", *ids, "job ids")->required();
  cmd->add_option_function<std::string>("--priority", [req](const std::string& v) { req->set_priority(v); },
                                        "integer or class name");
  cmd->add_option_function<std::int64_t>("--max-runtime", [req](std::int64_t v) { req->set_max_runtime_seconds(v); },
                                         "3600, 1h, 1:00:00 or 1-0; 0: no limit (the queue's maxRuntime still applies)")
      ->transform(duration_arg());
  cmd->add_option_function<std::string>("-q,--queue", [req](const std::string& v) { req->set_queue(v); },
                                        "move it to this queue (you must be allowed to submit there)");
  cmd->callback([&ctx, ids, req] {
    ctx.action = [ids, req](Context& c) {
      if (!req->has_priority() && !req->has_max_runtime_seconds() && !req->has_queue())
        throw UsageError("give what to change: --priority, --max-runtime or --queue");
      return each_job(c, *ids, "updated", [req](Context& x, const std::string& id, v1::Job& out) {
        return job_call<v1::UpdateJobRequest, v1::UpdateJobResponse>(x, "/gpuq.v1.Jobs/Update", *req, id, out);
      });
    };
  });
}

void add_explain(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<ShowOptions>();
  auto* cmd = app.add_subcommand("explain", "Why a job waits: its order, the quota that holds it, the room on the nodes");
  cmd->add_option("ID", o->id, "job id")->required();
  cmd->add_option("-o,--output", o->output, "table, json or yaml")->check(CLI::IsMember({"table", "json", "yaml"}));
  cmd->callback([&ctx, o] {
    ctx.action = [o](Context& c) {
      const OutputFormat f = parse_output_format(o->output);
      v1::ExplainJobRequest req;
      req.set_id(o->id);
      v1::ExplainJobResponse resp;
      grpc::Status st = c.unary("/gpuq.v1.Jobs/Explain", req, resp);
      if (!st.ok()) return c.fail(st);
      if (f == OutputFormat::kJson || f == OutputFormat::kYaml)
        c.out << render_message(resp, f);
      else
        c.out << explanation_text(resp.job(), resp.explanation());
      return 0;
    };
  });
}

}  // namespace gpuq::cli
