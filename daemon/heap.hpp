#pragma once
// Giving freed memory back to the kernel. glibc keeps what is freed inside its heaps for the next
// allocation and returns only the top of a heap by itself, so a burst of short-lived memory (the
// state file's records as a restart reads them; the estimator's copy of the engine) would stay in
// gpuqd's resident memory after it is freed. Called after such a burst, off the hot path.
namespace gpuq::daemon {

// malloc_trim(0) over every arena; logs (debug) what it took. `after` names the burst.
void trim_heap(const char* after);

}  // namespace gpuq::daemon
