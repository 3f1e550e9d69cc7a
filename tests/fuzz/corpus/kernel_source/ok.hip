#include <hip/hip_runtime.h>
__global__ void k(float* x) { x[0] = 1; }
