# detach: shares memory and the version counter, but is cut from the graph
import torch

a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
d = a.detach()
print(d.requires_grad, d.is_leaf, d.grad_fn)
d[0] = 10.0
print(a)
y = a * 2
z = y.detach()
z.mul_(0.5)
print(y)
same_version = y._version == z._version
loss = (a * a).sum()
loss.backward()
