// Who calls over TCP (docs/tasks/tenants-and-security.md): bearer tokens an admin creates and client certificates
// (mutual TLS), against a real gpuqd on loopback with a real SQLite file, through the real gpuq
// command line. Certificates are made with the openssl command in a temporary folder.
#include <sys/stat.h>
#include <unistd.h>

#include <optional>

#include "tests/integration/cli_as.hpp"
#include "tests/support/files.hpp"

using namespace gpuq::test;

namespace {

// The command line in this process against gpuqd's TCP address, with `extra` first.
CliRun over_tcp(const Daemon& d, std::vector<std::string> args) {
  args.insert(args.begin(), {"--server", d.tcp()});
  std::ostringstream out, err;
  CliRun r;
  r.rc = gpuq::cli::run_cli(args, out, err);
  r.out = out.str() + err.str();
  return r;
}

CliRun with_stdout(const std::vector<std::string>& args, std::string& stdout_only) {
  std::ostringstream out, err;
  CliRun r;
  r.rc = gpuq::cli::run_cli(args, out, err);
  stdout_only = out.str();
  r.out = out.str() + err.str();
  return r;
}

// `gpuq admin token create` through the socket (root: an admin); the secret it printed.
std::string create_token(const Daemon& d, const std::string& user, const std::string& ttl) {
  std::string secret;
  const CliRun r = with_stdout({"--server", "unix:" + d.socket(), "admin", "token", "create",
                                "--user", user, "--ttl", ttl, "--name", "test"},
                               secret);
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  while (!secret.empty() && secret.back() == '\n') secret.pop_back();
  REQUIRE_MESSAGE(secret.rfind("gpuq_", 0) == 0, r.out);
  REQUIRE(secret.find('\n') == std::string::npos);
  return secret;
}

std::string token_file(const std::filesystem::path& dir, const std::string& name,
                       const std::string& secret) {
  const auto p = dir / name;
  std::ofstream(p) << secret << "\n";
  ::chmod(p.c_str(), 0600);
  return p.string();
}

std::string id_of(const std::string& secret) { return secret.substr(5, 16); }

// Every byte of the state file and its WAL.
std::string state_bytes(const std::filesystem::path& dir) {
  std::string all;
  for (const char* f : {"state.db", "state.db-wal"}) {
    std::ifstream in(dir / f, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    all += s.str();
  }
  return all;
}

void openssl(const std::string& args) {
  const CliRun r = shell("openssl " + args);
  REQUIRE_MESSAGE(r.rc == 0, "openssl " << args << ": " << r.out);
}

// A CA in dir/<ca>.pem (key <ca>.key); a certificate it signs, dir/<name>.pem and .key, with
// subject CN=<cn> and the extensions `ext` (openssl x509 -extfile lines).
void make_ca(const std::filesystem::path& dir, const std::string& ca) {
  const std::string p = (dir / ca).string();
  openssl("req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout " + p +
          ".key -out " + p + ".pem -days 2 -subj /CN=" + ca +
          " -addext basicConstraints=critical,CA:TRUE -addext "
          "keyUsage=critical,keyCertSign,cRLSign");
}
void make_cert(const std::filesystem::path& dir, const std::string& ca, const std::string& name,
               const std::string& cn, const std::string& ext) {
  const std::string p = (dir / name).string(), c = (dir / ca).string();
  std::ofstream(p + ".ext") << ext;
  openssl("req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout " + p +
          ".key -out " + p + ".csr -subj /CN=" + cn);
  openssl("x509 -req -in " + p + ".csr -CA " + c + ".pem -CAkey " + c +
          ".key -CAcreateserial -out " + p + ".pem -days 2 -extfile " + p + ".ext");
  ::chmod((p + ".key").c_str(), 0600);
}

}  // namespace

TEST_CASE(
    "over TCP a bearer token an admin created is its user; unknown, expired and revoked ones are "
    "UNAUTHENTICATED") {
  TempDir dir;
  ::chmod(dir.path.c_str(), 0755);  // nobody reaches the socket inside
  std::optional<Daemon> d(std::in_place, dir.path);
  const std::string mine =
      submitted_job(gpuq_me(*d, {"submit", "--queue", "research", "--gpus", "1", "--", "true"}));

  const std::string alice = create_token(*d, "alice", "30d");
  const std::string alice_file = token_file(dir.path, "alice.token", alice);

  // alice over TCP: her job, her list, not root's jobs.
  CliRun r = over_tcp(*d, {"--token-file", alice_file, "submit", "--queue", "research", "--gpus",
                           "1", "--", "true"});
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const std::string hers = submitted_job(r);
  CHECK(std::string(shown_job(*d, hers).at("spec").at("owner").as_string()) == "alice");
  r = over_tcp(*d, {"--token", alice, "ls", "-o", "json"});
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  CHECK(r.out.find("\"" + hers + "\"") != std::string::npos);
  CHECK(r.out.find("\"" + mine + "\"") == std::string::npos);
  r = over_tcp(*d, {"--token", alice, "show", mine});
  CHECK(r.rc == 1);
  CHECK_MESSAGE(r.out.find("user alice may not see job " + mine) != std::string::npos, r.out);
  // Claiming another owner is refused as for a socket caller.
  r = over_tcp(*d, {"--token", alice, "submit", "--queue", "research", "--gpus", "1", "--owner",
                    "root", "--", "true"});
  CHECK(r.rc == 1);
  CHECK_MESSAGE(r.out.find("user alice may not submit a job owned by root") != std::string::npos,
                r.out);

  // Only admins create tokens: not alice over TCP, not nobody through the socket.
  r = over_tcp(*d, {"--token", alice, "admin", "token", "create", "--user", "alice"});
  CHECK(r.rc == 1);
  CHECK_MESSAGE(
      r.out.find("user alice may not create a token: only gpuqd's admins may") != std::string::npos,
      r.out);
  CHECK_MESSAGE(r.out.find("(PERMISSION_DENIED)") != std::string::npos, r.out);

  // An unknown token: UNAUTHENTICATED, the secret not echoed.
  const std::string forged =
      "gpuq_" + id_of(alice) + "_forgedforgedforgedforgedforgedforgedforged1";
  r = over_tcp(*d, {"--token", forged, "ls"});
  CHECK(r.rc == 1);
  CHECK_MESSAGE(r.out.find("is not one gpuqd issued (unknown token)") != std::string::npos, r.out);
  CHECK_MESSAGE(r.out.find("(UNAUTHENTICATED)") != std::string::npos, r.out);
  CHECK(r.out.find(forged) == std::string::npos);
  // Something that is not a gpuq token at all is told so.
  r = over_tcp(*d, {"--token", "ghp_notours", "ls"});
  CHECK(r.rc == 1);
  CHECK_MESSAGE(r.out.find("is not a gpuq token (gpuq_ID_SECRET") != std::string::npos, r.out);
  CHECK(r.out.find("ghp_notours") == std::string::npos);
  // Also where an anonymous caller may go (the queue summaries): a credential that does not hold
  // is refused, not taken as no credential.
  r = over_tcp(*d, {"--token", forged, "queues"});
  CHECK(r.rc == 1);
  CHECK_MESSAGE(r.out.find("is not one gpuqd issued (unknown token)") != std::string::npos, r.out);
  CHECK(over_tcp(*d, {"queues"}).rc == 0);
  // A token on the socket changes nothing: the kernel's word wins (root stays an admin). The
  // command line does not send it there; a client that does is still root.
  r = gpuq_me(*d, {"--token", forged, "ls", "-o", "json"});
  CHECK_MESSAGE(r.rc == 0, r.out);
  CHECK(r.out.find("\"" + mine + "\"") != std::string::npos);
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer " + forged);
    gpuq::v1::GetJobRequest get;
    get.set_id(mine);
    gpuq::v1::GetJobResponse resp;
    const grpc::Status st = d->jobs->Get(&ctx, get, &resp);
    CHECK_MESSAGE(st.ok(), st.error_message());
  }

  // An expired one says when it expired.
  const std::string brief = create_token(*d, "alice", "1s");
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  r = over_tcp(*d, {"--token", brief, "ls"});
  CHECK(r.rc == 1);
  CHECK_MESSAGE(r.out.find("bearer token " + id_of(brief) + " of user alice expired at 20") !=
                    std::string::npos,
                r.out);
  CHECK_MESSAGE(r.out.find("(UNAUTHENTICATED)") != std::string::npos, r.out);
  CHECK(r.out.find(brief) == std::string::npos);

  // A token file others may read is refused before anything is sent.
  const std::string loose = token_file(dir.path, "loose.token", alice);
  ::chmod(loose.c_str(), 0644);
  r = over_tcp(*d, {"--token-file", loose, "ls"});
  CHECK(r.rc == 2);
  CHECK_MESSAGE(
      r.out.find("mode 0644 lets other accounts read the token; chmod 600") != std::string::npos,
      r.out);
  CHECK(r.out.find(alice) == std::string::npos);

  // ls shows ids, users and states, never a secret; the state file holds none either.
  r = gpuq_me(*d, {"admin", "token", "ls"});
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  CHECK(r.out.find(id_of(alice)) != std::string::npos);
  CHECK(r.out.find("expired") != std::string::npos);
  CHECK(r.out.find(alice) == std::string::npos);
  CHECK(r.out.find(brief) == std::string::npos);
  r = gpuq_me(*d, {"admin", "token", "ls", "-o", "json"});
  CHECK(r.out.find(alice.substr(22)) == std::string::npos);
  const std::string stored = state_bytes(dir.path);
  CHECK(stored.find(id_of(alice)) != std::string::npos);  // the row is there
  CHECK(stored.find(alice.substr(22)) == std::string::npos);
  CHECK(stored.find(brief.substr(22)) == std::string::npos);

  // Tokens outlive a restart (read from the state file at start).
  d.reset();
  d.emplace(dir.path);
  r = over_tcp(*d, {"--token-file", alice_file, "ls", "-o", "json"});
  CHECK_MESSAGE(r.rc == 0, r.out);
  CHECK(r.out.find("\"" + hers + "\"") != std::string::npos);

  {  // Tokens list in pages (by size); a page token gpuqd did not give is refused by name.
    auto admin = gpuq::v1::Admin::NewStub(grpc::CreateChannel("unix:" + d->socket(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    gpuq::v1::ListTokensResponse all;
    REQUIRE(admin->ListTokens(&ctx, gpuq::v1::ListTokensRequest{}, &all).ok());
    CHECK(all.next_page_token().empty());  // a few tokens: one page
    REQUIRE(all.tokens_size() >= 2);
    gpuq::v1::ListTokensRequest after_first;
    after_first.set_page_token(all.tokens(0).id());
    grpc::ClientContext ctx2;
    gpuq::v1::ListTokensResponse rest;
    REQUIRE(admin->ListTokens(&ctx2, after_first, &rest).ok());
    CHECK(rest.tokens_size() == all.tokens_size() - 1);
    CHECK(rest.tokens(0).id() == all.tokens(1).id());
    gpuq::v1::ListTokensRequest bogus;
    bogus.set_page_token("nope");
    grpc::ClientContext ctx3;
    const grpc::Status st = admin->ListTokens(&ctx3, bogus, &rest);
    CHECK(st.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(st.error_message() == "page_token: \"nope\" is not a token this server gave");
  }
  // alice sees and revokes her own tokens; then hers is refused as revoked.
  r = over_tcp(*d, {"--token", alice, "admin", "token", "ls"});
  CHECK_MESSAGE(r.rc == 0, r.out);
  CHECK(r.out.find(id_of(alice)) != std::string::npos);
  r = over_tcp(*d, {"--token", alice, "admin", "token", "ls", "--user", "root"});
  CHECK(r.rc == 1);
  CHECK_MESSAGE(r.out.find("user alice may not list the tokens of user root") != std::string::npos,
                r.out);
  // A watch opened with the token: revoking it ends the stream at the next event (one call that
  // may run for days is not left with a credential that no longer holds).
  auto channel = grpc::CreateChannel(d->tcp(), grpc::InsecureChannelCredentials());
  auto jobs = gpuq::v1::Jobs::NewStub(channel);
  grpc::ClientContext watch_ctx;
  watch_ctx.AddMetadata("authorization", "Bearer " + alice);
  watch_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto watch = jobs->Watch(&watch_ctx, gpuq::v1::WatchJobsRequest{});
  gpuq::v1::JobEvent event;
  REQUIRE(watch->Read(&event));  // her job's history: the watch is registered
  CHECK(event.job_id() == hers);
  r = gpuq_me(*d, {"admin", "token", "revoke", id_of(alice)});
  CHECK_MESSAGE(r.rc == 0, r.out);
  CHECK(r.out.find("token " + id_of(alice) + " of user alice revoked at") != std::string::npos);
  REQUIRE(gpuq_me(*d, {"submit", "--queue", "research", "--gpus", "1", "--", "true"}).rc == 0);
  while (watch->Read(&event)) {
  }
  const grpc::Status ended = watch->Finish();
  CHECK(ended.error_code() == grpc::StatusCode::UNAUTHENTICATED);
  CHECK_MESSAGE(ended.error_message() == "bearer token " + id_of(alice) + " was revoked: the watch ends",
                ended.error_message());
  // Anonymous callers see the queue summaries but not who holds the roles in them.
  const auto roles_file = dir.path / "roles.yaml";
  std::ofstream(roles_file) << "queues:\n  - name: guarded\n    quotas: [{flavor: h100, resources: {gpu: {nominal: 1}}}]\n"
                               "    submitters: {users: [alice]}\n";
  REQUIRE(gpuq_me(*d, {"apply", "-f", roles_file.string()}).rc == 0);
  CHECK(gpuq_me(*d, {"queues", "guarded", "-o", "json"}).out.find("\"alice\"") != std::string::npos);
  for (const std::vector<std::string>& args : {std::vector<std::string>{"queues", "-o", "json"},
                                               std::vector<std::string>{"queues", "guarded", "-o", "json"}}) {
    r = over_tcp(*d, args);
    CHECK_MESSAGE(r.rc == 0, r.out);
    CHECK(r.out.find("\"guarded\"") != std::string::npos);
    CHECK_MESSAGE(r.out.find("alice") == std::string::npos, r.out);
  }
  r = over_tcp(*d, {"--token", alice, "ls"});
  CHECK(r.rc == 1);
  CHECK_MESSAGE(r.out.find("bearer token " + id_of(alice) + " of user alice was revoked at") !=
                    std::string::npos,
                r.out);
  CHECK_MESSAGE(r.out.find("(UNAUTHENTICATED)") != std::string::npos, r.out);

  if (::getuid() != 0) {
    MESSAGE("not root: nobody's token create (setpriv) is skipped; CI runs as root");
    return;
  }
  r = gpuq_as(*d, setpriv_as("nobody", "nogroup"), "admin token create --user nobody");
  CHECK(r.rc == 1);
  CHECK_MESSAGE(r.out.find("user nobody may not create a token: only gpuqd's admins may") !=
                    std::string::npos,
                r.out);
  CHECK(r.out.find("gpuq_") == std::string::npos);
}

TEST_CASE(
    "mutual TLS: a verified client certificate's CN is its user; another CA's is refused; none is "
    "anonymous") {
  TempDir dir;
  const auto& p = dir.path;
  make_ca(p, "ca");
  make_ca(p, "other-ca");
  make_cert(p, "ca", "server", "gpuqd",
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
  make_cert(p, "ca", "alice", "alice", "extendedKeyUsage=clientAuth\n");
  make_cert(p, "other-ca", "mallory", "root", "extendedKeyUsage=clientAuth\n");
  const std::string tls = "tls:\n  cert: " + (p / "server.pem").string() +
                          "\n  key: " + (p / "server.key").string() +
                          "\n  clientCA: " + (p / "ca.pem").string() + "\n";
  Daemon d(p, true, tls + kConfig);
  CHECK(slurp(p / "gpuqd.out").find("mode=tls+client-certificates") != std::string::npos);
  const std::string ca = (p / "ca.pem").string();

  // alice's certificate: her job.
  CliRun r = over_tcp(d, {"--tls-ca", ca, "--tls-cert", (p / "alice.pem").string(), "--tls-key",
                          (p / "alice.key").string(), "submit", "--queue", "research", "--gpus",
                          "1", "--", "true"});
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const std::string hers = submitted_job(r);
  CHECK(std::string(shown_job(d, hers).at("spec").at("owner").as_string()) == "alice");
  r = over_tcp(d, {"--tls-ca", ca, "--tls-cert", (p / "alice.pem").string(), "--tls-key",
                   (p / "alice.key").string(), "nodes", "cordon", "n0"});
  CHECK(r.rc == 1);
  CHECK_MESSAGE(r.out.find("user alice may not cordon node n0") != std::string::npos, r.out);

  // TLS without a client certificate: anonymous (queue summaries only).
  r = over_tcp(d, {"--tls-ca", ca, "queues"});
  CHECK_MESSAGE(r.rc == 0, r.out);
  CHECK(r.out.find("research") != std::string::npos);
  r = over_tcp(d, {"--tls-ca", ca, "ls"});
  CHECK(r.rc == 1);
  CHECK_MESSAGE(r.out.find("gpuqd does not know who calls from") != std::string::npos, r.out);
  CHECK_MESSAGE(r.out.find("(UNAUTHENTICATED)") != std::string::npos, r.out);

  // A token over TLS, without a certificate: the token's user.
  const std::string bob = create_token(d, "bob", "1h");
  r = over_tcp(d, {"--tls-ca", ca, "--token-file", token_file(p, "bob.token", bob), "submit",
                   "--queue", "research", "--gpus", "1", "--", "true"});
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  CHECK(std::string(shown_job(d, submitted_job(r)).at("spec").at("owner").as_string()) == "bob");

  // A certificate of another CA (claiming root) does not get through the handshake; nor does
  // a client without TLS.
  r = over_tcp(d, {"--tls-ca", ca, "--tls-cert", (p / "mallory.pem").string(), "--tls-key",
                   (p / "mallory.key").string(), "--timeout", "5", "ls"});
  CHECK(r.rc == 1);
  const bool unreachable = r.out.find("UNAVAILABLE") != std::string::npos ||
                           r.out.find("cannot reach") != std::string::npos ||
                           r.out.find("no answer") != std::string::npos;
  CHECK_MESSAGE(unreachable, r.out);
  CHECK(r.out.find("job") == std::string::npos);
  r = over_tcp(d, {"--timeout", "5", "queues"});
  CHECK(r.rc == 1);
  d.stop(SIGTERM);

  // With tls, gpuqd listens beyond loopback without insecure: true.
  TempDir wide;
  std::ofstream(wide.path / "gpuqd.yaml") << tls;
  GpuqdChild c =
      start_gpuqd(GPUQD_PATH,
                  {"--config", (wide.path / "gpuqd.yaml").string(), "--state-file",
                   (wide.path / "s.db").string(), "--grpc", "0.0.0.0:0", "--http", "127.0.0.1:0"},
                  wide.path / "out", wide.path / "err", std::chrono::seconds(15));
  CHECK_MESSAGE(!c.address.empty(), slurp(wide.path / "err"));
  c.stop(SIGTERM);

  // A tls section without its key, or with a file that is not there, stops gpuqd naming the field.
  for (const auto& [config, says] : std::vector<std::pair<std::string, std::string>>{
           {"tls:\n  cert: " + (p / "server.pem").string() + "\n", "needs key"},
           {"tls:\n  cert: /nonexistent/server.pem\n  key: " + (p / "server.key").string() + "\n",
            "tls.cert: /nonexistent/server.pem cannot be read"},
           {"tls:\n  cert: " + (p / "server.pem").string() +
                "\n  key: " + (p / "alice.key").string() + "\n",
            "tls.key: " + (p / "alice.key").string() + " is not the key of tls.cert"}}) {
    TempDir bad;
    std::ofstream(bad.path / "gpuqd.yaml") << config;
    GpuqdChild b = start_gpuqd(
        GPUQD_PATH,
        {"--config", (bad.path / "gpuqd.yaml").string(), "--state-file",
         (bad.path / "s.db").string(), "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"},
        bad.path / "out", bad.path / "err", std::chrono::seconds(10));
    CHECK(b.address.empty());
    CHECK_MESSAGE(slurp(bad.path / "err").find(says) != std::string::npos, slurp(bad.path / "err"));
    b.stop(SIGTERM);
  }
}
