// Package sets and apt's answers (package_closure.h): the closure read from `apt-get -s install`
// output as apt prints it, its errors turned into messages naming the package, sizes and the
// bound, the cache keys.
#include <catch2/catch.hpp>

#include "server/vm/image/package_closure.h"

namespace img = lockroom::vm::image;
using lockroom::ErrorCode;

namespace {

// `apt-get -s -o Dir::State::status=/dev/null install jq` on Debian 12, trimmed of nothing.
const char* kJqSimulation =
    "NOTE: This is only a simulation!\n"
    "      apt-get needs root privileges for real execution.\n"
    "      Keep also in mind that locking is deactivated,\n"
    "      so don't depend on the relevance to the real current situation!\n"
    "Reading package lists...\n"
    "Building dependency tree...\n"
    "Reading state information...\n"
    "The following additional packages will be installed:\n"
    "  gcc-12-base libc6 libgcc-s1 libjq1 libonig5\n"
    "Suggested packages:\n"
    "  glibc-doc debconf | debconf-2.0 libc-l10n locales libnss-nis libnss-nisplus\n"
    "The following NEW packages will be installed:\n"
    "  gcc-12-base jq libc6 libgcc-s1 libjq1 libonig5\n"
    "0 upgraded, 6 newly installed, 0 to remove and 0 not upgraded.\n"
    "Inst gcc-12-base (12.2.0-14+deb12u1 Debian:12.15/oldstable [amd64])\n"
    "Inst libgcc-s1 (12.2.0-14+deb12u1 Debian:12.15/oldstable [amd64]) []\n"
    "Inst libc6 (2.36-9+deb12u14 Debian:12.15/oldstable [amd64])\n"
    "Inst libonig5 (6.9.8-1 Debian:12.15/oldstable [amd64])\n"
    "Inst libjq1 (1.6-2.1+deb12u3 Debian-Security:12/oldstable-security [amd64])\n"
    "Inst jq (1.6-2.1+deb12u3 Debian-Security:12/oldstable-security [amd64])\n"
    "Conf gcc-12-base (12.2.0-14+deb12u1 Debian:12.15/oldstable [amd64])\n"
    "Conf jq (1.6-2.1+deb12u3 Debian-Security:12/oldstable-security [amd64])\n";

}  // namespace

TEST_CASE("package closure: apt's Inst lines in install order, with versions and architectures", "[vm][packages]") {
  auto closure = img::parse_simulated_install(kJqSimulation, 0);
  REQUIRE(closure.ok());
  REQUIRE(closure->size() == 6);
  CHECK((*closure)[0] == img::PackageRef{"gcc-12-base", "12.2.0-14+deb12u1", "amd64"});
  CHECK((*closure)[1] == img::PackageRef{"libgcc-s1", "12.2.0-14+deb12u1", "amd64"});  // the trailing "[]" is not the arch
  CHECK((*closure)[5] == img::PackageRef{"jq", "1.6-2.1+deb12u3", "amd64"});
}

TEST_CASE("package closure: an upgrade line, an epoch, an arch-all package and several release names", "[vm][packages]") {
  auto closure = img::parse_simulated_install(
      "Inst zlib1g [1:1.2.11-1] (1:1.2.13.dfsg-1 Debian:12.15/oldstable, Debian:12/stable [amd64])\n"
      "Inst media-types (10.0.0 Debian:12.15/oldstable [all])\n"
      "Inst libfoo:i386 (2.0-1 Debian:12.15/oldstable [i386])\n",
      0);
  REQUIRE(closure.ok());
  REQUIRE(closure->size() == 3);
  CHECK((*closure)[0] == img::PackageRef{"zlib1g", "1:1.2.13.dfsg-1", "amd64"});
  CHECK((*closure)[1] == img::PackageRef{"media-types", "10.0.0", "all"});
  CHECK((*closure)[2] == img::PackageRef{"libfoo:i386", "2.0-1", "i386"});
  CHECK(img::deb_file_name((*closure)[0]) == "zlib1g_1%3a1.2.13.dfsg-1_amd64.deb");
  CHECK(img::deb_file_name((*closure)[2]) == "libfoo_2.0-1_i386.deb");
}

TEST_CASE("package closure: a package apt does not know is named in the error", "[vm][packages]") {
  auto closure = img::parse_simulated_install(
      "Reading package lists...\nBuilding dependency tree...\nReading state information...\nE: Unable to locate package jqq\n", 100);
  REQUIRE_FALSE(closure.ok());
  CHECK(closure.error().code == ErrorCode::kNotFound);
  CHECK_THAT(closure.error().message, Catch::Contains("\"jqq\" does not exist") && Catch::Contains("apt-get update"));

  auto virtual_only = img::parse_simulated_install(
      "Package awk is a virtual package provided by:\n  mawk 1.3.4\nE: Package 'awk' has no installation candidate\n", 100);
  REQUIRE_FALSE(virtual_only.ok());
  CHECK(virtual_only.error().code == ErrorCode::kNotFound);
  CHECK_THAT(virtual_only.error().message, Catch::Contains("\"awk\""));
}

TEST_CASE("package closure: unmet dependencies and a silent failure are reported with apt's words", "[vm][packages]") {
  auto unmet = img::parse_simulated_install(
      "Some packages could not be installed.\n"
      "The following packages have unmet dependencies:\n"
      " foo : Depends: bar (>= 2) but it is not installable\n"
      "E: Unable to correct problems, you have held broken packages.\n",
      100);
  REQUIRE_FALSE(unmet.ok());
  CHECK(unmet.error().code == ErrorCode::kUnavailable);
  CHECK_THAT(unmet.error().message, Catch::Contains("foo : Depends: bar (>= 2)") && Catch::Contains("held broken packages"));

  auto silent = img::parse_simulated_install("Reading package lists...\n", 1);
  REQUIRE_FALSE(silent.ok());
  CHECK_THAT(silent.error().message, Catch::Contains("status 1"));

  auto odd = img::parse_simulated_install("Inst jq\n", 0);
  REQUIRE_FALSE(odd.ok());
  CHECK_THAT(odd.error().message, Catch::Contains("Inst jq"));
}

TEST_CASE("package sets: sorted, de-duplicated, names checked, bounded", "[vm][packages]") {
  auto set = img::normalize_package_set({"python3", "jq", "python3", "libc6:amd64"});
  REQUIRE(set.ok());
  CHECK(*set == std::vector<std::string>{"jq", "libc6:amd64", "python3"});
  CHECK(img::normalize_package_set({}).value().empty());

  auto bad = img::normalize_package_set({"jq", "Python3"});
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::Contains("\"Python3\""));
  CHECK_FALSE(img::normalize_package_set({"-o"}).ok());  // never an option to apt
  CHECK_FALSE(img::normalize_package_set({"jq:"}).ok());

  std::vector<std::string> many;
  for (std::size_t i = 0; i <= img::kMaxPackageSet; ++i) many.push_back("pkg" + std::to_string(i));
  auto too_many = img::normalize_package_set(many);
  REQUIRE_FALSE(too_many.ok());
  CHECK(too_many.error().code == ErrorCode::kLimitExceeded);
}

TEST_CASE("package sizes: apt-cache records, and the bound names the biggest packages", "[vm][packages]") {
  auto sizes = img::parse_package_records(
      "Package: libc6\nVersion: 2.36-9+deb12u14\nInstalled-Size: 13001\nSize: 2757936\nDescription: GNU C Library\n continued\n\n"
      "Package: jq\nVersion: 1.6-2.1+deb12u3\nInstalled-Size: 102\nSize: 64936\n\n"
      "Package: libpython3.11-stdlib\nVersion: 3.11.2-6\nInstalled-Size: 8334\nSize: 1798272\n");
  REQUIRE(sizes.size() == 3);
  CHECK(sizes[0].name == "libc6");
  CHECK(sizes[0].installed_bytes == 13001ull * 1024);
  CHECK(sizes[1].download_bytes == 64936);

  CHECK(img::check_package_sizes(sizes, 64ull << 20, "installed").ok());
  auto over = img::check_package_sizes(sizes, 8ull << 20, "installed");
  REQUIRE_FALSE(over.ok());
  CHECK(over.error().code == ErrorCode::kLimitExceeded);
  // Biggest first: libc6 (12.7 MiB), then libpython3.11-stdlib (8.1 MiB), then jq.
  const auto& text = over.error().message;
  REQUIRE(text.find("libc6 12.7 MiB") != std::string::npos);
  CHECK(text.find("libc6") < text.find("libpython3.11-stdlib"));
  CHECK(text.find("libpython3.11-stdlib") < text.find("jq"));
  CHECK_THAT(text, Catch::Contains("20.9 MiB installed") && Catch::Contains("8.0 MiB") && Catch::Contains("LOCKROOM_MAX_PACKAGE_MIB"));
}

TEST_CASE("package image keys: change with the base, the set and any resolved version", "[vm][packages]") {
  std::vector<img::PackageRef> closure = {{"libjq1", "1.6-2.1+deb12u3", "amd64"}, {"jq", "1.6-2.1+deb12u3", "amd64"}};
  std::string key = img::package_image_key("base1", {"jq"}, closure);
  CHECK(key.size() == 16);
  CHECK(key == img::package_image_key("base1", {"jq"}, closure));
  CHECK(key != img::package_image_key("base2", {"jq"}, closure));
  CHECK(key != img::package_image_key("base1", {"jq", "libjq1"}, closure));
  auto newer = closure;
  newer[0].version = "1.6-2.1+deb12u4";
  CHECK(key != img::package_image_key("base1", {"jq"}, newer));
  CHECK(img::package_set_key({"jq"}) != img::package_set_key({"jq", "python3"}));
}

TEST_CASE("resolved closures round-trip through their text form; damaged text is refused", "[vm][packages]") {
  std::vector<img::PackageRef> closure = {{"zlib1g", "1:1.2.13.dfsg-1", "amd64"}, {"media-types", "10.0.0", "all"}};
  auto back = img::closure_from_text(img::closure_to_text(closure));
  REQUIRE(back.ok());
  CHECK(*back == closure);
  CHECK_FALSE(img::closure_from_text("jq 1.6\n").ok());
  CHECK_FALSE(img::closure_from_text("jq 1.6 amd64 extra\n").ok());
  CHECK(img::package_list_text({"a1", "b2", "c3"}, 2) == "a1, b2, …");
}
