# requires_grad_(True/False) on leaves and what a later op records
import torch

a = torch.ones(2)
a.requires_grad_(True)
b = a * 2
a.requires_grad_(False)
c = a * 2
print(b.requires_grad, c.requires_grad, a.is_leaf, b.is_leaf)
