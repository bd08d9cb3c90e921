#pragma once
// The pipelined GEMV's work layout (gemv_pipelined.cu), written once for the device and the host
// so tests/unit/cuda_host walks it on a CPU.
//
// A launch holds up to kMaxPipelinedGemvMatrices matrices of one type and width; their rows are
// numbered one after another (matrix m holds rows [row_start[m], row_start[m + 1]) of the launch).
// Warp w of W takes rows w, w + W, w + 2W, ...; each row is one or more tiles (gemv_tile_dot.cuh),
// and the warp's items are its rows' tiles in order: item k is tile k % tiles_per_row of its
// (k / tiles_per_row)-th row. The kernel stages item k + 1 while it computes item k
// (walk_gemv_items).
#include <cstdint>

#include "backend/cuda/hd_math.h"

namespace lumen::backend::cuda {

inline constexpr int kMaxPipelinedGemvMatrices = 4;

// Which matrix of the launch holds launch row v, and its row there.
struct GemvRowRef {
  int m;
  int64_t row;
};

LUMEN_HD GemvRowRef locate_gemv_row(const int64_t* row_start, int n, int64_t v) {
  int m = 0;
  while (m + 1 < n && v >= row_start[m + 1]) ++m;
  return {m, v - row_start[m]};
}

// One warp's share of a launch of `total_rows` rows among `warps` warps.
struct GemvWarpWork {
  int64_t first = 0;          // its first launch row (its index among the warps)
  int64_t stride = 1;         // the launch's warps
  int64_t rows = 0;           // how many rows it takes
  int64_t tiles_per_row = 1;  // tiles of every row

  LUMEN_HD int64_t items() const { return rows * tiles_per_row; }
};

LUMEN_HD GemvWarpWork gemv_warp_work(int64_t warp, int64_t warps, int64_t total_rows, int64_t tiles_per_row) {
  GemvWarpWork w;
  w.first = warp;
  w.stride = warps;
  w.rows = warp < total_rows ? (total_rows - 1 - warp) / warps + 1 : 0;
  w.tiles_per_row = tiles_per_row;
  return w;
}

// A position in a warp's items, advanced one item at a time (no division per item).
struct GemvItem {
  int64_t row = 0;  // launch row
  int64_t tile = 0;

  LUMEN_HD bool last_tile(const GemvWarpWork& w) const { return tile + 1 == w.tiles_per_row; }
  LUMEN_HD void advance(const GemvWarpWork& w) {
    if (++tile == w.tiles_per_row) {
      tile = 0;
      row += w.stride;
    }
  }
};

LUMEN_HD GemvItem first_gemv_item(const GemvWarpWork& w) { return {w.first, 0}; }

// A warp's loop over its items, two stages: stage(copy, item, s) starts copying an item's tile into
// stage s when `copy`, and closes the copies into a group (none: an empty group); compute(item, s)
// waits for all but the newest group, then reads stage s. Item k is computed from stage k % 2
// while item k + 1 is being copied into the other stage, and a stage is copied into only after the
// item it held was computed.
template <typename Stage, typename Compute>
LUMEN_HD void walk_gemv_items(const GemvWarpWork& work, Stage&& stage, Compute&& compute) {
  const int64_t items = work.items();
  if (items == 0) return;
  GemvItem next = first_gemv_item(work);
  stage(true, next, 0);
  next.advance(work);
  GemvItem item = first_gemv_item(work);
  for (int64_t k = 0; k < items; ++k) {
    const int s = static_cast<int>(k & 1);
    stage(k + 1 < items, next, s ^ 1);
    compute(item, s);
    item.advance(work);
    next.advance(work);
  }
}

// The blocks of a launch: as many as the device holds at once (resident_blocks: blocks a
// multiprocessor holds x multiprocessors), so every warp stays for the whole launch and keeps its
// next tile in flight; fewer when the rows need fewer warps.
inline int64_t pipelined_gemv_blocks(int64_t total_rows, int64_t warps_per_block, int64_t resident_blocks) {
  const int64_t needed = (total_rows + warps_per_block - 1) / warps_per_block;
  const int64_t most = resident_blocks < 1 ? 1 : resident_blocks;
  return needed < most ? needed : most;
}

}  // namespace lumen::backend::cuda
