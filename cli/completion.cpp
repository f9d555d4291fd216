// Shell completion: `gpuq completion bash|zsh` prints a script; the script asks the same binary,
// `gpuq __complete -- WORDS...`, for the candidates of the last word. Commands and flags come
// from the CLI11 tree run_cli builds (so they never drift from the parser); queue names, node
// names and job ids from gpuqd, with a short deadline and in silence when it cannot be reached
// (kubectl's and cobra's way: one hidden subcommand, thin shell glue).
#include <algorithm>
#include <memory>
#include <set>
#include <string_view>

#include "cli/commands.hpp"
#include "gpuq/v1/gpuq.grpc.pb.h"

namespace gpuq::cli {

namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// The subcommand of `app` named (or aliased) `word`, or null. Hidden ones (no group) too.
CLI::App* find_subcommand(CLI::App* app, const std::string& word) {
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; }))
    if (sub->check_name(word)) return sub;
  return nullptr;
}

// The option `word` ("--queue", "-q") of `app` or of an app above it (global options fall
// through to subcommands), or null.
const CLI::Option* find_option(const CLI::App* app, const std::string& word) {
  for (; app != nullptr; app = app->get_parent())
    for (const CLI::Option* opt : app->get_options())
      if (opt->nonpositional() && opt->check_name(word)) return opt;
  return nullptr;
}

bool takes_value(const CLI::Option* opt) { return opt->get_type_size_max() > 0; }

// The global options that say where gpuqd is and who calls, typed before the word completed.
void set_global(Context& ctx, const CLI::Option* opt, const std::string& value) {
  auto& f = ctx.credential_flags;
  for (auto [name, field] : {std::pair{"server", &ctx.server_flag}, {"token", &f.token}, {"token-file", &f.token_file},
                             {"tls-ca", &f.tls_ca}, {"tls-cert", &f.tls_cert}, {"tls-key", &f.tls_key}})
    if (opt->check_lname(name)) *field = value;
}

// What the daemon knows, asked for only when a candidate needs it.
class Names {
 public:
  explicit Names(Context& ctx) : ctx_(ctx) {}

  std::vector<std::string> queues() { return names<v1::Queues, v1::ListQueuesResponse>(&v1::ListQueuesResponse::queues); }
  std::vector<std::string> nodes() { return names<v1::Nodes, v1::ListNodesResponse>(&v1::ListNodesResponse::nodes); }
  // Unfinished jobs' ids (and their arrays'), the first 1,000 in submission order: what cancel,
  // hold, show... are mostly given.
  std::vector<std::string> jobs() {
    v1::ListJobsRequest req;
    for (auto s : {v1::JOB_STATE_PENDING, v1::JOB_STATE_ADMITTED, v1::JOB_STATE_RUNNING, v1::JOB_STATE_PREEMPTING})
      req.add_states(s);
    req.set_page_size(1000);
    v1::ListJobsResponse page;
    if (!call([&](auto& c) { return v1::Jobs::NewStub(ctx_.channel())->List(&c, req, &page); })) return {};
    std::set<std::string> ids;
    for (const auto& j : page.jobs()) {
      ids.insert(j.spec().id());
      if (!j.array_id().empty()) ids.insert(j.array_id());
    }
    return {ids.begin(), ids.end()};
  }

 private:
  // The names on the first page gpuqd gives (queues and nodes, by name).
  template <class Service, class Response, class Items>
  std::vector<std::string> names(const Items& (Response::*items)() const) {
    Response page;
    if (!call([&](auto& c) { return Service::NewStub(ctx_.channel())->List(&c, {}, &page); })) return {};
    std::vector<std::string> out;
    for (const auto& item : (page.*items)()) out.push_back(item.spec().name());
    return out;
  }
  template <class Call>
  bool call(Call&& f) {
    try {
      auto c = ctx_.call();  // the token, for a TCP server
      c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
      return f(*c).ok();
    } catch (const std::exception&) {  // a bad --server or token file: no candidates
      return false;
    }
  }
  Context& ctx_;
};

// The values `opt` may take: its CLI11 choices ("TEXT:{table,wide,json,yaml}"), or gpuqd's
// queue names for a --queue.
std::vector<std::string> option_values(const CLI::Option* opt, Names& names) {
  if (opt->check_lname("queue")) return names.queues();
  if (opt->check_lname("state"))
    return {"pending", "admitted", "running", "preempting", "succeeded", "failed", "cancelled"};
  const std::string type = opt->get_type_name();
  const auto open = type.find('{'), close = type.rfind('}');
  std::vector<std::string> values;
  if (open == std::string::npos || close == std::string::npos || close < open) return values;
  std::string_view list(type.data() + open + 1, close - open - 1);
  while (!list.empty()) {
    const auto comma = list.find(',');
    values.emplace_back(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  return values;
}

// A positional word of `app`: job ids for the commands that take an ID, queue or node names.
std::vector<std::string> positional_values(const CLI::App* app, Names& names) {
  for (const CLI::Option* opt : app->get_options()) {
    if (opt->nonpositional()) continue;
    const std::string& name = opt->get_name();
    if (name == "ID" && app->get_parent() != nullptr && app->get_parent()->get_parent() == nullptr)
      return names.jobs();
    if (name == "NAME" && app->get_name() == "queues") return names.queues();
    if (name == "NAME" && app->get_parent() != nullptr && app->get_parent()->get_name() == "queues")
      return names.queues();
    if (name == "NAME" && app->get_parent() != nullptr && app->get_parent()->get_name() == "nodes")
      return names.nodes();
  }
  return {};
}

}  // namespace

std::vector<std::string> complete_words(CLI::App& root, Context& ctx, const std::vector<std::string>& words) {
  if (words.empty()) return {};
  CLI::App* app = &root;
  const CLI::Option* expecting = nullptr;
  bool after_dashes = false;
  for (std::size_t i = 0; i + 1 < words.size(); ++i) {
    const std::string& w = words[i];
    if (expecting != nullptr) {
      set_global(ctx, expecting, w);
      expecting = nullptr;
    } else if (after_dashes) {
    } else if (w == "--") {
      after_dashes = true;
    } else if (w.size() > 1 && w[0] == '-') {
      const std::string name = w.substr(0, w.find('='));
      const CLI::Option* opt = find_option(app, name);
      // "-qvision" and "--queue=vision" carry their value.
      if (opt != nullptr && takes_value(opt) && name == w && (w[1] == '-' || w.size() == 2)) expecting = opt;
      if (opt != nullptr && takes_value(opt) && name != w) set_global(ctx, opt, w.substr(name.size() + 1));
    } else if (CLI::App* sub = find_subcommand(app, w); sub != nullptr) {
      app = sub;
    }
  }
  const std::string& cur = words.back();
  Names names(ctx);
  std::vector<std::string> out;
  auto keep = [&](const std::string& candidate, const std::string& prefix = "") {
    if (starts_with(prefix + candidate, cur)) out.push_back(prefix + candidate);
  };
  if (after_dashes) return {};  // a command's own words: the shell's files
  if (expecting != nullptr) {
    for (const auto& v : option_values(expecting, names)) keep(v);
  } else if (starts_with(cur, "--") && cur.find('=') != std::string::npos) {
    const std::string name = cur.substr(0, cur.find('='));
    if (const CLI::Option* opt = find_option(app, name); opt != nullptr && takes_value(opt))
      for (const auto& v : option_values(opt, names)) keep(v, name + "=");
  } else if (starts_with(cur, "-")) {
    std::set<std::string> flags;
    for (const CLI::App* a = app; a != nullptr; a = a->get_parent())
      for (const CLI::Option* opt : a->get_options()) {
        if (!opt->nonpositional() || opt->get_group().empty()) continue;
        for (const auto& l : opt->get_lnames()) flags.insert("--" + l);
        if (cur.size() <= 2 && !starts_with(cur, "--"))
          for (const auto& s : opt->get_snames()) flags.insert("-" + s);
      }
    for (const auto& f : flags) keep(f);
  } else {
    for (const CLI::App* sub : app->get_subcommands([](CLI::App* s) { return !s->get_group().empty(); })) {
      keep(sub->get_name());
      for (const auto& alias : sub->get_aliases()) keep(alias);
    }
    for (const auto& v : positional_values(app, names)) keep(v);
  }
  return out;
}

namespace {

// Bash splits "--queue=vi" into "--queue", "=", "vi": the words are joined again before asking,
// and what bash replaces (the part after "=") is cut from each candidate.
constexpr const char* kBash = R"(# bash completion for gpuq (gpuq completion bash; cli/completion.cpp)
_gpuq() {
  local -a words=()
  local i w n
  for ((i = 1; i <= COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    n=${#words[@]}
    if ((n)) && { [[ $w == = && ${words[n-1]} == --* ]] || [[ ${words[n-1]} == --*= ]]; }; then
      words[n-1]+=$w
    else
      words+=("$w")
    fi
  done
  ((${#words[@]})) || words=("")
  local full=${words[${#words[@]}-1]} here=${COMP_WORDS[COMP_CWORD]}
  [[ $full == *"$here" ]] || here=$full
  local cut=$((${#full} - ${#here})) c
  COMPREPLY=()
  while IFS= read -r c; do
    [[ -n $c ]] && COMPREPLY+=("${c:cut}")
  done < <("${COMP_WORDS[0]}" __complete -- "${words[@]}" 2>/dev/null)
}
complete -o default -o bashdefault -F _gpuq gpuq
)";

// Installed as _gpuq in $fpath (autoloaded) or sourced (then it registers itself), as cobra's.
constexpr const char* kZsh = R"(#compdef gpuq
# zsh completion for gpuq (gpuq completion zsh; cli/completion.cpp)
_gpuq() {
  local -a candidates
  candidates=("${(@f)$("${words[1]}" __complete -- "${(@)words[2,CURRENT]}" 2>/dev/null)}")
  candidates=(${candidates:#})
  if (( ${#candidates} )); then
    compadd -Q -- "${candidates[@]}"
  else
    _files
  fi
}
if [[ ${zsh_eval_context[-1]} == loadautofunc ]]; then
  _gpuq "$@"
else
  compdef _gpuq gpuq
fi
)";

struct CompletionOptions {
  std::string shell;
  std::vector<std::string> words;
};

}  // namespace

void add_completion_commands(CLI::App& app, Context& ctx, Only only) {
  if (!only.wants({"completion", "__complete"})) return;
  auto o = std::make_shared<CompletionOptions>();
  auto* script = app.add_subcommand(
      "completion", "Print the shell completion script: source <(gpuq completion bash), or install it");
  script->add_option("SHELL", o->shell, "bash or zsh")->required()->check(CLI::IsMember({"bash", "zsh"}));
  script->callback([&ctx, o] {
    ctx.action = [o](Context& c) {
      c.out << (o->shell == "bash" ? kBash : kZsh);
      return 0;
    };
  });
  // What the scripts call: one candidate per line for the last of WORDS (the words after gpuq).
  auto* words = app.add_subcommand("__complete", "candidates for the last word")->group("");
  words->add_option("WORDS", o->words, "the words after gpuq, the last one being completed");
  words->callback([&app, &ctx, o] {
    ctx.action = [&app, o](Context& c) {
      for (const auto& candidate : complete_words(app, c, o->words)) c.out << candidate << "\n";
      return 0;
    };
  });
}

}  // namespace gpuq::cli
