from llamafactory.chat import ChatModel
from llamafactory.extras.misc import torch_gc

args = dict(
  model_name_or_path="Llama-3-8B-Instruct", 
  template="llama3",
  infer_backend='vllm',
  vllm_enforce_eager=True
)
chat_model = ChatModel(args)
