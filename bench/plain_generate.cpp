// Greedy generation from a llama2.c checkpoint with the plain C loops (plain_loops.h), as
// a whole process: what `cutcheck generate` is timed against in bench/generate.sh.
//   plain_generate CHECKPOINT STEPS
#include <algorithm>
#include <cstdio>
#include <string>

#include "bench/plain_loops.h"
#include "model/llama2c.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: plain_generate CHECKPOINT STEPS\n");
    return 2;
  }
  const cutcheck::Llama2cModel m = cutcheck::read_llama2c(argv[1]);
  const int64_t steps = std::stoll(argv[2]);
  cutcheck::bench::PlainDecoder plain(m.spec, m.weights, steps + 1);
  int32_t token = 1;
  for (int64_t pos = 0; pos < steps; ++pos) {
    const std::vector<float>& logits = plain.forward(token, pos);
    token = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    std::printf(pos + 1 < steps ? "%d " : "%d\n", token);
  }
  return 0;
}
