# detach(): same memory, cut from the graph
import torch

a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)

# detach() returns a view of the same storage with no grad_fn and requires_grad=False.
d = a.detach()

# They share memory: an in-place change to d shows in a, and bumps the shared version counter.
d.mul_(10)
print(a)

# Autograd notices: y saved a for backward, and a's version changed after that.
y = (a * a).sum()
d.add_(1)
y.backward()  # expect: RuntimeError
