// A starting OpenCL candidate for openevolve_evaluator.py: C = A x B in f32, row-major, A N x K,
// B K x M, C N x M. The evaluator keeps this signature and the arguments; everything between the
// EVOLVE-BLOCK markers may change, including the launch line (block, grid in work-groups,
// compile_options), which must stay one line of JSON. OpenCL has no dynamic shared_bytes: local
// memory is declared in the kernel.
// EVOLVE-BLOCK-START
// kernelscan: {"block": [16, 16, 1], "grid": ["cdiv(M, 16)", "cdiv(N, 16)", 1]}
#define TILE 16

__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1)))
void matmul(__global const float* a, __global const float* b, __global float* c, int N, int M,
            int K) {
  __local float ta[TILE][TILE];
  __local float tb[TILE][TILE];
  const int tx = get_local_id(0), ty = get_local_id(1);
  const int row = get_group_id(1) * TILE + ty;
  const int col = get_group_id(0) * TILE + tx;
  float sum = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    const int ka = k0 + tx, kb = k0 + ty;
    ta[ty][tx] = row < N && ka < K ? a[row * K + ka] : 0.0f;
    tb[ty][tx] = kb < K && col < M ? b[kb * M + col] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < TILE; ++k)
      sum += ta[ty][k] * tb[k][tx];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (row < N && col < M) c[row * M + col] = sum;
}
// EVOLVE-BLOCK-END
