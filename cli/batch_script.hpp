#pragma once
// Batch scripts, as sbatch takes them (no I/O here): `gpuq submit train.sh ARGS...` reads the
// `#GPUQ` directive lines at the top of the script and sends the script's content itself as the
// job's command, so that editing the file after the submit changes nothing (cli/README.md:
// Batch scripts). Errors throw UsageError naming the file and the line.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuq::cli {

// The script travels as one argument of the job's command, which gpuqd (spec/limits.hpp
// kArgBytes) and Linux (MAX_ARG_STRLEN) cap at 128 KiB - 1; this leaves room for the wrapper.
inline constexpr std::size_t kMaxScriptBytes = 128'000;

struct BatchScript {
  struct Directive {
    int line = 0;                    // 1-based line number in the script
    std::vector<std::string> words;  // after "#GPUQ", split as a shell would (split_words)
  };
  std::string file;                      // as the user named it
  std::string text;                      // the whole script, as read
  std::vector<std::string> interpreter;  // from the shebang: its path and its one optional argument
  std::vector<Directive> directives;
};

// Splits `text` into words as a POSIX shell would, without any expansion: blanks separate words;
// '...' keeps everything literally; "..." keeps everything but \" \\ \$ \` (the backslash goes);
// a backslash outside quotes keeps the next character; an unquoted # at the start of a word
// begins a comment. Throws std::invalid_argument on an unterminated quote or a trailing backslash.
std::vector<std::string> split_words(std::string_view text);

// Reads a batch script's header. Like sbatch: the first line must be a shebang (#!INTERPRETER
// [ARG]); directives are the lines starting with "#GPUQ" followed by a blank or the end of the
// line, read up to the first line that is neither blank nor a comment (a line whose first
// non-blank character is #); "# GPUQ" or "##GPUQ" is a comment. Refuses a script over
// kMaxScriptBytes, one holding a NUL byte, and one with DOS line ends (\r\n).
BatchScript parse_batch_script(std::string text, const std::string& file);

// The job's command: the script's content written, through a here-document, to a pipe the
// interpreter reads as /dev/fd/3, with `args` after it:
//   /bin/sh -c 'exec "$@" 3<<'\''END'\'' ...script... END' NAME INTERPRETER [ARG] /dev/fd/3 ARGS...
// NAME (the script's file name) is $0 of that sh, named in its messages. The script sees $0 as
// /dev/fd/3 (sbatch's copy is its own file name in slurmd's spool too).
std::vector<std::string> script_command(const BatchScript& script, const std::vector<std::string>& args);

// What script_command made, read back (for `gpuq show`): the script's name, its content and its
// arguments; nullopt for any other command.
struct ScriptJob {
  std::string name, text;
  std::vector<std::string> args;
};
std::optional<ScriptJob> script_of(const std::vector<std::string>& command);

// The script's file name without its folders, the job's name when none is given (as sbatch).
std::string script_name(const BatchScript& script);

}  // namespace gpuq::cli
