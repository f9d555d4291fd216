#include "cli/batch_script.hpp"

#include <algorithm>
#include <stdexcept>

#include "cli/requests.hpp"

namespace gpuq::cli {

namespace {

bool is_blank(char c) { return c == ' ' || c == '\t'; }

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

// `#!/usr/bin/env python3` -> {"/usr/bin/env", "python3"}. As Linux reads it: the interpreter
// is the first word, and the rest of the line, blanks trimmed, is one argument (not split).
std::vector<std::string> shebang(std::string_view line, const std::string& file) {
  auto fail = [&]() -> std::vector<std::string> {
    throw UsageError(file +
                     ":1: a batch script starts with #! and its interpreter (e.g. #!/bin/bash), as "
                     "for sbatch; to run a command, put it after --: gpuq submit -q QUEUE -- COMMAND");
  };
  if (line.substr(0, 2) != "#!") return fail();
  std::string_view rest = trimmed(line.substr(2));
  const auto end = std::find_if(rest.begin(), rest.end(), is_blank);
  std::vector<std::string> out{std::string(rest.begin(), end)};
  if (out[0].empty()) return fail();
  const std::string_view arg = trimmed(std::string_view(end, rest.end()));
  if (!arg.empty()) out.emplace_back(arg);
  return out;
}

}  // namespace

std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (is_blank(c) || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else if (c == '#' && !in_word) {
      break;  // a comment, as in a shell: "#GPUQ --gpus 2  # two of them"
    } else if (c == '\'') {
      const auto close = text.find('\'', i + 1);
      if (close == std::string_view::npos) throw std::invalid_argument("a ' is not closed");
      word.append(text.substr(i + 1, close - i - 1));
      in_word = true;
      i = close;
    } else if (c == '"') {
      in_word = true;
      for (++i;; ++i) {
        if (i >= text.size()) throw std::invalid_argument("a \" is not closed");
        if (text[i] == '"') break;
        if (text[i] == '\\' && i + 1 < text.size() &&
            (text[i + 1] == '"' || text[i + 1] == '\\' || text[i + 1] == '$' || text[i + 1] == '`'))
          ++i;
        word.push_back(text[i]);
      }
    } else if (c == '\\') {
      if (i + 1 >= text.size()) throw std::invalid_argument("it ends with a \\ that escapes nothing");
      word.push_back(text[++i]);
      in_word = true;
    } else {
      word.push_back(c);
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

BatchScript parse_batch_script(std::string text, const std::string& file) {
  if (text.size() > kMaxScriptBytes)
    throw UsageError(file + ": " + std::to_string(text.size()) + " bytes; a batch script may be at most " +
                     std::to_string(kMaxScriptBytes) +
                     " bytes (it travels in the job's command, one argument of at most 128 KiB); keep the "
                     "large part in a file the script runs");
  if (const auto nul = text.find('\0'); nul != std::string::npos)
    throw UsageError(file + ": holds a NUL byte at byte " + std::to_string(nul) +
                     "; a batch script is text");
  if (const auto crlf = text.find("\r\n"); crlf != std::string::npos)
    throw UsageError(file + ":" + std::to_string(1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(crlf), '\n')) +
                     ": DOS line break (\\r\\n); the shell would take the \\r as part of the line, so "
                     "convert it (dos2unix), as sbatch asks too");
  BatchScript s;
  s.file = file;
  std::string_view rest = text;
  int line_no = 0;
  while (!rest.empty()) {
    const auto nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    ++line_no;
    if (line_no == 1) {
      s.interpreter = shebang(line, file);
      continue;
    }
    const std::string_view body = trimmed(line);
    if (!body.empty() && body.front() != '#') break;  // the first command: directives end here
    if (line.substr(0, 5) != "#GPUQ" || (line.size() > 5 && !is_blank(line[5]))) continue;
    try {
      s.directives.push_back({line_no, split_words(line.substr(5))});
    } catch (const std::invalid_argument& e) {
      throw UsageError(file + ":" + std::to_string(line_no) + ": #GPUQ directive: " + e.what());
    }
  }
  if (line_no == 0) s.interpreter = shebang("", file);
  s.text = std::move(text);
  return s;
}

std::vector<std::string> script_command(const BatchScript& script, const std::vector<std::string>& args) {
  std::string body = script.text;
  if (!body.empty() && body.back() != '\n') body.push_back('\n');
  // The here-document ends at a line that is exactly its delimiter: pick one the script lacks.
  std::string end = "GPUQ_SCRIPT_END";
  for (int n = 1; ("\n" + body).find("\n" + end + "\n") != std::string::npos; ++n)
    end = "GPUQ_SCRIPT_END_" + std::to_string(n);
  std::vector<std::string> cmd{"/bin/sh", "-c", "exec \"$@\" 3<<'" + end + "'\n" + body + end + "\n",
                               script_name(script)};
  cmd.insert(cmd.end(), script.interpreter.begin(), script.interpreter.end());
  cmd.emplace_back("/dev/fd/3");
  cmd.insert(cmd.end(), args.begin(), args.end());
  return cmd;
}

std::optional<ScriptJob> script_of(const std::vector<std::string>& command) {
  constexpr std::string_view kHead = "exec \"$@\" 3<<'GPUQ_SCRIPT_END";
  if (command.size() < 6 || command[0] != "/bin/sh" || command[1] != "-c" || !command[2].starts_with(kHead))
    return std::nullopt;
  const std::string& c = command[2];
  const auto first = c.find('\n');
  const auto dev = std::find(command.begin() + 4, command.end(), "/dev/fd/3");
  if (first == std::string::npos || dev == command.end()) return std::nullopt;
  const std::string end = c.substr(kHead.size() - 15, first - 1 - (kHead.size() - 15));  // GPUQ_SCRIPT_END[_N]
  if (c.size() < first + 1 + end.size() + 1 || !c.ends_with("\n" + end + "\n")) return std::nullopt;
  return ScriptJob{command[3], c.substr(first + 1, c.size() - (first + 1) - end.size() - 1),
                   std::vector<std::string>(dev + 1, command.end())};
}

std::string script_name(const BatchScript& script) {
  const auto slash = script.file.rfind('/');
  return slash == std::string::npos ? script.file : script.file.substr(slash + 1);
}

}  // namespace gpuq::cli
