# requires_grad_() on a detached tensor makes a new leaf that shares memory
import torch

a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
b = (a * 2).detach()
b.requires_grad_()
print(b.is_leaf, b.requires_grad)
c = a.detach().requires_grad_()
loss = (c * b).sum()
loss.backward()
print(a.grad, b.grad, c.grad)
plain = torch.ones(2)
plain.requires_grad = True
