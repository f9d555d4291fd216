#pragma once
// Requests built from flags and files, with no server involved: what `gpuq submit`, `gpuq apply`,
// `gpuq logs` and `gpuq usage` send. Errors in what the user typed throw UsageError (exit 2);
// errors in a file throw spec::SpecError naming the file, the line and column and the field
// path (exit 2).
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpuq/v1/gpuq.grpc.pb.h"

namespace gpuq::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SubmitFlags {
  std::string queue;
  std::string gpus;    // "2", "500m", "0.5"; empty: none
  std::string cpu;     // "4", "250m"
  std::string memory;  // "64Gi", bytes
  std::int32_t replicas = 1;
  std::string priority;  // integer or class name, sent as text
  std::string name;
  std::string id;
  std::string owner;
  std::vector<std::string> flavors;
  std::optional<bool> preemptible;
  std::optional<std::int64_t> grace_period;
  std::int64_t max_runtime = 0;
  std::int64_t expected_runtime = 0;
  std::string notify;                  // URL to POST the job's state changes to
  std::vector<std::string> notify_on;  // started, finished, failed, preempted, cancelled
  bool exclusive = false;
  std::vector<std::string> env;  // K=V
  std::vector<std::string> node_selector;  // KEY=VALUE: a label every node of the job must have
  // KEY=VALUE:EFFECT, KEY=VALUE (every effect), KEY:EFFECT or KEY (operator Exists: any value)
  std::vector<std::string> tolerations;
  std::vector<std::string> gpu_models;  // the GPU models it accepts (node label gpuq.io/gpu-model)
  std::string workdir;           // empty: the current directory when there is a command
  std::string image;             // binder kubernetes; empty: the queue's defaultImage
  std::vector<std::string> command;
  std::int32_t retries = 0;      // failed runs requeued (--retries)
  std::string array;             // --array 0-99%8
  // --after-ok / --after-any / --after-not-ok: job ids (repeatable; also comma-separated)
  std::vector<std::string> after_ok, after_any, after_not_ok;
  bool singleton = false;
};

// The working directory sent is absolute, as the local executor needs: --workdir made absolute
// against the current directory, or, without --workdir, the current directory itself when there
// is a command (the job runs where it was submitted, as with sbatch), marked working_dir_implicit
// (a pod on Kubernetes then starts in its image's working directory instead).
v1::SubmitJobRequest submit_request_from_flags(const SubmitFlags& f);

// What `gpuq logs ID --pod N [-f]` sends; --pod must be >= 0.
v1::LogsRequest logs_request(const std::string& id, std::int32_t pod, bool follow);

// A job in the scenario format's keys (id optional, priority an integer or a class name) plus
// `command` (a list), `env` (a map), `workingDir`, `image` and `onNodeLoss`, read and checked by the spec
// layer (spec/yaml_read.hpp). `owner` defaults to default_owner.
v1::SubmitJobRequest submit_request_from_yaml(const std::string& text, const std::string& file,
                                              const std::string& default_owner);

struct ApplyItem {
  std::optional<v1::QueueSpec> queue;  // exactly one of queue and node is set
  std::optional<v1::NodeSpec> node;
};

// Each document (separated by ---) is either a map with `queues:` and/or `nodes:` lists (the
// scenario format's keys) or one object with `kind: Queue` or `kind: Node` beside its keys. In
// file order; within a document queues come before nodes.
// Or every document is a Kubernetes object (apiVersion beside kind): Kueue's ClusterQueues become
// queues (spec/kueue.hpp), and `warnings` gets one line per field or object gpuq ignores. A file
// mixing the two is refused.
std::vector<ApplyItem> parse_apply_file(const std::string& text, const std::string& file,
                                        std::vector<std::string>* warnings = nullptr);

// "1700000000" (Unix seconds), "7d" / "-7d", "24h", "30m", "90s", "2w" (back from now; the
// minus is optional), or "YYYY-MM-DD" (midnight UTC). Empty: 0.
std::int64_t parse_time_arg(const std::string& text, std::int64_t now);

// --server, then $GPUQ_SERVER, then 127.0.0.1:7433.
std::string resolve_server(const std::string& flag, const char* env);
inline constexpr const char* kDefaultServer = "127.0.0.1:7433";
inline constexpr const char* kDefaultSockets[] = {"var/gpuqd.sock", "/run/gpuq/gpuqd.sock", "/var/lib/gpuq/gpuqd.sock"};

// The user name a job's owner defaults to: this process's account (its uid's passwd entry), never
// $USER, which anyone can set; "" without a passwd entry (gpuqd names such a caller "uid:N").
std::string current_user();

}  // namespace gpuq::cli
