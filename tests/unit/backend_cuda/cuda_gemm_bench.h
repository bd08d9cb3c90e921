#pragma once
// The GEMM bench (cuda_gemm_bench.cc), run as `lumen_cuda_gemv_bench gemm ARGS`: argv[0] is "gemm",
// the bench's arguments follow.
int gemm_bench_main(int argc, char** argv);
