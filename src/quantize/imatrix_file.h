#pragma once
// Importance matrices in llama.cpp's imatrix GGUF format (what llama-imatrix writes and
// llama-quantize --imatrix reads): general.type "imatrix", imatrix.datasets (the calibration
// files' names), imatrix.chunk_count and imatrix.chunk_size (u32), and per weight matrix W two
// F32 tensors: "<W>.in_sum2" {columns, n_matrices}, the sum over every token seen of each input
// column's squared activation, and "<W>.counts" {1, n_matrices}, how many tokens that was.
// A 3-D expert tensor has one matrix (row of in_sum2, count) per expert.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gguf/file.h"

namespace lumen::quantize {

struct ImatrixEntry {
  int64_t columns = 0;         // the weight's input width (its dims[0])
  std::vector<float> sums;     // n_matrices * columns
  std::vector<int64_t> counts; // n_matrices

  int64_t matrices() const { return static_cast<int64_t>(counts.size()); }
};

struct Imatrix {
  std::map<std::string, ImatrixEntry> entries;  // by weight name, sorted as the file stores them
  std::vector<std::string> datasets;
  uint32_t chunk_count = 0;
  uint32_t chunk_size = 0;
};

// Throws lumen::Error, naming the file, for a file that is not GGUF or not an imatrix (another
// general.type, missing imatrix.* keys, no entries), a sums tensor without its counts or the
// reverse, a tensor that is not F32 or not 2-D, shapes that disagree, a count that is negative
// or not whole, or a sum that is negative or not finite.
Imatrix read_imatrix(const std::string& path);
// The same checks on an already parsed file (messages name file.source_name()).
Imatrix read_imatrix(const gguf::GgufFile& file);

// Writes through a temporary file renamed into place; entries in name order (as llama-imatrix).
void write_imatrix(const std::string& path, const Imatrix& imatrix);

// What llama-quantize weights a matrix's columns with: sums / count per matrix (f32), or 1
// for a matrix that saw no token.
std::vector<float> importance_of(const ImatrixEntry& entry);

}  // namespace lumen::quantize
