// Prints the expansion of a correctness matrix (correctness_matrix.h) without a GPU, for the JVM
// test that compares the C++ parser with the Java one (CorrectnessMatrixNativeTest).
//   matrix_list <file> [--quick]     exit 2 when the file does not parse, naming the line
#include "correctness_matrix.h"

#include <cstring>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: matrix_list <correctness-matrix.txt> [--quick]\n");
    return 2;
  }
  try {
    gcm::list(gcm::expand(gcm::load(argv[1]), argc > 2 && std::strcmp(argv[2], "--quick") == 0), stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "matrix_list: %s\n", e.what());
    return 2;
  }
  return 0;
}
