#pragma once
// Stands in for the CUDA toolkit's header when the kernels are compiled for the simulated device.
#include "../cuda_sim.h"
