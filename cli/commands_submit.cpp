// submit: from flags and a command, from -f job.yaml, or from a batch script with #GPUQ
// directives; --wait. run: the same job on a terminal, attached to this one.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "cli/batch_script.hpp"
#include "cli/commands.hpp"
#include "cli/format.hpp"
#include "cli/requests.hpp"
#include "cli/submit_options.hpp"

namespace gpuq::cli {

SubmitCommand add_submit_options(CLI::App& cmd, SubmitOptions& o) {
  SubmitCommand c;
  c.file = cmd.add_option("-f,--file", o.file,
                          "job YAML (scenario job keys + command, env, workingDir, image); - for stdin");
  auto& flag_opts = c.job_flags;
  flag_opts.push_back(cmd.add_option("-q,--queue", o.flags.queue, "queue to submit to (required without -f)"));
  flag_opts.push_back(cmd.add_option("--gpus", o.flags.gpus, "GPUs per pod: 2, 500m or 0.5"));
  flag_opts.push_back(cmd.add_option("--cpu", o.flags.cpu, "CPU per pod: 4 or 250m"));
  flag_opts.push_back(cmd.add_option("--memory", o.flags.memory, "memory per pod: 64Gi or bytes"));
  flag_opts.push_back(cmd.add_option("--replicas", o.flags.replicas, "pods, admitted all together (a gang); default 1"));
  flag_opts.push_back(
      cmd.add_option("--priority", o.flags.priority, "integer or class name (low, normal, high, critical)"));
  flag_opts.push_back(cmd.add_option("--name", o.flags.name, "free text shown in listings; default: the script's name"));
  flag_opts.push_back(cmd.add_option("--id", o.flags.id, "job id; a retry with the same id gets ALREADY_EXISTS"));
  flag_opts.push_back(cmd.add_option("--flavor", o.flags.flavors, "accepted flavor (repeatable); default any"));
  c.preemptible = cmd.add_option("--preemptible", o.preemptible, "true (default) or false");
  flag_opts.push_back(c.preemptible);
  c.grace = cmd.add_option("--grace-period", o.grace, "between stop and kill: 30, 90s, 5m (default 30 s)")
                ->transform(duration_arg());
  flag_opts.push_back(c.grace);
  flag_opts.push_back(cmd.add_option("--max-runtime", o.flags.max_runtime,
                                     "3600, 1h, 1:00:00 or 1-0 (Slurm's); 0 (default): no limit")
                          ->transform(duration_arg()));
  flag_opts.push_back(cmd.add_option("--notify", o.flags.notify,
                                     "URL gpuqd POSTs the job's state changes to (JSON)"));
  flag_opts.push_back(cmd.add_option("--notify-on", o.flags.notify_on,
                                     "events for --notify, comma-separated: started, finished, failed, preempted, "
                                     "cancelled (default finished,failed)")
                          ->delimiter(','));
  flag_opts.push_back(cmd.add_option("--expected-runtime", o.flags.expected_runtime,
                                     "how long it expects to run (30m, 2h), for start-time estimates only "
                                     "(<= --max-runtime)")
                          ->transform(duration_arg()));
  flag_opts.push_back(cmd.add_flag("--exclusive", o.flags.exclusive, "no other queue's pods on its nodes"));
  flag_opts.push_back(cmd.add_option("--env", o.flags.env, "NAME=VALUE for the command (repeatable)"));
  flag_opts.push_back(
      cmd.add_option("--node-selector", o.flags.node_selector, "KEY=VALUE: only nodes with this label (repeatable)"));
  flag_opts.push_back(cmd.add_option("--toleration", o.flags.tolerations,
                                     "KEY=VALUE:EFFECT, KEY=VALUE, KEY:EFFECT or KEY (any value): "
                                     "tolerate a node taint (repeatable)"));
  flag_opts.push_back(cmd.add_option("--gpu-model", o.flags.gpu_models,
                                     "a GPU model the job accepts, as nodes label it (gpuq.io/gpu-model; "
                                     "repeatable: any of them)"));
  flag_opts.push_back(cmd.add_option("--workdir", o.flags.workdir,
                                     "working directory of the command; default: the current directory"));
  flag_opts.push_back(cmd.add_option("--image", o.flags.image,
                                     "container image (binder: kubernetes; default: the queue's "
                                     "kubernetes.defaultImage)"));
  flag_opts.push_back(cmd.add_option("--retries", o.flags.retries,
                                     "requeue a failed run (non-zero exit, node lost) up to N times; default 0"));
  flag_opts.push_back(cmd.add_option("--array", o.flags.array,
                                     "a job array: 0-99, 1,3,5-9 or 0-30:10, then %N to run at most N at once; "
                                     "each member gets GPUQ_ARRAY_INDEX"));
  flag_opts.push_back(cmd.add_option("--after-ok", o.flags.after_ok,
                                     "run once this job (or array) succeeded; repeatable, or ids comma-separated"));
  flag_opts.push_back(cmd.add_option("--after-any", o.flags.after_any, "run once this job (or array) ended"));
  flag_opts.push_back(cmd.add_option("--after-not-ok", o.flags.after_not_ok,
                                     "run once this job (or array) failed or was cancelled"));
  flag_opts.push_back(cmd.add_flag("--singleton", o.flags.singleton,
                                   "run only while no other job of yours with this name is admitted or running"));
  c.command = cmd.add_option("command", o.flags.command,
                             "a batch script and its arguments (SCRIPT ARGS...), or a command after --");
  flag_opts.push_back(c.command);
  cmd.add_option("--owner", o.flags.owner, "the job's owner (gpuqd's admins only); default: you");
  cmd.add_flag("--hold", o.hold, "submit it held: pending, not scheduled until gpuq release");
  cmd.add_option("-o,--output", o.output, "table (default), json or yaml")
      ->check(CLI::IsMember({"table", "wide", "json", "yaml"}));
  cmd.add_flag("--wait", o.wait,
               "wait until the job has ended and exit with its exit code (cancelled: 125); Ctrl-C stops "
               "waiting, not the job");
  // A repeatable option takes one value each time it is given: CLI11 would otherwise read on
  // and take a following "--" as the end of its values, and the command after it as options.
  for (auto* opt : flag_opts)
    if (opt->get_items_expected_max() > 1 && opt != c.command)
      opt->expected(1)->allow_extra_args(false)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  // Everything after the script is its arguments, as for sbatch: `gpuq submit t.sh --lr 3`.
  cmd.positionals_at_end();
  return c;
}

namespace {

bool repeatable(const CLI::Option* opt) {
  return opt->get_multi_option_policy() == CLI::MultiOptionPolicy::TakeAll;
}

std::string at(const BatchScript& s, int line) { return s.file + ":" + std::to_string(line) + ": #GPUQ "; }

}  // namespace

void apply_directives(CLI::App& cmd, const BatchScript& script) {
  // Each line is parsed alone, by the same options, so that an error names its line.
  std::vector<std::pair<std::string, std::vector<std::string>>> given;  // option name -> results, in order
  for (const BatchScript::Directive& d : script.directives) {
    CLI::App line_app;
    line_app.allow_extras();
    SubmitOptions scratch;
    const SubmitCommand c = add_submit_options(line_app, scratch);
    std::vector<std::string> reversed(d.words.rbegin(), d.words.rend());
    try {
      line_app.parse(reversed);
    } catch (const CLI::ParseError& e) {
      throw UsageError(at(script, d.line) + e.what());
    }
    if (!line_app.remaining().empty())
      throw UsageError(at(script, d.line) + line_app.remaining().front() +
                       ": gpuq submit has no such flag (a directive takes gpuq submit's flags, as on the "
                       "command line: gpuq submit --help)");
    if (c.command->count() > 0)
      throw UsageError(at(script, d.line) + "\"" + d.words.front() +
                       "\" is not a flag; a directive holds flags only (the script's arguments go after "
                       "it on the command line)");
    if (c.file->count() > 0)
      throw UsageError(at(script, d.line) + "-f: a batch script is the job; it cannot name a job file");
    for (const CLI::Option* opt : line_app.get_options()) {
      if (opt->count() == 0) continue;
      auto it = std::find_if(given.begin(), given.end(), [&](const auto& g) { return g.first == opt->get_name(); });
      if (it == given.end()) it = given.insert(given.end(), {opt->get_name(), {}});
      if (!repeatable(opt)) it->second.clear();  // a later line wins
      it->second.insert(it->second.end(), opt->results().begin(), opt->results().end());
    }
  }
  for (const auto& [name, results] : given) {
    CLI::Option* opt = cmd.get_option(name);
    if (opt->count() > 0) continue;  // the command line wins
    for (const std::string& r : results) opt->add_result(r);
    try {
      opt->run_callback();
    } catch (const CLI::Error& e) {
      throw UsageError(script.file + ": #GPUQ " + name + ": " + e.what());
    }
  }
}

namespace {

// The script's content; no more than kMaxScriptBytes + 1 bytes are read (parse_batch_script
// says it is too large).
std::string read_script(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw UsageError(path +
                     ": cannot open the batch script; to run a command instead, put it after --: "
                     "gpuq submit -q QUEUE -- COMMAND ARGS");
  std::string text(kMaxScriptBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) throw UsageError(path + ": cannot read the batch script");
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text;
}

// True when the positional words came after "--" (a command to run as it is), false when they
// did not (a batch script and its arguments). After the script every word is its own, "--" too.
bool command_after_double_dash(const std::vector<std::string>& args, const std::vector<std::string>& command) {
  const auto dd = std::find(args.begin(), args.end(), "--");
  return dd != args.end() && static_cast<std::size_t>(args.end() - dd - 1) == command.size();
}

}  // namespace

// --wait's exit code for a job that ended: its own when it ran to an end, 125 when cancelled.
int wait_exit_code(const v1::Job& j) {
  if (j.state() == v1::JOB_STATE_SUCCEEDED) return 0;
  if (j.state() == v1::JOB_STATE_CANCELLED) return 125;
  return j.exit_code() > 0 && j.exit_code() <= 255 ? j.exit_code() : 1;
}

bool job_finished(v1::JobState s) {
  return s == v1::JOB_STATE_SUCCEEDED || s == v1::JOB_STATE_FAILED || s == v1::JOB_STATE_CANCELLED;
}

namespace {

// Polls Jobs.Get until the job has ended: every 0.25 s at first, doubling to every 5 s (a Watch
// could start only at the beginning of the kept history, replayed on gpuqd's engine thread).
// gpuqd unreachable (restarting) is waited out for up to 5 minutes in a row.
int wait_for_job(Context& ctx, const std::string& id) {
  using namespace std::chrono;
  milliseconds delay(250);
  bool unreachable = false;
  steady_clock::time_point unreachable_since{};
  while (true) {
    v1::GetJobRequest req;
    req.set_id(id);
    v1::GetJobResponse resp;
    const grpc::Status st = ctx.unary("/gpuq.v1.Jobs/Get", req, resp);
    if (st.ok()) {
      unreachable = false;
      const v1::Job& j = resp.job();
      if (job_finished(j.state())) {
        const int rc = wait_exit_code(j);
        ctx.err << "job/" << id << " " << state_name(j.state())
                << (j.reason().empty() ? std::string() : ": " + escaped(j.reason())) << " (exit " << rc << ")\n";
        return rc;
      }
    } else if (is_unreachable(st)) {
      if (!unreachable) unreachable_since = steady_clock::now();
      unreachable = true;
      if (steady_clock::now() - unreachable_since > minutes(5)) return ctx.fail(st);
    } else {
      return ctx.fail(st);
    }
    std::this_thread::sleep_for(delay);
    delay = std::min<milliseconds>(delay * 2, seconds(5));
  }
}

}  // namespace

// The request the options say: a job file (-f), or flags with a batch script or a command.
v1::SubmitJobRequest submit_request(Context& ctx, CLI::App& cmd, SubmitOptions& o, const SubmitCommand& c) {
  v1::SubmitJobRequest req;
  if (c.file->count() > 0) {
    for (const auto* opt : c.job_flags)
      if (opt->count() > 0)
        throw UsageError("-f takes the whole job from the file; " + opt->get_name() + " cannot be combined with it");
    // Known by its account (the socket), a token or a certificate: the server makes the job
    // that identity's.
    const std::string owner = ctx.server_knows_caller() ? std::string() : current_user();
    req = submit_request_from_yaml(read_file_arg(ctx, o.file), o.file, owner);
    if (!o.flags.owner.empty()) req.mutable_spec()->set_owner(o.flags.owner);  // --owner wins
  } else {
    std::optional<BatchScript> script;
    if (!o.flags.command.empty() && !command_after_double_dash(ctx.args, o.flags.command)) {
      script = parse_batch_script(read_script(o.flags.command.front()), o.flags.command.front());
      apply_directives(cmd, *script);
      // The content goes with the job (as sbatch copies it): editing the file later changes nothing.
      o.flags.command = script_command(
          *script, std::vector<std::string>(o.flags.command.begin() + 1, o.flags.command.end()));
      if (o.flags.name.empty()) o.flags.name = script_name(*script);
    }
    if (c.preemptible->count() > 0) o.flags.preemptible = o.preemptible;
    if (c.grace->count() > 0) o.flags.grace_period = o.grace;
    if (o.flags.owner.empty() && !ctx.server_knows_caller()) o.flags.owner = current_user();
    req = submit_request_from_flags(o.flags);
  }
  return req;
}

namespace {

int run_submit(Context& ctx, CLI::App& cmd, SubmitOptions& o, const SubmitCommand& c) {
  v1::SubmitJobRequest req = submit_request(ctx, cmd, o, c);
  if (o.hold) req.mutable_spec()->set_hold(true);
  if (o.wait && !req.spec().array().empty())
    throw UsageError("--wait waits for one job; with --array, wait with --after-any on the array instead");
  const OutputFormat f = parse_output_format(o.output);
  v1::SubmitJobResponse resp;
  grpc::Status st = ctx.unary("/gpuq.v1.Jobs/Submit", req, resp);
  if (!st.ok()) return ctx.fail(st);
  if (f == OutputFormat::kJson || f == OutputFormat::kYaml)
    ctx.out << render_message(resp.job(), f);
  else if (!resp.job().array_id().empty())
    ctx.out << "array/" << resp.job().array_id() << " submitted: " << resp.job().array_id() << "_["
            << req.spec().array().substr(0, req.spec().array().find('%')) << "] (" << job_state(resp.job()) << ")\n";
  else
    ctx.out << "job/" << resp.job().spec().id() << " submitted (" << job_state(resp.job()) << ")\n";
  if (!o.wait) return 0;
  ctx.out.flush();  // the id is known while it waits
  return wait_for_job(ctx, resp.job().spec().id());
}

}  // namespace

void add_submit(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<SubmitOptions>();
  auto* cmd = app.add_subcommand(
      "submit", "Submit a job: a batch script (SCRIPT ARGS..., #GPUQ directives), flags and -- COMMAND, or -f job.yaml");
  auto c = std::make_shared<SubmitCommand>(add_submit_options(*cmd, *o));
  cmd->callback([&ctx, o, c, cmd] { ctx.action = [o, c, cmd](Context& x) { return run_submit(x, *cmd, *o, *c); }; });
}

}  // namespace gpuq::cli
