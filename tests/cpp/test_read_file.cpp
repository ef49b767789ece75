// util/text.cpp's read_file: plain and gzip files, and damaged gzip streams reported by name.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "opprof/util/error.hpp"
#include "opprof/util/text.hpp"

using namespace opprof;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (std::to_string(::getpid()) + "-" + name)).string();
}

std::string gzip_bytes(const std::string& text) {
  const std::string path = temp_path("opprof-read-file.gz");
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(path.c_str());
  return bytes;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace

TEST(ReadFile, GzipRoundTrip) {
  std::string text(100000, 'x');
  for (std::size_t i = 0; i < text.size(); i += 7) text[i] = static_cast<char>('a' + i % 26);
  const std::string path = temp_path("opprof-ok.csv.gz");
  write_bytes(path, gzip_bytes(text));
  EXPECT_TRUE(read_file(path) == text);  // not EXPECT_EQ: a failure would print 100 kB
  std::remove(path.c_str());
}

// A truncated or corrupt .gz gives an InputError that names the file and carries zlib's own message
// (copied before gzclose frees it: reading it afterwards was a use-after-free, caught under ASan).
TEST(ReadFile, DamagedGzipNamesTheFileAndZlibsReason) {
  std::string bytes = gzip_bytes(std::string(200000, 'y') + "tail");
  const std::string truncated = temp_path("opprof-truncated.csv.gz");
  write_bytes(truncated, bytes.substr(0, bytes.size() / 2));
  const std::string corrupt = temp_path("opprof-corrupt.csv.gz");
  std::string flipped = bytes;
  for (std::size_t i = 20; i < 60 && i < flipped.size(); ++i) flipped[i] = static_cast<char>(~flipped[i]);
  write_bytes(corrupt, flipped);
  for (const std::string& path : {truncated, corrupt}) {
    try {
      (void)read_file(path);
      ADD_FAILURE() << path << " was read without an error";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path), std::string::npos) << what;
      EXPECT_NE(what.find("gzip: "), std::string::npos) << what;
      // zlib's messages are printable ASCII; freed memory printed as text would not be.
      const std::string reason = what.substr(what.find("gzip: ") + 6);
      EXPECT_FALSE(reason.empty()) << what;
      for (char c : reason) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << what;
    }
    std::remove(path.c_str());
  }
}
