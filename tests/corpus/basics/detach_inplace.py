# detach_() cuts a non-leaf from the graph in place; grad.data.zero_() old style
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
z = x * 2
z.detach_()
print(z.requires_grad, z.is_leaf, z.grad_fn)
(x * x).sum().backward()
x.grad.data.zero_()
print(x.grad)
