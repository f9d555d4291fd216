// admin backup, admin token (create, ls, revoke), admin audit; usage is commands_usage.cpp. Unary
// calls only: the stream of admin backup is commands_stream.cpp's run_backup.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <memory>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/format.hpp"
#include "cli/requests.hpp"

namespace gpuq::cli {

namespace {

// "30d", "12h", "10m", "45s", "2w" or seconds.
std::int64_t parse_ttl(const std::string& text) {
  std::size_t end = 0;
  std::int64_t n = -1;
  try {
    n = std::stoll(text, &end);
  } catch (const std::exception&) {
  }
  const std::string unit = end < text.size() ? text.substr(end) : "s";
  const std::int64_t scale = unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : unit == "d" ? 86400 : unit == "w" ? 604800 : 0;
  if (n <= 0 || scale == 0 || n > 3650LL * 86400 / scale)
    throw UsageError("--ttl \"" + text + "\": expected a duration such as 30d, 12h, 10m, 45s or 2w, from 1s to 3650d");
  return n * scale;
}

struct TokenOptions {
  std::string user, ttl = "30d", note, id, output = "table";
};

int run_token_create(Context& ctx, const TokenOptions& o) {
  const OutputFormat f = parse_output_format(o.output);
  v1::CreateTokenRequest req;
  req.set_user(o.user);
  req.set_ttl_seconds(parse_ttl(o.ttl));
  req.set_note(o.note);
  v1::CreateTokenResponse resp;
  grpc::Status st = ctx.unary("/gpuq.v1.Admin/CreateToken", req, resp);
  if (!st.ok()) return ctx.fail(st);
  if (f == OutputFormat::kJson || f == OutputFormat::kYaml) {
    ctx.out << render_message(resp, f);
    return 0;
  }
  // The secret alone on stdout (TOKEN=$(gpuq admin token create ...)); what it is on stderr.
  ctx.out << resp.secret() << "\n";
  ctx.err << "token " << resp.token().id() << " for user " << escaped(resp.token().user()) << ", expires "
          << format_time(resp.token().expires_at()) << ". Shown this once: gpuqd keeps only its hash. Give it to the user "
          << "to keep in a file of mode 600 (gpuq --token-file FILE, or GPUQ_TOKEN_FILE)\n";
  return 0;
}

int run_token_ls(Context& ctx, const TokenOptions& o) {
  const OutputFormat f = parse_output_format(o.output);
  v1::ListTokensRequest req;
  req.set_user(o.user);
  v1::ListTokensResponse resp;
  do {  // every page
    v1::ListTokensResponse page;
    grpc::Status st = ctx.unary("/gpuq.v1.Admin/ListTokens", req, page);
    if (!st.ok()) return ctx.fail(st);
    for (auto& t : *page.mutable_tokens()) *resp.add_tokens() = std::move(t);
    if (!page.next_page_token().empty() && page.next_page_token() == req.page_token())
      return ctx.fail({grpc::StatusCode::INTERNAL, "gpuqd gave the same page token again; stopped reading"});
    req.set_page_token(page.next_page_token());
  } while (!req.page_token().empty());
  if (f == OutputFormat::kJson || f == OutputFormat::kYaml) {
    ctx.out << render_message(resp, f);
    return 0;
  }
  const std::int64_t now = unix_now();
  std::ostringstream t;
  t << std::left << std::setw(18) << "ID" << std::setw(14) << "USER" << std::setw(22) << "CREATED" << std::setw(22)
    << "EXPIRES" << std::setw(9) << "STATE" << "NOTE\n";
  for (const v1::Token& k : resp.tokens()) {
    const char* state = k.revoked_at() > 0 ? "revoked" : now >= k.expires_at() ? "expired" : "active";
    t << std::setw(18) << k.id() << std::setw(14) << escaped(k.user()) << std::setw(22) << format_time(k.created_at())
      << std::setw(22) << format_time(k.expires_at()) << std::setw(9) << state << escaped(k.note()) << "\n";
  }
  ctx.out << t.str();
  return 0;
}

int run_token_revoke(Context& ctx, const TokenOptions& o) {
  v1::RevokeTokenRequest req;
  req.set_id(o.id);
  v1::RevokeTokenResponse resp;
  grpc::Status st = ctx.unary("/gpuq.v1.Admin/RevokeToken", req, resp);
  if (!st.ok()) return ctx.fail(st);
  ctx.out << "token " << resp.token().id() << " of user " << escaped(resp.token().user()) << " revoked at "
          << format_time(resp.token().revoked_at()) << "\n";
  return 0;
}

void add_token(CLI::App& admin, Context& ctx) {
  auto* token = admin.add_subcommand("token", "Bearer tokens for TCP callers");
  token->require_subcommand(1);
  auto o = std::make_shared<TokenOptions>();
  auto* create = token->add_subcommand("create", "Create a token for --user (admins); prints its secret once");
  create->add_option("--user", o->user, "whose calls it makes")->required();
  create->add_option("--ttl", o->ttl, "how long it is valid: 30d (default), 12h, 10m, 45s, 2w");
  create->add_option("--name", o->note, "a note: what it is for");
  create->add_option("-o,--output", o->output, "table (the secret alone), json or yaml")
      ->check(CLI::IsMember({"table", "json", "yaml"}));
  create->callback([&ctx, o] { ctx.action = [o](Context& c) { return run_token_create(c, *o); }; });
  auto* ls = token->add_subcommand("ls", "List tokens, never their secrets (admins: all; others: their own)");
  ls->add_option("--user", o->user, "only this user's");
  ls->add_option("-o,--output", o->output, "table, json or yaml")->check(CLI::IsMember({"table", "json", "yaml"}));
  ls->callback([&ctx, o] { ctx.action = [o](Context& c) { return run_token_ls(c, *o); }; });
  auto* revoke = token->add_subcommand("revoke", "Revoke a token by its ID (admins: any; others: their own)");
  revoke->add_option("ID", o->id, "as gpuq admin token ls shows it")->required();
  revoke->callback([&ctx, o] { ctx.action = [o](Context& c) { return run_token_revoke(c, *o); }; });
}

struct AuditOptions {
  std::string user, since, output = "table";
  int limit = 100;
};

// Pages newest first until --limit entries (0: all of them).
int run_audit(Context& ctx, const AuditOptions& o) {
  const OutputFormat f = parse_output_format(o.output);
  v1::AuditRequest req;
  req.set_user(o.user);
  req.set_since(parse_time_arg(o.since, unix_now()));
  v1::AuditResponse all;
  do {
    const int left = o.limit - all.entries_size();
    req.set_page_size(o.limit == 0 ? 1000 : std::min(left, 1000));
    v1::AuditResponse page;
    grpc::Status st = ctx.unary("/gpuq.v1.Admin/Audit", req, page);
    if (!st.ok()) return ctx.fail(st);
    for (auto& e : *page.mutable_entries()) *all.add_entries() = std::move(e);
    if (page.next_before_seq() != 0 && req.before_seq() != 0 && page.next_before_seq() >= req.before_seq())
      return ctx.fail({grpc::StatusCode::INTERNAL, "gpuqd gave a next page that does not move back (before seq " +
                                                       std::to_string(page.next_before_seq()) + "); stopped reading"});
    req.set_before_seq(page.next_before_seq());
  } while (req.before_seq() != 0 && (o.limit == 0 || all.entries_size() < o.limit));
  if (f == OutputFormat::kJson || f == OutputFormat::kYaml) {
    ctx.out << render_message(all, f);
    return 0;
  }
  ctx.out << audit_table({all.entries().begin(), all.entries().end()}, f == OutputFormat::kWide);
  return 0;
}

void add_audit(CLI::App& admin, Context& ctx) {
  auto o = std::make_shared<AuditOptions>();
  auto* cmd = admin.add_subcommand("audit", "Who changed what, newest first (admins only)");
  cmd->add_option("-u,--user", o->user, "only this user's calls");
  cmd->add_option("--since", o->since,
                  "Unix seconds, -7d/-24h/-1h30m back from now, YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS][Z|+HH:MM]");
  cmd->add_option("-n,--limit", o->limit, "at most this many entries (0: all)")->check(CLI::Range(0, 1000000));
  cmd->add_option("-o,--output", o->output, "table, wide, json or yaml")
      ->check(CLI::IsMember({"table", "wide", "json", "yaml"}));
  cmd->callback([&ctx, o] { ctx.action = [o](Context& c) { return run_audit(c, *o); }; });
}

void add_admin(CLI::App& app, Context& ctx) {
  auto* admin = app.add_subcommand("admin", "Administration");
  admin->require_subcommand(1);
  add_token(*admin, ctx);
  add_audit(*admin, ctx);
  auto file = std::make_shared<std::string>();
  auto* backup = admin->add_subcommand(
      "backup", "Write a consistent copy of the daemon's state (SQLite) to FILE");
  backup->add_option("FILE", *file, "destination; written to FILE.tmp, then renamed")->required();
  backup->callback(
      [&ctx, file] { ctx.action = [file](Context& c) { return run_backup(c, *file); }; });
}

}  // namespace

void add_admin_commands(CLI::App& app, Context& ctx, Only only) {
  if (only.wants({"admin"})) add_admin(app, ctx);
  if (only.wants({"usage"})) add_usage_command(app, ctx);
}

}  // namespace gpuq::cli
