# requires_grad can only be changed on leaves
# expect-error: RuntimeError
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
leaf = torch.ones(2)
leaf.requires_grad = True
y = x * 2
y.requires_grad = False
