// A starting candidate for openevolve_evaluator.py: C = A x B in f32, row-major, A N x K,
// B K x M, C N x M. The evaluator keeps this signature and the arguments; everything between the
// EVOLVE-BLOCK markers may change, including the launch line (block, grid, shared_bytes,
// compile_options), which must stay one line of JSON.
// EVOLVE-BLOCK-START
// kernelscan: {"block": [16, 16, 1], "grid": ["cdiv(M, 16)", "cdiv(N, 16)", 1]}
#define TILE 16

extern "C" __global__ void matmul(const float* a, const float* b, float* c, int N, int M, int K) {
  __shared__ float ta[TILE][TILE];
  __shared__ float tb[TILE][TILE];
  const int row = blockIdx.y * TILE + threadIdx.y;
  const int col = blockIdx.x * TILE + threadIdx.x;
  float sum = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    const int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
    ta[threadIdx.y][threadIdx.x] = row < N && ka < K ? a[row * K + ka] : 0.0f;
    tb[threadIdx.y][threadIdx.x] = kb < K && col < M ? b[kb * M + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < TILE; ++k)
      sum += ta[threadIdx.y][k] * tb[k][threadIdx.x];
    __syncthreads();
  }
  if (row < N && col < M) c[row * M + col] = sum;
}
// EVOLVE-BLOCK-END
