# tensors made under inference_mode are inference tensors
import torch

x = torch.ones(2, requires_grad=True)
with torch.inference_mode():
    y = x * 2
print(y.requires_grad, y.is_inference(), x.is_inference())
z = torch.ones(2)
