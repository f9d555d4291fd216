// yaml_bench: the YAML libraries Debian 12 packages, on the same files, for the choice of the spec
// layer's reader (spec/README.md). For each file and each library: the median over --runs of
//   yaml-cpp  YAML::Load: the whole text to yaml-cpp's node tree, then a walk over every scalar;
//   fyaml-doc libfyaml's document tree (fy_document_build_from_string), then the same walk;
//   fyaml-ev  libfyaml's event parser alone (fy_parser_parse), touching every scalar's text;
//   yaml-ev   libyaml's event parser alone (yaml_parser_parse), touching every scalar's text.
// A walk or event loop counts scalars and their bytes, so every library is made to produce the
// same thing and nothing is optimised away (the counts must agree, or the run fails).
// Nothing is asserted about time. See bench/README.md.
#include <libfyaml.h>
#include <yaml.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Count {
  std::size_t scalars = 0;
  std::size_t bytes = 0;
  bool operator==(const Count&) const = default;
};

void walk(const YAML::Node& n, Count& c) {
  if (n.IsScalar()) {
    ++c.scalars;
    c.bytes += n.Scalar().size();
  } else if (n.IsSequence()) {
    for (const auto& e : n) walk(e, c);
  } else if (n.IsMap()) {
    for (const auto& kv : n) {
      walk(kv.first, c);
      walk(kv.second, c);
    }
  }
}

Count run_yaml_cpp(const std::string& text) {
  Count c;
  walk(YAML::Load(text), c);
  return c;
}

void walk(fy_node* n, Count& c) {
  switch (fy_node_get_type(n)) {
    case FYNT_SCALAR: {
      std::size_t len = 0;
      (void)fy_node_get_scalar(n, &len);
      ++c.scalars;
      c.bytes += len;
      break;
    }
    case FYNT_SEQUENCE: {
      void* it = nullptr;
      while (fy_node* e = fy_node_sequence_iterate(n, &it)) walk(e, c);
      break;
    }
    case FYNT_MAPPING: {
      void* it = nullptr;
      while (fy_node_pair* p = fy_node_mapping_iterate(n, &it)) {
        walk(fy_node_pair_key(p), c);
        walk(fy_node_pair_value(p), c);
      }
      break;
    }
  }
}

Count run_fyaml_doc(const std::string& text) {
  fy_parse_cfg cfg{};
  cfg.flags = static_cast<fy_parse_cfg_flags>(FYPCF_QUIET);
  fy_document* doc = fy_document_build_from_string(&cfg, text.data(), text.size());
  if (doc == nullptr) throw std::runtime_error("libfyaml: cannot parse");
  Count c;
  walk(fy_document_root(doc), c);
  fy_document_destroy(doc);
  return c;
}

Count run_fyaml_events(const std::string& text) {
  fy_parse_cfg cfg{};
  cfg.flags = static_cast<fy_parse_cfg_flags>(FYPCF_QUIET);
  fy_parser* p = fy_parser_create(&cfg);
  fy_parser_set_string(p, text.data(), text.size());
  Count c;
  while (fy_event* ev = fy_parser_parse(p)) {
    if (ev->type == FYET_SCALAR) {
      std::size_t len = 0;
      (void)fy_token_get_text(ev->scalar.value, &len);
      ++c.scalars;
      c.bytes += len;
    }
    fy_parser_event_free(p, ev);
  }
  const bool failed = fy_parser_get_stream_error(p);
  fy_parser_destroy(p);
  if (failed) throw std::runtime_error("libfyaml: cannot parse");
  return c;
}

Count run_libyaml_events(const std::string& text) {
  yaml_parser_t p;
  yaml_parser_initialize(&p);
  yaml_parser_set_input_string(&p, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  Count c;
  for (bool done = false; !done;) {
    yaml_event_t ev;
    if (!yaml_parser_parse(&p, &ev)) {
      yaml_parser_delete(&p);
      throw std::runtime_error("libyaml: cannot parse");
    }
    if (ev.type == YAML_SCALAR_EVENT) {
      ++c.scalars;
      c.bytes += ev.data.scalar.length;
    }
    done = ev.type == YAML_STREAM_END_EVENT;
    yaml_event_delete(&ev);
  }
  yaml_parser_delete(&p);
  return c;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 5;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) runs = std::atoi(argv[++i]);
    else files.push_back(a);
  }
  if (files.empty() || runs < 1) {
    std::fprintf(stderr, "usage: yaml_bench [--runs N] FILE.yaml...\n");
    return 2;
  }
  const std::vector<std::pair<const char*, std::function<Count(const std::string&)>>> libs = {
      {"yaml-cpp", run_yaml_cpp},
      {"fyaml-doc", run_fyaml_doc},
      {"fyaml-ev", run_fyaml_events},
      {"yaml-ev", run_libyaml_events},
  };
  std::printf("%-40s %9s %-10s %10s %9s %10s\n", "file", "MiB", "library", "ms", "MiB/s", "scalars");
  for (const std::string& f : files) {
    std::ifstream in(f);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    const double mib = static_cast<double>(text.size()) / (1 << 20);
    Count first;
    for (std::size_t l = 0; l < libs.size(); ++l) {
      std::vector<double> t;
      Count c;
      for (int r = 0; r < runs; ++r) {
        const auto t0 = Clock::now();
        c = libs[l].second(text);
        t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      }
      if (l == 0) first = c;
      if (!(c == first)) {
        std::fprintf(stderr, "yaml_bench: %s saw %zu scalars (%zu bytes), yaml-cpp %zu (%zu)\n", libs[l].first,
                     c.scalars, c.bytes, first.scalars, first.bytes);
        return 1;
      }
      const double ms = median(t) * 1e3;
      std::printf("%-40s %9.2f %-10s %10.1f %9.1f %10zu\n", f.c_str(), mib, libs[l].first, ms, mib / (ms / 1e3),
                  c.scalars);
    }
  }
  return 0;
}
