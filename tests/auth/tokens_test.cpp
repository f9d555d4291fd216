// Bearer token secrets (auth/tokens.hpp): their form, their id, their hash.
#include "auth/tokens.hpp"

#include <doctest/doctest.h>

#include <set>

using namespace gpuq::auth;

TEST_CASE(
    "a new token is gpuq_<id>_<key>, its id readable back, its hash SHA-256 of the whole secret") {
  auto t = new_token();
  REQUIRE(t.ok());
  const NewToken& k = t.value();
  CHECK(k.secret.rfind("gpuq_" + k.id + "_", 0) == 0);
  CHECK(k.id.size() == 16);
  CHECK(k.secret.size() == 5 + 16 + 1 + 43);  // 32 random bytes, base64url without padding
  CHECK(k.secret.find_first_not_of(
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") ==
        std::string::npos);
  CHECK(token_id(k.secret) == k.id);
  CHECK(k.hash == token_hash(k.secret));
  CHECK(k.hash.size() == 64);
  CHECK(k.hash.find(k.secret) == std::string::npos);
  // SHA-256("abc"), FIPS 180-2's example.
  CHECK(token_hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::set<std::string> secrets;
  for (int i = 0; i < 100; ++i) secrets.insert(new_token().value().secret);
  CHECK(secrets.size() == 100);
}

TEST_CASE("token_id reads only secrets of gpuq's form") {
  CHECK(token_id("gpuq_0123456789abcdef_x") == "0123456789abcdef");
  CHECK_FALSE(token_id("gpuq_0123456789abcdef").has_value());
  CHECK_FALSE(token_id("gpuq_0123456789ABCDEF_x").has_value());
  CHECK_FALSE(token_id("ghp_0123456789abcdef_x").has_value());
  CHECK_FALSE(token_id("").has_value());
}
