# copy_ into a fresh tensor: the target joins the graph
import torch

a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)

# empty_like allocates new memory; copy_ fills it from a and records CopyBackwards.
b = torch.empty_like(a).copy_(a)

# b is a non-leaf: gradients through b reach a.
(b * 2).sum().backward()
print(a.grad)

# copy_ from a tensor that requires grad into a plain tensor makes the plain one a non-leaf.
target = torch.zeros(3)
target.copy_(a)
