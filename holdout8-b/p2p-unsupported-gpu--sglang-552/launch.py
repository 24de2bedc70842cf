runtime = sgl.Runtime(model_path=model_name, tp_size=2)
