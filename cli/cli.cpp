#include "cli/cli.hpp"

#include <algorithm>
#include <fstream>
#include <memory>
#include <set>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "cli/commands.hpp"
#include "cli/requests.hpp"
#include "sim/trace_error.hpp"
#include "spec/error.hpp"

namespace gpuq::cli {

std::string read_file_arg(Context& ctx, const std::string& path) {
  std::stringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
    ctx.stdin_read = text.str();
    return *ctx.stdin_read;
  }
  std::ifstream in(path);
  if (!in) throw UsageError(path + ": cannot open the file");
  text << in.rdbuf();
  return text.str();
}

bool add_tree(CLI::App& app, Context& ctx, Only only, const FullCommands& full) {
  bool named = false, lacking = false;
  // Registers the commands `names` with `add` when `only` asks for one of them; `add` null: lacking.
  const auto with = [&](std::initializer_list<std::string_view> names, auto add, auto&&... extra) {
    if (!only.wants(names)) return;
    named = true;
    if (add == nullptr)
      lacking = true;
    else
      add(app, ctx, extra...);
  };
  with({"submit"}, add_submit);
  with({"run"}, full.run);
  with({"ls", "list"}, add_ls);
  with({"show"}, add_show);
  with({"explain"}, add_explain);
  with({"cancel"}, add_cancel);
  with({"hold"}, add_hold_release, true);
  with({"release"}, add_hold_release, false);
  with({"update"}, add_update);
  with({"watch"}, full.watch);
  with({"logs"}, full.logs);
  with({"queues", "nodes", "apply"}, add_cluster_commands, only);
  with({"admin", "usage"}, add_admin_commands, only);
  with({"sim"}, full.sim, only);
  with({"completion", "__complete"}, full.completion, only);
  return named && !lacking;
}

namespace {

// The subcommand args name when only `app`'s global options that take a value, with their
// values, come before it; "" when it cannot be told that cheaply (-h, an unknown option, the
// completion helper), and then every subcommand is registered; "--version" for `gpuq --version`
// alone, which needs none.
std::string_view named_subcommand(const CLI::App& app, const std::vector<std::string>& args) {
  if (args.size() == 1 && args[0] == "--version") return args[0];  // no subcommand at all
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.empty()) return {};
    if (a[0] != '-') return a == "__complete" ? std::string_view{} : std::string_view{a};
    const auto eq = a.find('=');
    const CLI::Option* opt = app.get_option_no_throw(a.substr(0, eq));
    if (opt == nullptr || opt->get_type_size_max() == 0) return {};  // a flag (-h) or not ours
    if (eq == std::string::npos) ++i;  // its value
  }
  return {};
}

// CLI11's help, but the options an option needs or excludes listed by name: CLI11 keeps them in
// a set ordered by address, so their order followed the heap (a tree built for one subcommand
// printed "Excludes: --state --all" where the whole tree printed "--all --state").
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_opts(const CLI::Option* opt) const override {
    if (opt->get_needs().empty() && opt->get_excludes().empty()) return CLI::Formatter::make_option_opts(opt);
    std::string text = CLI::Formatter::make_option_opts(opt);
    text = text.substr(0, std::min(text.find(" " + get_label("Needs") + ":"), text.find(" " + get_label("Excludes") + ":")));
    const std::set<CLI::Option*> needs = opt->get_needs(), excludes = opt->get_excludes();  // (copies)
    for (const auto& [label, options] : {std::pair{get_label("Needs"), &needs}, std::pair{get_label("Excludes"), &excludes}}) {
      if (options->empty()) continue;
      std::vector<std::string> names;
      for (const CLI::Option* o : *options) names.push_back(o->get_name());
      std::sort(names.begin(), names.end());
      text += " " + label + ":";
      for (const auto& n : names) text += " " + n;
    }
    return text;
  }
};

}  // namespace

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, CliOptions options) {
  // With leak_tree, the tree and the context (its gRPC channel) outlive the call: the process
  // ends without destroying them, so it does not wait for gRPC's threads to be joined either.
  auto* context = new Context(out, err);
  auto* tree = new CLI::App("gpuq: a fair-share GPU batch scheduler");
  const std::unique_ptr<Context> context_owner(options.leak_tree ? nullptr : context);
  const std::unique_ptr<CLI::App> tree_owner(options.leak_tree ? nullptr : tree);
  Context& ctx = *context;
  ctx.args = args;
  CLI::App& app = *tree;
  app.name("gpuq");
  app.formatter(std::make_shared<HelpFormatter>());  // before the subcommands: they copy it
  app.require_subcommand(1);
  app.set_version_flag("--version", "gpuq " GPUQ_VERSION, "print gpuq's version and exit");
  app.fallthrough();  // --server and --timeout may follow the subcommand
  app.add_option("--server", ctx.server_flag,
                 "gpuqd's address: unix:PATH (its socket) or HOST:PORT; default $GPUQ_SERVER, then the first "
                 "socket found of ./var/gpuqd.sock, /run/gpuq/gpuqd.sock, /var/lib/gpuq/gpuqd.sock, then "
                 "127.0.0.1:7433");
  app.add_option("--timeout", ctx.timeout_s, "per call: 30, 90s, 5m (default 30 s; 0: none; watch and logs -f: none)")
      ->transform(duration_arg(/*fractional=*/true));
  // Over TCP only (cli/credentials.hpp). Prefer the file or the environment: argv shows in ps.
  app.add_option("--token", ctx.credential_flags.token,
                 "bearer token for a TCP server (default $GPUQ_TOKEN; visible in ps: prefer --token-file)");
  app.add_option("--token-file", ctx.credential_flags.token_file,
                 "file holding the bearer token, mode 600 (default $GPUQ_TOKEN_FILE)");
  app.add_option("--tls-ca", ctx.credential_flags.tls_ca, "PEM CA that signed gpuqd's certificate: TLS (default $GPUQ_TLS_CA)");
  app.add_option("--tls-cert", ctx.credential_flags.tls_cert, "PEM client certificate: TLS, its CN your user (default $GPUQ_TLS_CERT)");
  app.add_option("--tls-key", ctx.credential_flags.tls_key, "PEM key of --tls-cert (default $GPUQ_TLS_KEY)");
  const Only only{options.whole_tree ? std::string_view{} : named_subcommand(app, args)};
  add_commands(app, ctx, only);
  if (!only.name.empty() && only.name[0] != '-' && app.get_subcommands([](CLI::App*) { return true; }).empty())
    add_commands(app, ctx, {});  // not a subcommand of ours: CLI11 says so, as with the whole tree
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them reversed
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return app.exit(e, out, err) == 0 ? 0 : 2;
  }
  if (!ctx.action) return 2;
  try {
    before_command(ctx);
    return ctx.action(ctx);
  } catch (const UsageError& e) {
    err << "gpuq: " << e.what() << "\n";
    return 2;
  } catch (const spec::SpecError& e) {
    err << "gpuq: " << e.what() << "\n";
    return 2;
  } catch (const sim::TraceError& e) {
    err << "gpuq: " << e.what() << "\n";
    return 2;
  } catch (const std::invalid_argument& e) {  // a trace the simulator cannot model
    err << "gpuq: " << e.what() << "\n";
    return 2;
  } catch (const std::runtime_error& e) {  // the environment: a file that cannot be written
    err << "gpuq: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace gpuq::cli
