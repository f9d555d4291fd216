// The pure parts on their own: quantities, selectors, patches, the store's history.
#include <doctest/doctest.h>

#include "tests/kubefake/patch.hpp"
#include "tests/kubefake/quantity.hpp"
#include "tests/kubefake/selectors.hpp"
#include "tests/kubefake/status.hpp"
#include "tests/kubefake/store.hpp"

namespace {
using namespace gpuq::kubefake;
namespace json = boost::json;

json::object labelled(json::object labels) {
  return json::object{{"metadata", json::object{{"name", "x"}, {"labels", std::move(labels)}}}};
}
}  // namespace

TEST_CASE("quantities read as the API reads them, in milli-units rounded up") {
  CHECK(parse_milli(std::string_view("500m")) == 500);
  CHECK(parse_milli(std::string_view("2")) == 2000);
  CHECK(parse_milli(std::string_view("0.5")) == 500);
  CHECK(parse_milli(std::string_view("1Ki")) == 1024000);
  CHECK(parse_milli(std::string_view("1Ti")) == 1099511627776000);
  CHECK(parse_milli(std::string_view("1G")) == 1000000000000);
  CHECK(parse_milli(std::string_view("1e3")) == 1000000);
  CHECK(parse_milli(std::string_view("1n")) == 1);  // rounded up
  CHECK(!parse_milli(std::string_view("")));
  CHECK(!parse_milli(std::string_view("abc")));
  CHECK(!parse_milli(std::string_view("1Qi")));
  CHECK(!parse_milli(std::string_view("100Ei")));  // past int64 milli-units
  CHECK(parse_milli(json::value(8)) == 8000);
}

TEST_CASE("label selector objects: matchLabels and matchExpressions; null matches nothing") {
  json::value sel = json::parse(R"({"matchLabels":{"app":"a"},
      "matchExpressions":[{"key":"tier","operator":"In","values":["gold","silver"]},
                          {"key":"canary","operator":"DoesNotExist"}]})");
  LabelSelector s = LabelSelector::from_object(&sel);
  CHECK(s.matches_object(labelled({{"app", "a"}, {"tier", "gold"}})));
  CHECK(!s.matches_object(labelled({{"app", "a"}, {"tier", "bronze"}})));
  CHECK(!s.matches_object(labelled({{"app", "a"}, {"tier", "gold"}, {"canary", "1"}})));
  json::value empty = json::object();
  CHECK(LabelSelector::from_object(&empty).matches_object(labelled({})));
  CHECK(!LabelSelector::from_object(nullptr).matches_object(labelled({})));
}

TEST_CASE("label selector strings: gt/lt and malformed input") {
  CHECK(LabelSelector::parse("gen>3").matches_object(labelled({{"gen", "4"}})));
  CHECK(!LabelSelector::parse("gen<3").matches_object(labelled({{"gen", "4"}})));
  CHECK(LabelSelector::parse("").empty());
  CHECK_THROWS_AS(LabelSelector::parse("a in (b"), ApiError);
  CHECK_THROWS_AS(LabelSelector::parse("a=b c"), ApiError);
  CHECK_THROWS_AS(LabelSelector::parse("a=bad value!"), ApiError);
}

TEST_CASE("strategic merge: merge keys, $patch delete and replace, primitive sets") {
  json::value pod = json::parse(R"({"metadata":{"finalizers":["a"]},
      "spec":{"containers":[{"name":"c1","image":"x"},{"name":"c2","image":"y"}],"tolerations":[{"key":"k"}]}})");
  json::value patch = json::parse(R"({"metadata":{"finalizers":["b","a"]},
      "spec":{"containers":[{"name":"c2","image":"z"},{"name":"c1","$patch":"delete"},{"name":"c3","image":"w"}],
              "tolerations":[{"key":"other"}]}})");
  json::value out = strategic_merge_patch(pod, patch, "pods");
  CHECK(out.at("metadata").at("finalizers") == json::parse(R"(["a","b"])"));
  CHECK(out.at("spec").at("containers") ==
        json::parse(R"([{"name":"c2","image":"z"},{"name":"c3","image":"w"}])"));
  CHECK(out.at("spec").at("tolerations") ==
        json::parse(R"([{"key":"other"}])"));  // no merge key: replaced
  json::value replace = json::parse(R"({"spec":{"$patch":"replace","x":1}})");
  CHECK(strategic_merge_patch(pod, replace, "pods").at("spec") == json::parse(R"({"x":1})"));
  json::value del = json::parse(R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["a"]}})");
  CHECK(strategic_merge_patch(pod, del, "pods").at("metadata").at("finalizers").as_array().empty());
}

TEST_CASE("JSON patch: pointers with escapes, array insert and append, move, copy") {
  json::value doc = json::parse(R"({"a/b":{"~k":[1,3]}})");
  json::value ops = json::parse(R"([{"op":"add","path":"/a~1b/~0k/1","value":2},
      {"op":"add","path":"/a~1b/~0k/-","value":4},
      {"op":"copy","from":"/a~1b/~0k","path":"/copy"},
      {"op":"move","from":"/copy","path":"/moved"}])");
  CHECK(json_patch(doc, ops) == json::parse(R"({"a/b":{"~k":[1,2,3,4]},"moved":[1,2,3,4]})"));
  CHECK_THROWS_AS(json_patch(doc, json::parse(R"([{"op":"remove","path":"/nope"}])")), ApiError);
  CHECK_THROWS_AS(json_patch(doc, json::parse(R"([{"op":"add","path":"/a~1b/~0k/9","value":0}])")),
                  ApiError);
  CHECK(merge_patch(doc, json::parse(R"({"a/b":null,"n":1})")) == json::parse(R"({"n":1})"));
}

TEST_CASE("the store rebuilds an older list from its history and forgets what it compacted") {
  Store store(100);
  auto put = [&](const char* name, const char* v) {
    return store.transact([&](Store::Txn& t) {
      return t.put("configmaps",
                   json::object{{"metadata", {{"namespace", "d"}, {"name", name}}}, {"v", v}});
    });
  };
  put("a", "1");
  put("b", "1");
  std::uint64_t then = store.rv();
  put("a", "2");
  store.transact([&](Store::Txn& t) { t.erase("configmaps", {"d", "b"}); });
  put("c", "1");
  auto old = store.transact([&](Store::Txn& t) { return t.list_at("configmaps", "d", then); });
  REQUIRE(old);
  REQUIRE(old->size() == 2);
  CHECK((*old)[0]->at("v") == "1");
  CHECK((*old)[1]->at("metadata").at("name") == "b");
  store.compact();
  CHECK(!store.transact([&](Store::Txn& t) { return t.list_at("configmaps", "d", then); }));
  CHECK(std::holds_alternative<TooOld>(store.watch({"configmaps", "", nullptr}, then)));
}
