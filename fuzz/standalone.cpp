// A small stand-in for libFuzzer, so the fuzz targets also build with g++ and run as a
// smoke test in the ordinary test suite: it runs every corpus input, then a number of
// deterministic mutations of them (bit flips, byte edits, cuts, splices, dictionary
// words). Flags follow libFuzzer's: -runs=N -seed=S -dict=FILE -max_len=N, then corpus
// files or folders. Real fuzzing uses the libFuzzer build (CUTCHECK_FUZZ=ON).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Bytes = std::vector<uint8_t>;

Bytes read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

// libFuzzer dictionaries: one "quoted" word per line, \xNN escapes allowed.
std::vector<Bytes> read_dictionary(const std::string& path) {
  std::vector<Bytes> words;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    size_t open = line.find('"'), close = line.rfind('"');
    if (line.empty() || line[0] == '#' || open == std::string::npos || close <= open) continue;
    Bytes w;
    for (size_t i = open + 1; i < close; ++i) {
      if (line[i] == '\\' && i + 1 < close && line[i + 1] == 'x' && i + 3 < close) {
        w.push_back(uint8_t(std::stoi(line.substr(i + 2, 2), nullptr, 16)));
        i += 3;
      } else if (line[i] == '\\' && i + 1 < close) {
        w.push_back(uint8_t(line[++i]));
      } else {
        w.push_back(uint8_t(line[i]));
      }
    }
    words.push_back(w);
  }
  return words;
}

void mutate(Bytes& b, const std::vector<Bytes>& corpus, const std::vector<Bytes>& dict, std::mt19937_64& rng,
            size_t max_len) {
  auto pick = [&](size_t n) { return n == 0 ? size_t(0) : size_t(rng() % n); };
  for (int edits = 1 + int(rng() % 4); edits > 0; --edits) {
    switch (rng() % 8) {
      case 0:
        if (!b.empty()) b[pick(b.size())] ^= uint8_t(1u << (rng() % 8));
        break;
      case 1:
        if (!b.empty()) b[pick(b.size())] = uint8_t(rng());
        break;
      case 2:
        b.insert(b.begin() + long(pick(b.size() + 1)), uint8_t(rng()));
        break;
      case 3:
        if (!b.empty()) {
          size_t at = pick(b.size()), n = 1 + pick(std::min<size_t>(b.size() - at, 16));
          b.erase(b.begin() + long(at), b.begin() + long(at + n));
        }
        break;
      case 4:
        if (!b.empty()) b.resize(pick(b.size()));
        break;
      case 5:
        if (!b.empty()) {
          size_t at = pick(b.size()), n = 1 + pick(std::min<size_t>(b.size() - at, 32));
          Bytes copy(b.begin() + long(at), b.begin() + long(at + n));
          b.insert(b.begin() + long(pick(b.size() + 1)), copy.begin(), copy.end());
        }
        break;
      case 6:
        if (!dict.empty()) {
          const Bytes& w = dict[pick(dict.size())];
          b.insert(b.begin() + long(pick(b.size() + 1)), w.begin(), w.end());
        }
        break;
      default:
        if (!corpus.empty()) {
          const Bytes& other = corpus[pick(corpus.size())];
          size_t keep = pick(b.size() + 1), from = pick(other.size() + 1);
          b.resize(keep);
          b.insert(b.end(), other.begin() + long(from), other.end());
        }
    }
  }
  if (b.size() > max_len) b.resize(max_len);
}

}  // namespace

int main(int argc, char** argv) {
  long runs = 1000;
  uint64_t seed = 1;
  size_t max_len = 1 << 16;
  std::vector<Bytes> dict, corpus;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("-runs=", 0) == 0) runs = std::stol(a.substr(6));
    else if (a.rfind("-seed=", 0) == 0) seed = std::stoull(a.substr(6));
    else if (a.rfind("-max_len=", 0) == 0) max_len = std::stoul(a.substr(9));
    else if (a.rfind("-dict=", 0) == 0) dict = read_dictionary(a.substr(6));
    else if (a[0] == '-') continue;  // other libFuzzer flags mean nothing here
    else if (std::filesystem::is_directory(a)) {
      for (const auto& e : std::filesystem::directory_iterator(a))
        if (e.is_regular_file()) corpus.push_back(read_all(e.path()));
    } else {
      corpus.push_back(read_all(a));
    }
  }
  for (const Bytes& b : corpus) LLVMFuzzerTestOneInput(b.data(), b.size());
  std::mt19937_64 rng(seed);
  for (long r = 0; r < runs; ++r) {
    Bytes b = corpus.empty() ? Bytes{} : corpus[rng() % corpus.size()];
    mutate(b, corpus, dict, rng, max_len);
    LLVMFuzzerTestOneInput(b.data(), b.size());
  }
  std::printf("standalone fuzz driver: %zu corpus inputs and %ld mutations, no crash\n", corpus.size(), runs);
  return 0;
}
