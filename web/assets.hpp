#pragma once
// The dashboard's files (web/assets/), built into gpuqd by embed.cmake: no file is read at run
// time and nothing is fetched from elsewhere.
#include <string_view>

namespace gpuq::web {

struct Asset {
  std::string_view content_type;
  std::string_view body;
};

// By file name ("index.html", "app.js"); nullptr when there is none.
const Asset* find_asset(std::string_view name);

}  // namespace gpuq::web
