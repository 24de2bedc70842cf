import torch
torch.ops.torchvision.nms
