from cuda import cuda
cuda.cuInit(0)
