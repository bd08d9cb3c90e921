#pragma once
// `--tensor-parallel-size N` and `--pipeline-parallel-size M` (vLLM's flags) for the commands
// that run a model through the engine (run, serve, bench latency, bench throughput): the model is
// spread over N x M processes that `mpirun -np N*M` starts with the same command line
// (ModelOptions::tensor_parallel_size, pipeline_parallel_size). Rank 0 does what the command
// does; the others follow its steps and print nothing. And `--n-gpu-layers` (-ngl), the split of
// one process's model between the CPU and a GPU (cli/gpu_layers_flag.h).
#include <CLI/CLI.hpp>
#include <string>

#include "cli/gpu_layers_flag.h"
#include "lumen/model.h"

namespace lumen::cli {

struct ModelParallelFlags {
  int tensor = 1;
  int pipeline = 1;
  int micro_batches = 0;  // 0: the default (ModelOptions::pipeline_micro_batches)
  int expert = 1;
  int context = 1;
  bool data_parallel_attention = false;
  std::string gpu_layers;  // --n-gpu-layers as typed (empty: all on the device)

  // `options` with these processes to spread the model over, and its layers over CPU and GPU.
  // Throws lumen::Error for a --n-gpu-layers that is no count.
  ModelOptions applied_to(ModelOptions options) const {
    options.tensor_parallel_size = tensor;
    options.pipeline_parallel_size = pipeline;
    options.pipeline_micro_batches = micro_batches;
    options.expert_parallel_size = expert;
    options.context_parallel_size = context;
    options.data_parallel_attention = data_parallel_attention;
    options.n_gpu_layers = gpu_layers_value(gpu_layers);
    return options;
  }
};

inline void add_model_parallel_options(CLI::App* cmd, ModelParallelFlags& flags) {
  flags = {};
  cmd->add_option("--tensor-parallel-size,--tp", flags.tensor,
                  "Spread each layer over N processes (tensor parallelism: attention heads and FFN columns split "
                  "by rank); run under `mpirun -np N*M` with this command line (CPU, MPI builds)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--pipeline-parallel-size,--pp", flags.pipeline,
                  "Cut the layers into M stages, each held by its own --tensor-parallel-size processes "
                  "(pipeline parallelism); run under `mpirun -np N*M`")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--expert-parallel-size,--ep", flags.expert,
                  "Share each MoE layer's routed experts among N processes (expert parallelism: 1/N of the "
                  "experts each, everything else whole, routed rows exchanged all-to-all); run under "
                  "`mpirun -np N`; not combined with --tensor-parallel-size or --pipeline-parallel-size yet")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_flag("--data-parallel-attention", flags.data_parallel_attention,
                "With --expert-parallel-size N: each process runs attention and the dense layers for its own "
                "share of the sequences only and holds only their KV cache; MoE layers exchange rows "
                "all-to-all and rank 0 samples every sequence");
  cmd->add_option("--pipeline-micro-batches", flags.micro_batches,
                  "Pipeline parallelism: at most this many micro-batches (of 64 rows or more) per forward pass, "
                  "so that stages work at once (default: four times the stages)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--context-parallel-size,--cp", flags.context,
                  "Share a long prompt's prefill among N processes, each holding the whole model (context "
                  "parallelism: ring attention over the prompt's chunks; rank 0 then decodes alone); run under "
                  "`mpirun -np N`. Not with --tensor-parallel-size, --pipeline-parallel-size, "
                  "--expert-parallel-size or --n-gpu-layers")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--n-gpu-layers,--gpu-layers", flags.gpu_layers,
                  "With --device cuda: run the last N of the model's layers and its output layer on the GPU, the "
                  "rest on the CPU (llama.cpp's -ngl, also spelled so; the output layer counts as one); auto: as "
                  "many as fit the free device memory; all (the default): everything on the GPU");
}

}  // namespace lumen::cli
