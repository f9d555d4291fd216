// queues, nodes (cordon, uncordon, drain), apply.
#include <memory>
#include <type_traits>

#include "api/from_proto.hpp"
#include "cli/commands.hpp"
#include "cli/format.hpp"
#include "cli/requests.hpp"
#include "spec/kueue.hpp"
#include "spec/queue_write.hpp"

namespace gpuq::cli {

namespace {

// Every page of a List of queues or nodes, merged into `all` (one reply, as if unpaged). Page
// tokens are names, in order: one that does not move on stops the loop.
template <class Response, class Items>
grpc::Status list_all(Context& ctx, Response& all, Items* (Response::*items)()) {
  constexpr bool kQueues = std::is_same_v<Response, v1::ListQueuesResponse>;
  using Request = std::conditional_t<kQueues, v1::ListQueuesRequest, v1::ListNodesRequest>;
  Request req;
  do {
    Response page;
    if (grpc::Status st = ctx.unary(kQueues ? "/gpuq.v1.Queues/List" : "/gpuq.v1.Nodes/List", req, page); !st.ok())
      return st;
    for (auto& item : *(page.*items)()) *(all.*items)()->Add() = std::move(item);
    if (!page.next_page_token().empty() && page.next_page_token() <= req.page_token())
      return {grpc::StatusCode::INTERNAL, "gpuqd gave a page token that does not move on (\"" +
                                              escaped(page.next_page_token()) + "\"); stopped reading"};
    req.set_page_token(page.next_page_token());
  } while (!req.page_token().empty());
  return grpc::Status();  // OK (not Status::OK: a data symbol of libgrpc++, which the quick gpuq does not link)
}

struct QueuesOptions {
  std::string name, output = "table";
};

int run_queues(Context& ctx, const QueuesOptions& o) {
  const OutputFormat f = parse_output_format(o.output);
  v1::ListQueuesResponse list;
  grpc::Status st;
  if (o.name.empty()) {
    st = list_all(ctx, list, &v1::ListQueuesResponse::mutable_queues);
  } else {
    v1::GetQueueRequest req;
    req.set_name(o.name);
    v1::GetQueueResponse one;
    st = ctx.unary("/gpuq.v1.Queues/Get", req, one);
    if (st.ok() && (f == OutputFormat::kJson || f == OutputFormat::kYaml)) {
      ctx.out << render_message(one.queue(), f);
      return 0;
    }
    if (st.ok() && f == OutputFormat::kTable) {  // one queue: all of it (-o wide: its table row)
      ctx.out << queue_detail(one.queue());
      return 0;
    }
    *list.add_queues() = one.queue();
  }
  if (!st.ok()) return ctx.fail(st);
  if (f == OutputFormat::kJson || f == OutputFormat::kYaml)
    ctx.out << render_message(list, f);
  else if (list.queues().empty())
    ctx.out << "No queues (gpuq apply -f queues.yaml creates them)\n";
  else
    ctx.out << queues_table(list, f == OutputFormat::kWide);
  return 0;
}

int run_delete_queue(Context& ctx, const std::string& name) {
  v1::DeleteQueueRequest req;
  req.set_name(name);
  v1::DeleteQueueResponse resp;
  if (grpc::Status st = ctx.unary("/gpuq.v1.Queues/Delete", req, resp); !st.ok()) return ctx.fail(st);
  ctx.out << "queue/" << name << " deleted\n";
  return 0;
}

// Every queue as Kueue YAML (spec/kueue.hpp): what Kueue cannot say is named on stderr.
int run_export(Context& ctx, const std::string& format) {
  if (format != "kueue" && format != "objects")
    throw UsageError("--format " + format + " is not allowed; use kueue or objects");
  v1::ListQueuesResponse list;
  if (grpc::Status st = list_all(ctx, list, &v1::ListQueuesResponse::mutable_queues); !st.ok())
    return ctx.fail(st);
  ResourceNames names;
  std::vector<QueueSpec> specs;
  for (const v1::QueueStatus& q : list.queues()) {
    Result<QueueSpec> spec = api::from_proto(q.spec(), names);
    if (!spec) {
      ctx.err << "gpuq: queue " << escaped(q.spec().name()) << " from gpuqd cannot be read: "
              << escaped(spec.error()) << "\n";
      return 1;
    }
    specs.push_back(std::move(spec).value());
  }
  if (format == "objects") {  // gpuq's own Queue objects, for kubectl apply
    ctx.out << spec::write_queue_objects(specs, names);
    return 0;
  }
  std::vector<std::string> warnings;
  const std::string text = spec::write_kueue(specs, names, warnings);
  for (const std::string& w : warnings) ctx.err << "gpuq: warning: " << w << "\n";
  ctx.out << text;
  return 0;
}

void add_queues(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<QueuesOptions>();
  auto* cmd = app.add_subcommand("queues", "List queues with quota, usage and fair share, or delete one");
  cmd->require_subcommand(0, 1);
  cmd->add_option("NAME", o->name, "only this queue: its quota and use, guardrails and roles");
  cmd->add_option("-o,--output", o->output, "table, wide, json or yaml")
      ->check(CLI::IsMember({"table", "wide", "json", "yaml"}));
  auto target = std::make_shared<std::string>();
  auto* del = cmd->add_subcommand("delete", "Delete a queue that has no unfinished jobs");
  del->add_option("NAME", *target, "queue name")->required();
  del->callback([&ctx, target] { ctx.action = [target](Context& c) { return run_delete_queue(c, *target); }; });
  auto format = std::make_shared<std::string>("kueue");
  auto* exp = cmd->add_subcommand("export", "Write every queue as Kueue ClusterQueues and ResourceFlavors, or as gpuq's Queue objects");
  exp->add_option("--format", *format, "kueue (kueue.x-k8s.io/v1beta1 YAML) or objects (gpuq.io/v1alpha1 Queue objects, for kubectl apply)")
      ->check(CLI::IsMember({"kueue", "objects"}));
  exp->callback([&ctx, format] { ctx.action = [format](Context& c) { return run_export(c, *format); }; });
  cmd->callback([&ctx, cmd, o] {
    if (!cmd->get_subcommands().empty()) return;  // delete or export set the action
    ctx.action = [o](Context& c) { return run_queues(c, *o); };
  });
}

enum class NodeVerb { kCordon, kUncordon, kDrain };

int run_node_verb(Context& ctx, NodeVerb verb, const std::string& name) {
  v1::NodeNameRequest req;
  req.set_name(name);
  v1::NodeResponse resp;
  const char* method = "";
  const char* done = "";
  switch (verb) {
    case NodeVerb::kCordon:
      method = "/gpuq.v1.Nodes/Cordon";
      done = "cordoned";
      break;
    case NodeVerb::kUncordon:
      method = "/gpuq.v1.Nodes/Uncordon";
      done = "uncordoned";
      break;
    case NodeVerb::kDrain:
      method = "/gpuq.v1.Nodes/Drain";
      done = "draining";
      break;
  }
  const grpc::Status st = ctx.unary(method, req, resp);
  if (!st.ok()) return ctx.fail(st);
  ctx.out << "node/" << name << " " << done << " (" << resp.node().spec().state() << ")\n";
  return 0;
}

void add_nodes(CLI::App& app, Context& ctx) {
  auto output = std::make_shared<std::string>("table");
  auto* cmd = app.add_subcommand("nodes", "List nodes, or cordon, uncordon or drain one");
  cmd->require_subcommand(0, 1);
  cmd->add_option("-o,--output", *output, "table, wide, json or yaml")
      ->check(CLI::IsMember({"table", "wide", "json", "yaml"}));
  auto name = std::make_shared<std::string>();
  const std::pair<const char*, NodeVerb> verbs[] = {{"cordon", NodeVerb::kCordon},
                                                    {"uncordon", NodeVerb::kUncordon},
                                                    {"drain", NodeVerb::kDrain}};
  // Drain is cordon marked for emptying: gpuqd evicts nothing, and the command does not wait.
  const char* help[] = {"Take no new pods; running ones stay (STATE Cordoned)", "Back to Ready",
                        "Take no new pods, marked to be emptied (STATE Draining): running jobs are "
                        "not evicted but run to their end; returns at once, without waiting for "
                        "them (gpuq nodes shows PODS 0 when it is empty)"};
  for (int i = 0; i < 3; ++i) {
    auto* sub = cmd->add_subcommand(verbs[i].first, help[i]);
    sub->add_option("NAME", *name, "node name")->required();
    const NodeVerb v = verbs[i].second;
    sub->callback([&ctx, name, v] {
      ctx.action = [name, v](Context& c) { return run_node_verb(c, v, *name); };
    });
  }
  cmd->callback([&ctx, cmd, output] {
    if (!cmd->get_subcommands().empty()) return;  // a verb set the action
    ctx.action = [output](Context& c) {
      const OutputFormat f = parse_output_format(*output);
      v1::ListNodesResponse list;
      grpc::Status st = list_all(c, list, &v1::ListNodesResponse::mutable_nodes);
      if (!st.ok()) return c.fail(st);
      if (f == OutputFormat::kJson || f == OutputFormat::kYaml)
        c.out << render_message(list, f);
      else if (list.nodes().empty())
        c.out << "No nodes\n";
      else
        c.out << nodes_table(list, f == OutputFormat::kWide);
      return 0;
    };
  });
}

int run_apply(Context& ctx, const std::string& file, bool dry_run, const std::string& output) {
  // The whole file is checked before anything is sent: a typo in the last document changes
  // nothing.
  std::vector<std::string> warnings;
  const std::vector<ApplyItem> items = parse_apply_file(read_file_arg(ctx, file), file, &warnings);
  for (const std::string& w : warnings) ctx.err << "gpuq: warning: " << escaped(w) << "\n";
  if (output == "objects") {  // the queues as Queue objects (a Kueue cluster moves: | kubectl apply -f -)
    if (!dry_run) throw UsageError("--output objects writes the queues for kubectl and applies nothing; add --dry-run");
    ResourceNames names;
    std::vector<QueueSpec> specs;
    for (const ApplyItem& item : items) {
      if (!item.queue) {
        ctx.err << "gpuq: warning: node/" << item.node->name() << " is left out: on Kubernetes nodes are the API server's\n";
        continue;
      }
      Result<QueueSpec> spec = api::from_proto(*item.queue, names);
      if (!spec) throw UsageError("queue " + item.queue->name() + ": " + spec.error());
      specs.push_back(std::move(spec).value());
    }
    ctx.out << spec::write_queue_objects(specs, names);
    return 0;
  }
  if (dry_run) {  // what would be sent, as gpuqd's API reads it
    for (const ApplyItem& item : items) {
      if (item.queue)
        ctx.out << "# queue/" << item.queue->name() << " (dry run: not applied)\n"
                << render_message(*item.queue, OutputFormat::kYaml);
      else
        ctx.out << "# node/" << item.node->name() << " (dry run: not applied)\n"
                << render_message(*item.node, OutputFormat::kYaml);
    }
    return 0;
  }
  for (const ApplyItem& item : items) {
    grpc::Status st;
    std::string what;
    if (item.queue) {
      v1::ApplyQueueRequest req;
      *req.mutable_spec() = *item.queue;
      v1::ApplyQueueResponse resp;
      st = ctx.unary("/gpuq.v1.Queues/Apply", req, resp);
      what = "queue/" + item.queue->name();
    } else {
      v1::ApplyNodeRequest req;
      *req.mutable_spec() = *item.node;
      v1::ApplyNodeResponse resp;
      st = ctx.unary("/gpuq.v1.Nodes/Apply", req, resp);
      what = "node/" + item.node->name();
    }
    if (!st.ok()) {
      ctx.err << "gpuq: " << what << " not applied\n";
      return ctx.fail(st);
    }
    ctx.out << what << " applied\n";
  }
  return 0;
}

void add_apply(CLI::App& app, Context& ctx) {
  auto file = std::make_shared<std::string>();
  auto dry_run = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("apply", "Create or replace queues and nodes from a YAML file");
  cmd->add_option("-f,--file", *file,
                  "YAML: documents with queues:/nodes: lists or kind: Queue|Node, or Kueue's "
                  "ClusterQueue, ResourceFlavor, Cohort and LocalQueue objects; - for stdin")
      ->required();
  cmd->add_flag("--dry-run", *dry_run, "print what would be applied (YAML), apply nothing");
  auto output = std::make_shared<std::string>("yaml");
  cmd->add_option("-o,--output", *output,
                  "with --dry-run: yaml (as gpuqd's API reads it) or objects (the queues as gpuq.io/v1alpha1 Queue "
                  "objects, for kubectl apply: Kueue's objects become gpuq's)")
      ->check(CLI::IsMember({"yaml", "objects"}));
  cmd->callback([&ctx, file, dry_run, output] {
    ctx.action = [file, dry_run, output](Context& c) { return run_apply(c, *file, *dry_run, *output); };
  });
}

}  // namespace

void add_cluster_commands(CLI::App& app, Context& ctx, Only only) {
  if (only.wants({"queues"})) add_queues(app, ctx);
  if (only.wants({"nodes"})) add_nodes(app, ctx);
  if (only.wants({"apply"})) add_apply(app, ctx);
}

}  // namespace gpuq::cli
