import mlx.core as mx

a = mx.zeros((512, 128))
mx.eval(mx.argpartition(a, kth=-32, axis=-1))
