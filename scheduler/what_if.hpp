#pragma once
// Start-time estimates computed by the engine itself: a copy of the live engine is run forward in
// virtual time, every job holding resources ending when it is expected to, the pending jobs
// waiting as they are, preemption included (victims stop after their grace period), until each
// pending job has been admitted or the horizon is reached. Pure and deterministic, like the
// engine: the same engine and `now` give the same estimates.
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "scheduler/engine.hpp"

namespace gpuq {

struct WhatIfOptions {
  // How long a job is taken to run: kExpected uses its expectedRuntime, else its queue's
  // runtimeEstimate, else its maxRuntime; kLimit (Slurm's backfill view, the baseline) uses its
  // maxRuntime alone. Never past maxRuntime. A job with none of them runs for ever. Under
  // kExpected, a job already running longer than that is taken to run as long again (within its
  // maxRuntime): runtimes are heavy-tailed (estimate_bench measured it on Philly).
  enum class Runtime { kExpected, kLimit };
  Runtime runtime = Runtime::kExpected;
  // When set, how long each job runs, instead of `runtime` (benchmarks: the trace's own durations).
  std::function<std::optional<Time>(const Job&)> runtime_of;
  Time horizon = 30 * 86400;  // no estimate beyond now + horizon
  std::size_t max_steps = 200000;  // virtual-time steps (each: the jobs ending at one time, a cycle)
};

// How long `job` is taken to run under `options` (nullopt: for ever).
std::optional<Time> expected_runtime(const Engine& engine, const Job& job, WhatIfOptions::Runtime runtime);

struct WhatIfResult {
  std::unordered_map<std::string, Time> starts;  // pending job id -> estimated admission time
  std::vector<std::pair<std::uint32_t, Time>> slot_starts;  // the same by Engine::slot_of
  // An array's members that waited in its block (Engine::block_orders), by Job::order: they get
  // slots of their own only as the what-if admits them, which the engine copied from has not.
  std::vector<std::pair<std::uint64_t, Time>> order_starts;
  std::size_t pending = 0;  // pending jobs when it began (those without an entry: no estimate)
  std::size_t steps = 0;
};

// Runs `engine` (a copy: it is changed) forward from `now`.
WhatIfResult estimate_starts(Engine engine, Time now, const WhatIfOptions& options = {});

}  // namespace gpuq
