#pragma once
// The batch features in listings: `gpuq ls` folds an array's pending members into one row, as
// squeue does ("j12_[40-99]"); `gpuq show` says a job's retries, array and dependencies.
#include <string>
#include <vector>

#include "gpuq/v1/gpuq.pb.h"

namespace gpuq::cli {

// Runs of pending members of one array that follow each other in `jobs` (the listing's order)
// become one job, the first of the run, with its id written "<array>_[<indices>]" (Slurm's
// compact form, spec::array_text). Everything else stays as it is.
std::vector<v1::Job> fold_arrays(std::vector<v1::Job> jobs);

// `gpuq show`'s lines for them ("Retries:     1 of 3 used\n" ...), each only when it applies.
std::string batch_detail(const v1::Job& j);

}  // namespace gpuq::cli
