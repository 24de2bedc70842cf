import cupy as cp
X = cp.array([[-1, -1], [-2, -1], [-3, -2], [1, 1], [2, 1],[3, 2]], cp.float32)
X**2
