#pragma once
#include <string>

#include "spec/result.hpp"

namespace gpuq::storage {

// Copies the SQLite file at `src` into `dest` with the online backup API, through a connection of
// its own that holds one read snapshot for the whole copy: the copy is one committed state, and in
// WAL mode the writer is never blocked by it. The copy is written to `dest`.partial and renamed
// over `dest` when complete, so `dest` is never a half-written file.
Result<void> backup_file(const std::string& src, const std::string& dest);

}  // namespace gpuq::storage
