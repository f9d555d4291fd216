// admin backup, usage.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/format.hpp"
#include "cli/requests.hpp"

namespace gpuq::cli {

namespace {

int run_backup(Context& ctx, const std::string& path) {
  const std::string tmp = path + ".tmp";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) throw UsageError(tmp + ": cannot create the file");
  // The copy holds every job's command and environment: readable by its maker alone.
  std::error_code ec;
  std::filesystem::permissions(tmp, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::replace, ec);
  auto stub = v1::Admin::NewStub(ctx.channel());
  auto call = ctx.call();
  auto reader = stub->Backup(call.get(), v1::BackupRequest{});
  v1::BackupChunk chunk;
  std::uint64_t written = 0, expected = 0;
  bool first = true;
  while (reader->Read(&chunk)) {
    if (first) expected = chunk.total_bytes();
    first = false;
    out.write(chunk.data().data(), static_cast<std::streamsize>(chunk.data().size()));
    written += chunk.data().size();
  }
  grpc::Status st = reader->Finish();
  out.close();
  if (!st.ok()) {
    std::filesystem::remove(tmp, ec);
    return ctx.fail(st);
  }
  if (!out) {
    std::filesystem::remove(tmp, ec);
    ctx.err << "gpuq: " << tmp << ": write failed (disk full?)\n";
    return 1;
  }
  if (expected != 0 && written != expected) {
    std::filesystem::remove(tmp, ec);
    ctx.err << "gpuq: the backup stream ended after " << written << " of " << expected
            << " bytes; nothing written to " << path << "\n";
    return 1;
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    ctx.err << "gpuq: " << path << ": " << ec.message() << "\n";
    return 1;
  }
  ctx.out << "wrote " << written << " bytes to " << path << "\n";
  return 0;
}

void add_admin(CLI::App& app, Context& ctx) {
  auto* admin = app.add_subcommand("admin", "Administration");
  admin->require_subcommand(1);
  auto file = std::make_shared<std::string>();
  auto* backup = admin->add_subcommand(
      "backup", "Write a consistent copy of the daemon's state (SQLite) to FILE");
  backup->add_option("FILE", *file, "destination; written to FILE.tmp, then renamed")->required();
  backup->callback(
      [&ctx, file] { ctx.action = [file](Context& c) { return run_backup(c, *file); }; });
}

struct UsageOptions {
  std::string from, to, queue, output = "table";
};

int run_usage(Context& ctx, const UsageOptions& o) {
  const OutputFormat f = parse_output_format(o.output);
  const std::int64_t now = unix_now();
  v1::UsageRequest req;
  req.set_from(parse_time_arg(o.from, now));
  req.set_to(parse_time_arg(o.to, now));
  req.set_queue(o.queue);
  auto stub = v1::Admin::NewStub(ctx.channel());
  v1::UsageResponse resp;
  auto call = ctx.call();
  grpc::Status st = stub->Usage(call.get(), req, &resp);
  if (!st.ok()) return ctx.fail(st);
  if (f == OutputFormat::kJson || f == OutputFormat::kYaml)
    ctx.out << render_message(resp, f);
  else
    ctx.out << usage_table(resp);
  return 0;
}

void add_usage(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<UsageOptions>();
  auto* cmd = app.add_subcommand("usage", "GPU-hours per queue and flavor over a period");
  cmd->add_option(
      "--from", o->from,
      "Unix seconds, -7d/-24h/-30m relative, or YYYY-MM-DD (UTC); default: the beginning");
  cmd->add_option("--to", o->to, "same forms; default: now");
  cmd->add_option("-q,--queue", o->queue, "only this queue");
  cmd->add_option("-o,--output", o->output, "table, json or yaml")
      ->check(CLI::IsMember({"table", "wide", "json", "yaml"}));
  cmd->callback([&ctx, o] { ctx.action = [o](Context& c) { return run_usage(c, *o); }; });
}

}  // namespace

void add_admin_commands(CLI::App& app, Context& ctx) {
  add_admin(app, ctx);
  add_usage(app, ctx);
}

}  // namespace gpuq::cli
