// Batch scripts and --wait through the real gpuq binary and a real gpuqd running jobs as real
// processes (the local executor, 4 virtual GPUs): directives, the command line over them, the
// working directory, CUDA_VISIBLE_DEVICES, the script's content fixed at submit, and --wait's
// exit codes (the job's own, 125 when cancelled; Ctrl-C stops waiting, not the job).
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "tests/integration/cli_as.hpp"
#include "tests/support/files.hpp"

using namespace gpuq::test;

namespace cli_script_test {

struct Cluster {
  TempDir dir;
  fs::path work = dir.path / "work dir";  // a blank in it: the path travels quoted
  Daemon d{dir.path, true, local_executor_config(dir.path)};
  Cluster() { fs::create_directories(work); }

  // `gpuq ARGS` run by a shell in `work`.
  CliRun gpuq(const std::string& args, const std::string& before = "") const {
    return shell("cd '" + work.string() + "' && " + before + std::string(GPUQ_CLI_PATH) + " --server unix:" +
                 d.socket() + " " + args);
  }
  void script(const std::string& name, const std::string& text) const {
    std::ofstream(work / name) << text;
  }
};

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

TEST_CASE("gpuq submit SCRIPT: directives, the command line over them, its working directory and GPUs") {
  Cluster c;
  c.script("train.sh",
           "#!/bin/sh\n"
           "# trains a model\n"
           "#GPUQ --gpus 1 --name from-script\n"
           "#GPUQ --queue q   # every flag as on the command line\n"
           "\n"
           "echo \"cwd=$(pwd)\"\n"
           "echo \"gpus=$CUDA_VISIBLE_DEVICES\"\n"
           "echo \"args=$1|$2\"\n"
           "#GPUQ --gpus 3\n");  // after the first command: not a directive
  CliRun r = c.gpuq("submit --wait train.sh 'a b' --c");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  const std::string id = submitted_job(r);
  CHECK(r.out.find("job/" + id + " Succeeded") != std::string::npos);
  CHECK(r.out.find("(exit 0)\n") != std::string::npos);
  const CliRun logs = c.gpuq("logs " + id);
  CHECK(logs.out.find("cwd=" + c.work.string() + "\n") != std::string::npos);
  CHECK(logs.out.find("args=a b|--c\n") != std::string::npos);
  const auto gpus = logs.out.find("gpus=");
  REQUIRE(gpus != std::string::npos);
  const std::string visible = first_line(logs.out.substr(gpus + 5));
  CHECK((visible.size() == 1 && visible[0] >= '0' && visible[0] <= '3'));  // one GPU of the four
  const auto job = shown_job(c.d, id);
  CHECK(job.at("spec").at("name").as_string() == "from-script");
  CHECK(job.at("spec").at("pod_sets").at(0).at("resources").at("gpu").as_string() == "1");
  const std::string shown = c.gpuq("show " + id).out;
  CHECK(shown.find("from-script") != std::string::npos);
  CHECK_MESSAGE(shown.find("Script:      train.sh a b --c\n  | #!/bin/sh\n  | # trains a model\n") != std::string::npos,
                shown);

  // The command line wins, flag by flag: its name and GPUs, the directive's queue.
  r = c.gpuq("submit --name from-cli --gpus 2 -o json train.sh");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const auto submitted = boost::json::parse(r.out);
  CHECK(submitted.at("spec").at("name").as_string() == "from-cli");
  CHECK(submitted.at("spec").at("queue").as_string() == "q");
  CHECK(submitted.at("spec").at("pod_sets").at(0).at("resources").at("gpu").as_string() == "2");

  // Without a name anywhere the job is named after the script, as with sbatch.
  c.script("plain.sh", "#!/bin/sh\ntrue\n");
  r = c.gpuq("submit -q q --gpus 1 plain.sh");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  CHECK(shown_job(c.d, submitted_job(r)).at("spec").at("name").as_string() == "plain.sh");
}

TEST_CASE("gpuq submit --wait exits with the job's exit code") {
  Cluster c;
  c.script("three.sh", "#!/bin/sh\n#GPUQ -q q --gpus 1\nexit 3\n");
  CliRun r = c.gpuq("submit --wait three.sh");
  CHECK_MESSAGE(r.rc == 3, r.out);
  CHECK(r.out.find(" Failed: exit code 3 (exit 3)") != std::string::npos);
  c.script("ok.sh", "#!/bin/bash\n#GPUQ -q q --gpus 1\ntrue\n");
  r = c.gpuq("submit --wait ok.sh");
  CHECK_MESSAGE(r.rc == 0, r.out);
  // A command after -- waits the same way; its output stays in its log, not on gpuq's streams.
  r = c.gpuq("submit --wait -q q --gpus 1 -- sh -c 'echo hidden; exit 7'");
  CHECK_MESSAGE(r.rc == 7, r.out);
  CHECK(r.out.find("hidden") == std::string::npos);
  CHECK(c.gpuq("logs " + submitted_job(r)).out.starts_with("hidden\n[gpuq] job ended: exit code 7"));
}

TEST_CASE("gpuq submit --wait: a cancelled job exits 125; Ctrl-C stops waiting, not the job") {
  Cluster c;
  const std::string gpuq = std::string(GPUQ_CLI_PATH) + " --server unix:" + c.d.socket();
  CliRun r = shell("{ " + gpuq + " submit --wait --id w1 -q q --gpus 1 -- sleep 60 & pid=$!; sleep 1; " + gpuq +
                   " cancel --force w1 >/dev/null; wait $pid; echo rc=$?; }");
  CHECK_MESSAGE(r.out.find("job/w1 Cancelled") != std::string::npos, r.out);
  CHECK_MESSAGE(r.out.find("rc=125\n") != std::string::npos, r.out);

  r = c.gpuq("submit --wait --id w2 -q q --gpus 1 -- sleep 60", "timeout -s INT 2 ");
  CHECK_MESSAGE(r.rc == 124, r.out);  // timeout's code: gpuq was interrupted
  CHECK(shown_job(c.d, "w2").at("state").as_string() == "JOB_STATE_RUNNING");
  REQUIRE(c.gpuq("cancel --force w2").rc == 0);
}

TEST_CASE("the script's content is fixed at submit: editing the file later changes nothing") {
  Cluster c;
  // All four GPUs held, so the script's job waits while the file is edited.
  REQUIRE(c.gpuq("submit --id hold -q q --gpus 4 -- sleep 60").rc == 0);
  c.script("job.sh", "#!/bin/sh\n#GPUQ -q q --gpus 1 --id edited\necho first version\n");
  CliRun r = c.gpuq("submit job.sh");
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  CHECK(r.out == "job/edited submitted (Pending)\n");
  c.script("job.sh", "#!/bin/sh\n#GPUQ -q q --gpus 1 --id edited\necho second version\n");
  REQUIRE(c.gpuq("cancel hold").rc == 0);
  CHECK(wait_ended(c.d, "edited") == "JOB_STATE_SUCCEEDED");
  const std::string log = c.gpuq("logs edited").out;
  CHECK_MESSAGE(log.find("first version\n") != std::string::npos, log);
  CHECK(log.find("second version") == std::string::npos);
}

TEST_CASE("a bad directive is refused before anything is sent, naming the script, the line and the flag") {
  Cluster c;
  c.script("bad.sh", "#!/bin/sh\n#GPUQ -q q\n#GPUQ --gpu 1\necho\n");
  CliRun r = c.gpuq("submit bad.sh");
  CHECK(r.rc == 2);
  CHECK_MESSAGE(r.out.find("gpuq: bad.sh:3: #GPUQ --gpu: gpuq submit has no such flag") == 0, r.out);
  r = c.gpuq("submit -q q --gpus 1 missing.sh");
  CHECK(r.rc == 2);
  CHECK_MESSAGE(r.out.find("gpuq: missing.sh: cannot open the batch script; to run a command instead, put it after --") == 0,
                r.out);
  CHECK(c.gpuq("ls --all").out.find("No jobs") == 0);
}

}  // namespace cli_script_test
