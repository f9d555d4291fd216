#include <algorithm>
#include <charconv>
#include <map>
#include <string>
#include <string_view>

#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>

#include "daemon/frontend.hpp"
#include "gpuq/v1/gpuq.grpc.pb.h"
#include "web/assets.hpp"

namespace gpuq::web {
namespace {

using daemon::HttpRequest;
using daemon::HttpResponse;
using Params = std::map<std::string, std::string>;

constexpr std::string_view kJson = "application/json";

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

HttpResponse json_error(int status, std::string_view code, std::string_view message) {
  return {status, std::string(kJson),
          "{\"code\":" + json_string(code) + ",\"message\":" + json_string(message) + "}\n",
          {{"Cache-Control", "no-store"}}};
}

// The bad request's answer, naming the parameter, the value and what is allowed.
struct BadParam {
  std::string message;
};

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string url_decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// The query's parameters; only `allowed` ones, each once.
Params query(std::string_view target, std::initializer_list<std::string_view> allowed) {
  Params out;
  const auto q = target.find('?');
  if (q == std::string_view::npos) return out;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (pair.empty()) continue;
    const auto eq = pair.find('=');
    const std::string key = url_decode(pair.substr(0, eq));
    const std::string value = eq == std::string_view::npos ? std::string() : url_decode(pair.substr(eq + 1));
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string names;
      for (auto a : allowed) names += (names.empty() ? "" : ", ") + std::string(a);
      throw BadParam{"query parameter " + json_string(key) + " is not known here; use " +
                     (names.empty() ? std::string("none") : names)};
    }
    if (!out.emplace(key, value).second) throw BadParam{"query parameter " + json_string(key) + " is given twice"};
  }
  return out;
}

std::string param(const Params& p, const std::string& key) {
  auto it = p.find(key);
  return it == p.end() ? std::string() : it->second;
}

std::int64_t int_param(const Params& p, const std::string& key, std::int64_t lo, std::int64_t hi) {
  const std::string v = param(p, key);
  if (v.empty()) return 0;  // absent: the API's default
  std::int64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || n < lo || n > hi)
    throw BadParam{key + ": " + json_string(v) + " is not an integer from " + std::to_string(lo) + " to " +
                   std::to_string(hi)};
  return n;
}

v1::JobState job_state(const std::string& name) {
  std::string up;
  for (char c : name) up += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  v1::JobState s{};
  if (v1::JobState_Parse(up, &s) || v1::JobState_Parse("JOB_STATE_" + up, &s)) {
    if (s != v1::JOB_STATE_UNSPECIFIED) return s;
  }
  throw BadParam{"state: " + json_string(name) +
                 " is not a job state; use pending, admitted, running, preempting, succeeded, failed or cancelled"};
}

v1::UsageBy usage_by(const std::string& name) {
  if (name.empty() || name == "queue") return v1::USAGE_BY_QUEUE;
  if (name == "user") return v1::USAGE_BY_USER;
  if (name == "flavor") return v1::USAGE_BY_FLAVOR;
  if (name == "job") return v1::USAGE_BY_JOB;
  throw BadParam{"by: " + json_string(name) + " is not allowed; use queue, user, flavor or job"};
}

int http_status(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
      return 400;
    case grpc::StatusCode::UNAUTHENTICATED:
      return 401;
    case grpc::StatusCode::PERMISSION_DENIED:
      return 403;
    case grpc::StatusCode::NOT_FOUND:
      return 404;
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::ALREADY_EXISTS:
    case grpc::StatusCode::ABORTED:
      return 409;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return 429;
    case grpc::StatusCode::UNAVAILABLE:
      return 503;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return 504;
    default:
      return 500;
  }
}

std::string code_name(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    default: return "INTERNAL";
  }
}

class Dashboard {
 public:
  Dashboard(std::shared_ptr<grpc::Channel> channel, std::chrono::milliseconds deadline)
      : deadline_(deadline),
        jobs_(v1::Jobs::NewStub(channel)),
        queues_(v1::Queues::NewStub(channel)),
        nodes_(v1::Nodes::NewStub(channel)),
        admin_(v1::Admin::NewStub(channel)) {}

  std::optional<HttpResponse> operator()(const HttpRequest& req) const {
    const std::string path = req.target.substr(0, req.target.find('?'));
    if (path == "/" || path == "/index.html") return asset("index.html", req);
    if (path.starts_with("/static/")) return asset(path.substr(8), req);
    if (!path.starts_with("/api/")) return std::nullopt;
    if (req.method != "GET") {
      auto r = json_error(405, "METHOD_NOT_ALLOWED", "the dashboard's API is read-only: GET only");
      r.headers.emplace_back("Allow", "GET");
      return r;
    }
    try {
      return api(path, req);
    } catch (const BadParam& e) {
      return json_error(400, "INVALID_ARGUMENT", e.message);
    }
  }

 private:
  static std::optional<HttpResponse> asset(const std::string& name, const HttpRequest& req) {
    const Asset* a = find_asset(name);
    if (a == nullptr) return std::nullopt;
    if (req.method != "GET") return HttpResponse{405, "text/plain; charset=utf-8", "GET only\n", {{"Allow", "GET"}}};
    HttpResponse r{200, std::string(a->content_type), std::string(a->body), {}};
    // Scripts and styles from this origin only, nothing inline: a job's name or command shown on
    // the page can never run as script.
    r.headers.emplace_back("Content-Security-Policy",
                           "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                           "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    r.headers.emplace_back("X-Frame-Options", "DENY");
    r.headers.emplace_back("Referrer-Policy", "no-referrer");
    r.headers.emplace_back("Cache-Control", "no-cache");
    return r;
  }

  std::unique_ptr<grpc::ClientContext> context(const HttpRequest& req) const {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + deadline_);
    if (!req.authorization.empty()) ctx->AddMetadata("authorization", req.authorization);
    return ctx;
  }

  static HttpResponse reply(const grpc::Status& status, const google::protobuf::Message& msg) {
    if (!status.ok()) return json_error(http_status(status.error_code()), code_name(status.error_code()), status.error_message());
    google::protobuf::util::JsonPrintOptions opts;
    opts.always_print_primitive_fields = true;
    opts.preserve_proto_field_names = true;
    std::string out;
    if (!google::protobuf::util::MessageToJsonString(msg, &out, opts).ok())
      return json_error(500, "INTERNAL", "the answer could not be written as JSON");
    return {200, std::string(kJson), out + "\n", {{"Cache-Control", "no-store"}}};
  }

  HttpResponse api(const std::string& path, const HttpRequest& req) const {
    if (path == "/api/v1/queues") {
      const Params p = query(req.target, {"page_token"});
      v1::ListQueuesRequest in;
      in.set_page_token(param(p, "page_token"));
      v1::ListQueuesResponse out;
      auto ctx = context(req);
      return reply(queues_->List(ctx.get(), in, &out), out);
    }
    if (path == "/api/v1/nodes") {
      const Params p = query(req.target, {"page_token"});
      v1::ListNodesRequest in;
      in.set_page_token(param(p, "page_token"));
      v1::ListNodesResponse out;
      auto ctx = context(req);
      return reply(nodes_->List(ctx.get(), in, &out), out);
    }
    if (path == "/api/v1/jobs") {
      const Params p = query(req.target, {"queue", "state", "owner", "page_size", "page_token"});
      v1::ListJobsRequest in;
      in.set_queue(param(p, "queue"));
      in.set_owner(param(p, "owner"));
      in.set_page_size(static_cast<std::int32_t>(int_param(p, "page_size", 0, 1000)));
      in.set_page_token(param(p, "page_token"));
      const std::string state_list = param(p, "state");
      std::string_view states = state_list;
      while (!states.empty()) {
        const auto comma = states.find(',');
        if (comma != 0) in.add_states(job_state(std::string(states.substr(0, comma))));
        states = comma == std::string_view::npos ? std::string_view() : states.substr(comma + 1);
      }
      v1::ListJobsResponse out;
      auto ctx = context(req);
      return reply(jobs_->List(ctx.get(), in, &out), out);
    }
    if (path == "/api/v1/usage") {
      const Params p = query(req.target, {"by", "since", "until", "queue", "user", "page_size", "page_token"});
      v1::UsageRequest in;
      in.set_by(usage_by(param(p, "by")));
      in.set_since(int_param(p, "since", 0, std::int64_t{1} << 40));
      in.set_until(int_param(p, "until", 0, std::int64_t{1} << 40));
      in.set_queue(param(p, "queue"));
      in.set_user(param(p, "user"));
      in.set_page_size(static_cast<std::int32_t>(int_param(p, "page_size", 0, 1000)));
      in.set_page_token(param(p, "page_token"));
      v1::UsageResponse out;
      auto ctx = context(req);
      return reply(admin_->Usage(ctx.get(), in, &out), out);
    }
    constexpr std::string_view kJobs = "/api/v1/jobs/";
    if (path.starts_with(kJobs)) {
      query(req.target, {});
      std::string id = path.substr(kJobs.size());
      const bool explain = id.ends_with("/explain");
      if (explain) id.resize(id.size() - std::string_view("/explain").size());
      id = url_decode(id);
      if (id.empty() || id.find('/') != std::string::npos)
        return json_error(404, "NOT_FOUND", "no such path; use /api/v1/jobs/ID or /api/v1/jobs/ID/explain");
      auto ctx = context(req);
      if (explain) {
        v1::ExplainJobRequest in;
        in.set_id(id);
        v1::ExplainJobResponse out;
        return reply(jobs_->Explain(ctx.get(), in, &out), out);
      }
      v1::GetJobRequest in;
      in.set_id(id);
      v1::GetJobResponse out;
      return reply(jobs_->Get(ctx.get(), in, &out), out);
    }
    return json_error(404, "NOT_FOUND",
                      "no such path; the API has /api/v1/queues, /api/v1/nodes, /api/v1/jobs, /api/v1/jobs/ID, "
                      "/api/v1/jobs/ID/explain and /api/v1/usage");
  }

  std::chrono::milliseconds deadline_;
  std::unique_ptr<v1::Jobs::Stub> jobs_;
  std::unique_ptr<v1::Queues::Stub> queues_;
  std::unique_ptr<v1::Nodes::Stub> nodes_;
  std::unique_ptr<v1::Admin::Stub> admin_;
};

}  // namespace
}  // namespace gpuq::web

namespace gpuq::daemon {

HttpHandler make_dashboard(std::shared_ptr<grpc::Channel> channel, std::chrono::milliseconds deadline) {
  auto d = std::make_shared<const web::Dashboard>(std::move(channel), deadline);
  return [d](const HttpRequest& req) { return (*d)(req); };
}

}  // namespace gpuq::daemon
