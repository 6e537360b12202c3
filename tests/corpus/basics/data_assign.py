# assigning to .data swaps the memory behind a leaf without autograd noticing
import torch

w = torch.tensor([1.0, 2.0], requires_grad=True)
old = w.detach()
w.data = torch.tensor([10.0, 20.0, 30.0])
print(w, w.is_leaf, w.requires_grad)
(w * w).sum().backward()
print(w.grad, old)
