// What the local executor has to hand out: GPUs (nvidia-smi or the config's virtual ones), CPUs
// and memory (the kernel's view, less a reserve for the machine itself).
#include <sched.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <memory>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "binder/local/local_binder.hpp"
#include "binder/local/smi_csv.hpp"

namespace gpuq::binder {

namespace {

// Quotes for sh: the configured path may hold spaces.
std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::vector<LocalGpu> parse_nvidia_smi(const std::string& csv) {
  std::vector<LocalGpu> out;
  for_each_smi_row(csv, [&out](const std::vector<std::string>& f, const std::string& where) {
    if (f.size() != 4) throw std::runtime_error(where + "expected index, uuid, name, memory.total");
    LocalGpu g;
    try {
      std::size_t used = 0;
      g.index = std::stoi(f[0], &used);
      if (used != f[0].size() || g.index < 0) throw std::invalid_argument("index");
    } catch (const std::exception&) {
      throw std::runtime_error(where + "index \"" + f[0] + "\" is not a GPU index");
    }
    g.uuid = f[1];
    g.name = f[2];
    // "81559 MiB"; "[N/A]" on some boards: memory is informative only.
    try {
      g.memory_mib = std::stoll(f[3]);
    } catch (const std::exception&) {
      g.memory_mib = 0;
    }
    out.push_back(std::move(g));
  });
  return out;
}

Result<Inventory> discover(const LocalConfig& config) {
  Inventory inv;
  if (!config.nvidia_smi.empty()) {
    const std::string cmd = sh_quote(config.nvidia_smi) +
                            " --query-gpu=index,uuid,name,memory.total --format=csv,noheader 2>/dev/null";
    std::string text;
    int status = -1;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
      std::array<char, 4096> buf{};
      for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) text.append(buf.data(), n);
      status = ::pclose(p);
    }
    if (status == 0) {
      try {
        inv.gpus = parse_nvidia_smi(text);
      } catch (const std::exception& e) {
        return Error{std::string("local.nvidiaSmi: ") + e.what(), ErrorCode::kInvalidArgument};
      }
      if (!inv.gpus.empty()) inv.source = "nvidia-smi";
    } else {
      spdlog::info("event=gpu_discovery nvidia_smi={} found=none note=\"using local.gpus ({} {} GPUs)\"",
                   config.nvidia_smi, config.gpus, config.model);
    }
  }
  if (inv.gpus.empty()) {
    inv.source = "config";
    for (int i = 0; i < config.gpus; ++i) inv.gpus.push_back(LocalGpu{i, "", config.model, 0, i});
  } else {
    const auto minors = nvidia_minors();
    for (LocalGpu& g : inv.gpus) {
      const auto it = minors.find(g.uuid);
      g.minor = it != minors.end() ? it->second : g.index;
    }
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  const int cpus = ::sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set)
                                                                  : static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  inv.cpu = static_cast<Quantity>(cpus) * 1000 - config.reserve_cpu;
  inv.memory = static_cast<Quantity>(::sysconf(_SC_PHYS_PAGES)) * static_cast<Quantity>(::sysconf(_SC_PAGE_SIZE)) -
               config.reserve_memory;
  if (inv.cpu <= 0)
    return Error{"local.reserve.cpu: " + std::to_string(config.reserve_cpu) + "m leaves no CPU of this machine's " +
                     std::to_string(cpus) + "; reserve less",
                 ErrorCode::kInvalidArgument};
  if (inv.memory <= 0)
    return Error{"local.reserve.memory: " + std::to_string(config.reserve_memory) +
                     " bytes leaves no memory of this machine's; reserve less",
                 ErrorCode::kInvalidArgument};
  return inv;
}

std::map<std::string, int> nvidia_minors(const std::filesystem::path& driver_dir) {
  std::map<std::string, int> out;
  std::error_code ec;
  for (const auto& gpu : std::filesystem::directory_iterator(driver_dir, ec)) {
    std::ifstream in(gpu.path() / "information");
    std::string uuid;
    int minor = -1;
    for (std::string line; std::getline(in, line);) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string key = line.substr(0, colon), value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.pop_back();
      if (key == "GPU UUID") uuid = value;
      if (key == "Device Minor") {
        try {
          minor = std::stoi(value);
        } catch (const std::exception&) {
          minor = -1;
        }
      }
    }
    if (!uuid.empty() && minor >= 0) out[uuid] = minor;
  }
  return out;
}

Result<void> open_cgroups(const LocalConfig& config, Inventory& inventory) {
  using Mode = CgroupSettings::Mode;
  if (config.cgroups.mode == Mode::kOff) return Ok();
  auto c = Cgroups::open(config.cgroups);
  if (!c) {
    if (config.cgroups.mode == Mode::kRequired)
      return Error{"local.cgroups is required, and there are none: " + c.error(), ErrorCode::kUnavailable};
    spdlog::warn("event=cgroups_unavailable reason=\"{}\" note=\"jobs are not held to their GPUs, CPU and memory, "
                 "and what a killed supervisor leaves is not found (binder/local/CGROUPS.md)\"",
                 c.error());
    return Ok();
  }
  spdlog::info("event=cgroups {}", c.value().describe());
  for (const std::string& m : c.value().missing()) spdlog::warn("event=cgroup_limit_unavailable what=\"{}\"", m);
  inventory.cgroups = std::move(c).value();
  return Ok();
}

// A GPU's model as a Kubernetes label value, as NVIDIA's GPU feature discovery writes it:
// "NVIDIA H100 80GB HBM3" -> "NVIDIA-H100-80GB-HBM3" (at most 63 characters, alphanumeric at both
// ends).
std::string model_label(const std::string& model) {
  std::string v;
  for (char c : model) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    v.push_back(keep ? c : '-');
  }
  if (v.size() > 63) v.resize(63);
  auto edge = [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); };
  while (!v.empty() && edge(v.back())) v.pop_back();
  std::size_t b = 0;
  while (b < v.size() && edge(v[b])) ++b;
  return v.substr(b);
}

NodeSpec local_node(const LocalConfig& config, const Inventory& inventory) {
  NodeSpec n;
  n.name = config.node;
  if (n.name.empty()) {
    std::array<char, 256> host{};
    n.name = ::gethostname(host.data(), host.size() - 1) == 0 && host[0] != '\0' ? host.data() : "local";
  }
  n.flavor = config.flavor;
  n.labels = config.labels;
  if (!inventory.gpus.empty())
    if (std::string model = model_label(inventory.gpus.front().name); !model.empty())
      n.labels.emplace(kGpuModelLabel, std::move(model));
  // Whether jobs here are held to what they were given (gpuq nodes shows it).
  n.labels.emplace(kCgroupsLabel, inventory.cgroups ? "v" + std::to_string(inventory.cgroups->version()) : "none");
  n.capacity[kGpu] = static_cast<Quantity>(inventory.gpus.size()) * kMilliPerGpu;
  n.capacity[kCpu] = inventory.cpu;
  n.capacity[kMemory] = inventory.memory;
  return n;
}

std::filesystem::path pod_log_path(const std::filesystem::path& log_dir, const std::string& job, int pod) {
  return log_dir / job / ("pod-" + std::to_string(pod) + ".log");
}

}  // namespace gpuq::binder
