import mxnet as mx
mx.nd.ones((2,3), mx.gpu())
