import torch
torch.backends.cudnn.version()
