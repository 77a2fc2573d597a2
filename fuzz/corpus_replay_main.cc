// Runs a libFuzzer target over its seed corpus without libFuzzer: each file under the directories
// given on the command line is one LLVMFuzzerTestOneInput call. The gcc sanitizer builds (asan)
// link the fuzz targets with this, so CI checks every corpus input under ASan + UBSan without a
// clang build; the fuzz preset (clang, libFuzzer) is where new inputs are searched for.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
  std::size_t inputs = 0;
  for (int i = 1; i < argc; ++i) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(argv[i])) {
      if (!entry.is_regular_file()) continue;
      std::ifstream file(entry.path(), std::ios::binary);
      std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(file)),
                                      std::istreambuf_iterator<char>());
      LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
      ++inputs;
    }
  }
  std::printf("%zu corpus inputs replayed\n", inputs);
  return inputs == 0 ? 1 : 0;  // an empty corpus checks nothing: say so
}
