import tensorrt
tensorrt.nptype(tensorrt.DataType.HALF)
