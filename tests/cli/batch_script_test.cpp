// Batch scripts without a server: the word splitter, the header's rules (shebang, where the
// directives end, DOS line ends, the size limit), #GPUQ directives applied under the command
// line's flags, and the job's command run as a real process.
#include <doctest/doctest.h>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/batch_script.hpp"
#include "cli/requests.hpp"
#include "cli/submit_options.hpp"

extern char** environ;

namespace batch_script_test {

using namespace gpuq::cli;
using Words = std::vector<std::string>;

std::string usage_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  FAIL("no UsageError");
  return "";
}

// `gpuq submit CLI...` parsed, then the script's directives applied.
SubmitOptions submitted(const Words& cli, const std::string& script_text) {
  SubmitOptions o;
  CLI::App cmd;
  add_submit_options(cmd, o);
  cmd.parse(Words(cli.rbegin(), cli.rend()));
  apply_directives(cmd, parse_batch_script(script_text, "t.sh"));
  return o;
}

// argv run as a process; its stdout and exit code.
std::pair<int, std::string> run(const Words& argv) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  REQUIRE(::posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ) == 0);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST_CASE("directive words split as a shell would, with no expansion") {
  CHECK(split_words(" --gpus 2\t--queue  vision ") == Words{"--gpus", "2", "--queue", "vision"});
  CHECK(split_words("--name 'a b'  --env \"X=\\\"y\\\" $HOME \\n\"") ==
        Words{"--name", "a b", "--env", "X=\"y\" $HOME \\n"});
  CHECK(split_words("a\\ b 'it'\"'\"'s' '' x") == Words{"a b", "it's", "", "x"});
  CHECK(split_words("--gpus 2 # two of them") == Words{"--gpus", "2"});
  CHECK(split_words("--name=a#b") == Words{"--name=a#b"});  // # inside a word is no comment
  CHECK(split_words("") == Words{});
  CHECK_THROWS_WITH(split_words("--name 'a b"), "a ' is not closed");
  CHECK_THROWS_WITH(split_words("--name \"a b"), "a \" is not closed");
  CHECK_THROWS_WITH(split_words("x \\"), "it ends with a \\ that escapes nothing");
}

TEST_CASE("a script's header: the shebang, then directives up to the first command") {
  const BatchScript s = parse_batch_script(
      "#!/usr/bin/env python3\n"
      "# a comment\n"
      "#GPUQ --gpus 2 --queue vision\n"
      "\n"
      "   # an indented comment\n"
      "# GPUQ --gpus 8\n"    // a comment, as "# SBATCH" is
      "#GPUQX --gpus 8\n"    // a comment too
      "#GPUQ\t--name 'my job'\n"
      "import os\n"
      "#GPUQ --gpus 4\n",   // after the first command: not a directive
      "dir/train.py");
  CHECK(s.interpreter == Words{"/usr/bin/env", "python3"});
  REQUIRE(s.directives.size() == 2);
  CHECK(s.directives[0].line == 3);
  CHECK(s.directives[0].words == Words{"--gpus", "2", "--queue", "vision"});
  CHECK(s.directives[1].line == 8);
  CHECK(s.directives[1].words == Words{"--name", "my job"});
  CHECK(script_name(s) == "train.py");
  // As Linux reads a shebang: one optional argument, the rest of the line, not split.
  CHECK(parse_batch_script("#! /bin/bash -e -x  \necho\n", "t.sh").interpreter == Words{"/bin/bash", "-e -x"});
  CHECK(parse_batch_script("#!/bin/sh", "t.sh").directives.empty());
}

TEST_CASE("scripts that are refused name the file and the line") {
  CHECK(usage_error([] { parse_batch_script("echo hi\n", "t.sh"); }).starts_with("t.sh:1: a batch script starts with #!"));
  CHECK(usage_error([] { parse_batch_script("", "t.sh"); }).starts_with("t.sh:1: "));
  CHECK(usage_error([] { parse_batch_script("#!\n", "t.sh"); }).starts_with("t.sh:1: "));
  CHECK(usage_error([] { parse_batch_script("#!/bin/sh\n#GPUQ --name 'x\n", "t.sh"); }) ==
        "t.sh:2: #GPUQ directive: a ' is not closed");
  CHECK(usage_error([] { parse_batch_script("#!/bin/sh\necho\r\n", "t.sh"); }).starts_with("t.sh:2: DOS line break"));
  CHECK(usage_error([] { parse_batch_script(std::string("#!/bin/sh\necho \0\n", 17), "t.sh"); })
            .starts_with("t.sh: holds a NUL byte at byte 15"));
  // The size limit, just at it and just over it.
  std::string text = "#!/bin/sh\n";
  text.append(kMaxScriptBytes - text.size(), '#');
  CHECK(parse_batch_script(text, "t.sh").text.size() == kMaxScriptBytes);
  text.push_back('#');
  CHECK(usage_error([&] { parse_batch_script(text, "t.sh"); }) ==
        "t.sh: 128001 bytes; a batch script may be at most 128000 bytes (it travels in the job's command, one "
        "argument of at most 128 KiB); keep the large part in a file the script runs");
}

TEST_CASE("directives give the flags the command line did not, flag by flag") {
  const std::string script =
      "#!/bin/sh\n"
      "#GPUQ --gpus 1 --name from-script --queue vision\n"
      "#GPUQ --env A=1 --exclusive --preemptible=false\n"
      "#GPUQ --env B=2 --name later-wins\n"
      "echo hi\n";
  SubmitOptions o = submitted({"t.sh", "arg"}, script);
  CHECK(o.flags.gpus == "1");
  CHECK(o.flags.queue == "vision");
  CHECK(o.flags.name == "later-wins");
  CHECK(o.flags.env == Words{"A=1", "B=2"});  // repeatable: they add up
  CHECK(o.flags.exclusive);
  CHECK_FALSE(o.preemptible);
  CHECK(o.flags.command == Words{"t.sh", "arg"});

  // The command line wins; a repeatable flag as a whole.
  o = submitted({"--gpus", "2", "-q", "nlp", "--env", "C=3", "--name", "cli", "t.sh"}, script);
  CHECK(o.flags.gpus == "2");
  CHECK(o.flags.queue == "nlp");
  CHECK(o.flags.name == "cli");
  CHECK(o.flags.env == Words{"C=3"});
  CHECK(o.flags.exclusive);  // not on the command line: the directive's

  // --image as any flag: from a directive, unless the command line gives it.
  const std::string kube = "#!/bin/sh\n#GPUQ --image nvcr.io/nvidia/pytorch:24.05-py3 -q vision\ntorchrun t.py\n";
  CHECK(submitted({"t.sh"}, kube).flags.image == "nvcr.io/nvidia/pytorch:24.05-py3");
  CHECK(submitted({"--image", "ghcr.io/lab/x:1", "t.sh"}, kube).flags.image == "ghcr.io/lab/x:1");
  CHECK(submitted({"t.sh"}, "#!/bin/sh\necho\n").flags.image.empty());
}

TEST_CASE("directive errors name the script, the line and the flag") {
  CHECK(usage_error([] { submitted({"t.sh"}, "#!/bin/sh\n\n#GPUQ --gpus 1 --bogus 3\n"); }) ==
        "t.sh:3: #GPUQ --bogus: gpuq submit has no such flag (a directive takes gpuq submit's flags, as on the "
        "command line: gpuq submit --help)");
  CHECK(usage_error([] { submitted({"t.sh"}, "#!/bin/sh\n#GPUQ gpus=2\n"); })
            .starts_with("t.sh:2: #GPUQ \"gpus=2\" is not a flag; a directive holds flags only"));
  CHECK(usage_error([] { submitted({"t.sh"}, "#!/bin/sh\n#GPUQ -f job.yaml\n"); })
            .starts_with("t.sh:2: #GPUQ -f: a batch script is the job"));
  CHECK(usage_error([] { submitted({"t.sh"}, "#!/bin/sh\n#GPUQ --replicas many\n"); }).starts_with("t.sh:2: #GPUQ "));
  CHECK(usage_error([] { submitted({"t.sh"}, "#!/bin/sh\n#GPUQ --output banana\n"); }).starts_with("t.sh:2: #GPUQ "));
}

TEST_CASE("the job's command runs the script as it was, with its interpreter and arguments") {
  // The delimiter of the here-document is one the script does not hold as a line.
  const BatchScript s = parse_batch_script(
      "#!/bin/sh -e\n"
      "#GPUQ --gpus 1\n"
      "printf '%s|' \"$@\" 'GPUQ_SCRIPT_END' '$HOME'\n"
      "cat <<'X'\n"
      "GPUQ_SCRIPT_END\n"
      "X\n"
      "false\n"
      "echo not reached",  // no newline at the end
      "dir/t.sh");
  const Words cmd = script_command(s, {"a b", "--c", "$1"});
  CHECK(cmd[0] == "/bin/sh");
  CHECK(cmd[3] == "t.sh");
  CHECK(cmd[2].find("'GPUQ_SCRIPT_END_1'\n") != std::string::npos);
  const auto shown = script_of(cmd);  // read back for `gpuq show`
  REQUIRE(shown.has_value());
  CHECK(shown->name == "t.sh");
  CHECK(shown->text == s.text + "\n");  // a newline added at the end
  CHECK(shown->args == Words{"a b", "--c", "$1"});
  CHECK_FALSE(script_of({"/bin/sh", "-c", "echo hi", "x", "/bin/sh", "/dev/fd/3"}).has_value());
  const auto [rc, out] = run(cmd);
  CHECK(rc == 1);  // sh -e: `false` ended it
  CHECK(out == "a b|--c|$1|GPUQ_SCRIPT_END|$HOME|GPUQ_SCRIPT_END\n");
}

}  // namespace batch_script_test
